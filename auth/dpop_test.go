package auth

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// dpopMock is an MCP server and its authorization server on loopback
// that speak DPoP (RFC 9449) and check every proof the way a strict
// server would: typ, a public jwk, the signature, htm, htu, iat, a jti
// never seen before, ath on resource requests and the key binding of
// the token.
type dpopMock struct {
	t  *testing.T
	rs *httptest.Server
	as *httptest.Server

	// configuration
	algs        []string // dpop_signing_alg_values_supported
	bearer      bool     // the AS ignores DPoP and issues Bearer tokens
	asNonce     string   // the token endpoint requires this nonce ("" none)
	rsNonce     string   // the MCP server requires this nonce ("" none)
	asNonceLoop bool     // the token endpoint refuses every proof with a new nonce
	rsNonceLoop bool     // the MCP server refuses every proof with a new nonce
	// retryRedirect, when set, is where the token endpoint redirects
	// (307) the request retried with its nonce.
	retryRedirect string

	mu        sync.Mutex
	n         int
	jtis      map[string]bool
	bound     map[string]string // access token -> jkt ("" for Bearer)
	authReqs  []url.Values
	tokenReqs []dpopReq
	rsReqs    []dpopReq
}

// dpopReq is a request as the mock saw it; proof is the verified proof
// (nil when there was none or it was refused, with err set).
type dpopReq struct {
	auth  string
	form  url.Values
	url   string
	proof *dpopClaims
	jkt   string
	err   error
}

func newDPoPMock(t *testing.T, configure func(m *dpopMock)) *dpopMock {
	t.Helper()
	m := &dpopMock{t: t, jtis: map[string]bool{}, bound: map[string]string{}}
	if configure != nil {
		configure(m)
	}
	m.as = httptest.NewServer(http.HandlerFunc(m.serveAS))
	m.rs = httptest.NewServer(http.HandlerFunc(m.serveRS))
	t.Cleanup(m.as.Close)
	t.Cleanup(m.rs.Close)
	return m
}

func (m *dpopMock) serverURL() string { return m.rs.URL + "/mcp" }

// verify checks a DPoP proof (m.mu held) and returns its claims and key
// thumbprint.
func (m *dpopMock) verify(h http.Header, method, htu, accessToken string) (*dpopClaims, string, error) {
	vals := h.Values("DPoP")
	if len(vals) != 1 {
		return nil, "", fmt.Errorf("%d DPoP headers", len(vals))
	}
	jws, err := jose.ParseSignedCompact(vals[0], []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.PS256, jose.EdDSA})
	if err != nil {
		return nil, "", err
	}
	hdr := jws.Signatures[0].Protected
	if hdr.ExtraHeaders[jose.HeaderType] != "dpop+jwt" {
		return nil, "", fmt.Errorf("typ %v", hdr.ExtraHeaders[jose.HeaderType])
	}
	if hdr.JSONWebKey == nil || !hdr.JSONWebKey.IsPublic() || hdr.KeyID != "" {
		return nil, "", errors.New("no public jwk, or a kid")
	}
	payload, err := jws.Verify(hdr.JSONWebKey)
	if err != nil {
		return nil, "", err
	}
	var c dpopClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, "", err
	}
	if c.HTM != method || c.HTU != htu || c.JTI == "" || m.jtis[c.JTI] {
		return nil, "", fmt.Errorf("htm %q htu %q jti %q (seen %v)", c.HTM, c.HTU, c.JTI, m.jtis[c.JTI])
	}
	if d := time.Since(time.Unix(c.IAT, 0)); d > time.Minute || d < -time.Minute {
		return nil, "", fmt.Errorf("iat %d", c.IAT)
	}
	wantATH := ""
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		wantATH = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if c.ATH != wantATH {
		return nil, "", fmt.Errorf("ath %q, want %q", c.ATH, wantATH)
	}
	m.jtis[c.JTI] = true
	sum, err := hdr.JSONWebKey.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, "", err
	}
	return &c, base64.RawURLEncoding.EncodeToString(sum), nil
}

func (m *dpopMock) serveRS(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
		writeJSON(w, http.StatusOK, map[string]any{"resource": m.serverURL(), "authorization_servers": []string{m.as.URL}})
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	prm := m.rs.URL + "/.well-known/oauth-protected-resource/mcp"
	authz := r.Header.Get("Authorization")
	scheme, tok, _ := strings.Cut(authz, " ")
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := dpopReq{auth: authz, url: r.URL.String()}
	jkt, known := m.bound[tok]
	switch {
	case authz == "" || !known:
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`DPoP algs="ES256", resource_metadata="%s"`, prm))
		m.rsReqs = append(m.rsReqs, rec)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	case jkt == "":
		if scheme != "Bearer" || r.Header.Get("DPoP") != "" {
			rec.err = fmt.Errorf("a Bearer token sent as %q with DPoP %q", scheme, r.Header.Get("DPoP"))
		}
	default:
		rec.proof, rec.jkt, rec.err = m.verify(r.Header, r.Method, m.serverURL(), tok)
		if rec.err == nil && (scheme != "DPoP" || rec.jkt != jkt) {
			rec.err = fmt.Errorf("scheme %q, proof key %s, token bound to %s", scheme, rec.jkt, jkt)
		}
		if rec.err == nil && m.rsNonce != "" && (m.rsNonceLoop || rec.proof.Nonce != m.rsNonce) {
			if m.rsNonceLoop {
				m.n++
				m.rsNonce = fmt.Sprintf("rs-nonce-%d", m.n)
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`DPoP error="use_dpop_nonce", resource_metadata="%s"`, prm))
			w.Header().Set("DPoP-Nonce", m.rsNonce)
			m.rsReqs = append(m.rsReqs, rec)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "use_dpop_nonce"})
			return
		}
	}
	m.rsReqs = append(m.rsReqs, rec)
	if rec.err != nil {
		w.Header().Set("WWW-Authenticate", `DPoP error="invalid_dpop_proof"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_dpop_proof"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (m *dpopMock) serveAS(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/.well-known/oauth-authorization-server":
		doc := map[string]any{
			"issuer":                           m.as.URL,
			"authorization_endpoint":           m.as.URL + "/authorize",
			"token_endpoint":                   m.as.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"},
		}
		if m.algs != nil {
			doc["dpop_signing_alg_values_supported"] = m.algs
		}
		writeJSON(w, http.StatusOK, doc)
	case r.URL.Path == "/authorize":
		q := r.URL.Query()
		m.mu.Lock()
		m.authReqs = append(m.authReqs, q)
		m.mu.Unlock()
		u, _ := url.Parse(q.Get("redirect_uri"))
		rq := u.Query()
		rq.Set("code", "the-code")
		rq.Set("state", q.Get("state"))
		u.RawQuery = rq.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	case r.URL.Path == "/token" && r.Method == http.MethodPost:
		if r.ParseForm() != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		rec := dpopReq{form: r.PostForm}
		m.n++
		resp := map[string]any{"access_token": fmt.Sprintf("at-%d", m.n), "expires_in": 3600}
		if m.bearer {
			m.tokenReqs = append(m.tokenReqs, rec)
			resp["token_type"] = "Bearer"
			m.bound[resp["access_token"].(string)] = ""
			writeJSON(w, http.StatusOK, resp)
			return
		}
		rec.proof, rec.jkt, rec.err = m.verify(r.Header, http.MethodPost, m.as.URL+"/token", "")
		m.tokenReqs = append(m.tokenReqs, rec)
		if rec.err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_dpop_proof", "error_description": rec.err.Error()})
			return
		}
		if m.asNonce != "" && (m.asNonceLoop || rec.proof.Nonce != m.asNonce) {
			if m.asNonceLoop {
				m.asNonce = fmt.Sprintf("as-nonce-%d", m.n)
			}
			w.Header().Set("DPoP-Nonce", m.asNonce)
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "use_dpop_nonce"})
			return
		}
		if m.retryRedirect != "" {
			w.Header().Set("Location", m.retryRedirect)
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		resp["token_type"] = "DPoP"
		m.bound[resp["access_token"].(string)] = rec.jkt
		writeJSON(w, http.StatusOK, resp)
	default:
		http.NotFound(w, r)
	}
}

func (m *dpopMock) requests() (auths []url.Values, tokens, rs []dpopReq) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]url.Values(nil), m.authReqs...), append([]dpopReq(nil), m.tokenReqs...), append([]dpopReq(nil), m.rsReqs...)
}

// dpopTransport is a code-flow Transport with DPoP for m (a public
// client pre-registered at its AS).
func dpopTransport(t *testing.T, m *dpopMock, configure func(o *Options)) *Transport {
	t.Helper()
	o := &Options{
		Authorize:     headless,
		RedirectURL:   "http://127.0.0.1:9/callback",
		PreRegistered: map[string]ClientCredentials{m.as.URL: {ClientID: "public-client"}},
		DPoP:          &DPoPOptions{},
		Logger:        slog.New(slog.DiscardHandler),
	}
	if configure != nil {
		configure(o)
	}
	tr, err := NewTransport(o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func postTo(t *testing.T, tr http.RoundTripper, target, body string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestDPoPCodeFlow(t *testing.T) {
	m := newDPoPMock(t, func(m *dpopMock) { m.algs = []string{"ES256"} })
	tr := dpopTransport(t, m, nil)
	for i := range 2 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		// The proof's htu leaves out the query (the mock compares it to
		// the bare server URL).
		if status, got, err := postTo(t, tr, m.serverURL()+"?session=1", body); err != nil || status != http.StatusOK || got != body {
			t.Fatalf("request %d: %d %q %v, want 200 with the body", i, status, got, err)
		}
	}
	auths, tokens, rs := m.requests()
	if len(tokens) != 1 || tokens[0].err != nil || tokens[0].proof.Nonce != "" {
		t.Fatalf("token requests = %+v, want one with a valid proof", tokens)
	}
	jkt := tokens[0].jkt
	if len(auths) != 1 || auths[0].Get("dpop_jkt") != jkt {
		t.Errorf("authorization request dpop_jkt = %q, want the proof key's thumbprint %q", auths[0].Get("dpop_jkt"), jkt)
	}
	// One 401 without a token, then two requests with a fresh proof each
	// (the mock refuses a repeated jti).
	if len(rs) != 3 || rs[0].auth != "" {
		t.Fatalf("MCP requests = %+v, want a 401 then 2", rs)
	}
	for _, r := range rs[1:] {
		if r.err != nil || !strings.HasPrefix(r.auth, "DPoP at-") || r.jkt != jkt || r.proof.ATH == "" {
			t.Errorf("MCP request %+v, want DPoP with a valid proof by the same key", r)
		}
	}
	if rs[1].proof.JTI == rs[2].proof.JTI {
		t.Error("the same jti twice")
	}
	tok, err := tr.Token(context.Background(), m.serverURL())
	if err != nil || tok == nil || tok.TokenType != TokenTypeDPoP || tok.DPoPKeyThumbprint != jkt {
		t.Errorf("stored token = %+v, %v; want a DPoP token bound to %s", tok, err, jkt)
	}
}

func TestDPoPNonces(t *testing.T) {
	m := newDPoPMock(t, func(m *dpopMock) { m.asNonce, m.rsNonce = "as-1", "rs-1" })
	tr := dpopTransport(t, m, nil)
	if status, _, err := postTo(t, tr, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("first request: %d %v", status, err)
	}
	_, tokens, rs := m.requests()
	// The token request is sent again with the AS nonce...
	if len(tokens) != 2 || tokens[0].proof == nil || tokens[0].proof.Nonce != "" || tokens[1].err != nil || tokens[1].proof.Nonce != "as-1" {
		t.Fatalf("token requests = %+v, want a use_dpop_nonce then the AS nonce", tokens)
	}
	// ...and the MCP request with the RS nonce, the same token.
	if len(rs) != 3 || rs[1].proof == nil || rs[1].proof.Nonce != "" || rs[2].err != nil || rs[2].proof.Nonce != "rs-1" || rs[1].auth != rs[2].auth {
		t.Fatalf("MCP requests = %+v, want 401, use_dpop_nonce, then the RS nonce with the same token", rs)
	}

	// The nonce is remembered: the next request needs no retry.
	if status, _, err := postTo(t, tr, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("second request: %d %v", status, err)
	}
	if _, _, rs := m.requests(); len(rs) != 4 || rs[3].proof.Nonce != "rs-1" {
		t.Fatalf("MCP requests = %d, want 4 (the remembered nonce used at once)", len(rs))
	}

	// A new nonce from the server replaces it: one retry, no new token.
	m.mu.Lock()
	m.rsNonce = "rs-2"
	m.mu.Unlock()
	if status, _, err := postTo(t, tr, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("after the nonce changed: %d %v", status, err)
	}
	_, tokens, rs = m.requests()
	if len(rs) != 6 || rs[5].proof.Nonce != "rs-2" || len(tokens) != 2 {
		t.Fatalf("MCP requests = %d (last nonce %q), token requests %d; want 6, rs-2, 2", len(rs), rs[len(rs)-1].proof.Nonce, len(tokens))
	}
}

func TestDPoPNonceRetriedOnce(t *testing.T) {
	t.Run("authorization server", func(t *testing.T) {
		m := newDPoPMock(t, func(m *dpopMock) { m.asNonce, m.asNonceLoop = "as-0", true })
		tr := dpopTransport(t, m, nil)
		_, _, err := postTo(t, tr, m.serverURL(), `{}`)
		var oe *OAuthError
		if !errors.As(err, &oe) || oe.Code != "use_dpop_nonce" {
			t.Fatalf("error = %v, want the second use_dpop_nonce as an *OAuthError", err)
		}
		if _, tokens, _ := m.requests(); len(tokens) != 2 {
			t.Errorf("token requests = %d, want 2", len(tokens))
		}
	})
	t.Run("MCP server", func(t *testing.T) {
		m := newDPoPMock(t, func(m *dpopMock) { m.rsNonce, m.rsNonceLoop = "rs-0", true })
		tr := dpopTransport(t, m, nil)
		status, _, err := postTo(t, tr, m.serverURL(), `{}`)
		if err != nil || status != http.StatusUnauthorized {
			t.Fatalf("got %d %v, want the 401 returned", status, err)
		}
		_, tokens, rs := m.requests()
		if len(rs) != 3 || len(tokens) != 1 {
			t.Errorf("MCP requests %d, token requests %d; want 3 (no token, no nonce, one nonce retry) and 1", len(rs), len(tokens))
		}
	})
}

func TestDPoPPrivateKeyJWTNonceRetry(t *testing.T) {
	// A client credentials grant with private_key_jwt: the retry after
	// use_dpop_nonce carries a new client assertion (a strict server
	// refuses a replayed jti).
	m := newDPoPMock(t, func(m *dpopMock) { m.asNonce = "as-1" })
	key := mustKey(t, "P-256")
	tr := dpopTransport(t, m, func(o *Options) {
		o.Authorize, o.RedirectURL, o.PreRegistered = nil, "", nil
		o.Grant = &Grant{Client: ClientCredentials{ClientID: "svc", PrivateKey: key}}
	})
	if status, _, err := postTo(t, tr, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d %v", status, err)
	}
	_, tokens, _ := m.requests()
	if len(tokens) != 2 || tokens[0].form.Get("grant_type") != "client_credentials" {
		t.Fatalf("token requests = %+v", tokens)
	}
	a0, a1 := tokens[0].form.Get("client_assertion"), tokens[1].form.Get("client_assertion")
	if a0 == "" || a0 == a1 {
		t.Errorf("client assertions %q and %q, want two different ones", a0, a1)
	}
	// The DPoP key is not the client's key.
	if tokens[1].jkt == "" || tokens[1].jkt == thumbprint(t, key.Public()) {
		t.Errorf("proof key %q", tokens[1].jkt)
	}
}

func thumbprint(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	sum, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(sum)
}

func TestDPoPBearerTokenFromTheAS(t *testing.T) {
	// An authorization server without DPoP answers with a Bearer token:
	// it is presented as Bearer, without a proof.
	m := newDPoPMock(t, func(m *dpopMock) { m.bearer = true })
	tr := dpopTransport(t, m, nil)
	if status, _, err := postTo(t, tr, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d %v", status, err)
	}
	_, _, rs := m.requests()
	if len(rs) != 2 || rs[1].err != nil || !strings.HasPrefix(rs[1].auth, "Bearer ") {
		t.Fatalf("MCP requests = %+v, want the token as Bearer without DPoP", rs)
	}
}

func TestDPoPAlgorithmNotSupported(t *testing.T) {
	m := newDPoPMock(t, func(m *dpopMock) { m.algs = []string{"RS256"} })
	tr := dpopTransport(t, m, nil) // ES256
	if _, _, err := postTo(t, tr, m.serverURL(), `{}`); !errors.Is(err, ErrDPoPUnsupported) {
		t.Fatalf("error = %v, want ErrDPoPUnsupported", err)
	}
	if _, tokens, _ := m.requests(); len(tokens) != 0 {
		t.Errorf("token requests = %d, want 0", len(tokens))
	}
	// With a key whose algorithm is listed it works.
	tr = dpopTransport(t, m, func(o *Options) { o.DPoP = &DPoPOptions{Key: mustKey(t, "RSA")} })
	if status, _, err := postTo(t, tr, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("RS256 key: %d %v", status, err)
	}
}

func TestDPoPTokenBoundToItsKey(t *testing.T) {
	m := newDPoPMock(t, nil)
	store := &MemoryTokenStore{}
	keyA := mustKey(t, "P-256")
	a := dpopTransport(t, m, func(o *Options) { o.TokenStore, o.DPoP = store, &DPoPOptions{Key: keyA} })
	if status, _, err := postTo(t, a, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("A: %d %v", status, err)
	}
	tokA, _ := a.Token(context.Background(), m.serverURL())
	if tokA == nil || tokA.DPoPKeyThumbprint != thumbprint(t, keyA.Public()) {
		t.Fatalf("A's token = %+v", tokA)
	}
	_, _, rs := m.requests()
	seen := len(rs)

	// Another key (the default: a new one) does not present A's token.
	b := dpopTransport(t, m, func(o *Options) { o.TokenStore = store })
	if status, _, err := postTo(t, b, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("B: %d %v", status, err)
	}
	_, tokens, rs := m.requests()
	if rs[seen].auth != "" || len(tokens) != 2 {
		t.Errorf("B's first request carried %q; token requests %d; want no token and a new one", rs[seen].auth, len(tokens))
	}

	// Nor does a Transport without DPoP, as Bearer.
	c := dpopTransport(t, m, func(o *Options) { o.TokenStore, o.DPoP = store, nil })
	_, _, _ = postTo(t, c, m.serverURL(), `{}`)
	_, _, rs = m.requests()
	for _, r := range rs[seen:] {
		if strings.HasPrefix(r.auth, "Bearer ") {
			t.Errorf("a DPoP-bound token sent as Bearer: %+v", r)
		}
	}

	// The same key again (a stored key after a restart) reuses it.
	store2 := &MemoryTokenStore{}
	_ = store2.Save(context.Background(), resourceKey(mustParse(t, m.serverURL())), tokA)
	d := dpopTransport(t, m, func(o *Options) { o.TokenStore, o.DPoP = store2, &DPoPOptions{Key: keyA} })
	_, before, _ := m.requests()
	if status, _, err := postTo(t, d, m.serverURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("D: %d %v", status, err)
	}
	_, after, rs := m.requests()
	if len(after) != len(before) || rs[len(rs)-1].auth != "DPoP "+tokA.AccessToken {
		t.Errorf("D: token requests %d -> %d, last MCP request %q; want A's token reused", len(before), len(after), rs[len(rs)-1].auth)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestDPoPProof(t *testing.T) {
	for _, kind := range []string{"P-256", "P-384", "RSA", "Ed25519"} {
		t.Run(kind, func(t *testing.T) {
			key := mustKey(t, kind)
			k, err := newDPoPKey(&DPoPOptions{Key: key})
			if err != nil {
				t.Fatal(err)
			}
			u := mustParse(t, "HTTPS://MCP.example:8443/a/b?q=1#f")
			p, err := k.proof(http.MethodGet, u, "tok", "n-1", time.Unix(1700000000, 0))
			if err != nil {
				t.Fatal(err)
			}
			jws, err := jose.ParseSignedCompact(p, []jose.SignatureAlgorithm{k.alg})
			if err != nil {
				t.Fatal(err)
			}
			hdr := jws.Signatures[0].Protected
			if hdr.ExtraHeaders[jose.HeaderType] != "dpop+jwt" || hdr.JSONWebKey == nil || !hdr.JSONWebKey.IsPublic() {
				t.Fatalf("header %+v", hdr)
			}
			rawHeader, err := base64.RawURLEncoding.DecodeString(strings.Split(p, ".")[0])
			if err != nil || strings.Contains(string(rawHeader), `"d"`) || strings.Contains(string(rawHeader), `"kid"`) {
				t.Errorf("proof header %s (%v): want the public key only", rawHeader, err)
			}
			raw, err := jws.Verify(key.Public())
			if err != nil {
				t.Fatal(err)
			}
			var c dpopClaims
			_ = json.Unmarshal(raw, &c)
			sum := sha256.Sum256([]byte("tok"))
			want := dpopClaims{JTI: c.JTI, HTM: "GET", HTU: "https://mcp.example:8443/a/b", IAT: 1700000000, ATH: base64.RawURLEncoding.EncodeToString(sum[:]), Nonce: "n-1"}
			if c != want || len(c.JTI) < 16 {
				t.Errorf("claims %+v, want %+v", c, want)
			}
			if k.jkt != thumbprint(t, key.Public()) {
				t.Errorf("jkt %q", k.jkt)
			}
		})
	}
}

func TestDPoPOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    DPoPOptions
	}{
		{"short RSA key", DPoPOptions{Key: mustKey(t, "RSA-1024")}},
		{"algorithm not for the key", DPoPOptions{Key: mustKey(t, "P-256"), SigningAlgorithm: "RS256"}},
		{"HMAC", DPoPOptions{SigningAlgorithm: "HS256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewTransport(&Options{DPoP: &tc.o}); err == nil || !strings.Contains(err.Error(), "Options.DPoP") {
				t.Errorf("error = %v, want Options.DPoP refused", err)
			}
		})
	}
}

func TestAuthChallengePrefersDPoP(t *testing.T) {
	tr := newTestTransport(t, func(o *Options) { o.DPoP = &DPoPOptions{} })
	h := http.Header{"Www-Authenticate": {`Bearer resource_metadata="https://rs/prm", scope="a", error="invalid_token"`, `DPoP algs="ES256", error="use_dpop_nonce"`}}
	c, ok, err := tr.authChallenge(h)
	if err != nil || !ok || c.Scheme != "DPoP" || c.Param("error") != "use_dpop_nonce" || c.Param("resource_metadata") != "https://rs/prm" || c.Param("scope") != "a" {
		t.Errorf("authChallenge = %+v, %v, %v; want the DPoP challenge with the Bearer one's resource_metadata and scope", c, ok, err)
	}
	bearerOnly := newTestTransport(t, nil)
	if c, ok, _ := bearerOnly.authChallenge(h); !ok || c.Scheme != "Bearer" {
		t.Errorf("without DPoP: %+v, want the Bearer challenge", c)
	}
	if _, ok, _ := tr.authChallenge(http.Header{"Www-Authenticate": {`Basic realm="x"`}}); ok {
		t.Error("a Basic challenge taken for DPoP or Bearer")
	}
}

func TestValidNonce(t *testing.T) {
	for s, want := range map[string]bool{
		"eyJ7S_zG.eyJH0-Z.HX4w-7v":          true,
		"":                                  false,
		"a b":                               false,
		`a"b`:                               false,
		"a\\b":                              false,
		"a\nb":                              false,
		strings.Repeat("n", maxDPoPNonce):   true,
		strings.Repeat("n", maxDPoPNonce+1): false,
	} {
		if validNonce(s) != want {
			t.Errorf("validNonce(%.20q) = %v, want %v", s, !want, want)
		}
	}
}
