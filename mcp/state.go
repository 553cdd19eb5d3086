package mcp

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// The request-state boundary: middleware that sits outside every user
// middleware and handler. Inbound, it verifies every non-null
// requestState of tools/call, prompts/get and resources/read (also for
// handlers that never mint one) and hands the handler the plaintext;
// outbound, it seals the plaintext state of every InputRequiredResult,
// round after round, with a fresh expiry. Handlers never see a token.

// DefaultStateTTL bounds the time a client has to answer one round.
const DefaultStateTTL = 10 * time.Minute

// RequestStateOptions configure the sealing of requestState. The zero
// value seals with a random key made when the server starts, which is
// right for stdio and for a single HTTP process. A fleet (or a server
// that must accept rounds across restarts) sets Keys or Codec.
type RequestStateOptions struct {
	// Keys are shared secret keys, each at least 32 bytes, no duplicates:
	// the first seals, all verify (see package requeststate for rotation).
	// To change keys while the server runs, set Codec to a
	// *requeststate.KeyRing instead and call its SetKeys, or let a
	// requeststate.KeyFile keep it in step with a file.
	Keys [][]byte
	// Codec replaces the built-in AES-256-GCM key ring. Set Keys or
	// Codec, not both.
	Codec requeststate.Codec
	// TTL bounds each round; zero means DefaultStateTTL. It must not be
	// negative.
	TTL time.Duration
	// Audience is bound into every state; empty means the server's name.
	// A server with Keys or Codec needs a name or an explicit Audience.
	Audience string
	// Principal returns the identity a state is bound to. Nil means the
	// authenticated token's client id, issuer and subject when the
	// request carries a TokenInfo (see WithTokenInfo), and none
	// otherwise. An error rejects inbound states and fails outbound ones.
	Principal func(ctx context.Context) (string, error)
	// Guard, when set, makes states single-use: the first leg with a
	// state runs and its outcome is recorded; the identical leg again
	// (same state and answers, an answer lost on the way back) gets that
	// outcome without running twice; any other use is rejected with
	// ErrInvalidRequestState. When the guard's store cannot be reached
	// the leg is denied with ErrTemporarilyUnavailable (HTTP 503 with
	// Retry-After), which clients retry. See requeststate.Guard.
	Guard requeststate.Guard
	// SingleUse selects the flows the Guard applies to; nil means all.
	// (Returning false for all keeps the Guard for idempotency keys
	// alone.)
	SingleUse func(method, target string) bool
	// IdempotencyTTL is how long the outcome of a call of a tool that
	// takes an idempotency key (IdempotencyMetaKey) is kept; zero means
	// 10 minutes. The outcomes live in Guard, or, without one, in this
	// process (at most 16384 keys at a time).
	IdempotencyTTL time.Duration
	// Disabled turns the boundary off: requestState travels as the
	// handler wrote it. Only for servers that protect state themselves.
	Disabled bool
}

// TokenInfo describes the authenticated caller of a request, as
// verified by authentication middleware.
type TokenInfo struct {
	ClientID string
	Issuer   string
	Subject  string
	Scopes   []string
	Expiry   time.Time
	// Extra holds claims beyond the fields above that the verifier
	// passes on, by claim name, such as "cnf" (RFC 7800: the key a
	// DPoP-bound token is bound to, {"jkt": thumbprint}). Nil if none.
	Extra map[string]any
}

type tokenInfoKey struct{}

// WithTokenInfo returns a context carrying the verified token of the
// request; authentication middleware calls it before the MCP handler.
func WithTokenInfo(ctx context.Context, ti *TokenInfo) context.Context {
	return context.WithValue(ctx, tokenInfoKey{}, ti)
}

// TokenInfoFromContext returns the verified token of the request, or nil.
func TokenInfoFromContext(ctx context.Context) *TokenInfo {
	ti, _ := ctx.Value(tokenInfoKey{}).(*TokenInfo)
	return ti
}

func defaultPrincipal(ctx context.Context) (string, error) {
	ti := TokenInfoFromContext(ctx)
	if ti == nil {
		return "", nil
	}
	b, err := json.Marshal([3]string{ti.ClientID, ti.Issuer, ti.Subject})
	return string(b), err
}

// Origin of a sealed plaintext state: 'h' the handler (low-level form),
// 'a' the asking API; the capital forms carry the round that sealed it
// (a uvarint) before the state, so that the next leg knows its round.
// The lower-case forms are still opened (states of earlier releases in a
// rolling deploy), as round 1.
const (
	stateByHandler      = 'h'
	stateByAsker        = 'a'
	stateByHandlerRound = 'H'
	stateByAskerRound   = 'A'
)

// sealedPlain is the plaintext the boundary seals: origin, round, state.
func sealedPlain(origin byte, round int, state string) string {
	var b strings.Builder
	b.Grow(2 + binary.MaxVarintLen64 + len(state))
	b.WriteByte(origin)
	var v [binary.MaxVarintLen64]byte
	b.Write(v[:binary.PutUvarint(v[:], uint64(round))])
	b.WriteString(state)
	return b.String()
}

// openPlain splits an opened plaintext into origin ('h' or 'a'), the
// round that sealed it and the state; ok is false for an unknown one.
func openPlain(st string) (origin byte, round int, state string, ok bool) {
	if len(st) == 0 {
		return 0, 0, "", false
	}
	switch st[0] {
	case stateByHandler, stateByAsker:
		return st[0], 1, st[1:], true
	case stateByHandlerRound, stateByAskerRound:
		r, n := binary.Uvarint([]byte(st[1:min(len(st), 1+binary.MaxVarintLen64)]))
		if n <= 0 || r == 0 || r > 1<<20 {
			return 0, 0, "", false
		}
		return st[0] + ('a' - 'A'), int(r), st[1+n:], true
	}
	return 0, 0, "", false
}

type stateBoundary struct {
	// prepared is set once the guard's store recorded its generation
	// (requeststate.Preparer); lastPrepare paces the attempts.
	prepared    atomic.Bool
	lastPrepare atomic.Int64
	sealer      requeststate.Sealer
	principal   func(ctx context.Context) (string, error)
	guard       requeststate.Guard
	singleUse   func(method, target string) bool
	s           *Server
	// perProcessKey: the ring holds only a random key made at start-up
	// (no Keys or Codec), which a log of an unknown key points out.
	perProcessKey bool
	logs          rejectLog // paces the log lines of rejections
}

// newStateBoundary checks the options and builds the boundary, or nil
// when disabled.
func newStateBoundary(s *Server, o RequestStateOptions) (*stateBoundary, error) {
	if o.Disabled {
		return nil, nil
	}
	if o.TTL < 0 {
		return nil, errors.New("mcp: RequestState.TTL must be positive")
	}
	if o.TTL == 0 {
		o.TTL = DefaultStateTTL
	}
	b := &stateBoundary{s: s, principal: o.Principal, guard: o.Guard, singleUse: o.SingleUse}
	if b.principal == nil {
		b.principal = defaultPrincipal
	}
	b.sealer.TTL = o.TTL
	b.sealer.Audience = o.Audience
	switch {
	case len(o.Keys) > 0 && o.Codec != nil:
		return nil, errors.New("mcp: set RequestState.Keys or RequestState.Codec, not both")
	case len(o.Keys) > 0 || o.Codec != nil:
		if o.Audience == "" && s.impl.Name == "" {
			return nil, errors.New("mcp: a server with shared request-state keys or a codec needs a name or RequestState.Audience")
		}
		if b.sealer.Audience == "" {
			b.sealer.Audience = s.impl.Name
		}
		b.sealer.Codec = o.Codec
		if o.Codec == nil {
			ring, err := requeststate.NewKeyRing(o.Keys...)
			if err != nil {
				return nil, fmt.Errorf("mcp: RequestState.Keys: %w", err)
			}
			b.sealer.Codec = ring
		}
	default:
		// The per-process key never leaves the process; the audience
		// claim adds nothing but is kept for uniformity.
		ring, err := requeststate.NewKeyRing(requeststate.GenerateKey())
		if err != nil {
			return nil, err
		}
		b.sealer.Codec, b.perProcessKey = ring, true
		if b.sealer.Audience == "" {
			b.sealer.Audience = s.impl.Name
		}
	}
	return b, nil
}

// binding returns the retry params and binding of a carrier request.
func binding(method string, p Params) (*retryParams, requeststate.Binding) {
	switch r := p.(type) {
	case *CallToolRequest:
		return &r.retryParams, requeststate.Binding{Method: method, Target: r.Name, Arguments: r.Arguments}
	case *GetPromptRequest:
		args := r.argsRaw
		if args == nil && r.Arguments != nil {
			args, _ = json.Marshal(r.Arguments)
		}
		return &r.retryParams, requeststate.Binding{Method: method, Target: r.Name, Arguments: args}
	case *ReadResourceRequest:
		return &r.retryParams, requeststate.Binding{Method: method, Target: r.URI}
	case *ExtensionRequest: // a custom method (extension.go)
		if r.m != nil && r.m.spec.Carrier {
			return &r.retryParams, requeststate.Binding{Method: method, Target: r.Target, Arguments: r.Params}
		}
	}
	return nil, requeststate.Binding{}
}

// reject refuses a state with the fixed error; the reason goes to the
// log (paced, with what fixes it: see rejectKey) and the observer only.
func (b *stateBoundary) reject(method, reason string) (Result, error) {
	return b.rejectKey(method, reason, "")
}

func (b *stateBoundary) middleware(next ServerHandler) ServerHandler {
	return func(ctx context.Context, method string, params Params) (Result, error) {
		// A request without state (a listen stream among them) passes
		// through a small frame: bound's is large, and a held stream
		// keeps every frame below its wait.
		if !carriesState(params) {
			return next(ctx, method, params)
		}
		return b.bound(ctx, next, method, params)
	}
}

// carriesState reports whether a request of this kind may carry a
// requestState (the kinds binding binds).
func carriesState(p Params) bool {
	switch r := p.(type) {
	case *CallToolRequest, *GetPromptRequest, *ReadResourceRequest:
		return true
	case *ExtensionRequest:
		return r.m != nil && r.m.spec.Carrier
	}
	return false
}

// bound runs a request that may carry a requestState through the
// boundary: the state opened and checked, the result's state sealed.
func (b *stateBoundary) bound(ctx context.Context, next ServerHandler, method string, params Params) (Result, error) {
	rp, bind := binding(method, params)
	if rp == nil {
		return next(ctx, method, params)
	}
	var principalErr error
	bind.Principal, principalErr = b.principal(ctx)
	if sc := scopeFrom(ctx); sc != nil {
		sc.round = 1 // the first leg, unless a state says otherwise
	}
	var leg *requeststate.Leg
	switch rp.state {
	case stateInvalid:
		return b.reject(method, "requestState is not a string")
	case stateString:
		if principalErr != nil {
			return b.reject(method, "principal: "+principalErr.Error())
		}
		claims, err := b.sealer.Open(rp.RequestState, bind)
		if err != nil {
			var ie *requeststate.InvalidError
			if errors.As(err, &ie) {
				return b.rejectKey(method, ie.Reason, ie.KeyID)
			}
			return b.reject(method, "unseal failed")
		}
		// The sealed plaintext says who wrote it: 'h' the handler
		// (low-level form), 'a' the asking API.
		origin, round, st, ok := openPlain(claims.State)
		if !ok {
			return b.reject(method, "state of unknown origin")
		}
		if sc := scopeFrom(ctx); sc != nil {
			sc.round = round + 1
		}
		if b.guard != nil && (b.singleUse == nil || b.singleUse(method, bind.Target)) {
			leg = &requeststate.Leg{Token: rp.RequestState, Answers: answersDigest(rp.InputResponses),
				IssuedAt: time.UnixMilli(claims.IssuedAt), ExpiresAt: time.UnixMilli(claims.ExpiresAt)}
		}
		if origin == stateByHandler {
			rp.RequestState = st
		} else {
			rp.RequestState, rp.askState = "", []byte(st)
		}
	}
	if leg != nil {
		return b.once(ctx, method, leg, func() (Result, error) {
			res, err := next(ctx, method, params)
			return b.sealResult(ctx, method, &bind, principalErr, res, err)
		})
	}
	res, err := next(ctx, method, params)
	return b.sealResult(ctx, method, &bind, principalErr, res, err)
}

// sealResult seals the state of an InputRequiredResult the handler
// returned; other results pass as they are.
func (b *stateBoundary) sealResult(ctx context.Context, method string, bind *requeststate.Binding, principalErr error, res Result, err error) (Result, error) {
	irr, ok := res.(*InputRequiredResult)
	if err != nil || !ok || irr == nil || (irr.RequestState == "" && irr.askState == nil) {
		return res, err
	}
	round := 1
	if sc := scopeFrom(ctx); sc != nil && sc.round > 0 {
		round = sc.round
	}
	plain := sealedPlain(stateByHandlerRound, round, irr.RequestState)
	if irr.askState != nil {
		plain = sealedPlain(stateByAskerRound, round, string(irr.askState))
	}
	if principalErr != nil {
		b.s.log.Error("mcp: sealing requestState: principal", "method", method, "err", principalErr)
		return nil, errInternal
	}
	b.prepare(*bind)
	token, err := b.sealer.Seal(*bind, plain)
	if err != nil {
		b.s.log.Error("mcp: sealing requestState", "method", method, "err", err)
		return nil, errInternal
	}
	sealed := *irr
	sealed.RequestState, sealed.askState = token, nil
	return &sealed, nil
}

// prepare has a guard that needs it record its generation before the
// first state of a guarded flow is sealed (requeststate.Preparer), so
// that the state is not taken for one from before the store began.
func (b *stateBoundary) prepare(bind requeststate.Binding) {
	p, ok := b.guard.(requeststate.Preparer)
	if !ok || b.prepared.Load() || b.singleUse != nil && !b.singleUse(bind.Method, bind.Target) {
		return
	}
	now := time.Now().UnixNano()
	last := b.lastPrepare.Load()
	if now-last < int64(time.Second) || !b.lastPrepare.CompareAndSwap(last, now) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.Prepare(ctx); err != nil {
		b.s.log.Warn("requestState single-use store: recording its generation failed: "+err.Error(), "err", err)
		return
	}
	b.prepared.Store(true)
}
