// Package oauthtest is a minimal OAuth 2.1 authorization server on
// loopback for tests of the auth package and its users: RFC 8414
// metadata, dynamic client registration (RFC 7591), an authorization
// endpoint that grants at once (no login page: it redirects with code,
// state and iss), a token endpoint that checks PKCE S256 and issues RS256
// JWT access tokens (RFC 9068, aud = the requested resource) and rotating
// refresh tokens, and a JWKS endpoint. A token request with a DPoP proof
// (RFC 9449) gets a DPoP-bound token: token_type DPoP and a cnf.jkt
// claim, the thumbprint of the proof's key. It counts what it was asked so
// that tests can assert how often a client authorized, exchanged a code
// or refreshed.
//
// It is test equipment: everything is kept in memory, checks are strict
// but simple, and it is not meant to face the network.
package oauthtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Options configure a Server.
type Options struct {
	// Subject is the sub claim of every access token; empty means
	// "user-1".
	Subject string
	// Scopes are the scopes the server knows (scopes_supported, with
	// offline_access added). A request for another scope is refused with
	// invalid_scope. Nil accepts any scope and lists none.
	Scopes []string
	// TokenTTL is the lifetime of access tokens (expires_in and exp);
	// zero means one hour.
	TokenTTL time.Duration
	// Now is the clock of iat and exp; nil means time.Now. Share it with
	// the resource server's verifier to make tokens expire on demand.
	Now func() time.Time
	// Clients are pre-registered confidential clients: client id to
	// secret. They may use any http redirect URI on a loopback host (RFC
	// 8252 section 7.3) and authenticate with client_secret_basic or
	// client_secret_post.
	Clients map[string]string
}

// Stats count the requests a Server granted.
type Stats struct {
	Registrations  int // dynamic client registrations
	Authorizations int // authorization requests redirected with a code
	CodeGrants     int // authorization codes exchanged for tokens
	DPoPTokens     int // tokens bound to a DPoP key
	RefreshGrants  int // refresh tokens exchanged for tokens
	TokenErrors    int // token requests refused
}

// Server is a running authorization server.
type Server struct {
	o      Options
	hs     *httptest.Server
	key    *rsa.PrivateKey
	kid    string
	signer jose.Signer

	mu      sync.Mutex
	clients map[string]*client
	codes   map[string]*grant
	refresh map[string]*grant
	stats   Stats
	deny    bool
}

type client struct {
	secret       string
	redirectURIs []string // nil: any loopback http URI (pre-registered)
}

type grant struct {
	clientID, redirectURI, challenge, scope, resource string
	jkt                                               string // the DPoP key of a refresh token's tokens
	expires                                           time.Time
}

// New starts a Server on a loopback port. Close it when done.
func New(opts Options) (*Server, error) {
	if opts.Subject == "" {
		opts.Subject = "user-1"
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("oauthtest: %w", err)
	}
	s := &Server{o: opts, key: key, kid: "key-1", clients: map[string]*client{}, codes: map[string]*grant{}, refresh: map[string]*grant{}}
	s.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", s.kid))
	if err != nil {
		return nil, fmt.Errorf("oauthtest: %w", err)
	}
	for id, secret := range opts.Clients {
		s.clients[id] = &client{secret: secret}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("GET /jwks", s.jwks)
	s.hs = httptest.NewServer(mux)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.hs.Close() }

// Issuer is the server's issuer identifier (its base URL).
func (s *Server) Issuer() string { return s.hs.URL }

// JWKSURL is where the server publishes its signing key.
func (s *Server) JWKSURL() string { return s.hs.URL + "/jwks" }

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// SetDeny makes the authorization endpoint answer error=access_denied
// (true) or grant (false).
func (s *Server) SetDeny(deny bool) {
	s.mu.Lock()
	s.deny = deny
	s.mu.Unlock()
}

// RevokeRefreshTokens forgets every refresh token issued so far.
func (s *Server) RevokeRefreshTokens() {
	s.mu.Lock()
	clear(s.refresh)
	s.mu.Unlock()
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	iss := s.Issuer()
	md := map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + "/authorize",
		"token_endpoint":                                 iss + "/token",
		"registration_endpoint":                          iss + "/register",
		"jwks_uri":                                       s.JWKSURL(),
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post"},
		"authorization_response_iss_parameter_supported": true,
		"dpop_signing_alg_values_supported":              dpopAlgs,
	}
	if s.o.Scopes != nil {
		md["scopes_supported"] = append(slices.Clone(s.o.Scopes), "offline_access")
	}
	writeJSON(w, http.StatusOK, md)
}

func (s *Server) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &s.key.PublicKey, KeyID: s.kid, Algorithm: string(jose.RS256), Use: "sig"}}})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var md struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&md); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not a JSON object")
		return
	}
	if len(md.RedirectURIs) == 0 || len(md.RedirectURIs) > 10 {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "one to ten redirect_uris are required")
		return
	}
	for _, ru := range md.RedirectURIs {
		u, err := url.Parse(ru)
		if err != nil || !u.IsAbs() || u.Fragment != "" {
			oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "redirect URIs must be absolute, without fragment")
			return
		}
	}
	c := &client{redirectURIs: md.RedirectURIs}
	method := md.AuthMethod
	switch method {
	case "", "none":
		method = "none"
	case "client_secret_basic", "client_secret_post":
		c.secret = random()
	default:
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "unsupported token_endpoint_auth_method")
		return
	}
	id := "dyn-" + random()
	s.mu.Lock()
	s.clients[id] = c
	s.stats.Registrations++
	s.mu.Unlock()
	resp := map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": method,
		"client_id_issued_at": time.Now().Unix()}
	if c.secret != "" {
		resp["client_secret"] = c.secret
	}
	writeJSON(w, http.StatusCreated, resp)
}

// authorize grants at once: there is no user to ask.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c := s.clients[q.Get("client_id")]
	deny := s.deny
	s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if c == nil || !c.allows(redirect) {
		// Never redirect to an unverified URI.
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	back := func(params url.Values) {
		u, _ := url.Parse(redirect) // checked by allows
		rq := u.Query()
		for k, v := range params {
			rq[k] = v
		}
		if st := q.Get("state"); st != "" {
			rq.Set("state", st)
		}
		rq.Set("iss", s.Issuer())
		u.RawQuery = rq.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	fail := func(code, desc string) { back(url.Values{"error": {code}, "error_description": {desc}}) }
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "only code")
		return
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) < 43 || len(q.Get("code_challenge")) > 128:
		fail("invalid_request", "PKCE S256 is required")
		return
	case q.Get("resource") == "":
		fail("invalid_target", "a resource indicator is required")
		return
	case !s.knownScopes(q.Get("scope")):
		fail("invalid_scope", "unknown scope")
		return
	case deny:
		fail("access_denied", "the user said no")
		return
	}
	code := random()
	s.mu.Lock()
	s.codes[code] = &grant{clientID: q.Get("client_id"), redirectURI: redirect, challenge: q.Get("code_challenge"),
		scope: q.Get("scope"), resource: q.Get("resource"), expires: time.Now().Add(time.Minute)}
	s.stats.Authorizations++
	s.mu.Unlock()
	back(url.Values{"code": {code}})
}

func (c *client) allows(redirect string) bool {
	if c.redirectURIs != nil {
		return slices.Contains(c.redirectURIs, redirect)
	}
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" || u.Fragment != "" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback())
}

func (s *Server) knownScopes(scope string) bool {
	if s.o.Scopes == nil {
		return true
	}
	for _, sc := range strings.Fields(scope) {
		if sc != "offline_access" && !slices.Contains(s.o.Scopes, sc) {
			return false
		}
	}
	return true
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_request", "unreadable form")
		return
	}
	f := r.PostForm
	clientID, err := s.authenticate(r)
	if err != nil {
		s.tokenError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	var g *grant
	switch f.Get("grant_type") {
	case "authorization_code":
		s.mu.Lock()
		g = s.codes[f.Get("code")]
		delete(s.codes, f.Get("code")) // one use only
		s.mu.Unlock()
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case g == nil || time.Now().After(g.expires) || g.clientID != clientID:
			s.tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown or expired code")
			return
		case f.Get("redirect_uri") != g.redirectURI:
			s.tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			s.tokenError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
			return
		}
	case "refresh_token":
		s.mu.Lock()
		g = s.refresh[f.Get("refresh_token")]
		if g != nil && g.clientID == clientID {
			delete(s.refresh, f.Get("refresh_token")) // rotated below
		}
		s.mu.Unlock()
		if g == nil || g.clientID != clientID {
			s.tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
			return
		}
	default:
		s.tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "")
		return
	}
	jkt, err := s.dpopKey(r)
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_dpop_proof", err.Error())
		return
	}
	if g.jkt != "" && jkt != g.jkt {
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is bound to another DPoP key")
		return
	}
	if res := f.Get("resource"); res != "" && res != g.resource {
		s.tokenError(w, http.StatusBadRequest, "invalid_target", "the resource differs from the grant's")
		return
	}
	now := s.o.Now()
	claims := map[string]any{
		"iss": s.Issuer(), "sub": s.o.Subject, "aud": g.resource, "client_id": clientID,
		"iat": now.Unix(), "exp": now.Add(s.o.TokenTTL).Unix(), "jti": random(),
	}
	if g.scope != "" {
		claims["scope"] = g.scope
	}
	tokenType := "Bearer"
	if jkt != "" {
		claims["cnf"] = map[string]string{"jkt": jkt}
		tokenType = "DPoP"
	}
	at, err := jwt.Signed(s.signer).Claims(claims).Serialize()
	if err != nil {
		s.tokenError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	rt := random()
	s.mu.Lock()
	s.refresh[rt] = &grant{clientID: clientID, scope: g.scope, resource: g.resource, jkt: jkt}
	if jkt != "" {
		s.stats.DPoPTokens++
	}
	if f.Get("grant_type") == "authorization_code" {
		s.stats.CodeGrants++
	} else {
		s.stats.RefreshGrants++
	}
	s.mu.Unlock()
	resp := map[string]any{"access_token": at, "token_type": tokenType, "expires_in": int(s.o.TokenTTL / time.Second), "refresh_token": rt}
	if g.scope != "" {
		resp["scope"] = g.scope
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, resp)
}

var dpopAlgs = []string{"ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA"}

// dpopKey returns the thumbprint of the key of the token request's DPoP
// proof, "" when it has none. The proof's signature, typ, htm, htu and
// iat are checked (its jti is not remembered: this is test equipment).
func (s *Server) dpopKey(r *http.Request) (string, error) {
	values := r.Header.Values("DPoP")
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", errors.New("more than one DPoP header")
	}
	var algs []jose.SignatureAlgorithm
	for _, a := range dpopAlgs {
		algs = append(algs, jose.SignatureAlgorithm(a))
	}
	jws, err := jose.ParseSignedCompact(values[0], algs)
	if err != nil {
		return "", err
	}
	h := jws.Signatures[0].Protected
	if h.ExtraHeaders[jose.HeaderType] != "dpop+jwt" || h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() {
		return "", errors.New("not a dpop+jwt with a public jwk")
	}
	payload, err := jws.Verify(h.JSONWebKey)
	if err != nil {
		return "", err
	}
	var c struct {
		HTM string `json:"htm"`
		HTU string `json:"htu"`
		IAT int64  `json:"iat"`
		JTI string `json:"jti"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", err
	}
	if c.HTM != http.MethodPost || c.HTU != s.Issuer()+"/token" || c.JTI == "" {
		return "", fmt.Errorf("htm %q, htu %q: not this token endpoint", c.HTM, c.HTU)
	}
	if d := time.Since(time.Unix(c.IAT, 0)); d > 5*time.Minute || d < -time.Minute {
		return "", errors.New("iat out of range")
	}
	sum, err := h.JSONWebKey.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// authenticate returns the client of a token request: client_secret_basic
// (form-encoded id and secret), client_secret_post, or a public client's
// client_id.
func (s *Server) authenticate(r *http.Request) (string, error) {
	id, secret, basic := r.BasicAuth()
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return "", errors.New("malformed Basic credentials")
		}
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	c := s.clients[id]
	s.mu.Unlock()
	switch {
	case c == nil:
		return "", errors.New("unknown client")
	case c.secret != secret:
		return "", errors.New("wrong client credentials")
	}
	return id, nil
}

func (s *Server) tokenError(w http.ResponseWriter, status int, code, desc string) {
	s.mu.Lock()
	s.stats.TokenErrors++
	s.mu.Unlock()
	oauthError(w, status, code, desc)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	body := map[string]string{"error": code}
	if desc != "" {
		body["error_description"] = desc
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// random is 16 random bytes, base64url.
func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
