package doccheck

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
)

var outputLine = regexp.MustCompile(`(?im)^\s*(unordered output|output):`)

// SilentExamples returns an Example function, in every _test.go file
// below root (but the folders skip names), whose body has an "Output:"
// comment that go test does not see, so that the example compiles and
// never runs. That happens when the Output comment is not the start of
// the body's last comment group: a "// #endregion name" line right above
// it, with no blank line between, joins the group.
func SilentExamples(root string, skip ...string) ([]Problem, int, error) {
	var out []Problem
	n := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			for _, s := range skip {
				if rel == s {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range doc.Examples(f) {
			if e.Output != "" || e.EmptyOutput {
				seen["Example"+e.Name] = true
			}
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			wants := false
			for _, cg := range f.Comments {
				if cg.Pos() > fn.Body.Lbrace && cg.End() < fn.Body.Rbrace && outputLine.MatchString(cg.Text()) {
					wants = true
				}
			}
			if !wants {
				continue
			}
			n++
			if !seen[fn.Name.Name] {
				out = append(out, Problem{rel + ":" + itoa(fset.Position(fn.Pos()).Line), fn.Name.Name,
					"has an Output comment that go test does not see (it never runs): leave a blank line above it"})
			}
		}
		return nil
	})
	return out, n, err
}
