package mcp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
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
	// after a reconnection (Last-Event-ID). Zero means 1 MiB; the oldest
	// finished streams are dropped first. It also bounds what waits to be
	// written to one connection: a client that falls that far behind
	// loses the connection (and resumes with Last-Event-ID).
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
	eventOverhead       = 32 // bytes accounted per event on top of its data
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
}

// quota is one party's sessions: how many, and those without an HTTP
// exchange in progress, least recently used first (an intrusive list, so
// that finding the session to end is O(1)).
type quota struct {
	key        string
	count      int
	head, tail *httpSession
}

func newLegacyHTTP(s *Server, o LegacyHTTPOptions, keepAlive, writeTimeout time.Duration) *legacyHTTP {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10000
	}
	if o.MaxSessionsPerPrincipal <= 0 {
		o.MaxSessionsPerPrincipal = 100
	}
	if o.StreamLifetime <= 0 {
		o.StreamLifetime = 10 * time.Minute
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
	lh := &legacyHTTP{s: s, opts: o, keepAlive: keepAlive, writeTimeout: writeTimeout,
		sessions: make(map[string]*httpSession), quotas: make(map[string]*quota)}
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

// httpSession is a legacy session of an HTTP handler. Lock order: the
// registry's lh.mu is never held while taking another lock; a stream's mu
// may be held while taking the session's smu, never the other way round.
type httpSession struct {
	*legacySession
	lh        *legacyHTTP
	principal string       // who opened the session (see legacyHTTP.session)
	last      atomic.Int64 // UnixNano of the last exchange

	// under lh.mu
	q          *quota
	open       int // HTTP exchanges of the session in progress
	idle       bool
	removed    bool
	prev, next *httpSession // in q's idle list

	smu        sync.Mutex
	timer      *time.Timer
	streams    map[uint64]*legacyStream
	conns      map[*sseConn]struct{} // every HTTP exchange writing for the session
	completed  []uint64              // finished SSE streams kept for replay, oldest first
	nextStream uint64
	bytes      int // event bytes kept, all streams
	inflight   map[string]context.CancelFunc
	get        *legacyStream // stream 0: the GET stream
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

// quotaKey names the party the caller's sessions count against: QuotaKey,
// else the verified principal, else the remote address.
func (lh *legacyHTTP) quotaKey(r *http.Request, principal string) string {
	if f := lh.opts.QuotaKey; f != nil {
		if k := f(r); k != "" {
			return "key " + k
		}
	}
	if principal != "" {
		return "principal " + principal
	}
	return "address " + remoteParty(r.RemoteAddr)
}

// remoteParty is the address part of a RemoteAddr that names one client:
// the IPv4 address, or the /64 of an IPv6 address (a single host usually
// has a whole /64 to pick from).
func remoteParty(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// ---- the registry: sessions, quotas, idle lists (under lh.mu) ----

func (q *quota) pushIdle(hs *httpSession) {
	hs.prev, hs.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = hs
	} else {
		q.head = hs
	}
	q.tail = hs
	hs.idle = true
}

func (q *quota) unlinkIdle(hs *httpSession) {
	if !hs.idle {
		return
	}
	if hs.prev != nil {
		hs.prev.next = hs.next
	} else {
		q.head = hs.next
	}
	if hs.next != nil {
		hs.next.prev = hs.prev
	} else {
		q.tail = hs.prev
	}
	hs.prev, hs.next, hs.idle = nil, nil, false
}

// removeLocked takes hs out of the registry; it reports whether hs was
// still in it.
func (lh *legacyHTTP) removeLocked(hs *httpSession) bool {
	if hs.removed {
		return false
	}
	hs.removed = true
	if lh.sessions[hs.id] == hs {
		delete(lh.sessions, hs.id)
	}
	hs.q.unlinkIdle(hs)
	hs.q.count--
	if hs.q.count == 0 && lh.quotas[hs.q.key] == hs.q {
		delete(lh.quotas, hs.q.key)
	}
	return true
}

func (hs *httpSession) touch() {
	hs.last.Store(time.Now().UnixNano())
	lh := hs.lh
	lh.mu.Lock()
	if hs.idle {
		// Most recently used: to the back of the party's idle list.
		hs.q.unlinkIdle(hs)
		hs.q.pushIdle(hs)
	}
	lh.mu.Unlock()
}

// enter and leave bracket an HTTP exchange of the session: a session with
// one in progress is never idle, so never ended to make room.
func (hs *httpSession) enter() {
	hs.last.Store(time.Now().UnixNano())
	lh := hs.lh
	lh.mu.Lock()
	hs.open++
	hs.q.unlinkIdle(hs)
	lh.mu.Unlock()
}

func (hs *httpSession) leave() {
	hs.last.Store(time.Now().UnixNano())
	lh := hs.lh
	lh.mu.Lock()
	hs.open--
	if hs.open == 0 && !hs.removed {
		hs.q.pushIdle(hs)
	}
	lh.mu.Unlock()
}

func (hs *httpSession) expireCheck() {
	if hs.ctx.Err() != nil {
		return
	}
	lh := hs.lh
	idle := lh.opts.IdleTimeout
	lh.mu.Lock()
	open := hs.open > 0
	lh.mu.Unlock()
	since := time.Since(time.Unix(0, hs.last.Load()))
	if open || since < idle {
		wait := idle - since
		if open || wait <= 0 {
			wait = idle
		}
		hs.smu.Lock()
		if hs.timer != nil {
			hs.timer.Reset(wait)
		}
		hs.smu.Unlock()
		return
	}
	lh.s.log.Info("mcp: legacy session expired", "session", hs.id, "idle", idle)
	lh.closeSession(hs)
}

// closeSession ends a session: it leaves the registry (its id now gets
// 404), its requests are cancelled and its connections let go at once,
// whatever their clients do: nothing here waits on a socket.
func (lh *legacyHTTP) closeSession(hs *httpSession) {
	lh.mu.Lock()
	lh.removeLocked(hs)
	lh.mu.Unlock()
	hs.smu.Lock()
	if hs.timer != nil {
		hs.timer.Stop()
	}
	streams := make([]*legacyStream, 0, len(hs.streams))
	for _, st := range hs.streams {
		streams = append(streams, st)
	}
	conns := make([]*sseConn, 0, len(hs.conns))
	for c := range hs.conns {
		conns = append(conns, c)
	}
	hs.streams, hs.conns, hs.completed, hs.inflight, hs.get, hs.bytes = nil, nil, nil, nil, nil, 0
	hs.smu.Unlock()
	hs.legacySession.close()
	for _, c := range conns {
		c.st.mu.Lock()
		c.abortLocked()
		c.st.mu.Unlock()
	}
	for _, st := range streams {
		st.mu.Lock()
		st.conn = nil
		st.events = nil
		st.mu.Unlock()
	}
}

// ---- entry points from the HTTP handler ----

// classify is the era decision for a POST (the one place that asks): a
// message is 2025-11-25 traffic when it belongs to a session
// (Mcp-Session-Id), opens one (initialize), or names a legacy revision
// in MCP-Protocol-Version, unless it is a request carrying the
// 2026-07-28 _meta envelope, which is modern whatever else it carries.
// The modern hot path (no session, the modern or no version header, not
// initialize) is decided from the headers alone.
func (lh *legacyHTTP) classify(r *http.Request, msg *jsonrpc.Message) bool {
	session := len(r.Header[headerSessionID]) > 0
	if !msg.IsRequest() {
		return session // a session's notification or answer
	}
	v := r.Header[canonicalProtocolVersion]
	if !session && msg.Method != MethodInitialize && (len(v) == 0 || strings.TrimSpace(v[0]) == LatestProtocolVersion) {
		return false
	}
	if hasModernMeta(msg.Params) {
		return false
	}
	return session || msg.Method == MethodInitialize || len(v) == 1 && slices.Contains(legacyHeaderVersions, strings.TrimSpace(v[0]))
}

// canonicalProtocolVersion is MCP-Protocol-Version as net/http keys it.
var canonicalProtocolVersion = http.CanonicalHeaderKey(HeaderProtocolVersion)

// serve answers a POST that classify called legacy traffic.
func (lh *legacyHTTP) serve(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) {
	sid, ok := sessionHeader(w, r, msg.ID)
	if !ok {
		return
	}
	if sid != "" {
		hs := lh.session(r, sid)
		if hs == nil {
			sessionNotFound(w, msg.ID)
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
	case msg.Method == MethodInitialize:
		lh.initialize(w, r, msg)
	case lh.opts.Stateless:
		if !msg.IsRequest() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		version := strings.TrimSpace(r.Header.Get(HeaderProtocolVersion))
		c := &call{msg: msg, era: &legacyScope{version: negotiateLegacy(version)}}
		if f := c.era.decode(c); f != nil {
			writeHTTPError(w, http.StatusOK, msg.ID, f.err)
			return
		}
		if e := c.era.checkHeaders(lh.s, c, r.Header); e != nil {
			writeHTTPError(w, http.StatusBadRequest, msg.ID, e)
			return
		}
		lh.serveCall(w, r, nil, c)
	default:
		writeHTTPError(w, http.StatusBadRequest, msg.ID, jsonrpcError(CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required (send initialize first)"))
	}
}

// notification handles a notification POSTed to a session.
func (lh *legacyHTTP) notification(w http.ResponseWriter, hs *httpSession, msg jsonrpc.Message) {
	hs.touch()
	switch msg.Method {
	case NotificationInitialized:
		hs.setInitialized()
	case NotificationCancelled:
		hs.cancelled(msg.Params)
	}
	w.Header()[headerSessionID] = []string{hs.id}
	w.WriteHeader(http.StatusAccepted)
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
	if st.conn != nil {
		st.mu.Unlock()
		writeHTTPError(w, http.StatusConflict, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Conflict: the session's GET stream is already open"))
		return true
	}
	c := st.attachLocked(w)
	if c == nil {
		st.mu.Unlock()
		sessionNotFound(w, jsonrpc.ID{})
		return true
	}
	c.queueLocked(outFrame{kind: frameStart})
	c.queueLocked(outFrame{kind: framePrime, num: st.num, seq: st.seq})
	st.mu.Unlock()
	st.hold(c, r, lh.opts.StreamLifetime)
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
	if e := checkMethodHeader(msg.Method, r.Header, false); e != nil {
		writeHTTPError(w, http.StatusBadRequest, msg.ID, e)
		return
	}
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
	key := lh.quotaKey(r, principal)
	id := lh.opts.SessionIDPrefix + newSessionID()
	hs := &httpSession{legacySession: lh.s.newLegacySession(id, p), lh: lh, principal: principal, streams: make(map[uint64]*legacyStream)}
	hs.last.Store(time.Now().UnixNano())
	hs.unrelated = hs.sendUnrelated
	// At the party's bound, or the global one, the party's own session
	// idle the longest makes room; when each of its sessions has an
	// exchange in progress, the new one is refused. Another party's
	// sessions are never touched.
	for {
		lh.mu.Lock()
		q := lh.quotas[key]
		n := 0
		if q != nil {
			n = q.count
		}
		if n < lh.opts.MaxSessionsPerPrincipal && len(lh.sessions) < lh.opts.MaxSessions {
			if q == nil {
				q = &quota{key: key}
				lh.quotas[key] = q
			}
			q.count++
			hs.q = q
			q.pushIdle(hs)
			lh.sessions[id] = hs
			lh.mu.Unlock()
			break
		}
		var victim *httpSession
		if q != nil {
			victim = q.head
		}
		if victim == nil {
			lh.mu.Unlock()
			hs.legacySession.close()
			msg2 := "Too many sessions: try again later"
			if n >= lh.opts.MaxSessionsPerPrincipal {
				msg2 = "Too many sessions for this client, each with a request or stream in progress: end one (DELETE) or try again later"
			}
			w.Header().Set("Retry-After", retryAfterBusy)
			writeHTTPError(w, http.StatusServiceUnavailable, msg.ID, jsonrpcError(-32000, msg2))
			return
		}
		lh.removeLocked(victim)
		lh.mu.Unlock()
		lh.s.log.Info("mcp: legacy session evicted to make room", "session", victim.id)
		lh.closeSession(victim)
	}
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
	c := &call{msg: msg, era: hs.scope()}
	if f := c.era.decode(c); f != nil {
		if e := checkMethodHeader(msg.Method, r.Header, false); e != nil {
			writeHTTPError(w, http.StatusBadRequest, msg.ID, e)
			return
		}
		writeHTTPError(w, http.StatusOK, msg.ID, f.err)
		return
	}
	if e := c.era.checkHeaders(lh.s, c, r.Header); e != nil {
		writeHTTPError(w, http.StatusBadRequest, msg.ID, e)
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
	conn := st.attachLocked(w)
	st.mu.Unlock()
	if conn == nil {
		// The session ended in between.
		stop()
		cancel()
		sessionNotFound(w, c.msg.ID)
		return
	}
	go func() {
		defer cancel()
		defer stop()
		res, f := lh.s.execute(ctx, c, st)
		if hs != nil {
			hs.removeInflight(key)
		}
		st.finish(c, res, f)
	}()
	st.hold(conn, r, 0)
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
	if st.conn != nil {
		st.mu.Unlock()
		writeHTTPError(w, http.StatusConflict, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Conflict: that stream already has a connection"))
		return
	}
	c := st.attachLocked(w)
	if c == nil {
		st.mu.Unlock()
		sessionNotFound(w, jsonrpc.ID{})
		return
	}
	c.queueLocked(outFrame{kind: frameStart})
	for _, ev := range st.events {
		if ev.seq > seq {
			c.queueLocked(outFrame{kind: frameEvent, num: st.num, seq: ev.seq, data: ev.data})
		}
	}
	if st.done {
		c.endLocked()
	}
	st.mu.Unlock()
	st.hold(c, r, lh.opts.StreamLifetime)
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
	hs.nextStream++
	st.num = hs.nextStream
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

// addConn records an exchange writing for the session, so that
// closeSession can let it go; false when the session is closed.
func (hs *httpSession) addConn(c *sseConn) bool {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.streams == nil {
		return false
	}
	if hs.conns == nil {
		hs.conns = make(map[*sseConn]struct{})
	}
	hs.conns[c] = struct{}{}
	return true
}

func (hs *httpSession) removeConn(c *sseConn) {
	hs.smu.Lock()
	delete(hs.conns, c)
	hs.smu.Unlock()
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
// session's GET stream, number 0). Its messages go to the exchange
// attached to it, if any, and to the session's event log.
//
// Nothing writes to a connection under the stream's mu: messages are
// queued on the attached exchange (sseConn) and the goroutine serving
// that exchange writes them, with a write deadline, holding no lock. So
// closing a session, DELETE or Server.Close never waits on a client that
// does not read.
type legacyStream struct {
	lh         *legacyHTTP
	hs         *httpSession // nil for a stateless request
	num        uint64
	ctx        context.Context
	jsonOnly   bool
	standalone bool

	mu     sync.Mutex
	conn   *sseConn // the exchange new messages go to, nil when none
	sse    bool
	seq    uint64
	events []legacyEvent
	done   bool
	size   int // event bytes accounted to the session (under hs.smu)
}

// Kinds of queued frames.
const (
	frameStart = iota + 1 // the SSE response headers
	frameEvent            // a message event: event, id, data
	framePrime            // an id and the retry interval, no data: priming, or the end of a held stream
	frameJSON             // the response as a single JSON body
)

type outFrame struct {
	kind     uint8
	num, seq uint64
	data     []byte
}

// sseConn is one HTTP exchange attached to a legacy stream: what waits to
// be written to it, and whether it must end. Its fields are guarded by
// the stream's mu; the exchange's own goroutine (hold) is the only
// writer.
type sseConn struct {
	st   *legacyStream
	w    http.ResponseWriter
	wake chan struct{} // cap 1: frames queued, or the end

	queue  []outFrame
	qbytes int
	ending bool // write what is queued, then let the exchange go
	gone   bool // let the exchange go now; queued frames are dropped
	closed bool // the writer has left: w must not be touched
}

// attachLocked makes w the stream's exchange; nil when the session has
// ended.
func (st *legacyStream) attachLocked(w http.ResponseWriter) *sseConn {
	c := &sseConn{st: st, w: w, wake: make(chan struct{}, 1)}
	if st.hs != nil && !st.hs.addConn(c) {
		return nil
	}
	st.lh.s.exch.addWriter(w)
	st.conn = c
	return c
}

func (c *sseConn) kick() {
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
	n := len(f.data) + eventOverhead
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
// does not read returns at once (its deadline is moved to the past).
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
	setWriteDeadline(c.w, aLongTimeAgo)
}

func (st *legacyStream) sessionID() string {
	if st.hs == nil {
		return ""
	}
	return st.hs.id
}

// hold serves the exchange c until it is let go, the client leaves or the
// session ends: it writes what is queued, keep-alive comments, and on the
// GET stream the session's list changes. lifetime > 0 ends the exchange
// after that long with a priming event (the last event id and the retry
// interval), for the client to resume with Last-Event-ID.
func (st *legacyStream) hold(c *sseConn, r *http.Request, lifetime time.Duration) {
	defer st.detach(c)
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
	var changes chan change
	var sessionDone, serverClosed <-chan struct{}
	if st.hs != nil {
		sessionDone = st.hs.ctx.Done()
		if st.standalone {
			changes = st.hs.listener.ch
			serverClosed = st.lh.s.hub.closed
		}
	}
	wr := sseWriter{st: st, w: c.w}
	wr.flusher, _ = c.w.(http.Flusher)
	var batch []outFrame
	for {
		st.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.qbytes = 0
		gone, ending := c.gone, c.ending
		st.mu.Unlock()
		if gone {
			return
		}
		if len(batch) > 0 {
			ok := wr.write(batch)
			clear(batch)
			if !ok {
				return
			}
		}
		if ending {
			return
		}
		select {
		case <-c.wake:
		case <-r.Context().Done():
			return
		case <-sessionDone:
			return
		case <-serverClosed:
			return
		case ch := <-changes:
			m, p := changeNotification(ch)
			if b, err := encodeNotification(nil, m, p); err == nil {
				_ = st.emit(b, false)
			}
		case <-tick:
			if wr.started && !wr.keepAlive() {
				return
			}
		case <-expire:
			st.mu.Lock()
			if !c.gone && !c.ending {
				c.queueLocked(outFrame{kind: framePrime, num: st.num, seq: st.seq})
				c.endLocked()
			}
			st.mu.Unlock()
		}
	}
}

// detach ends the exchange c: nothing touches its ResponseWriter after.
func (st *legacyStream) detach(c *sseConn) {
	st.mu.Lock()
	if st.conn == c {
		st.conn = nil
	}
	c.gone, c.closed = true, true
	c.queue = nil
	st.mu.Unlock()
	st.lh.s.exch.removeWriter(c.w)
	if st.hs != nil {
		st.hs.removeConn(c)
	}
}

// sseWriter writes frames to one exchange; only its hold goroutine uses
// it, with no lock held.
type sseWriter struct {
	st      *legacyStream
	w       http.ResponseWriter
	flusher http.Flusher
	started bool   // the SSE headers went out
	buf     []byte // rendering scratch
}

func (wr *sseWriter) arm() { wr.st.lh.s.exch.armWrite(wr.w, wr.st.lh.writeTimeout) }

// write writes a batch of frames and flushes; false when the exchange
// broke (the client left, or did not read within the write timeout).
func (wr *sseWriter) write(batch []outFrame) bool {
	for i := range batch {
		f := &batch[i]
		wr.arm()
		switch f.kind {
		case frameStart:
			startSSEHeaders(wr.w, wr.st.sessionID())
			wr.started = true
			continue
		case frameJSON:
			// Written when the handler returns, within the deadline just
			// armed.
			writeJSONBody(wr.w, f.data)
			continue
		case framePrime:
			if wr.st.hs == nil {
				continue
			}
			wr.buf = appendPrime(wr.buf[:0], f.num, f.seq, wr.st.lh.opts.RetryInterval)
		case frameEvent:
			wr.buf = appendSSEEvent(wr.buf[:0], f.num, f.seq, f.data)
		}
		if _, err := wr.w.Write(wr.buf); err != nil {
			return false
		}
	}
	if cap(wr.buf) > 64<<10 {
		wr.buf = nil
	}
	if wr.started && wr.flusher != nil {
		wr.arm()
		wr.flusher.Flush()
	}
	return true
}

func (wr *sseWriter) keepAlive() bool {
	wr.arm()
	if _, err := io.WriteString(wr.w, ": keep-alive\n\n"); err != nil {
		return false
	}
	if wr.flusher != nil {
		wr.flusher.Flush()
	}
	return true
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

// appendPrime renders a priming event: an event id and the retry
// interval, no data.
func appendPrime(b []byte, num, seq uint64, retry time.Duration) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, num, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, '\n')
	if retry > 0 {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, retry.Milliseconds(), 10)
		b = append(b, '\n')
	}
	return append(b, "data: \n\n"...)
}

func appendSSEEvent(b []byte, num, seq uint64, data []byte) []byte {
	b = append(b, "event: message\nid: "...)
	b = strconv.AppendUint(b, num, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// emit sends one message of the stream: to the attached exchange, and
// into the log for replay. The first message before the response turns
// the response into an SSE stream. final marks the response: the stream
// ends with it. msg is kept as is: callers hand over a fresh slice.
func (st *legacyStream) emit(msg []byte, final bool) error {
	st.mu.Lock()
	if st.done {
		st.mu.Unlock()
		return errRequestDone
	}
	c := st.conn
	if !st.sse {
		if final {
			// A plain JSON response.
			if c != nil {
				c.queueLocked(outFrame{kind: frameJSON, data: msg})
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
		st.startSSELocked(c)
	}
	st.seq++
	seq := st.seq
	if st.hs != nil {
		st.keepLocked(seq, msg)
	}
	if c != nil {
		c.queueLocked(outFrame{kind: frameEvent, num: st.num, seq: seq, data: msg})
	}
	if final {
		st.done = true
		if c != nil {
			c.endLocked()
		}
	}
	st.mu.Unlock()
	if final && st.hs != nil {
		st.hs.streamDone(st, true)
	}
	return nil
}

func (st *legacyStream) startSSELocked(c *sseConn) {
	st.sse = true
	c.queueLocked(outFrame{kind: frameStart})
	c.queueLocked(outFrame{kind: framePrime, num: st.num, seq: st.seq})
}

// keepLocked puts an event into the log, within the session's budget.
func (st *legacyStream) keepLocked(seq uint64, msg []byte) {
	n := len(msg) + eventOverhead
	if st.standalone && len(st.events) >= maxStandaloneEvents {
		old := st.events[0]
		st.events = st.events[1:]
		st.hs.unreserve(st, len(old.data)+eventOverhead)
	}
	if st.hs.reserve(st, n) {
		st.events = append(st.events, legacyEvent{seq, msg})
	}
}

// finish sends the response of the request, unless it was cancelled (then
// nothing more is sent and the exchange is let go).
func (st *legacyStream) finish(c *call, res Result, f *failure) {
	if st.ctx.Err() != nil {
		st.mu.Lock()
		st.done = true
		if st.conn != nil {
			st.conn.endLocked()
		}
		sse := st.sse
		st.mu.Unlock()
		if st.hs != nil {
			st.hs.streamDone(st, sse)
		}
		return
	}
	b, _ := st.lh.s.encodeResult(nil, c, res, f)
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

// closeSSE ends the HTTP exchange once what is queued is written, leaving
// the request running; its later messages wait in the log for a
// reconnection (CloseSSEStream).
func (st *legacyStream) closeSSE() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.conn
	if st.hs == nil || st.jsonOnly || st.done || c == nil {
		return false
	}
	if !st.sse {
		st.startSSELocked(c)
	}
	c.endLocked()
	return true
}
