package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/roundtrip-mcp/roundtrip/auth"
)

// The conformance suite's Client ID Metadata Document URL: the basic-cimd
// mock authorization server expects exactly this client_id.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// redirectURL is where the mock authorization servers send the
// authorization response; nothing listens there, the headless authorizer
// reads the redirect instead of following it.
const redirectURL = "http://localhost:3000/callback"

// scenarioContext is the MCP_CONFORMANCE_CONTEXT of the auth/* scenarios
// (each uses some of the fields).
type scenarioContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	Issuer       string `json:"issuer"`
	// auth/client-credentials-jwt: the client's PKCS #8 key.
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	// auth/wif-jwt-bearer: the workload identity token.
	ValidJWT string `json:"valid_jwt"`
	// auth/enterprise-managed-authorization: the enterprise identity
	// provider, the client's id there and the user's ID token from it.
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
}

// authClient returns the HTTP client of the auth/* scenarios: an
// auth.Transport. The machine-to-machine scenarios (client credentials,
// workload identity, enterprise-managed authorization) use
// auth.Options.Grant with the credentials of MCP_CONFORMANCE_CONTEXT;
// the others use the headless authorizer, the suite's CIMD URL and,
// when the context carries client_id (and issuer), those pre-registered
// credentials; auth/dpop and auth/dpop-nonce add auth.Options.DPoP.
func authClient(scenario string, logger *slog.Logger) (*http.Client, error) {
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	opts := &auth.Options{Logger: logger}
	switch scenario {
	case "auth/client-credentials-basic":
		// The mock authorization server lists client_secret_basic only.
		opts.Grant = &auth.Grant{Client: auth.ClientCredentials{ClientID: sc.ClientID, ClientSecret: sc.ClientSecret}}
	case "auth/client-credentials-jwt":
		key, err := auth.ParsePrivateKey([]byte(sc.PrivateKeyPEM))
		if err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT private_key_pem: %w", err)
		}
		opts.Grant = &auth.Grant{Client: auth.ClientCredentials{
			ClientID:         sc.ClientID,
			AuthMethod:       auth.AuthMethodPrivateKeyJWT,
			PrivateKey:       key,
			SigningAlgorithm: sc.SigningAlgorithm,
		}}
	case "auth/wif-jwt-bearer":
		// A public client presenting its workload identity token (the
		// suite also hands out a wrong-audience and an expired one, for
		// clients that want to see those refused).
		jwt := sc.ValidJWT
		opts.Grant = &auth.Grant{
			Type:   auth.GrantJWTBearer,
			Client: auth.ClientCredentials{ClientID: sc.ClientID, AuthMethod: auth.AuthMethodNone},
			Assertion: func(context.Context, auth.AssertionRequest) (string, error) {
				return jwt, nil
			},
		}
	case "auth/enterprise-managed-authorization":
		// SEP-990: the user's ID token is exchanged at the identity
		// provider for an ID-JAG (the mock IdP takes the client_id with
		// no secret), which is the JWT bearer assertion at the MCP
		// authorization server (client_secret_basic, the only method it
		// lists).
		idToken := sc.IdPIDToken
		assertion, err := auth.IDJAGAssertion(auth.IDJAGOptions{
			TokenEndpoint: sc.IdPTokenEndpoint,
			Issuer:        sc.IdPIssuer,
			Client:        auth.ClientCredentials{ClientID: sc.IdPClientID},
			SubjectToken:  func(context.Context) (string, error) { return idToken, nil },
		})
		if err != nil {
			return nil, err
		}
		opts.Grant = &auth.Grant{
			Type:      auth.GrantJWTBearer,
			Client:    auth.ClientCredentials{ClientID: sc.ClientID, ClientSecret: sc.ClientSecret},
			Assertion: assertion,
		}
	default:
		opts.Authorize = headlessAuthorize(&http.Client{Timeout: 10 * time.Second})
		opts.RedirectURL = redirectURL
		opts.ClientName = "roundtrip-everything-client"
		opts.ClientMetadataURL = clientMetadataURL
		if sc.ClientID != "" && sc.Issuer != "" {
			opts.PreRegistered = map[string]auth.ClientCredentials{
				sc.Issuer: {ClientID: sc.ClientID, ClientSecret: sc.ClientSecret},
			}
		}
		if scenario == "auth/dpop" || scenario == "auth/dpop-nonce" {
			// SEP-1932: the code flow with DPoP-bound tokens (a new
			// P-256 key for this run).
			opts.DPoP = &auth.DPoPOptions{}
		}
	}
	tr, err := auth.NewTransport(opts)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: tr}, nil
}

// headlessAuthorize is an auth.AuthorizeFunc for authorization servers
// that redirect at once (no login page): it GETs the authorization URL
// without following the redirect and returns its Location.
func headlessAuthorize(hc *http.Client) auth.AuthorizeFunc {
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return func(ctx context.Context, authorizationURL string) (*url.URL, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorizationURL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode/100 != 3 {
			return nil, fmt.Errorf("authorization endpoint answered HTTP %d, not a redirect", resp.StatusCode)
		}
		loc, err := resp.Location()
		if err != nil {
			return nil, errors.Join(errors.New("authorization endpoint redirect"), err)
		}
		return loc, nil
	}
}
