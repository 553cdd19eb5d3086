package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// dpopAlgs is what the protected resource metadata lists for o.
func dpopAlgs(o *auth.BearerOptions) []string {
	if o.DPoP == nil {
		return nil
	}
	if o.DPoP.Algorithms == nil {
		return []string{"ES256", "ES384", "ES512", "PS256", "RS256", "EdDSA"}
	}
	var out []string
	for _, a := range o.DPoP.Algorithms {
		out = append(out, string(a))
	}
	return out
}

// TestEndToEndDPoP: the client Transport with DPoPOptions against
// RequireBearer requiring DPoP, with server nonces and a JWTVerifier: the
// authorization server binds the token to the client's key (cnf.jkt),
// every call carries a fresh proof with the server's nonce, and the
// token is useless without the key: as a Bearer token, or with a proof
// by another key.
func TestEndToEndDPoP(t *testing.T) {
	t.Parallel()
	var p *protected
	p = newProtectedWith(t, []string{"mcp:tools"}, func(o *auth.BearerOptions) {
		o.DPoP = &auth.DPoPVerifyOptions{Required: true, NonceKey: []byte(strings.Repeat("n", 32)),
			NonceLifetime: time.Minute, Now: func() time.Time { return p.clock.Now() }}
	})
	b := &browser{t: t}
	store := &auth.MemoryTokenStore{}
	c := p.clientWith(t, b, freeRedirectURL(t), nil, 0, func(o *auth.Options) {
		o.DPoP = &auth.DPoPOptions{}
		o.TokenStore = store
	})
	for range 3 {
		if got := callText(t, c, "whoami"); got != "ada" {
			t.Fatalf("whoami = %q", got)
		}
	}
	if s := p.as.Stats(); s.Authorizations != 1 || s.CodeGrants != 1 || s.DPoPTokens != 1 {
		t.Errorf("authorization server stats %+v, want one authorization and one DPoP-bound token", s)
	}
	// One 401 (no token yet); the nonce came with it, so no
	// use_dpop_nonce round.
	if n := p.count(http.StatusUnauthorized); n != 1 {
		t.Errorf("%d responses 401, want 1", n)
	}
	tok, err := store.Load(context.Background(), p.resource)
	if err != nil || tok == nil || tok.TokenType != auth.TokenTypeDPoP || tok.DPoPKeyThumbprint == "" {
		t.Fatalf("stored token %+v, %v", tok, err)
	}

	// Three minutes later the client's nonce is stale: one
	// use_dpop_nonce round with the same token, no new authorization.
	p.clock.Advance(3 * time.Minute)
	if got := callText(t, c, "whoami"); got != "ada" {
		t.Fatalf("whoami with a stale nonce = %q", got)
	}
	if s := p.as.Stats(); s.Authorizations != 1 || s.CodeGrants != 1 {
		t.Errorf("after a stale nonce: authorization server stats %+v", s)
	}
	if n := p.count(http.StatusUnauthorized); n != 2 {
		t.Errorf("%d responses 401, want 2 (the first, one use_dpop_nonce)", n)
	}

	// The token stolen: as a Bearer token, and with a proof by the
	// thief's key, it is refused.
	send := func(authz string, tr http.RoundTripper) *http.Response {
		t.Helper()
		req := pingRequest(t, p.resource)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := send("Bearer "+tok.AccessToken, http.DefaultTransport)
	if ch, err := auth.ParseChallenges(resp.Header.Values("WWW-Authenticate")); resp.StatusCode != 401 || err != nil || len(ch) != 1 || ch[0].Scheme != "DPoP" {
		t.Errorf("the token as Bearer: %d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
	// A proof by another key: the thief's Transport, with the token
	// planted in its store as bound to the thief's key, signs it.
	thiefKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := (&jose.JSONWebKey{Key: thiefKey.Public()}).Thumbprint(crypto.SHA256)
	stolen := *tok
	stolen.DPoPKeyThumbprint = base64.RawURLEncoding.EncodeToString(sum)
	thiefStore := &auth.MemoryTokenStore{}
	if err := thiefStore.Save(context.Background(), p.resource, &stolen); err != nil {
		t.Fatal(err)
	}
	seen := &lastResponse{}
	thief, err := auth.NewTransport(&auth.Options{DPoP: &auth.DPoPOptions{Key: thiefKey}, TokenStore: thiefStore, Base: seen})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := thief.RoundTrip(pingRequest(t, p.resource)); err == nil {
		t.Error("the thief's call did not fail")
	}
	if ch, _ := auth.ParseChallenges(seen.header().Values("WWW-Authenticate")); seen.status() != 401 || len(ch) != 1 || ch[0].Param("error") != "invalid_dpop_proof" {
		t.Errorf("a proof by another key: %d %q", seen.status(), seen.header().Values("WWW-Authenticate"))
	}
	resp = send("DPoP "+tok.AccessToken, http.DefaultTransport)
	if ch, _ := auth.ParseChallenges(resp.Header.Values("WWW-Authenticate")); resp.StatusCode != 401 || len(ch) != 1 || ch[0].Param("error") != "invalid_dpop_proof" {
		t.Errorf("the token without a proof: %d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
}

// TestEndToEndStepUp: a tool needs a scope the first token lacks; the
// call gets 403 insufficient_scope naming it, the Transport authorizes
// again for the union and retries, and the call succeeds, once; later
// calls reuse the larger token. tools/list names the tool all along.
// With Bearer tokens and with DPoP-bound ones (DPoP challenges).
func TestEndToEndStepUp(t *testing.T) {
	t.Parallel()
	t.Run("Bearer", func(t *testing.T) { t.Parallel(); testStepUp(t, false) })
	t.Run("DPoP", func(t *testing.T) { t.Parallel(); testStepUp(t, true) })
}

// testStepUp is TestEndToEndStepUp with Bearer tokens, or with DPoP
// required (the challenges are then DPoP ones).
func testStepUp(t *testing.T, dpop bool) {
	p := newProtectedWith(t, []string{"mcp:tools", "admin"}, func(o *auth.BearerOptions) {
		o.ToolScopes = map[string][]string{"nuke": {"admin"}}
		if dpop {
			o.DPoP = &auth.DPoPVerifyOptions{Required: true}
		}
	})
	b := &browser{t: t}
	store := &auth.MemoryTokenStore{}
	c := p.clientWith(t, b, freeRedirectURL(t), nil, 0, func(o *auth.Options) {
		o.TokenStore = store
		if dpop {
			o.DPoP = &auth.DPoPOptions{}
		}
	})
	if got := callText(t, c, "whoami"); got != "ada" {
		t.Fatalf("whoami = %q", got)
	}
	want := func(step string, authorizations, forbidden int) {
		t.Helper()
		if s := p.as.Stats(); s.Authorizations != authorizations {
			t.Errorf("%s: %d authorizations, want %d", step, s.Authorizations, authorizations)
		}
		if n := p.count(http.StatusForbidden); n != forbidden {
			t.Errorf("%s: %d responses 403, want %d", step, n, forbidden)
		}
	}
	want("first call", 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var names []string
	for tool, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "nuke") {
		t.Errorf("tools/list %v lacks nuke", names)
	}
	if got := callText(t, c, "nuke"); got != "nuked by ada" {
		t.Fatalf("nuke = %q", got)
	}
	want("step-up", 2, 1)
	tok, _ := store.Load(context.Background(), p.resource)
	if tok == nil || !slices.Contains(strings.Fields(tok.Scope), "admin") || !slices.Contains(strings.Fields(tok.Scope), "mcp:tools") {
		t.Errorf("token after the step-up: %+v, want both scopes", tok)
	}
	if got := callText(t, c, "nuke"); got != "nuked by ada" {
		t.Fatalf("nuke again = %q", got)
	}
	want("second nuke", 2, 1)
	if s := p.as.Stats(); dpop && s.DPoPTokens != 2 {
		t.Errorf("%d DPoP-bound tokens, want 2", s.DPoPTokens)
	}
}

// TestEndToEndStepUpDoesNotLoop: a resource server that keeps refusing
// the scope it asks for (its verifier drops it) gets one step-up, then
// its 403 back; a later call does not authorize again, since the token
// has the scope the server names.
func TestEndToEndStepUpDoesNotLoop(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	p := newProtectedWith(t, []string{"mcp:tools", "admin"}, func(o *auth.BearerOptions) {
		o.ToolScopes = map[string][]string{"nuke": {"admin"}}
		v := o.Verifier
		o.Verifier = auth.TokenVerifierFunc(func(ctx context.Context, token string) (*mcp.TokenInfo, error) {
			calls.Add(1)
			info, err := v.Verify(ctx, token)
			if err == nil {
				info.Scopes = slices.DeleteFunc(info.Scopes, func(s string) bool { return s == "admin" })
			}
			return info, err
		})
	})
	b := &browser{t: t}
	c := p.clientWith(t, b, freeRedirectURL(t), nil, 0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 2 {
		if _, err := c.CallTool(ctx, "nuke", map[string]any{}, nil); err == nil {
			t.Fatalf("call %d: nuke succeeded", i)
		}
	}
	if s := p.as.Stats(); s.Authorizations != 2 {
		t.Errorf("%d authorizations, want 2 (the first, one step-up)", s.Authorizations)
	}
	if n := p.count(http.StatusForbidden); n != 3 {
		t.Errorf("%d responses 403, want 3 (before and after the step-up, then the second call)", n)
	}
}

func pingRequest(t *testing.T, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}

// lastResponse is a base transport that keeps the status and header of
// the last response from /mcp (not the metadata fetched after it).
type lastResponse struct {
	mu   sync.Mutex
	code int
	h    http.Header
}

func (l *lastResponse) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.URL.Path == "/mcp" {
		l.mu.Lock()
		l.code, l.h = resp.StatusCode, resp.Header.Clone()
		l.mu.Unlock()
	}
	return resp, err
}

func (l *lastResponse) status() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.code
}

func (l *lastResponse) header() http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h
}
