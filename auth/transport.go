package auth

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultMaxResponseBytes bounds a metadata, registration or token
// response when Options.MaxResponseBytes is zero.
const DefaultMaxResponseBytes = 1 << 20

// refreshSkew is how long before its expiry a token is refreshed.
const refreshSkew = 30 * time.Second

// AuthorizeFunc has the user authorize the client: it sends the user
// agent to authorizationURL (typically by opening a browser) and returns
// the URL the authorization server redirected back to (the redirect URI
// with code, state and iss in its query), or an error. It must honor
// ctx.
type AuthorizeFunc func(ctx context.Context, authorizationURL string) (*url.URL, error)

// Token endpoint client authentication methods (RFC 7591 section 2).
const (
	AuthMethodClientSecretBasic = "client_secret_basic"
	AuthMethodClientSecretPost  = "client_secret_post"
	AuthMethodNone              = "none"
)

// ClientCredentials is a client registration at one authorization
// server.
type ClientCredentials struct {
	// ClientID is the client identifier.
	ClientID string
	// ClientSecret is the secret of a confidential client; empty for a
	// public client.
	ClientSecret string
	// AuthMethod is the token endpoint authentication method. Empty means
	// private_key_jwt with a PrivateKey, "none" without a secret,
	// otherwise the first of client_secret_basic and client_secret_post
	// the authorization server lists (client_secret_basic when it lists
	// none).
	AuthMethod string
	// PrivateKey, for private_key_jwt (AuthMethodPrivateKeyJWT), signs
	// the client assertion of each token request (RFC 7523 section 2.2):
	// iss and sub the ClientID, aud the authorization server's issuer
	// identifier, valid one minute, a fresh jti. It must be an
	// *ecdsa.PrivateKey (P-256, P-384, P-521), an *rsa.PrivateKey (2048
	// bits at least) or an ed25519.PrivateKey; ParsePrivateKey reads one
	// from PEM. It is never stored by a ClientStore.
	PrivateKey crypto.Signer
	// KeyID is the kid header of the client assertion, the key's id in
	// the client's registered key set; empty means none.
	KeyID string
	// SigningAlgorithm is the JWS algorithm of the client assertion, such
	// as ES256, PS256 or EdDSA. Empty means ES256/ES384/ES512 for an
	// ECDSA key (by curve), RS256 for RSA and EdDSA for Ed25519.
	SigningAlgorithm string
}

// sameClient reports whether a and b are the same registration (the
// fields a ClientStore keeps).
func sameClient(a, b *ClientCredentials) bool {
	return a.ClientID == b.ClientID && a.ClientSecret == b.ClientSecret && a.AuthMethod == b.AuthMethod
}

// Options configure a Transport. The zero value is usable: it sends
// stored tokens and refreshes them but cannot run an authorization flow
// (Authorize is nil).
type Options struct {
	// Base sends the requests to the MCP server. Nil means
	// http.DefaultTransport.
	Base http.RoundTripper
	// HTTPClient sends the metadata, registration and token requests.
	// Nil means a client over Base with a 30 s timeout. The Transport
	// uses a copy that follows no redirects, whatever the client's
	// CheckRedirect: those requests carry client secrets, authorization
	// codes, PKCE verifiers, refresh tokens and assertions, or decide
	// where they go (RFC 9700 section 4.12), so a 3xx answer is an
	// ErrRedirect error and nothing is sent to its Location. The
	// caller's client is not modified.
	HTTPClient *http.Client
	// Authorize obtains the authorization response from the user. Nil
	// means the Transport fails with ErrNoAuthorizer when it needs one.
	Authorize AuthorizeFunc
	// RedirectURL is the client's redirect URI, where Authorize catches
	// the authorization response. Required with Authorize.
	RedirectURL string
	// ClientName is the client_name sent in dynamic client registration.
	// Empty means "roundtrip MCP client".
	ClientName string
	// ApplicationType is the application_type sent in dynamic client
	// registration: "native" or "web". Empty means "web" for an http(s)
	// RedirectURL on a host other than localhost or a loopback address,
	// "native" otherwise.
	ApplicationType string
	// ClientMetadataURL is the HTTPS URL of the client's Client ID
	// Metadata Document. When set, it is the client_id at every
	// authorization server that advertises
	// client_id_metadata_document_supported (and has no pre-registered
	// credentials here).
	ClientMetadataURL string
	// PreRegistered maps authorization server issuer identifiers to
	// client credentials registered beforehand; they are used only with
	// that issuer.
	PreRegistered map[string]ClientCredentials
	// Grant, when set, replaces the authorization code flow with a grant
	// that involves no user (machine-to-machine): the client credentials
	// grant or the JWT bearer grant, with the Grant's own client
	// credentials. Authorize, RedirectURL, PreRegistered,
	// ClientMetadataURL, ClientStore and dynamic registration are not
	// used with it, and Authorize must be nil.
	Grant *Grant
	// DPoP, when set, makes the Transport use DPoP (RFC 9449): a DPoP
	// proof on every token request and every request to the MCP server,
	// with the use_dpop_nonce retry (once) at both, and DPoP-bound tokens
	// presented as "Authorization: DPoP". An authorization server that
	// answers with a Bearer token anyway is used with Bearer. Nil means
	// Bearer tokens only (a token_type other than Bearer is refused).
	DPoP *DPoPOptions
	// NoOfflineAccess keeps the client from adding the offline_access
	// scope (to get a refresh token) when the authorization server lists
	// it in scopes_supported.
	NoOfflineAccess bool
	// TokenStore keeps the tokens. Nil means a new MemoryTokenStore.
	TokenStore TokenStore
	// ClientStore, when set, keeps dynamic client registrations across
	// runs: a registration is saved after the authorization that used it
	// and loaded back when a stored token from that issuer is refused, so
	// that its refresh token still works after a restart. Nil keeps them
	// in memory only. A FileTokenStore can serve as both stores.
	ClientStore ClientStore
	// AllowInsecureHTTP lets authorization servers (issuer, endpoints)
	// and resource_metadata URLs use plain http on hosts other than
	// localhost and loopback addresses. By default those must be https.
	AllowInsecureHTTP bool
	// MaxResponseBytes bounds each metadata, registration and token
	// response. Zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Logger receives the Transport's debug messages and warnings. Nil
	// means slog.Default().
	Logger *slog.Logger
}

// Transport is an http.RoundTripper that authorizes requests to MCP
// servers with OAuth. See the package documentation. It is safe for
// concurrent use; authorization flows run one at a time.
type Transport struct {
	opts  Options
	base  http.RoundTripper
	hc    *http.Client
	store TokenStore
	log   *slog.Logger
	max   int64
	now   func() time.Time

	flow sync.Mutex // serializes authorization flows and refreshes

	mu      sync.Mutex
	clients map[string]*ClientCredentials           // by issuer
	asMeta  map[string]*AuthorizationServerMetadata // by issuer
	// grantIssuer is the authorization server Options.Grant's
	// credentials are for: Grant.Issuer, else the first one used.
	grantIssuer string
	// nonces holds the latest DPoP nonce of each server, by origin.
	nonces map[string]string

	dpop *dpopKey // nil without Options.DPoP
}

// NewTransport returns a Transport configured by opts (nil means the
// zero Options).
func NewTransport(opts *Options) (*Transport, error) {
	t := &Transport{now: time.Now, clients: map[string]*ClientCredentials{}, asMeta: map[string]*AuthorizationServerMetadata{}, nonces: map[string]string{}}
	if opts != nil {
		t.opts = *opts
	}
	o := &t.opts
	if o.Authorize != nil {
		u, err := url.Parse(o.RedirectURL)
		if err != nil || !u.IsAbs() || u.Fragment != "" {
			return nil, fmt.Errorf("auth: Options.RedirectURL %q must be an absolute URL without a fragment", o.RedirectURL)
		}
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Fragment != "" {
			return nil, fmt.Errorf("auth: Options.ClientMetadataURL %q must be an https URL without a fragment", o.ClientMetadataURL)
		}
	}
	if o.Grant != nil {
		if o.Authorize != nil {
			return nil, errors.New("auth: Options.Grant and Options.Authorize are exclusive")
		}
		g := *o.Grant
		o.Grant = &g // the caller's Grant may change afterwards
		if err := checkGrant(o.Grant); err != nil {
			return nil, err
		}
		t.grantIssuer = g.Issuer
	}
	for iss, c := range o.PreRegistered {
		if err := checkClientAuth(&c); err != nil {
			return nil, fmt.Errorf("auth: Options.PreRegistered[%q]: %w", iss, err)
		}
	}
	if o.DPoP != nil {
		k, err := newDPoPKey(o.DPoP)
		if err != nil {
			return nil, fmt.Errorf("auth: Options.DPoP: %w", err)
		}
		t.dpop = k
	}
	if o.ApplicationType != "" && o.ApplicationType != "native" && o.ApplicationType != "web" {
		return nil, fmt.Errorf("auth: Options.ApplicationType %q must be native or web", o.ApplicationType)
	}
	t.base = o.Base
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	t.hc = o.HTTPClient
	if t.hc == nil {
		t.hc = &http.Client{Transport: t.base, Timeout: 30 * time.Second}
	}
	t.hc = noRedirects(t.hc)
	t.store = o.TokenStore
	if t.store == nil {
		t.store = &MemoryTokenStore{}
	}
	t.log = o.Logger
	if t.log == nil {
		t.log = slog.Default()
	}
	t.max = o.MaxResponseBytes
	if t.max <= 0 {
		t.max = DefaultMaxResponseBytes
	}
	return t, nil
}

// RoundTrip implements http.RoundTripper. It sends req with the stored
// token for its URL; on 401 it authorizes (refreshing the token when it
// can, else running the authorization flow) and sends req again, once;
// on 403 with error="insufficient_scope" it re-authorizes with the
// challenged scope added, once, unless the token already has it. With
// Options.DPoP, a 401 with error="use_dpop_nonce" and a DPoP-Nonce is
// answered by sending req again with a proof carrying that nonce, once.
// The final response is returned as is; a failed authorization is an
// error.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	getBody, err := replayableBody(req)
	if err != nil {
		return nil, err
	}
	key := resourceKey(req.URL)
	tok, err := t.loadToken(ctx, key)
	if err != nil {
		closeBody(req)
		return nil, fmt.Errorf("auth: loading the token for %s: %w", key, err)
	}
	if tok != nil && tok.RefreshToken != "" && tok.expired(t.now(), refreshSkew) {
		if nt, err := t.refreshStored(ctx, key, tok); err != nil {
			t.log.DebugContext(ctx, "auth: refreshing an expired token failed", "server", key, "error", err)
		} else {
			tok = nt
		}
	}
	retried401, steppedUp, nonceRetried := false, false, false
	for attempt := 0; ; attempt++ {
		r := req.Clone(ctx)
		if attempt > 0 && getBody != nil {
			if r.Body, err = getBody(); err != nil {
				return nil, fmt.Errorf("auth: replaying the request body: %w", err)
			}
		}
		if tok != nil {
			if err := t.setAuthorization(r, tok); err != nil {
				closeBody(r)
				return nil, err
			}
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		if t.dpop != nil {
			t.noteDPoPNonce(req.URL, resp.Header)
		}
		var ch Challenge
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			c, _, perr := t.authChallenge(resp.Header)
			if tok != nil && strings.EqualFold(tok.TokenType, TokenTypeDPoP) && c.Param("error") == "use_dpop_nonce" &&
				strings.EqualFold(c.Scheme, TokenTypeDPoP) && validNonce(resp.Header.Get("DPoP-Nonce")) {
				// RFC 9449 section 9: the same token, a proof with the
				// server's nonce (noted above).
				if nonceRetried {
					return resp, nil
				}
				nonceRetried = true
				discard(resp)
				continue
			}
			if retried401 {
				return resp, nil
			}
			retried401 = true
			if perr != nil {
				t.log.WarnContext(ctx, "auth: ignoring an unparsable WWW-Authenticate header", "server", key, "error", perr)
			}
			ch = c
		case http.StatusForbidden:
			c, ok, _ := t.authChallenge(resp.Header)
			if !ok || c.Param("error") != "insufficient_scope" || steppedUp || tok == nil {
				return resp, nil
			}
			if scopesCover(tok.Scope, c.Param("scope")) {
				// The token already has what the server asks for: asking
				// the authorization server again cannot help.
				t.log.WarnContext(ctx, "auth: insufficient_scope for a token that has the challenged scope", "server", key, "scope", c.Param("scope"))
				return resp, nil
			}
			steppedUp = true
			ch = c
		default:
			return resp, nil
		}
		discard(resp)
		if tok != nil {
			t.restoreClient(ctx, tok.Issuer)
		}
		tok, err = t.authorize(ctx, req.URL, req.Header.Get("MCP-Protocol-Version"), key, tok, ch, resp.StatusCode == http.StatusForbidden)
		if err != nil {
			return nil, err
		}
		t.persistClient(ctx, tok.Issuer)
	}
}

// loadToken returns the stored token for key, nil when there is none or
// when it is one the Transport cannot present (a DPoP-bound token for
// another key, or without Options.DPoP).
func (t *Transport) loadToken(ctx context.Context, key string) (*Token, error) {
	tok, err := t.store.Load(ctx, key)
	if err != nil || tok == nil {
		return nil, err
	}
	if !t.usable(tok) {
		t.log.DebugContext(ctx, "auth: ignoring a stored DPoP-bound token for another key", "server", key)
		return nil, nil
	}
	return tok, nil
}

// authChallenge returns the challenge of a 401 or 403: with DPoP on,
// the DPoP challenge (with resource_metadata and scope taken from the
// Bearer challenge when it lacks them), else the Bearer one.
func (t *Transport) authChallenge(h http.Header) (Challenge, bool, error) {
	if t.dpop == nil {
		return BearerChallenge(h)
	}
	cs, err := ParseChallenges(h.Values("WWW-Authenticate"))
	if err != nil {
		return Challenge{}, false, err
	}
	var bearer, dpop *Challenge
	for i := range cs {
		switch {
		case bearer == nil && strings.EqualFold(cs[i].Scheme, "Bearer"):
			bearer = &cs[i]
		case dpop == nil && strings.EqualFold(cs[i].Scheme, TokenTypeDPoP):
			dpop = &cs[i]
		}
	}
	switch {
	case dpop == nil && bearer == nil:
		return Challenge{}, false, nil
	case dpop == nil:
		return *bearer, true, nil
	}
	c := *dpop
	if bearer != nil {
		for _, p := range []string{"resource_metadata", "scope"} {
			if c.Param(p) == "" && bearer.Param(p) != "" {
				if c.Params == nil {
					c.Params = map[string]string{}
				}
				c.Params[p] = bearer.Param(p)
			}
		}
	}
	return c, true, nil
}

// restoreClient loads the registration at issuer from the ClientStore
// when none is known in memory (after a restart), so that the stored
// token's refresh token can be used.
func (t *Transport) restoreClient(ctx context.Context, issuer string) {
	cs := t.opts.ClientStore
	if cs == nil || issuer == "" || t.opts.Grant != nil {
		return
	}
	if _, ok := t.opts.PreRegistered[issuer]; ok {
		return
	}
	t.mu.Lock()
	known := t.clients[issuer] != nil
	t.mu.Unlock()
	if known {
		return
	}
	c, err := cs.LoadClient(ctx, issuer, t.opts.RedirectURL)
	if err != nil {
		t.log.WarnContext(ctx, "auth: loading a stored client registration failed", "issuer", issuer, "error", err)
		return
	}
	if c == nil || c.ClientID == "" {
		return
	}
	t.mu.Lock()
	if t.clients[issuer] == nil {
		t.clients[issuer] = c
	}
	t.mu.Unlock()
}

// persistClient saves the dynamic registration used at issuer in the
// ClientStore unless it is there already. Pre-registered credentials and
// client ID metadata document URLs come from Options and are not saved.
func (t *Transport) persistClient(ctx context.Context, issuer string) {
	cs := t.opts.ClientStore
	if cs == nil || issuer == "" || t.opts.Grant != nil {
		return
	}
	t.mu.Lock()
	c := t.clients[issuer]
	t.mu.Unlock()
	if c == nil || (t.opts.ClientMetadataURL != "" && c.ClientID == t.opts.ClientMetadataURL) {
		return
	}
	if cur, err := cs.LoadClient(ctx, issuer, t.opts.RedirectURL); err == nil && cur != nil && sameClient(cur, c) {
		return
	}
	if err := cs.SaveClient(ctx, issuer, t.opts.RedirectURL, c); err != nil {
		t.log.WarnContext(ctx, "auth: saving the client registration failed", "issuer", issuer, "error", err)
	}
}

// replayableBody returns a function giving a fresh copy of req's body for
// a retry (nil when there is no body); a body without GetBody is read
// into memory.
func replayableBody(req *http.Request) (func() (io.ReadCloser, error), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		return req.GetBody, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("auth: reading the request body: %w", err)
	}
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	req.Body, _ = get()
	req.GetBody = get
	return get, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// discard drains a little of resp's body (so the connection can be
// reused) and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// CloseIdleConnections closes the idle connections of the base
// transport and of the metadata client (http.Client.CloseIdleConnections
// calls it).
func (t *Transport) CloseIdleConnections() {
	type closer interface{ CloseIdleConnections() }
	if c, ok := t.base.(closer); ok {
		c.CloseIdleConnections()
	}
	t.hc.CloseIdleConnections()
}

// Token returns the token stored for the MCP server at serverURL, nil if
// there is none.
func (t *Transport) Token(ctx context.Context, serverURL string) (*Token, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return t.store.Load(ctx, resourceKey(u))
}

// scopesCover reports whether the space-separated scope list have holds
// every scope of want.
func scopesCover(have, want string) bool {
	if strings.TrimSpace(want) == "" {
		return false
	}
	h := strings.Fields(have)
	for _, s := range strings.Fields(want) {
		if !slices.Contains(h, s) {
			return false
		}
	}
	return true
}

// unionScopes joins the scope lists, each scope once, in order.
func unionScopes(lists ...string) string {
	var out []string
	for _, l := range lists {
		for _, s := range strings.Fields(l) {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return strings.Join(out, " ")
}
