package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// Single use with a retryable leg (RequestStateOptions.Guard). The
// boundary asks the guard before the handler runs: the first leg with a
// state runs and its encoded outcome is recorded; the identical leg
// again (same state, same answers: an answer lost on the way back) gets
// that outcome without running twice; any other leg with the state is
// refused with the fixed error. A store that cannot be asked is not a
// forged state: the leg is denied with ErrTemporarilyUnavailable (HTTP
// 503 with Retry-After), and the client retries it.

// retryAfterHeader is the Retry-After value (whole seconds, at least 1)
// for a delay.
func retryAfterHeader(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// storeRetryDelay is what a leg denied for an unreachable store is told
// to wait.
const storeRetryDelay = time.Second

// answersDigest identifies the answers of a leg: the canonical JSON of
// each answer, in key order. Answers that are not valid JSON cannot
// reach here (the decoder checked them).
func answersDigest(rs InputResponses) (d [16]byte) {
	if len(rs) == 0 {
		return d
	}
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := make([]byte, 0, 256)
	for _, k := range keys {
		b = jsonrpc.AppendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = requeststate.AppendCanonical(b, rs[k]); err != nil {
			b = append(b, rs[k]...)
		}
		b = append(b, ',')
	}
	sum := sha256.Sum256(b)
	copy(d[:], sum[:])
	return d
}

// Outcome records: 'r' and the result object, or 'e' and the error.
const (
	outcomeResult = 'r'
	outcomeError  = 'e'
)

// once runs a guarded leg (see the top of this file).
func (b *stateBoundary) once(ctx context.Context, method string, leg *requeststate.Leg, run func() (Result, error)) (Result, error) {
	v, err := b.guard.Begin(ctx, leg)
	if err != nil {
		b.s.log.Warn("requestState single-use store unavailable on "+method+": "+err.Error(), "method", method, "err", err)
		b.s.observe(Event{Kind: EventGuardUnavailable, Method: method})
		return nil, TemporarilyUnavailable(storeRetryDelay)
	}
	switch v.Kind {
	case requeststate.First:
	case requeststate.Replay:
		return replayOutcome(v.Outcome)
	case requeststate.Busy:
		return nil, TemporarilyUnavailable(max(v.RetryAfter, 100*time.Millisecond))
	default:
		reason := v.Reason
		if reason == "" {
			reason = "state already used"
		}
		return b.reject(method, reason)
	}
	stop := b.s.renewLease(b.guard, leg, v.Lease)
	res, err := run()
	stop()
	// The outcome is recorded even when the client has gone away: that
	// is the answer its retry needs.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var outcome []byte
	if ctx.Err() == nil || err == nil || !errors.Is(err, ctx.Err()) {
		outcome = b.s.encodeOutcome(res, err)
	}
	// nil outcome (the leg was cancelled, or its result could not be
	// encoded) releases the claim: the identical retry runs it again.
	if ferr := b.guard.Finish(fctx, leg, outcome); ferr != nil {
		b.s.log.Warn("requestState single-use store: recording the outcome failed on "+method+": "+ferr.Error(), "method", method, "err", ferr)
	}
	return res, err
}

// renewLease keeps the lease of a running leg with guard g, every third
// of the lease, until the returned func is called. A leg that ends
// sooner costs one stopped timer.
func (s *Server) renewLease(g requeststate.Guard, leg *requeststate.Leg, lease time.Duration) (stop func()) {
	if lease <= 0 {
		lease = requeststate.DefaultLease
	}
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	t = time.AfterFunc(lease/3, func() {
		ctx, cancel := context.WithTimeout(context.Background(), lease/3)
		err := g.Renew(ctx, leg)
		cancel()
		if err != nil {
			s.log.Warn("requestState single-use store: renewing a lease failed: "+err.Error(), "err", err)
		}
		mu.Lock()
		if !stopped {
			t.Reset(lease / 3)
		}
		mu.Unlock()
	})
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// encodeOutcome encodes what the client receives for res, err; nil when
// it cannot be recorded.
func (s *Server) encodeOutcome(res Result, err error) []byte {
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			var ue *unavailableError
			if errors.As(err, &ue) {
				return nil // a retryable answer is not an outcome
			}
			e = errInternal
		}
		if e.Code == codeTemporarilyUnavailable {
			return nil
		}
		b, merr := json.Marshal(e)
		if merr != nil {
			return nil
		}
		return append([]byte{outcomeError}, b...)
	}
	if res == nil {
		return nil
	}
	out, eerr := s.appendResultBody([]byte{outcomeResult}, res)
	if eerr != nil {
		return nil
	}
	return out
}

// replayOutcome turns a recorded outcome back into what the chain
// returns.
func replayOutcome(o []byte) (Result, error) {
	if len(o) < 2 {
		return nil, errInternal
	}
	switch o[0] {
	case outcomeResult:
		return replayedResult(o[1:]), nil
	case outcomeError:
		e := new(Error)
		if json.Unmarshal(o[1:], e) != nil {
			return nil, errInternal
		}
		return nil, e
	}
	return nil, errInternal
}
