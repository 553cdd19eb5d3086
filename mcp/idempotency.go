package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// Idempotent first legs (IdempotencyMetaKey). A side-effecting tool's
// first leg carries no requestState for a guard to consume, so a retry
// after a lost answer would run it again. A tool whose Meta declares the
// key lets the client name the call: the first call with a key runs and
// its complete outcome is recorded in the single-use store
// (RequestStateOptions.Guard, or one in this process), under a digest of
// the principal, the tool and the key, with a digest of the canonical
// arguments; the same call again gets the recorded outcome, byte for
// byte, without running; the key with other arguments is refused; a
// duplicate that arrives while the first still runs is told to retry
// (ErrTemporarilyUnavailable with its lease's remaining time), as a
// guarded state's leg is. Nothing is recorded for an InputRequiredResult
// (the later legs are guarded by their state), a cancelled call or a
// retryable error: the same call then runs again. Keys are honoured on
// 2026-07-28 requests only (a recorded outcome is in that encoding).

const (
	// maxIdempotencyKeyBytes bounds a key, as sent (decoded).
	maxIdempotencyKeyBytes = 255
	// idempotencyEntries bounds the keys the in-process store holds.
	idempotencyEntries = 16384
	// defaultIdempotencyTTL keeps an outcome as long as a round's state.
	defaultIdempotencyTTL = DefaultStateTTL
	// idempotencyNamespace starts the identity of a key's record, so that
	// it can never be the digest of a sealed state's token.
	idempotencyNamespace = "mcp/idempotency-key/v1"
)

var (
	errIdempotencyKeyReused = jsonrpc.NewErrorData(CodeInvalidParams, "Idempotency key already used with other arguments",
		map[string]string{"reason": "idempotency_key_reused"})
	errIdempotencyNotKept = jsonrpc.NewErrorData(CodeInvalidParams, "Idempotency key already used; the outcome of its call was not kept",
		map[string]string{"reason": "idempotency_outcome_not_kept"})
	errIdempotencyKeyInvalid = jsonrpc.NewErrorData(CodeInvalidParams, "Invalid params: _meta."+IdempotencyMetaKey+" must be a string of 1 to 255 bytes",
		map[string]string{"reason": "invalid_idempotency_key"})
)

type idempotency struct {
	s         *Server
	guard     requeststate.Guard
	principal func(ctx context.Context) (string, error)
	ttl       time.Duration
}

func newIdempotency(s *Server, o RequestStateOptions) (*idempotency, error) {
	if o.IdempotencyTTL < 0 {
		return nil, errors.New("mcp: RequestState.IdempotencyTTL must be positive")
	}
	m := &idempotency{s: s, guard: o.Guard, principal: o.Principal, ttl: o.IdempotencyTTL}
	if m.ttl == 0 {
		m.ttl = defaultIdempotencyTTL
	}
	if m.principal == nil {
		m.principal = defaultPrincipal
	}
	if m.guard == nil {
		g := requeststate.NewMemoryGuard()
		g.MaxEntries = idempotencyEntries
		m.guard = g
	}
	return m, nil
}

func (m *idempotency) middleware(next ServerHandler) ServerHandler {
	return func(ctx context.Context, method string, params Params) (Result, error) {
		p, ok := params.(*CallToolRequest)
		if !ok || !m.s.idempotent.Load() || p.state != stateAbsent || len(p.InputResponses) > 0 || p.Meta.Raw == nil {
			return next(ctx, method, params)
		}
		return m.call(ctx, next, method, p)
	}
}

// call runs a first leg of tools/call through the key it carries, if its
// tool takes one.
func (m *idempotency) call(ctx context.Context, next ServerHandler, method string, p *CallToolRequest) (Result, error) {
	key, present, valid := idempotencyKey(p.Meta.Raw)
	if !present {
		return next(ctx, method, p)
	}
	sc := scopeFrom(ctx)
	if sc == nil || !sc.era.replays() {
		return next(ctx, method, p) // a session of an earlier revision: the key is ignored
	}
	t, _ := m.s.tools.get(p.Name)
	if t == nil || !t.idempotent || !m.s.visible(ctx, FeatureTool, p.Name) {
		return next(ctx, method, p) // the key is ignored; an unknown tool is refused inside
	}
	if !valid {
		return nil, errIdempotencyKeyInvalid
	}
	principal, err := m.principal(ctx)
	if err != nil {
		m.s.log.Error("mcp: idempotency key: principal", "method", method, "tool", p.Name, "err", err)
		return nil, errInternal
	}
	digest, err := requeststate.ArgumentsDigest(p.Arguments)
	if err != nil {
		return nil, paramsError("arguments must be a JSON object without repeated members")
	}
	id, _ := json.Marshal([4]string{idempotencyNamespace, p.Name, principal, key})
	// A key has no issue time a store's generation could refuse (that
	// check is for states this fleet sealed before the store lost its
	// records): its expiry stands in, later than any generation.
	exp := time.Now().Add(m.ttl)
	leg := &requeststate.Leg{Token: string(id), IssuedAt: exp, ExpiresAt: exp}
	base64.RawURLEncoding.Decode(leg.Answers[:], []byte(digest))
	v, err := m.guard.Begin(ctx, leg)
	if err != nil {
		m.s.log.Warn("idempotency-key store unavailable on "+method+": "+err.Error(), "method", method, "tool", p.Name, "err", err)
		m.s.observe(Event{Kind: EventGuardUnavailable, Method: method})
		return nil, TemporarilyUnavailable(storeRetryDelay)
	}
	switch v.Kind {
	case requeststate.First:
	case requeststate.Replay:
		return replayOutcome(v.Outcome)
	case requeststate.Busy:
		return nil, TemporarilyUnavailable(max(v.RetryAfter, 100*time.Millisecond))
	case requeststate.Conflict:
		return nil, errIdempotencyKeyReused
	default:
		m.s.log.Warn("idempotency key refused on "+method+": "+v.Reason, "method", method, "tool", p.Name, "reason", v.Reason)
		return nil, errIdempotencyNotKept
	}
	stop := m.s.renewLease(m.guard, leg, v.Lease)
	res, err := next(ctx, method, p)
	stop()
	var outcome []byte
	if _, asked := res.(*InputRequiredResult); !asked && (ctx.Err() == nil || err == nil || !errors.Is(err, ctx.Err())) {
		outcome = m.s.encodeOutcome(res, err)
	}
	// A nil outcome releases the key: the same call runs again.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if ferr := m.guard.Finish(fctx, leg, outcome); ferr != nil {
		m.s.log.Warn("idempotency-key store: recording the outcome failed on "+method+": "+ferr.Error(), "method", method, "tool", p.Name, "err", ferr)
	}
	return res, err
}

// idempotencyKey finds the key in a request's _meta object (valid JSON,
// checked by the decoder). valid is false for a key that is not a string
// of 1 to maxIdempotencyKeyBytes bytes, or is sent twice.
func idempotencyKey(meta []byte) (key string, present, valid bool) {
	valid = true
	jsonrpc.Fields(meta, func(rawKey, v []byte) error {
		if string(jsonrpc.Key(rawKey)) != IdempotencyMetaKey {
			return nil
		}
		s, ok := jsonrpc.String(v)
		if present || !ok || s == "" || len(s) > maxIdempotencyKeyBytes {
			valid = false
			return errStopScan
		}
		key, present = s, true
		return nil
	})
	if !valid {
		return "", true, false
	}
	return key, present, true
}
