package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// 2025-11-25 over Streamable HTTP: sessions (Mcp-Session-Id), the GET
// stream, DELETE, and resumable SSE responses (Last-Event-ID).
//
// initialize without a session header opens a session; its id comes back
// in Mcp-Session-Id and every later message of the session carries it.
// A request's response is a JSON body until the handler sends something
// before its result (progress, a log message, a server-to-client request),
// which turns it into an SSE stream whose first event primes resumption
// (an id, the retry interval, no data). Every later event has an id
// "<stream>-<seq>" and is kept in a bounded per-session log: a client that
// lost the connection (or was disconnected on purpose, CloseSSEStream)
// reconnects with GET and Last-Event-ID, receives what it missed and the
// rest of the stream on the new connection. As 2025-11-25 says, a
// disconnect does not cancel the request; notifications/cancelled and
// the end of the session do. GET without Last-Event-ID opens the session's
// stream for notifications related to no request (list changes,
// subscribed resource updates, elicitation completion). DELETE ends the
// session; a session unused for LegacyHTTPOptions.IdleTimeout ends too,
// and requests naming an ended session get 404.

// LegacyHTTPOptions configure the 2025-11-25 sessions of a Streamable
// HTTP handler. The zero value is valid.
type LegacyHTTPOptions struct {
	// IdleTimeout ends a session that has had no HTTP exchange open for
	// this long. Zero means 30 minutes.
	IdleTimeout time.Duration
	// MaxSessions bounds the sessions open at once. At the bound, a new
	// session ends the one idle the longest (none with an HTTP exchange in
	// progress is ended; if all have one, initialize gets 503). Zero means
	// 10000.
	MaxSessions int
	// MaxEventBytes bounds the SSE events one session keeps for replay
	// after a reconnection (Last-Event-ID). Zero means 1 MiB; the oldest
	// finished streams are dropped first.
	MaxEventBytes int
	// RetryInterval is the SSE retry field of the priming event, the
	// client's reconnection delay. Zero means 1 s; negative sends none.
	RetryInterval time.Duration
	// JSONResponse answers every legacy request with a single JSON body,
	// never an SSE stream: notifications related to the request are
	// dropped and the asking API fails with -32600 (no back-channel).
	JSONResponse bool
	// Stateless serves 2025-11-25 without sessions: initialize returns no
	// Mcp-Session-Id and each request (recognised by its
	// MCP-Protocol-Version header) stands alone, with no back-channel.
	Stateless bool
	// SessionIDPrefix is put in front of every session id this handler
	// makes. A legacy session lives in the process that made it, so a
	// fleet behind a load balancer names each instance in its session ids
	// and routes on the Mcp-Session-Id header (examples/fleet does it with
	// an nginx map); 2026-07-28 traffic needs none of this. Visible ASCII
	// only (0x21-0x7E), at most 64 bytes: NewHTTPHandler panics otherwise.
	SessionIDPrefix string
}

const (
	headerSessionID   = "Mcp-Session-Id"
	headerLastEventID = "Last-Event-ID"

	maxCompletedStreams = 16 // finished SSE streams a session keeps for replay
	maxStandaloneEvents = 64 // events the GET stream keeps for replay
)

// legacyHeaderVersions are MCP-Protocol-Version values that mark a
// request without the modern _meta envelope as legacy traffic.
var legacyHeaderVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

type legacyHTTP struct {
	s         *Server
	opts      LegacyHTTPOptions
	keepAlive time.Duration

	mu       sync.Mutex
	sessions map[string]*httpSession
}

func newLegacyHTTP(s *Server, o LegacyHTTPOptions, keepAlive time.Duration) *legacyHTTP {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10000
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = 1 << 20
	}
	if o.RetryInterval == 0 {
		o.RetryInterval = time.Second
	}
	if len(o.SessionIDPrefix) > 64 || strings.IndexFunc(o.SessionIDPrefix, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		panic(fmt.Sprintf("mcp: LegacyHTTPOptions.SessionIDPrefix %q: visible ASCII only, at most 64 bytes", o.SessionIDPrefix))
	}
	lh := &legacyHTTP{s: s, opts: o, keepAlive: keepAlive, sessions: make(map[string]*httpSession)}
	s.legacy.addHandler(lh)
	return lh
}

// closeAll ends every session (Server.Close).
func (lh *legacyHTTP) closeAll() {
	lh.mu.Lock()
	all := make([]*httpSession, 0, len(lh.sessions))
	for _, hs := range lh.sessions {
		all = append(all, hs)
	}
	lh.mu.Unlock()
	for _, hs := range all {
		lh.closeSession(hs)
	}
}

// httpSession is a legacy session of an HTTP handler. Lock order: a
// stream's mu may be held while taking the session's smu, never the
// other way round.
type httpSession struct {
	*legacySession
	lh        *legacyHTTP
	principal string       // who opened the session (see legacyHTTP.session)
	last      atomic.Int64 // UnixNano of the last exchange
	open      atomic.Int32 // HTTP exchanges of the session in progress

	smu       sync.Mutex
	timer     *time.Timer
	streams   map[uint64]*legacyStream
	completed []uint64 // finished SSE streams kept for replay, oldest first
	next      uint64
	bytes     int // event bytes kept, all streams
	inflight  map[string]context.CancelFunc
	get       *legacyStream // stream 0: the GET stream
}

// sessionCount reports the sessions open (for tests and benchmarks).
func (lh *legacyHTTP) sessionCount() int {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	return len(lh.sessions)
}

func (lh *legacyHTTP) lookup(id string) *httpSession {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	return lh.sessions[id]
}

// session returns the session id names for the caller of r: a session is
// bound to the principal that opened it (the authenticated token, see
// WithTokenInfo, or RequestStateOptions.Principal), and another caller
// presenting its id is told it does not exist.
func (lh *legacyHTTP) session(r *http.Request, id string) *httpSession {
	hs := lh.lookup(id)
	if hs == nil {
		return nil
	}
	if p, err := lh.principal(r); err != nil || p != hs.principal {
		lh.s.log.Warn("mcp: legacy session presented by another principal", "session", id)
		return nil
	}
	return hs
}

func (lh *legacyHTTP) principal(r *http.Request) (string, error) {
	if f := lh.s.opts.RequestState.Principal; f != nil {
		return f(r.Context())
	}
	return defaultPrincipal(r.Context())
}

func (hs *httpSession) touch() { hs.last.Store(time.Now().UnixNano()) }

// enter and leave bracket an HTTP exchange of the session: a session with
// one in progress is never idle.
func (hs *httpSession) enter() { hs.open.Add(1); hs.touch() }
func (hs *httpSession) leave() { hs.touch(); hs.open.Add(-1) }

func (hs *httpSession) expireCheck() {
	if hs.ctx.Err() != nil {
		return
	}
	idle := hs.lh.opts.IdleTimeout
	since := time.Since(time.Unix(0, hs.last.Load()))
	if hs.open.Load() > 0 || since < idle {
		wait := idle - since
		if hs.open.Load() > 0 || wait <= 0 {
			wait = idle
		}
		hs.smu.Lock()
		if hs.timer != nil {
			hs.timer.Reset(wait)
		}
		hs.smu.Unlock()
		return
	}
	hs.lh.s.log.Info("mcp: legacy session expired", "session", hs.id, "idle", idle)
	hs.lh.closeSession(hs)
}

// longestIdle returns the session without an exchange in progress that
// was used the longest ago, or nil.
func (lh *legacyHTTP) longestIdle() *httpSession {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	var oldest *httpSession
	for _, hs := range lh.sessions {
		if hs.open.Load() == 0 && (oldest == nil || hs.last.Load() < oldest.last.Load()) {
			oldest = hs
		}
	}
	return oldest
}

// closeSession ends a session: it leaves the registry (its id now gets
// 404), its requests are cancelled and its connections released.
func (lh *legacyHTTP) closeSession(hs *httpSession) {
	lh.mu.Lock()
	if lh.sessions[hs.id] == hs {
		delete(lh.sessions, hs.id)
	}
	lh.mu.Unlock()
	hs.smu.Lock()
	if hs.timer != nil {
		hs.timer.Stop()
	}
	streams := make([]*legacyStream, 0, len(hs.streams))
	for _, st := range hs.streams {
		streams = append(streams, st)
	}
	hs.streams, hs.completed, hs.inflight, hs.get, hs.bytes = nil, nil, nil, nil, 0
	hs.smu.Unlock()
	hs.legacySession.close()
	for _, st := range streams {
		st.mu.Lock()
		st.releaseLocked()
		st.events = nil
		st.mu.Unlock()
	}
}

// ---- entry points from the HTTP handler ----

// post handles a POST the modern path rejected, when it is legacy
// traffic. It reports whether it answered.
func (lh *legacyHTTP) post(w http.ResponseWriter, r *http.Request, body []byte) bool {
	msg, e := jsonrpc.Decode(body)
	if e != nil || (msg.IsRequest() && hasModernMeta(msg.Params)) {
		return false
	}
	sid, ok := sessionHeader(w, r, msg.ID)
	if !ok {
		return true
	}
	if sid != "" {
		hs := lh.session(r, sid)
		if hs == nil {
			sessionNotFound(w, msg.ID)
			return true
		}
		lh.serveSession(w, r, hs, msg)
		return true
	}
	switch {
	case msg.IsRequest() && msg.Method == MethodInitialize:
		lh.initialize(w, r, msg)
		return true
	case !slices.Contains(legacyHeaderVersions, strings.TrimSpace(r.Header.Get(HeaderProtocolVersion))):
		return false
	case lh.opts.Stateless:
		if !msg.IsRequest() {
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		version := strings.TrimSpace(r.Header.Get(HeaderProtocolVersion))
		c, f := lh.s.decodeLegacy(msg, &legacyScope{version: negotiateLegacy(version)})
		if f != nil {
			writeHTTPError(w, http.StatusOK, msg.ID, f.err)
			return true
		}
		lh.serveCall(w, r, nil, c)
		return true
	}
	writeHTTPError(w, http.StatusBadRequest, msg.ID, jsonrpcError(CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required (send initialize first)"))
	return true
}

// notification handles a notification POSTed with a session header. It
// reports whether it answered.
func (lh *legacyHTTP) notification(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) bool {
	sid, ok := sessionHeader(w, r, msg.ID)
	if !ok {
		return true
	}
	if sid == "" {
		return false
	}
	hs := lh.session(r, sid)
	if hs == nil {
		sessionNotFound(w, msg.ID)
		return true
	}
	hs.touch()
	switch msg.Method {
	case NotificationInitialized:
		hs.setInitialized()
	case NotificationCancelled:
		hs.cancelled(msg.Params)
	}
	w.Header()[headerSessionID] = []string{hs.id}
	w.WriteHeader(http.StatusAccepted)
	return true
}

// other handles GET and DELETE. It reports whether it answered.
func (lh *legacyHTTP) other(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodDelete {
		return false
	}
	sid, ok := sessionHeader(w, r, jsonrpc.ID{})
	if !ok {
		return true
	}
	if sid == "" {
		return false // a modern client: 405
	}
	hs := lh.session(r, sid)
	if hs == nil {
		sessionNotFound(w, jsonrpc.ID{})
		return true
	}
	if v := strings.TrimSpace(r.Header.Get(HeaderProtocolVersion)); v != "" && v != hs.version {
		writeHTTPError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Bad Request: "+HeaderProtocolVersion+" "+v+" is not the session's protocol version "+hs.version))
		return true
	}
	if r.Method == http.MethodDelete {
		lh.closeSession(hs)
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		writeHTTPError(w, http.StatusNotAcceptable, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Not Acceptable: the GET stream is text/event-stream"))
		return true
	}
	hs.enter()
	defer hs.leave()
	if last := r.Header.Get(headerLastEventID); last != "" {
		lh.resume(w, r, hs, last)
		return true
	}
	st := hs.standalone()
	if st == nil {
		sessionNotFound(w, jsonrpc.ID{})
		return true
	}
	st.mu.Lock()
	if st.w != nil {
		st.mu.Unlock()
		writeHTTPError(w, http.StatusConflict, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Conflict: the session's GET stream is already open"))
		return true
	}
	rel := st.attachLocked(w)
	startSSEHeaders(w, hs.id)
	st.primeLocked()
	st.mu.Unlock()
	st.hold(w, r, rel)
	return true
}

// sessionHeader returns the session id header; more than one is answered
// with 400 (ok false).
func sessionHeader(w http.ResponseWriter, r *http.Request, id jsonrpc.ID) (string, bool) {
	vs := r.Header.Values(headerSessionID)
	switch len(vs) {
	case 0:
		return "", true
	case 1:
		return strings.TrimSpace(vs[0]), true
	}
	writeHTTPError(w, http.StatusBadRequest, id, jsonrpcError(CodeInvalidRequest, "Bad Request: "+headerSessionID+" appears more than once"))
	return "", false
}

func sessionNotFound(w http.ResponseWriter, id jsonrpc.ID) {
	writeHTTPError(w, http.StatusNotFound, id, jsonrpcError(-32001, "Session not found (it ended, expired or never existed): send initialize for a new one"))
}

// initialize opens a session.
func (lh *legacyHTTP) initialize(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) {
	p, f := decodeInitialize(msg.Params)
	if f != nil {
		writeHTTPError(w, f.status, msg.ID, f.err)
		return
	}
	if lh.opts.Stateless {
		ls := lh.s.newLegacySession("", p)
		b := lh.s.initializeResult(msg.ID, ls)
		ls.close()
		writeJSONBody(w, b)
		return
	}
	principal, err := lh.principal(r)
	if err != nil {
		lh.s.log.Error("mcp: legacy session principal", "err", err)
		writeHTTPError(w, http.StatusInternalServerError, msg.ID, errInternal)
		return
	}
	// At capacity, the session idle the longest makes room; when every
	// session has an exchange in progress, the new one is refused.
	for lh.sessionCount() >= lh.opts.MaxSessions {
		victim := lh.longestIdle()
		if victim == nil {
			w.Header().Set("Retry-After", "60")
			writeHTTPError(w, http.StatusServiceUnavailable, msg.ID, jsonrpcError(-32000, "Too many sessions: try again later"))
			return
		}
		lh.s.log.Info("mcp: legacy session evicted to make room", "session", victim.id)
		lh.closeSession(victim)
	}
	lh.mu.Lock()
	id := lh.opts.SessionIDPrefix + newSessionID()
	hs := &httpSession{legacySession: lh.s.newLegacySession(id, p), lh: lh, principal: principal, streams: make(map[uint64]*legacyStream)}
	hs.touch()
	hs.unrelated = hs.sendUnrelated
	lh.sessions[id] = hs
	lh.mu.Unlock()
	hs.smu.Lock()
	hs.timer = time.AfterFunc(lh.opts.IdleTimeout, hs.expireCheck)
	hs.smu.Unlock()
	w.Header()[headerSessionID] = []string{id}
	writeJSONBody(w, lh.s.initializeResult(msg.ID, hs.legacySession))
}

func writeJSONBody(w http.ResponseWriter, b []byte) {
	w.Header()["Content-Type"] = ctJSON
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// serveSession serves a message POSTed to a session.
func (lh *legacyHTTP) serveSession(w http.ResponseWriter, r *http.Request, hs *httpSession, msg jsonrpc.Message) {
	hs.enter()
	defer hs.leave()
	w.Header()[headerSessionID] = []string{hs.id}
	if v := strings.TrimSpace(r.Header.Get(HeaderProtocolVersion)); v != "" && v != hs.version {
		writeHTTPError(w, http.StatusBadRequest, msg.ID, jsonrpcError(CodeInvalidRequest, "Bad Request: "+HeaderProtocolVersion+" "+v+" is not the session's protocol version "+hs.version))
		return
	}
	switch {
	case msg.IsResponse():
		hs.deliver(msg)
		w.WriteHeader(http.StatusAccepted)
		return
	case !msg.IsRequest():
		w.WriteHeader(http.StatusAccepted)
		return
	case msg.Method == MethodInitialize:
		writeHTTPError(w, http.StatusBadRequest, msg.ID, jsonrpcError(CodeInvalidRequest, "Invalid request: the session is already initialized"))
		return
	}
	c, f := lh.s.decodeLegacy(msg, hs.scope())
	if f != nil {
		writeHTTPError(w, http.StatusOK, msg.ID, f.err)
		return
	}
	lh.serveCall(w, r, hs, c)
}

// serveCall runs a legacy request. The handler runs in its own goroutine
// so that its response stream can outlive this HTTP exchange: the
// exchange ends when the response is written, when the handler closes
// the stream (CloseSSEStream), or when the client goes away; the handler
// goes on in the last two cases and its messages wait in the log for a
// reconnection.
func (lh *legacyHTTP) serveCall(w http.ResponseWriter, r *http.Request, hs *httpSession, c *call) {
	jsonOnly := lh.opts.JSONResponse || !strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	st := &legacyStream{lh: lh, hs: hs, jsonOnly: jsonOnly}
	key := c.msg.ID.Raw()
	var ctx context.Context
	var cancel context.CancelFunc
	stop := func() bool { return false }
	if hs == nil {
		ctx, cancel = context.WithCancel(r.Context())
	} else {
		if !hs.addStream(st) {
			sessionNotFound(w, c.msg.ID)
			return
		}
		// A session's request outlives its HTTP exchange (a disconnect is
		// not a cancellation): it ends with the session or on
		// notifications/cancelled, and keeps the request's values (the
		// verified token, tracing) all the same.
		ctx, cancel = context.WithCancel(context.WithoutCancel(r.Context()))
		stop = context.AfterFunc(hs.ctx, cancel)
	}
	st.ctx = ctx
	if hs != nil && !hs.addInflight(key, cancel) {
		stop()
		cancel()
		hs.removeStream(st)
		writeHTTPError(w, http.StatusOK, c.msg.ID, jsonrpcError(CodeInvalidRequest, "Invalid request: id is already in use by a request in flight"))
		return
	}
	st.mu.Lock()
	rel := st.attachLocked(w)
	st.mu.Unlock()
	go func() {
		defer cancel()
		defer stop()
		res, f := lh.s.execute(ctx, c, st)
		if hs != nil {
			hs.removeInflight(key)
		}
		st.finish(c, res, f)
	}()
	st.hold(w, r, rel)
}

// resume answers a GET with Last-Event-ID: the events after it, then the
// rest of that stream live.
func (lh *legacyHTTP) resume(w http.ResponseWriter, r *http.Request, hs *httpSession, last string) {
	num, seq, ok := parseEventID(last)
	var st *legacyStream
	if ok {
		hs.smu.Lock()
		st = hs.streams[num]
		hs.smu.Unlock()
	}
	if st == nil {
		writeHTTPError(w, http.StatusNotFound, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Unknown or expired Last-Event-ID "+strconv.Quote(last)))
		return
	}
	st.mu.Lock()
	if !st.sse {
		// A plain JSON response has no events to resume.
		st.mu.Unlock()
		writeHTTPError(w, http.StatusNotFound, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Unknown or expired Last-Event-ID "+strconv.Quote(last)))
		return
	}
	if st.w != nil {
		st.mu.Unlock()
		writeHTTPError(w, http.StatusConflict, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Conflict: that stream already has a connection"))
		return
	}
	startSSEHeaders(w, hs.id)
	fl, _ := w.(http.Flusher)
	var err error
	for _, ev := range st.events {
		if ev.seq > seq && err == nil {
			err = writeSSEEvent(w, st.num, ev.seq, ev.data)
		}
	}
	if fl != nil {
		fl.Flush()
	}
	if st.done || err != nil {
		st.mu.Unlock()
		return
	}
	rel := st.attachLocked(w)
	st.mu.Unlock()
	st.hold(w, r, rel)
}

func parseEventID(s string) (num, seq uint64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	n, err1 := strconv.ParseUint(a, 10, 64)
	q, err2 := strconv.ParseUint(b, 10, 64)
	return n, q, err1 == nil && err2 == nil
}

// ---- the session's bookkeeping ----

func (hs *httpSession) addStream(st *legacyStream) bool {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.streams == nil {
		return false // closed
	}
	hs.next++
	st.num = hs.next
	hs.streams[st.num] = st
	return true
}

func (hs *httpSession) removeStream(st *legacyStream) {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.streams[st.num] == st {
		delete(hs.streams, st.num)
		hs.bytes -= st.size
	}
}

// standalone returns stream 0, the GET stream, made on first use (nil
// when the session is closed).
func (hs *httpSession) standalone() *legacyStream {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.streams == nil {
		return nil
	}
	if hs.get == nil {
		hs.get = &legacyStream{lh: hs.lh, hs: hs, standalone: true, sse: true, ctx: hs.ctx}
		hs.streams[0] = hs.get
	}
	return hs.get
}

// sendUnrelated writes a notification related to no request on the GET
// stream (kept for replay when no GET stream is open).
func (hs *httpSession) sendUnrelated(method string, params any) {
	b, err := encodeNotification(nil, method, params)
	if err != nil {
		return
	}
	if st := hs.standalone(); st != nil {
		_ = st.emit(b, false)
	}
}

func (hs *httpSession) addInflight(key string, cancel context.CancelFunc) bool {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.inflight == nil {
		hs.inflight = make(map[string]context.CancelFunc)
	}
	if _, dup := hs.inflight[key]; dup {
		return false
	}
	hs.inflight[key] = cancel
	return true
}

func (hs *httpSession) removeInflight(key string) {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	delete(hs.inflight, key)
}

// cancelled handles notifications/cancelled: the named request's context
// is cancelled and nothing more is sent for it.
func (hs *httpSession) cancelled(params []byte) {
	key := cancelledRequestKey(params)
	hs.smu.Lock()
	cancel := hs.inflight[key]
	hs.smu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// reserve accounts n more event bytes to st, dropping the oldest finished
// streams to make room. It reports whether the event may be kept.
func (hs *httpSession) reserve(st *legacyStream, n int) bool {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.streams == nil {
		return false
	}
	max := hs.lh.opts.MaxEventBytes
	for hs.bytes+n > max && len(hs.completed) > 0 {
		hs.dropOldestLocked()
	}
	if hs.bytes+n > max {
		return false
	}
	hs.bytes += n
	st.size += n
	return true
}

// unreserve gives back event bytes of st (the GET stream's oldest events).
func (hs *httpSession) unreserve(st *legacyStream, n int) {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.streams != nil && hs.streams[st.num] == st {
		hs.bytes -= n
		st.size -= n
	}
}

func (hs *httpSession) dropOldestLocked() {
	num := hs.completed[0]
	hs.completed = hs.completed[1:]
	if st := hs.streams[num]; st != nil {
		delete(hs.streams, num)
		hs.bytes -= st.size
	}
}

// streamDone files a finished stream: kept for replay when it was SSE,
// forgotten when it was a plain JSON response.
func (hs *httpSession) streamDone(st *legacyStream, sse bool) {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.streams == nil || hs.streams[st.num] != st {
		return
	}
	if !sse {
		delete(hs.streams, st.num)
		hs.bytes -= st.size
		return
	}
	hs.completed = append(hs.completed, st.num)
	for len(hs.completed) > maxCompletedStreams {
		hs.dropOldestLocked()
	}
}

// ---- one response stream ----

type legacyEvent struct {
	seq  uint64
	data []byte
}

// legacyStream is the response stream of one legacy request (or the
// session's GET stream, number 0). Its messages go to the connection
// attached to it, if any, and to the session's event log.
type legacyStream struct {
	lh         *legacyHTTP
	hs         *httpSession // nil for a stateless request
	num        uint64
	ctx        context.Context
	jsonOnly   bool
	standalone bool

	mu      sync.Mutex
	w       http.ResponseWriter // the connection attached, nil when none
	release chan struct{}       // closed to let the attached connection go
	sse     bool
	seq     uint64
	events  []legacyEvent
	done    bool
	size    int // event bytes accounted to the session (under hs.smu)
}

// attachLocked makes w the stream's connection; the returned channel is
// closed when w must be let go.
func (st *legacyStream) attachLocked(w http.ResponseWriter) chan struct{} {
	st.w = w
	st.release = make(chan struct{})
	return st.release
}

func (st *legacyStream) releaseLocked() {
	if st.release != nil {
		close(st.release)
		st.release = nil
	}
	st.w = nil
}

// hold keeps the HTTP exchange of w open until the stream lets it go,
// the client leaves or the session ends, with keep-alive comments; the
// GET stream also carries the session's list changes.
func (st *legacyStream) hold(w http.ResponseWriter, r *http.Request, rel chan struct{}) {
	defer func() {
		st.mu.Lock()
		if st.w == w {
			st.releaseLocked()
		}
		st.mu.Unlock()
	}()
	var tick <-chan time.Time
	if ka := st.lh.keepAlive; ka > 0 {
		t := time.NewTicker(ka)
		defer t.Stop()
		tick = t.C
	}
	var changes chan change
	var sessionDone, serverClosed <-chan struct{}
	if st.hs != nil {
		sessionDone = st.hs.ctx.Done()
		if st.standalone {
			changes = st.hs.listener.ch
			serverClosed = st.lh.s.hub.closed
		}
	}
	for {
		select {
		case <-rel:
			return
		case <-r.Context().Done():
			return
		case <-sessionDone:
			return
		case <-serverClosed:
			return
		case c := <-changes:
			m, p := changeNotification(c)
			if b, err := encodeNotification(nil, m, p); err == nil {
				_ = st.emit(b, false)
			}
		case <-tick:
			st.mu.Lock()
			if st.w == w && st.sse {
				if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
					st.releaseLocked()
				} else if fl, ok := w.(http.Flusher); ok {
					fl.Flush()
				}
			}
			st.mu.Unlock()
		}
	}
}

func startSSEHeaders(w http.ResponseWriter, sid string) {
	h := w.Header()
	h["Content-Type"] = ctSSE
	h["Cache-Control"] = noCache
	h["X-Accel-Buffering"] = noBuffering
	if sid != "" {
		h[headerSessionID] = []string{sid}
	}
	w.WriteHeader(http.StatusOK)
}

// primeLocked writes the priming event: the current event id and the
// retry interval, no data.
func (st *legacyStream) primeLocked() {
	if st.w == nil || st.hs == nil {
		return
	}
	b := make([]byte, 0, 64)
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, st.num, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, st.seq, 10)
	b = append(b, '\n')
	if ri := st.lh.opts.RetryInterval; ri > 0 {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, ri.Milliseconds(), 10)
		b = append(b, '\n')
	}
	b = append(b, "data: \n\n"...)
	if _, err := st.w.Write(b); err != nil {
		st.releaseLocked()
		return
	}
	if fl, ok := st.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func writeSSEEvent(w io.Writer, num, seq uint64, data []byte) error {
	b := make([]byte, 0, len(data)+48)
	b = append(b, "event: message\nid: "...)
	b = strconv.AppendUint(b, num, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	_, err := w.Write(b)
	return err
}

// emit sends one message of the stream: to the attached connection, and
// into the log for replay. The first message before the response turns
// the response into an SSE stream. final marks the response: the stream
// ends with it.
func (st *legacyStream) emit(msg []byte, final bool) error {
	st.mu.Lock()
	if st.done {
		st.mu.Unlock()
		return errRequestDone
	}
	if !st.sse {
		if final {
			// A plain JSON response.
			if st.w != nil {
				writeJSONBody(st.w, msg)
			}
			st.done = true
			st.releaseLocked()
			st.mu.Unlock()
			if st.hs != nil {
				st.hs.streamDone(st, false)
			}
			return nil
		}
		if st.jsonOnly || st.w == nil {
			st.mu.Unlock()
			return nil // nowhere to put it
		}
		st.startSSELocked()
	}
	st.seq++
	seq := st.seq
	if st.hs != nil {
		st.keepLocked(seq, msg)
	}
	if st.w != nil {
		if err := writeSSEEvent(st.w, st.num, seq, msg); err != nil {
			st.releaseLocked()
		} else if fl, ok := st.w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	if final {
		st.done = true
		st.releaseLocked()
	}
	st.mu.Unlock()
	if final && st.hs != nil {
		st.hs.streamDone(st, true)
	}
	return nil
}

func (st *legacyStream) startSSELocked() {
	sid := ""
	if st.hs != nil {
		sid = st.hs.id
	}
	startSSEHeaders(st.w, sid)
	st.sse = true
	st.primeLocked()
}

// keepLocked puts an event into the log, within the session's budget.
func (st *legacyStream) keepLocked(seq uint64, msg []byte) {
	n := len(msg) + 32
	if st.standalone && len(st.events) >= maxStandaloneEvents {
		old := st.events[0]
		st.events = st.events[1:]
		st.hs.unreserve(st, len(old.data)+32)
	}
	if st.hs.reserve(st, n) {
		st.events = append(st.events, legacyEvent{seq, append([]byte(nil), msg...)})
	}
}

// finish sends the response of the request, unless it was cancelled (then
// nothing more is sent and the connection is let go).
func (st *legacyStream) finish(c *call, res any, f *failure) {
	if st.ctx.Err() != nil {
		st.mu.Lock()
		st.done = true
		st.releaseLocked()
		sse := st.sse
		st.mu.Unlock()
		if st.hs != nil {
			st.hs.streamDone(st, sse)
		}
		return
	}
	s := st.lh.s
	var b []byte
	if f == nil {
		var err error
		if b, err = s.appendLegacyResult(nil, c.msg.ID, res); err != nil {
			s.log.Error("mcp: encoding result", "method", c.msg.Method, "err", err)
			f = &failure{err: errInternal}
		}
	}
	if f != nil {
		b = appendFailure(nil, c.msg.ID, f)
	}
	_ = st.emit(b, true)
}

// outbound and requestSender.

func (st *legacyStream) notify(method string, params any) error {
	if err := st.ctx.Err(); err != nil {
		return err
	}
	b, err := encodeNotification(nil, method, params)
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
	if !late && st.ctx.Err() != nil {
		return errRequestDone
	}
	return st.emit(msg, false)
}

// closeSSE ends the HTTP exchange now, leaving the request running; its
// later messages wait in the log for a reconnection (CloseSSEStream).
func (st *legacyStream) closeSSE() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.hs == nil || st.jsonOnly || st.done || st.w == nil {
		return false
	}
	if !st.sse {
		st.startSSELocked()
	}
	st.releaseLocked()
	return true
}
