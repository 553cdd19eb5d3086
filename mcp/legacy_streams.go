package mcp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// The streams of a 2025-11-25 session: the response stream of each
// request (a JSON body until the handler sends something first, then an
// SSE stream), the session's GET stream (number 0), and their
// resumption with Last-Event-ID. The SSE framing, the write deadlines and
// the replay log are package sse's; what is here is who writes what,
// when.

// legacyStream is the response stream of one legacy request (or the
// session's GET stream, number 0). Its messages go to the exchange
// attached to it, if any, and to the session's replay log.
//
// Nothing writes to a connection under the stream's mu: messages are
// queued on the attached exchange (sseConn) and the goroutine serving
// that exchange writes them through its sse.Writer, with a write
// deadline, holding no lock. So closing a session, DELETE or
// Server.Close never waits on a client that does not read. The one
// exception to who writes is a request's handler asking the client a
// live question while nothing else writes to the exchange: it writes
// the question itself (writeDirect), with the same deadline and no
// lock, since it waits for the answer next anyway; that spares the
// hand-off to the exchange's goroutine on the question's way out.
type legacyStream struct {
	lh         *legacyHTTP
	hs         *httpSession // nil for a stateless request
	rev        *revision    // the revision of the stream's request(s); nil on the GET stream
	num        uint64
	ctx        context.Context
	jsonOnly   bool
	standalone bool
	req        *http.Request // the POST that carried the stream's request(s); nil on the GET stream

	mu        sync.Mutex
	conn      *sseConn // the exchange new messages go to, nil when none
	streaming bool     // an SSE stream, not a JSON body
	seq       uint64   // the last event's sequence number
	done      bool
}

func (st *legacyStream) exchange() (TransportKind, *http.Request) { return TransportHTTP, st.req }

// Kinds of queued frames.
const (
	frameStart = iota + 1 // the SSE response head
	frameEvent            // a message event: event, id, data
	framePrime            // an id and the retry interval, empty data (priming, or the end of a held stream)
	frameJSON             // the response as a single JSON body
)

type outFrame struct {
	kind uint8
	id   sse.EventID
	msg  []byte // the message of an event, the body of frameJSON
}

// sseConn is one HTTP exchange attached to a legacy stream: what waits to
// be written to it, and whether it must end. Its fields are guarded by
// the stream's mu; the exchange's own goroutine (hold) writes through
// wr, and so does a handler's writeDirect while hold does not (writing).
type sseConn struct {
	st   *legacyStream
	w    http.ResponseWriter
	wr   *sse.Writer
	wake chan struct{} // cap 1: frames queued, or the end

	queue  []outFrame
	qbytes int
	ending bool // write what is queued, then let the exchange go
	gone   bool // let the exchange go now; queued frames are dropped
	closed bool // the writer has left: w must not be touched

	// writing: someone writes to w (hold, or a handler in writeDirect);
	// direct: that someone is a handler; awaited: hold waits for it to
	// finish (a kick when it does); hush: kick does nothing (writeDirect
	// takes what it queues itself).
	writing, direct, awaited, hush bool
	run                            []sse.Entry // the writer's scratch space (under writing)
}

// attachLocked makes w the stream's exchange; nil when the session has
// ended.
func (st *legacyStream) attachLocked(w http.ResponseWriter) *sseConn {
	c := &sseConn{st: st, w: w, wr: sse.NewWriter(w, st.lh.writeTimeout), wake: make(chan struct{}, 1)}
	if st.hs != nil && !st.hs.addConn(c) {
		return nil
	}
	st.lh.s.exch.AddWriter(c.wr)
	st.conn = c
	return c
}

func (c *sseConn) kick() {
	if c.hush {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// queueLocked queues a frame for the writer. A frame is always taken by
// an empty queue (so a message of any size gets through); a client so far
// behind that the queue would pass MaxEventBytes loses the exchange.
func (c *sseConn) queueLocked(f outFrame) {
	if c.gone || c.ending {
		return
	}
	n := len(f.msg) + sse.EntryOverhead
	if len(c.queue) > 0 && c.qbytes+n > c.st.lh.opts.MaxEventBytes+64<<10 {
		c.st.lh.s.log.Warn("mcp: legacy stream dropped: the client does not read", "session", c.st.sessionID())
		c.abortLocked()
		return
	}
	c.queue = append(c.queue, f)
	c.qbytes += n
	c.kick()
}

// endLocked lets the exchange go once what is queued is written; later
// messages go to the log only.
func (c *sseConn) endLocked() {
	c.ending = true
	if c.st.conn == c {
		c.st.conn = nil
	}
	c.kick()
}

// abortLocked lets the exchange go now: a write blocked on a client that
// does not read returns at once (sse.Writer.Abort, which never waits on
// the write).
func (c *sseConn) abortLocked() {
	if c.st.conn == c {
		c.st.conn = nil
	}
	if c.gone || c.closed {
		c.gone = true
		return
	}
	c.gone = true
	clear(c.queue)
	c.queue, c.qbytes = nil, 0
	c.kick()
	c.wr.Abort()
}

func (st *legacyStream) sessionID() string {
	if st.hs == nil {
		return ""
	}
	return st.hs.id
}

// openGET answers a GET without Last-Event-ID: the session's stream for
// messages related to no request, one connection at a time, primed with
// its last event id.
func (lh *legacyHTTP) openGET(w http.ResponseWriter, hs *httpSession, done <-chan struct{}) {
	st := hs.standalone()
	if st == nil {
		lh.replicaEnded(w, jsonrpc.ID{})
		return
	}
	var seen uint64 // with a store, the last event another instance wrote on it
	if lh.s.fleet != nil {
		seen = lh.s.fleet.lastGETEvent(hs)
	}
	st.mu.Lock()
	if st.conn != nil {
		st.mu.Unlock()
		writeHTTPError(w, http.StatusConflict, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Conflict: the session's GET stream is already open"))
		return
	}
	c := st.attachLocked(w)
	if c == nil {
		st.mu.Unlock()
		lh.replicaEnded(w, jsonrpc.ID{})
		return
	}
	hs.openLog(st.num)
	st.seq = max(st.seq, seen)
	c.queueLocked(outFrame{kind: frameStart})
	c.queueLocked(outFrame{kind: framePrime, id: sse.EventID{Stream: st.num, Seq: st.seq}})
	st.mu.Unlock()
	if f := lh.s.fleet; f != nil {
		// This instance now holds the session's GET stream: the record
		// says so, and changes made elsewhere are announced here.
		if _, err := hs.storeUpdate(SessionUpdate{SetInstance: true, Instance: f.name}); err != nil {
			lh.s.log.Warn("mcp: session store update", "err", err, "session", hs.id)
		}
	}
	st.hold(c, done, lh.opts.StreamLifetime)
}

// resume answers a GET with Last-Event-ID: the events after it, then the
// rest of that stream live. An id the session cannot resume from (not
// one of its streams' ids, a stream it no longer keeps, or one whose
// events after the id are no longer all kept) gets 404: the client would
// otherwise miss events without being told.
func (lh *legacyHTTP) resume(w http.ResponseWriter, hs *httpSession, last string, done <-chan struct{}) {
	id, ok := sse.ParseEventID(last)
	var st *legacyStream
	if ok {
		if lh.s.fleet.resumesElsewhere(hs, id) {
			// Another instance's stream, or the GET stream held elsewhere:
			// from the store's log (session_fleet.go).
			lh.resumeFromStore(w, hs, id, last, done)
			return
		}
		hs.smu.Lock()
		st = hs.streams[id.Stream]
		hs.smu.Unlock()
	}
	if st == nil {
		unknownEventID(w, last, "Unknown or expired Last-Event-ID ")
		return
	}
	st.mu.Lock()
	if !st.streaming {
		// A plain JSON response has no events to resume.
		st.mu.Unlock()
		unknownEventID(w, last, "Unknown or expired Last-Event-ID ")
		return
	}
	if st.conn != nil {
		st.mu.Unlock()
		writeHTTPError(w, http.StatusConflict, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Conflict: that stream already has a connection"))
		return
	}
	entries, err := hs.since(id)
	if err != nil {
		st.mu.Unlock()
		switch {
		case errors.Is(err, errSessionEnded):
			lh.replicaEnded(w, jsonrpc.ID{})
		case errors.Is(err, sse.ErrTooOld):
			unknownEventID(w, last, "Expired Last-Event-ID (events after it are no longer kept, so the stream cannot be resumed) ")
		default:
			unknownEventID(w, last, "Unknown or expired Last-Event-ID ")
		}
		return
	}
	c := st.attachLocked(w)
	if c == nil {
		st.mu.Unlock()
		lh.replicaEnded(w, jsonrpc.ID{})
		return
	}
	c.queueLocked(outFrame{kind: frameStart})
	for _, e := range entries {
		c.queueLocked(outFrame{kind: frameEvent, id: e.ID, msg: e.Data})
	}
	if st.done {
		c.endLocked()
	}
	st.mu.Unlock()
	st.hold(c, done, lh.opts.StreamLifetime)
}

func unknownEventID(w http.ResponseWriter, last, why string) {
	writeHTTPError(w, http.StatusNotFound, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, why+strconv.Quote(last)))
}

// hold serves the exchange c until it is let go, the client leaves (done
// is closed) or the session ends: it writes what is queued, keep-alive comments, and on the
// GET stream the session's list changes. lifetime > 0 ends the exchange
// after that long with a priming event (the last event id and the retry
// interval), for the client to resume with Last-Event-ID.
func (st *legacyStream) hold(c *sseConn, done <-chan struct{}, lifetime time.Duration) {
	defer st.detach(c)
	if st.standalone {
		st.lh.s.observe(Event{Kind: EventStreamOpened, Stream: "get"})
		defer st.lh.s.observe(Event{Kind: EventStreamClosed, Stream: "get"})
	}
	var tick <-chan time.Time
	if ka := st.lh.keepAlive; ka > 0 {
		t := time.NewTicker(ka)
		defer t.Stop()
		tick = t.C
	}
	var expire <-chan time.Time
	if lifetime > 0 {
		t := time.NewTimer(lifetime)
		defer t.Stop()
		expire = t.C
	}
	var changes chan struct{}
	var from *listener
	var sessionDone, serverClosed <-chan struct{}
	if st.hs != nil {
		sessionDone = st.hs.ctx.Done()
		if st.standalone {
			from = st.hs.listener
			changes = from.ready
			serverClosed = st.lh.s.hub.closed
		}
	}
	var batch []outFrame
	for {
		st.mu.Lock()
		if c.writing {
			// A handler writes its question (writeDirect): it kicks
			// when it is done.
			c.awaited = true
			st.mu.Unlock()
			<-c.wake
			continue
		}
		batch, c.queue = c.queue, batch[:0]
		c.qbytes = 0
		gone, ending := c.gone, c.ending
		c.writing = len(batch) > 0 && !gone
		run := c.run
		st.mu.Unlock()
		if gone {
			return
		}
		if len(batch) > 0 {
			var ok bool
			run, ok = st.write(c, batch, run, ending)
			clear(batch)
			st.mu.Lock()
			c.writing = false
			c.run = run
			st.mu.Unlock()
			if !ok {
				return
			}
		}
		if ending {
			return
		}
		select {
		case <-c.wake:
		case <-done:
			return
		case <-sessionDone:
			return
		case <-serverClosed:
			// Drain or Close: the stream ends with its last event id and
			// the retry interval, for the client to reconnect (on another
			// instance of a fleet) with Last-Event-ID.
			serverClosed = nil
			st.mu.Lock()
			if !c.gone && !c.ending {
				c.queueLocked(outFrame{kind: framePrime, id: sse.EventID{Stream: st.num, Seq: st.seq}})
				c.endLocked()
			}
			st.mu.Unlock()
		case <-changes:
			from.sendPending(func(b []byte) { _ = st.emit(b, false) })
		case <-tick:
			st.mu.Lock()
			busy := c.writing // what is written now keeps it alive
			c.writing = !busy
			st.mu.Unlock()
			if busy {
				continue
			}
			err := error(nil)
			if c.wr.Started() {
				err = c.wr.KeepAlive()
			}
			st.mu.Lock()
			c.writing = false
			st.mu.Unlock()
			if err != nil {
				return
			}
		case <-expire:
			st.mu.Lock()
			if !c.gone && !c.ending {
				c.queueLocked(outFrame{kind: framePrime, id: sse.EventID{Stream: st.num, Seq: st.seq}})
				c.endLocked()
			}
			st.mu.Unlock()
		}
	}
}

// write writes a batch of frames to c with one flush (the head, the
// priming event and the first events of a stream leave together), or,
// when it is the last batch of the exchange, with none; false
// when the exchange broke (the client left, did not read within the
// write timeout, or the exchange was aborted). run is scratch space,
// returned for the next batch.
func (st *legacyStream) write(c *sseConn, batch []outFrame, run []sse.Entry, last bool) ([]sse.Entry, bool) {
	wr := c.wr
	flushed := wr.Batch
	if last {
		flushed = wr.BatchLast // the exchange ends next: net/http writes it with the body's end
	}
	err := flushed(func() error {
		for i := range batch {
			f := &batch[i]
			var err error
			switch f.kind {
			case frameEvent:
				run = append(run, sse.Entry{ID: f.id, Data: f.msg})
				if i+1 < len(batch) && batch[i+1].kind == frameEvent {
					continue
				}
				err = wr.WriteEntries("message", run...)
				clear(run)
				run = run[:0]
			case frameStart:
				if sid := st.sessionID(); sid != "" {
					if h := c.w.Header(); len(h[headerSessionID]) == 0 {
						h[headerSessionID] = []string{sid}
					}
				}
				err = wr.Start(nil)
			case frameJSON:
				// Written when the handler returns, within the deadline
				// armed here.
				if err = wr.Arm(); err == nil {
					writeJSONBody(c.w, f.msg)
				}
			case framePrime:
				if st.hs != nil {
					err = wr.WritePrime(f.id, st.lh.opts.RetryInterval)
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return run, err == nil
}

// detach ends the exchange c: nothing touches its ResponseWriter after.
// It runs on the exchange's goroutine before its handler returns, which
// is where the sse.Writer must be released.
func (st *legacyStream) detach(c *sseConn) {
	st.mu.Lock()
	if st.conn == c {
		st.conn = nil
	}
	c.gone = true // no handler starts writing to it now
	for c.writing {
		// A handler's write ends within its deadline (at once when the
		// client has left or the exchange was aborted).
		c.awaited = true
		st.mu.Unlock()
		<-c.wake
		st.mu.Lock()
	}
	c.closed = true
	c.queue = nil
	st.mu.Unlock()
	c.wr.Release()
	st.lh.s.exch.RemoveWriter(c.wr)
	if st.hs != nil {
		st.hs.removeConn(c)
	}
}

// emit sends one message of the stream: to the attached exchange, and
// into the replay log. The first message before the response turns the
// response into an SSE stream. final marks the response: the stream ends
// with it. msg is kept as is: callers hand over a fresh slice.
func (st *legacyStream) emit(msg []byte, final bool) error {
	return st.send(msg, final, false)
}

// send is emit; direct (a handler's live question, never the final
// message) writes the message to the exchange on the caller's goroutine
// when nothing else writes to it (writeDirect).
func (st *legacyStream) send(msg []byte, final, direct bool) error {
	st.mu.Lock()
	if st.done {
		st.mu.Unlock()
		return errRequestDone
	}
	c := st.conn
	if !st.streaming {
		if final {
			// A plain JSON response.
			if c != nil {
				c.queueLocked(outFrame{kind: frameJSON, msg: msg})
				c.endLocked()
			}
			st.done = true
			st.mu.Unlock()
			if st.hs != nil {
				st.hs.streamDone(st, false)
			}
			return nil
		}
		if st.jsonOnly || c == nil {
			st.mu.Unlock()
			return nil // nowhere to put it
		}
		direct = direct && !c.writing && !c.gone && !c.ending
		c.hush = direct
		st.startSSELocked(c)
	} else if c != nil {
		direct = direct && !c.writing && !c.gone && !c.ending
		c.hush = direct
	}
	st.seq++
	id := sse.EventID{Stream: st.num, Seq: st.seq}
	if st.hs != nil {
		st.hs.keep(id, msg)
		if st.lh.s.fleet != nil {
			st.hs.replicate(SessionEvent{Stream: id.Stream, Seq: id.Seq, Data: msg, End: final})
		}
	}
	if c != nil {
		c.queueLocked(outFrame{kind: frameEvent, id: id, msg: msg})
	}
	if final {
		st.done = true
		if c != nil {
			c.endLocked()
		}
	}
	if direct && c != nil {
		c.hush = false
		if !c.gone && !c.ending {
			st.writeDirect(c) // unlocks st.mu
			return nil
		}
		c.kick() // let go meanwhile (queueLocked): hold ends the exchange
	}
	st.mu.Unlock()
	if final && st.hs != nil {
		st.hs.streamDone(st, true)
	}
	return nil
}

// writeDirect writes what is queued on c on the caller's goroutine
// (under st.mu, which it releases; nothing else writes to c). A broken
// write lets the exchange go, as hold does.
func (st *legacyStream) writeDirect(c *sseConn) {
	batch := c.queue
	c.queue, c.qbytes = nil, 0
	c.writing, c.direct = true, true
	st.mu.Unlock()
	run, ok := st.write(c, batch, c.run, false)
	clear(batch)
	st.mu.Lock()
	c.writing, c.direct = false, false
	c.run = run
	if c.queue == nil && !c.gone {
		c.queue = batch[:0] // hold takes it for its next batch
	}
	if !ok {
		c.abortLocked()
	}
	if c.awaited || len(c.queue) > 0 {
		c.awaited = false
		c.kick()
	}
	st.mu.Unlock()
}

// answerable reports whether the answer of the stream's request(s) can
// still reach the client, once the exchange that carried them has
// ended: it was sent, or it goes on an SSE stream the client can resume
// with Last-Event-ID. (No exchange attaches to a stream that is still a
// JSON body: the answer of one whose exchange ended goes nowhere.)
func (st *legacyStream) answerable() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.done || st.streaming
}

// startSSELocked turns the response into an SSE stream, primed with the
// id before its first event.
func (st *legacyStream) startSSELocked(c *sseConn) {
	st.streaming = true
	if st.hs != nil {
		st.hs.openLog(st.num)
	}
	c.queueLocked(outFrame{kind: frameStart})
	c.queueLocked(outFrame{kind: framePrime, id: sse.EventID{Stream: st.num, Seq: st.seq}})
}

// finish sends the response of the request, unless it was cancelled (then
// nothing more is sent and the exchange is let go).
func (st *legacyStream) finish(c *call, res Result, f *failure) {
	if st.ctx.Err() != nil {
		st.abandon()
		return
	}
	b, _ := st.lh.s.encodeResult(nil, c, res, f)
	_ = st.emit(b, true)
}

// abandon ends the stream with nothing more sent (its requests were
// cancelled, or left nothing to answer) and lets its exchange go.
func (st *legacyStream) abandon() {
	st.mu.Lock()
	st.done = true
	if st.conn != nil {
		st.conn.endLocked()
	}
	streaming := st.streaming
	if streaming && st.hs != nil && st.lh.s.fleet != nil {
		// The stream's end, for a client following it elsewhere.
		st.hs.replicate(SessionEvent{Stream: st.num, Seq: st.seq + 1, End: true})
	}
	st.mu.Unlock()
	if st.hs != nil {
		st.hs.streamDone(st, streaming)
	}
}

// outbound and requestSender.

func (st *legacyStream) notify(method string, params any) error {
	if err := st.ctx.Err(); err != nil {
		return err
	}
	b, err := encodeNotification(nil, method, st.rev.notification(method, params))
	if err != nil {
		return err
	}
	return st.emit(b, false)
}

func (st *legacyStream) backChannel() (bool, string) {
	switch {
	case st.hs == nil:
		return false, "the request belongs to no session"
	case st.jsonOnly:
		return false, "this request is answered with a single JSON body (no SSE stream to carry requests)"
	}
	return true, ""
}

func (st *legacyStream) sendRequest(msg []byte, late bool) error {
	if late {
		return st.emit(msg, false)
	}
	if st.ctx.Err() != nil {
		return errRequestDone
	}
	// The handler asks and waits for the answer: it may write the
	// question itself.
	return st.send(msg, false, !st.standalone)
}

// closeSSE ends the HTTP exchange once what is queued is written, leaving
// the request running; its later messages wait in the log for a
// reconnection (CloseLegacySSEStream).
func (st *legacyStream) closeSSE() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.conn
	if st.hs == nil || st.jsonOnly || st.done || c == nil {
		return false
	}
	if !st.streaming {
		st.startSSELocked(c)
	}
	c.endLocked()
	return true
}
