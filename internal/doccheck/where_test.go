package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// docs/design/architecture.md's "Where does X live" names every non-test
// file of package mcp: a file added without a line there fails.
func TestTheArchitectureNoteNamesEveryFileOfMcp(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, "docs", "design", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	where := Section(string(b), "Where does X live")
	if where == "" {
		t.Fatal(`architecture.md has no "Where does X live" section`)
	}
	files, err := SourceFiles(filepath.Join(root, "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found %d files in mcp: wrong root?", len(files))
	}
	for _, f := range Unnamed(where, files) {
		t.Errorf("mcp/%s is not named under \"Where does X live\" in docs/design/architecture.md", f)
	}
}

// The check fails on a planted file, and a file named only as the tail
// of a longer name does not count as named.
func TestAFileTheArchitectureNoteDoesNotNameIsReported(t *testing.T) {
	t.Parallel()
	text := "# A\n## Where does X live\n| x | client_http.go, serve.go |\n## Next\nplanted.go\n"
	where := Section(text, "Where does X live")
	got := Unnamed(where, []string{"client_http.go", "http.go", "planted.go", "serve.go"})
	if !slices.Equal(got, []string{"http.go", "planted.go"}) {
		t.Fatalf("Unnamed = %v, want [http.go planted.go]", got)
	}
}
