package doccheck

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Section returns the part of a Markdown text under the heading
// heading (a line "## heading"), up to the next heading of the same or a
// higher level; "" when there is none.
func Section(text, heading string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		level := len(l) - len(strings.TrimLeft(l, "#"))
		if level == 0 || strings.TrimSpace(l[level:]) != heading {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			lv := len(lines[j]) - len(strings.TrimLeft(lines[j], "#"))
			if lv > 0 && lv <= level && strings.HasPrefix(lines[j][lv:], " ") {
				end = j
				break
			}
		}
		return strings.Join(lines[i+1:end], "\n")
	}
	return ""
}

// SourceFiles returns the base names of the non-test Go files of the
// package in dir, sorted.
func SourceFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Unnamed returns the files that text does not name: a file counts as
// named when its base name stands in text as a whole word (not as the
// tail of a longer name, so "client_http.go" does not name "http.go").
func Unnamed(text string, files []string) []string {
	named := map[string]bool{}
	for _, m := range goFile.FindAllStringSubmatch(text, -1) {
		named[filepath.Base(m[1])] = true
	}
	var out []string
	for _, f := range files {
		if !named[f] {
			out = append(out, f)
		}
	}
	return out
}
