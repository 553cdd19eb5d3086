package gopool

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A function run after another returned runs on the goroutine that ran
// it (kept idle), not on a new one.
func TestAnIdleGoroutineRunsTheNextFunction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		defer close(done) // the bubble ends with no goroutine left
		p := New(4, time.Second, done)
		before := runtime.NumGoroutine()
		for range 100 {
			done := make(chan struct{})
			p.Go(func() { close(done) })
			<-done
			synctest.Wait() // the goroutine is idle again
		}
		if n := runtime.NumGoroutine() - before; n != 1 {
			t.Errorf("%d goroutines for 100 functions run one after another, want 1", n)
		}
		if p.Idle() != 1 {
			t.Errorf("%d idle, want 1", p.Idle())
		}
	})
}

// An idle goroutine ends once it has waited keep; at most maxIdle wait.
func TestIdleGoroutinesAreBoundedAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keep = 100 * time.Millisecond
		p := New(3, keep, nil)
		before := runtime.NumGoroutine()
		var wg sync.WaitGroup
		release := make(chan struct{})
		for range 10 {
			wg.Add(1)
			p.Go(func() {
				defer wg.Done()
				<-release
			})
		}
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n != 10 {
			t.Fatalf("%d goroutines for 10 functions at once, want 10", n)
		}
		close(release)
		wg.Wait()
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n != 3 || p.Idle() != 3 {
			t.Errorf("%d goroutines left (%d idle), want the 3 idle ones", n, p.Idle())
		}
		time.Sleep(keep - time.Millisecond)
		synctest.Wait()
		if p.Idle() != 3 {
			t.Errorf("%d idle before keep passed, want 3", p.Idle())
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n != 0 || p.Idle() != 0 {
			t.Errorf("%d goroutines left (%d idle) after keep, want none", n, p.Idle())
		}
	})
}

// Once done is closed, no goroutine waits: the idle ones end, and a
// function run after gets a goroutine that ends with it.
func TestNoGoroutineWaitsOnceDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		p := New(4, time.Hour, done)
		before := runtime.NumGoroutine()
		ran := make(chan struct{})
		p.Go(func() { ran <- struct{}{} })
		<-ran
		synctest.Wait()
		if p.Idle() != 1 {
			t.Fatalf("%d idle, want 1", p.Idle())
		}
		close(done)
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n != 0 {
			t.Errorf("%d goroutines once done, want none", n)
		}
		for range 3 {
			p.Go(func() { ran <- struct{}{} })
			<-ran
		}
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n != 0 {
			t.Errorf("%d goroutines after functions run once done, want none", n)
		}
	})
}
