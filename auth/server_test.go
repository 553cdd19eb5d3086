package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

const (
	testIssuer   = "https://as.example"
	testAudience = "https://mcp.example/mcp"
)

// issuer signs tokens and publishes its keys on a loopback JWKS endpoint.
type issuer struct {
	mu      sync.Mutex
	keys    map[string]any // kid -> private key
	public  jose.JSONWebKeySet
	fetches atomic.Int32
	url     string

	// mode is how the JWKS endpoint answers: jwksServe, jwksFail (500)
	// or jwksHang (block until the test ends, after sending on entered).
	mode    atomic.Int32
	entered chan struct{}
	release chan struct{}
}

const (
	jwksServe = iota
	jwksFail
	jwksHang
)

func newIssuer(t *testing.T) *issuer {
	is := &issuer{keys: map[string]any{}, entered: make(chan struct{}, 100), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		switch is.mode.Load() {
		case jwksFail:
			http.Error(w, "down", http.StatusInternalServerError)
			return
		case jwksHang:
			is.entered <- struct{}{}
			<-is.release
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		json.NewEncoder(w).Encode(is.public)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(is.release) }) // before srv.Close, which waits for the handlers
	is.url = srv.URL
	is.addRSA(t, "rsa-1")
	is.addEC(t, "ec-1")
	return is
}

func (is *issuer) addRSA(t *testing.T, kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.add(kid, k, &k.PublicKey, jose.RS256)
}

func (is *issuer) addEC(t *testing.T, kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is.add(kid, k, &k.PublicKey, jose.ES256)
}

func (is *issuer) add(kid string, priv, pub any, alg jose.SignatureAlgorithm) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys[kid] = priv
	is.public.Keys = append(is.public.Keys, jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: string(alg), Use: "sig"})
}

// sign makes a token with kid's key; claims override the defaults.
func (is *issuer) sign(t *testing.T, kid string, alg jose.SignatureAlgorithm, claims map[string]any) string {
	t.Helper()
	is.mu.Lock()
	key := is.keys[kid]
	is.mu.Unlock()
	return signWith(t, key, kid, alg, claims)
}

func signWith(t *testing.T, key any, kid string, alg jose.SignatureAlgorithm, claims map[string]any) string {
	t.Helper()
	now := time.Now()
	c := map[string]any{
		"iss": testIssuer, "aud": testAudience, "sub": "user-1", "client_id": "client-1",
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "scope": "mcp:read mcp:write",
	}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func newVerifier(t *testing.T, is *issuer) *JWTVerifier {
	v, err := NewJWTVerifier(JWTOptions{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.url})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJWTVerifierAccepts(t *testing.T) {
	is := newIssuer(t)
	v := newVerifier(t, is)
	ctx := context.Background()
	info, err := v.Verify(ctx, is.sign(t, "rsa-1", jose.RS256, nil))
	if err != nil {
		t.Fatal(err)
	}
	if info.ClientID != "client-1" || info.Subject != "user-1" || info.Issuer != testIssuer ||
		strings.Join(info.Scopes, " ") != "mcp:read mcp:write" || time.Until(info.Expiry) < 50*time.Minute {
		t.Errorf("info %+v", info)
	}
	// ES256, azp for the client, scp as a list, several audiences.
	info, err = v.Verify(ctx, is.sign(t, "ec-1", jose.ES256, map[string]any{
		"client_id": nil, "azp": "client-2", "scope": nil, "scp": []string{"a", "b"}, "aud": []string{"other", testAudience},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if info.ClientID != "client-2" || strings.Join(info.Scopes, ",") != "a,b" {
		t.Errorf("info %+v", info)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d key set fetches for two tokens, want 1", n)
	}
}

func TestJWTVerifierRefuses(t *testing.T) {
	is := newIssuer(t)
	v := newVerifier(t, is)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	hour := time.Hour
	cases := map[string]string{
		"expired":          is.sign(t, "rsa-1", jose.RS256, map[string]any{"exp": time.Now().Add(-2 * time.Minute).Unix()}),
		"no exp":           is.sign(t, "rsa-1", jose.RS256, map[string]any{"exp": nil}),
		"not yet valid":    is.sign(t, "rsa-1", jose.RS256, map[string]any{"nbf": time.Now().Add(hour).Unix()}),
		"other issuer":     is.sign(t, "rsa-1", jose.RS256, map[string]any{"iss": "https://evil.example"}),
		"other audience":   is.sign(t, "rsa-1", jose.RS256, map[string]any{"aud": "https://other.example/mcp"}),
		"no audience":      is.sign(t, "rsa-1", jose.RS256, map[string]any{"aud": nil}),
		"forged signature": signWith(t, other, "rsa-1", jose.RS256, nil),
		"HS256":            signWith(t, []byte(strings.Repeat("k", 32)), "rsa-1", jose.HS256, nil),
		"alg mismatch":     signWith(t, other, "ec-1", jose.RS256, nil),
		"garbage":          "not.a.jwt",
		"empty":            "",
		"unsigned":         "eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUifQ.",
		"bad scp":          is.sign(t, "rsa-1", jose.RS256, map[string]any{"scope": nil, "scp": 7}),
		"too long":         strings.Repeat("a", 17<<10),
	}
	for name, tok := range cases {
		if info, err := v.Verify(context.Background(), tok); err == nil || !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: accepted (%+v) or wrong error: %v", name, info, err)
		}
	}
}

// A token signed by a key published after the set was fetched verifies
// (one refetch); unknown key ids cannot make the verifier fetch more
// than once per MinRefreshInterval.
func TestJWTVerifierKeyRotation(t *testing.T) {
	is := newIssuer(t)
	v := newVerifier(t, is)
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.sign(t, "rsa-1", jose.RS256, nil)); err != nil {
		t.Fatal(err)
	}
	is.addRSA(t, "rsa-2")
	if _, err := v.Verify(ctx, is.sign(t, "rsa-2", jose.RS256, nil)); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	before := is.fetches.Load()
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	for i := 0; i < 20; i++ {
		if _, err := v.Verify(ctx, signWith(t, stranger, "unknown", jose.RS256, nil)); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if n := is.fetches.Load() - before; n > 0 {
		t.Errorf("%d fetches for unknown key ids within the minimum interval", n)
	}
}

func TestNewJWTVerifierChecksOptions(t *testing.T) {
	for _, o := range []JWTOptions{
		{Audience: "a", JWKSURL: "u"},
		{Issuer: "i", JWKSURL: "u"},
		{Issuer: "i", Audience: "a"},
		{Issuer: "i", Audience: "a", JWKSURL: "u", Algorithms: []jose.SignatureAlgorithm{jose.HS256}},
	} {
		if _, err := NewJWTVerifier(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// static accepts the tokens it knows.
func static(tokens map[string]*mcp.TokenInfo) TokenVerifier {
	return TokenVerifierFunc(func(ctx context.Context, tok string) (*mcp.TokenInfo, error) {
		if info, ok := tokens[tok]; ok {
			return info, nil
		}
		return nil, ErrInvalidToken
	})
}

func TestRequireBearer(t *testing.T) {
	var seen *mcp.TokenInfo
	h := RequireBearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = mcp.TokenInfoFromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}), &BearerOptions{
		Verifier:            static(map[string]*mcp.TokenInfo{"good": {Subject: "u", Scopes: []string{"mcp"}}, "narrow": {Subject: "u"}}),
		ResourceMetadataURL: "https://mcp.example/.well-known/oauth-protected-resource/mcp",
		Scopes:              []string{"mcp"},
	})
	do := func(target string, auth ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader("{}"))
		for _, a := range auth {
			r.Header.Add("Authorization", a)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	type want struct {
		status int
		err    string // the challenge's error param, "" for none
	}
	for name, c := range map[string]struct {
		target string
		auth   []string
		want   want
	}{
		"no token":        {"/mcp", nil, want{401, ""}},
		"unknown token":   {"/mcp", []string{"Bearer bad"}, want{401, "invalid_token"}},
		"basic scheme":    {"/mcp", []string{"Basic dXNlcjpwYXNz"}, want{401, "invalid_request"}},
		"two headers":     {"/mcp", []string{"Bearer good", "Bearer good"}, want{401, "invalid_request"}},
		"not token68":     {"/mcp", []string{"Bearer go od"}, want{401, "invalid_request"}},
		"empty token":     {"/mcp", []string{"Bearer "}, want{401, "invalid_request"}},
		"missing scope":   {"/mcp", []string{"Bearer narrow"}, want{403, "insufficient_scope"}},
		"token in query":  {"/mcp?access_token=good", []string{"Bearer good"}, want{400, "invalid_request"}},
		"good":            {"/mcp", []string{"Bearer good"}, want{204, ""}},
		"scheme any case": {"/mcp", []string{"bearer good"}, want{204, ""}},
	} {
		seen = nil
		w := do(c.target, c.auth...)
		if w.Code != c.want.status {
			t.Errorf("%s: status %d, want %d", name, w.Code, c.want.status)
			continue
		}
		if c.want.status == 204 {
			if seen == nil || seen.Subject != "u" {
				t.Errorf("%s: handler saw %+v", name, seen)
			}
			continue
		}
		if seen != nil {
			t.Errorf("%s: the handler ran", name)
		}
		// The challenge parses with the client's own parser.
		ch, ok, err := BearerChallenge(w.Header())
		if err != nil || !ok {
			t.Errorf("%s: challenge %q: %v", name, w.Header().Get("WWW-Authenticate"), err)
			continue
		}
		if ch.Param("resource_metadata") != "https://mcp.example/.well-known/oauth-protected-resource/mcp" || ch.Param("error") != c.want.err {
			t.Errorf("%s: challenge %q", name, w.Header().Get("WWW-Authenticate"))
		}
		if (c.want.err == "" || c.want.err == "insufficient_scope") && ch.Param("scope") != "mcp" {
			t.Errorf("%s: challenge %q names no scope", name, w.Header().Get("WWW-Authenticate"))
		}
		var body map[string]string
		if json.Unmarshal(w.Body.Bytes(), &body) != nil || body["error"] == "" {
			t.Errorf("%s: body %q", name, w.Body.String())
		}
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	u, err := ResourceMetadataURL("https://mcp.example/tenant/mcp")
	if err != nil || u != "https://mcp.example/.well-known/oauth-protected-resource/tenant/mcp" {
		t.Errorf("%q %v", u, err)
	}
	if u, _ := ResourceMetadataURL("https://mcp.example"); u != "https://mcp.example/.well-known/oauth-protected-resource" {
		t.Errorf("root: %q", u)
	}
	if _, err := ResourceMetadataURL("/relative"); err == nil {
		t.Error("relative URL accepted")
	}
	md := &ProtectedResourceMetadata{Resource: testAudience, AuthorizationServers: []string{testIssuer}, ScopesSupported: []string{"mcp"}}
	srv := httptest.NewServer(ProtectedResourceHandler(md))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got ProtectedResourceMetadata
	if err := json.Unmarshal(b, &got); err != nil || got.Resource != testAudience || got.AuthorizationServers[0] != testIssuer {
		t.Errorf("%s %v", b, err)
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	resp, _ = http.Post(srv.URL, "application/json", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// bearer adds a fixed token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// Behind RequireBearer with JWT access tokens, the sealed requestState is
// bound to the user: a round started by one user cannot be finished with
// another user's token, and is finished with the first user's.
func TestRequestStateIsBoundToTheTokensUser(t *testing.T) {
	is := newIssuer(t)
	srv := mcp.NewServer(mcp.Implementation{Name: "protected", Version: "1"}, nil)
	type Confirm struct {
		OK bool `json:"ok"`
	}
	srv.AddTool(&mcp.Tool{Name: "delete"}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		c, err := mcp.Elicit[Confirm](ctx, "Really delete?")
		if err != nil {
			return nil, err
		}
		v, err := c.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(map[bool]string{true: "deleted by " + mcp.TokenInfoFromContext(ctx).Subject, false: "kept"}[v.OK]), nil
	})
	ts := httptest.NewServer(RequireBearer(mcp.NewHTTPHandler(srv, nil), &BearerOptions{Verifier: newVerifier(t, is)}))
	defer ts.Close()
	client := func(sub string) *mcp.Client {
		tok := is.sign(t, "rsa-1", jose.RS256, map[string]any{"sub": sub})
		c := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, &mcp.HTTPClientOptions{HTTPClient: &http.Client{Transport: bearer{tok}}}),
			&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)}}})
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	alice, mallory := client("alice"), client("mallory")
	_, err := alice.CallTool(ctx, "delete", map[string]any{}, &mcp.CallOptions{Manual: true})
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		t.Fatalf("expected a question: %v", err)
	}
	yes := mcp.InputResponses{}
	for k := range pending.Call.InputRequests {
		yes[k] = json.RawMessage(`{"action":"accept","content":{"ok":true}}`)
	}
	_, err = mallory.Resume(ctx, pending.Call, yes, nil)
	var rpc *mcp.Error
	if !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams || rpc.Message != "Invalid or expired requestState" {
		t.Fatalf("another user's retry: %v", err)
	}
	res, err := alice.Resume(ctx, pending.Call, yes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*mcp.CallToolResult); r.Content[0].(*mcp.TextContent).Text != "deleted by alice" {
		t.Errorf("result %+v", r)
	}
}
