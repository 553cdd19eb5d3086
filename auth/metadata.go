package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// ProtectedResourceMetadata is an OAuth 2.0 protected resource metadata
// document (RFC 9728), the fields this client uses.
type ProtectedResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
	// DPoPSigningAlgValuesSupported lists the DPoP proof algorithms the
	// resource accepts (DPoPVerifyOptions.Algorithms); set with
	// BearerOptions.DPoP.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPBoundAccessTokensRequired says the resource accepts
	// DPoP-bound tokens only (DPoPVerifyOptions.Required).
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
}

// AuthorizationServerMetadata is an OAuth 2.0 authorization server
// metadata document (RFC 8414) or OpenID Connect discovery document, the
// fields this client uses.
type AuthorizationServerMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint,omitempty"`
	ScopesSupported                            []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported                     []string `json:"response_types_supported,omitempty"`
	GrantTypesSupported                        []string `json:"grant_types_supported,omitempty"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported,omitempty"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported,omitempty"`
	AuthorizationResponseIssParamSupported     bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
	DPoPSigningAlgValuesSupported              []string `json:"dpop_signing_alg_values_supported,omitempty"`
}

// errNotFound marks a metadata URL that has no document (any non-200
// status): discovery goes on with the next candidate.
var errNotFound = errors.New("no document")

// noDocumentError is the answer of a metadata URL without a document:
// an HTTP status other than 200 and 3xx. It matches errNotFound.
type noDocumentError struct {
	url    string
	status int
}

func (e *noDocumentError) Error() string {
	return fmt.Sprintf("auth: GET %s: HTTP %d: %v", e.url, e.status, errNotFound)
}

func (e *noDocumentError) Is(target error) bool { return target == errNotFound }

// unpublished reports whether err says that nothing is published at a
// metadata URL: the server answered it with a 4xx status. A redirect, a
// 5xx, a network error or a document (even a bad one) is not that.
func unpublished(err error) bool {
	var nd *noDocumentError
	return errors.As(err, &nd) && nd.status >= 400 && nd.status < 500
}

// getJSON GETs u and decodes a JSON object of at most max bytes into v.
// A redirect is an ErrRedirect error (hc must not follow it: see
// noRedirects), any other status but 200 a *noDocumentError.
func getJSON(ctx context.Context, hc *http.Client, u string, max int64, v any) error {
	return getJSONWith(ctx, hc, u, nil, max, v)
}

// getJSONWith is getJSON with the request headers hdr added.
func getJSONWith(ctx context.Context, hc *http.Client, u string, hdr http.Header, max int64, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("auth: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if isRedirect(resp.StatusCode) {
		return redirectError(http.MethodGet, u, resp)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return &noDocumentError{url: u, status: resp.StatusCode}
	}
	body, err := readBounded(resp.Body, max)
	if err != nil {
		return fmt.Errorf("auth: GET %s: %w", u, err)
	}
	if err := decodeObject(body, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidMetadata, u, err)
	}
	return nil
}

// readBounded reads r to the end, failing with ErrResponseTooLarge past
// max bytes.
func readBounded(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, max)
	}
	return b, nil
}

// decodeObject decodes a JSON object into v (a pointer to a struct).
func decodeObject(b []byte, v any) error {
	var probe json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if t := strings.TrimLeft(string(probe), " \t\r\n"); !strings.HasPrefix(t, "{") {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(b, v)
}

// resourceKey is the server URL without query and fragment: what tokens
// are stored under.
func resourceKey(u *url.URL) string {
	c := url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	return c.String()
}

// prmURLs lists where to look for the protected resource metadata of
// server: the path-aware well-known URL, then the root one (RFC 9728
// section 3.1).
func prmURLs(server *url.URL) []string {
	base := url.URL{Scheme: server.Scheme, Host: server.Host}
	var out []string
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		out = append(out, base.String()+"/.well-known/oauth-protected-resource"+p)
	}
	return append(out, base.String()+"/.well-known/oauth-protected-resource")
}

// asMetadataURLs lists where to look for the metadata of the
// authorization server whose issuer identifier is issuer, in the order
// the MCP authorization spec gives: RFC 8414 with path insertion, OpenID
// Connect discovery with path insertion, then with path appending; for
// an issuer without a path, RFC 8414 then OpenID Connect.
func asMetadataURLs(issuer *url.URL) []string {
	base := (&url.URL{Scheme: issuer.Scheme, Host: issuer.Host}).String()
	p := strings.TrimSuffix(issuer.EscapedPath(), "/")
	if p == "" {
		return []string{
			base + "/.well-known/oauth-authorization-server",
			base + "/.well-known/openid-configuration",
		}
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + p,
		base + "/.well-known/openid-configuration" + p,
		base + p + "/.well-known/openid-configuration",
	}
}

// resourceCovers reports whether the resource identifier res (from
// protected resource metadata) covers the server URL: same scheme, host
// and port, and the server's path is res's path or below it.
func resourceCovers(res string, server *url.URL) bool {
	r, err := url.Parse(res)
	if err != nil || r.Fragment != "" || r.Opaque != "" || r.User != nil {
		return false
	}
	if !strings.EqualFold(r.Scheme, server.Scheme) || !strings.EqualFold(hostPort(r), hostPort(server)) {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := strings.TrimSuffix(server.EscapedPath(), "/")
	return rp == "" || sp == rp || strings.HasPrefix(sp, rp+"/")
}

// hostPort is u's host with the scheme's default port made explicit.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u.Host + ":443"
	case "http":
		return u.Host + ":80"
	}
	return u.Host
}

// validatePRM checks a protected resource metadata document fetched for
// server.
func validatePRM(prm *ProtectedResourceMetadata, server *url.URL) error {
	if prm.Resource == "" {
		return fmt.Errorf("%w: protected resource metadata has no resource", ErrInvalidMetadata)
	}
	if !resourceCovers(prm.Resource, server) {
		return fmt.Errorf("%w: resource %q, server %q", ErrResourceMismatch, prm.Resource, resourceKey(server))
	}
	if len(prm.AuthorizationServers) == 0 {
		return fmt.Errorf("%w: protected resource metadata lists no authorization_servers", ErrInvalidMetadata)
	}
	return nil
}

// validateASMetadata checks an authorization server metadata document
// fetched for the issuer identifier issuer, for the authorization code
// flow.
func validateASMetadata(m *AuthorizationServerMetadata, issuer string, allowHTTP bool) error {
	return validateASMetadataFor(m, issuer, allowHTTP, true)
}

// validateASMetadataFor checks an authorization server metadata document
// fetched for the issuer identifier issuer. The authorization code flow
// (codeFlow) needs an authorization_endpoint and PKCE S256; a grant
// without a user (Options.Grant) needs only the token_endpoint.
func validateASMetadataFor(m *AuthorizationServerMetadata, issuer string, allowHTTP, codeFlow bool) error {
	if m.Issuer != issuer {
		return fmt.Errorf("%w: metadata issuer %q, expected %q", ErrIssuerMismatch, m.Issuer, issuer)
	}
	if codeFlow || m.AuthorizationEndpoint != "" {
		if err := checkEndpoint(m.AuthorizationEndpoint, allowHTTP); err != nil {
			return fmt.Errorf("%w: authorization_endpoint: %v", ErrInvalidMetadata, err)
		}
	}
	if err := checkEndpoint(m.TokenEndpoint, allowHTTP); err != nil {
		return fmt.Errorf("%w: token_endpoint: %v", ErrInvalidMetadata, err)
	}
	if m.RegistrationEndpoint != "" {
		if err := checkEndpoint(m.RegistrationEndpoint, allowHTTP); err != nil {
			return fmt.Errorf("%w: registration_endpoint: %v", ErrInvalidMetadata, err)
		}
	}
	if codeFlow && !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("%w (code_challenge_methods_supported: %q)", ErrPKCEUnsupported, m.CodeChallengeMethodsSupported)
	}
	return nil
}

// checkEndpoint requires an absolute https URL without a fragment, or
// http on localhost or a loopback address (any host with allowHTTP).
func checkEndpoint(s string, allowHTTP bool) error {
	if s == "" {
		return errors.New("missing")
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an absolute http(s) URL without userinfo and fragment", s)
	}
	if u.Scheme == "http" && !allowHTTP && !isLoopback(u.Hostname()) {
		return fmt.Errorf("%q is not https (plain http is allowed on loopback hosts only)", s)
	}
	return nil
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
