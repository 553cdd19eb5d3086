// Package readme checks the Go programs of the repository's README.
package readme

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock is a fenced Go block of a markdown file.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// TestReadmeProgramsCompile builds every `package main` block of
// README.md against this checkout (a temporary module that replaces
// the library with the tree), so that what a newcomer copies compiles.
// The README must have at least two: the server and the client.
func TestReadmeProgramsCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var programs []string
	for _, m := range goBlock.FindAllSubmatch(readme, -1) {
		if bytes.HasPrefix(m[1], []byte("package main\n")) {
			programs = append(programs, string(m[1]))
		}
	}
	if len(programs) < 2 {
		t.Fatalf("README.md has %d complete programs (package main blocks), want the server and the client", len(programs))
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for i, src := range programs {
		dir := t.TempDir()
		mod := "module readmecheck\n\ngo 1.26.0\n\nrequire github.com/roundtrip-mcp/roundtrip v0.0.0\n\nreplace github.com/roundtrip-mcp/roundtrip => " + root + "\n"
		for name, body := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": []byte(src)} {
			if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(goBin, "build", "-mod=mod", "-o", os.DevNull, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			first := strings.SplitN(src, "\n", 12)
			t.Errorf("README program %d does not compile: %v\n%s\n--- its first lines:\n%s", i+1, err, out, strings.Join(first, "\n"))
		}
	}
}
