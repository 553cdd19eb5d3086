package mcp

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The three layers of package mcp. Shared files hold what both sides
// speak: wire types, codecs, framing constants, output-schema validation,
// question text. Client files (client*.go) use no name declared in a
// server file, server files (every other file) none declared in a client
// file, and shared files neither. The list is docs/design/architecture.md's
// "Layers" too.
var sharedFiles = []string{
	"content.go",
	"doc.go",
	"errors.go",
	"formschema.go",
	"input.go",
	"meta_decode.go",
	"protocol.go",
	"question_text.go",
	"schema.go",
	"types.go",
	"wire_headers.go",
	"wire_json.go",
	"wire_methods.go",
	"wire_outputschema.go",
}

// layerOf returns the layer of a file of package mcp.
func layerOf(file string, shared map[string]bool) string {
	switch {
	case shared[file]:
		return "shared"
	case strings.HasPrefix(file, "client"):
		return "client"
	}
	return "server"
}

func TestLayersDoNotCross(t *testing.T) {
	t.Parallel()
	lp := loadLayerPackage(t)
	for _, f := range sharedFiles {
		if !lp.has(f) {
			t.Errorf("shared file %s is listed but is not a file of package mcp", f)
		}
	}
	for _, c := range lp.check(t, sharedSet()) {
		t.Error(c)
	}
}

// The design note's layer map lists the shared files the test checks.
func TestLayerMapInTheDesignNoteIsTheTests(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/design/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Layers\n")
	if !ok {
		t.Fatal(`docs/design/architecture.md has no "## Layers" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var listed []string
	for _, m := range regexp.MustCompile(`[\w*]+\.go\b`).FindAllString(sec, -1) {
		if !strings.Contains(m, "*") && !strings.HasSuffix(m, "_test.go") && !slices.Contains(listed, m) {
			listed = append(listed, m)
		}
	}
	slices.Sort(listed)
	if want := slices.Sorted(slices.Values(sharedFiles)); !slices.Equal(listed, want) {
		t.Errorf("the Layers section of docs/design/architecture.md lists %q as shared; the layer test, %q", listed, want)
	}
}

// The checker itself: a crossing planted in each direction (and a
// shared file using a server name) is reported, for a top-level name and
// for a member.
func TestLayerCheckReportsPlantedCrossings(t *testing.T) {
	t.Parallel()
	lp := loadLayerPackage(t)
	shared := sharedSet()
	shared["wire_planted.go"] = true
	got := lp.crossings(t, shared,
		&plantedFile{"client_planted.go", "package mcp\n\nfunc plantedClient(s *Server) { _ = s.opts }\n"},
		&plantedFile{"planted.go", "package mcp\n\nfunc plantedServer(c *Client) error { return c.Close() }\n"},
		&plantedFile{"wire_planted.go", "package mcp\n\nvar plantedShared = NewServer\n"},
	)
	for _, want := range []string{
		"client_planted.go uses server name Server declared in server.go",
		"client_planted.go uses server name field opts declared in server.go",
		"planted.go uses client name Client declared in client.go",
		"planted.go uses client name method Close declared in client.go",
		"wire_planted.go uses server name NewServer declared in server.go",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("want %q among the crossings, got %q", want, got)
		}
	}
}

func sharedSet() map[string]bool {
	m := map[string]bool{}
	for _, f := range sharedFiles {
		m[f] = true
	}
	return m
}

type plantedFile struct{ name, src string }

// layerPackage is package mcp's non-test files, parsed, with an importer
// of its dependencies' export data.
type layerPackage struct {
	fset  *token.FileSet
	files []*ast.File
	names map[string]bool
	imp   types.Importer
	mu    sync.Mutex // the importer caches without a lock
}

func (lp *layerPackage) has(file string) bool { return lp.names[file] }

var (
	layerPkgOnce sync.Once
	layerPkg     *layerPackage
	layerPkgErr  error
)

// loadLayerPackage parses the package once per test binary. Imports are
// read from export data that go list builds (with -race when the test
// binary has it, so that it finds the build cache's), which takes a
// fraction of type-checking the dependencies from source.
func loadLayerPackage(t *testing.T) *layerPackage {
	t.Helper()
	layerPkgOnce.Do(func() { layerPkg, layerPkgErr = parseLayerPackage() })
	if layerPkgErr != nil {
		t.Fatal(layerPkgErr)
	}
	return layerPkg
}

func parseLayerPackage() (*layerPackage, error) {
	bp, err := build.ImportDir(".", 0)
	if err != nil {
		return nil, err
	}
	lp := &layerPackage{fset: token.NewFileSet(), names: map[string]bool{}}
	imports := map[string]bool{}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(lp.fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		lp.files = append(lp.files, f)
		lp.names[name] = true
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			imports[p] = true
		}
	}
	exports, err := exportData(slices.Sorted(func(yield func(string) bool) {
		for p := range imports {
			if p != "C" && !yield(p) {
				return
			}
		}
	}))
	if err != nil {
		return nil, err
	}
	lp.imp = importer.ForCompiler(lp.fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(f)
	})
	return lp, nil
}

// exportData maps each package that pkgs need to its export data file.
func exportData(pkgs []string) (map[string]string, error) {
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %v\n%s", err, stderr.Bytes())
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, file, ok := strings.Cut(sc.Text(), "\t")
		if ok && file != "" {
			m[path] = file
		}
	}
	return m, sc.Err()
}

// crossings type-checks the package (with the extra files) and
// lists every use of a name of package mcp (a top-level name, a method,
// a field) that crosses layers, as "FILE uses LAYER name NAME declared
// in FILE".
func (lp *layerPackage) crossings(t *testing.T, shared map[string]bool, extra ...*plantedFile) []string {
	t.Helper()
	out := lp.check(t, shared, extra...)
	return out
}

// check returns the crossings of the package's files and extra, one
// line each, sorted.
func (lp *layerPackage) check(t *testing.T, shared map[string]bool, extra ...*plantedFile) (out []string) {
	t.Helper()
	files := slices.Clip(lp.files)
	for _, e := range extra {
		f, err := parser.ParseFile(lp.fset, e.name, e.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	lp.mu.Lock()
	conf := types.Config{Importer: lp.imp}
	pkg, err := conf.Check("github.com/roundtrip-mcp/roundtrip/mcp", lp.fset, files, info)
	lp.mu.Unlock()
	if err != nil {
		t.Fatalf("type-checking package mcp: %v", err)
	}
	seen := map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !(obj.Parent() == pkg.Scope() || isMember(obj)) {
			continue
		}
		from := filepath.Base(lp.fset.Position(id.Pos()).Filename)
		to := filepath.Base(lp.fset.Position(obj.Pos()).Filename)
		lf, lt := layerOf(from, shared), layerOf(to, shared)
		if lf == lt || lt == "shared" {
			continue
		}
		name := obj.Name()
		if v, ok := obj.(*types.Var); ok && v.IsField() {
			name = "field " + name
		} else if isMember(obj) {
			name = "method " + name
		}
		c := fmt.Sprintf("%s uses %s name %s declared in %s", from, lt, name, to)
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// isMember reports whether obj is a method or a struct field.
func isMember(obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Func:
		return o.Signature().Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}

// The shared method table and the server's agree: the server answers
// every method of the specification and no other, and a method may
// carry an InputRequiredResult on the client's side exactly when it may
// on the server's.
func TestSpecMethodsAreTheServersTables(t *testing.T) {
	t.Parallel()
	served := map[string]bool{methodInitialize: false} // answered before any table
	for name, m := range methods {
		served[name] = m.carrier
	}
	for name, m := range legacyMethods {
		if c, ok := served[name]; ok && c != m.carrier {
			t.Errorf("%s: carrier %v in one era, %v in the other", name, c, m.carrier)
		}
		served[name] = m.carrier
	}
	for name, carrier := range served {
		c, ok := specMethods[name]
		switch {
		case !ok:
			t.Errorf("the server answers %s, which specMethods lacks", name)
		case c != carrier:
			t.Errorf("%s: carrier %v in specMethods, %v in the server's table", name, c, carrier)
		}
	}
	for name := range specMethods {
		if _, ok := served[name]; !ok {
			t.Errorf("specMethods names %s, which the server does not answer", name)
		}
	}
}
