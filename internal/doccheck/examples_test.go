package doccheck

import (
	"os"
	"path/filepath"
	"testing"
)

// Every Example with an Output comment, in every module of the tree,
// runs: none has its Output comment swallowed by the comment above it.
func TestEveryExampleWithAnOutputCommentRuns(t *testing.T) {
	problems, n, err := SilentExamples(root, "bench")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s %s", p.Where, p.Name, p.Why)
	}
	if n < 25 {
		t.Errorf("found %d examples with output: wrong root?", n)
	}
}

// A planted example whose Output comment follows a region marker with
// no blank line between is reported; the same with the blank line is
// not.
func TestAnExampleWhoseOutputFollowsARegionMarkerIsReported(t *testing.T) {
	dir := t.TempDir()
	src := "package a_test\n\nimport \"fmt\"\n\n" +
		"func ExampleSilent() {\n\t// #region r\n\tfmt.Println(1)\n\t// #endregion r\n\t// Output: 1\n}\n\n" +
		"func ExampleHeard() {\n\t// #region r\n\tfmt.Println(1)\n\t// #endregion r\n\n\t// Output: 1\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "a_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, n, err := SilentExamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(problems) != 1 || problems[0].Name != "ExampleSilent" {
		t.Errorf("found %d examples with output, problems %v; want 2, and ExampleSilent reported", n, problems)
	}
}
