package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var site = filepath.Join(root, "docs", "site")

// Every `<<<` include of the documentation site names a file that exists
// and a region that file opens and closes; no page has Go pasted in.
func TestEverySiteIncludeNamesAFileAndRegionThatExist(t *testing.T) {
	problems, n, err := CheckIncludes(site)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s: %s", p.Where, p.Name, p.Why)
	}
	if n < 25 {
		t.Errorf("found %d includes in %s: wrong root?", n, site)
	}
}

// The site's pages name only files and Go names that exist, as the
// design notes do; an unqualified Type.Member is read as mcp's, the
// package most pages are about.
func TestSitePagesNameOnlyWhatExists(t *testing.T) {
	tree := load(t)
	pages, err := Pages(site)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages in %s: wrong root?", len(pages), site)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		for _, pr := range tree.Check(rel, "mcp", string(b)) {
			t.Errorf("%s: %s: %s", pr.Where, pr.Name, pr.Why)
		}
	}
}

// Planted bad includes are reported: a file that does not exist, a
// region the file lacks, a region never closed, Go pasted into a page;
// good ones are not.
func TestAPlantedBadIncludeFails(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("src/a.go", "package a\n\n// #region good\nfunc A() {}\n// #endregion good\n\n// #region open\nfunc B() {}\n")
	write("site/guide/page.md", strings.Join([]string{
		"# Page",
		"<<< @/../src/a.go#good",
		"<<< @/../src/a.go{go}",
		"<<< @/../src/a.go#good{2 go} [a.go]",
		"<<< @/../src/missing.go#good",
		"<<< @/../src/a.go#nosuch",
		"<<< @/../src/a.go#open",
		"```go",
		"func Pasted() {}",
		"```",
	}, "\n"))
	problems, n, err := CheckIncludes(filepath.Join(dir, "site"))
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("found %d includes, want 6", n)
	}
	got := map[string]string{}
	for _, p := range problems {
		got[p.Where] = p.Why
	}
	want := map[string]string{
		"guide/page.md:5": "no such file",
		"guide/page.md:6": "no such region",
		"guide/page.md:7": "region never closed",
		"guide/page.md:8": "Go code pasted",
	}
	for where, why := range want {
		if !strings.HasPrefix(got[where], why) {
			t.Errorf("%s: got %q, want %q", where, got[where], why)
		}
	}
	if len(problems) != len(want) {
		t.Errorf("got %d problems, want %d: %v", len(problems), len(want), problems)
	}
}
