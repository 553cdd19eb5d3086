package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Enterprise-managed authorization (the MCP extension of SEP-990, the
// Identity Assertion JWT Authorization Grant): the user's identity
// assertion from the enterprise identity provider is exchanged there for
// an ID-JAG (RFC 8693 token exchange), which the client then presents to
// the MCP server's authorization server as the assertion of a JWT bearer
// grant (GrantJWTBearer).
const (
	// GrantTokenExchange is the grant type of the token exchange (RFC
	// 8693 section 2.1).
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	// TokenTypeIDToken is the token type of an OpenID Connect ID token
	// (RFC 8693 section 3): the default subject token of IDJAGAssertion.
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	// TokenTypeSAML2 is the token type of a SAML 2.0 assertion (RFC 8693
	// section 3), the other subject token an identity provider may take.
	TokenTypeSAML2 = "urn:ietf:params:oauth:token-type:saml2"
	// TokenTypeIDJAG is the token type of an Identity Assertion JWT
	// Authorization Grant, the token the exchange asks for.
	TokenTypeIDJAG = "urn:ietf:params:oauth:token-type:id-jag"
)

// IDJAGOptions configure IDJAGAssertion.
type IDJAGOptions struct {
	// TokenEndpoint is the enterprise identity provider's token endpoint,
	// where the exchange is made. Required; https, except on localhost
	// and loopback addresses (see AllowInsecureHTTP).
	TokenEndpoint string
	// Issuer is the identity provider's issuer identifier: the audience
	// of the client assertion when Client uses private_key_jwt (required
	// then, unused otherwise).
	Issuer string
	// Client is the client's registration at the identity provider (not
	// at the MCP authorization server) and its token endpoint
	// authentication, as for Grant.Client: a ClientSecret
	// (client_secret_basic or client_secret_post), a PrivateKey
	// (private_key_jwt), or neither (AuthMethodNone: the ClientID, when
	// set, is sent in the form).
	Client ClientCredentials
	// SubjectToken returns the user's identity assertion issued by the
	// identity provider: the ID token of the single sign-on login, or a
	// SAML assertion (with SubjectTokenType TokenTypeSAML2). Required. It
	// is called for every exchange, so that it can return a fresh one.
	SubjectToken func(ctx context.Context) (string, error)
	// SubjectTokenType is the type of SubjectToken's token. Empty means
	// TokenTypeIDToken.
	SubjectTokenType string
	// HTTPClient sends the exchange requests. Nil means a client over
	// http.DefaultTransport with a 30 s timeout. The exchange uses a copy
	// that follows no redirects (a 3xx answer is an ErrRedirect error, so
	// the subject token and client credentials go nowhere else); the
	// caller's client is not modified.
	HTTPClient *http.Client
	// AllowInsecureHTTP lets TokenEndpoint use plain http on hosts other
	// than localhost and loopback addresses.
	AllowInsecureHTTP bool
	// MaxResponseBytes bounds each exchange response. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// IDJAGAssertion returns an AssertionFunc for enterprise-managed
// authorization, to use as Grant.Assertion with GrantJWTBearer. For each
// token request it exchanges the user's identity assertion
// (IDJAGOptions.SubjectToken) at the identity provider's token endpoint
// for an ID-JAG (RFC 8693: requested_token_type TokenTypeIDJAG, audience
// the MCP authorization server's issuer, resource the MCP server, scope
// the requested scope) and returns it. A refusal by the identity
// provider is an *OAuthError (errors.Is ErrTokenRequest); a response
// whose issued_token_type is not TokenTypeIDJAG or whose token is not a
// JWT is an error too.
//
//	assertion, err := auth.IDJAGAssertion(auth.IDJAGOptions{
//		TokenEndpoint: "https://idp.example/oauth2/token",
//		Client:        auth.ClientCredentials{ClientID: "mcp-client-at-idp"},
//		SubjectToken:  func(ctx context.Context) (string, error) { return session.IDToken(), nil },
//	})
//	tr, err := auth.NewTransport(&auth.Options{Grant: &auth.Grant{
//		Type:      auth.GrantJWTBearer,
//		Issuer:    "https://as.example",
//		Client:    auth.ClientCredentials{ClientID: "mcp-client", ClientSecret: secret},
//		Assertion: assertion,
//	}})
func IDJAGAssertion(opts IDJAGOptions) (AssertionFunc, error) {
	if err := checkEndpoint(opts.TokenEndpoint, opts.AllowInsecureHTTP); err != nil {
		return nil, fmt.Errorf("auth: IDJAGOptions.TokenEndpoint: %w", err)
	}
	if opts.SubjectToken == nil {
		return nil, errors.New("auth: IDJAGOptions.SubjectToken is required")
	}
	if err := checkClientAuth(&opts.Client); err != nil {
		return nil, fmt.Errorf("auth: IDJAGOptions.Client: %w", err)
	}
	method := clientAuthMethod(&opts.Client, nil)
	if method == AuthMethodPrivateKeyJWT && opts.Issuer == "" {
		return nil, errors.New("auth: IDJAGOptions.Issuer is required with private_key_jwt (it is the client assertion's audience)")
	}
	if opts.SubjectTokenType == "" {
		opts.SubjectTokenType = TokenTypeIDToken
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	hc = noRedirects(hc)
	limit := opts.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	c := opts.Client
	return func(ctx context.Context, r AssertionRequest) (string, error) {
		subject, err := opts.SubjectToken(ctx)
		if err != nil {
			return "", fmt.Errorf("auth: the subject token for the ID-JAG exchange: %w", err)
		}
		subject = strings.TrimSpace(subject)
		if subject == "" {
			return "", errors.New("auth: the subject token for the ID-JAG exchange is empty")
		}
		form := url.Values{
			"grant_type":           {GrantTokenExchange},
			"requested_token_type": {TokenTypeIDJAG},
			"audience":             {r.Issuer},
			"resource":             {r.Resource},
			"subject_token":        {subject},
			"subject_token_type":   {opts.SubjectTokenType},
		}
		if r.Scope != "" {
			form.Set("scope", r.Scope)
		}
		req, err := clientAuthRequest(ctx, opts.TokenEndpoint, form, &c, method, func() (string, error) {
			a, err := clientAssertion(&c, opts.Issuer, time.Now())
			if err != nil {
				return "", fmt.Errorf("auth: %w", err)
			}
			return a, nil
		})
		if err != nil {
			return "", err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", fmt.Errorf("auth: ID-JAG exchange: POST %s: %w", opts.TokenEndpoint, err)
		}
		defer resp.Body.Close()
		if isRedirect(resp.StatusCode) {
			return "", fmt.Errorf("auth: ID-JAG exchange: %w", redirectError(http.MethodPost, opts.TokenEndpoint, resp))
		}
		b, err := readBounded(resp.Body, limit)
		if err != nil {
			return "", fmt.Errorf("auth: ID-JAG exchange: POST %s: %w", opts.TokenEndpoint, err)
		}
		if resp.StatusCode != http.StatusOK {
			return "", oauthError(opts.TokenEndpoint, resp.StatusCode, b)
		}
		jag, err := parseTokenExchangeResponse(b)
		if err != nil {
			return "", fmt.Errorf("auth: ID-JAG exchange response from %s: %w", opts.TokenEndpoint, err)
		}
		return jag, nil
	}, nil
}

// parseTokenExchangeResponse decodes the successful response of an
// ID-JAG token exchange (RFC 8693 section 2.2.1) and returns the ID-JAG:
// issued_token_type must be TokenTypeIDJAG and access_token a JWT in
// compact serialization. token_type is not checked (the ID-JAG draft
// says it SHOULD be N_A, since the token is not an access token).
func parseTokenExchangeResponse(b []byte) (string, error) {
	var r struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
		TokenType       string `json:"token_type"`
	}
	if err := decodeObject(b, &r); err != nil {
		return "", err
	}
	if r.IssuedTokenType != TokenTypeIDJAG {
		return "", fmt.Errorf("issued_token_type %q is not %s", r.IssuedTokenType, TokenTypeIDJAG)
	}
	if r.AccessToken == "" {
		return "", errors.New("no access_token")
	}
	if !isJWS(r.AccessToken) {
		return "", errors.New("the ID-JAG is not a JWT in compact serialization")
	}
	return r.AccessToken, nil
}
