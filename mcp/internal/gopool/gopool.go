// Package gopool runs functions on goroutines kept for a while after
// their function returned, so that the next function starts on a grown
// stack. A new goroutine starts on the smallest stack and copies it each
// time it doubles: a request's handler (the server's middleware, the
// tool, its question) or a client's answer to a live question grows it
// to several kilobytes, which cost a handful of copies per call when
// each call had a goroutine of its own. A Pool keeps at most a few idle
// goroutines, each for a short while, and none once its owner is done;
// it takes no lock.
//
// An idle goroutine is a goroutine all the same: in a testing/synctest
// bubble, whose clock stops when its main goroutine returns, the owner
// must be done (closed) by then, or its idle goroutines have waited out
// their time.
package gopool

import (
	"sync/atomic"
	"time"
)

// Pool runs functions on reused goroutines. Make one with New; its
// goroutines belong to whoever started them (a synctest bubble, for
// one), so make a Pool with the thing that uses it, not globally.
type Pool struct {
	work    chan func() // unbuffered: a send succeeds only into an idle goroutine
	done    <-chan struct{}
	idle    atomic.Int32
	maxIdle int32
	keep    time.Duration
}

// New returns a Pool that keeps at most maxIdle goroutines idle, each
// for keep after its last function returned, and none once done is
// closed (then each function gets a goroutine of its own).
func New(maxIdle int, keep time.Duration, done <-chan struct{}) *Pool {
	return &Pool{work: make(chan func()), done: done, maxIdle: int32(maxIdle), keep: keep}
}

// Go runs f on an idle goroutine of the pool, else on a new one. It
// never blocks. As with a go statement, a panic in f ends the process.
// A nil Pool keeps no goroutine: f gets one of its own.
func (p *Pool) Go(f func()) {
	if p == nil {
		go f()
		return
	}
	select {
	case p.work <- f:
	default:
		go p.run(f)
	}
}

// Idle reports the goroutines waiting for a function (tests).
func (p *Pool) Idle() int { return int(p.idle.Load()) }

func (p *Pool) run(f func()) {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		f()
		f = nil // let what it held go while idle
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(p.keep)
		} else {
			t.Reset(p.keep)
		}
		select {
		case f = <-p.work:
			p.idle.Add(-1)
			t.Stop()
		case <-t.C:
			p.idle.Add(-1)
			return
		case <-p.done:
			p.idle.Add(-1)
			return
		}
	}
}
