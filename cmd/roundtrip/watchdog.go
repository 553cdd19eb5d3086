package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// watchdog bounds one round of a call (--timeout) without counting the
// time the user spends answering: on a 2025-11-25 session the server's
// questions arrive while its request is open, so the asker pauses the
// watchdog while it prompts. After an answer the full duration starts
// again.
type watchdog struct {
	mu     sync.Mutex
	d      time.Duration
	timer  *time.Timer
	paused int
	done   bool
}

// errTimeout is the cause of a round that ran out of time.
type errTimeout struct{ d time.Duration }

func (e *errTimeout) Error() string {
	return fmt.Sprintf("no answer from the server within %s (--timeout)", e.d)
}

// roundContext returns a context for one round: bounded by --timeout
// (unless 0), with the watchdog installed where the asker finds it.
func (s *session) roundContext() (context.Context, func()) {
	if s.opts.timeout <= 0 {
		return s.ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	w := &watchdog{d: s.opts.timeout}
	w.timer = time.AfterFunc(w.d, func() { cancel(&errTimeout{w.d}) })
	s.ui.setWatchdog(w)
	return ctx, func() {
		w.mu.Lock()
		w.done = true
		w.timer.Stop()
		w.mu.Unlock()
		s.ui.setWatchdog(nil)
		cancel(nil)
	}
}

func (w *watchdog) pause() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paused++
	if w.paused == 1 {
		w.timer.Stop()
	}
}

func (w *watchdog) resume() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paused--
	if w.paused == 0 && !w.done {
		w.timer.Reset(w.d)
	}
}

// withCause replaces a context error by the context's cause (a timeout
// of the watchdog).
func withCause(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			return fmt.Errorf("%w (%v)", cause, err)
		}
	}
	return err
}
