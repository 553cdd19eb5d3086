package sse

import (
	"errors"
	"net/http"
	"sync"
	"time"
)

// Errors of a Writer.
var (
	// ErrNotStarted: an event was written before Start.
	ErrNotStarted = errors.New("sse: the stream has not been started")
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("sse: the stream has already been started")
	// ErrAborted: the stream was aborted (Abort, or Shorten with no time
	// left).
	ErrAborted = errors.New("sse: the stream was aborted")
	// ErrReleased: the stream was released (Release).
	ErrReleased = errors.New("sse: the stream was released")
)

// aLongTimeAgo is a deadline in the past: it makes a blocked write
// return at once.
var aLongTimeAgo = time.Unix(1, 0)

// The response head of an event stream. The slices are shared by every
// stream and must not be modified.
var (
	hdrEventStream = []string{"text/event-stream"}
	hdrNoCache     = []string{"no-cache"}
	hdrNo          = []string{"no"}
)

// maxKeptBuffer bounds the rendering buffer a Writer keeps between
// writes; a larger one (a large event) is let go after its write.
const maxKeptBuffer = 64 << 10

// writeDeadliner and flushErrorer are the methods http.ResponseController
// looks for.
type (
	writeDeadliner interface{ SetWriteDeadline(time.Time) error }
	flushErrorer   interface{ FlushError() error }
	unwrapper      interface{ Unwrap() http.ResponseWriter }
)

// Writer writes one SSE response. Every write arms the write deadline
// first (the write timeout from now, or less after Shorten), writes, and
// flushes before it returns, so what a method wrote is on its way to the
// client when it returns, and a client that does not read blocks it for
// the timeout at most. Once the write is through, the deadline is
// cleared: a stream may stay idle for longer than the timeout (HTTP/2
// resets a stream whose write deadline passes even with no write in
// progress). Release arms it one last time for the end of the response.
//
// The deadline and flush methods are found the way
// http.ResponseController finds them (on the ResponseWriter, else
// through its Unwrap chain), once, when the Writer is made; a
// ResponseWriter without SetWriteDeadline is written without a deadline,
// and then neither the timeout nor Abort can bound a blocked write.
//
// Concurrency: the write methods (Start, WriteEvent, WriteEntries,
// WritePrime, WriteComment, KeepAlive, Arm) are not safe for concurrent
// use; the caller serializes them (one goroutine, or a lock of its own).
// That lock must not be one that closing the stream needs: a write can
// block for the whole timeout. Abort, Shorten and Release are safe to
// call from any goroutine at any time, including while a write is
// blocked, and never wait for one; they are what closing uses.
//
// After a write fails, every later write returns the same error without
// touching the ResponseWriter (the response is broken past repair).
type Writer struct {
	rw      http.ResponseWriter
	dl      writeDeadliner // nil: rw has no write deadline
	fe      flushErrorer   // one of fe, fl, or neither
	fl      http.Flusher
	timeout time.Duration
	buf     []byte
	started bool
	err     error // the first write error, returned by every later write
	// Inside Batch, writes are not flushed; unflushed says one was made.
	batching, unflushed bool

	// mu guards what Abort, Shorten and Release share with the writing
	// goroutine. It is held only to set a deadline, never across a write.
	mu       sync.Mutex
	state    writerState
	limit    time.Duration // > 0: Shorten's bound on every write
	deadline time.Time     // the deadline set now, zero when none
	writing  bool          // armed and not yet through: a write may be in progress
}

type writerState uint8

const (
	writerOpen writerState = iota
	writerAborted
	writerReleased
)

// NewWriter returns a Writer for rw; it writes nothing. timeout bounds
// each write from the moment it starts (an event with its flush); zero
// or negative sets no deadline of the Writer's own (one Shorten sets
// still applies).
func NewWriter(rw http.ResponseWriter, timeout time.Duration) *Writer {
	w := &Writer{rw: rw, timeout: timeout}
	for x := rw; x != nil; {
		if d, ok := x.(writeDeadliner); ok {
			w.dl = d
			break
		}
		u, ok := x.(unwrapper)
		if !ok {
			break
		}
		x = u.Unwrap()
	}
	for x := rw; x != nil; {
		if f, ok := x.(flushErrorer); ok {
			w.fe = f
			break
		}
		if f, ok := x.(http.Flusher); ok {
			w.fl = f
			break
		}
		u, ok := x.(unwrapper)
		if !ok {
			break
		}
		x = u.Unwrap()
	}
	return w
}

// StartStream is NewWriter followed by Start.
func StartStream(rw http.ResponseWriter, extra http.Header, timeout time.Duration) (*Writer, error) {
	w := NewWriter(rw, timeout)
	return w, w.Start(extra)
}

// Start writes the response head of an event stream and flushes it:
// status 200 with Content-Type text/event-stream, Cache-Control no-cache
// and X-Accel-Buffering no (so that a buffering proxy such as nginx
// passes each event on at once), and the fields of extra, which replace
// fields of the same (canonical) name. Headers already set on the
// ResponseWriter are kept unless named here. The value slices of extra
// are used as they are and must not be modified afterwards.
//
// Start may be called once; until it has been, the event methods return
// ErrNotStarted. Nothing may have been written to the ResponseWriter
// before.
func (w *Writer) Start(extra http.Header) error {
	if w.started {
		return ErrStarted
	}
	if err := w.arm(); err != nil {
		return err
	}
	h := w.rw.Header()
	h["Content-Type"] = hdrEventStream
	h["Cache-Control"] = hdrNoCache
	h["X-Accel-Buffering"] = hdrNo
	for k, v := range extra {
		h[k] = v
	}
	w.rw.WriteHeader(http.StatusOK)
	w.started = true
	return w.flushUnlessBatching()
}

// Batch runs f, whose writes (any of the write methods, Start included)
// are not flushed one by one: what f wrote is flushed once when it
// returns, within the deadline of f's last write. A stream's head, its
// priming event and its first events thus leave in one write. It returns
// f's error, or the flush's.
func (w *Writer) Batch(f func() error) error {
	w.batching = true
	err := f()
	w.batching = false
	if err != nil || !w.unflushed {
		return err
	}
	w.unflushed = false
	if err := w.flush(); err != nil {
		return err
	}
	w.disarm()
	return nil
}

// BatchLast runs f as Batch does, for the last writes of a response: what
// f wrote is not flushed, for net/http writes it with the end of the body
// once the handler returns, in one write instead of two (the event, then
// the end of the chunked body). The caller must Release the Writer and
// return from the handler right after: Release bounds that last write.
func (w *Writer) BatchLast(f func() error) error {
	w.batching = true
	err := f()
	w.batching = false
	if err != nil || !w.unflushed {
		return err
	}
	w.unflushed = false
	w.disarm()
	return nil
}

// flushUnlessBatching flushes what was written and clears the deadline,
// or, inside Batch, leaves both to its end.
func (w *Writer) flushUnlessBatching() error {
	if w.batching {
		w.unflushed = true
		return nil
	}
	if err := w.flush(); err != nil {
		return err
	}
	w.disarm()
	return nil
}

// Writing reports whether a write is in progress (armed and not yet
// through): on a client that does not read, it stays so until the write
// deadline.
func (w *Writer) Writing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writing
}

// Started reports whether Start has succeeded in writing the head.
func (w *Writer) Started() bool { return w.started }

// WriteEvent writes e and flushes it. An e that would break the framing
// (see Event) gets ErrInvalidField and nothing is written. It does not
// allocate, except to grow the Writer's rendering buffer to a larger
// event than any before (a buffer past 64 KiB is not kept).
func (w *Writer) WriteEvent(e Event) error {
	if !w.started {
		return w.notStarted()
	}
	if !validEvent(&e) {
		return ErrInvalidField
	}
	w.buf = appendEvent(w.buf[:0], &e)
	return w.send()
}

// WriteEntries writes logged events (a replay, or live events of a
// resumable stream), each with its EventID as id, name as event field
// when not empty, and its Data as data, then flushes once. Each entry is
// written within a deadline of its own, the last one with the flush; one
// entry costs what WriteEvent does. name must hold no CR or LF. No
// entries write nothing.
func (w *Writer) WriteEntries(name string, entries ...Entry) error {
	if !w.started {
		return w.notStarted()
	}
	if !validFieldValue(name, true) {
		return ErrInvalidField
	}
	if len(entries) == 0 {
		return nil
	}
	for i := range entries {
		w.buf = appendEntry(w.buf[:0], name, &entries[i])
		if err := w.write(); err != nil {
			return err
		}
	}
	return w.flushUnlessBatching()
}

// WritePrime writes a priming event and flushes it: id, the retry field
// when retry is positive, and one empty data line, as 2025-11-25 servers
// send first on a resumable stream (and last, before they end one that a
// client is to resume). A reader dispatches it as an event with empty
// data.
func (w *Writer) WritePrime(id EventID, retry time.Duration) error {
	if !w.started {
		return w.notStarted()
	}
	w.buf = appendPrime(w.buf[:0], id, retry)
	return w.send()
}

// WriteComment writes a comment line, ": text", and a blank line, and
// flushes. Readers ignore comments; proxies see traffic. text must hold
// no CR or LF.
func (w *Writer) WriteComment(text string) error {
	if !w.started {
		return w.notStarted()
	}
	if !validFieldValue(text, true) {
		return ErrInvalidField
	}
	w.buf = append(w.buf[:0], ": "...)
	w.buf = append(w.buf, text...)
	w.buf = append(w.buf, "\n\n"...)
	return w.send()
}

// KeepAlive writes the keep-alive comment, ": keep-alive", and flushes.
func (w *Writer) KeepAlive() error { return w.WriteComment("keep-alive") }

// Arm sets the deadline of a write the caller makes itself on the
// ResponseWriter (such as a JSON body written instead of a stream), as
// every write method does before it writes; the deadline stays until the
// next write method or Release. It returns the error a write method
// would return now instead of writing (aborted, released, broken), nil
// otherwise.
func (w *Writer) Arm() error { return w.arm() }

// Abort ends the stream at once: the write deadline is moved to the past,
// so that a write blocked on a client that does not read returns now, and
// every later write returns ErrAborted (or the error of the write that
// was cut). It is safe to call from any goroutine, any number of times;
// it never waits on the client. After Release it does nothing.
func (w *Writer) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != writerOpen {
		return
	}
	w.state = writerAborted
	if w.dl != nil {
		w.dl.SetWriteDeadline(aLongTimeAgo)
		w.deadline = aLongTimeAgo
	}
}

// Shorten bounds every write from now on to grace at most (the smaller
// of grace and the timeout applies), the write in progress included: its
// deadline moves to grace from now if that is sooner. A client that
// reads keeps up; one that does not is cut off within grace. An idle
// stream is not affected until it writes. This is what a server shutting
// down uses; a Writer made once shutdown has begun is Shortened right
// after it is made. grace of zero or less is Abort. It is safe to call
// from any goroutine; after Release it does nothing.
func (w *Writer) Shorten(grace time.Duration) {
	if grace <= 0 {
		w.Abort()
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != writerOpen {
		return
	}
	if w.limit == 0 || grace < w.limit {
		w.limit = grace
	}
	if w.dl == nil || !w.writing {
		return
	}
	if t := time.Now().Add(grace); w.deadline.IsZero() || t.Before(w.deadline) {
		w.dl.SetWriteDeadline(t)
		w.deadline = t
	}
}

// Release marks the end of the Writer's use: every later write returns
// ErrReleased, and Abort and Shorten no longer touch the ResponseWriter.
// It arms the deadline one last time (the write timeout from now, or
// less after Shorten) for what net/http writes once the handler returns
// (the end of the body), so that a client that stopped reading cannot
// hold the connection past it; net/http clears it afterwards. Call it,
// from the goroutine that writes, before the handler that owns the
// ResponseWriter returns (net/http reuses the connection afterwards, and
// a deadline set then would hit the next request on it). It is safe to
// call from any goroutine, and more than once.
func (w *Writer) Release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == writerOpen && w.dl != nil {
		if d := w.limitLocked(); d > 0 {
			t := time.Now().Add(d)
			w.dl.SetWriteDeadline(t)
			w.deadline = t
		}
	}
	w.state = writerReleased
}

// arm sets the deadline of the next write, or reports why there must be
// none.
func (w *Writer) arm() error {
	if w.err != nil {
		return w.err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.state {
	case writerAborted:
		w.err = ErrAborted
		return w.err
	case writerReleased:
		return ErrReleased
	}
	w.writing = true
	d := w.limitLocked()
	if d <= 0 || w.dl == nil {
		return nil
	}
	t := time.Now().Add(d)
	if err := w.dl.SetWriteDeadline(t); err != nil {
		// A write that could not be bounded is not attempted.
		w.err = err
		return err
	}
	w.deadline = t
	return nil
}

// limitLocked is how long a write may take: the timeout, or Shorten's
// grace when shorter; zero when unbounded.
func (w *Writer) limitLocked() time.Duration {
	d := w.timeout
	if w.limit > 0 && (d <= 0 || w.limit < d) {
		d = w.limit
	}
	return max(d, 0)
}

// disarm clears the deadline once a write is through (unless Abort has
// moved it to the past).
func (w *Writer) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing = false
	if w.state != writerOpen || w.deadline.IsZero() {
		return
	}
	if w.dl.SetWriteDeadline(time.Time{}) == nil {
		w.deadline = time.Time{}
	}
}

// send writes the rendered buffer within one deadline, flushes it, and
// clears the deadline.
func (w *Writer) send() error {
	if err := w.write(); err != nil {
		return err
	}
	return w.flushUnlessBatching()
}

// write arms the deadline and writes the rendered buffer.
func (w *Writer) write() error {
	if err := w.arm(); err != nil {
		return err
	}
	_, err := w.rw.Write(w.buf)
	if cap(w.buf) > maxKeptBuffer {
		w.buf = nil
	}
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// flush flushes within the deadline already armed.
func (w *Writer) flush() error {
	var err error
	switch {
	case w.fe != nil:
		err = w.fe.FlushError()
	case w.fl != nil:
		w.fl.Flush()
	}
	if err != nil {
		return w.fail(err)
	}
	return nil
}

func (w *Writer) fail(err error) error {
	w.mu.Lock()
	aborted := w.state == writerAborted
	w.mu.Unlock()
	if aborted && !errors.Is(err, ErrAborted) {
		// The write was cut by Abort: say so, keeping the cause.
		err = errors.Join(ErrAborted, err)
	}
	w.err = err
	return err
}

func (w *Writer) notStarted() error {
	if w.err != nil {
		return w.err
	}
	return ErrNotStarted
}
