package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// legacyProtocolVersion is the MCP revision whose discovery
// discoverLegacy follows, and the MCP-Protocol-Version it sends when the
// refused request carried none.
const legacyProtocolVersion = "2025-03-26"

// protocolVersionPattern is the shape of an MCP revision (YYYY-MM-DD).
var protocolVersionPattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// authorizationBaseURL is the 2025-03-26 authorization base URL of the
// MCP server at server: its URL with the path (and query, fragment and
// userinfo) discarded, scheme and host lower-cased, e.g.
// https://api.example.com for https://api.example.com/v1/mcp.
func authorizationBaseURL(server *url.URL) string {
	return (&url.URL{Scheme: strings.ToLower(server.Scheme), Host: strings.ToLower(server.Host)}).String()
}

// discoverLegacy is the discovery of the 2025-03-26 authorization spec,
// for an MCP server that publishes no protected resource metadata
// (prmErr says what discoverPRM found instead): the authorization server
// is the MCP server's own origin, the authorization base URL. Its
// metadata is fetched from <base>/.well-known/oauth-authorization-server
// with the MCP-Protocol-Version header (version, else 2025-03-26), and
// must name the base URL as issuer and endpoints on that origin only.
// When the server publishes no metadata either (a 4xx answer), the
// default endpoints <base>/authorize, <base>/token and <base>/register
// are used. Any other outcome (a redirect, a 5xx, a network error, a
// malformed or invalid document) is an error: only "nothing published"
// falls back. The resource indicator is the server URL.
func (t *Transport) discoverLegacy(ctx context.Context, server *url.URL, version string, prmErr error) (*discovery, error) {
	base := authorizationBaseURL(server)
	if err := checkEndpoint(base, t.opts.AllowInsecureHTTP); err != nil {
		return nil, fmt.Errorf("%w: authorization base URL of %s (it publishes no protected resource metadata): %v", ErrInvalidMetadata, resourceKey(server), err)
	}
	if t.opts.Grant != nil {
		// Fail before any request when the credentials are bound to
		// another authorization server than this origin.
		if err := t.checkLegacyGrantIssuer(base); err != nil {
			return nil, err
		}
	}
	if !protocolVersionPattern.MatchString(version) {
		version = legacyProtocolVersion
	}
	hdr := http.Header{}
	hdr.Set("MCP-Protocol-Version", version)
	u := base + "/.well-known/oauth-authorization-server"
	var m AuthorizationServerMetadata
	err := getJSONWith(ctx, t.hc, u, hdr, t.max, &m)
	var asm *AuthorizationServerMetadata
	switch {
	case err == nil:
		if err := validateLegacyASMetadata(&m, base, t.opts.AllowInsecureHTTP, t.opts.Grant == nil); err != nil {
			return nil, fmt.Errorf("%w (from %s)", err, u)
		}
		asm = &m
		t.log.InfoContext(ctx, "auth: no protected resource metadata; using the authorization server metadata at the server's origin (2025-03-26 discovery)",
			"server", resourceKey(server), "url", u, "issuer", m.Issuer)
	case unpublished(err):
		asm = defaultEndpoints(base)
		t.log.InfoContext(ctx, "auth: no protected resource or authorization server metadata; using the default endpoints at the server's origin (2025-03-26 fallback)",
			"server", resourceKey(server), "base", base)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, ErrInvalidMetadata), errors.Is(err, ErrResponseTooLarge):
		return nil, fmt.Errorf("authorization server metadata for %s: %w", base, err)
	default:
		return nil, fmt.Errorf("%w: %s publishes no protected resource metadata (%v), and its authorization server metadata could not be fetched: %w",
			ErrMetadataNotFound, resourceKey(server), prmErr, err)
	}
	t.mu.Lock()
	t.asMeta[asm.Issuer] = asm
	t.mu.Unlock()
	return &discovery{issuer: asm.Issuer, asm: asm, resource: resourceKey(server)}, nil
}

// defaultEndpoints is the metadata of the 2025-03-26 default endpoints
// at the authorization base URL base: issuer base, /authorize, /token and
// /register. Nothing else is assumed: no scopes, no iss parameter, no
// client ID metadata documents (PKCE S256 is used anyway).
func defaultEndpoints(base string) *AuthorizationServerMetadata {
	return &AuthorizationServerMetadata{
		Issuer:                base,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
	}
}

// validateLegacyASMetadata checks the authorization server metadata
// found at the authorization base URL base: its issuer must be base
// (with or without the "/" of an empty path, which names the same
// well-known URL under RFC 8414 section 3.1), it passes the checks of
// validateASMetadataFor, and every endpoint it names is on base's origin
// (scheme, host and port), so that nothing the fallback sends leaves
// the MCP server's origin.
func validateLegacyASMetadata(m *AuthorizationServerMetadata, base string, allowHTTP, codeFlow bool) error {
	if m.Issuer != base && m.Issuer != base+"/" {
		return fmt.Errorf("%w: metadata issuer %q, expected the authorization base URL %q", ErrIssuerMismatch, m.Issuer, base)
	}
	if err := validateASMetadataFor(m, m.Issuer, allowHTTP, codeFlow); err != nil {
		return err
	}
	for _, e := range []struct{ name, url string }{
		{"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint},
		{"registration_endpoint", m.RegistrationEndpoint},
	} {
		if e.url != "" && !sameOrigin(e.url, base) {
			return fmt.Errorf("%w: %s %q is not on the MCP server's origin %s (required without protected resource metadata)", ErrInvalidMetadata, e.name, e.url, base)
		}
	}
	return nil
}

// sameOrigin reports whether the URL s has the scheme, host and port of
// the URL base.
func sameOrigin(s, base string) bool {
	u, err1 := url.Parse(s)
	b, err2 := url.Parse(base)
	return err1 == nil && err2 == nil && strings.EqualFold(u.Scheme, b.Scheme) && strings.EqualFold(hostPort(u), hostPort(b))
}

// checkLegacyGrantIssuer fails with ErrIssuerMismatch when Options.Grant
// is bound to an authorization server other than the authorization base
// URL base (the only one the 2025-03-26 discovery can find).
func (t *Transport) checkLegacyGrantIssuer(base string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gi := t.grantIssuer; gi != "" && gi != base && gi != base+"/" {
		return fmt.Errorf("%w: the server publishes no protected resource metadata, so its authorization server is its origin %q; the client credentials are for %q",
			ErrIssuerMismatch, base, gi)
	}
	return nil
}
