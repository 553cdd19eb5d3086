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
	// ToolScopes maps tool names to the scopes a tools/call of that tool
	// needs beyond Scopes; PromptScopes does the same for prompts/get by
	// prompt name, ResourceScopes for resources/read, resources/subscribe
	// and resources/unsubscribe by resource URI (exact). A token lacking
	// one gets 403 insufficient_scope naming every scope the request
	// needs, so that the client can step up (Transport does). Lists are
	// not filtered: tools/list names a tool the token cannot call yet,
	// and the call's challenge says what it takes. With any of them set,
	// the body of a POST is read (MaxBodyBytes) to find its JSON-RPC
	// method and target, with the decoder the MCP handler uses.
	ToolScopes     map[string][]string
	PromptScopes   map[string][]string
	ResourceScopes map[string][]string
	// MaxBodyBytes bounds the body read for ToolScopes, PromptScopes and
	// ResourceScopes (a larger one gets 413); zero means 4 MiB, the MCP
	// handler's default. It should not be below the handler's own bound.
	MaxBodyBytes int64
	// DPoP, when set, accepts DPoP-bound tokens with their proofs (RFC
	// 9449), and refuses a DPoP-bound token sent as a Bearer token. Nil
	// accepts Bearer tokens only.
	DPoP *DPoPVerifyOptions
	// Logger receives why a token was refused (never the token). Nil
	// means slog.Default().
	Logger *slog.Logger
}

// bearerHandler is RequireBearer's handler.
type bearerHandler struct {
	o    BearerOptions
	dpop *dpopVerifier // nil without BearerOptions.DPoP
	next http.Handler
}

// RequireBearer returns next behind bearer-token authentication (RFC
// 6750 as the MCP authorization spec profiles it): a request without a
// valid "Authorization: Bearer" token gets 401 with a WWW-Authenticate
// challenge naming the resource metadata; a valid token without the
// required scopes gets 403 insufficient_scope; a token in the query
// string is refused. With BearerOptions.DPoP, "Authorization: DPoP"
// tokens are accepted with their proofs (see DPoPVerifyOptions), and
// every challenge has a DPoP one (with algs) after the Bearer one, or
// alone when DPoP is Required. A request that passes carries the
// verified token in its context (mcp.WithTokenInfo). It panics when opts
// has no Verifier or bad DPoP options.
func RequireBearer(next http.Handler, opts *BearerOptions) http.Handler {
	if opts == nil || opts.Verifier == nil {
		panic("auth: RequireBearer needs a Verifier")
	}
	b := &bearerHandler{o: *opts, next: next}
	if b.o.Logger == nil {
		b.o.Logger = slog.Default()
	}
	if b.o.MaxBodyBytes <= 0 {
		b.o.MaxBodyBytes = 4 << 20
	}
	if b.o.DPoP != nil {
		v, err := newDPoPVerifier(b.o.DPoP)
		if err != nil {
			panic("auth: BearerOptions.DPoP: " + err.Error())
		}
		b.dpop = v
	}
	return b
}

func (b *bearerHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o := &b.o
	if b.dpop != nil && b.dpop.o.NonceKey != nil {
		// RFC 9449 section 8.2: a fresh nonce on every response, so that
		// a client seldom needs the use_dpop_nonce round.
		w.Header().Set("DPoP-Nonce", b.dpop.currentNonce())
	}
	if r.URL.Query().Has("access_token") {
		b.refuse(w, http.StatusBadRequest, "invalid_request", "access tokens are not accepted in the query string", "")
		return
	}
	scheme, token, ok := authorization(r.Header.Values("Authorization"))
	isDPoP := ok && strings.EqualFold(scheme, TokenTypeDPoP)
	switch {
	case !ok && len(r.Header.Values("Authorization")) == 0:
		b.refuse(w, http.StatusUnauthorized, "", "", strings.Join(o.Scopes, " "))
		return
	case !ok, isDPoP && b.dpop == nil, !isDPoP && !strings.EqualFold(scheme, TokenTypeBearer):
		b.refuse(w, http.StatusUnauthorized, "invalid_request", "malformed Authorization header", "")
		return
	case !isDPoP && b.dpop != nil && b.dpop.o.Required:
		b.refuse(w, http.StatusUnauthorized, "invalid_request", "only DPoP-bound tokens are accepted", "")
		return
	}
	var proof *dpopProof
	if isDPoP {
		p, bad := b.dpop.check(r, token)
		if bad != nil {
			o.Logger.Warn("auth: DPoP proof refused", "err", bad.reason, "path", r.URL.Path)
			b.refuse(w, http.StatusUnauthorized, bad.code, dpopDescription(bad.code), "")
			return
		}
		proof = p
	}
	info, err := o.Verifier.Verify(r.Context(), token)
	if err != nil || info == nil {
		if err == nil {
			err = errors.New("verifier returned no token info")
		}
		o.Logger.Warn("auth: access token refused", "err", err, "path", r.URL.Path)
		b.refuse(w, http.StatusUnauthorized, "invalid_token", "the access token is invalid or expired", "")
		return
	}
	jkt := boundKey(info)
	switch {
	case !isDPoP && jkt != "":
		o.Logger.Warn("auth: a DPoP-bound token was sent as a Bearer token", "client", info.ClientID, "subject", info.Subject)
		b.refuse(w, http.StatusUnauthorized, "invalid_token", "a DPoP-bound token needs the DPoP scheme and a proof", "")
		return
	case isDPoP && jkt == "":
		o.Logger.Warn("auth: a token not bound to a key was sent with the DPoP scheme", "client", info.ClientID, "subject", info.Subject)
		b.refuse(w, http.StatusUnauthorized, "invalid_token", "the access token is not DPoP-bound", "")
		return
	case isDPoP && jkt != proof.jkt:
		o.Logger.Warn("auth: DPoP proof refused", "err", "signed by another key than the token is bound to", "path", r.URL.Path)
		b.refuse(w, http.StatusUnauthorized, "invalid_dpop_proof", dpopDescription("invalid_dpop_proof"), "")
		return
	}
	if isDPoP {
		// Last: only a proof that passed every other check takes a
		// place in the cache.
		bad, err := b.dpop.record(r.Context(), proof)
		if err != nil {
			o.Logger.Error("auth: the DPoP replay cache failed", "err", err)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "the DPoP replay cache is unavailable", http.StatusServiceUnavailable)
			return
		}
		if bad != nil {
			o.Logger.Warn("auth: DPoP proof refused", "err", bad.reason, "path", r.URL.Path)
			b.refuse(w, http.StatusUnauthorized, bad.code, dpopDescription(bad.code), "")
			return
		}
	}
	for _, s := range o.Scopes {
		if !slices.Contains(info.Scopes, s) {
			o.Logger.Info("auth: access token lacks a scope", "scope", s, "client", info.ClientID, "subject", info.Subject)
			b.refuse(w, http.StatusForbidden, "insufficient_scope", "the access token lacks a required scope", strings.Join(o.Scopes, " "))
			return
		}
	}
	if b.hasTargetScopes() && r.Method == http.MethodPost {
		need, ok := b.targetScopes(w, r)
		if !ok {
			return
		}
		for _, s := range need {
			if !slices.Contains(info.Scopes, s) {
				o.Logger.Info("auth: access token lacks a scope of the request's target", "scope", s, "client", info.ClientID, "subject", info.Subject)
				b.refuse(w, http.StatusForbidden, "insufficient_scope", "the access token lacks a scope this request needs", unionScopes(strings.Join(o.Scopes, " "), strings.Join(need, " ")))
				return
			}
		}
	}
	b.next.ServeHTTP(w, r.WithContext(mcp.WithTokenInfo(r.Context(), info)))
}

// dpopDescription is the error_description of a DPoP error: the reason
// goes to the log only.
func dpopDescription(code string) string {
	if code == "use_dpop_nonce" {
		return "the DPoP proof needs the server's nonce (DPoP-Nonce)"
	}
	return "the DPoP proof is invalid"
}

// authorization returns the scheme and token of exactly one
// Authorization header (the scheme is case-insensitive; the token is
// token68).
func authorization(values []string) (scheme, token string, ok bool) {
	if len(values) != 1 {
		return "", "", false
	}
	scheme, token, ok = strings.Cut(values[0], " ")
	if !ok || scheme == "" {
		return "", "", false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return "", "", false
	}
	for i := 0; i < len(token); i++ {
		if !isToken68Char(token[i]) {
			return "", "", false
		}
	}
	return scheme, token, true
}

// refuse writes an error response with its challenges: Bearer unless
// DPoP is required, then DPoP (with algs) when DPoP is on. The DPoP
// errors (invalid_dpop_proof, use_dpop_nonce) are in the DPoP challenge
// only; scope is sent with no error and with insufficient_scope.
func (b *bearerHandler) refuse(w http.ResponseWriter, status int, code, description, scope string) {
	dpopError := code == "invalid_dpop_proof" || code == "use_dpop_nonce"
	if b.dpop == nil || !b.dpop.o.Required {
		if dpopError {
			w.Header().Add("WWW-Authenticate", b.challenge("Bearer", "", "", "", ""))
		} else {
			w.Header().Add("WWW-Authenticate", b.challenge("Bearer", "", code, description, scope))
		}
	}
	if b.dpop != nil {
		w.Header().Add("WWW-Authenticate", b.challenge(TokenTypeDPoP, b.dpop.algs, code, description, scope))
		if code == "use_dpop_nonce" {
			w.Header().Set("DPoP-Nonce", b.dpop.currentNonce())
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if code == "" {
		code = "invalid_token"
		description = "authorization required"
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// challenge is one challenge of a WWW-Authenticate header.
func (b *bearerHandler) challenge(scheme, algs, code, description, scope string) string {
	var sb strings.Builder
	sb.WriteString(scheme)
	sep := " "
	param := func(name, value string) {
		if value == "" {
			return
		}
		sb.WriteString(sep)
		sep = ", "
		sb.WriteString(name)
		sb.WriteString(`="`)
		sb.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value))
		sb.WriteString(`"`)
	}
	param("resource_metadata", b.o.ResourceMetadataURL)
	param("algs", algs)
	param("error", code)
	param("error_description", description)
	if code == "" || code == "insufficient_scope" {
		param("scope", scope)
	}
	return sb.String()
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
