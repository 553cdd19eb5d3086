package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// legacyServer is a 2025-03-26 MCP server on loopback: the MCP endpoint
// at mcpPath and, at its own origin, the authorization server (metadata
// at the root well-known URL, or none, and the endpoints under prefix).
// It publishes no protected resource metadata unless prmDoc is set.
type legacyServer struct {
	t   *testing.T
	srv *httptest.Server

	// configuration (set before the first request)
	mcpPath       string                           // default /v1/mcp
	prefix        string                           // where the endpoints are ("" = the default /authorize, /token, /register)
	metadata      func(base string) map[string]any // the AS metadata document; nil: answer asStatus
	asStatus      int                              // status of the AS metadata URL without a document (default 404)
	asRaw         string                           // served (200) as the AS metadata when set
	prmStatus     int                              // status of the PRM URLs (default 404)
	prmDoc        func(base string) map[string]any // served at the path-aware PRM URL when set
	challengePRM  string                           // resource_metadata in the 401 challenge
	redirects     map[string]string                // path -> Location of a 307
	preClient     string                           // "id:secret": the token endpoint requires this Basic client
	refreshTokens bool
	trust         *legacyServer // the MCP endpoint also accepts the tokens trust issued

	mu        sync.Mutex
	hits      []string // "METHOD path" of every request
	versions  []string // MCP-Protocol-Version of the AS metadata requests
	auths     []url.Values
	tokenReqs []tokenReq
	regs      int
	codes     map[string]string // code -> code_challenge
	tokens    map[string]bool
	refreshes map[string]bool
	n         int
}

func newLegacyServer(t *testing.T, configure func(l *legacyServer)) *legacyServer {
	t.Helper()
	l := &legacyServer{t: t, mcpPath: "/v1/mcp", codes: map[string]string{}, tokens: map[string]bool{}, refreshes: map[string]bool{}}
	if configure != nil {
		configure(l)
	}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *legacyServer) base() string      { return l.srv.URL }
func (l *legacyServer) serverURL() string { return l.srv.URL + l.mcpPath }

// standardMetadata is the metadata a 2025-03-26 server with its
// authorization server at its origin publishes, endpoints under prefix.
func standardMetadata(prefix string) func(base string) map[string]any {
	return func(base string) map[string]any {
		return map[string]any{
			"issuer":                           base,
			"authorization_endpoint":           base + prefix + "/authorize",
			"token_endpoint":                   base + prefix + "/token",
			"registration_endpoint":            base + prefix + "/register",
			"response_types_supported":         []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		}
	}
}

func (l *legacyServer) serve(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.hits = append(l.hits, r.Method+" "+r.URL.Path)
	loc, redirect := l.redirects[r.URL.Path]
	l.mu.Unlock()
	if redirect {
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	base := l.base()
	switch p := r.URL.Path; {
	case p == l.mcpPath:
		body, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		ok := l.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		l.mu.Unlock()
		if !ok && l.trust != nil {
			l.trust.mu.Lock()
			ok = l.trust.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
			l.trust.mu.Unlock()
		}
		if !ok {
			ch := `Bearer error="invalid_token"`
			if l.challengePRM != "" {
				ch += fmt.Sprintf(`, resource_metadata="%s"`, l.challengePRM)
			}
			w.Header().Set("WWW-Authenticate", ch)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	case strings.HasPrefix(p, "/.well-known/oauth-protected-resource"):
		if l.prmDoc != nil && p == "/.well-known/oauth-protected-resource"+l.mcpPath {
			writeJSON(w, http.StatusOK, l.prmDoc(base))
			return
		}
		status := l.prmStatus
		if status == 0 {
			status = http.StatusNotFound
		}
		http.Error(w, "no protected resource metadata", status)
	case p == "/.well-known/oauth-authorization-server":
		l.mu.Lock()
		l.versions = append(l.versions, r.Header.Get("MCP-Protocol-Version"))
		l.mu.Unlock()
		switch {
		case l.asRaw != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, l.asRaw)
		case l.metadata != nil:
			writeJSON(w, http.StatusOK, l.metadata(base))
		default:
			status := l.asStatus
			if status == 0 {
				status = http.StatusNotFound
			}
			http.Error(w, "no metadata", status)
		}
	case r.Method == http.MethodPost && p == l.prefix+"/register":
		l.mu.Lock()
		l.regs++
		l.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": "legacy-client", "client_secret": "legacy-secret"})
	case r.Method == http.MethodGet && p == l.prefix+"/authorize":
		q := r.URL.Query()
		l.mu.Lock()
		l.auths = append(l.auths, q)
		l.n++
		code := fmt.Sprintf("code-%d", l.n)
		l.codes[code] = q.Get("code_challenge")
		l.mu.Unlock()
		u, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		rq := u.Query()
		rq.Set("code", code)
		rq.Set("state", q.Get("state"))
		u.RawQuery = rq.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	case r.Method == http.MethodPost && p == l.prefix+"/token":
		_ = r.ParseForm()
		tr := tokenReq{form: r.PostForm}
		if id, secret, ok := r.BasicAuth(); ok {
			tr.basic = id + ":" + secret
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.tokenReqs = append(l.tokenReqs, tr)
		if l.preClient != "" && tr.basic != l.preClient {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
			return
		}
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			challenge, ok := l.codes[r.PostForm.Get("code")]
			delete(l.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || challenge == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE"})
				return
			}
		case "refresh_token":
			if !l.refreshes[r.PostForm.Get("refresh_token")] {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
		case "client_credentials":
		default:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		l.n++
		tok := fmt.Sprintf("legacy-at-%d", l.n)
		l.tokens[tok] = true
		resp := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600}
		if l.refreshTokens {
			rt := fmt.Sprintf("legacy-rt-%d", l.n)
			l.refreshes[rt] = true
			resp["refresh_token"] = rt
		}
		writeJSON(w, http.StatusOK, resp)
	default:
		http.NotFound(w, r)
	}
}

// revokeAll forgets every access token issued (the next request is 401).
func (l *legacyServer) revokeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = map[string]bool{}
}

func (l *legacyServer) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.hits)
}

// hit reports whether a request to path reached l.
func (l *legacyServer) hit(path string) bool {
	return slices.ContainsFunc(l.requests(), func(h string) bool { _, p, _ := strings.Cut(h, " "); return p == path })
}

// legacyPost sends body to serverURL through tr, with the
// MCP-Protocol-Version header version when it is not empty.
func legacyPost(t *testing.T, tr http.RoundTripper, serverURL, version, body string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, serverURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// A server that publishes no protected resource metadata has its
// authorization server at its origin (2025-03-26): the client reads the
// metadata at the root well-known URL of the authorization base URL (the
// server URL without its path), after the PRM URLs, and runs the usual
// flow (registration, PKCE S256, the server URL as resource) with the
// endpoints it names.
func TestServerWithoutPRMUsesMetadataAtItsOrigin(t *testing.T) {
	l := newLegacyServer(t, func(l *legacyServer) {
		l.prefix = "/oauth"
		l.metadata = standardMetadata("/oauth")
	})
	tr := newTestTransport(t, nil)
	status, body, err := legacyPost(t, tr, l.serverURL(), "", `{"n":1}`)
	if err != nil || status != http.StatusOK || body != `{"n":1}` {
		t.Fatalf("got %d %q, %v; want 200 with the body", status, body, err)
	}
	want := []string{
		"POST /v1/mcp",
		"GET /.well-known/oauth-protected-resource/v1/mcp",
		"GET /.well-known/oauth-protected-resource",
		"GET /.well-known/oauth-authorization-server",
		"POST /oauth/register",
		"GET /oauth/authorize",
		"POST /oauth/token",
		"POST /v1/mcp",
	}
	if got := l.requests(); !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	l.mu.Lock()
	a, tok := l.auths[0], l.tokenReqs[0]
	l.mu.Unlock()
	if a.Get("code_challenge_method") != "S256" || a.Get("code_challenge") == "" || a.Get("resource") != l.serverURL() || a.Get("client_id") != "legacy-client" {
		t.Errorf("authorization request %v: want S256, the server URL as resource, the registered client", a)
	}
	if tok.form.Get("resource") != l.serverURL() || tok.form.Get("code_verifier") == "" || tok.basic != "legacy-client:legacy-secret" {
		t.Errorf("token request %v (basic %q)", tok.form, tok.basic)
	}
	st, err := tr.Token(context.Background(), l.serverURL())
	if err != nil || st == nil || st.Issuer != l.base() || st.Resource != l.serverURL() {
		t.Errorf("stored token %+v, %v: want issuer %s, resource %s", st, err, l.base(), l.serverURL())
	}
}

// The authorization server metadata request of the 2025-03-26 discovery
// carries MCP-Protocol-Version: the refused request's version, else
// 2025-03-26 (a value that is not a revision is not echoed).
func TestLegacyMetadataRequestCarriesTheProtocolVersion(t *testing.T) {
	for _, tc := range []struct{ sent, want string }{
		{"", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"not a version", "2025-03-26"},
	} {
		t.Run(tc.want+"/"+tc.sent, func(t *testing.T) {
			l := newLegacyServer(t, func(l *legacyServer) { l.metadata = standardMetadata("") })
			if status, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), tc.sent, `{}`); err != nil || status != http.StatusOK {
				t.Fatalf("got %d, %v", status, err)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if !slices.Equal(l.versions, []string{tc.want}) {
				t.Errorf("MCP-Protocol-Version of the metadata requests = %q, want [%q]", l.versions, tc.want)
			}
		})
	}
}

// A server that publishes neither protected resource nor authorization
// server metadata (both answer 404) is used through the default
// endpoints at its origin: /register, /authorize and /token at the
// authorization base URL, the server's path discarded.
func TestServerWithoutAnyMetadataUsesDefaultEndpointsAtItsOrigin(t *testing.T) {
	l := newLegacyServer(t, nil)
	tr := newTestTransport(t, nil)
	if status, _, err := legacyPost(t, tr, l.serverURL(), "", `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	want := []string{
		"POST /v1/mcp",
		"GET /.well-known/oauth-protected-resource/v1/mcp",
		"GET /.well-known/oauth-protected-resource",
		"GET /.well-known/oauth-authorization-server",
		"POST /register",
		"GET /authorize",
		"POST /token",
		"POST /v1/mcp",
	}
	if got := l.requests(); !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	l.mu.Lock()
	a := l.auths[0]
	l.mu.Unlock()
	if a.Get("code_challenge_method") != "S256" || a.Get("resource") != l.serverURL() {
		t.Errorf("authorization request %v: want PKCE S256 and the resource", a)
	}
	// Other 4xx answers say "nothing here" too.
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusGone} {
		l := newLegacyServer(t, func(l *legacyServer) { l.prmStatus, l.asStatus = status, status })
		if got, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`); err != nil || got != http.StatusOK {
			t.Errorf("metadata URLs answering %d: got %d, %v; want the default endpoints used", status, got, err)
		}
	}
}

// A server that publishes protected resource metadata is never treated
// as a 2025-03-26 one: the authorization server it names is used, and the
// metadata and endpoints at its own origin receive nothing.
func TestPublishedPRMIsNeverBypassed(t *testing.T) {
	as := newLegacyServer(t, func(l *legacyServer) { l.metadata = standardMetadata("") })
	l := newLegacyServer(t, func(l *legacyServer) {
		l.metadata = standardMetadata("")
		l.prmDoc = func(base string) map[string]any {
			return map[string]any{"resource": base + "/v1/mcp", "authorization_servers": []string{as.base()}}
		}
	})
	l.trust = as
	tr := newTestTransport(t, nil)
	if status, _, err := legacyPost(t, tr, l.serverURL(), "", `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/register", "/authorize", "/token"} {
		if l.hit(p) {
			t.Errorf("the MCP server's own %s was requested although it publishes protected resource metadata", p)
		}
	}
	if !as.hit("/token") {
		t.Errorf("the authorization server named by the PRM got no token request; it saw %v", as.requests())
	}
}

// Protected resource metadata that is published but wrong stops the
// flow: no fallback to the server's origin.
func TestInvalidPRMDoesNotFallBack(t *testing.T) {
	l := newLegacyServer(t, func(l *legacyServer) {
		l.metadata = standardMetadata("")
		l.prmDoc = func(string) map[string]any {
			return map[string]any{"resource": "https://elsewhere.example/mcp", "authorization_servers": []string{"https://as.example"}}
		}
	})
	_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
	if !errors.Is(err, ErrResourceMismatch) {
		t.Fatalf("error %v, want ErrResourceMismatch", err)
	}
	if l.hit("/.well-known/oauth-authorization-server") || l.hit("/register") {
		t.Errorf("the origin's authorization server was used: %v", l.requests())
	}
}

// A challenge naming resource_metadata says the server has protected
// resource metadata: when it cannot be found, the flow fails instead of
// falling back.
func TestChallengeNamingPRMDoesNotFallBack(t *testing.T) {
	l := newLegacyServer(t, func(l *legacyServer) { l.metadata = standardMetadata("") })
	l.challengePRM = l.base() + "/.well-known/oauth-protected-resource/v1/mcp"
	_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
	if !errors.Is(err, ErrMetadataNotFound) {
		t.Fatalf("error %v, want ErrMetadataNotFound", err)
	}
	if l.hit("/.well-known/oauth-authorization-server") {
		t.Errorf("fell back although the challenge names resource_metadata: %v", l.requests())
	}
}

// Only "nothing published" (4xx) falls back: a PRM URL that answers
// 5xx or redirects is an error, and the origin's authorization server is
// not asked.
func TestPRMOutageDoesNotFallBack(t *testing.T) {
	t.Run("5xx", func(t *testing.T) {
		l := newLegacyServer(t, func(l *legacyServer) { l.metadata = standardMetadata(""); l.prmStatus = http.StatusServiceUnavailable })
		_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
		if !errors.Is(err, ErrMetadataNotFound) {
			t.Fatalf("error %v, want ErrMetadataNotFound", err)
		}
		if l.hit("/.well-known/oauth-authorization-server") {
			t.Errorf("fell back on a 503: %v", l.requests())
		}
	})
	t.Run("redirect", func(t *testing.T) {
		s := newSink(t)
		l := newLegacyServer(t, func(l *legacyServer) {
			l.metadata = standardMetadata("")
			l.redirects = map[string]string{"/.well-known/oauth-protected-resource": s.url("/prm")}
		})
		_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
		checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
		if l.hit("/.well-known/oauth-authorization-server") {
			t.Errorf("fell back on a redirect: %v", l.requests())
		}
	})
}

// The metadata found at the server's origin must name that origin (the
// authorization base URL) as its issuer, with or without the "/" of an
// empty path; any other issuer stops the flow before any endpoint is
// used.
func TestFallbackMetadataIssuerMustBeTheServersOrigin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		issuer func(base string) string
		ok     bool
	}{
		{"origin", func(b string) string { return b }, true},
		{"origin with slash", func(b string) string { return b + "/" }, true},
		{"another host", func(string) string { return "https://as.example" }, false},
		{"a path", func(b string) string { return b + "/v1" }, false},
		{"another port", func(b string) string { return "http://127.0.0.1:1" }, false},
		{"empty", func(string) string { return "" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLegacyServer(t, func(l *legacyServer) {
				l.metadata = func(base string) map[string]any {
					m := standardMetadata("")(base)
					m["issuer"] = tc.issuer(base)
					return m
				}
			})
			tr := newTestTransport(t, nil)
			status, _, err := legacyPost(t, tr, l.serverURL(), "", `{}`)
			if tc.ok {
				if err != nil || status != http.StatusOK {
					t.Fatalf("got %d, %v", status, err)
				}
				if st, _ := tr.Token(context.Background(), l.serverURL()); st == nil || st.Issuer != tc.issuer(l.base()) {
					t.Errorf("stored token %+v: want the issuer the metadata names", st)
				}
				return
			}
			if !errors.Is(err, ErrIssuerMismatch) {
				t.Fatalf("error %v, want ErrIssuerMismatch", err)
			}
			for _, p := range []string{"/register", "/authorize", "/token"} {
				if l.hit(p) {
					t.Errorf("%s was used with a mismatched issuer", p)
				}
			}
		})
	}
}

// Without protected resource metadata, every endpoint the origin's
// metadata names must be on that origin: an endpoint on another host
// (here a second loopback server) is refused, and nothing reaches it.
func TestFallbackEndpointsMustBeOnTheServersOrigin(t *testing.T) {
	for _, field := range []string{"authorization_endpoint", "token_endpoint", "registration_endpoint"} {
		t.Run(field, func(t *testing.T) {
			s := newSink(t)
			l := newLegacyServer(t, func(l *legacyServer) {
				l.metadata = func(base string) map[string]any {
					m := standardMetadata("")(base)
					m[field] = s.url("/" + field)
					return m
				}
			})
			_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
			if !errors.Is(err, ErrInvalidMetadata) || !strings.Contains(err.Error(), "origin") {
				t.Fatalf("error %v, want ErrInvalidMetadata naming the origin", err)
			}
			if n := s.n.Load(); n != 0 {
				t.Errorf("the other host received %d requests", n)
			}
		})
	}
}

// The origin's metadata must offer PKCE S256, as any metadata must.
func TestFallbackMetadataWithoutS256IsRefused(t *testing.T) {
	l := newLegacyServer(t, func(l *legacyServer) {
		l.metadata = func(base string) map[string]any {
			m := standardMetadata("")(base)
			delete(m, "code_challenge_methods_supported")
			return m
		}
	})
	_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
	if !errors.Is(err, ErrPKCEUnsupported) {
		t.Fatalf("error %v, want ErrPKCEUnsupported", err)
	}
	if l.hit("/authorize") {
		t.Error("the authorization endpoint was used")
	}
}

// The default endpoints are used only when the origin publishes no
// authorization server metadata (4xx): a metadata URL that redirects,
// fails (5xx) or serves a malformed document is an error, and no default
// endpoint is used. The redirect is not followed.
func TestBrokenFallbackMetadataDoesNotUseDefaultEndpoints(t *testing.T) {
	t.Run("redirect", func(t *testing.T) {
		s := newSink(t)
		l := newLegacyServer(t, func(l *legacyServer) {
			l.redirects = map[string]string{"/.well-known/oauth-authorization-server": s.url("/metadata")}
		})
		_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
		checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
		if l.hit("/register") || l.hit("/token") {
			t.Errorf("default endpoints used: %v", l.requests())
		}
	})
	for _, tc := range []struct {
		name      string
		configure func(l *legacyServer)
		want      error
	}{
		{"5xx", func(l *legacyServer) { l.asStatus = http.StatusInternalServerError }, ErrMetadataNotFound},
		{"malformed", func(l *legacyServer) { l.asRaw = `{"issuer":` }, ErrInvalidMetadata},
		{"not an object", func(l *legacyServer) { l.asRaw = `["x"]` }, ErrInvalidMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLegacyServer(t, tc.configure)
			_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if l.hit("/register") || l.hit("/authorize") || l.hit("/token") {
				t.Errorf("default endpoints used: %v", l.requests())
			}
		})
	}
}

// The default endpoints follow no redirect either: the registration and
// the code exchange (code, PKCE verifier, client secret) go nowhere else.
func TestDefaultEndpointsFollowNoRedirects(t *testing.T) {
	for _, p := range []string{"/register", "/token"} {
		t.Run(p, func(t *testing.T) {
			s := newSink(t)
			l := newLegacyServer(t, func(l *legacyServer) { l.redirects = map[string]string{p: s.url(p)} })
			_, _, err := legacyPost(t, newTestTransport(t, nil), l.serverURL(), "", `{}`)
			checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
		})
	}
}

// The fallback keeps the https rule: an MCP server on plain http off
// loopback (reached here through a dialer that sends every host to the
// loopback server) gets no authorization server at its origin, and no
// metadata request is sent there, unless AllowInsecureHTTP.
func TestFallbackRefusesPlainHTTPOffLoopback(t *testing.T) {
	l := newLegacyServer(t, func(l *legacyServer) { l.metadata = standardMetadata("") })
	addr := l.srv.Listener.Addr().String()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	const server = "http://mcp.example/v1/mcp"
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("AllowInsecureHTTP=", allow), func(t *testing.T) {
			base := &http.Transport{DialContext: dial}
			t.Cleanup(base.CloseIdleConnections)
			tr := newTestTransport(t, func(o *Options) {
				o.Base = base
				o.AllowInsecureHTTP = allow
			})
			l.mu.Lock()
			l.versions = nil
			l.mu.Unlock()
			_, _, err := legacyPost(t, tr, server, "", `{}`)
			l.mu.Lock()
			asked := len(l.versions)
			l.mu.Unlock()
			if allow {
				// The metadata names the loopback origin, not
				// http://mcp.example: the issuer check stops it.
				if !errors.Is(err, ErrIssuerMismatch) || asked != 1 {
					t.Fatalf("error %v after %d metadata requests, want ErrIssuerMismatch after 1", err, asked)
				}
				return
			}
			if !errors.Is(err, ErrInvalidMetadata) || !strings.Contains(err.Error(), "https") {
				t.Fatalf("error %v, want ErrInvalidMetadata about https", err)
			}
			if asked != 0 {
				t.Errorf("%d metadata requests sent over plain http", asked)
			}
		})
	}
}

// A Grant bound to another authorization server fails at once against a
// server without protected resource metadata (whose authorization server
// can only be its origin); an unbound one runs at the origin's token
// endpoint and is bound to it.
func TestFallbackGrantIsBoundToTheOrigin(t *testing.T) {
	t.Run("bound elsewhere", func(t *testing.T) {
		l := newLegacyServer(t, nil)
		tr := newTestTransport(t, func(o *Options) {
			o.Authorize, o.RedirectURL = nil, ""
			o.Grant = &Grant{Issuer: "https://as.example", Client: ClientCredentials{ClientID: "svc", ClientSecret: "s3cret"}}
		})
		_, _, err := legacyPost(t, tr, l.serverURL(), "", `{}`)
		if !errors.Is(err, ErrIssuerMismatch) {
			t.Fatalf("error %v, want ErrIssuerMismatch", err)
		}
		if l.hit("/.well-known/oauth-authorization-server") || l.hit("/token") {
			t.Errorf("requests reached the origin's authorization server: %v", l.requests())
		}
	})
	t.Run("unbound", func(t *testing.T) {
		l := newLegacyServer(t, nil)
		tr := newTestTransport(t, func(o *Options) {
			o.Authorize, o.RedirectURL = nil, ""
			o.Grant = &Grant{Client: ClientCredentials{ClientID: "svc", ClientSecret: "s3cret"}}
		})
		if status, _, err := legacyPost(t, tr, l.serverURL(), "", `{}`); err != nil || status != http.StatusOK {
			t.Fatalf("got %d, %v", status, err)
		}
		l.mu.Lock()
		tok := l.tokenReqs[0]
		l.mu.Unlock()
		if tok.form.Get("grant_type") != "client_credentials" || tok.basic != "svc:s3cret" || tok.form.Get("resource") != l.serverURL() {
			t.Errorf("token request %v (basic %q)", tok.form, tok.basic)
		}
		if err := tr.checkGrantIssuer(l.base()); err != nil {
			t.Errorf("the grant is not bound to the origin: %v", err)
		}
	})
}

// Client identity in the fallback is keyed by the origin as issuer:
// credentials pre-registered for it are used at the default endpoints,
// with no registration.
func TestFallbackUsesCredentialsPreRegisteredForTheOrigin(t *testing.T) {
	l := newLegacyServer(t, func(l *legacyServer) { l.preClient = "pre:pre-secret" })
	tr := newTestTransport(t, func(o *Options) {
		o.PreRegistered = map[string]ClientCredentials{l.base(): {ClientID: "pre", ClientSecret: "pre-secret"}}
	})
	if status, _, err := legacyPost(t, tr, l.serverURL(), "", `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	if l.hit("/register") {
		t.Error("registered although credentials are pre-registered for the origin")
	}
}

// A token obtained through the fallback is refreshed at the same
// origin's token endpoint, with the same resource, when the server
// refuses it.
func TestFallbackTokenIsRefreshedAtTheOrigin(t *testing.T) {
	l := newLegacyServer(t, func(l *legacyServer) { l.refreshTokens = true })
	tr := newTestTransport(t, nil)
	if status, _, err := legacyPost(t, tr, l.serverURL(), "", `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	l.revokeAll()
	if status, _, err := legacyPost(t, tr, l.serverURL(), "", `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("after revocation: got %d, %v", status, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.auths) != 1 || len(l.tokenReqs) != 2 {
		t.Fatalf("authorization requests %d, token requests %d; want 1 and 2", len(l.auths), len(l.tokenReqs))
	}
	f := l.tokenReqs[1].form
	if f.Get("grant_type") != "refresh_token" || f.Get("resource") != l.serverURL() {
		t.Errorf("second token request %v, want a refresh with the resource", f)
	}
}

func TestAuthorizationBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example.com/v1/mcp":      "https://api.example.com",
		"https://API.Example.com/mcp?x=1#f":   "https://api.example.com",
		"https://user:pw@api.example.com/mcp": "https://api.example.com",
		"http://127.0.0.1:8080/mcp":           "http://127.0.0.1:8080",
		"http://[::1]:8080/a/b/":              "http://[::1]:8080",
		"https://api.example.com":             "https://api.example.com",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := authorizationBaseURL(u); got != want {
			t.Errorf("authorizationBaseURL(%s) = %s, want %s", in, got, want)
		}
	}
}
