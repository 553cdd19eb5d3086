package auth

import (
	"bytes"
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
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// mock is an MCP server (the protected resource) and its authorization
// server on loopback, configurable per test, recording what the client
// sent.
type mock struct {
	t  *testing.T
	rs *httptest.Server
	as *httptest.Server

	// configuration (set before the first request)
	asPrefix       string   // path of the issuer, e.g. "/tenant1"
	prmAtRoot      bool     // serve the PRM at the root well-known URL only
	prmInChallenge bool     // put resource_metadata in the 401 challenge
	prmResource    string   // overrides the PRM resource
	prmScopes      []string // PRM scopes_supported
	asScopes       []string // AS scopes_supported
	challengeScope string   // scope in the 401 challenge
	writeScope     string   // scope a request whose body contains "write" needs (403 otherwise)
	authMethods    []string // token_endpoint_auth_methods_supported
	regAuthMethod  string   // token_endpoint_auth_method in the registration response
	regSecret      string   // client_secret in the registration response
	noDCR          bool
	cimd           bool
	issSupported   bool
	issMode        string // "correct" (default), "omit", "wrong", "slash"
	metadataIssuer string // overrides the issuer in the AS metadata
	openID         bool   // serve the AS metadata as OpenID configuration only
	refreshTokens  bool   // issue refresh tokens
	expiresIn      int
	preClientID    string // accepted with client_secret_basic "pre-secret"
	noS256         bool
	alwaysForbid   bool         // 403 "write" requests even with writeScope
	prmAS          string       // overrides authorization_servers in the PRM
	trust          *mock        // the RS also accepts the tokens of trust's AS
	next           http.Handler // serves authorized /mcp requests (default: echo the body)
	// redirects maps request paths (of either server) to the Location of
	// a redirectStatus (default 307) answer; set under mu.
	redirects      map[string]string
	redirectStatus int

	// machine-to-machine grants (grant_test.go)
	m2mOnly      bool             // AS metadata without authorization_endpoint and PKCE (a client_credentials-only AS)
	grantTypes   []string         // grant_types_supported
	signingAlgs  []string         // token_endpoint_auth_signing_alg_values_supported
	ccSecret     string           // client "cc-client" authenticates with this secret (basic or post)
	ccKey        crypto.PublicKey // client "cc-client" authenticates with private_key_jwt signed by the matching key
	jwtAssertion string           // the assertion the jwt-bearer grant accepts
	tokenPad     int              // bytes of padding in token responses
	tokenType    string           // overrides token_type in token responses
	assertions   []jwt.Claims     // verified client assertions

	mu            sync.Mutex
	metadataHits  []string
	registrations []map[string]any
	authRequests  []url.Values
	tokenRequests []tokenReq
	challenges    map[string]string // code -> code_challenge
	scopes        map[string]string // access token -> scope
	refreshes     map[string]string // refresh token -> scope
	rsRequests    []rsReq
	redirected    []string // "path grant_type" of each request answered with a redirect
	n             int
}

type tokenReq struct {
	form  url.Values
	basic string // "id:secret" from Basic auth, if any
}

type rsReq struct {
	auth string
	body string
}

func newMock(t *testing.T, configure func(m *mock)) *mock {
	t.Helper()
	m := &mock{t: t, prmInChallenge: true, issSupported: true, challenges: map[string]string{}, scopes: map[string]string{}, refreshes: map[string]string{}}
	if configure != nil {
		configure(m)
	}
	m.as = httptest.NewServer(http.HandlerFunc(m.serveAS))
	m.rs = httptest.NewServer(http.HandlerFunc(m.serveRS))
	t.Cleanup(m.as.Close)
	t.Cleanup(m.rs.Close)
	return m
}

func (m *mock) issuer() string    { return m.as.URL + m.asPrefix }
func (m *mock) serverURL() string { return m.rs.URL + "/mcp" }

func (m *mock) prmPath() string {
	if m.prmAtRoot {
		return "/.well-known/oauth-protected-resource"
	}
	return "/.well-known/oauth-protected-resource/mcp"
}

// redirect answers r with a redirect when m.redirects names its path.
func (m *mock) redirect(w http.ResponseWriter, r *http.Request) bool {
	m.mu.Lock()
	loc, ok := m.redirects[r.URL.Path]
	status := m.redirectStatus
	m.mu.Unlock()
	if !ok {
		return false
	}
	_ = r.ParseForm()
	m.mu.Lock()
	m.redirected = append(m.redirected, r.URL.Path+" "+r.PostForm.Get("grant_type"))
	m.mu.Unlock()
	if status == 0 {
		status = http.StatusTemporaryRedirect
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(status)
	return true
}

func (m *mock) serveRS(w http.ResponseWriter, r *http.Request) {
	if m.redirect(w, r) {
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == m.prmPath() {
		res := m.serverURL()
		if m.prmAtRoot {
			res = m.rs.URL
		}
		if m.prmResource != "" {
			res = m.prmResource
		}
		m.mu.Lock()
		as := m.prmAS
		m.mu.Unlock()
		if as == "" {
			as = m.issuer()
		}
		doc := map[string]any{"resource": res, "authorization_servers": []string{as}}
		if m.prmScopes != nil {
			doc["scopes_supported"] = m.prmScopes
		}
		m.mu.Lock()
		m.metadataHits = append(m.metadataHits, "rs:"+r.URL.Path)
		m.mu.Unlock()
		writeJSON(w, http.StatusOK, doc)
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	authz := r.Header.Get("Authorization")
	m.mu.Lock()
	m.rsRequests = append(m.rsRequests, rsReq{auth: authz, body: string(body)})
	scope, ok := m.scopes[strings.TrimPrefix(authz, "Bearer ")]
	m.mu.Unlock()
	if !ok && m.trust != nil {
		m.trust.mu.Lock()
		scope, ok = m.trust.scopes[strings.TrimPrefix(authz, "Bearer ")]
		m.trust.mu.Unlock()
	}
	challenge := `Bearer error="invalid_token"`
	if m.prmInChallenge {
		challenge += fmt.Sprintf(`, resource_metadata="%s%s"`, m.rs.URL, m.prmPath())
	}
	if m.challengeScope != "" {
		challenge += fmt.Sprintf(`, scope="%s"`, m.challengeScope)
	}
	if !strings.HasPrefix(authz, "Bearer ") || !ok {
		w.Header().Set("WWW-Authenticate", challenge)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	if m.writeScope != "" && strings.Contains(string(body), "write") && (m.alwaysForbid || !slices.Contains(strings.Fields(scope), m.writeScope)) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s%s"`, m.writeScope, m.rs.URL, m.prmPath()))
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "insufficient_scope"})
		return
	}
	if m.next != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (m *mock) asMetadataPath() string {
	if m.openID {
		return m.asPrefix + "/.well-known/openid-configuration"
	}
	return "/.well-known/oauth-authorization-server" + m.asPrefix
}

func (m *mock) serveAS(w http.ResponseWriter, r *http.Request) {
	if m.redirect(w, r) {
		return
	}
	base := m.as.URL + m.asPrefix
	switch {
	case r.Method == http.MethodGet && r.URL.Path == m.asMetadataPath():
		iss := m.issuer()
		if m.metadataIssuer != "" {
			iss = m.metadataIssuer
		}
		doc := map[string]any{
			"issuer":                   iss,
			"authorization_endpoint":   base + "/authorize",
			"token_endpoint":           base + "/token",
			"response_types_supported": []string{"code"},
		}
		if m.m2mOnly {
			delete(doc, "authorization_endpoint")
			delete(doc, "response_types_supported")
		}
		if m.grantTypes != nil {
			doc["grant_types_supported"] = m.grantTypes
		}
		if m.signingAlgs != nil {
			doc["token_endpoint_auth_signing_alg_values_supported"] = m.signingAlgs
		}
		if !m.noS256 && !m.m2mOnly {
			doc["code_challenge_methods_supported"] = []string{"S256"}
		}
		if !m.noDCR {
			doc["registration_endpoint"] = base + "/register"
		}
		if m.authMethods != nil {
			doc["token_endpoint_auth_methods_supported"] = m.authMethods
		}
		if m.asScopes != nil {
			doc["scopes_supported"] = m.asScopes
		}
		if m.cimd {
			doc["client_id_metadata_document_supported"] = true
		}
		if m.issSupported {
			doc["authorization_response_iss_parameter_supported"] = true
		}
		m.mu.Lock()
		m.metadataHits = append(m.metadataHits, "as:"+r.URL.Path)
		m.mu.Unlock()
		writeJSON(w, http.StatusOK, doc)
	case r.Method == http.MethodPost && r.URL.Path == m.asPrefix+"/register":
		var md map[string]any
		if err := json.NewDecoder(r.Body).Decode(&md); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
			return
		}
		m.mu.Lock()
		m.registrations = append(m.registrations, md)
		m.n++
		id := fmt.Sprintf("client-%d", m.n)
		m.mu.Unlock()
		resp := map[string]any{"client_id": id}
		if m.regSecret != "" {
			resp["client_secret"] = m.regSecret
		}
		if m.regAuthMethod != "" {
			resp["token_endpoint_auth_method"] = m.regAuthMethod
		}
		writeJSON(w, http.StatusCreated, resp)
	case r.Method == http.MethodGet && r.URL.Path == m.asPrefix+"/authorize":
		q := r.URL.Query()
		m.mu.Lock()
		m.authRequests = append(m.authRequests, q)
		m.n++
		code := fmt.Sprintf("code-%d", m.n)
		m.challenges[code] = q.Get("code_challenge") + " " + q.Get("scope")
		m.mu.Unlock()
		u, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		rq := u.Query()
		rq.Set("code", code)
		rq.Set("state", q.Get("state"))
		switch m.issMode {
		case "", "correct":
			rq.Set("iss", m.issuer())
		case "wrong":
			rq.Set("iss", "https://evil.example")
		case "slash":
			rq.Set("iss", m.issuer()+"/")
		}
		u.RawQuery = rq.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	case r.Method == http.MethodPost && r.URL.Path == m.asPrefix+"/token":
		if err := r.ParseForm(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
			return
		}
		tr := tokenReq{form: r.PostForm}
		if id, secret, ok := r.BasicAuth(); ok {
			// RFC 6749 section 2.3.1: both are form-encoded.
			id, err1 := url.QueryUnescape(id)
			secret, err2 := url.QueryUnescape(secret)
			if err1 != nil || err2 != nil {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
				return
			}
			tr.basic = id + ":" + secret
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.tokenRequests = append(m.tokenRequests, tr)
		if m.preClientID != "" && tr.basic != m.preClientID+":pre-secret" {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
			return
		}
		var scope string
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			if r.PostForm.Has("client_assertion") {
				if err := m.authenticateClient(tr); err != nil {
					writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": err.Error()})
					return
				}
			}
			v, ok := m.challenges[r.PostForm.Get("code")]
			delete(m.challenges, r.PostForm.Get("code"))
			challenge, sc, _ := strings.Cut(v, " ")
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE"})
				return
			}
			scope = sc
		case "refresh_token":
			sc, ok := m.refreshes[r.PostForm.Get("refresh_token")]
			if !ok {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
			scope = sc
		case "client_credentials":
			if err := m.authenticateClient(tr); err != nil {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": err.Error()})
				return
			}
			scope = r.PostForm.Get("scope")
		case "urn:ietf:params:oauth:grant-type:jwt-bearer":
			if m.jwtAssertion == "" || r.PostForm.Get("assertion") != m.jwtAssertion {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "assertion refused"})
				return
			}
			scope = r.PostForm.Get("scope")
		default:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		m.n++
		tok := fmt.Sprintf("at-%d", m.n)
		m.scopes[tok] = scope
		tt := "Bearer"
		if m.tokenType != "" {
			tt = m.tokenType
		}
		resp := map[string]any{"access_token": tok, "token_type": tt}
		if m.tokenPad > 0 {
			resp["padding"] = strings.Repeat("x", m.tokenPad)
		}
		if scope != "" {
			resp["scope"] = scope
		}
		if m.expiresIn != 0 {
			resp["expires_in"] = m.expiresIn
		}
		if m.refreshTokens {
			rt := fmt.Sprintf("rt-%d", m.n)
			m.refreshes[rt] = scope
			resp["refresh_token"] = rt
		}
		writeJSON(w, http.StatusOK, resp)
	default:
		http.NotFound(w, r)
	}
}

// authenticateClient checks the client authentication of a
// client_credentials request (m.mu held): client "cc-client" with
// m.ccSecret (Basic or in the form) or a private_key_jwt assertion
// signed with m.ccKey's private key for this issuer.
func (m *mock) authenticateClient(tr tokenReq) error {
	f := tr.form
	switch {
	case f.Has("client_assertion"):
		if m.ccKey == nil {
			return errors.New("private_key_jwt not registered")
		}
		if f.Get("client_assertion_type") != ClientAssertionType {
			return fmt.Errorf("client_assertion_type %q", f.Get("client_assertion_type"))
		}
		tok, err := jwt.ParseSigned(f.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.RS256, jose.PS256, jose.EdDSA})
		if err != nil {
			return err
		}
		var c jwt.Claims
		if err := tok.Claims(m.ccKey, &c); err != nil {
			return err
		}
		if err := c.Validate(jwt.Expected{Issuer: "cc-client", Subject: "cc-client", AnyAudience: jwt.Audience{m.issuer()}}); err != nil {
			return err
		}
		for _, seen := range m.assertions {
			if seen.ID == c.ID {
				return errors.New("replayed jti")
			}
		}
		if c.ID == "" || c.Expiry == nil || f.Get("client_id") != "cc-client" {
			return errors.New("no jti, no exp or wrong client_id")
		}
		m.assertions = append(m.assertions, c)
		return nil
	case tr.basic != "":
		if tr.basic != "cc-client:"+m.ccSecret || m.ccSecret == "" || f.Has("client_secret") {
			return errors.New("wrong client credentials")
		}
		return nil
	default:
		if f.Get("client_id") != "cc-client" || f.Get("client_secret") != m.ccSecret || m.ccSecret == "" {
			return errors.New("wrong client credentials")
		}
		return nil
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// headless is the test AuthorizeFunc: it GETs the authorization URL and
// returns the redirect's Location without following it.
func headless(ctx context.Context, authorizationURL string) (*url.URL, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorizationURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return resp.Location()
}

func newTestTransport(t *testing.T, configure func(o *Options)) *Transport {
	t.Helper()
	o := &Options{Authorize: headless, RedirectURL: "http://127.0.0.1:9/callback", Logger: slog.New(slog.DiscardHandler)}
	if configure != nil {
		configure(o)
	}
	tr, err := NewTransport(o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// post sends body to the mock's MCP endpoint through tr and returns the
// status and response body.
func post(t *testing.T, tr http.RoundTripper, m *mock, body string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, m.serverURL(), strings.NewReader(body))
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

func (m *mock) snapshot() (auths []url.Values, tokens []tokenReq, regs []map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.authRequests), slices.Clone(m.tokenRequests), slices.Clone(m.registrations)
}
