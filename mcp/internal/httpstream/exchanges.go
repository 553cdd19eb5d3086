package httpstream

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// closeGrace is what a body being read, or an SSE write, still gets once
// the server is closing (Exchanges.Shutdown): a client that reads keeps
// up easily, one that does not is cut off, so that
// http.Server.Shutdown can finish.
const closeGrace = 500 * time.Millisecond

// aLongTimeAgo is a deadline in the past: it makes a blocked write return
// at once.
var aLongTimeAgo = time.Unix(1, 0)

// setReadDeadline finds the read deadline method of w the way
// http.ResponseController does (through Unwrap), without its allocation
// when w has none; it reports whether w has one. (The SSE streams' write
// deadlines are the sse.Writer's.)
func setReadDeadline(w http.ResponseWriter, t time.Time) bool {
	for {
		switch x := w.(type) {
		case interface{ SetReadDeadline(time.Time) error }:
			return x.SetReadDeadline(t) == nil
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return false
		}
	}
}

// Exchanges are the HTTP exchanges of a server that a client could hold
// up: bodies being read and SSE responses being written. Shutdown (mcp's
// Server.Close) gives each closeGrace more, and every later one closeGrace
// at most, so that no client can keep http.Server.Shutdown waiting.
//
// Only deadlines are set from here, never a write: a body is registered
// from before its read deadline to the end of its read, an SSE stream
// (its sse.Writer, whose Shorten never waits on a write) from before its
// first write to after its last, all within its handler.
type Exchanges struct {
	closing atomic.Bool
	mu      sync.Mutex
	reading map[http.ResponseWriter]struct{}
	writing map[*sse.Writer]struct{}
}

// StartRead arms the body read deadline of w, d from now (the
// http.Server's ReadTimeout if shorter, closeGrace once closing), and
// registers the read; it reports whether w has a read deadline (then
// EndRead must follow).
func (x *Exchanges) StartRead(w http.ResponseWriter, r *http.Request, d time.Duration) bool {
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 && srv.ReadTimeout < d {
		d = srv.ReadTimeout
	}
	if !setReadDeadline(w, time.Now().Add(x.limit(d))) {
		return false
	}
	x.mu.Lock()
	if x.reading == nil {
		x.reading = make(map[http.ResponseWriter]struct{})
	}
	x.reading[w] = struct{}{}
	x.mu.Unlock()
	// Close may have come between the deadline and the registration.
	if x.closing.Load() && d > closeGrace {
		setReadDeadline(w, time.Now().Add(closeGrace))
	}
	return true
}

// EndRead ends the body read. When the body is in, the read deadline is
// cleared (the connection's background read must not end the request's
// context when it expires); when it failed, the deadline is moved to the
// past, so that the server does not then wait for the rest of the body
// to discard it: the connection is closed after the answer instead.
func (x *Exchanges) EndRead(w http.ResponseWriter, ok bool) {
	x.mu.Lock()
	delete(x.reading, w)
	x.mu.Unlock()
	if ok {
		setReadDeadline(w, time.Time{})
	} else {
		setReadDeadline(w, aLongTimeAgo)
	}
}

// AddWriter registers an SSE stream before its first write; one made
// once the server is closing is shortened at once.
func (x *Exchanges) AddWriter(w *sse.Writer) {
	x.mu.Lock()
	if x.writing == nil {
		x.writing = make(map[*sse.Writer]struct{})
	}
	x.writing[w] = struct{}{}
	x.mu.Unlock()
	// Shutdown sets closing before it walks the streams: a stream it did
	// not see sees closing here.
	if x.closing.Load() {
		w.Shorten(closeGrace)
	}
}

// RemoveWriter unregisters an SSE stream after its last write.
func (x *Exchanges) RemoveWriter(w *sse.Writer) {
	x.mu.Lock()
	delete(x.writing, w)
	x.mu.Unlock()
}

// limit is d, or closeGrace once the server is closing.
func (x *Exchanges) limit(d time.Duration) time.Duration {
	if x.closing.Load() && d > closeGrace {
		return closeGrace
	}
	return d
}

// Shutdown cuts the registered exchanges to closeGrace (mcp's
// Server.Close): a body being read gets closeGrace more, and every write of an SSE
// stream closeGrace at most, the one in progress included.
func (x *Exchanges) Shutdown() {
	x.closing.Store(true)
	by := time.Now().Add(closeGrace)
	x.mu.Lock()
	defer x.mu.Unlock()
	for w := range x.reading {
		setReadDeadline(w, by)
	}
	for w := range x.writing {
		w.Shorten(closeGrace)
	}
}

// Held reports how many bodies are being read and how many SSE streams
// are registered (for tests).
func (x *Exchanges) Held() (reading, writing int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.reading), len(x.writing)
}

// InWrite reports how many of the SSE streams held are in a write now
// (a stuck client's, for instance).
func (x *Exchanges) InWrite() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for w := range x.writing {
		if w.Writing() {
			n++
		}
	}
	return n
}
