package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// The HTTP+SSE transport of protocol revision 2024-11-05, which
// Streamable HTTP replaced in 2025-03-26 and which many clients in the
// field still speak: a GET opens an event stream, whose first event
// (endpoint) names the URL the client POSTs its messages to; every
// message of the server (responses, server-to-client requests,
// notifications) is a message event on that stream, and each POST is
// answered 202 Accepted. The stream is the session: it opens with the
// GET and ends with it.
//
// This file routes (the options, GET, POST, running a request);
// sse_transport_session.go keeps the sessions (the registry, the
// parties' quotas, a session's queue of outgoing messages). The
// protocol itself is the legacy era's (legacy.go, legacy_era.go): a
// session is a legacySession, a request is served in its legacyScope,
// and the asking API's live requests go out on the stream.

// SSEOptions configure NewSSEHandler. The zero value is valid and safe
// for a server on loopback.
type SSEOptions struct {
	// HTTPOptions are the protections NewHTTPHandler applies, applied
	// the same way here: Host and Origin checks (AllowedHosts,
	// AllowedOrigins, DisableHostCheck: 403), the bound and read
	// deadline of a POST body (MaxBodyBytes: 413, BodyReadTimeout: 408),
	// the deadline of every write of the event stream
	// (StreamWriteTimeout) and its keep-alive comments (KeepAlive).
	//
	// Of its Legacy field, the session bounds apply, each counted on
	// this handler's own sessions: MaxSessionsPerPrincipal,
	// MaxSessions, MaxRequestsPerSession, MaxRequestsPerPrincipal,
	// QuotaKey and SessionIDPrefix as documented there, and
	// MaxEventBytes (1 MiB) as the bound of what waits to be written to
	// one stream (plus 64 KiB; a single message of any size always gets
	// through): a client that falls further behind loses its stream and
	// with it its session. At a party's bound a new stream ends that
	// party's session unused the longest among those with no request
	// in progress. The rest of LegacyHTTPOptions (IdleTimeout,
	// StreamLifetime, RetryInterval, JSONResponse, Stateless) concerns
	// Streamable HTTP sessions only: an HTTP+SSE session lasts as long
	// as its stream and cannot be resumed.
	HTTPOptions
	// MessageURL is the URL the endpoint event names, to which the
	// session parameter is appended (with "?", or "&" when MessageURL
	// has a query already): absolute (https://mcp.example.com/sse), or
	// a reference the client resolves against the URL of the stream
	// (/api/sse). Empty means the path the GET came in on, which is
	// right unless a proxy in front rewrites paths. It must hold no CR
	// or LF: NewSSEHandler panics otherwise.
	MessageURL string
}

// sseSessionParam is the query parameter of the message URL naming the
// session.
const sseSessionParam = "sessionId"

// NewSSEHandler returns the HTTP+SSE transport of protocol revision
// 2024-11-05 for s, as an http.Handler. It serves both of that
// transport's endpoints at the path it is mounted at, and is meant to
// be mounted beside the Streamable HTTP handler, at a path of its own:
//
//	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, nil)) // Streamable HTTP
//	mux.Handle("/sse", mcp.NewSSEHandler(srv, nil))  // HTTP+SSE (2024-11-05)
//
// A GET opens a session: the response is an event stream whose first
// event is "endpoint", its data the URL of the session's messages: the
// path of the GET (or SSEOptions.MessageURL) with the query parameter
// sessionId, such as "/sse?sessionId=4f0c...". The client POSTs each of
// its messages (one JSON-RPC request, notification or response per
// body) there and gets 202 Accepted with no body; the server's
// responses, its requests (sampling/createMessage, roots/list,
// elicitation/create when the negotiated revision has it) and its
// notifications are "message" events on the stream. The session speaks
// the revision initialize negotiates, as a Streamable HTTP session
// does, with the same handlers: the asking API sends live requests on
// the stream and blocks for the answer the client POSTs.
//
// What a client gets besides 202: 403 when the Host or Origin is not
// allowed; 404 for a sessionId that names no session of this caller
// (unknown, ended, or opened by another principal); 405 for a POST
// without sessionId (what a Streamable HTTP client trying this URL
// first sees, and takes as the cue to fall back) and for other
// methods; 413 and 408 for a body over the bound or too slow; 415 for a
// Content-Type other than JSON; 400 for a body that is not one JSON-RPC
// message, or headers (Mcp-Method, Mcp-Name) that disagree with it;
// 503 with Retry-After when the party's sessions are all busy, the
// server-wide bound is reached, or the server is closing, and for a
// request past the session's or the party's requests in flight
// (LegacyHTTPOptions.MaxRequestsPerSession, MaxRequestsPerPrincipal:
// ErrTemporarilyUnavailable in the body, nothing on the stream). Errors of a
// well-formed message (an unknown method, invalid params, a request
// before initialize) are JSON-RPC errors on the stream.
//
// The end of the stream ends the session, whoever ends it: the client
// going away, a write that does not complete within StreamWriteTimeout,
// eviction at the party's bound, or Server.Close. Its requests in
// flight are cancelled, its questions waiting for an answer fail, and
// its sessionId gets 404 from then on. MCP-Protocol-Version, which
// 2024-11-05 does not define, is ignored: the session knows its
// revision.
//
// With ServerOptions.DisableLegacy the server has no session era, and
// the handler answers every request with 404.
func NewSSEHandler(s *Server, opts *SSEOptions) http.Handler {
	var o SSEOptions
	if opts != nil {
		o = *opts
	}
	if strings.ContainsAny(o.MessageURL, "\r\n") {
		panic(fmt.Sprintf("mcp: SSEOptions.MessageURL %q holds a line break", o.MessageURL))
	}
	l := &o.Legacy
	l.sessionDefaults("SSEOptions.Legacy")
	h := newHTTPHandler(s, o.HTTPOptions)
	sh := &sseHandler{s: s, h: h, opts: o, maxQueue: l.MaxEventBytes + 64<<10,
		sessions: make(map[string]*sseSession), quotas: make(map[string]*sseQuota)}
	if s.fleet != nil {
		s.legacy.addSSEHandler(sh) // for what the fleet's bus brings (session_fleet.go)
	}
	return sh
}

var allowGetPost = []string{"GET, POST"}

func (sh *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !sh.h.opts.DisableHostCheck && !sh.h.hostAllowed(r) {
		writeHTTPError(w, http.StatusForbidden, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Forbidden: Host or Origin not allowed"))
		return
	}
	if !sh.s.legacyEnabled() {
		writeHTTPError(w, http.StatusNotFound, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest,
			"Not found: HTTP+SSE carries sessions of protocol revision 2024-11-05 and later 2025 revisions, and this server serves "+LatestProtocolVersion+" only"))
		return
	}
	r = withClientAddress(r, sh.h.opts.TrustedProxies)
	switch r.Method {
	case http.MethodGet:
		sh.open(w, r)
	case http.MethodPost:
		sh.post(w, r)
	default:
		w.Header()["Allow"] = allowGetPost
		writeHTTPError(w, http.StatusMethodNotAllowed, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest,
			"Method not allowed: the HTTP+SSE endpoint takes GET (the event stream) and POST (the session's messages)"))
	}
}

// ---- the event stream ----

// open answers a GET: a new session, its endpoint event, then its
// messages until the stream ends.
func (sh *sseHandler) open(w http.ResponseWriter, r *http.Request) {
	select {
	case <-sh.s.hub.closed:
		w.Header().Set("Retry-After", retryAfterBusy)
		writeHTTPError(w, http.StatusServiceUnavailable, jsonrpc.ID{}, jsonrpcError(-32000, "Service unavailable: the server is closing"))
		return
	default:
	}
	if a := r.Header.Get("Accept"); a != "" && !strings.Contains(a, "text/event-stream") && !strings.Contains(a, "*/*") {
		writeHTTPError(w, http.StatusNotAcceptable, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Not Acceptable: the HTTP+SSE endpoint answers GET with text/event-stream"))
		return
	}
	principal, err := sh.principal(r)
	if err != nil {
		sh.s.log.Error("mcp: HTTP+SSE session principal", "err", err)
		writeHTTPError(w, http.StatusInternalServerError, jsonrpc.ID{}, errInternal)
		return
	}
	ss := &sseSession{sh: sh, id: sh.opts.Legacy.SessionIDPrefix + newSessionID(), principal: principal,
		wr: sse.NewWriter(w, sh.h.opts.StreamWriteTimeout), wake: make(chan struct{}, 1), done: make(chan struct{})}
	key := sh.quotaKey(r, principal)
	if status, why := sh.admit(ss, key); status != 0 {
		w.Header().Set("Retry-After", retryAfterBusy)
		writeHTTPError(w, status, jsonrpc.ID{}, jsonrpcError(-32000, why))
		return
	}
	if sh.s.fleet != nil {
		// The fleet's record: this instance holds the stream, and a POST
		// to another one is forwarded here (session_fleet.go).
		if !sh.recordInStore(ss, key) {
			sh.remove(ss)
			w.Header().Set("Retry-After", retryAfterBusy)
			writeHTTPError(w, http.StatusServiceUnavailable, jsonrpc.ID{}, jsonrpcError(-32000, "Too many sessions: try again later"))
			return
		}
		defer sh.forgetInStore(ss)
	}
	sh.s.exch.AddWriter(ss.wr)
	defer func() {
		ss.end(false)
		sh.remove(ss)
		if ls := ss.ls.Load(); ls != nil {
			ls.close()
		}
		ss.wr.Release()
		sh.s.exch.RemoveWriter(ss.wr)
	}()
	if ss.wr.Start(nil) != nil {
		return
	}
	if ss.wr.WriteEvent(sse.Event{Name: "endpoint", Data: []byte(sh.endpoint(r, ss.id))}) != nil {
		return
	}
	sh.s.observe(Event{Kind: EventStreamOpened, Stream: string(TransportHTTPSSE)})
	defer sh.s.observe(Event{Kind: EventStreamClosed, Stream: string(TransportHTTPSSE)})
	ss.hold(r)
}

// endpoint is the message URL of session id, as the endpoint event names
// it.
func (sh *sseHandler) endpoint(r *http.Request, id string) string {
	base := sh.opts.MessageURL
	if base == "" {
		// The path as the client sent it (http.StripPrefix leaves
		// RequestURI alone), else the one routed here.
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.Path != "" {
			base = u.EscapedPath()
		} else {
			base = r.URL.EscapedPath()
		}
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + sseSessionParam + "=" + url.QueryEscape(id)
}

// hold writes the session's messages, keep-alive comments and, once the
// client sent notifications/initialized, its list changes and
// subscribed resource updates, until the stream ends: the client goes
// away, a write fails, the session is ended (eviction) or the server
// closes. It is the stream's only writer, and holds no lock while it
// writes.
func (ss *sseSession) hold(r *http.Request) {
	var tick <-chan time.Time
	if ka := ss.sh.h.opts.KeepAlive; ka > 0 {
		t := time.NewTicker(ka)
		defer t.Stop()
		tick = t.C
	}
	var batch [][]byte
	for {
		ss.mu.Lock()
		batch, ss.queue = ss.queue, batch[:0]
		ss.qbytes = 0
		closed := ss.closed
		ss.mu.Unlock()
		if closed {
			return
		}
		for i, b := range batch {
			if ss.wr.WriteEvent(sse.Event{Name: "message", Data: b}) != nil {
				return
			}
			batch[i] = nil
		}
		var changes chan struct{}
		var from *listener
		if ls := ss.ls.Load(); ls != nil && ls.isInitialized() {
			from = ls.listener
			changes = from.ready
		}
		select {
		case <-ss.wake:
		case <-r.Context().Done():
			return
		case <-ss.done:
			return
		case <-ss.sh.s.hub.closed:
			return
		case <-changes:
			from.sendPending(func(b []byte) { _ = ss.send(b) })
		case <-tick:
			if ss.wr.KeepAlive() != nil {
				return
			}
		}
	}
}

// ---- the session's messages ----

// post answers a POST of the session's messages.
func (sh *sseHandler) post(w http.ResponseWriter, r *http.Request) {
	sid := r.URL.Query().Get(sseSessionParam)
	if sid == "" {
		w.Header()["Allow"] = []string{"GET"}
		writeHTTPError(w, http.StatusMethodNotAllowed, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest,
			"Method not allowed: this is an HTTP+SSE endpoint (protocol revision 2024-11-05): GET it for the event stream, then POST messages to the URL its endpoint event names"))
		return
	}
	ss := sh.session(r, sid)
	if ss == nil {
		if sh.s.fleet == nil || !sh.forward(w, r, sid) {
			sseSessionNotFound(w, jsonrpc.ID{})
		}
		return
	}
	sh.postTo(w, r, ss)
}

// postTo handles a message POSTed to the session ss (here, or on another
// instance of the fleet, which forwarded it).
func (sh *sseHandler) postTo(w http.ResponseWriter, r *http.Request, ss *sseSession) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		writeHTTPError(w, http.StatusUnsupportedMediaType, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Invalid request: Content-Type must be application/json"))
		return
	}
	body, ok := sh.h.body(w, r)
	if !ok {
		return
	}
	sh.s.countDecode(false)
	msg, e := jsonrpc.Decode(body)
	if e != nil {
		writeHTTPError(w, http.StatusBadRequest, msg.ID, e)
		return
	}
	if !msg.IsResponse() && sh.h.rateLimited(w, r, msg.ID) {
		return
	}
	sh.touch(ss)
	ls := ss.ls.Load()
	switch {
	case msg.IsResponse():
		if ls != nil {
			ls.deliver(msg) // an answer to one of the session's live requests
		}
	case msg.IsNotification():
		switch {
		case ls == nil:
		case msg.Method == notificationInitialized:
			ls.setInitialized()
			ss.kick() // the stream now carries list changes
		case msg.Method == notificationCancelled:
			ss.cancelled(msg.Params)
		}
	case msg.Method == methodInitialize:
		p, from, f, hdr := httpInitialize(r, msg, TransportHTTPSSE)
		if hdr {
			writeHTTPError(w, f.status, msg.ID, f.err)
			return
		}
		if f != nil {
			_ = ss.send(appendFailure(nil, msg.ID, f))
			break
		}
		ss.initialize(msg.ID, p, from)
	case ls == nil:
		if msg.Method == methodPing {
			// A ping may come before initialize.
			_ = ss.send(jsonrpc.AppendResponse(nil, msg.ID, []byte(`{}`)))
			break
		}
		_ = ss.send(jsonrpc.AppendError(nil, msg.ID, jsonrpcError(CodeInvalidRequest, "Invalid request: the session is not initialized (send initialize first)")))
	default:
		if !sh.request(w, r, ss, ls, msg) {
			return
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

func sseSessionNotFound(w http.ResponseWriter, id jsonrpc.ID) {
	writeHTTPError(w, http.StatusNotFound, id, jsonrpcError(-32001, "Session not found (its event stream ended, or it never existed): open a new event stream with GET"))
}

// initialize opens the session's protocol session: the revision
// negotiateLegacy picks for the client's offer, its capabilities and
// identity. The answer goes on the stream.
func (ss *sseSession) initialize(id jsonrpc.ID, p *legacyInitParams, from sessionOrigin) {
	ss.initMu.Lock()
	defer ss.initMu.Unlock()
	if ss.ls.Load() != nil {
		_ = ss.send(jsonrpc.AppendError(nil, id, jsonrpcError(CodeInvalidRequest, "Invalid request: the session is already initialized")))
		return
	}
	ls := ss.sh.s.newLegacySession(ss.id, p, from)
	ls.unrelated = ss.sendUnrelated
	ss.ls.Store(ls)
	if ss.isClosed() {
		// The stream ended in between: nothing will close ls.
		ls.close()
		return
	}
	_ = ss.send(ss.sh.s.initializeResult(id, ls))
}

// request checks and starts a request of the session; false when it was
// answered with an HTTP error instead of 202.
func (sh *sseHandler) request(w http.ResponseWriter, r *http.Request, ss *sseSession, ls *legacySession, msg jsonrpc.Message) bool {
	c := &call{msg: msg, era: ls.scope()}
	if f := sh.s.prepare(c, r.Header); f != nil {
		if f.status != http.StatusOK {
			// As on Streamable HTTP: an intermediary routing on headers
			// sees what the server would execute, or the handler does not
			// run.
			writeHTTPError(w, f.status, msg.ID, f.err)
			return false
		}
		_ = ss.send(appendFailure(nil, msg.ID, f))
		return true
	}
	// The request outlives its POST (answered at once): it ends with the
	// session or on notifications/cancelled, and keeps the POST's values
	// (the verified token, tracing) all the same. So it is counted
	// against the session's and the party's bounds until it ends; past
	// them the POST is answered 503 and nothing runs.
	if e := sh.admitRequest(ss); e != nil {
		writeTooMany(w, msg.ID, e)
		return false
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	key := msg.ID.Raw()
	if !ss.addInflight(key, cancel) {
		cancel()
		sh.releaseRequest(ss)
		_ = ss.send(jsonrpc.AppendError(nil, msg.ID, jsonrpcError(CodeInvalidRequest, "Invalid request: id is already in use by a request in flight")))
		return true
	}
	stop := context.AfterFunc(ls.ctx, cancel)
	go func() {
		defer sh.releaseRequest(ss)
		defer cancel()
		defer stop()
		res, f := sh.s.execute(ctx, c, &sseOut{ss: ss, ctx: ctx, req: r, call: c})
		ss.removeInflight(key)
		if ctx.Err() != nil {
			return // cancelled: the client expects nothing more for this id
		}
		b, _ := sh.s.encodeResult(nil, c, res, f)
		_ = ss.send(b)
	}()
	return true
}

// sseOut is the outbound of a request of an HTTP+SSE session: its
// notifications and server-to-client requests go on the session's
// stream, queued for the stream's own writer.
type sseOut struct {
	ss   *sseSession
	ctx  context.Context
	req  *http.Request // the POST that carried the request
	call *call         // the request: its era encodes the notifications
}

func (o *sseOut) exchange() (TransportKind, *http.Request) { return TransportHTTPSSE, o.req }

func (o *sseOut) notify(method string, params any) error {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	b, err := o.call.era.appendNotification(nil, method, params)
	if err != nil {
		return err
	}
	return o.ss.send(b)
}

func (o *sseOut) backChannel() (bool, string) { return true, "" }

func (o *sseOut) sendRequest(msg []byte, late bool) error {
	if !late && o.ctx.Err() != nil {
		return errRequestDone
	}
	return o.ss.send(msg)
}

// sendUnrelated writes a notification related to no request
// (notifications/elicitation/complete) on the stream.
func (ss *sseSession) sendUnrelated(method string, params any) {
	if b, err := encodeNotification(nil, method, params); err == nil {
		_ = ss.send(b)
	}
}
