package mcp

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheExportedAPIStaysWithinItsBudget: package mcp exports no more
// names than its features need (issue 21: at most 440 exported names,
// counting top-level names and the methods of exported types, and at
// most 30 error names: Err* variables and *Error types, the Error alias
// aside). A name added past the budget must replace one, or the budget
// must be raised here with the reason.
func TestTheExportedAPIStaysWithinItsBudget(t *testing.T) {
	t.Parallel()
	const maxNames, maxErrorNames = 440, 30
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names, errorNames []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
					names = append(names, recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
							if n := s.Name.Name; n != "Error" && strings.HasSuffix(n, "Error") {
								errorNames = append(errorNames, n)
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
								if d.Tok == token.VAR && strings.HasPrefix(n.Name, "Err") {
									errorNames = append(errorNames, n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("package mcp exports %d names (budget %d), %d error names (budget %d)", len(names), maxNames, len(errorNames), maxErrorNames)
	if len(names) > maxNames {
		t.Errorf("package mcp exports %d names, more than its budget of %d", len(names), maxNames)
	}
	if len(errorNames) > maxErrorNames {
		t.Errorf("package mcp exports %d error names, more than its budget of %d: %v", len(errorNames), maxErrorNames, errorNames)
	}
}

// TestGoDocOfTheAPIStaysWithinItsBudget: what `go doc` prints for the
// package (its doc and one line per exported declaration) stays within
// 330 lines (issue 21), so that the package's front page reads in one
// sitting; a new feature finds its lines by making others shorter.
func TestGoDocOfTheAPIStaysWithinItsBudget(t *testing.T) {
	t.Parallel()
	const maxLines = 330
	out, err := exec.Command("go", "doc", ".").Output()
	if err != nil {
		t.Fatalf("go doc: %v", err)
	}
	n := bytes.Count(out, []byte("\n"))
	t.Logf("go doc ./mcp prints %d lines (budget %d)", n, maxLines)
	if n > maxLines {
		t.Errorf("go doc ./mcp prints %d lines, more than its budget of %d", n, maxLines)
	}
	if n < 100 {
		t.Errorf("go doc ./mcp prints only %d lines: not the package's doc", n)
	}
}

func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
