package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"weak"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The legacy era: protocol revisions 2025-11-25, 2025-06-18, 2025-03-26
// and 2024-11-05 on the same server and the same handlers
// (docs/design/legacy.md). What the revisions have and lack is data, one
// descriptor per revision (legacy_revisions.go).
//
// The era is decided per request. A request whose params carry the
// 2026-07-28 _meta envelope (a protocolVersion member) is modern, always.
// Otherwise an initialize request opens a legacy session, and a request
// that belongs to one (the stdio connection after initialize, or an HTTP
// request with an Mcp-Session-Id) is served as its revision prescribes:
// capabilities from initialize, no per-request _meta requirement, results
// without resultType, ping, logging/setLevel, resources/subscribe, and live
// server-to-client requests. The modern path is not touched: it is tried
// first, and only a request it rejects is looked at again as legacy.
//
// A legacy request is decoded into the same params types as a modern one,
// with its RequestMeta filled from the session (protocol version, client
// capabilities and info, the level set with logging/setLevel), so that
// handlers, middleware, ReportProgress and Log work unchanged. The asking
// API finds a legacy asker in the handler's context: each question is sent
// as a live request related to the originating call and the handler blocks
// until the answer comes.

// Per-session bounds: what one legacy session may hold, whatever its
// client does.
const (
	maxLegacySubscriptions   = 1024
	maxLegacySubscriptionURI = 2048
	maxLegacyElicitations    = 64
)

// pingRequest holds the params of ping (2025-11-25 only).
type pingRequest struct {
	Meta RequestMeta `json:"_meta"`
}

// SetLevelRequest holds the params of logging/setLevel (2025-11-25 only).
type SetLevelRequest struct {
	Meta  RequestMeta  `json:"_meta"`
	Level LoggingLevel `json:"level"`
}

// SubscribeRequest holds the params of resources/subscribe and
// resources/unsubscribe (2025-11-25 only).
type SubscribeRequest struct {
	Meta RequestMeta `json:"_meta"`
	URI  string      `json:"uri"`
}

func (p *pingRequest) RequestMeta() *RequestMeta      { return &p.Meta }
func (p *SetLevelRequest) RequestMeta() *RequestMeta  { return &p.Meta }
func (p *SubscribeRequest) RequestMeta() *RequestMeta { return &p.Meta }

// ClientRequestError reports that the client of a legacy session answered
// a server-to-client request (elicitation/create, sampling/createMessage,
// roots/list) with a JSON-RPC error, or gave no answer within
// ServerOptions.LegacyQuestionTimeout (Code -32001; errors.Is matches
// context.DeadlineExceeded). A tool handler that returns it produces an
// isError result.
type ClientRequestError struct {
	Method  string
	Code    int
	Message string
	// Question is the request's text (an elicitation's message, the last
	// text of a sampling request) when the asking API sent it, folded to
	// one line and cut to 80 runes; "" otherwise.
	Question string

	timeout bool // no answer within ServerOptions.LegacyQuestionTimeout
}

// Unwrap returns context.DeadlineExceeded when the client did not answer
// within ServerOptions.LegacyQuestionTimeout, nil when it answered with
// an error.
func (e *ClientRequestError) Unwrap() error {
	if e.timeout {
		return context.DeadlineExceeded
	}
	return nil
}

// Error names the question by its text where there is one:
// `The client could not answer question "Which region?"
// (elicitation/create): no terminal (code -1)`.
func (e *ClientRequestError) Error() string {
	what := e.Method
	if e.Question != "" {
		what = questionLabel(e.Method, e.Question, "") + " (" + e.Method + ")"
	}
	return "The client could not answer " + what + ": " + e.Message + " (code " + strconv.Itoa(e.Code) + ")"
}

// errLegacySessionEnded is what a question waiting for its answer gets
// when its session ends (DELETE, expiry, end of the stream).
var errLegacySessionEnded = errors.New("mcp: the session ended before the client answered")

// legacyReply is the client's answer to a server-to-client request.
type legacyReply struct {
	result json.RawMessage
	err    *Error
}

// legacySession is one 2025-11-25 session: a stdio connection after
// initialize, or one Mcp-Session-Id of an HTTP handler.
type legacySession struct {
	s      *Server
	id     string    // Mcp-Session-Id; empty on a stream
	rev    *revision // the negotiated revision (legacy_revisions.go)
	client Implementation
	caps   ClientCapabilities
	opened time.Time
	// quiet: a replica of a fleet's session (session_fleet.go), whose
	// opening and end are observed once for the fleet, not here.
	quiet bool

	// ctx ends with the session: questions waiting for answers give up
	// and (on HTTP) requests in flight are cancelled.
	ctx    context.Context
	cancel context.CancelFunc

	listener *listener // list changes and subscribed resource updates

	mu          sync.Mutex
	closed      bool
	initialized bool
	level       LoggingLevel
	subs        map[string]struct{}
	pending     map[int64]chan legacyReply
	nextID      int64
	elicits     []string // URL elicitation ids asked on this session, newest last
	// unrelated delivers a notification related to no request.
	unrelated func(method string, params any)
	// update, on a session kept in a SessionStore, records a change of
	// the session's state there (session_fleet.go); nil otherwise.
	update func(SessionUpdate) (*SessionRecord, error)
}

// sessionOrigin is the initialize request that opened a legacy session:
// what its notifications are filtered as (ServerOptions.Visible). ctx is
// nil for a stateless request, whose session never hears of a change.
type sessionOrigin struct {
	ctx       context.Context
	transport TransportKind // TransportHTTP, TransportHTTPSSE or TransportStream
	req       *http.Request // the POST that carried initialize; nil on a byte stream
	id        jsonrpc.ID
}

// exchange and notify make the origin the outbound of the listener's
// context, so that RequestInfoFrom and RequestHeader in a Visible hook
// see the initialize request; nothing can be sent on it.
func (o *sessionOrigin) exchange() (TransportKind, *http.Request) { return o.transport, o.req }
func (o *sessionOrigin) notify(string, any) error                 { return errRequestDone }

func (s *Server) newLegacySession(id string, p *legacyInitParams, from sessionOrigin) *legacySession {
	ls := &legacySession{
		s: s, id: id, rev: negotiateRevision(p.ProtocolVersion), client: p.ClientInfo, caps: p.Capabilities,
		pending: make(map[int64]chan legacyReply),
	}
	ls.ctx, ls.cancel = context.WithCancel(context.Background())
	l := &listener{filter: SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}}
	if s.opts.Visible != nil && from.ctx != nil {
		// The session is told of a change only when a feature it names
		// is visible to the request that opened the session, as its
		// lists are to each of its requests (visible.go): the context
		// is the initialize request's, its values kept past its end.
		meta := new(RequestMeta)
		ls.fillMeta(meta)
		l.ctx = &requestScope{Context: context.WithoutCancel(from.ctx), s: s, id: from.id, method: methodInitialize, meta: meta, out: &from, era: ls.scope()}
	}
	ls.listener = s.hub.addListener(l)
	ls.opened = time.Now()
	if ls.quiet = s.fleet != nil && from.transport == TransportHTTP; !ls.quiet {
		s.observe(Event{Kind: EventSessionOpened, Revision: ls.rev.version, SessionID: id})
	}
	return ls
}

// scope returns the legacy scope of a request of this session.
func (ls *legacySession) scope() *legacyScope {
	return &legacyScope{sess: ls, rev: ls.rev}
}

// close ends the session: questions waiting for an answer fail, the
// session's context (and with it, on HTTP, every request in flight) is
// cancelled, and it stops receiving notifications.
func (ls *legacySession) close() {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return
	}
	ls.closed = true
	elicits, quiet := ls.elicits, ls.quiet
	ls.elicits, ls.pending, ls.subs = nil, nil, nil
	ls.mu.Unlock()
	ls.cancel()
	ls.s.hub.remove(ls.listener)
	ls.s.legacy.forget(ls, elicits)
	if quiet {
		return
	}
	ls.s.observe(Event{Kind: EventSessionClosed, Revision: ls.rev.version, SessionID: ls.id, Duration: time.Since(ls.opened)})
}

func (ls *legacySession) setInitialized() {
	ls.mu.Lock()
	was := ls.initialized
	ls.initialized = true
	ls.mu.Unlock()
	if ls.update != nil && !was {
		if _, err := ls.update(SessionUpdate{Initialized: true}); err != nil {
			ls.s.log.Warn("mcp: session store update", "err", err, "session", ls.id)
		}
	}
}

// setLevel sets the session's log level (logging/setLevel).
func (ls *legacySession) setLevel(level LoggingLevel) *Error {
	ls.mu.Lock()
	ls.level = level
	ls.mu.Unlock()
	if ls.update != nil {
		if _, err := ls.update(SessionUpdate{LogLevel: level}); err != nil {
			return storeError(err)
		}
	}
	return nil
}

// storeError is the answer to a request whose change the session store
// did not take.
func storeError(err error) *Error {
	if errors.Is(err, ErrSessionNotFound) {
		return jsonrpcError(codeSessionNotFound, "Session not found (it ended): send initialize for a new one")
	}
	return ErrTemporarilyUnavailable
}

func (ls *legacySession) isInitialized() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.initialized
}

// fillMeta fills the RequestMeta of a legacy request from the session.
func (ls *legacySession) fillMeta(m *RequestMeta) {
	ls.mu.Lock()
	m.LogLevel = ls.level
	ls.mu.Unlock()
	m.ProtocolVersion = ls.rev.version
	caps := ls.caps
	m.ClientCapabilities = caps
	info := ls.client
	m.ClientInfo = &info
}

// subscribe adds or removes a resource subscription. On an ended
// session it changes nothing and fails as a request naming an ended
// session does (the "Session not found" code), never as a success.
func (ls *legacySession) subscribe(uri string, on bool) *Error {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return jsonrpcError(codeSessionNotFound, "Session not found (it ended): send initialize for a new one")
	}
	if on {
		if _, ok := ls.subs[uri]; !ok && len(ls.subs) >= maxLegacySubscriptions {
			ls.mu.Unlock()
			return jsonrpcError(CodeInvalidParams, "Invalid params: too many resource subscriptions on this session (at most "+strconv.Itoa(maxLegacySubscriptions)+")")
		}
		if ls.subs == nil {
			ls.subs = make(map[string]struct{})
		}
		ls.subs[uri] = struct{}{}
	} else {
		delete(ls.subs, uri)
	}
	if ls.update != nil {
		ls.mu.Unlock()
		u := SessionUpdate{Unsubscribe: uri}
		if on {
			u = SessionUpdate{Subscribe: uri, MaxSubscriptions: maxLegacySubscriptions}
		}
		rec, err := ls.update(u) // the replica takes the record as the store returns it
		if err != nil {
			return storeError(err)
		}
		if on && !slices.Contains(rec.Subscriptions, uri) {
			return jsonrpcError(CodeInvalidParams, "Invalid params: too many resource subscriptions on this session (at most "+strconv.Itoa(maxLegacySubscriptions)+")")
		}
		return nil
	}
	uris := make([]string, 0, len(ls.subs))
	for u := range ls.subs {
		uris = append(uris, u)
	}
	ls.mu.Unlock()
	slices.Sort(uris)
	// The listener's filter is read by the hub under its lock.
	ls.s.hub.mu.Lock()
	ls.listener.filter.ResourceSubscriptions = uris
	ls.s.hub.mu.Unlock()
	return nil
}

// deliver routes a client's response to the question waiting for it.
// Responses to unknown or abandoned requests are dropped; it reports
// whether a question was waiting.
func (ls *legacySession) deliver(msg jsonrpc.Message) bool {
	id, ok := msg.ID.Int()
	if !ok {
		return false
	}
	ls.mu.Lock()
	ch := ls.pending[id]
	delete(ls.pending, id)
	ls.mu.Unlock()
	if ch == nil {
		return false
	}
	var r legacyReply
	if msg.Error != nil {
		e := new(Error)
		if json.Unmarshal(msg.Error, e) != nil {
			e = jsonrpcError(CodeInternalError, "malformed error response")
		}
		r.err = e
	} else {
		r.result = append(json.RawMessage(nil), msg.Result...)
	}
	ch <- r
	return true
}

// requestSender is implemented by the outbound of a legacy request that
// can carry server-to-client requests related to it.
type requestSender interface {
	// backChannel reports whether requests can be sent, and why not.
	backChannel() (ok bool, why string)
	// sendRequest writes one encoded message related to the request: a
	// server-to-client request, or (late, when the request was cancelled)
	// the notification that cancels one.
	sendRequest(msg []byte, late bool) error
}

// call sends a request to the client on rs and waits for the answer, the
// end of ctx, or the end of the session.
func (ls *legacySession) call(ctx context.Context, rs requestSender, method string, params []byte) (json.RawMessage, error) {
	mw := ls.s.opts.OutgoingMiddleware
	if len(mw) == 0 {
		return ls.send(ctx, rs, method, params)
	}
	h := ServerRequestHandler(func(ctx context.Context, r *ServerRequest) (json.RawMessage, error) {
		p, err := paramsWithMeta(r.Params, r.Meta)
		if err != nil {
			return nil, err
		}
		return ls.send(ctx, rs, r.Method, p)
	})
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h(ctx, &ServerRequest{Method: method, Params: params, ProtocolVersion: ls.rev.version, SessionID: ls.id})
}

// send sends a request to the client on rs and waits for the answer, the
// end of ctx, or the end of the session.
func (ls *legacySession) send(ctx context.Context, rs requestSender, method string, params []byte) (json.RawMessage, error) {
	ch := make(chan legacyReply, 1)
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return nil, errLegacySessionEnded
	}
	ls.nextID++
	id := ls.nextID
	if ls.update != nil {
		id = ls.s.fleet.requestID(id) // the answer finds this instance
	}
	ls.pending[id] = ch
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		delete(ls.pending, id)
		ls.mu.Unlock()
	}()
	msg := make([]byte, 0, 64+len(method)+len(params))
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = strconv.AppendInt(msg, id, 10)
	msg = append(msg, `,"method":`...)
	msg = jsonrpc.AppendString(msg, method)
	msg = append(msg, `,"params":`...)
	msg = append(msg, params...)
	msg = append(msg, '}')
	if err := rs.sendRequest(msg, false); err != nil {
		return nil, fmt.Errorf("mcp: sending %s to the client: %w", method, err)
	}
	wait := ls.s.questionTimeout()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, &ClientRequestError{Method: method, Code: r.err.Code, Message: r.err.Message}
		}
		return r.result, nil
	case <-ctx.Done():
		// The originating request was cancelled: tell the client to
		// stop working on ours (best effort).
		ls.cancelQuestion(rs, id, "the originating request was cancelled")
		return nil, ctx.Err()
	case <-deadline.C:
		ls.cancelQuestion(rs, id, "no answer in time")
		return nil, &ClientRequestError{Method: method, Code: codeRequestTimeout, Message: "no answer within " + wait.String(), timeout: true}
	case <-ls.ctx.Done():
		return nil, errLegacySessionEnded
	}
}

// cancelQuestion tells the client to stop working on the question id
// (best effort).
func (ls *legacySession) cancelQuestion(rs requestSender, id int64, reason string) {
	if b, err := encodeNotification(nil, notificationCancelled, &legacyCancelParams{RequestID: id, Reason: reason}); err == nil {
		_ = rs.sendRequest(b, true)
	}
}

type legacyCancelParams struct {
	RequestID int64  `json:"requestId"`
	Reason    string `json:"reason,omitempty"`
}

// rememberElicitation records a URL elicitation id asked on the session,
// so that Server.CompleteElicitation can find the session.
func (ls *legacySession) rememberElicitation(id string) {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return
	}
	var dropped string
	if len(ls.elicits) >= maxLegacyElicitations {
		dropped = ls.elicits[0]
		ls.elicits = append(ls.elicits[:0], ls.elicits[1:]...)
	}
	ls.elicits = append(ls.elicits, id)
	ls.mu.Unlock()
	ls.s.legacy.remember(id, ls, dropped)
}

// sendUnrelated delivers a notification related to no request, if the
// session's transport has somewhere to put it.
func (ls *legacySession) sendUnrelated(method string, params any) {
	ls.mu.Lock()
	f := ls.unrelated
	closed := ls.closed
	ls.mu.Unlock()
	if f != nil && !closed {
		f(method, params)
	}
}

// sendPending encodes a session listener's pending changes as
// notification messages and hands each to send.
func (l *listener) sendPending(send func(msg []byte)) {
	for _, c := range l.take() {
		m, p := changeNotification(c)
		if b, err := encodeNotification(nil, m, p); err == nil {
			send(b)
		}
	}
}

// changeNotification is the legacy notification for a hub change.
func changeNotification(c change) (string, any) {
	switch c.kind {
	case changeTools:
		return NotificationToolListChanged, struct{}{}
	case changePrompts:
		return notificationPromptListChanged, struct{}{}
	case changeResources:
		return notificationResourceListChanged, struct{}{}
	}
	return NotificationResourceUpdated, &struct {
		URI string `json:"uri"`
	}{c.uri}
}

// ---- the server-wide part ----

// legacyState is the part of the Server the legacy era needs: which
// session asked which URL elicitation.
type legacyState struct {
	mu      sync.Mutex
	elicits map[string]*legacySession
	// handlers are the HTTP handlers' session registries, so that
	// Server.Close can end their sessions; weak, so that a handler
	// dropped by its user is not kept alive by the server.
	handlers []weak.Pointer[legacyHTTP]
	// sse are the HTTP+SSE handlers of a server with a SessionStore,
	// for what the fleet's bus brings them (session_fleet.go).
	sse []weak.Pointer[sseHandler]
}

// addSSEHandler records sh for the fleet's bus.
func (st *legacyState) addSSEHandler(sh *sseHandler) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sse = slices.DeleteFunc(st.sse, func(p weak.Pointer[sseHandler]) bool { return p.Value() == nil })
	st.sse = append(st.sse, weak.Make(sh))
}

// liveSSEHandlers returns the HTTP+SSE handlers still alive.
func (st *legacyState) liveSSEHandlers() []*sseHandler {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*sseHandler, 0, len(st.sse))
	for _, p := range st.sse {
		if sh := p.Value(); sh != nil {
			out = append(out, sh)
		}
	}
	return out
}

// addHandler records lh for closeAll, forgetting collected handlers.
func (st *legacyState) addHandler(lh *legacyHTTP) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.handlers = slices.DeleteFunc(st.handlers, func(p weak.Pointer[legacyHTTP]) bool { return p.Value() == nil })
	st.handlers = append(st.handlers, weak.Make(lh))
}

// liveHandlers returns the HTTP handlers still alive.
func (st *legacyState) liveHandlers() []*legacyHTTP {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*legacyHTTP, 0, len(st.handlers))
	for _, p := range st.handlers {
		if lh := p.Value(); lh != nil {
			out = append(out, lh)
		}
	}
	return out
}

// closeAll ends every session of every live HTTP handler.
func (st *legacyState) closeAll() {
	st.mu.Lock()
	hs := slices.Clone(st.handlers)
	st.mu.Unlock()
	for _, p := range hs {
		if lh := p.Value(); lh != nil {
			lh.closeAll()
		}
	}
}

func (st *legacyState) remember(id string, ls *legacySession, dropped string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.elicits == nil {
		st.elicits = make(map[string]*legacySession)
	}
	if dropped != "" && st.elicits[dropped] == ls {
		delete(st.elicits, dropped)
	}
	st.elicits[id] = ls
}

func (st *legacyState) forget(ls *legacySession, ids []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, id := range ids {
		if st.elicits[id] == ls {
			delete(st.elicits, id)
		}
	}
}

// CompleteElicitation tells the client that asked the URL-mode
// elicitation elicitationID (see WithLegacyElicitationID) that the out-of-band
// interaction finished, with notifications/elicitation/complete. Only
// 2025-11-25 sessions have that notification (2026-07-28 correlates URL
// elicitations through requestState): it reports whether a session was
// found and notified. In a fleet (ServerOptions.SessionStore) an
// elicitation asked on another instance is looked for there: the call
// waits up to 1 s for that instance's answer, and true means it found
// the session and handed the notification to the instance holding the
// session's GET stream, which writes it (best effort, as the bus is);
// false, that no instance answered in time.
func (s *Server) CompleteElicitation(elicitationID string) bool {
	if s.completeElicitationHere(elicitationID) {
		return true
	}
	if s.fleet != nil {
		return s.fleet.completeElsewhere(elicitationID)
	}
	return false
}

// completeElicitationHere is CompleteElicitation for the elicitations
// asked on this instance.
func (s *Server) completeElicitationHere(elicitationID string) bool {
	s.legacy.mu.Lock()
	ls := s.legacy.elicits[elicitationID]
	delete(s.legacy.elicits, elicitationID)
	s.legacy.mu.Unlock()
	if ls == nil {
		return false
	}
	ls.mu.Lock()
	ls.elicits = slices.DeleteFunc(ls.elicits, func(id string) bool { return id == elicitationID })
	ls.mu.Unlock()
	ls.sendUnrelated(notificationElicitationComplete, &struct {
		ElicitationID string `json:"elicitationId"`
	}{elicitationID})
	return true
}

// legacyEnabled reports whether the server serves 2025-11-25.
func (s *Server) legacyEnabled() bool { return !s.opts.DisableLegacy }

// ---- initialize ----

type legacyInitParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	ClientInfo      Implementation     `json:"clientInfo"`
}

// initializeResult is the result of initialize.
type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    any            `json:"capabilities"` // ServerCapabilities, with session members (extension_seam.go)
	ServerInfo      Implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

// httpInitialize is the one prelude of initialize on both HTTP paths of
// the earlier revisions (Streamable HTTP sessions and HTTP+SSE): the
// Mcp-Method header is checked against the body, then the params are
// decoded, and the session's origin is the request. A header that
// contradicts the body is answered with HTTP 400 on either path (hdr
// true); params that do not decode are answered where the path answers
// its requests (the response body, or the HTTP+SSE stream).
func httpInitialize(r *http.Request, msg jsonrpc.Message, t TransportKind) (p *legacyInitParams, from sessionOrigin, f *failure, hdr bool) {
	if e := checkMethodHeader(msg.Method, r.Header, false); e != nil {
		return nil, from, &failure{err: e, status: http.StatusBadRequest}, true
	}
	if p, f = decodeInitialize(msg.Params); f != nil {
		return nil, from, f, false
	}
	return p, sessionOrigin{ctx: r.Context(), transport: t, req: r, id: msg.ID}, nil, false
}

// decodeInitialize checks the params of initialize.
func decodeInitialize(raw []byte) (*legacyInitParams, *failure) {
	p := new(legacyInitParams)
	var hasVersion, hasCaps, hasInfo bool
	if raw == nil {
		raw = []byte("{}")
	}
	err := scanObject(raw, "params", []string{"protocolVersion", "capabilities", "clientInfo"}, func(i int, v []byte) *Error {
		switch i {
		case 0:
			s, e := decodeString(v, "protocolVersion")
			p.ProtocolVersion, hasVersion = s, true
			return e
		case 1:
			if jsonrpc.KindOf(v) != jsonrpc.KindObject || json.Unmarshal(v, &p.Capabilities) != nil {
				return paramsError("capabilities must be a ClientCapabilities object")
			}
			if len(v) <= maxRawCapabilities {
				p.Capabilities.Raw = append(json.RawMessage(nil), v...)
			}
			hasCaps = true
		case 2:
			if jsonrpc.KindOf(v) != jsonrpc.KindObject || json.Unmarshal(v, &p.ClientInfo) != nil {
				return paramsError("clientInfo must be an Implementation object")
			}
			hasInfo = true
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, &failure{err, http.StatusBadRequest}
	case !hasVersion:
		return nil, &failure{paramsError("missing protocolVersion"), http.StatusBadRequest}
	case !hasCaps:
		return nil, &failure{paramsError("missing capabilities"), http.StatusBadRequest}
	case !hasInfo:
		return nil, &failure{paramsError("missing clientInfo"), http.StatusBadRequest}
	}
	return p, nil
}

// initializeResult encodes the answer to initialize.
func (s *Server) initializeResult(id jsonrpc.ID, ls *legacySession) []byte {
	b, err := s.appendLegacyResult(nil, id, &initializeResult{
		ProtocolVersion: ls.rev.version,
		Capabilities:    s.initializeCapabilities(ls.rev),
		ServerInfo:      ls.rev.implementation(s.impl),
		Instructions:    s.opts.Instructions,
	})
	if err != nil {
		return appendFailure(nil, id, &failure{err: errInternal})
	}
	return b
}

// newSessionID returns 128 random bits in hex: visible ASCII, as
// 2025-11-25 requires.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
