package mcp

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/gopool"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/httpstream"
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
// lost the connection (or was disconnected on purpose, CloseLegacySSEStream)
// reconnects with GET and Last-Event-ID, receives what it missed and the
// rest of the stream on the new connection. As 2025-11-25 says, a
// disconnect does not cancel the request; notifications/cancelled and
// the end of the session do (and the disconnect of a response that is
// still a JSON body, which nothing can resume: see serveCall). The
// requests a session and a party have in flight are bounded
// (legacy_inflight.go). GET without Last-Event-ID opens the session's
// stream for notifications related to no request (list changes,
// subscribed resource updates, elicitation completion). DELETE ends the
// session; a session unused for LegacyHTTPOptions.IdleTimeout ends too,
// and requests naming an ended session get 404.
//
// This file routes (the options, classify, serve, GET and DELETE,
// initialize, a session's messages, running a request);
// legacy_sessions.go keeps the sessions (registry, quotas, idle lists,
// expiry, eviction, what one session holds); legacy_streams.go writes
// the streams (a request's response stream, the GET stream, resumption)
// over package sse, whose Writer frames events and bounds every write
// and whose ReplayLog is the session's log.

// LegacyHTTPOptions configure the 2025-11-25 sessions of a Streamable
// HTTP handler. The zero value is valid.
//
// Sessions are counted per party, so that one client cannot push out
// everyone else's: a party is the verified principal
// (RequestStateOptions.Principal, or the token WithTokenInfo put in the
// request's context) or, for an anonymous request, its remote IP address
// (an IPv6 address by its /64), or what QuotaKey returns.
type LegacyHTTPOptions struct {
	// IdleTimeout ends a session that has had no HTTP exchange open for
	// this long. Zero means 30 minutes.
	IdleTimeout time.Duration
	// MaxSessionsPerPrincipal bounds the sessions of one party. At the
	// bound, the party's new session ends that party's own session idle
	// the longest; if each of them has an HTTP exchange in progress,
	// initialize gets 503 with Retry-After. Zero means 100.
	MaxSessionsPerPrincipal int
	// MaxSessions bounds the sessions open at once, all parties together:
	// a last resort that never ends one party's session to make room for
	// another's. At the bound, a new session ends the caller's own
	// session idle the longest, or initialize gets 503 with Retry-After.
	// Zero means 10000.
	MaxSessions int
	// MaxRequestsPerSession bounds the requests of one session in flight
	// at once (each request of a 2025-03-26 batch counts): from its
	// arrival until its handler returns, which on a session may be long
	// after its POST ended. A request past the bound is not run: it is
	// answered with ErrTemporarilyUnavailable (HTTP 503 with Retry-After,
	// retryAfterMs in the error's data), for the client to send again
	// once one of its requests ended. Zero means 64, a full batch.
	MaxRequestsPerSession int
	// MaxRequestsPerPrincipal bounds the requests in flight of one party
	// (as for MaxSessionsPerPrincipal: the principal, else the client's
	// address, or QuotaKey), all its sessions together; past it a
	// request is answered as past MaxRequestsPerSession. Zero means 256.
	MaxRequestsPerPrincipal int
	// QuotaKey, when set, names the party a session counts against in
	// place of the default (an empty result falls back to it). Behind a
	// reverse proxy every anonymous client has the proxy's address and so
	// one quota: key on the client address the proxy reports, from a
	// header the proxy overwrites (never one a client can set itself).
	QuotaKey func(r *http.Request) string
	// StreamLifetime bounds how long the server holds one GET stream (the
	// session's stream, or a response stream resumed with Last-Event-ID):
	// then it ends the stream with an SSE event carrying the last event
	// id and the retry interval, and the client reconnects with
	// Last-Event-ID, missing nothing that was kept (MaxEventBytes). Zero
	// means 10 minutes.
	StreamLifetime time.Duration
	// MaxEventBytes bounds the SSE events one session keeps for replay
	// after a reconnection (Last-Event-ID), its data plus 64 bytes each,
	// all its streams together (the GET stream included). Zero means
	// 1 MiB. Past it the session's oldest events go first, whatever their
	// stream; a reconnection from an id whose later events are gone gets
	// 404 (the stream cannot be resumed without a gap). It also bounds
	// what waits to be written to one connection: a client that falls
	// that far behind loses the connection (and resumes with
	// Last-Event-ID).
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
	maxLoggedStreams    = 64 // streams a session's replay log remembers (finished, live and the GET stream)
	retryAfterBusy      = "60"
)

// legacyHeaderVersions are MCP-Protocol-Version values that mark a
// request without the modern _meta envelope as legacy traffic.
var legacyHeaderVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

type legacyHTTP struct {
	s            *Server
	opts         LegacyHTTPOptions
	keepAlive    time.Duration
	writeTimeout time.Duration

	// mu guards the registry: the sessions, the parties' quotas, and each
	// session's open count and place in its party's idle list.
	mu       sync.Mutex
	sessions map[string]*httpSession
	quotas   map[string]*quota

	// workers run the requests' handlers (serveCall) on goroutines
	// whose stacks the previous handlers grew.
	workers *gopool.Pool
}

// Handler goroutines kept idle for the next request: how many, how long.
const (
	maxIdleWorkers = 32
	workerKeep     = 100 * time.Millisecond
)

func newLegacyHTTP(s *Server, o LegacyHTTPOptions, keepAlive, writeTimeout time.Duration) *legacyHTTP {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	o.sessionDefaults("LegacyHTTPOptions")
	if o.StreamLifetime <= 0 {
		o.StreamLifetime = 10 * time.Minute
	}
	if o.RetryInterval == 0 {
		o.RetryInterval = time.Second
	}
	lh := &legacyHTTP{s: s, opts: o, keepAlive: keepAlive, writeTimeout: writeTimeout,
		sessions: make(map[string]*httpSession), quotas: make(map[string]*quota),
		workers: gopool.New(maxIdleWorkers, workerKeep, s.hub.closed)}
	s.legacy.addHandler(lh)
	return lh
}

// sessionDefaults applies the defaults of the session bounds both HTTP
// handlers count (MaxSessions, MaxSessionsPerPrincipal, the requests in
// flight, MaxEventBytes) and checks SessionIDPrefix, panicking with the
// option's name (field) when it is not visible ASCII within 64 bytes.
func (o *LegacyHTTPOptions) sessionDefaults(field string) {
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10000
	}
	if o.MaxSessionsPerPrincipal <= 0 {
		o.MaxSessionsPerPrincipal = 100
	}
	o.MaxRequestsPerSession, o.MaxRequestsPerPrincipal = requestBounds(*o)
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = 1 << 20
	}
	if len(o.SessionIDPrefix) > 64 || strings.IndexFunc(o.SessionIDPrefix, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		panic(fmt.Sprintf("mcp: %s.SessionIDPrefix %q: visible ASCII only, at most 64 bytes", field, o.SessionIDPrefix))
	}
}

// ---- entry points from the HTTP handler ----

// legacyHTTP is the endpoint's binding of the 2025-era sessions
// (httpBinding, http.go).
var _ httpBinding = (*legacyHTTP)(nil)

// claims is the era decision for a POST (the one place that asks): a
// message is 2025-11-25 traffic when it belongs to a session
// (Mcp-Session-Id), opens one (initialize), or names a legacy revision
// in MCP-Protocol-Version, unless it is a request carrying the
// 2026-07-28 _meta envelope, which is modern whatever else it carries.
// The modern hot path (no session, the modern or no version header, not
// initialize) is decided from the headers alone.
func (lh *legacyHTTP) claims(r *http.Request, msg jsonrpc.Message) bool {
	session := len(r.Header[headerSessionID]) > 0
	if !msg.IsRequest() {
		return session // a session's notification or answer
	}
	v := r.Header[canonicalProtocolVersion]
	if !session && msg.Method != methodInitialize && (len(v) == 0 || strings.TrimSpace(v[0]) == LatestProtocolVersion) {
		return false
	}
	if hasModernMeta(msg.Params) {
		return false
	}
	return session || msg.Method == methodInitialize || len(v) == 1 && slices.Contains(legacyHeaderVersions, strings.TrimSpace(v[0]))
}

// canonicalProtocolVersion is MCP-Protocol-Version as net/http keys it.
var canonicalProtocolVersion = http.CanonicalHeaderKey(HeaderProtocolVersion)

// serve answers a POST that claims called legacy traffic.
func (lh *legacyHTTP) serve(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) {
	sid, ok := sessionHeader(w, r, msg.ID)
	if !ok {
		return
	}
	if sid != "" {
		hs := lh.sessionFor(w, r, sid, msg.ID)
		if hs == nil {
			return
		}
		if msg.IsNotification() {
			lh.notification(w, hs, msg)
			return
		}
		lh.serveSession(w, r, hs, msg)
		return
	}
	switch {
	case msg.Method == methodInitialize:
		lh.initialize(w, r, msg)
	case lh.opts.Stateless:
		if !msg.IsRequest() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		version := strings.TrimSpace(r.Header.Get(HeaderProtocolVersion))
		lh.serveRequest(w, r, nil, &legacyScope{rev: negotiateRevision(version)}, msg)
	default:
		writeHTTPError(w, http.StatusBadRequest, msg.ID, jsonrpcError(CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required (send initialize first)"))
	}
}

// notification handles a notification POSTed to a session.
func (lh *legacyHTTP) notification(w http.ResponseWriter, hs *httpSession, msg jsonrpc.Message) {
	hs.touch()
	switch msg.Method {
	case notificationInitialized:
		hs.setInitialized()
	case notificationCancelled:
		if !hs.cancelled(msg.Params) && lh.s.fleet != nil {
			// The request may run on another instance of the fleet.
			lh.s.fleet.publish(fleetBroadcast, fleetCancel, hs.id, msg.Params)
		}
	}
	w.Header()[headerSessionID] = []string{hs.id}
	w.WriteHeader(http.StatusAccepted)
}

// serveOther answers a batch (legacy_batch.go), or a GET or DELETE
// naming a session. It reports whether it answered.
func (lh *legacyHTTP) serveOther(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if body != nil {
		return lh.batch(w, r, body)
	}
	return lh.other(w, r)
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
	hs := lh.sessionFor(w, r, sid, jsonrpc.ID{})
	if hs == nil {
		return true
	}
	if !hs.versionAgrees(w, r, jsonrpc.ID{}) {
		return true
	}
	if r.Method == http.MethodDelete {
		if f := lh.s.fleet; f != nil {
			ctx, cancel := f.ctx()
			existed, err := f.store.Delete(ctx, hs.id)
			cancel()
			if err != nil {
				storeUnavailable(w, jsonrpc.ID{})
				return true
			}
			if existed {
				hs.observeFleet(EventSessionClosed) // once in the fleet: here, where Delete removed it
			}
			lh.endEverywhere(hs.id)
		}
		lh.closeSession(hs)
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		writeHTTPError(w, http.StatusNotAcceptable, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Not Acceptable: the GET stream is text/event-stream"))
		return true
	}
	hs.enter()
	last := r.Header.Get(headerLastEventID)
	if hr := httpstream.Hijack(w, r, nil); hr != nil {
		// The stream goes on without net/http's goroutines (internal/httpstream).
		go func() {
			defer hs.leave()
			defer hr.End()
			lh.serveGET(hr, hs, last, hr.Gone())
		}()
		return true
	}
	defer hs.leave()
	lh.serveGET(w, hs, last, r.Context().Done())
	return true
}

// serveGET serves a session's GET stream until it ends or done is
// closed (the client left).
func (lh *legacyHTTP) serveGET(w http.ResponseWriter, hs *httpSession, last string, done <-chan struct{}) {
	if last != "" {
		lh.resume(w, hs, last, done)
		return
	}
	lh.openGET(w, hs, done)
}

// sessionFor returns the session id names for the caller of r, or
// answers w (404; with a store, 503 when the store fails) and returns nil.
func (lh *legacyHTTP) sessionFor(w http.ResponseWriter, r *http.Request, id string, msgID jsonrpc.ID) *httpSession {
	if lh.s.fleet != nil {
		return lh.fleetSession(w, r, id, msgID)
	}
	hs := lh.session(r, id)
	if hs == nil {
		sessionNotFound(w, msgID)
	}
	return hs
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

// versionAgrees reports whether the MCP-Protocol-Version of a request
// to the session, when it has one, is the session's; when not, it
// answers 400 (for id).
func (hs *httpSession) versionAgrees(w http.ResponseWriter, r *http.Request, id jsonrpc.ID) bool {
	v := strings.TrimSpace(r.Header.Get(HeaderProtocolVersion))
	if v == "" || v == hs.rev.version {
		return true
	}
	writeHTTPError(w, http.StatusBadRequest, id, jsonrpcError(CodeInvalidRequest, "Bad Request: "+HeaderProtocolVersion+" "+v+" is not the session's protocol version "+hs.rev.version))
	return false
}

// codeSessionNotFound is the JSON-RPC code of the answer to a request
// naming a session that ended, expired or never existed.
const codeSessionNotFound = -32001

// replicaEnded answers a request whose session ended here while it was
// being served: "not found" on a server of its own; with a store it may
// be only this instance's replica that went (drain, Close, an idle
// replica dropped) while the session goes on elsewhere, so the answer is
// 503 with Retry-After, which a balancer sends to another instance and
// a client retries (where a session that really ended is then 404).
func (lh *legacyHTTP) replicaEnded(w http.ResponseWriter, id jsonrpc.ID) {
	if lh.s.fleet != nil {
		storeUnavailable(w, id)
		return
	}
	sessionNotFound(w, id)
}

func sessionNotFound(w http.ResponseWriter, id jsonrpc.ID) {
	writeHTTPError(w, http.StatusNotFound, id, jsonrpcError(codeSessionNotFound, "Session not found (it ended, expired or never existed): send initialize for a new one"))
}

// initialize opens a session.
func (lh *legacyHTTP) initialize(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) {
	p, from, f, _ := httpInitialize(r, msg, TransportHTTP)
	if f != nil {
		writeHTTPError(w, f.status, msg.ID, f.err)
		return
	}
	if lh.opts.Stateless {
		ls := lh.s.newLegacySession("", p, sessionOrigin{})
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
	key := lh.quotaKey(r, principal)
	id := lh.opts.SessionIDPrefix + newSessionID()
	hs := lh.newHTTPSession(id, p, from, principal)
	if lh.s.fleet != nil {
		// The fleet's bounds are the store's (session_fleet.go).
		if err := lh.createInStore(hs, key); err != nil {
			hs.legacySession.close()
			lh.s.log.Warn("mcp: session store create", "err", err)
			w.Header().Set("Retry-After", retryAfterBusy)
			writeHTTPError(w, http.StatusServiceUnavailable, msg.ID, jsonrpcError(-32000, "Too many sessions: try again later"))
			return
		}
	}
	if res := lh.register(hs, key, lh.s.fleet == nil); res != registered {
		hs.legacySession.close()
		if f := lh.s.fleet; f != nil {
			// The record made above must not count against the party
			// until it expires.
			ctx, cancel := f.ctx()
			_, _ = f.store.Delete(ctx, id)
			cancel()
			lh.endEverywhere(id)
		}
		msg2 := "Too many sessions: try again later"
		if res == refusedParty {
			msg2 = "Too many sessions for this client, each with a request or stream in progress: end one (DELETE) or try again later"
		}
		w.Header().Set("Retry-After", retryAfterBusy)
		writeHTTPError(w, http.StatusServiceUnavailable, msg.ID, jsonrpcError(-32000, msg2))
		return
	}
	if lh.s.fleet != nil {
		hs.observeFleet(EventSessionOpened) // once in the fleet: here, where Create succeeded
	}
	hs.startTimer()
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
	if !hs.versionAgrees(w, r, msg.ID) {
		return
	}
	switch {
	case msg.IsResponse():
		if !hs.deliver(msg) && lh.s.fleet != nil {
			// A question another instance of the fleet asked.
			lh.s.fleet.forwardReply(hs.id, msg)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	case !msg.IsRequest():
		w.WriteHeader(http.StatusAccepted)
		return
	case msg.Method == methodInitialize:
		writeHTTPError(w, http.StatusBadRequest, msg.ID, jsonrpcError(CodeInvalidRequest, "Invalid request: the session is already initialized"))
		return
	}
	lh.serveRequest(w, r, hs, hs.scope(), msg)
}

// serveRequest prepares a request of the session hs (nil: a stateless
// request) in its era, scope, and runs it.
func (lh *legacyHTTP) serveRequest(w http.ResponseWriter, r *http.Request, hs *httpSession, scope *legacyScope, msg jsonrpc.Message) {
	c := &call{msg: msg, era: scope}
	if f := lh.s.prepare(c, r.Header); f != nil {
		writeHTTPError(w, f.status, msg.ID, f.err)
		return
	}
	lh.serveCall(w, r, hs, scope.rev, c)
}

// serveCall runs a legacy request. The handler runs in its own goroutine
// so that its response stream can outlive this HTTP exchange: the
// exchange ends when the response is written, when the handler closes
// the stream (CloseLegacySSEStream), or when the client goes away; the handler
// goes on in the last two cases when its response is an SSE stream, and
// its messages wait in the log for a reconnection. A response that is
// still a plain JSON body cannot be resumed: when its exchange ends
// first, nothing can receive the answer, and the request is cancelled.
func (lh *legacyHTTP) serveCall(w http.ResponseWriter, r *http.Request, hs *httpSession, rev *revision, c *call) {
	release := func() {}
	if hs != nil {
		// It is counted against the session's and the party's bounds
		// until its handler returns (legacy_inflight.go).
		if e := hs.admitRequest(); e != nil {
			writeTooMany(w, c.msg.ID, e)
			return
		}
		release = hs.releaseRequest
	}
	ps, ok := lh.openStream(w, r, hs, rev, c.msg.ID)
	if !ok {
		release()
		return
	}
	key := c.msg.ID.Raw()
	if hs != nil && !hs.addInflight(key, ps.cancel) {
		ps.end()
		release()
		hs.removeStream(ps.st)
		writeHTTPError(w, http.StatusOK, c.msg.ID, jsonrpcError(CodeInvalidRequest, "Invalid request: id is already in use by a request in flight"))
		return
	}
	ps.serve(w, r, c.msg.ID, func() {
		lh.workers.Go(func() {
			defer release()
			defer ps.end()
			res, f := lh.s.execute(ps.ctx, c, ps.st)
			if hs != nil {
				hs.removeInflight(key)
			}
			ps.st.finish(c, res, f)
		})
	}, func() {
		ps.end()
		release()
	})
}

// A postStream is the response stream of one POST's requests (a
// request, or the requests of a batch) and the context they run under.
type postStream struct {
	st     *legacyStream
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool // unties ctx from the session's end
}

// openStream makes the response stream of a POST's requests. A
// stateless request runs under the exchange's context. A session's
// request outlives its HTTP exchange (a disconnect is not a
// cancellation): it ends with the session or on notifications/cancelled,
// and keeps the request's values (the verified token, tracing) all the
// same; the stream is the session's until it is done. When the session
// has ended, openStream answers 404 (for the request id) and reports
// false.
func (lh *legacyHTTP) openStream(w http.ResponseWriter, r *http.Request, hs *httpSession, rev *revision, id jsonrpc.ID) (postStream, bool) {
	jsonOnly := lh.opts.JSONResponse || !strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	ps := postStream{st: &legacyStream{lh: lh, hs: hs, rev: rev, jsonOnly: jsonOnly, req: r}, stop: func() bool { return false }}
	if hs == nil {
		ps.ctx, ps.cancel = context.WithCancel(r.Context())
	} else {
		if !hs.addStream(ps.st) {
			lh.replicaEnded(w, id)
			return postStream{}, false
		}
		ps.ctx, ps.cancel = context.WithCancel(context.WithoutCancel(r.Context()))
		ps.stop = context.AfterFunc(hs.ctx, ps.cancel)
	}
	ps.st.ctx = ps.ctx
	return ps, true
}

// end cancels the stream's context.
func (ps postStream) end() {
	ps.stop()
	ps.cancel()
}

// serve attaches the stream to the exchange w, starts its requests
// (start) and holds the exchange while the stream lasts (serveCall says
// how long). When the session ended in between, abort undoes what the
// caller set up and the answer is 404 (for id).
func (ps postStream) serve(w http.ResponseWriter, r *http.Request, id jsonrpc.ID, start, abort func()) {
	st := ps.st
	st.mu.Lock()
	conn := st.attachLocked(w)
	st.mu.Unlock()
	if conn == nil {
		abort()
		st.lh.replicaEnded(w, id)
		return
	}
	start()
	st.hold(conn, r.Context().Done(), 0)
	if st.hs != nil && !st.answerable() {
		ps.cancel() // nothing can receive its answer any more
	}
}
