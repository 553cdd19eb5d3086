package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

var errNoRefresh = errors.New("auth: no known metadata or client to refresh with")

// authorize obtains a new token for the MCP server at server after sent
// (nil if none) was refused with the challenge ch; stepUp is set for a
// 403 insufficient_scope. version is the refused request's
// MCP-Protocol-Version header ("" if none).
func (t *Transport) authorize(ctx context.Context, server *url.URL, version, key string, sent *Token, ch Challenge, stepUp bool) (*Token, error) {
	t.flow.Lock()
	defer t.flow.Unlock()

	// Another request may have authorized while this one waited.
	if cur, err := t.loadToken(ctx, key); err == nil && cur != nil && (sent == nil || cur.AccessToken != sent.AccessToken) {
		if !stepUp || scopesCover(cur.Scope, ch.Param("scope")) {
			return cur, nil
		}
		sent = cur
	}

	d, err := t.discover(ctx, server, version, ch)
	if err != nil {
		return nil, err
	}
	issuer, asm := d.issuer, d.asm
	sameGrant := sent != nil && sent.Issuer == issuer && sent.Resource == d.resource
	if sent != nil && !sameGrant {
		t.log.InfoContext(ctx, "auth: the authorization server or resource changed; dropping the old token",
			"server", key, "old_issuer", sent.Issuer, "issuer", issuer)
		if err := t.store.Delete(ctx, key); err != nil {
			return nil, fmt.Errorf("auth: deleting the token for %s: %w", key, err)
		}
	}

	// A token refused without a scope problem may just need refreshing.
	if !stepUp && sameGrant && sent.RefreshToken != "" && (ch.Param("scope") == "" || scopesCover(sent.Scope, ch.Param("scope"))) {
		if c := t.knownClient(issuer); c != nil {
			tok, err := t.refresh(ctx, asm, c, sent)
			if err == nil {
				if err := t.store.Save(ctx, key, tok); err != nil {
					return nil, fmt.Errorf("auth: saving the token for %s: %w", key, err)
				}
				return tok, nil
			}
			t.log.DebugContext(ctx, "auth: refresh failed; authorizing again", "server", key, "error", err)
		}
	}

	if t.opts.Grant == nil && t.opts.Authorize == nil {
		return nil, ErrNoAuthorizer
	}
	scope := ch.Param("scope")
	if scope == "" {
		scope = strings.Join(d.scopes, " ")
	}
	if sameGrant {
		// Keep what was granted before (SEP-2350): a step-up adds scopes.
		scope = unionScopes(withoutScope(sent.Scope, "offline_access"), scope)
	}
	if t.opts.Grant != nil {
		// No user, no offline_access: the grant runs again when needed.
		tok, err := t.machineGrant(ctx, asm, d.resource, scope)
		if err != nil {
			return nil, err
		}
		if err := t.store.Save(ctx, key, tok); err != nil {
			return nil, fmt.Errorf("auth: saving the token for %s: %w", key, err)
		}
		return tok, nil
	}
	if scope != "" && !t.opts.NoOfflineAccess && slices.Contains(asm.ScopesSupported, "offline_access") {
		scope = unionScopes(scope, "offline_access")
	}
	client, err := t.clientFor(ctx, issuer, asm)
	if err != nil {
		return nil, err
	}
	tok, err := t.authorizationCode(ctx, asm, client, d.resource, scope)
	if err != nil {
		return nil, err
	}
	if err := t.store.Save(ctx, key, tok); err != nil {
		return nil, fmt.Errorf("auth: saving the token for %s: %w", key, err)
	}
	return tok, nil
}

// refreshStored refreshes the stored, expired token tok when the
// metadata and client of its issuer are known from an earlier flow.
func (t *Transport) refreshStored(ctx context.Context, key string, tok *Token) (*Token, error) {
	t.flow.Lock()
	defer t.flow.Unlock()
	if cur, err := t.loadToken(ctx, key); err == nil && cur != nil && cur.AccessToken != tok.AccessToken {
		return cur, nil
	}
	t.mu.Lock()
	asm := t.asMeta[tok.Issuer]
	t.mu.Unlock()
	c := t.knownClient(tok.Issuer)
	if asm == nil || c == nil {
		return nil, errNoRefresh
	}
	nt, err := t.refresh(ctx, asm, c, tok)
	if err != nil {
		return nil, err
	}
	if err := t.store.Save(ctx, key, nt); err != nil {
		return nil, fmt.Errorf("auth: saving the token for %s: %w", key, err)
	}
	return nt, nil
}

func withoutScope(list, drop string) string {
	var out []string
	for _, s := range strings.Fields(list) {
		if s != drop {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// discovery is what the metadata discovery of an MCP server found.
type discovery struct {
	issuer   string // the authorization server's issuer identifier
	asm      *AuthorizationServerMetadata
	resource string   // the resource indicator (RFC 8707) to send
	scopes   []string // the protected resource's scopes_supported
}

// discover finds the authorization server of the MCP server at server,
// refused with the challenge ch: the protected resource metadata and the
// metadata of the first authorization server it names (2025-06-18 and
// later), or, when the server publishes no protected resource metadata
// at all, the 2025-03-26 discovery at the server's origin
// (discoverLegacy).
func (t *Transport) discover(ctx context.Context, server *url.URL, version string, ch Challenge) (*discovery, error) {
	prm, none, err := t.discoverPRM(ctx, server, ch.Param("resource_metadata"))
	if err != nil {
		// A challenge naming resource_metadata says the server has
		// protected resource metadata: its absence is an error, not a
		// 2025-03-26 server.
		if !none || ch.Param("resource_metadata") != "" {
			return nil, err
		}
		return t.discoverLegacy(ctx, server, version, err)
	}
	issuer := prm.AuthorizationServers[0]
	if t.opts.Grant != nil {
		// The credentials are for one authorization server: fail before
		// any request reaches another.
		if err := t.checkGrantIssuer(issuer); err != nil {
			return nil, err
		}
	}
	asm, err := t.discoverAS(ctx, issuer)
	if err != nil {
		return nil, err
	}
	return &discovery{issuer: issuer, asm: asm, resource: prm.Resource, scopes: prm.ScopesSupported}, nil
}

// discoverPRM fetches and checks the protected resource metadata of
// server: from the challenge's resource_metadata URL when given, else
// the well-known URLs. On an ErrMetadataNotFound error, none reports
// that every URL tried answered with a 4xx status: the server publishes
// no protected resource metadata.
func (t *Transport) discoverPRM(ctx context.Context, server *url.URL, fromChallenge string) (prm *ProtectedResourceMetadata, none bool, err error) {
	var cands []string
	if fromChallenge != "" {
		if err := checkEndpoint(fromChallenge, t.opts.AllowInsecureHTTP); err != nil {
			t.log.WarnContext(ctx, "auth: ignoring an invalid resource_metadata URL", "url", fromChallenge, "error", err)
		} else {
			cands = append(cands, fromChallenge)
		}
	}
	for _, u := range prmURLs(server) {
		if !slices.Contains(cands, u) {
			cands = append(cands, u)
		}
	}
	prm, u, none, err := firstDocument(ctx, t, cands, func(prm *ProtectedResourceMetadata) error { return validatePRM(prm, server) })
	if err != nil {
		return nil, none, fmt.Errorf("protected resource metadata for %s: %w", resourceKey(server), err)
	}
	t.log.DebugContext(ctx, "auth: protected resource metadata", "url", u, "resource", prm.Resource, "authorization_servers", prm.AuthorizationServers)
	return prm, false, nil
}

// firstDocument fetches the first of urls that has a document (a URL
// without one moves on to the next) and validates it. A document that
// is malformed, too large or fails validate stops the search. When no
// URL has a document (ErrMetadataNotFound), none reports that every one
// answered with a 4xx status (unpublished).
func firstDocument[T any](ctx context.Context, t *Transport, urls []string, validate func(*T) error) (doc *T, from string, none bool, err error) {
	var errs []error
	none = true
	for _, u := range urls {
		var doc T
		if err := getJSON(ctx, t.hc, u, t.max, &doc); err != nil {
			if ctx.Err() != nil {
				return nil, "", false, ctx.Err()
			}
			if errors.Is(err, ErrInvalidMetadata) || errors.Is(err, ErrResponseTooLarge) {
				return nil, "", false, err
			}
			none = none && unpublished(err)
			errs = append(errs, err)
			continue
		}
		if err := validate(&doc); err != nil {
			return nil, "", false, fmt.Errorf("%w (from %s)", err, u)
		}
		return &doc, u, false, nil
	}
	return nil, "", none && len(urls) > 0, fmt.Errorf("%w: %w", ErrMetadataNotFound, errors.Join(errs...))
}

// discoverAS fetches and checks the metadata of the authorization server
// issuer.
func (t *Transport) discoverAS(ctx context.Context, issuer string) (*AuthorizationServerMetadata, error) {
	iu, err := url.Parse(issuer)
	if err == nil && iu.RawQuery != "" {
		err = errors.New("has a query")
	}
	if err == nil {
		err = checkEndpoint(issuer, t.opts.AllowInsecureHTTP)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: authorization server %q: %v", ErrInvalidMetadata, issuer, err)
	}
	m, u, _, err := firstDocument(ctx, t, asMetadataURLs(iu), func(m *AuthorizationServerMetadata) error {
		return validateASMetadataFor(m, issuer, t.opts.AllowInsecureHTTP, t.opts.Grant == nil)
	})
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata for %s: %w", issuer, err)
	}
	t.mu.Lock()
	t.asMeta[issuer] = m
	t.mu.Unlock()
	t.log.DebugContext(ctx, "auth: authorization server metadata", "url", u, "issuer", m.Issuer)
	return m, nil
}

func (t *Transport) knownClient(issuer string) *ClientCredentials {
	if t.opts.Grant != nil {
		return t.boundGrantClient(issuer)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.clients[issuer]; c != nil {
		return c
	}
	if c, ok := t.opts.PreRegistered[issuer]; ok {
		return &c
	}
	return nil
}

// clientFor returns the client identity to use with the authorization
// server issuer: pre-registered credentials, else an earlier
// registration, else the client ID metadata document URL when the server
// supports them, else a dynamic registration.
func (t *Transport) clientFor(ctx context.Context, issuer string, asm *AuthorizationServerMetadata) (*ClientCredentials, error) {
	if c := t.knownClient(issuer); c != nil {
		return c, nil
	}
	// A registration saved by an earlier run (Options.ClientStore).
	t.restoreClient(ctx, issuer)
	if c := t.knownClient(issuer); c != nil {
		return c, nil
	}
	var c *ClientCredentials
	switch {
	case asm.ClientIDMetadataDocumentSupported && t.opts.ClientMetadataURL != "":
		c = &ClientCredentials{ClientID: t.opts.ClientMetadataURL, AuthMethod: AuthMethodNone}
	case asm.RegistrationEndpoint != "":
		var err error
		if c, err = t.register(ctx, asm); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w at %s", ErrNoClient, issuer)
	}
	t.mu.Lock()
	t.clients[issuer] = c
	t.mu.Unlock()
	return c, nil
}

// register performs dynamic client registration (RFC 7591).
func (t *Transport) register(ctx context.Context, asm *AuthorizationServerMetadata) (*ClientCredentials, error) {
	sup := asm.TokenEndpointAuthMethodsSupported
	method := AuthMethodClientSecretBasic
	switch {
	case slices.Contains(sup, AuthMethodNone):
		method = AuthMethodNone
	case len(sup) == 0 || slices.Contains(sup, AuthMethodClientSecretBasic):
	case slices.Contains(sup, AuthMethodClientSecretPost):
		method = AuthMethodClientSecretPost
	}
	name := t.opts.ClientName
	if name == "" {
		name = "roundtrip MCP client"
	}
	md := map[string]any{
		"client_name":                name,
		"redirect_uris":              []string{t.opts.RedirectURL},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           t.applicationType(),
	}
	body, _ := json.Marshal(md)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, asm.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	b, status, _, err := t.do(req)
	if err != nil {
		return nil, err
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return nil, oauthError(asm.RegistrationEndpoint, status, b)
	}
	var r struct {
		ClientID                string `json:"client_id"`
		ClientSecret            string `json:"client_secret"`
		TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
	}
	if err := decodeObject(b, &r); err != nil || r.ClientID == "" {
		if err == nil {
			err = errors.New("no client_id")
		}
		return nil, fmt.Errorf("auth: registration response from %s: %w", asm.RegistrationEndpoint, err)
	}
	if r.TokenEndpointAuthMethod == "" {
		r.TokenEndpointAuthMethod = method
	}
	t.log.DebugContext(ctx, "auth: registered", "issuer", asm.Issuer, "client_id", r.ClientID, "auth_method", r.TokenEndpointAuthMethod)
	return &ClientCredentials{ClientID: r.ClientID, ClientSecret: r.ClientSecret, AuthMethod: r.TokenEndpointAuthMethod}, nil
}

func (t *Transport) applicationType() string {
	if t.opts.ApplicationType != "" {
		return t.opts.ApplicationType
	}
	u, err := url.Parse(t.opts.RedirectURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "native"
	}
	if isLoopback(u.Hostname()) {
		return "native"
	}
	return "web"
}

// authorizationCode runs the authorization code grant with PKCE.
func (t *Transport) authorizationCode(ctx context.Context, asm *AuthorizationServerMetadata, c *ClientCredentials, resource, scope string) (*Token, error) {
	verifier := randomString(32)
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	state := randomString(16)

	au, err := url.Parse(asm.AuthorizationEndpoint)
	if err != nil {
		return nil, fmt.Errorf("%w: authorization_endpoint: %v", ErrInvalidMetadata, err)
	}
	q := au.Query()
	q.Set("response_type", "code")
	q.Set("client_id", c.ClientID)
	q.Set("redirect_uri", t.opts.RedirectURL)
	q.Set("code_challenge", challenge)
	q.Set("code_challenge_method", "S256")
	q.Set("state", state)
	q.Set("resource", resource)
	if scope != "" {
		q.Set("scope", scope)
	}
	if t.dpop != nil {
		// RFC 9449 section 10: bind the authorization code to the key.
		q.Set("dpop_jkt", t.dpop.jkt)
	}
	au.RawQuery = q.Encode()
	t.log.DebugContext(ctx, "auth: authorizing", "issuer", asm.Issuer, "client_id", c.ClientID, "scope", scope, "resource", resource)
	redirect, err := t.opts.Authorize(ctx, au.String())
	if err != nil {
		return nil, fmt.Errorf("auth: authorization: %w", err)
	}
	if redirect == nil {
		return nil, fmt.Errorf("auth: authorization: Authorize returned no redirect URL")
	}
	code, err := checkAuthorizationResponse(redirect.Query(), state, asm)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {t.opts.RedirectURL},
		"code_verifier": {verifier},
		"resource":      {resource},
	}
	tok, err := t.tokenRequest(ctx, asm, c, form)
	if err != nil {
		return nil, err
	}
	if tok.Scope == "" {
		tok.Scope = scope
	}
	tok.Issuer, tok.Resource, tok.ClientID = asm.Issuer, resource, c.ClientID
	return tok, nil
}

// checkAuthorizationResponse checks the query of the redirect back from
// the authorization endpoint and returns the code. The RFC 9207 iss
// check comes first: a present iss must be exactly the issuer (no
// normalization), and a missing one is refused when the server
// advertised it.
func checkAuthorizationResponse(q url.Values, state string, asm *AuthorizationServerMetadata) (string, error) {
	if iss, ok := q["iss"]; ok {
		if len(iss) != 1 || iss[0] != asm.Issuer {
			return "", fmt.Errorf("%w: authorization response iss %q, expected %q", ErrIssuerMismatch, iss, asm.Issuer)
		}
	} else if asm.AuthorizationResponseIssParamSupported {
		return "", fmt.Errorf("%w (issuer %s advertises authorization_response_iss_parameter_supported)", ErrIssuerMissing, asm.Issuer)
	}
	if s, ok := q["state"]; !ok || len(s) != 1 || s[0] != state {
		return "", ErrStateMismatch
	}
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return "", fmt.Errorf("%w: %s", ErrAuthorizationDenied, msg)
	}
	code := q.Get("code")
	if code == "" {
		return "", fmt.Errorf("%w: the authorization response has no code", ErrAuthorizationDenied)
	}
	return code, nil
}

// refresh uses tok's refresh token.
func (t *Transport) refresh(ctx context.Context, asm *AuthorizationServerMetadata, c *ClientCredentials, tok *Token) (*Token, error) {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {tok.RefreshToken},
	}
	if tok.Resource != "" {
		form.Set("resource", tok.Resource)
	}
	nt, err := t.tokenRequest(ctx, asm, c, form)
	if err != nil {
		return nil, err
	}
	if nt.RefreshToken == "" {
		nt.RefreshToken = tok.RefreshToken
	}
	if nt.Scope == "" {
		nt.Scope = tok.Scope
	}
	nt.Issuer, nt.Resource, nt.ClientID = tok.Issuer, tok.Resource, c.ClientID
	return nt, nil
}

// clientAuthMethod picks the token endpoint authentication of c at asm
// (nil: unknown yet): private_key_jwt with a private key, none without
// a secret, else the configured method, else the first of basic and
// post the server lists (basic when it lists none).
func clientAuthMethod(c *ClientCredentials, asm *AuthorizationServerMetadata) string {
	if c.AuthMethod == AuthMethodPrivateKeyJWT || (c.AuthMethod == "" && c.PrivateKey != nil) {
		return AuthMethodPrivateKeyJWT
	}
	if c.ClientSecret == "" {
		return AuthMethodNone
	}
	if c.AuthMethod != "" {
		return c.AuthMethod
	}
	var sup []string
	if asm != nil {
		sup = asm.TokenEndpointAuthMethodsSupported
	}
	switch {
	case len(sup) == 0 || slices.Contains(sup, AuthMethodClientSecretBasic):
		return AuthMethodClientSecretBasic
	case slices.Contains(sup, AuthMethodClientSecretPost):
		return AuthMethodClientSecretPost
	}
	return AuthMethodNone
}

// clientAuthRequest builds a POST of form to endpoint, authenticated as
// client c with method (RFC 6749 section 2.3; private_key_jwt, RFC 7523,
// takes its assertion from assertion).
func clientAuthRequest(ctx context.Context, endpoint string, form url.Values, c *ClientCredentials, method string, assertion func() (string, error)) (*http.Request, error) {
	switch method {
	case AuthMethodClientSecretPost:
		form.Set("client_id", c.ClientID)
		form.Set("client_secret", c.ClientSecret)
	case AuthMethodClientSecretBasic:
	case AuthMethodPrivateKeyJWT:
		a, err := assertion()
		if err != nil {
			return nil, err
		}
		form.Set("client_id", c.ClientID)
		form.Set("client_assertion_type", ClientAssertionType)
		form.Set("client_assertion", a)
	default:
		if c.ClientID != "" {
			form.Set("client_id", c.ClientID)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if method == AuthMethodClientSecretBasic {
		// RFC 6749 section 2.3.1: form-encoded, then Basic.
		req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	}
	return req, nil
}

// tokenRequest posts form to the token endpoint with the client's
// authentication and decodes the token response. With DPoP, the request
// carries a proof, and a use_dpop_nonce refusal is answered by sending
// it again, once, with the server's nonce (and a new client assertion).
func (t *Transport) tokenRequest(ctx context.Context, asm *AuthorizationServerMetadata, c *ClientCredentials, form url.Values) (*Token, error) {
	if err := t.checkDPoPAlgorithm(asm); err != nil {
		return nil, err
	}
	method := clientAuthMethod(c, asm)
	for attempt := 0; ; attempt++ {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		req, err := clientAuthRequest(ctx, asm.TokenEndpoint, f, c, method, func() (string, error) { return t.signClientAssertion(c, asm) })
		if err != nil {
			return nil, err
		}
		if t.dpop != nil {
			p, err := t.dpop.proof(http.MethodPost, req.URL, "", t.dpopNonce(req.URL), t.now())
			if err != nil {
				return nil, err
			}
			req.Header.Set("DPoP", p)
		}
		b, status, h, err := t.do(req)
		if err != nil {
			return nil, err
		}
		if t.dpop != nil {
			t.noteDPoPNonce(req.URL, h)
			if status == http.StatusBadRequest && attempt == 0 && validNonce(h.Get("DPoP-Nonce")) && isUseDPoPNonce(b) {
				t.log.DebugContext(ctx, "auth: the token endpoint asks for a DPoP nonce; sending again", "issuer", asm.Issuer)
				continue
			}
		}
		if status != http.StatusOK {
			return nil, oauthError(asm.TokenEndpoint, status, b)
		}
		tok, err := parseTokenResponseOf(b, t.now(), t.dpop != nil)
		if err != nil {
			return nil, fmt.Errorf("auth: token response from %s: %w", asm.TokenEndpoint, err)
		}
		if tok.TokenType == TokenTypeDPoP {
			tok.DPoPKeyThumbprint = t.dpop.jkt
		}
		return tok, nil
	}
}

// signClientAssertion signs c's private_key_jwt assertion for asm,
// after checking that asm supports the method and algorithm when its
// metadata lists them.
func (t *Transport) signClientAssertion(c *ClientCredentials, asm *AuthorizationServerMetadata) (string, error) {
	if sup := asm.TokenEndpointAuthMethodsSupported; len(sup) > 0 && !slices.Contains(sup, AuthMethodPrivateKeyJWT) {
		return "", fmt.Errorf("%w: %s lists token_endpoint_auth_methods_supported %q, not private_key_jwt", ErrAuthMethodUnsupported, asm.Issuer, sup)
	}
	alg, err := signingAlgorithm(c.PrivateKey, c.SigningAlgorithm)
	if err != nil {
		return "", fmt.Errorf("auth: client assertion: %w", err)
	}
	if sup := asm.TokenEndpointAuthSigningAlgValuesSupported; len(sup) > 0 && !slices.Contains(sup, string(alg)) {
		return "", fmt.Errorf("%w: %s lists token_endpoint_auth_signing_alg_values_supported %q, not %s", ErrAuthMethodUnsupported, asm.Issuer, sup, alg)
	}
	a, err := clientAssertion(c, asm.Issuer, t.now())
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	return a, nil
}

// do sends req with the metadata client and reads the bounded body. A
// redirect is an ErrRedirect error: it is not followed (t.hc follows
// none), so the request's credentials go nowhere else.
func (t *Transport) do(req *http.Request) ([]byte, int, http.Header, error) {
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("auth: %s %s: %w", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	if isRedirect(resp.StatusCode) {
		return nil, 0, nil, redirectError(req.Method, req.URL.String(), resp)
	}
	b, err := readBounded(resp.Body, t.max)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("auth: %s %s: %w", req.Method, req.URL, err)
	}
	return b, resp.StatusCode, resp.Header, nil
}

// oauthError builds the *OAuthError of an error response.
func oauthError(endpoint string, status int, body []byte) error {
	e := &OAuthError{StatusCode: status, Endpoint: endpoint}
	var r struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if decodeObject(body, &r) == nil {
		e.Code, e.Description = r.Error, r.ErrorDescription
	}
	return e
}

// randomString is n random bytes, base64url without padding.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}
