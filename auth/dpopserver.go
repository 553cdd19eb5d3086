package auth

import (
	"container/list"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The resource-server half of DPoP (RFC 9449): RequireBearer with
// BearerOptions.DPoP verifies the proof that comes with a DPoP-bound
// token. The client half (proofs, nonces) is in dpop.go.

// maxDPoPProofBytes bounds a DPoP header: a proof with an RSA 4096 key
// is under 2 KiB.
const maxDPoPProofBytes = 8 << 10

// maxDPoPJTI bounds the jti claim of a proof.
const maxDPoPJTI = 256

// DefaultReplayCacheEntries is the size of the MemoryReplayCache that
// RequireBearer makes when DPoPVerifyOptions.ReplayCache is nil.
const DefaultReplayCacheEntries = 100_000

// DPoPVerifyOptions turn on DPoP at RequireBearer (BearerOptions.DPoP):
// "Authorization: DPoP <token>" is accepted with a "DPoP" proof header,
// and verified as RFC 9449 section 4.3 says: one compact JWS of typ
// dpop+jwt, signed with an allowed asymmetric algorithm by the public
// key in its jwk header; that key's RFC 7638 thumbprint equal to the
// token's cnf.jkt; htm the request method; htu the request URL without
// query and fragment; iat recent; ath the hash of the token; jti not
// seen before (ReplayCache); nonce the server's, with NonceKey.
//
// The verifier must say which key a token is bound to: TokenInfo.Extra
// "cnf", a map with the "jkt" thumbprint (JWTVerifier sets it from the
// token's cnf claim). A token bound to a key is refused as a Bearer
// token.
type DPoPVerifyOptions struct {
	// Required refuses Bearer tokens: only DPoP-bound tokens with their
	// proof pass, and challenges name DPoP alone. False accepts both.
	Required bool
	// Algorithms are the accepted proof algorithms (the algs of the
	// challenge). Nil means ES256, ES384, ES512, PS256, RS256 and EdDSA.
	// HMAC algorithms and "none" are never accepted.
	Algorithms []jose.SignatureAlgorithm
	// BaseURL is where clients reach this server: scheme and host (and
	// port), with the path prefix a proxy strips, if any. A proof's htu
	// must be BaseURL followed by the request's path. Empty means the
	// request's own scheme (TLS or not) and Host header: right only when
	// clients connect to this server directly. Behind a proxy set it:
	// forwarding headers are never believed.
	BaseURL string
	// MaxAge is how old a proof may be (its iat); zero means 5 minutes.
	MaxAge time.Duration
	// Leeway is the clock skew allowed on iat, both ways; zero means
	// 15 s.
	Leeway time.Duration
	// ReplayCache records the proofs accepted, so that each is accepted
	// once. Nil means a MemoryReplayCache of DefaultReplayCacheEntries,
	// of this handler alone: a fleet shares one (package redisdpop of
	// the redis module).
	ReplayCache ReplayCache
	// NonceKey, when set, turns on server nonces (RFC 9449 section 8):
	// every response carries a DPoP-Nonce, and a proof without a current
	// one is answered 401 use_dpop_nonce with a fresh one. Nonces are
	// an HMAC of the time under this key: the instances of a fleet
	// given the same key accept each other's. At least 32 bytes.
	NonceKey []byte
	// NonceLifetime is how long a nonce is current; the one before the
	// current is accepted too. Zero means one minute.
	NonceLifetime time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ReplayCache records the DPoP proofs a resource server accepted, so
// that a proof is used once (RFC 9449 section 11.1). It is safe for
// concurrent use.
type ReplayCache interface {
	// FirstUse records id until the time until (after which a proof
	// with that id is refused by its age anyway) and reports whether it
	// was not recorded before. An error refuses the request (503).
	FirstUse(ctx context.Context, id string, until time.Time) (bool, error)
}

// ErrReplayCacheFull is returned by a MemoryReplayCache that holds as
// many unexpired entries as it may.
var ErrReplayCacheFull = errors.New("auth: the DPoP replay cache is full")

// MemoryReplayCache is a ReplayCache in memory, bounded: entries leave
// when their time is up, and when it holds MaxEntries unexpired ones it
// refuses new proofs (ErrReplayCacheFull) rather than forget one that
// could then be replayed. It needs an entry for every proof of the
// window (MaxAge plus twice the Leeway): at r requests a second, about
// r × 330 with the defaults. The zero value holds
// DefaultReplayCacheEntries.
type MemoryReplayCache struct {
	// MaxEntries bounds the entries; zero means
	// DefaultReplayCacheEntries.
	MaxEntries int
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	seen  map[string]*list.Element
	order list.List // of replayEntry, oldest until first
}

type replayEntry struct {
	id    string
	until time.Time
}

// FirstUse implements ReplayCache.
func (c *MemoryReplayCache) FirstUse(_ context.Context, id string, until time.Time) (bool, error) {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	max := c.MaxEntries
	if max <= 0 {
		max = DefaultReplayCacheEntries
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]*list.Element{}
	}
	for e := c.order.Front(); e != nil; e = c.order.Front() {
		r := e.Value.(replayEntry)
		if r.until.After(now) {
			break
		}
		delete(c.seen, r.id)
		c.order.Remove(e)
	}
	if _, ok := c.seen[id]; ok {
		return false, nil
	}
	if len(c.seen) >= max {
		return false, ErrReplayCacheFull
	}
	// Keep the list ordered by until: entries come with until = now +
	// a fixed window, so this is nearly always the back.
	e := c.order.Back()
	for e != nil && e.Value.(replayEntry).until.After(until) {
		e = e.Prev()
	}
	if e == nil {
		c.seen[id] = c.order.PushFront(replayEntry{id, until})
	} else {
		c.seen[id] = c.order.InsertAfter(replayEntry{id, until}, e)
	}
	return true, nil
}

// Len returns the number of entries held (expired ones included until
// the next FirstUse).
func (c *MemoryReplayCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// dpopVerifier is DPoPVerifyOptions with the defaults applied.
type dpopVerifier struct {
	o     DPoPVerifyOptions
	base  *url.URL // nil: from the request
	algs  string   // the algs challenge parameter
	cache ReplayCache
}

func newDPoPVerifier(o *DPoPVerifyOptions) (*dpopVerifier, error) {
	v := &dpopVerifier{o: *o}
	if v.o.Algorithms == nil {
		v.o.Algorithms = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.RS256, jose.EdDSA}
	}
	names := make([]string, 0, len(v.o.Algorithms))
	for _, a := range v.o.Algorithms {
		switch a {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA:
		default:
			return nil, fmt.Errorf("algorithm %q is not an asymmetric signature algorithm", a)
		}
		names = append(names, string(a))
	}
	if len(names) == 0 {
		return nil, errors.New("no algorithm")
	}
	v.algs = strings.Join(names, " ")
	if v.o.BaseURL != "" {
		u, err := url.Parse(v.o.BaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("BaseURL %q must be an http(s) URL without query, fragment or userinfo", v.o.BaseURL)
		}
		v.base = u
	}
	if v.o.MaxAge <= 0 {
		v.o.MaxAge = 5 * time.Minute
	}
	if v.o.Leeway <= 0 {
		v.o.Leeway = 15 * time.Second
	}
	if v.o.NonceKey != nil && len(v.o.NonceKey) < 32 {
		return nil, errors.New("NonceKey must have 32 bytes at least")
	}
	if v.o.NonceLifetime <= 0 {
		v.o.NonceLifetime = time.Minute
	}
	if v.o.Now == nil {
		v.o.Now = time.Now
	}
	v.cache = v.o.ReplayCache
	if v.cache == nil {
		v.cache = &MemoryReplayCache{Now: v.o.Now}
	}
	return v, nil
}

// dpopProof is a proof whose signature checked out.
type dpopProof struct {
	claims dpopClaims
	// jkt is the thumbprint of the key that signed it.
	jkt string
}

// parseDPoPProof decodes a DPoP proof and checks what it says about
// itself: one compact JWS of typ dpop+jwt, an algorithm of algs, an
// embedded public key (no kid, x5c or jku: the key is the one in jwk)
// that verifies the signature, and the claims present with their types.
func parseDPoPProof(proof string, algs []jose.SignatureAlgorithm) (*dpopProof, error) {
	if len(proof) > maxDPoPProofBytes {
		return nil, fmt.Errorf("longer than %d bytes", maxDPoPProofBytes)
	}
	jws, err := jose.ParseSignedCompact(proof, algs)
	if err != nil {
		return nil, err
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("one signature expected")
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != "dpop+jwt" {
		return nil, fmt.Errorf("typ %q is not dpop+jwt", typ)
	}
	jwk := h.JSONWebKey
	if jwk == nil {
		return nil, errors.New("no jwk header")
	}
	if !jwk.IsPublic() || !jwk.Valid() {
		return nil, errors.New("the jwk header is not a valid public key")
	}
	switch k := jwk.Key.(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return nil, errors.New("RSA key shorter than 2048 bits")
		}
	default:
		return nil, fmt.Errorf("key type %T not accepted", jwk.Key)
	}
	payload, err := jws.Verify(jwk)
	if err != nil {
		return nil, err
	}
	var c struct {
		JTI   *string      `json:"jti"`
		HTM   *string      `json:"htm"`
		HTU   *string      `json:"htu"`
		IAT   *json.Number `json:"iat"`
		ATH   *string      `json:"ath"`
		Nonce *string      `json:"nonce"`
	}
	if err := decodeObject(payload, &c); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	switch {
	case c.JTI == nil || *c.JTI == "" || len(*c.JTI) > maxDPoPJTI:
		return nil, errors.New("no jti, or a jti too long")
	case c.HTM == nil || *c.HTM == "":
		return nil, errors.New("no htm")
	case c.HTU == nil || *c.HTU == "":
		return nil, errors.New("no htu")
	case c.IAT == nil:
		return nil, errors.New("no iat")
	}
	iat, err := c.IAT.Int64()
	if err != nil || iat <= 0 {
		return nil, errors.New("iat is not a positive integer")
	}
	p := &dpopProof{claims: dpopClaims{JTI: *c.JTI, HTM: *c.HTM, HTU: *c.HTU, IAT: iat}}
	if c.ATH != nil {
		p.claims.ATH = *c.ATH
	}
	if c.Nonce != nil {
		p.claims.Nonce = *c.Nonce
	}
	sum, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	p.jkt = base64.RawURLEncoding.EncodeToString(sum)
	return p, nil
}

// dpopRefusal is why a proof was refused: code is the error of the
// DPoP challenge.
type dpopRefusal struct {
	code, reason string
}

func (e *dpopRefusal) Error() string { return e.code + ": " + e.reason }

func badProof(format string, args ...any) *dpopRefusal {
	return &dpopRefusal{code: "invalid_dpop_proof", reason: fmt.Sprintf(format, args...)}
}

// check verifies the proof of a request r presenting token. It does not
// record the proof (see record).
func (v *dpopVerifier) check(r *http.Request, token string) (*dpopProof, *dpopRefusal) {
	values := r.Header.Values("DPoP")
	if len(values) != 1 {
		return nil, badProof("%d DPoP headers, one expected", len(values))
	}
	p, err := parseDPoPProof(values[0], v.o.Algorithms)
	if err != nil {
		return nil, badProof("%v", err)
	}
	c := &p.claims
	if c.HTM != r.Method {
		return nil, badProof("htm %q is not the request method %s", clip(c.HTM), r.Method)
	}
	if want, got := v.htu(r), normalHTU(c.HTU); got == "" || got != want {
		return nil, badProof("htu %q is not the request URL %q", clip(c.HTU), want)
	}
	now := v.o.Now()
	iat := time.Unix(c.IAT, 0)
	if iat.After(now.Add(v.o.Leeway)) {
		return nil, badProof("iat %s is in the future", iat.UTC().Format(time.RFC3339))
	}
	if iat.Before(now.Add(-v.o.MaxAge - v.o.Leeway)) {
		return nil, badProof("iat %s is older than %s", iat.UTC().Format(time.RFC3339), v.o.MaxAge)
	}
	sum := sha256.Sum256([]byte(token))
	if c.ATH == "" {
		return nil, badProof("no ath")
	}
	if !hmac.Equal([]byte(c.ATH), []byte(base64.RawURLEncoding.EncodeToString(sum[:]))) {
		return nil, badProof("ath is not the hash of the access token")
	}
	if v.o.NonceKey != nil && !v.validNonce(c.Nonce, now) {
		return nil, &dpopRefusal{code: "use_dpop_nonce", reason: "the proof has no current nonce"}
	}
	return p, nil
}

// record enters the proof in the replay cache; a proof seen before is
// refused. The cache key is a digest of the key's thumbprint and the
// jti: bounded, and one client's jti cannot collide with another's.
func (v *dpopVerifier) record(ctx context.Context, p *dpopProof) (*dpopRefusal, error) {
	sum := sha256.Sum256([]byte(p.jkt + "\x00" + p.claims.JTI))
	until := v.o.Now().Add(v.o.MaxAge + 2*v.o.Leeway)
	first, err := v.cache.FirstUse(ctx, base64.RawURLEncoding.EncodeToString(sum[:]), until)
	if err != nil {
		return nil, err
	}
	if !first {
		return badProof("the proof was used before (jti replayed)"), nil
	}
	return nil, nil
}

// htu is the htu a proof for r must have.
func (v *dpopVerifier) htu(r *http.Request) string {
	if v.base != nil {
		return normalHTU(v.base.Scheme + "://" + v.base.Host + strings.TrimSuffix(v.base.EscapedPath(), "/") + r.URL.EscapedPath())
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return normalHTU(scheme + "://" + r.Host + r.URL.EscapedPath())
}

// normalHTU normalizes an htu for comparison (RFC 9449 section 4.3,
// RFC 3986 sections 6.2.2 and 6.2.3): scheme and host lower-cased, the
// default port dropped, an empty path as "/", no query or fragment. ""
// for what is not an absolute http(s) URL.
func normalHTU(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return ""
	}
	host := strings.ToLower(u.Host)
	if (scheme == "https" && strings.HasSuffix(host, ":443")) || (scheme == "http" && strings.HasSuffix(host, ":80")) {
		host = host[:strings.LastIndexByte(host, ':')]
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path
}

// nonceEpoch is the nonce period of t.
func (v *dpopVerifier) nonceEpoch(t time.Time) uint64 {
	return uint64(t.UnixNano() / int64(v.o.NonceLifetime))
}

// nonce returns the nonce of epoch: the epoch and an HMAC of it,
// base64url.
func (v *dpopVerifier) nonce(epoch uint64) string {
	var b [8 + 16]byte
	binary.BigEndian.PutUint64(b[:8], epoch)
	m := hmac.New(sha256.New, v.o.NonceKey)
	m.Write([]byte("roundtrip DPoP nonce\x00"))
	m.Write(b[:8])
	copy(b[8:], m.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// currentNonce is the nonce to hand out now.
func (v *dpopVerifier) currentNonce() string { return v.nonce(v.nonceEpoch(v.o.Now())) }

// validNonce reports whether n is the current nonce or the one before.
func (v *dpopVerifier) validNonce(n string, now time.Time) bool {
	b, err := base64.RawURLEncoding.DecodeString(n)
	if err != nil || len(b) != 24 {
		return false
	}
	e, cur := binary.BigEndian.Uint64(b[:8]), v.nonceEpoch(now)
	if e != cur && e+1 != cur {
		return false
	}
	return hmac.Equal([]byte(n), []byte(v.nonce(e)))
}

// boundKey returns the thumbprint the token is bound to (its cnf.jkt),
// "" when it is not DPoP-bound.
func boundKey(info *mcp.TokenInfo) string {
	switch cnf := info.Extra["cnf"].(type) {
	case map[string]any:
		s, _ := cnf["jkt"].(string)
		return s
	case map[string]string:
		return cnf["jkt"]
	}
	return ""
}

// clip shortens s for a log line or an error description.
func clip(s string) string {
	if len(s) > 128 {
		return s[:128] + "..."
	}
	return s
}
