package mcptest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fakeT is a testing.TB that records failures instead of failing, so
// that a test can check what the harness reports, and that an example
// (which has no *testing.T) can run a harness. Only the methods the
// harness calls are implemented; the embedded nil TB is never reached.
type fakeT struct {
	testing.TB

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	failed   bool
	errors   []string
	logs     []string
	cleanups []func()
}

func newFakeT() *fakeT {
	ctx, cancel := context.WithCancel(context.Background())
	return &fakeT{ctx: ctx, cancel: cancel}
}

func (f *fakeT) Helper()                  {}
func (f *fakeT) Name() string             { return "fake" }
func (f *fakeT) Context() context.Context { return f.ctx }

func (f *fakeT) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

// Fatalf records the failure and ends the goroutine, as testing does:
// run code that may call it with (*fakeT).run.
func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

func (f *fakeT) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func (f *fakeT) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

// run runs body on a goroutine of its own (so that Fatalf can end it),
// then the cleanups, the last registered first, as a test ends.
func (f *fakeT) run(body func(t *fakeT)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(f)
	}()
	<-done
	f.end()
}

// end cancels the context and runs the cleanups.
func (f *fakeT) end() {
	f.cancel()
	f.mu.Lock()
	fns := f.cleanups
	f.cleanups = nil
	f.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// errorText returns the recorded failures, one a line.
func (f *fakeT) errorText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.errors, "\n")
}

// logText returns the recorded logs, one a line.
func (f *fakeT) logText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.logs, "\n")
}

// done ends an example's fake test and prints what failed, so that the
// example's output shows it.
func (f *fakeT) done() {
	f.end()
	if s := f.errorText(); s != "" {
		fmt.Println("FAILED:", s)
	}
}
