package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The resource-server half: an MCP server that requires authorization
// puts RequireBearer in front of its HTTP handler and serves its
// protected resource metadata with ProtectedResourceHandler. The verified
// token reaches handlers as an *mcp.TokenInfo (mcp.TokenInfoFromContext),
// and the request-state boundary binds every sealed requestState to its
// client id, issuer and subject, so a state minted for one user is
// refused for another.

// TokenVerifier checks an access token presented to this resource server.
// It returns an error wrapping ErrInvalidToken for a token that must be
// refused (unknown, expired, not for this resource, badly signed); any
// other error is treated the same way on the wire and logged.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*mcp.TokenInfo, error)
}

// TokenVerifierFunc adapts a function to TokenVerifier (an introspection
// call, a lookup of opaque tokens).
type TokenVerifierFunc func(ctx context.Context, token string) (*mcp.TokenInfo, error)

// Verify calls f.
func (f TokenVerifierFunc) Verify(ctx context.Context, token string) (*mcp.TokenInfo, error) {
	return f(ctx, token)
}

// ErrInvalidToken is wrapped by verifiers for every token they refuse.
var ErrInvalidToken = errors.New("auth: invalid access token")

// BearerOptions configure RequireBearer.
type BearerOptions struct {
	// Verifier checks tokens. Required.
	Verifier TokenVerifier
	// ResourceMetadataURL is the URL of this resource's protected
	// resource metadata (RFC 9728), sent in every challenge so that
	// clients can discover the authorization server. Strongly
	// recommended; see ResourceMetadataURL.
	ResourceMetadataURL string
	// Scopes are required of every token; a token lacking one gets 403
	// insufficient_scope naming them all.
	Scopes []string
	// Logger receives why a token was refused (never the token). Nil
	// means slog.Default().
	Logger *slog.Logger
}

// RequireBearer returns next behind bearer-token authentication (RFC
// 6750 as the MCP authorization spec profiles it): a request without a
// valid "Authorization: Bearer" token gets 401 with a WWW-Authenticate
// challenge naming the resource metadata; a valid token without the
// required scopes gets 403 insufficient_scope; a token in the query
// string is refused. A request that passes carries the verified token in
// its context (mcp.WithTokenInfo). It panics when opts has no Verifier.
func RequireBearer(next http.Handler, opts *BearerOptions) http.Handler {
	if opts == nil || opts.Verifier == nil {
		panic("auth: RequireBearer needs a Verifier")
	}
	o := *opts
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("access_token") {
			o.challenge(w, http.StatusBadRequest, "invalid_request", "access tokens are not accepted in the query string")
			return
		}
		token, ok := bearerToken(r.Header.Values("Authorization"))
		if !ok {
			if len(r.Header.Values("Authorization")) == 0 {
				o.challenge(w, http.StatusUnauthorized, "", "")
			} else {
				o.challenge(w, http.StatusUnauthorized, "invalid_request", "malformed Authorization header")
			}
			return
		}
		info, err := o.Verifier.Verify(r.Context(), token)
		if err != nil || info == nil {
			if err == nil {
				err = errors.New("verifier returned no token info")
			}
			o.Logger.Warn("auth: access token refused", "err", err, "path", r.URL.Path)
			o.challenge(w, http.StatusUnauthorized, "invalid_token", "the access token is invalid or expired")
			return
		}
		for _, s := range o.Scopes {
			if !slices.Contains(info.Scopes, s) {
				o.Logger.Info("auth: access token lacks a scope", "scope", s, "client", info.ClientID, "subject", info.Subject)
				o.challenge(w, http.StatusForbidden, "insufficient_scope", "the access token lacks a required scope")
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(mcp.WithTokenInfo(r.Context(), info)))
	})
}

// bearerToken returns the token of exactly one "Bearer" Authorization
// header (the scheme is case-insensitive; the token is token68).
func bearerToken(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return "", false
	}
	for i := 0; i < len(token); i++ {
		if !isToken68Char(token[i]) {
			return "", false
		}
	}
	return token, true
}

// challenge writes an error response with its WWW-Authenticate header.
func (o *BearerOptions) challenge(w http.ResponseWriter, status int, code, description string) {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	param := func(name, value string) {
		if value == "" {
			return
		}
		b.WriteString(sep)
		sep = ", "
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value))
		b.WriteString(`"`)
	}
	param("resource_metadata", o.ResourceMetadataURL)
	param("error", code)
	param("error_description", description)
	if code == "" || code == "insufficient_scope" {
		param("scope", strings.Join(o.Scopes, " "))
	}
	w.Header().Set("WWW-Authenticate", b.String())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if code == "" {
		code = "invalid_token"
		description = "authorization required"
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// ResourceMetadataURL returns where RFC 9728 puts the metadata of the
// resource at resourceURL: the well-known path inserted between host and
// path ("https://h/mcp" → "https://h/.well-known/oauth-protected-resource/mcp").
func ResourceMetadataURL(resourceURL string) (string, error) {
	u, err := url.Parse(resourceURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("auth: resource URL %q is not absolute", resourceURL)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path, nil
}

// ProtectedResourceHandler serves md as this resource's protected
// resource metadata document (mount it at the path of
// ResourceMetadataURL). It panics when md has no Resource or no
// authorization server.
func ProtectedResourceHandler(md *ProtectedResourceMetadata) http.Handler {
	if md == nil || md.Resource == "" || len(md.AuthorizationServers) == 0 {
		panic("auth: protected resource metadata needs a resource and an authorization server")
	}
	body, err := json.Marshal(md)
	if err != nil {
		panic("auth: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}
