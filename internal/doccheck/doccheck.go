// Package doccheck finds names in the project's prose that the code does
// not have: a file name ending in .go that no file of the tree bears, or
// a qualified Go name (pkg.Name, pkg.Type.Member, or Type.Member of the
// package a doc comment belongs to) that no package of the tree defines.
// Its test runs it over every package documentation comment and every
// design note, so that docs cannot name what was renamed or removed.
package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Tree is what the code of a tree defines.
type Tree struct {
	files map[string]bool            // every .go file: its path from the root, and its base name
	pkgs  map[string]map[string]bool // package name → exported names (types, funcs, vars, consts, fields, methods)
	dirs  map[string]string          // package directory → package name
}

// Load reads every non-test Go file below root, skipping the folders
// skip names (relative to root).
func Load(root string, skip ...string) (*Tree, error) {
	t := &Tree{files: map[string]bool{}, pkgs: map[string]map[string]bool{}, dirs: map[string]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			for _, s := range skip {
				if rel == s {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		t.files[filepath.ToSlash(rel)] = true
		t.files[d.Name()] = true
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		t.dirs[filepath.ToSlash(filepath.Dir(rel))] = pkg
		names := t.pkgs[pkg]
		if names == nil {
			names = map[string]bool{}
			t.pkgs[pkg] = names
		}
		collect(f, names)
		return nil
	})
	return t, err
}

// collect adds the exported names a file declares, with the fields and
// methods of its types.
func collect(f *ast.File, names map[string]bool) {
	add := func(id *ast.Ident) {
		if id != nil && id.IsExported() {
			names[id.Name] = true
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(d.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					add(s.Name)
					switch ty := s.Type.(type) {
					case *ast.StructType:
						for _, fl := range ty.Fields.List {
							for _, n := range fl.Names {
								add(n)
							}
							if len(fl.Names) == 0 { // embedded: its name is a field
								if id := embeddedName(fl.Type); id != nil {
									add(id)
								}
							}
						}
					case *ast.InterfaceType:
						for _, m := range ty.Methods.List {
							for _, n := range m.Names {
								add(n)
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						add(n)
					}
				}
			}
		}
	}
}

func embeddedName(e ast.Expr) *ast.Ident {
	switch e := e.(type) {
	case *ast.Ident:
		return e
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel
	case *ast.IndexExpr:
		return embeddedName(e.X)
	}
	return nil
}

var (
	goFile    = regexp.MustCompile(`(?:^|[^\w/.*-])((?:[\w.-]+/)*[A-Za-z0-9][\w-]*\.go)\b`)
	qualified = regexp.MustCompile(`\b([a-z][a-z0-9]*|[A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*)(?:\.([A-Z][A-Za-z0-9]*))?\b`)
)

// Problem is one stale name.
type Problem struct {
	Where string // file:line
	Name  string
	Why   string
}

// Check returns the stale names in text. where names the text (for
// messages); pkg is the package whose documentation it is ("" for a
// design note), so that Type.Member names resolve there.
func (t *Tree) Check(where, pkg, text string) []Problem {
	var out []Problem
	for i, line := range strings.Split(text, "\n") {
		at := where + ":" + itoa(i+1)
		for _, m := range goFile.FindAllStringSubmatch(line, -1) {
			name := m[1]
			if !t.files[name] && !t.files[filepath.Base(name)] {
				out = append(out, Problem{at, name, "no such file"})
			}
		}
		for _, m := range qualified.FindAllStringSubmatch(line, -1) {
			if p := t.qualifiedProblem(pkg, m[1], m[2], m[3]); p != "" {
				out = append(out, Problem{at, strings.TrimSuffix(m[0], "."), p})
			}
		}
	}
	return out
}

// qualifiedProblem checks a.b(.c): a is a package of the tree (then b,
// and c, must be among its names), or a type of pkg (then b must be).
// Anything else (a field path of JSON, a host name, a package of the
// standard library) is not the checker's business.
func (t *Tree) qualifiedProblem(pkg, a, b, c string) string {
	if names, ok := t.pkgs[a]; ok && strings.ToLower(a) == a {
		if !names[b] {
			return "package " + a + " has no " + b
		}
		if c != "" && !names[c] {
			return "package " + a + " has no member " + c
		}
		return ""
	}
	if pkg == "" {
		return ""
	}
	names := t.pkgs[pkg]
	if names[a] && !names[b] {
		return "package " + pkg + " has no member " + b + " (of " + a + ")"
	}
	return ""
}

// PackageDocs returns, for every package of the tree, the text of its
// package documentation comment with its file name.
func (t *Tree) PackageDocs(root string) (map[string]string, map[string]string, error) {
	docs, pkgOf := map[string]string{}, map[string]string{}
	fset := token.NewFileSet()
	dirs := make([]string, 0, len(t.dirs))
	for d := range t.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		entries, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			n := e.Name()
			if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			path := filepath.Join(root, d, n)
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				return nil, nil, err
			}
			if f.Doc != nil {
				rel := filepath.ToSlash(filepath.Join(d, n))
				docs[rel] = f.Doc.Text()
				pkgOf[rel] = f.Name.Name
			}
		}
	}
	return docs, pkgOf, nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
