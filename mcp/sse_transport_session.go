package mcp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/roundtrip-mcp/roundtrip/mcp/internal/idlelist"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// The sessions of the HTTP+SSE transport (sse_transport.go): the
// registry, the parties' quotas, and what one session keeps (its queue
// of outgoing messages, its requests in flight).
//
// The quotas follow the rules of the Streamable HTTP sessions
// (legacy_sessions.go: per party, the same party keys, the same
// defaults), with a registry of their own: an HTTP+SSE session holds its
// stream for its whole life, so "idle" cannot mean "no exchange open" as
// it does there. Here a session is idle when it has no request in
// progress, and a party's idle sessions are kept least recently used
// first (an intrusive list, O(1) to find the one to end); the types of
// legacy_sessions.go are bound to the Streamable session, with its
// streams and replay log, and could not be shared without changing it.

type sseHandler struct {
	s        *Server
	h        *httpHandler // the shared protections: host checks, body reading, deadlines (no legacy part)
	opts     SSEOptions
	maxQueue int // what may wait to be written to one stream

	// mu guards the registry: the sessions, the quotas, each session's
	// busy count and place in its party's idle list.
	mu       sync.Mutex
	sessions map[string]*sseSession
	quotas   map[string]*sseQuota
}

// sseQuota is one party's sessions: how many, and those with no request
// in progress, least recently used first.
type sseQuota struct {
	key     string
	count   int
	running int // requests in flight, all the party's sessions together
	idlelist.List[sseSession, *sseSession]
}

// sseSession is one HTTP+SSE session: its stream (the GET exchange,
// written only by the goroutine serving it), the legacy session
// initialize opened on it, its requests in flight.
//
// Lock order: the registry's sh.mu is never held while taking another
// lock; nothing is written to the stream under ss.mu (messages are
// queued, and the stream's goroutine writes them).
type sseSession struct {
	sh        *sseHandler
	id        string
	principal string
	wr        *sse.Writer
	ls        atomic.Pointer[legacySession] // set by initialize
	initMu    sync.Mutex                    // serializes initialize

	wake    chan struct{} // cap 1: messages queued, or the end
	done    chan struct{} // closed by end
	endOnce sync.Once

	// under sh.mu
	q                         *sseQuota
	busy                      int // requests in progress
	removed                   bool
	idlelist.Link[sseSession] // in q's idle list

	// under mu
	mu       sync.Mutex
	queue    [][]byte
	qbytes   int
	closed   bool
	inflight map[string]context.CancelFunc
}

// errSSEStreamEnded: the session's stream has ended (nothing more can
// be sent on it).
var errSSEStreamEnded = errors.New("mcp: the HTTP+SSE stream has ended")

func (sh *sseHandler) principal(r *http.Request) (string, error) {
	if f := sh.s.opts.RequestState.Principal; f != nil {
		return f(r.Context())
	}
	return defaultPrincipal(r.Context())
}

// quotaKey names the party a session counts against, as for Streamable
// HTTP sessions: QuotaKey, else the verified principal, else the remote
// address (party.go: behind SSEOptions.TrustedProxies, the forwarded one).
func (sh *sseHandler) quotaKey(r *http.Request, principal string) string {
	return partyOf(r, sh.opts.Legacy.QuotaKey, principal)
}

// admit registers ss for the party key. At the party's bound, or the
// global one, the party's own idle session unused the longest is ended
// to make room (another party's never is); when it has none, admit
// returns 503 and why.
func (sh *sseHandler) admit(ss *sseSession, key string) (int, string) {
	perParty, all := sh.opts.Legacy.MaxSessionsPerPrincipal, sh.opts.Legacy.MaxSessions
	for {
		sh.mu.Lock()
		q := sh.quotas[key]
		n := 0
		if q != nil {
			n = q.count
		}
		if n < perParty && len(sh.sessions) < all {
			if q == nil {
				q = &sseQuota{key: key}
				sh.quotas[key] = q
			}
			q.count++
			ss.q = q
			q.PushIdle(ss)
			sh.sessions[ss.id] = ss
			sh.mu.Unlock()
			return 0, ""
		}
		var victim *sseSession
		if q != nil {
			victim = q.Oldest()
		}
		if victim == nil {
			sh.mu.Unlock()
			if n >= perParty {
				return http.StatusServiceUnavailable, "Too many sessions for this client, each with a request in progress: close one or try again later"
			}
			return http.StatusServiceUnavailable, "Too many sessions: try again later"
		}
		sh.removeLocked(victim)
		sh.mu.Unlock()
		sh.s.log.Info("mcp: HTTP+SSE session ended to make room", "session", victim.id)
		victim.end(true)
	}
}

// session returns the session id names for the caller of r: a session
// belongs to the principal that opened its stream, and another caller
// presenting its id is told it does not exist.
func (sh *sseHandler) session(r *http.Request, id string) *sseSession {
	sh.mu.Lock()
	ss := sh.sessions[id]
	sh.mu.Unlock()
	if ss == nil {
		return nil
	}
	if p, err := sh.principal(r); err != nil || p != ss.principal {
		sh.s.log.Warn("mcp: HTTP+SSE session presented by another principal", "session", id)
		return nil
	}
	return ss
}

// sessionCount reports the sessions open (tests).
func (sh *sseHandler) sessionCount() int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return len(sh.sessions)
}

func (sh *sseHandler) remove(ss *sseSession) {
	sh.mu.Lock()
	sh.removeLocked(ss)
	sh.mu.Unlock()
}

func (sh *sseHandler) removeLocked(ss *sseSession) {
	if ss.removed {
		return
	}
	ss.removed = true
	if sh.sessions[ss.id] == ss {
		delete(sh.sessions, ss.id)
	}
	ss.q.UnlinkIdle(ss)
	ss.q.count--
	if ss.q.count == 0 && sh.quotas[ss.q.key] == ss.q {
		delete(sh.quotas, ss.q.key)
	}
}

// touch makes ss its party's most recently used session.
func (sh *sseHandler) touch(ss *sseSession) {
	sh.mu.Lock()
	if ss.Idle() {
		ss.q.UnlinkIdle(ss)
		ss.q.PushIdle(ss)
	}
	sh.mu.Unlock()
}

// busyLocked counts a request starting (+1) or ending (-1): a session
// with one in progress is never ended to make room (see admitRequest).
func (sh *sseHandler) busyLocked(ss *sseSession, d int) {
	ss.busy += d
	switch {
	case ss.removed:
	case ss.busy == 0:
		ss.q.PushIdle(ss)
	case d > 0:
		ss.q.UnlinkIdle(ss)
	}
}

func (ss *sseSession) IdleLink() *idlelist.Link[sseSession] { return &ss.Link }

// ---- one session ----

// end stops the session's stream: nothing more is queued, and its
// goroutine returns (whereupon the session ends: see sseHandler.open).
// abort also cuts a write in progress (sse.Writer.Abort, which never
// waits on it), for a session ended by someone else than its stream.
func (ss *sseSession) end(abort bool) {
	ss.endOnce.Do(func() {
		ss.mu.Lock()
		ss.closed = true
		clear(ss.queue)
		ss.queue, ss.qbytes = nil, 0
		inflight := ss.inflight
		ss.inflight = nil
		ss.mu.Unlock()
		close(ss.done)
		for _, cancel := range inflight {
			cancel()
		}
	})
	if abort {
		ss.wr.Abort()
	}
}

func (ss *sseSession) isClosed() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.closed
}

func (ss *sseSession) kick() {
	select {
	case ss.wake <- struct{}{}:
	default:
	}
}

// send queues one message for the stream. An empty queue always takes
// it (a message of any size gets through); a client so far behind that
// the queue would pass its bound loses the stream, and the session.
// msg is kept as is: callers hand over a slice they never modify.
func (ss *sseSession) send(msg []byte) error {
	n := len(msg) + sse.EntryOverhead
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return errSSEStreamEnded
	}
	if len(ss.queue) > 0 && ss.qbytes+n > ss.sh.maxQueue {
		ss.mu.Unlock()
		ss.sh.s.log.Warn("mcp: HTTP+SSE stream dropped: the client does not read", "session", ss.id)
		ss.end(true)
		return errSSEStreamEnded
	}
	ss.queue = append(ss.queue, msg)
	ss.qbytes += n
	ss.mu.Unlock()
	ss.kick()
	return nil
}

func (ss *sseSession) addInflight(key string, cancel context.CancelFunc) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	if ss.inflight == nil {
		ss.inflight = make(map[string]context.CancelFunc)
	}
	if _, dup := ss.inflight[key]; dup {
		return false
	}
	ss.inflight[key] = cancel
	return true
}

func (ss *sseSession) removeInflight(key string) {
	ss.mu.Lock()
	delete(ss.inflight, key)
	ss.mu.Unlock()
}

// cancelled handles notifications/cancelled: the named request's
// context is cancelled and nothing more is sent for it.
func (ss *sseSession) cancelled(params []byte) {
	key := cancelledRequestKey(params)
	ss.mu.Lock()
	cancel := ss.inflight[key]
	ss.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
