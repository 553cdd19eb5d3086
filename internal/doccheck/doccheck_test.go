package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../.."

func load(t *testing.T) *Tree {
	t.Helper()
	tree, err := Load(root, "bench", ".tools")
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// Package docs and design notes name only files and Go names that
// exist.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	tree := load(t)
	docs, pkgOf, err := tree.PackageDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	var problems []Problem
	for file, text := range docs {
		problems = append(problems, tree.Check(file, pkgOf[file], text)...)
	}
	notes, _ := filepath.Glob(filepath.Join(root, "docs", "design", "*.md"))
	notes = append(notes, filepath.Join(root, "README.md"), filepath.Join(root, "docs", "rough-edges.md"))
	if len(notes) < 5 {
		t.Fatalf("found %d design notes: wrong root?", len(notes))
	}
	for _, n := range notes {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, n)
		problems = append(problems, tree.Check(rel, "", string(b))...)
	}
	for _, p := range problems {
		t.Errorf("%s: %s: %s", p.Where, p.Name, p.Why)
	}
	if len(docs) < 5 {
		t.Errorf("found %d package docs: wrong root?", len(docs))
	}
}

// A planted stale name is found: a removed file, a package name that
// does not exist, a member of a type that does not exist.
func TestAPlantedStaleNameFails(t *testing.T) {
	tree := load(t)
	text := strings.Join([]string{
		"The path runs through validate.go and encode.go.",
		"Call mcp.NewServer, then mcp.NewServerWithMagic.",
		"Set ClientOptions.MaxRounds and ClientOptions.MaxRoundz.",
		"requeststate.KeyRing.SetKeys swaps keys; requeststate.KeyRing.Rotate does not exist.",
	}, "\n")
	got := map[string]bool{}
	for _, p := range tree.Check("planted", "mcp", text) {
		got[p.Name] = true
	}
	for _, stale := range []string{"validate.go", "encode.go", "mcp.NewServerWithMagic", "ClientOptions.MaxRoundz", "requeststate.KeyRing.Rotate"} {
		if !got[stale] {
			t.Errorf("%s was not reported", stale)
		}
	}
	for _, fine := range []string{"mcp.NewServer", "ClientOptions.MaxRounds", "requeststate.KeyRing.SetKeys"} {
		if got[fine] {
			t.Errorf("%s reported, but it exists", fine)
		}
	}
}
