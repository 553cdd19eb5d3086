package mcp

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// JSON-RPC batches. Protocol revision 2025-03-26 added them (an array of
// requests and notifications in one message, answered by an array of
// responses) and 2025-06-18 removed them; 2024-11-05 did not define them.
// So a batch is served on a session whose revision has them (its
// descriptor's batches, legacy_revisions.go) and refused with -32600
// everywhere else: a session of another revision, 2026-07-28, no session.
//
// The requests of a batch run concurrently, as separate requests do, and
// the answer is one array of their responses in the order of the batch
// (notifications and the client's responses get none; a cancelled request
// gets none, as a cancelled request alone does). Over HTTP a batch is one
// exchange: its requests share one response stream, which stays a JSON
// body (the array) until one of them sends something first (progress, a
// log message, a server-to-client request); then it is an SSE stream that
// carries their messages and ends with the array. A batch of
// notifications and responses only is answered with 202. On stdio the
// array is one line, written when the last request of the batch is done;
// what the requests send before is written as it comes, as for any
// request. initialize cannot be part of a batch (2025-03-26 says so), nor
// can a request carrying the 2026-07-28 _meta envelope.

// maxBatchMessages bounds the messages of one batch; its bytes are bounded
// as any message's (HTTPOptions.MaxBodyBytes, StreamOptions.MaxMessageBytes).
const maxBatchMessages = 64

// batchRefusal is the error for a batch on a revision without batches.
func batchRefusal(version string) *Error {
	return jsonrpcError(CodeInvalidRequest, "Invalid request: protocol revision "+version+" has no JSON-RPC batches (only "+
		since(func(r *revision) bool { return r.batches })+" has them): send each message on its own")
}

var (
	errBatchInitialize = jsonrpcError(CodeInvalidRequest, "Invalid request: initialize must not be part of a JSON-RPC batch")
	errBatchModern     = jsonrpcError(CodeInvalidRequest, "Invalid request: a "+LatestProtocolVersion+" request (one with the _meta envelope) cannot be part of a JSON-RPC batch")
	errBatchDuplicate  = jsonrpcError(CodeInvalidRequest, "Invalid request: id is already in use by a request in flight")
)

// batchRun collects the responses of one batch: a slot per message (nil
// for none) and how many requests are still running.
type batchRun struct {
	mu   sync.Mutex
	out  [][]byte
	left int
}

// done records the response of message i (nil: none) and reports whether
// it was the last request of the batch still running.
func (b *batchRun) done(i int, msg []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.out[i] = msg
	b.left--
	return b.left == 0
}

// body is the array of the batch's responses, nil when there are none
// (JSON-RPC sends no empty array).
func (b *batchRun) body() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	var dst []byte
	for _, m := range b.out {
		if m == nil {
			continue
		}
		if dst == nil {
			dst = append(dst, '[')
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, m...)
	}
	if dst == nil {
		return nil
	}
	return append(dst, ']')
}

// batchCalls sorts the messages of a batch served in scope: errors for
// the malformed ones and the requests that cannot be batched go into
// their slots, responses and notifications go to note, and the requests
// to run are returned with their slots.
func (s *Server) batchCalls(entries []jsonrpc.BatchEntry, scope func() *legacyScope, note func(jsonrpc.Message), h http.Header) (*batchRun, []*call, []int) {
	run := &batchRun{out: make([][]byte, len(entries))}
	var calls []*call
	var slots []int
	for i, en := range entries {
		m := en.Msg
		switch {
		case en.Err != nil:
			run.out[i] = jsonrpc.AppendError(nil, m.ID, en.Err)
		case !m.IsRequest():
			note(m)
		case m.Method == methodInitialize:
			run.out[i] = jsonrpc.AppendError(nil, m.ID, errBatchInitialize)
		case hasModernMeta(m.Params):
			run.out[i] = jsonrpc.AppendError(nil, m.ID, errBatchModern)
		default:
			c := &call{msg: m, era: scope()}
			if f := s.prepare(c, h); f != nil {
				run.out[i] = appendFailure(nil, m.ID, f)
				continue
			}
			calls = append(calls, c)
			slots = append(slots, i)
		}
	}
	return run, calls, slots
}

// ---- Streamable HTTP ----

// batch answers a POST whose body is a JSON array, unless it belongs
// to no session and names no legacy revision: that is left to the
// modern binding (false), which refuses it.
func (lh *legacyHTTP) batch(w http.ResponseWriter, r *http.Request, body []byte) bool {
	sid, ok := sessionHeader(w, r, jsonrpc.ID{})
	if !ok {
		return true
	}
	version := strings.TrimSpace(r.Header.Get(HeaderProtocolVersion))
	var hs *httpSession
	var rev *revision
	switch {
	case sid != "":
		if hs = lh.sessionFor(w, r, sid, jsonrpc.ID{}); hs == nil {
			return true
		}
		hs.enter()
		defer hs.leave()
		w.Header()[headerSessionID] = []string{hs.id}
		if !hs.versionAgrees(w, r, jsonrpc.ID{}) {
			return true
		}
		rev = hs.rev
	case slices.Contains(legacyHeaderVersions, version) && len(r.Header[canonicalProtocolVersion]) == 1:
		if !lh.opts.Stateless {
			writeHTTPError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required (send initialize first)"))
			return true
		}
		rev = negotiateRevision(version)
	default:
		return false // modernHTTP refuses it
	}
	if !rev.batches {
		writeHTTPError(w, http.StatusBadRequest, jsonrpc.ID{}, batchRefusal(rev.version))
		return true
	}
	entries, e := jsonrpc.DecodeBatch(body, maxBatchMessages)
	if e != nil {
		writeHTTPError(w, http.StatusBadRequest, jsonrpc.ID{}, e)
		return true
	}
	scope := func() *legacyScope { return &legacyScope{rev: rev} }
	note := func(jsonrpc.Message) {}
	if hs != nil {
		scope = hs.scope
		note = func(m jsonrpc.Message) {
			switch {
			case m.IsResponse():
				if !hs.deliver(m) && lh.s.fleet != nil {
					lh.s.fleet.forwardReply(hs.id, m)
				}
			case m.Method == notificationInitialized:
				hs.setInitialized()
			case m.Method == notificationCancelled:
				if !hs.cancelled(m.Params) && lh.s.fleet != nil {
					lh.s.fleet.publish(fleetBroadcast, fleetCancel, hs.id, m.Params)
				}
			}
		}
	}
	run, calls, slots := lh.s.batchCalls(entries, scope, note, r.Header)
	if len(calls) == 0 {
		if b := run.body(); b != nil {
			writeJSONBody(w, b)
		} else {
			w.WriteHeader(http.StatusAccepted)
		}
		return true
	}
	lh.serveBatch(w, r, hs, rev, run, calls, slots)
	return true
}

// serveBatch runs the requests of a batch on one response stream, as
// serveCall runs one request: each in its own goroutine, the stream
// outliving the exchange on a session.
func (lh *legacyHTTP) serveBatch(w http.ResponseWriter, r *http.Request, hs *httpSession, rev *revision, run *batchRun, calls []*call, slots []int) {
	ps, ok := lh.openStream(w, r, hs, rev, jsonrpc.ID{})
	if !ok {
		return
	}
	type member struct {
		c      *call
		slot   int
		ctx    context.Context
		cancel context.CancelFunc
	}
	members := make([]member, 0, len(calls))
	busy := false
	for i, c := range calls {
		// Each request counts against the session's and the party's
		// bounds (legacy_inflight.go); one past them is answered with
		// the retryable error in its slot and does not run.
		if hs != nil {
			if e := hs.admitRequest(); e != nil {
				run.out[slots[i]] = jsonrpc.AppendError(nil, c.msg.ID, e)
				busy = true
				continue
			}
		}
		mctx, mcancel := context.WithCancel(ps.ctx)
		if hs != nil && !hs.addInflight(c.msg.ID.Raw(), mcancel) {
			mcancel()
			hs.releaseRequest()
			run.out[slots[i]] = jsonrpc.AppendError(nil, c.msg.ID, errBatchDuplicate)
			continue
		}
		members = append(members, member{c, slots[i], mctx, mcancel})
	}
	if len(members) == 0 {
		// Every request was refused: the answer is their errors (503
		// with Retry-After when a bound refused some).
		ps.end()
		if hs != nil {
			hs.removeStream(ps.st)
		}
		if busy {
			w.Header().Set("Retry-After", retryAfterHeader(busyRetryDelay))
			w.Header()["Content-Type"] = ctJSON
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(run.body())
			return
		}
		writeJSONBody(w, run.body())
		return
	}
	ps.serve(w, r, jsonrpc.ID{}, func() {
		run.left = len(members)
		for _, m := range members {
			go func() {
				defer m.cancel()
				res, f := lh.s.execute(m.ctx, m.c, &batchOut{st: ps.st, ctx: m.ctx})
				if hs != nil {
					hs.removeInflight(m.c.msg.ID.Raw())
					hs.releaseRequest()
				}
				var msg []byte
				if m.ctx.Err() == nil {
					msg, _ = lh.s.encodeResult(nil, m.c, res, f)
				}
				if run.done(m.slot, msg) {
					ps.st.finishBatch(run)
					ps.end()
				}
			}()
		}
	}, func() {
		// The session ended in between.
		for _, m := range members {
			m.cancel()
			hs.removeInflight(m.c.msg.ID.Raw())
			hs.releaseRequest()
		}
		ps.end()
	})
}

// finishBatch ends the stream of a batch with the array of its
// responses, or with nothing when none is left to send.
func (st *legacyStream) finishBatch(run *batchRun) {
	if b := run.body(); b != nil && st.ctx.Err() == nil {
		_ = st.emit(b, true)
		return
	}
	st.abandon()
}

// batchOut is the outbound of one request of a batch: the batch's stream,
// under the request's own context (its cancellation stops what it sends,
// not the others').
type batchOut struct {
	st  *legacyStream
	ctx context.Context
}

func (o *batchOut) notify(method string, params any) error {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	b, err := encodeNotification(nil, method, o.st.rev.notification(method, params))
	if err != nil {
		return err
	}
	return o.st.emit(b, false)
}

func (o *batchOut) backChannel() (bool, string) { return o.st.backChannel() }

func (o *batchOut) sendRequest(msg []byte, late bool) error {
	if !late && o.ctx.Err() != nil {
		return errRequestDone
	}
	return o.st.emit(msg, false)
}

func (o *batchOut) closeSSE() bool { return o.st.closeSSE() }

// ---- stdio ----

// batch serves a line holding a JSON array.
func (c *streamConn) batch(ctx context.Context, line []byte) {
	ls := c.legacy.Load()
	switch {
	case ls == nil:
		c.writeMsg(jsonrpc.AppendError(nil, jsonrpc.ID{}, batchRefusal(LatestProtocolVersion)))
		return
	case !ls.rev.batches:
		c.writeMsg(jsonrpc.AppendError(nil, jsonrpc.ID{}, batchRefusal(ls.rev.version)))
		return
	}
	entries, e := jsonrpc.DecodeBatch(line, maxBatchMessages)
	if e != nil {
		c.writeMsg(jsonrpc.AppendError(nil, jsonrpc.ID{}, e))
		return
	}
	note := func(m jsonrpc.Message) {
		switch {
		case m.IsResponse():
			ls.deliver(m)
		case m.Method == notificationCancelled:
			c.cancelled(m.Params)
		default:
			c.legacyNotification(m)
		}
	}
	run, calls, slots := c.s.batchCalls(entries, ls.scope, note, nil)
	type member struct {
		c      *call
		slot   int
		ctx    context.Context
		cancel context.CancelFunc
	}
	members := make([]member, 0, len(calls))
	c.mu.Lock()
	for i, call := range calls {
		key := call.msg.ID.Raw()
		if _, dup := c.inflight[key]; dup {
			run.out[slots[i]] = jsonrpc.AppendError(nil, call.msg.ID, errBatchDuplicate)
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		c.inflight[key] = &inflight{cancel: cancel}
		c.wg.Add(1)
		members = append(members, member{call, slots[i], rctx, cancel})
	}
	run.left = len(members)
	c.mu.Unlock()
	if len(members) == 0 {
		if b := run.body(); b != nil {
			c.writeMsg(b)
		}
		return
	}
	for _, m := range members {
		c.spawn(func() {
			defer c.wg.Done()
			defer m.cancel()
			res, f := c.s.execute(m.ctx, m.c, &streamOut{c: c, ctx: m.ctx, call: m.c})
			c.mu.Lock()
			delete(c.inflight, m.c.msg.ID.Raw())
			c.mu.Unlock()
			var msg []byte
			if m.ctx.Err() == nil {
				msg, _ = c.s.encodeResult(nil, m.c, res, f)
			}
			if run.done(m.slot, msg) {
				if b := run.body(); b != nil {
					c.writeMsg(b)
				}
			}
		})
	}
}
