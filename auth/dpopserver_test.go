package auth

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

const dpopResource = "https://mcp.example/mcp"

// dpopRS is a handler behind RequireBearer with DPoP, two tokens ("bound"
// to key, "plain" not), and what the handler saw.
type dpopRS struct {
	h    http.Handler
	key  *dpopKey // the key "bound" is bound to
	priv crypto.Signer
	mu   sync.Mutex
	seen *mcp.TokenInfo
}

func newDPoPRS(t *testing.T, configure func(o *DPoPVerifyOptions)) *dpopRS {
	t.Helper()
	priv := mustKey(t, "P-256")
	k, err := newDPoPKey(&DPoPOptions{Key: priv})
	if err != nil {
		t.Fatal(err)
	}
	rs := &dpopRS{key: k, priv: priv}
	o := &DPoPVerifyOptions{}
	if configure != nil {
		configure(o)
	}
	rs.h = RequireBearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.seen = mcp.TokenInfoFromContext(r.Context())
		rs.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}), &BearerOptions{
		Verifier: static(map[string]*mcp.TokenInfo{
			"bound": {Subject: "u", Extra: map[string]any{"cnf": map[string]any{"jkt": k.jkt}}},
			"plain": {Subject: "p"},
		}),
		ResourceMetadataURL: "https://mcp.example/.well-known/oauth-protected-resource/mcp",
		DPoP:                o,
		Logger:              slog.New(slog.DiscardHandler),
	})
	return rs
}

// do sends a POST to target with the Authorization header authz (none
// when empty) and the DPoP proofs.
func (rs *dpopRS) do(target, authz string, proofs ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader("{}"))
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	for _, p := range proofs {
		r.Header.Add("DPoP", p)
	}
	rs.mu.Lock()
	rs.seen = nil
	rs.mu.Unlock()
	w := httptest.NewRecorder()
	rs.h.ServeHTTP(w, r)
	return w
}

func (rs *dpopRS) ran() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.seen != nil
}

// proof is a proof by rs's key for a POST to dpopResource with token.
func (rs *dpopRS) proof(t *testing.T, token string, iat time.Time) string {
	t.Helper()
	p, err := rs.key.proof(http.MethodPost, mustParse(t, dpopResource), token, "", iat)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// signProof signs claims as a proof with key, with the header typ.
func signProof(t *testing.T, key crypto.Signer, alg jose.SignatureAlgorithm, typ string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{EmbedJWK: true}).WithType(jose.ContentType(typ)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func athOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// wantChallenge checks the refusal w: status, the DPoP challenge's error
// (with algs), and the Bearer challenge unless DPoP is required, whose
// error is bearerErr.
func wantChallenge(t *testing.T, name string, w *httptest.ResponseRecorder, status int, dpopErr, bearerErr string, required bool) {
	t.Helper()
	if w.Code != status {
		t.Errorf("%s: status %d, want %d (%q)", name, w.Code, status, w.Header().Values("WWW-Authenticate"))
		return
	}
	cs, err := ParseChallenges(w.Header().Values("WWW-Authenticate"))
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	var bearer, dpop *Challenge
	for i := range cs {
		switch cs[i].Scheme {
		case "Bearer":
			bearer = &cs[i]
		case "DPoP":
			dpop = &cs[i]
		}
	}
	if dpop == nil || dpop.Param("error") != dpopErr || dpop.Param("algs") == "" ||
		dpop.Param("resource_metadata") != "https://mcp.example/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("%s: DPoP challenge %+v, want error %q with algs and resource_metadata", name, dpop, dpopErr)
	}
	switch {
	case required && bearer != nil:
		t.Errorf("%s: a Bearer challenge %+v when DPoP is required", name, bearer)
	case !required && (bearer == nil || bearer.Param("error") != bearerErr):
		t.Errorf("%s: Bearer challenge %+v, want error %q", name, bearer, bearerErr)
	}
}

// TestDPoPResourceServer: a valid proof passes; each way a proof or its
// token can be wrong is refused with its challenge, before the handler.
func TestDPoPResourceServer(t *testing.T) {
	t.Parallel()
	rs := newDPoPRS(t, nil)
	now := time.Now()
	other := mustKey(t, "P-256")
	claims := func(change func(c map[string]any)) map[string]any {
		c := map[string]any{"jti": randomString(16), "htm": "POST", "htu": dpopResource, "iat": now.Unix(), "ath": athOf("bound")}
		if change != nil {
			change(c)
		}
		return c
	}
	key := rs.priv

	// A valid proof, and the same proof again.
	good := rs.proof(t, "bound", now)
	if w := rs.do(dpopResource, "DPoP bound", good); w.Code != http.StatusNoContent || !rs.ran() {
		t.Fatalf("valid proof: status %d, %q", w.Code, w.Header().Values("WWW-Authenticate"))
	}
	w := rs.do(dpopResource, "DPoP bound", good)
	wantChallenge(t, "replayed jti", w, 401, "invalid_dpop_proof", "", false)

	// A plain bearer token still passes (DPoP is not required).
	if w := rs.do(dpopResource, "Bearer plain"); w.Code != http.StatusNoContent {
		t.Errorf("plain bearer: status %d", w.Code)
	}

	for name, c := range map[string]struct {
		target, authz string
		proofs        []string
		dpopErr       string
		bearerErr     string
	}{
		"wrong htu path":    {dpopResource, "DPoP bound", []string{signProof(t, key, jose.ES256, "dpop+jwt", claims(func(c map[string]any) { c["htu"] = "https://mcp.example/other" }))}, "invalid_dpop_proof", ""},
		"wrong htu host":    {dpopResource, "DPoP bound", []string{signProof(t, key, jose.ES256, "dpop+jwt", claims(func(c map[string]any) { c["htu"] = "https://evil.example/mcp" }))}, "invalid_dpop_proof", ""},
		"wrong htm":         {dpopResource, "DPoP bound", []string{signProof(t, key, jose.ES256, "dpop+jwt", claims(func(c map[string]any) { c["htm"] = "GET" }))}, "invalid_dpop_proof", ""},
		"stale iat":         {dpopResource, "DPoP bound", []string{rs.proof(t, "bound", now.Add(-10*time.Minute))}, "invalid_dpop_proof", ""},
		"future iat":        {dpopResource, "DPoP bound", []string{rs.proof(t, "bound", now.Add(2*time.Minute))}, "invalid_dpop_proof", ""},
		"missing ath":       {dpopResource, "DPoP bound", []string{rs.proof(t, "", now)}, "invalid_dpop_proof", ""},
		"ath of another":    {dpopResource, "DPoP bound", []string{rs.proof(t, "plain", now)}, "invalid_dpop_proof", ""},
		"another key":       {dpopResource, "DPoP bound", []string{signProof(t, other, jose.ES256, "dpop+jwt", claims(nil))}, "invalid_dpop_proof", ""},
		"typ JWT":           {dpopResource, "DPoP bound", []string{signProof(t, key, jose.ES256, "JWT", claims(nil))}, "invalid_dpop_proof", ""},
		"no jti":            {dpopResource, "DPoP bound", []string{signProof(t, key, jose.ES256, "dpop+jwt", claims(func(c map[string]any) { delete(c, "jti") }))}, "invalid_dpop_proof", ""},
		"no proof":          {dpopResource, "DPoP bound", nil, "invalid_dpop_proof", ""},
		"two proofs":        {dpopResource, "DPoP bound", []string{rs.proof(t, "bound", now), rs.proof(t, "bound", now)}, "invalid_dpop_proof", ""},
		"not a JWS":         {dpopResource, "DPoP bound", []string{"a.b.c"}, "invalid_dpop_proof", ""},
		"oversized":         {dpopResource, "DPoP bound", []string{strings.Repeat("a", maxDPoPProofBytes+1)}, "invalid_dpop_proof", ""},
		"bound as bearer":   {dpopResource, "Bearer bound", nil, "invalid_token", "invalid_token"},
		"bound as bearer+p": {dpopResource, "Bearer bound", []string{rs.proof(t, "bound", now)}, "invalid_token", "invalid_token"},
		"unbound with DPoP": {dpopResource, "DPoP plain", []string{rs.proof(t, "plain", now)}, "invalid_token", "invalid_token"},
		"unknown token":     {dpopResource, "DPoP nope", []string{rs.proof(t, "nope", now)}, "invalid_token", "invalid_token"},
		"no credentials":    {dpopResource, "", nil, "", ""},
	} {
		w := rs.do(c.target, c.authz, c.proofs...)
		wantChallenge(t, name, w, 401, c.dpopErr, c.bearerErr, false)
		if rs.ran() {
			t.Errorf("%s: the handler ran", name)
		}
	}
}

// TestDPoPRequired: with Required, a Bearer token is refused and the
// challenges name DPoP alone.
func TestDPoPRequired(t *testing.T) {
	t.Parallel()
	rs := newDPoPRS(t, func(o *DPoPVerifyOptions) { o.Required = true })
	wantChallenge(t, "bearer", rs.do(dpopResource, "Bearer plain"), 401, "invalid_request", "", true)
	wantChallenge(t, "none", rs.do(dpopResource, ""), 401, "", "", true)
	if w := rs.do(dpopResource, "DPoP bound", rs.proof(t, "bound", time.Now())); w.Code != http.StatusNoContent {
		t.Errorf("valid proof: %d", w.Code)
	}
}

// TestDPoPAlgorithmsAndBaseURL: a proof by an algorithm off the list is
// refused; behind a proxy, htu is BaseURL and the request path, whatever
// the Host header says.
func TestDPoPAlgorithmsAndBaseURL(t *testing.T) {
	t.Parallel()
	rs := newDPoPRS(t, func(o *DPoPVerifyOptions) {
		o.Algorithms = []jose.SignatureAlgorithm{jose.ES256}
		o.BaseURL = "https://public.example:443/api"
	})
	// The proxy forwards https://public.example/api/mcp to
	// http://10.0.0.1/mcp.
	p, err := rs.key.proof(http.MethodPost, mustParse(t, "https://public.example/api/mcp"), "bound", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if w := rs.do("http://10.0.0.1/mcp", "DPoP bound", p); w.Code != http.StatusNoContent {
		t.Errorf("proof for the public URL: %d %q", w.Code, w.Header().Values("WWW-Authenticate"))
	}
	p, _ = rs.key.proof(http.MethodPost, mustParse(t, "http://10.0.0.1/mcp"), "bound", "", time.Now())
	wantChallenge(t, "proof for the internal URL", rs.do("http://10.0.0.1/mcp", "DPoP bound", p), 401, "invalid_dpop_proof", "", false)

	ed, err := newDPoPKey(&DPoPOptions{Key: mustKey(t, "Ed25519")})
	if err != nil {
		t.Fatal(err)
	}
	p, _ = ed.proof(http.MethodPost, mustParse(t, "https://public.example/api/mcp"), "bound", "", time.Now())
	w := rs.do("http://10.0.0.1/mcp", "DPoP bound", p)
	wantChallenge(t, "EdDSA off the list", w, 401, "invalid_dpop_proof", "", false)
	cs, _ := ParseChallenges(w.Header().Values("WWW-Authenticate"))
	for _, c := range cs {
		if c.Scheme == "DPoP" && c.Param("algs") != "ES256" {
			t.Errorf("algs %q, want ES256", c.Param("algs"))
		}
	}
}

// TestDPoPNoncesAtTheResourceServer: with a NonceKey, a proof without a
// nonce gets use_dpop_nonce and a DPoP-Nonce; that nonce passes, and
// stays good for one more lifetime, not two; another key's nonce fails.
func TestDPoPNoncesAtTheResourceServer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	key := []byte(strings.Repeat("k", 32))
	rs := newDPoPRS(t, func(o *DPoPVerifyOptions) {
		o.NonceKey, o.NonceLifetime, o.Now = key, time.Minute, clock
		o.MaxAge = time.Hour
	})
	proof := func(nonce string) string {
		p, err := rs.key.proof(http.MethodPost, mustParse(t, dpopResource), "bound", nonce, clock())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w := rs.do(dpopResource, "DPoP bound", proof(""))
	wantChallenge(t, "no nonce", w, 401, "use_dpop_nonce", "", false)
	n := w.Header().Get("DPoP-Nonce")
	if !validNonce(n) {
		t.Fatalf("DPoP-Nonce %q", n)
	}
	if w := rs.do(dpopResource, "DPoP bound", proof(n)); w.Code != http.StatusNoContent || w.Header().Get("DPoP-Nonce") == "" {
		t.Fatalf("with the nonce: %d, DPoP-Nonce %q", w.Code, w.Header().Get("DPoP-Nonce"))
	}
	advance(time.Minute)
	if w := rs.do(dpopResource, "DPoP bound", proof(n)); w.Code != http.StatusNoContent {
		t.Errorf("the previous nonce: %d", w.Code)
	}
	advance(time.Minute)
	wantChallenge(t, "a stale nonce", rs.do(dpopResource, "DPoP bound", proof(n)), 401, "use_dpop_nonce", "", false)

	otherKey := &dpopVerifier{o: DPoPVerifyOptions{NonceKey: []byte(strings.Repeat("x", 32)), NonceLifetime: time.Minute, Now: clock}}
	wantChallenge(t, "another key's nonce", rs.do(dpopResource, "DPoP bound", proof(otherKey.currentNonce())), 401, "use_dpop_nonce", "", false)
}

// TestMemoryReplayCacheIsBounded: entries leave when their time is up; a
// full cache refuses (fail closed) and RequireBearer answers 503.
func TestMemoryReplayCacheIsBounded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := &MemoryReplayCache{MaxEntries: 2, Now: clock}
	ctx := context.Background()
	for i, want := range []bool{true, false} {
		if first, err := c.FirstUse(ctx, "a", now.Add(time.Minute)); err != nil || first != want {
			t.Fatalf("a #%d: %v %v", i, first, err)
		}
	}
	if first, err := c.FirstUse(ctx, "b", now.Add(2*time.Minute)); !first || err != nil {
		t.Fatalf("b: %v %v", first, err)
	}
	if _, err := c.FirstUse(ctx, "c", now.Add(2*time.Minute)); !errors.Is(err, ErrReplayCacheFull) {
		t.Fatalf("c in a full cache: %v", err)
	}
	mu.Lock()
	now = now.Add(90 * time.Second) // a expires, b not
	mu.Unlock()
	if first, err := c.FirstUse(ctx, "c", clock().Add(2*time.Minute)); !first || err != nil {
		t.Fatalf("c after a expired: %v %v", first, err)
	}
	if first, _ := c.FirstUse(ctx, "b", clock().Add(time.Minute)); first {
		t.Error("b accepted twice")
	}
	if c.Len() != 2 {
		t.Errorf("Len %d, want 2", c.Len())
	}

	full := &MemoryReplayCache{MaxEntries: 1}
	rs := newDPoPRS(t, func(o *DPoPVerifyOptions) { o.ReplayCache = full })
	if w := rs.do(dpopResource, "DPoP bound", rs.proof(t, "bound", time.Now())); w.Code != http.StatusNoContent {
		t.Fatalf("first: %d", w.Code)
	}
	if w := rs.do(dpopResource, "DPoP bound", rs.proof(t, "bound", time.Now())); w.Code != http.StatusServiceUnavailable || rs.ran() {
		t.Errorf("a full cache: %d, handler ran %v", w.Code, rs.ran())
	}
}

// TestNewDPoPVerifierChecksOptions: symmetric algorithms, a bad BaseURL
// and a short nonce key are programmer errors.
func TestNewDPoPVerifierChecksOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []DPoPVerifyOptions{
		{Algorithms: []jose.SignatureAlgorithm{jose.HS256}},
		{Algorithms: []jose.SignatureAlgorithm{"none"}},
		{Algorithms: []jose.SignatureAlgorithm{}},
		{BaseURL: "mcp.example"},
		{BaseURL: "https://mcp.example/?q=1"},
		{NonceKey: []byte("short")},
	} {
		if _, err := newDPoPVerifier(&o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestJWTVerifierPassesTheConfirmationOn: cnf lands in TokenInfo.Extra;
// a cnf.jkt that is not a string is refused.
func TestJWTVerifierPassesTheConfirmationOn(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	is.addRSA(t, "k1")
	v := newVerifier(t, is)
	base := func() map[string]any { return map[string]any{} }
	c := base()
	c["cnf"] = map[string]any{"jkt": "abc"}
	info, err := v.Verify(context.Background(), is.sign(t, "k1", jose.RS256, c))
	if err != nil || boundKey(info) != "abc" {
		t.Fatalf("bound token: %+v, %v", info, err)
	}
	info, err = v.Verify(context.Background(), is.sign(t, "k1", jose.RS256, base()))
	if err != nil || boundKey(info) != "" || info.Extra != nil {
		t.Fatalf("plain token: %+v, %v", info, err)
	}
	c = base()
	c["cnf"] = map[string]any{"jkt": 7}
	if _, err := v.Verify(context.Background(), is.sign(t, "k1", jose.RS256, c)); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("cnf.jkt 7: %v", err)
	}
}
