package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// JWTOptions configure a JWTVerifier.
type JWTOptions struct {
	// Issuer must equal the token's iss. Required.
	Issuer string
	// Audience must be among the token's aud: this resource server's
	// canonical URL (RFC 8707), so that a token minted for another
	// resource is refused. Required.
	Audience string
	// JWKSURL is where the issuer publishes its signing keys. Required.
	JWKSURL string
	// Algorithms are the accepted signature algorithms; nil means RS256,
	// PS256, ES256 and EdDSA. "none" and HMAC algorithms are never
	// accepted.
	Algorithms []jose.SignatureAlgorithm
	// Leeway is the clock skew allowed on exp, nbf and iat; zero means
	// one minute.
	Leeway time.Duration
	// RefreshInterval is how long fetched keys are used before they are
	// fetched again; zero means one hour. The refetch of stale keys runs
	// in the background: tokens keep verifying with the keys at hand
	// meanwhile, and a failed refetch keeps them (see JWTVerifier). A
	// token naming a key not in the set triggers a fetch too, at most
	// once per MinRefreshInterval.
	RefreshInterval time.Duration
	// MinRefreshInterval spaces fetches caused by unknown key ids (the
	// first is immediate: a key just rotated in), and caps the backoff
	// after failed fetches; zero means one minute.
	MinRefreshInterval time.Duration
	// FetchTimeout bounds each fetch of the key set, and so the longest
	// a Verify call ever waits for one; zero means 10 s.
	FetchTimeout time.Duration
	// HTTPClient fetches the key set; nil means a client with a 10 s
	// timeout. The verifier uses a copy that follows no redirects (a 3xx
	// answer is a failed fetch, ErrRedirect); the caller's client is
	// not modified.
	HTTPClient *http.Client
	// MaxResponseBytes bounds the key set document; zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// JWTVerifier verifies JWT access tokens (RFC 9068 profile) against an
// issuer's JSON Web Key Set: signature, iss, aud, exp (required), nbf,
// iat. The token info it returns takes the client id from client_id
// (else azp), the subject from sub, the scopes from scope (space
// separated) or scp (array), and passes the confirmation claim cnf (RFC
// 7800; cnf.jkt binds a DPoP token to its key) on in Extra["cnf"].
//
// An outage of the key set endpoint is not an outage of the resource
// server. Keys are fetched at most one fetch at a time, in the
// background, never under the lock Verify takes: concurrent callers
// share the one fetch in flight. Stale keys are refetched in the
// background while tokens go on verifying with them, and a failed fetch
// (an error, a timeout, a non-200 answer, a redirect, a set without
// keys) keeps the keys at hand. After a failure no fetch is made for a
// backoff that doubles from one second up to MinRefreshInterval, with
// jitter, until a fetch succeeds. Only a caller with no usable key (no
// key set fetched yet, or a key id not in the set) waits, for at most
// the fetch in flight (bounded by FetchTimeout) or its own ctx.
type JWTVerifier struct {
	o JWTOptions

	mu       sync.Mutex
	keys     *jose.JSONWebKeySet
	fetched  time.Time // of keys
	unknown  time.Time // the last fetch caused by an unknown key id
	flight   *keyFetch // the fetch in progress, nil when none
	failures int       // consecutive failed fetches
	retryAt  time.Time // no fetch before this after a failure
	lastErr  error     // of the last fetch, nil after a success
}

// keyFetch is one fetch of the key set; concurrent callers wait for the
// same one.
type keyFetch struct {
	done chan struct{} // closed when the fetch has ended
	err  error         // set before done is closed
}

// NewJWTVerifier returns a verifier, or an error when a required option
// is missing or an algorithm is not an asymmetric signature.
func NewJWTVerifier(opts JWTOptions) (*JWTVerifier, error) {
	if opts.Issuer == "" || opts.Audience == "" || opts.JWKSURL == "" {
		return nil, errors.New("auth: JWTOptions needs Issuer, Audience and JWKSURL")
	}
	if opts.Algorithms == nil {
		opts.Algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA}
	}
	for _, a := range opts.Algorithms {
		switch a {
		case jose.HS256, jose.HS384, jose.HS512, "none", "":
			return nil, fmt.Errorf("auth: algorithm %q is not accepted for access tokens", a)
		}
	}
	if opts.Leeway == 0 {
		opts.Leeway = time.Minute
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = time.Hour
	}
	if opts.MinRefreshInterval <= 0 {
		opts.MinRefreshInterval = time.Minute
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = 10 * time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	opts.HTTPClient = noRedirects(opts.HTTPClient)
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &JWTVerifier{o: opts}, nil
}

// accessClaims are the claims read beyond the registered ones.
type accessClaims struct {
	ClientID string          `json:"client_id"`
	AZP      string          `json:"azp"`
	Scope    string          `json:"scope"`
	SCP      json.RawMessage `json:"scp"`
	CNF      map[string]any  `json:"cnf"`
}

// Verify checks token and returns what it grants. It waits for the
// key set only when it has no usable key for the token (none fetched
// yet, or an unknown key id), and then for one fetch at most, bounded by
// FetchTimeout, or until ctx is done.
func (v *JWTVerifier) Verify(ctx context.Context, token string) (*mcp.TokenInfo, error) {
	if len(token) > 16<<10 {
		return nil, fmt.Errorf("%w: token too long", ErrInvalidToken)
	}
	tok, err := jwt.ParseSigned(token, v.o.Algorithms)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: one signature expected", ErrInvalidToken)
	}
	h := tok.Headers[0]
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != "" && !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") && !strings.EqualFold(typ, "JWT") {
		return nil, fmt.Errorf("%w: typ %q is not an access token", ErrInvalidToken, typ)
	}
	key, err := v.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	var extra accessClaims
	if err := tok.Claims(key.Key, &std, &extra); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if std.Expiry == nil {
		return nil, fmt.Errorf("%w: no exp", ErrInvalidToken)
	}
	now := v.o.Now()
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.o.Issuer, AnyAudience: jwt.Audience{v.o.Audience}, Time: now}, v.o.Leeway); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	info := &mcp.TokenInfo{ClientID: extra.ClientID, Issuer: std.Issuer, Subject: std.Subject, Expiry: std.Expiry.Time()}
	if info.ClientID == "" {
		info.ClientID = extra.AZP
	}
	if extra.CNF != nil {
		if jkt, ok := extra.CNF["jkt"]; ok {
			if s, _ := jkt.(string); s == "" {
				return nil, fmt.Errorf("%w: cnf.jkt is not a thumbprint", ErrInvalidToken)
			}
		}
		info.Extra = map[string]any{"cnf": extra.CNF}
	}
	info.Scopes = strings.Fields(extra.Scope)
	if len(info.Scopes) == 0 && len(extra.SCP) > 0 {
		var scp []string
		if json.Unmarshal(extra.SCP, &scp) != nil {
			var one string
			if json.Unmarshal(extra.SCP, &one) != nil {
				return nil, fmt.Errorf("%w: scp is neither a list nor a string", ErrInvalidToken)
			}
			scp = strings.Fields(one)
		}
		info.Scopes = scp
	}
	return info, nil
}

// key returns the key kid names for alg. Stale keys start a background
// refetch and are used meanwhile; a caller without a usable key waits
// for the fetch in flight, starting one when none is (for an unknown kid
// at most once per MinRefreshInterval), never during a backoff.
func (v *JWTVerifier) key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	v.mu.Lock()
	now := v.o.Now()
	if v.keys == nil || now.Sub(v.fetched) > v.o.RefreshInterval {
		v.startFetchLocked(ctx, now)
	}
	if k := pick(v.keys, kid, alg); k != nil {
		v.mu.Unlock()
		return k, nil
	}
	have := v.keys != nil
	f := v.flight
	if f == nil && have && (v.unknown.IsZero() || now.Sub(v.unknown) >= v.o.MinRefreshInterval) {
		if f = v.startFetchLocked(ctx, now); f != nil {
			v.unknown = now
		}
	}
	lastErr, retryAt := v.lastErr, v.retryAt
	v.mu.Unlock()
	if f == nil {
		if !have {
			return nil, fmt.Errorf("auth: the key set is unavailable (next fetch in %s): %w", retryAt.Sub(now).Round(time.Millisecond), lastErr)
		}
		return nil, fmt.Errorf("%w: no key %q for %s in the issuer's key set", ErrInvalidToken, kid, alg)
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("auth: waiting for the key set: %w", context.Cause(ctx))
	}
	v.mu.Lock()
	k := pick(v.keys, kid, alg)
	have = v.keys != nil
	v.mu.Unlock()
	switch {
	case k != nil:
		return k, nil
	case !have && f.err != nil:
		return nil, f.err
	case f.err != nil:
		return nil, fmt.Errorf("%w: no key %q for %s in the issuer's key set (refetching it failed: %v)", ErrInvalidToken, kid, alg, f.err)
	}
	return nil, fmt.Errorf("%w: no key %q for %s in the issuer's key set", ErrInvalidToken, kid, alg)
}

// startFetchLocked returns the fetch in flight, else starts one unless a
// failure's backoff runs until after now (then it returns nil). v.mu is
// held.
func (v *JWTVerifier) startFetchLocked(ctx context.Context, now time.Time) *keyFetch {
	if v.flight != nil {
		return v.flight
	}
	if now.Before(v.retryAt) {
		return nil
	}
	f := &keyFetch{done: make(chan struct{})}
	v.flight = f
	// The fetch outlives the caller that started it (others may be
	// waiting for it): its own timeout, not the caller's cancellation.
	go v.fetch(context.WithoutCancel(ctx), f)
	return f
}

// fetch fetches the key set, without v.mu held, and records the outcome:
// the new keys, or the failure and the backoff before the next fetch
// (the keys at hand stay).
func (v *JWTVerifier) fetch(ctx context.Context, f *keyFetch) {
	ctx, cancel := context.WithTimeout(ctx, v.o.FetchTimeout)
	defer cancel()
	var set jose.JSONWebKeySet
	err := getJSON(ctx, v.o.HTTPClient, v.o.JWKSURL, v.o.MaxResponseBytes, &set)
	if err == nil && len(set.Keys) == 0 {
		err = errors.New("the key set has no keys")
	}
	v.mu.Lock()
	now := v.o.Now()
	if err != nil {
		f.err = fmt.Errorf("auth: fetching the key set: %w", err)
		v.failures++
		v.retryAt = now.Add(v.backoff(v.failures))
		v.lastErr = f.err
	} else {
		v.keys, v.fetched = &set, now
		v.failures, v.retryAt, v.lastErr = 0, time.Time{}, nil
	}
	v.flight = nil
	v.mu.Unlock()
	close(f.done)
}

// backoff is the pause after the nth consecutive failed fetch: one
// second doubling per failure, at most MinRefreshInterval, jittered to
// between half of that and all of it.
func (v *JWTVerifier) backoff(n int) time.Duration {
	d, ceiling := time.Second, v.o.MinRefreshInterval
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	return d/2 + rand.N(d/2+1)
}

// pick finds the signing key kid (any key when kid is empty and the set
// has exactly one usable) whose algorithm, if stated, is alg.
func pick(set *jose.JSONWebKeySet, kid, alg string) *jose.JSONWebKey {
	if set == nil {
		return nil
	}
	var found *jose.JSONWebKey
	n := 0
	for i := range set.Keys {
		k := &set.Keys[i]
		if (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != alg) || !k.IsPublic() {
			continue
		}
		if kid != "" && k.KeyID == kid {
			return k
		}
		if kid == "" {
			found = k
			n++
		}
	}
	if n == 1 {
		return found
	}
	return nil
}
