package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Grant types a Transport can use without a user (Grant.Type).
const (
	// GrantClientCredentials is the OAuth 2.0 client credentials grant
	// (RFC 6749 section 4.4): the client authenticates as itself.
	GrantClientCredentials = "client_credentials"
	// GrantJWTBearer is the JWT bearer authorization grant (RFC 7523
	// section 2.1): the client presents an assertion issued by someone
	// the authorization server trusts (a workload identity provider, an
	// enterprise identity provider's ID-JAG).
	GrantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// AuthMethodPrivateKeyJWT is the private_key_jwt token endpoint
// authentication method (RFC 7523 section 2.2, OpenID Connect Core
// section 9): the client signs an assertion with its private key
// (ClientCredentials.PrivateKey).
const AuthMethodPrivateKeyJWT = "private_key_jwt"

// Grant makes a Transport obtain tokens without a user: no browser, no
// redirect (machine-to-machine). Discovery, the resource indicator,
// scope selection, the issuer checks and the token store are the same
// as for the authorization code flow; on a 401 the Transport refreshes
// (when the authorization server issued a refresh token) or runs the
// grant again.
type Grant struct {
	// Type is GrantClientCredentials (the default when empty) or
	// GrantJWTBearer.
	Type string
	// Client is the client's identity and token endpoint
	// authentication: ClientSecret with client_secret_basic (the default
	// with a secret, or the one the authorization server lists) or
	// client_secret_post, or PrivateKey with private_key_jwt. The client
	// credentials grant requires an authenticated (confidential) client;
	// the JWT bearer grant may use a public one (AuthMethodNone, with or
	// without a ClientID).
	Client ClientCredentials
	// Issuer is the authorization server Client is registered at: the
	// credentials (a secret, or an assertion signed for it) are sent
	// there only, and a protected resource naming another authorization
	// server fails with ErrIssuerMismatch before any request reaches it.
	// Empty means the first authorization server a flow uses, which the
	// Transport then keeps to for its lifetime. Set it whenever the
	// issuer is known.
	Issuer string
	// Assertion returns the assertion of the JWT bearer grant; required
	// with GrantJWTBearer, unused otherwise. It is called for every
	// token request (assertions are short-lived).
	Assertion AssertionFunc
}

// AssertionFunc returns the JWT (compact serialization) to present as
// the assertion of a JWT bearer grant: read a workload identity token,
// exchange an identity provider's ID token for an ID-JAG, and so on.
type AssertionFunc func(ctx context.Context, r AssertionRequest) (string, error)

// AssertionRequest describes the token request an assertion is for.
type AssertionRequest struct {
	// Issuer is the issuer identifier of the authorization server (the
	// assertion's audience).
	Issuer string
	// TokenEndpoint is the authorization server's token endpoint.
	TokenEndpoint string
	// Resource is the resource indicator (RFC 8707) of the MCP server.
	Resource string
	// Scope is the scope being requested (space-separated; may be empty).
	Scope string
}

// checkGrant validates Options.Grant.
func checkGrant(g *Grant) error {
	switch g.Type {
	case "", GrantClientCredentials, GrantJWTBearer:
	default:
		return fmt.Errorf("auth: Options.Grant.Type %q must be %q or %q", g.Type, GrantClientCredentials, GrantJWTBearer)
	}
	if g.Issuer != "" {
		if u, err := url.Parse(g.Issuer); err != nil || !u.IsAbs() || u.Host == "" {
			return fmt.Errorf("auth: Options.Grant.Issuer %q must be an absolute URL", g.Issuer)
		}
	}
	if err := checkClientAuth(&g.Client); err != nil {
		return fmt.Errorf("auth: Options.Grant.Client: %w", err)
	}
	switch g.Type {
	case "", GrantClientCredentials:
		if g.Client.ClientID == "" {
			return errors.New("auth: Options.Grant.Client.ClientID is required for the client credentials grant")
		}
		if m := clientAuthMethod(&g.Client, nil); m == AuthMethodNone {
			return errors.New("auth: the client credentials grant needs an authenticated client (ClientSecret or PrivateKey)")
		}
	case GrantJWTBearer:
		if g.Assertion == nil {
			return errors.New("auth: Options.Grant.Assertion is required for the JWT bearer grant")
		}
	}
	return nil
}

// checkClientAuth validates the authentication settings of c.
func checkClientAuth(c *ClientCredentials) error {
	switch c.AuthMethod {
	case "", AuthMethodNone, AuthMethodClientSecretBasic, AuthMethodClientSecretPost:
	case AuthMethodPrivateKeyJWT:
		if c.PrivateKey == nil {
			return errors.New("private_key_jwt needs a PrivateKey")
		}
	default:
		return fmt.Errorf("unsupported AuthMethod %q", c.AuthMethod)
	}
	if c.PrivateKey != nil {
		if c.ClientID == "" {
			return errors.New("private_key_jwt needs a ClientID")
		}
		if _, err := signingAlgorithm(c.PrivateKey, c.SigningAlgorithm); err != nil {
			return err
		}
	}
	return nil
}

func (g *Grant) grantType() string {
	if g.Type == "" {
		return GrantClientCredentials
	}
	return g.Type
}

// checkGrantIssuer fails with ErrIssuerMismatch when the Grant is bound
// to an authorization server other than issuer (Grant.Issuer, or the
// one bound at first use).
func (t *Transport) checkGrantIssuer(issuer string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.grantIssuer != "" && t.grantIssuer != issuer {
		return fmt.Errorf("%w: the protected resource names authorization server %q, the client credentials are for %q",
			ErrIssuerMismatch, issuer, t.grantIssuer)
	}
	return nil
}

// grantClient binds an unbound Grant to issuer and returns its client,
// or fails as checkGrantIssuer does.
func (t *Transport) grantClient(issuer string) (*ClientCredentials, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.grantIssuer == "" {
		t.grantIssuer = issuer
	}
	if t.grantIssuer != issuer {
		return nil, fmt.Errorf("%w: the protected resource names authorization server %q, the client credentials are for %q",
			ErrIssuerMismatch, issuer, t.grantIssuer)
	}
	c := t.opts.Grant.Client
	return &c, nil
}

// boundGrantClient returns the Grant's client when the Grant is bound
// to issuer, else nil.
func (t *Transport) boundGrantClient(issuer string) *ClientCredentials {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.grantIssuer == "" || t.grantIssuer != issuer {
		return nil
	}
	c := t.opts.Grant.Client
	return &c
}

// machineGrant obtains a token with Options.Grant from the authorization
// server asm for resource.
func (t *Transport) machineGrant(ctx context.Context, asm *AuthorizationServerMetadata, resource, scope string) (*Token, error) {
	g := t.opts.Grant
	gt := g.grantType()
	if len(asm.GrantTypesSupported) > 0 && !slices.Contains(asm.GrantTypesSupported, gt) {
		return nil, fmt.Errorf("%w: %s lists grant_types_supported %q, not %q", ErrGrantUnsupported, asm.Issuer, asm.GrantTypesSupported, gt)
	}
	c, err := t.grantClient(asm.Issuer)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {gt}, "resource": {resource}}
	if scope != "" {
		form.Set("scope", scope)
	}
	if gt == GrantJWTBearer {
		a, err := g.Assertion(ctx, AssertionRequest{Issuer: asm.Issuer, TokenEndpoint: asm.TokenEndpoint, Resource: resource, Scope: scope})
		if err != nil {
			return nil, fmt.Errorf("auth: obtaining the JWT bearer assertion: %w", err)
		}
		a = strings.TrimSpace(a) // a token file's final newline
		if !isJWS(a) {
			return nil, errors.New("auth: the JWT bearer assertion is not a compact JWS")
		}
		form.Set("assertion", a)
	}
	t.log.DebugContext(ctx, "auth: requesting a token", "grant_type", gt, "issuer", asm.Issuer, "client_id", c.ClientID, "scope", scope, "resource", resource)
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

// isJWS reports whether s looks like a JWS in compact serialization:
// three base64url parts separated by dots (nothing that could smuggle
// other form parameters or whitespace).
func isJWS(s string) bool {
	dots := 0
	for _, c := range s {
		switch {
		case c == '.':
			dots++
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return dots == 2 && len(s) > 4
}
