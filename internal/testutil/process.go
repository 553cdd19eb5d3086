package testutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// builds are the executables Build made in this test binary.
var builds struct {
	mu      sync.Mutex
	managed bool   // Run is running the tests
	dir     string // made by the first Build, removed by Run
	byPkg   map[string]*build
}

type build struct {
	once sync.Once
	out  string // where it goes
	path string
	err  error
}

// Run runs m's tests, then removes what Build compiled, and returns the
// exit code for os.Exit. A test binary that calls Build runs its tests
// through it:
//
//	func TestMain(m *testing.M) { os.Exit(testutil.Run(m)) }
func Run(m *testing.M) int {
	builds.mu.Lock()
	builds.managed = true
	builds.mu.Unlock()
	defer func() {
		builds.mu.Lock()
		defer builds.mu.Unlock()
		if builds.dir != "" {
			os.RemoveAll(builds.dir)
		}
	}()
	return m.Run()
}

// buildTimeout bounds one go build.
const buildTimeout = 3 * time.Minute

// Build compiles the main package pkg and returns the executable's path.
// pkg is what go build takes: a directory relative to the test's working
// directory (the directory of the package under test), or an import
// path. It is compiled once per test binary, however many tests ask for
// it, with the go command of the toolchain that runs the tests; a failed
// build fails every test that asks for it, with the compiler's output.
// Build fails the test unless the test binary's TestMain calls Run, which
// removes the executables at the end.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	key := pkg
	if pkg == "." || pkg == ".." || strings.HasPrefix(pkg, "./") || strings.HasPrefix(pkg, "../") {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			t.Fatal(err)
		}
		key = abs
	}
	builds.mu.Lock()
	if !builds.managed {
		builds.mu.Unlock()
		t.Fatal("testutil.Build: the test binary's TestMain must run the tests with testutil.Run, which removes the builds")
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "testutil-build-")
		if err != nil {
			builds.mu.Unlock()
			t.Fatal(err)
		}
		builds.dir, builds.byPkg = dir, map[string]*build{}
	}
	b, ok := builds.byPkg[key]
	if !ok {
		b = &build{out: filepath.Join(builds.dir, strconv.Itoa(len(builds.byPkg)), filepath.Base(key))}
		builds.byPkg[key] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.path, b.err = compile(key, b.out) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func compile(pkg, out string) (string, error) {
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// goTool is the go command of the toolchain running the tests: go test
// puts its GOROOT/bin first on PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// Process is a child process that a test started with Start or Listen.
// The test's cleanup kills it if it is still running and waits for it;
// if the test failed, the cleanup logs what it wrote to standard error.
type Process struct {
	Cmd *exec.Cmd
	// Stdout is the process's standard output when Start set it up (the
	// command's Stdout was nil); read it, or the process may block once
	// the pipe is full.
	Stdout io.Reader
	// Stderr collects the process's standard error when Start set it up
	// (the command's Stderr was nil).
	Stderr *Buffer

	done chan struct{}
	err  error
}

// Start starts cmd and registers the cleanup that stops it. A nil
// cmd.Stdout becomes the pipe p.Stdout, a nil cmd.Stderr the buffer
// p.Stderr; the process's own exit, at any time, is Done. A command that
// does not start fails the test.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	// An *os.File is handed to the child as is, so unlike StdoutPipe,
	// Wait does not close it under a reader that is still reading.
	var stdoutR, stdoutW *os.File
	if cmd.Stdout == nil {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stdoutR, stdoutW = r, w
		cmd.Stdout, p.Stdout = w, r
	}
	if cmd.Stderr == nil {
		p.Stderr = &Buffer{}
		cmd.Stderr = p.Stderr
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second // a grandchild holding stderr open
	}
	err := cmd.Start()
	if stdoutW != nil {
		stdoutW.Close() // the child has its copy
	}
	if err != nil {
		if stdoutR != nil {
			stdoutR.Close()
		}
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		if stdoutR != nil {
			stdoutR.Close()
		}
		if t.Failed() && p.Stderr != nil {
			t.Logf("%s stderr:\n%s", filepath.Base(cmd.Path), p.Stderr.String())
		}
	})
	return p
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err reports how the process exited, as exec.Cmd.Wait does, once Done
// is closed; before that it is nil.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// listenTimeout bounds how long Listen waits for the address.
const listenTimeout = 20 * time.Second

// Listen starts bin with args (see Start) and waits for its first line
// on standard output, which must be "listening on URL"; it returns the
// process and the URL. The rest of standard output is read and dropped.
// A process that announces something else, exits first, or says nothing
// within 20 seconds fails the test.
func Listen(t testing.TB, bin string, args ...string) (*Process, string) {
	t.Helper()
	p := Start(t, exec.Command(bin, args...))
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(p.Stdout)
		l, _ := r.ReadString('\n')
		line <- l
		io.Copy(io.Discard, r)
	}()
	timer := time.NewTimer(listenTimeout)
	defer timer.Stop()
	select {
	case l := <-line:
		url, ok := strings.CutPrefix(strings.TrimSpace(l), "listening on ")
		if !ok || url == "" {
			t.Fatalf("%s: first line %q, want \"listening on URL\"", filepath.Base(bin), l)
		}
		return p, url
	case <-timer.C:
		t.Fatalf("%s did not announce its address within %v", filepath.Base(bin), listenTimeout)
	}
	return nil, ""
}
