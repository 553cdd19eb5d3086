package mcp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp/internal/idlelist"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// The sessions of the 2025-11-25 Streamable HTTP binding: the registry
// (every session by id, every party's quota and its least recently used
// idle sessions), expiry and eviction, and what one session keeps: its
// streams, the exchanges writing for it, its requests in flight and the
// replay log of its events.

// quota is one party's sessions: how many, and those without an HTTP
// exchange in progress, least recently used first (an intrusive list, so
// that finding the session to end is O(1)).
type quota struct {
	key     string
	count   int
	running int // requests in flight, all the party's sessions together
	idlelist.List[httpSession, *httpSession]
}

// httpSession is a legacy session of an HTTP handler. Lock order: the
// registry's lh.mu is never held while taking another lock; a stream's mu
// may be held while taking the session's smu, never the other way round.
type httpSession struct {
	*legacySession
	lh        *legacyHTTP
	principal string        // who opened the session (see legacyHTTP.session)
	last      atomic.Int64  // UnixNano of the last exchange
	version   atomic.Uint64 // the store record's Version this replica reflects (session_fleet.go)
	// With a store (session_fleet.go): whether this instance writes the
	// session's notifications related to no request, the instance the
	// record names for that, and the events waiting to be appended to
	// the store's log, in order.
	holder   atomic.Bool
	keeping  atomic.Bool // keepUnread is running
	fmu      sync.Mutex
	instance string
	outbox   []SessionEvent
	flushing bool
	// handing: the GET stream is being taken over here (takeOverGET);
	// the notifications related to no request raised meanwhile wait in
	// handover, to follow the replayed events.
	handing  bool
	handover [][]byte

	// under lh.mu
	q                          *quota
	open                       int // HTTP exchanges of the session in progress
	running                    int // requests in flight (legacy_inflight.go)
	removed                    bool
	idlelist.Link[httpSession] // in q's idle list

	// under smu; streams is nil once the session is closed
	smu        sync.Mutex
	timer      *time.Timer
	streams    map[uint64]*legacyStream
	conns      map[*sseConn]struct{} // every HTTP exchange writing for the session
	completed  []uint64              // finished SSE streams kept for replay, oldest first
	nextStream uint64
	log        *sse.ReplayLog // the events of the session's SSE streams, for Last-Event-ID
	inflight   map[string]context.CancelFunc
	get        *legacyStream // stream 0: the GET stream
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

// getStreamsOpen reports the GET streams with a connection attached.
func (lh *legacyHTTP) getStreamsOpen() int {
	lh.mu.Lock()
	all := make([]*httpSession, 0, len(lh.sessions))
	for _, hs := range lh.sessions {
		all = append(all, hs)
	}
	lh.mu.Unlock()
	n := 0
	for _, hs := range all {
		hs.smu.Lock()
		st := hs.get
		hs.smu.Unlock()
		if st != nil {
			st.mu.Lock()
			if st.conn != nil {
				n++
			}
			st.mu.Unlock()
		}
	}
	return n
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
// else the verified principal, else the client's address (party.go).
func (lh *legacyHTTP) quotaKey(r *http.Request, principal string) string {
	return partyOf(r, lh.opts.QuotaKey, principal)
}

// newHTTPSession makes a session (or, with a store, a replica of one)
// not yet in the registry.
func (lh *legacyHTTP) newHTTPSession(id string, p *legacyInitParams, from sessionOrigin, principal string) *httpSession {
	hs := &httpSession{legacySession: lh.s.newLegacySession(id, p, from), lh: lh, principal: principal, streams: make(map[uint64]*legacyStream)}
	hs.last.Store(time.Now().UnixNano())
	hs.unrelated = hs.sendUnrelated
	if f := lh.s.fleet; f != nil {
		// Stream numbers carry the instance's tag, so that the event ids
		// of the instances of a fleet never collide.
		hs.nextStream = f.tag << 32
		hs.update = hs.storeUpdate
		lh.s.hub.mu.Lock()
		hs.listener.kick = hs.keepUnread
		lh.s.hub.mu.Unlock()
	}
	return hs
}

// Outcomes of register.
const (
	registered   = iota
	raced        // another session with the id is in the registry already
	refusedParty // each of the party's sessions has an exchange in progress
	refusedAll   // at the global bound, nothing of the party's to end
)

// register puts hs into the registry under the party key. At the party's
// bound, or the global one, the party's own session idle the longest
// makes room (with a store, that only drops the local replica: evict
// false); when each of its sessions has an exchange in progress, hs is
// refused. Another party's sessions are never touched.
func (lh *legacyHTTP) register(hs *httpSession, key string, evict bool) int {
	for {
		lh.mu.Lock()
		if lh.sessions[hs.id] != nil {
			lh.mu.Unlock()
			return raced
		}
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
			q.PushIdle(hs)
			lh.sessions[hs.id] = hs
			lh.mu.Unlock()
			return registered
		}
		var victim *httpSession
		if q != nil {
			victim = q.Oldest()
		}
		if victim == nil {
			lh.mu.Unlock()
			if n >= lh.opts.MaxSessionsPerPrincipal {
				return refusedParty
			}
			return refusedAll
		}
		lh.removeLocked(victim)
		lh.mu.Unlock()
		if evict {
			lh.s.log.Info("mcp: legacy session evicted to make room", "session", victim.id)
		}
		lh.closeSession(victim)
	}
}

// startTimer arms the session's idle expiry (with a store, the end of
// the local replica only: the store expires the session).
func (hs *httpSession) startTimer() {
	hs.smu.Lock()
	hs.timer = time.AfterFunc(hs.lh.opts.IdleTimeout, hs.expireCheck)
	hs.smu.Unlock()
}

// ---- the registry: sessions, quotas, idle lists (under lh.mu) ----

func (hs *httpSession) IdleLink() *idlelist.Link[httpSession] { return &hs.Link }

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
	hs.q.UnlinkIdle(hs)
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
	if hs.Idle() {
		// Most recently used: to the back of the party's idle list.
		hs.q.UnlinkIdle(hs)
		hs.q.PushIdle(hs)
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
	hs.q.UnlinkIdle(hs)
	lh.mu.Unlock()
}

func (hs *httpSession) leave() {
	hs.last.Store(time.Now().UnixNano())
	lh := hs.lh
	lh.mu.Lock()
	hs.open--
	if hs.open == 0 && !hs.removed {
		hs.q.PushIdle(hs)
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
	if lh.s.fleet != nil && !lh.fleetExpired(hs) {
		// The holder keeps its replica while the record lives.
		hs.smu.Lock()
		if hs.timer != nil {
			hs.timer.Reset(idle)
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
	hs.streams, hs.conns, hs.completed, hs.inflight, hs.get, hs.log = nil, nil, nil, nil, nil, nil
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
		st.mu.Unlock()
	}
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
		if hs.log != nil {
			hs.log.Forget(st.num)
		}
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
		hs.get = &legacyStream{lh: hs.lh, hs: hs, standalone: true, streaming: true, ctx: hs.ctx}
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
	if f := hs.lh.s.fleet; f != nil {
		if hs.deferHandover(b) {
			return
		}
		if !hs.holder.Load() {
			f.toHolder(hs, b) // the instance holding the session's GET stream writes it
			return
		}
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
// is cancelled and nothing more is sent for it. It reports whether the
// request runs here.
func (hs *httpSession) cancelled(params []byte) bool {
	key := cancelledRequestKey(params)
	hs.smu.Lock()
	cancel := hs.inflight[key]
	hs.smu.Unlock()
	if cancel != nil {
		cancel()
	}
	return cancel != nil
}

// errSessionEnded: the session ended (its streams and log are gone).
var errSessionEnded = errors.New("mcp: the legacy session has ended")

// logLocked returns the session's replay log, made on first use (a
// session whose responses are all JSON bodies never has one); nil once
// the session is closed.
func (hs *httpSession) logLocked() *sse.ReplayLog {
	if hs.log == nil && hs.streams != nil {
		maxBytes := hs.lh.opts.MaxEventBytes
		// Every event counts EntryOverhead bytes at least, so MaxEvents
		// never binds before MaxBytes: the bound is MaxEventBytes alone.
		// The log remembers every stream a session can have at once (one
		// per request in flight, the finished ones kept and the GET
		// stream), so that a live request's stream is never forgotten
		// while the client can still resume it.
		streams := max(maxLoggedStreams, hs.lh.opts.MaxRequestsPerSession+maxCompletedStreams+1)
		hs.log = sse.NewReplayLog(sse.ReplayLimits{MaxBytes: maxBytes, MaxEvents: maxBytes/sse.EntryOverhead + 1, MaxStreams: streams})
	}
	return hs.log
}

// openLog makes stream num known to the replay log when it turns into an
// SSE stream (its priming event), so that a client resuming from the
// priming id gets everything after it.
func (hs *httpSession) openLog(num uint64) {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if l := hs.logLocked(); l != nil {
		l.Open(num)
		if hs.lh.s.fleet != nil {
			// The store knows the stream from its priming event on, so
			// that it resumes from the priming id on any instance.
			hs.replicate(SessionEvent{Stream: num})
		}
	}
}

// keep puts an event of a stream into the replay log, which drops the
// oldest events of the session (any stream) to stay within its bounds.
// msg is kept as is: the caller hands over a slice it never modifies.
func (hs *httpSession) keep(id sse.EventID, msg []byte) {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if l := hs.logLocked(); l != nil {
		l.Append(id, msg)
	}
}

// since returns the events kept after id, for a client resuming with
// Last-Event-ID: sse.ErrUnknownID when the log does not know the id,
// sse.ErrTooOld when some of the events after it are no longer kept,
// errSessionEnded when the session has ended.
func (hs *httpSession) since(id sse.EventID) ([]sse.Entry, error) {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	l := hs.logLocked()
	if l == nil {
		return nil, errSessionEnded
	}
	return l.Since(id)
}

// forgetOldestLocked drops the oldest finished stream and its events.
func (hs *httpSession) forgetOldestLocked() {
	num := hs.completed[0]
	hs.completed = hs.completed[1:]
	delete(hs.streams, num)
	if hs.log != nil {
		hs.log.Forget(num)
	}
}

// streamDone files a finished stream: kept for replay when it was SSE,
// forgotten when it was a plain JSON response.
func (hs *httpSession) streamDone(st *legacyStream, isSSE bool) {
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.streams == nil || hs.streams[st.num] != st {
		return
	}
	if !isSSE {
		delete(hs.streams, st.num)
		return
	}
	hs.completed = append(hs.completed, st.num)
	for len(hs.completed) > maxCompletedStreams {
		hs.forgetOldestLocked()
	}
}
