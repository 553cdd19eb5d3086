package mcp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The bounds of what the sessions of earlier revisions hold over HTTP
// (Streamable HTTP 2025 sessions and HTTP+SSE): a session's request
// outlives its POST, so the requests one session, and one party, has in
// flight are counted (LegacyHTTPOptions.MaxRequestsPerSession and
// MaxRequestsPerPrincipal), a request past them is refused before it
// runs with the retryable ErrTemporarilyUnavailable, and a live question
// waits no longer than ServerOptions.LegacyQuestionTimeout. The counts
// sit beside the session quotas, under the same registry lock.

const (
	defaultRequestsPerSession   = maxBatchMessages // a full 2025-03-26 batch fits
	defaultRequestsPerPrincipal = 256
	defaultQuestionTimeout      = 5 * time.Minute

	// busyRetryDelay is what a request refused at a bound is told to
	// wait: long enough for one of the party's requests to end.
	busyRetryDelay = time.Second

	// codeRequestTimeout is the code of a question with no answer in
	// time (the JSON-RPC code MCP implementations use for a timeout).
	codeRequestTimeout = -32001
)

// requestBounds returns the in-flight bounds of o, defaults applied.
func requestBounds(o LegacyHTTPOptions) (perSession, perParty int) {
	perSession, perParty = o.MaxRequestsPerSession, o.MaxRequestsPerPrincipal
	if perSession <= 0 {
		perSession = defaultRequestsPerSession
	}
	if perParty <= 0 {
		perParty = defaultRequestsPerPrincipal
	}
	return perSession, perParty
}

// questionTimeout is ServerOptions.LegacyQuestionTimeout, default applied.
func (s *Server) questionTimeout() time.Duration {
	if d := s.opts.LegacyQuestionTimeout; d > 0 {
		return d
	}
	return defaultQuestionTimeout
}

// tooManyRequests is the answer to a request past a bound:
// ErrTemporarilyUnavailable (its code, message and data, so that
// errors.Is and the client's retryAfter recognise it), with what bound it hit.
func tooManyRequests(session bool, bound int) *Error {
	why := "too many requests in flight for this client (at most " + strconv.Itoa(bound) + ", all its sessions together): retry once one of them ended"
	if session {
		why = "too many requests in flight on this session (at most " + strconv.Itoa(bound) + "): retry once one of them ended"
	}
	return jsonrpc.NewErrorData(codeTemporarilyUnavailable, ErrTemporarilyUnavailable.Message, struct {
		Reason       string `json:"reason"`
		RetryAfterMs int64  `json:"retryAfterMs"`
		Detail       string `json:"detail"`
	}{reasonUnavailable, busyRetryDelay.Milliseconds(), why})
}

// writeTooMany answers a POST whose request (or every request of whose
// batch) was refused at a bound: 503 with Retry-After.
func writeTooMany(w http.ResponseWriter, id jsonrpc.ID, e *Error) {
	w.Header().Set("Retry-After", retryAfterHeader(busyRetryDelay))
	writeHTTPError(w, http.StatusServiceUnavailable, id, e)
}

// ---- Streamable HTTP sessions (under lh.mu) ----

// admitRequest counts one request of hs in; at the session's bound or
// its party's it counts nothing and returns the refusal.
func (hs *httpSession) admitRequest() *Error {
	lh := hs.lh
	lh.mu.Lock()
	defer lh.mu.Unlock()
	switch {
	case hs.running >= lh.opts.MaxRequestsPerSession:
		return tooManyRequests(true, lh.opts.MaxRequestsPerSession)
	case hs.q.running >= lh.opts.MaxRequestsPerPrincipal:
		return tooManyRequests(false, lh.opts.MaxRequestsPerPrincipal)
	}
	hs.running++
	hs.q.running++
	return nil
}

// releaseRequest counts a request of hs out (its handler returned, or
// it never ran).
func (hs *httpSession) releaseRequest() {
	lh := hs.lh
	lh.mu.Lock()
	hs.running--
	hs.q.running--
	lh.mu.Unlock()
}

// requestsInFlight reports the requests counted in on the handler's
// sessions, all parties together (tests).
func (lh *legacyHTTP) requestsInFlight() int {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	n := 0
	for _, q := range lh.quotas {
		n += q.running
	}
	return n
}

// ---- HTTP+SSE sessions (under sh.mu) ----

// admitRequest counts one request of ss in (busy, which also keeps the
// session from being ended to make room); at the session's bound or its
// party's it counts nothing and returns the refusal.
func (sh *sseHandler) admitRequest(ss *sseSession) *Error {
	perSession, perParty := requestBounds(sh.opts.Legacy)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch {
	case ss.busy >= perSession:
		return tooManyRequests(true, perSession)
	case ss.q.running >= perParty:
		return tooManyRequests(false, perParty)
	}
	ss.q.running++
	sh.busyLocked(ss, 1)
	return nil
}

// releaseRequest counts a request of ss out.
func (sh *sseHandler) releaseRequest(ss *sseSession) {
	sh.mu.Lock()
	ss.q.running--
	sh.busyLocked(ss, -1)
	sh.mu.Unlock()
}

// requestsInFlight reports the requests counted in on the handler's
// sessions, all parties together (tests).
func (sh *sseHandler) requestsInFlight() int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := 0
	for _, q := range sh.quotas {
		n += q.running
	}
	return n
}
