package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// fetched again; zero means one hour. A token naming a key not in the
	// set triggers a fetch too, at most once per MinRefreshInterval.
	RefreshInterval time.Duration
	// MinRefreshInterval spaces fetches caused by unknown key ids (the
	// first is immediate: a key just rotated in); zero means one minute.
	MinRefreshInterval time.Duration
	// HTTPClient fetches the key set; nil means a client with a 10 s
	// timeout.
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
// separated) or scp (array).
type JWTVerifier struct {
	o JWTOptions

	mu      sync.Mutex
	keys    *jose.JSONWebKeySet
	fetched time.Time // of keys
	unknown time.Time // the last fetch caused by an unknown key id
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
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
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
}

// Verify checks token and returns what it grants.
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

// key returns the key kid names for alg, fetching the set when it is
// stale or (at most once per MinRefreshInterval) when kid is unknown.
func (v *JWTVerifier) key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.o.Now()
	if v.keys == nil || now.Sub(v.fetched) > v.o.RefreshInterval {
		if err := v.fetchLocked(ctx, now); err != nil && v.keys == nil {
			return nil, err
		}
	}
	if k := pick(v.keys, kid, alg); k != nil {
		return k, nil
	}
	if v.unknown.IsZero() || now.Sub(v.unknown) >= v.o.MinRefreshInterval {
		v.unknown = now
		if err := v.fetchLocked(ctx, now); err != nil {
			return nil, err
		}
		if k := pick(v.keys, kid, alg); k != nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%w: no key %q for %s in the issuer's key set", ErrInvalidToken, kid, alg)
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

func (v *JWTVerifier) fetchLocked(ctx context.Context, now time.Time) error {
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, v.o.HTTPClient, v.o.JWKSURL, v.o.MaxResponseBytes, &set); err != nil {
		return fmt.Errorf("auth: fetching the key set: %w", err)
	}
	v.keys, v.fetched = &set, now
	return nil
}
