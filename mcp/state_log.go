package mcp

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// Logging a rejected requestState. The wire error is the one fixed
// ErrInvalidRequestState whatever the cause (no oracle); the server's log
// says what happened and, where an operator can do something, what: a
// restart of a server with a per-process key, a key id the ring does not
// hold, an expired round. One line per cause per stateLogInterval at
// most, counting the rejections it stood for, so that a flood of bad
// states cannot flood the log. The Observer still sees every rejection.

// stateLogInterval is the least time between two log lines of one cause.
const stateLogInterval = time.Minute

// rejectLog paces the log lines of rejections, by cause.
type rejectLog struct {
	mu         sync.Mutex
	last       map[StateCause]time.Time
	suppressed map[StateCause]int
}

// allow reports whether a rejection of cause is logged now, and how many
// of its cause went unlogged since the last line.
func (l *rejectLog) allow(cause StateCause, now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.suppressed = map[StateCause]time.Time{}, map[StateCause]int{}
	}
	if t, ok := l.last[cause]; ok && now.Sub(t) < stateLogInterval {
		l.suppressed[cause]++
		return 0, false
	}
	n := l.suppressed[cause]
	l.last[cause], l.suppressed[cause] = now, 0
	return n, true
}

// rejectKey refuses a state with the fixed error, reporting reason (and
// the key id the token names, for an unknown key) to the observer and,
// paced, to the log.
func (b *stateBoundary) rejectKey(method, reason, keyID string) (Result, error) {
	cause := stateCause(reason)
	b.s.observe(Event{Kind: EventStateRejected, Method: method, Cause: cause})
	if n, ok := b.logs.allow(cause, time.Now()); ok {
		// Not under the lock: the handler may write to anything.
		b.logRejection(method, reason, cause, keyID, n)
	}
	return nil, ErrInvalidRequestState
}

func (b *stateBoundary) logRejection(method, reason string, cause StateCause, keyID string, suppressed int) {
	why, fix := b.explain(reason, cause, keyID)
	var msg strings.Builder
	msg.WriteString("requestState rejected on " + method + ": " + reason)
	if why != "" {
		msg.WriteString("; " + why)
	}
	if fix != "" {
		msg.WriteString(". Fix: " + fix)
	}
	attrs := []any{slog.String("method", method), slog.String("reason", reason), slog.String("cause", string(cause))}
	if keyID != "" {
		attrs = append(attrs, slog.String("keyID", keyID))
	}
	if suppressed > 0 {
		msg.WriteString(" (" + strconv.Itoa(suppressed) + " more rejections of this cause since the last report)")
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	b.s.log.Warn(msg.String(), attrs...)
}

// explain says why a state of cause was rejected and what fixes it, for
// the log ("" where there is nothing to say).
func (b *stateBoundary) explain(reason string, cause StateCause, keyID string) (why, fix string) {
	ttl := b.sealer.TTL.String()
	switch cause {
	case StateCauseKey:
		if b.perProcessKey {
			return "this server seals request state with a random key made when its process started " +
					"(RequestStateOptions sets no Keys or Codec), so after a restart, or on another instance, the states sealed before " +
					"cannot be opened and every call in flight has to start again",
				"give the server keys that outlive the process and are the same on every instance: RequestStateOptions.Keys, " +
					"or RequestStateOptions.Codec set to the Ring of a requeststate.KeyFile (the -state-key-file flag of examples/fleet)"
		}
		fix = "when a key stops sealing, keep it in the ring (after the new sealing key) for at least the state TTL (" + ttl +
			") before removing it; give every instance behind this endpoint the same keys"
		if ring, ok := b.sealer.Codec.(*requeststate.KeyRing); ok && keyID != "" {
			return fmt.Sprintf("the state names key id %s, which the key ring does not hold (it holds %s): the key was removed "+
				"before the states it sealed expired, or the state was sealed by a server with other keys",
				keyID, strings.Join(ring.KeyIDs(), ", ")), fix
		}
		return "the codec does not hold the key the state was sealed with: the key was removed before the states it sealed " +
			"expired, or the state was sealed by a server with other keys", fix
	case StateCauseExpired:
		if reason == "issued in the future" {
			return "the state was sealed by a server whose clock runs more than " + requeststate.MaxFutureSkew.String() +
				" ahead of this one's", "keep the servers' clocks in sync"
		}
		return "the round was answered after its TTL (" + ttl + "): the user took longer than that, or this server's clock " +
				"runs ahead of the one that sealed it",
			"raise RequestStateOptions.TTL if answers take that long; keep the servers' clocks in sync"
	case StateCauseSeal:
		return "the token names a key this server holds but does not verify under it: it was altered, or sealed by another " +
			"key with the same id", ""
	case StateCauseMalformed:
		if strings.Contains(reason, "not a string") {
			return "", ""
		}
		return "the token is not one this server's codec produces (altered, cut, or not a state at all)", ""
	case StateCauseBinding:
		if reason == "audience mismatch" {
			return "the state was sealed for another audience: a server with another name (or RequestStateOptions.Audience) " +
				"that shares these keys", ""
		}
		return "the state was issued for another tool, prompt, resource or other arguments than the request that carried it", ""
	case StateCausePrincipal:
		return "the state was issued to another principal, or the request's principal could not be worked out", ""
	case StateCauseUsed:
		return "the state is single-use and another leg used it already", ""
	case StateCauseGeneration:
		return "the state was issued before the single-use store lost its records", ""
	}
	return "", ""
}
