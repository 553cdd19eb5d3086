package testutil

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

func TestBufferIsSafeForConcurrentUse(t *testing.T) {
	var b Buffer
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range lines {
				fmt.Fprintf(&b, "w%d\n", i)
				_ = b.String() // a reader while others write: -race would object
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "\n"); got != writers*lines {
		t.Fatalf("%d lines, want %d", got, writers*lines)
	}
}

// recorder is a testing.TB whose failures are recorded, not reported, so
// a test can check that a helper fails its test.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failed   bool
	logs     []string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.fail(fmt.Sprint(args...)); runtime.Goexit() }

func (r *recorder) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.logs = append(r.logs, msg)
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) log() string { return strings.Join(r.logs, "\n") }

// runTB runs f as a test of its own and then its cleanups, last first.
func runTB(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	n := 0
	r := runTB(t, func(tb testing.TB) {
		Eventually(tb, time.Minute, "the third check", func() bool { n++; return n == 3 })
	})
	if r.Failed() || n != 3 {
		t.Fatalf("failed %v after %d checks, want a pass after 3:\n%s", r.Failed(), n, r.log())
	}
}

func TestEventuallyFailsAtItsTimeoutNamingWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	start := time.Now()
	checks := 0
	r := runTB(t, func(tb testing.TB) {
		Eventually(tb, 50*time.Millisecond, "the impossible", func() bool { checks++; return false })
	})
	if took := time.Since(start); !r.Failed() || took < 50*time.Millisecond || took > 10*time.Second {
		t.Fatalf("failed %v after %v, want a failure after 50ms", r.Failed(), took)
	}
	if !strings.Contains(r.log(), "waiting for the impossible") {
		t.Fatalf("the failure does not say what it waited for: %q", r.log())
	}
	if checks < 2 || checks > 50 {
		t.Fatalf("%d checks in 50ms, want a few (a short, growing pause)", checks)
	}
}

func TestBuildCompilesAPackageOncePerTestBinary(t *testing.T) {
	first := Build(t, "./testdata/announce")
	info, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	paths := make([]string, 4)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := runTB(t, func(tb testing.TB) { paths[i] = Build(tb, "./testdata/../testdata/announce/.") }); r.Failed() {
				t.Error(r.log())
			}
		}()
	}
	wg.Wait()
	for _, p := range paths {
		if p != first {
			t.Errorf("Build gave %s, then %s", first, p)
		}
	}
	again, err := os.Stat(first)
	if err != nil || !again.ModTime().Equal(info.ModTime()) {
		t.Errorf("the executable was rebuilt: %v", err)
	}
}

func TestBuildFailureFailsEveryTestThatAsksWithTheCompilerOutput(t *testing.T) {
	for i := range 2 {
		r := runTB(t, func(tb testing.TB) { Build(tb, "./testdata/broken") })
		if !r.Failed() || !strings.Contains(r.log(), "go build") || !strings.Contains(r.log(), "main.go") {
			t.Errorf("build %d: failed %v, log:\n%s", i+1, r.Failed(), r.log())
		}
	}
}

func TestListenReturnsTheAnnouncedURLAndCleanupStopsTheProcess(t *testing.T) {
	bin := Build(t, "./testdata/announce")
	var p *Process
	r := runTB(t, func(tb testing.TB) {
		var url string
		p, url = Listen(tb, bin, "-say", "listening on http://127.0.0.1:9/mcp")
		if url != "http://127.0.0.1:9/mcp" {
			tb.Errorf("url = %q", url)
		}
		select {
		case <-p.Done():
			tb.Errorf("the process exited before the cleanup: %v", p.Err())
		case <-time.After(50 * time.Millisecond):
		}
	})
	if r.Failed() {
		t.Fatal(r.log())
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("the process runs after the cleanup")
	}
	if p.Err() == nil {
		t.Error("the process was not killed: it exited cleanly")
	}
}

func TestListenFailsOnAnotherFirstLineAndShowsStderr(t *testing.T) {
	bin := Build(t, "./testdata/announce")
	r := runTB(t, func(tb testing.TB) { Listen(tb, bin, "-say", "starting up", "-stderr", "the reason it broke") })
	if !r.Failed() || !strings.Contains(r.log(), `first line "starting up\n"`) || !strings.Contains(r.log(), "the reason it broke") {
		t.Errorf("failed %v, log:\n%s", r.Failed(), r.log())
	}
}

func TestListenFailsWhenTheProcessExitsSilently(t *testing.T) {
	bin := Build(t, "./testdata/announce")
	r := runTB(t, func(tb testing.TB) { Listen(tb, bin, "-say", "", "-exit") })
	if !r.Failed() || !strings.Contains(r.log(), "first line") {
		t.Errorf("failed %v, log:\n%s", r.Failed(), r.log())
	}
}

func TestStartReportsTheExitOfAProcessThatEndsByItself(t *testing.T) {
	bin := Build(t, "./testdata/announce")
	p, _ := Listen(t, bin, "-exit")
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("no exit")
	}
	if err := p.Err(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
}

func TestOnlyTestsImportTestutil(t *testing.T) {
	root := moduleRoot(t)
	modFile, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod, _, _ := strings.Cut(strings.TrimPrefix(string(modFile), "module "), "\n")
	self := strings.TrimSpace(mod) + "/internal/testutil"
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root {
				if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self || strings.HasPrefix(p, self+"/") {
				t.Errorf("%s imports %s, which only tests may import", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("walked only %d files under %s", files, root)
	}
}
