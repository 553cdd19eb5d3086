package mcp

import (
	"strings"
	"time"
)

// What a server reports beyond its requests, for metrics: sessions of
// the earlier revisions opening and closing, streams held open, states
// rejected (by cause, which never reaches the wire), a single-use store
// that could not be asked, what extensions report (Server.Report: the
// tasks extension's tasks starting and ending). Requests
// themselves are seen by middleware.

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventSessionOpened: a session of an earlier revision began
	// (initialize). Revision and SessionID say which.
	EventSessionOpened EventKind = iota + 1
	// EventSessionClosed: it ended (DELETE, expiry, eviction, the end of
	// its connection or stream, Close); Duration is its lifetime.
	EventSessionClosed
	// EventStreamOpened and EventStreamClosed: a stream that stays open
	// (Stream: "listen" for subscriptions/listen, "get" for a session's
	// GET stream, "http+sse" for an HTTP+SSE session's stream).
	EventStreamOpened
	EventStreamClosed
	// EventStateRejected: a requestState was refused with the fixed
	// error; Cause is one of the StateCause values.
	EventStateRejected
	// EventGuardUnavailable: the single-use store could not be asked; the
	// leg was answered ErrTemporarilyUnavailable.
	EventGuardUnavailable
	// EventExtension: an extension reported something (Server.Report):
	// Extension names it, Name says what happened in its own words,
	// Status gives a detail (mcp/tasks: "task.started", and "task.ended"
	// with the terminal status).
	EventExtension
)

// StateCause says why a requestState was rejected (Event.Cause of an
// EventStateRejected).
type StateCause string

// The causes of EventStateRejected.
const (
	StateCauseMalformed  StateCause = "malformed"  // not a string, bad encoding, bad claims, too long
	StateCauseKey        StateCause = "key"        // sealed with a key the server does not hold
	StateCauseSeal       StateCause = "seal"       // the seal does not verify (tampered)
	StateCauseExpired    StateCause = "expired"    // past its TTL, or issued in the future
	StateCauseBinding    StateCause = "binding"    // another method, target, arguments or audience
	StateCausePrincipal  StateCause = "principal"  // another principal
	StateCauseUsed       StateCause = "used"       // single use: already used by another leg
	StateCauseGeneration StateCause = "generation" // issued before the single-use store lost its records
	StateCauseOther      StateCause = "other"
)

// Event is one report to ServerOptions.Observer.
type Event struct {
	Kind      EventKind
	Method    string        // the request's method (state and guard events)
	Cause     StateCause    // EventStateRejected
	Revision  string        // sessions
	SessionID string        // sessions
	Stream    string        // streams
	Extension string        // EventExtension
	Name      string        // EventExtension
	Status    string        // EventExtension
	Duration  time.Duration // EventSessionClosed
}

// observe reports e when the server has an observer.
func (s *Server) observe(e Event) {
	if f := s.opts.Observer; f != nil {
		f(e)
	}
}

// stateCause sorts a rejection's log reason into a StateCause.
func stateCause(reason string) StateCause {
	switch r := reason; {
	case strings.HasPrefix(r, "malformed"), strings.HasPrefix(r, "claims"), strings.Contains(r, "not a string"), strings.Contains(r, "unknown origin"), r == "no codec", strings.HasPrefix(r, "codec"), r == "unseal failed":
		return StateCauseMalformed
	case r == "unknown key":
		return StateCauseKey
	case r == "seal":
		return StateCauseSeal
	case r == "expired", r == "issued in the future":
		return StateCauseExpired
	case strings.HasSuffix(r, "mismatch") && !strings.HasPrefix(r, "principal"):
		return StateCauseBinding
	case strings.HasPrefix(r, "principal"):
		return StateCausePrincipal
	case strings.HasPrefix(r, "state already used"):
		return StateCauseUsed
	case strings.Contains(r, "generation"):
		return StateCauseGeneration
	}
	return StateCauseOther
}
