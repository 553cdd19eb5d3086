package auth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/internal/oauthtest"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// clock is the shared time of the authorization server (iat, exp) and
// the resource server's verifier: advancing it expires the tokens.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// protected is an MCP server behind RequireBearer and a JWTVerifier,
// with its protected resource metadata, and the authorization server
// that issues its tokens.
type protected struct {
	as       *oauthtest.Server
	resource string // the MCP endpoint, also the token audience
	clock    *clock
	status   sync.Map // HTTP status -> *atomic.Int32, of /mcp responses
}

type Confirm struct {
	OK bool `json:"ok"`
}

func newProtected(t *testing.T) *protected {
	t.Helper()
	return newProtectedWith(t, []string{"mcp:tools"}, nil)
}

// newProtectedWith is newProtected with the authorization server's
// scopes and the resource server's options changed by configure.
func newProtectedWith(t *testing.T, scopes []string, configure func(o *auth.BearerOptions)) *protected {
	t.Helper()
	p := &protected{clock: &clock{}}
	as, err := oauthtest.New(oauthtest.Options{Subject: "ada", Scopes: scopes, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	p.as = as

	srv := mcp.NewServer(mcp.Implementation{Name: "protected", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			ti := mcp.TokenInfoFromContext(ctx)
			if ti == nil {
				return mcp.ErrorResult("no token info"), nil
			}
			return mcp.TextResult(ti.Subject), nil
		})
	srv.AddTool(&mcp.Tool{Name: "nuke", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return mcp.TextResult("nuked by " + mcp.TokenInfoFromContext(ctx).Subject), nil
		})
	srv.AddTool(&mcp.Tool{Name: "launch", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			e, err := mcp.Elicit[Confirm](ctx, "Launch?")
			if err != nil {
				return nil, err
			}
			c, err := e.Value()
			if err != nil {
				return nil, err
			}
			who := "(no token info)"
			if ti := mcp.TokenInfoFromContext(ctx); ti != nil {
				who = ti.Subject
			}
			return mcp.TextResult(fmt.Sprintf("launch=%v by %s", c.OK, who)), nil
		})

	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(func() { rs.Close(); srv.Close() })
	p.resource = rs.URL + "/mcp"
	v, err := auth.NewJWTVerifier(auth.JWTOptions{Issuer: as.Issuer(), Audience: p.resource, JWKSURL: as.JWKSURL(),
		Now: p.clock.Now, Leeway: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	prm, err := auth.ResourceMetadataURL(p.resource)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	bo := &auth.BearerOptions{Verifier: v, ResourceMetadataURL: prm, Scopes: []string{"mcp:tools"}, Logger: quiet}
	if configure != nil {
		configure(bo)
	}
	bearer := auth.RequireBearer(mcp.NewHTTPHandler(srv, nil), bo)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		bearer.ServeHTTP(rec, r)
		n, _ := p.status.LoadOrStore(rec.status, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	}))
	u, _ := url.Parse(prm)
	mux.Handle(u.Path, auth.ProtectedResourceHandler(&auth.ProtectedResourceMetadata{
		Resource: p.resource, AuthorizationServers: []string{as.Issuer()}, ScopesSupported: []string{"mcp:tools"},
		DPoPSigningAlgValuesSupported: dpopAlgs(bo), DPoPBoundAccessTokensRequired: bo.DPoP != nil && bo.DPoP.Required}))
	return p
}

func (p *protected) count(status int) int {
	n, ok := p.status.Load(status)
	if !ok {
		return 0
	}
	return int(n.(*atomic.Int32).Load())
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// freeRedirectURL returns a loopback redirect URL on a port free now.
func freeRedirectURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String() + "/callback"
}

// browser is the user agent: it GETs the authorization URL and follows
// the redirects to the loopback listener, whose page it checks.
type browser struct {
	t     *testing.T
	opens atomic.Int32
}

func (b *browser) open(authorizationURL string) error {
	b.opens.Add(1)
	resp, err := http.Get(authorizationURL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "You may close this window") {
		return fmt.Errorf("the browser ended on %s with HTTP %d: %s", resp.Request.URL, resp.StatusCode, page)
	}
	if !strings.HasPrefix(resp.Request.URL.String(), "http://127.0.0.1:") {
		return fmt.Errorf("the browser ended on %s, not on the loopback listener", resp.Request.URL)
	}
	return nil
}

// client is an MCP client over an auth.Transport with a loopback
// authorizer; the elicitation handler accepts with ok=true.
func (p *protected) client(t *testing.T, b *browser, redirect string, store *auth.FileTokenStore, mode mcp.ClientMode) *mcp.Client {
	t.Helper()
	return p.clientWith(t, b, redirect, store, mode, nil)
}

// clientWith is client with the Transport's options changed by
// configure.
func (p *protected) clientWith(t *testing.T, b *browser, redirect string, store *auth.FileTokenStore, mode mcp.ClientMode, configure func(o *auth.Options)) *mcp.Client {
	t.Helper()
	authorize, err := auth.LoopbackAuthorizer(auth.LoopbackOptions{RedirectURL: redirect, Open: b.open, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	o := &auth.Options{Authorize: authorize, RedirectURL: redirect, Logger: slog.New(slog.DiscardHandler)}
	if store != nil {
		o.TokenStore, o.ClientStore = store, store
	}
	if configure != nil {
		configure(o)
	}
	tr, err := auth.NewTransport(o)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(p.resource, &mcp.HTTPClientOptions{HTTPClient: &http.Client{Transport: tr}}),
		&mcp.ClientOptions{
			Mode: mode,
			Elicitation: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": true}}, nil
			},
			RequestTimeout: 20 * time.Second,
		})
	t.Cleanup(func() { c.Close() })
	return c
}

func callText(t *testing.T, c *mcp.Client, tool string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, tool, map[string]any{}, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: result %+v", tool, res)
	}
	txt, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T", tool, res.Content[0])
	}
	return txt.Text
}

// TestEndToEnd runs both halves of the package together on loopback: an
// mcp.Client over a Transport with the loopback authorizer and a file
// token store, against an mcp.Server behind RequireBearer and a
// JWTVerifier, with a real (minimal) authorization server.
func TestEndToEnd(t *testing.T) {
	p := newProtected(t)
	b := &browser{t: t}
	redirect := freeRedirectURL(t)
	file := filepath.Join(t.TempDir(), "conf", "tokens.json")
	store, err := auth.NewFileTokenStore(file)
	if err != nil {
		t.Fatal(err)
	}
	c := p.client(t, b, redirect, store, 0)

	want := func(step string, s oauthtest.Stats, opens int) {
		t.Helper()
		if got := p.as.Stats(); got != s {
			t.Errorf("%s: authorization server stats %+v, want %+v", step, got, s)
		}
		if got := int(b.opens.Load()); got != opens {
			t.Errorf("%s: the browser was opened %d times, want %d", step, got, opens)
		}
	}

	// The first call authorizes once (registration, code, token).
	if got := callText(t, c, "whoami"); got != "ada" {
		t.Fatalf("whoami = %q, want the token's subject", got)
	}
	want("first call", oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1}, 1)
	if p.count(http.StatusUnauthorized) == 0 {
		t.Errorf("the server never answered 401: the flow was not triggered by the challenge")
	}

	// The second reuses the token.
	unauthorized := p.count(http.StatusUnauthorized)
	if got := callText(t, c, "whoami"); got != "ada" {
		t.Fatalf("whoami = %q", got)
	}
	want("second call", oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1}, 1)

	// A multi round-trip call (the tool elicits) through the protected
	// endpoint, with the same token.
	if got := callText(t, c, "launch"); got != "launch=true by ada" {
		t.Fatalf("launch = %q", got)
	}
	want("elicitation", oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1}, 1)
	if p.count(http.StatusUnauthorized) != unauthorized {
		t.Errorf("a request was refused after the authorization")
	}

	// The access token expires: the server refuses it and the refresh
	// token gets a new one, without the user.
	p.clock.Advance(2 * time.Hour)
	if got := callText(t, c, "whoami"); got != "ada" {
		t.Fatalf("whoami after expiry = %q", got)
	}
	want("after expiry", oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1, RefreshGrants: 1}, 1)

	// The file holds the token, privately.
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}

	// A restart: a new store and Transport on the same file call without
	// a new authorization or token request.
	store2, _ := auth.NewFileTokenStore(file)
	c2 := p.client(t, b, redirect, store2, 0)
	if got := callText(t, c2, "launch"); got != "launch=true by ada" {
		t.Fatalf("launch after restart = %q", got)
	}
	want("restart", oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1, RefreshGrants: 1}, 1)

	// A restart after the token expired: the stored refresh token is
	// used with the stored registration, still without the user.
	p.clock.Advance(2 * time.Hour)
	store3, _ := auth.NewFileTokenStore(file)
	c3 := p.client(t, b, redirect, store3, 0)
	if got := callText(t, c3, "whoami"); got != "ada" {
		t.Fatalf("whoami after an expired restart = %q", got)
	}
	want("expired restart", oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1, RefreshGrants: 2}, 1)

	// The refresh token revoked and the access token expired: the user
	// is asked again (same registration), and the call still succeeds.
	p.as.RevokeRefreshTokens()
	p.clock.Advance(2 * time.Hour)
	if got := callText(t, c3, "whoami"); got != "ada" {
		t.Fatalf("whoami after revocation = %q", got)
	}
	want("revoked", oauthtest.Stats{Registrations: 1, Authorizations: 2, CodeGrants: 2, RefreshGrants: 2, TokenErrors: 1}, 2)
}

// TestEndToEndLegacyElicitation runs the elicitation on a 2025-11-25
// session (live server-to-client request on the response stream) through
// the protected endpoint, with the default in-memory token store; the
// handler sees the token's subject there too.
func TestEndToEndLegacyElicitation(t *testing.T) {
	p := newProtected(t)
	b := &browser{t: t}
	c := p.client(t, b, freeRedirectURL(t), nil, mcp.ModeLegacy)
	for range 2 {
		if got := callText(t, c, "launch"); got != "launch=true by ada" {
			t.Fatalf("launch = %q", got)
		}
	}
	if s := p.as.Stats(); s.Authorizations != 1 || s.CodeGrants != 1 {
		t.Errorf("stats %+v, want one authorization", s)
	}
}

// TestEndToEndDenied: the user refuses; the call fails with
// ErrAuthorizationDenied and the listener has shown the refusal.
func TestEndToEndDenied(t *testing.T) {
	p := newProtected(t)
	p.as.SetDeny(true)
	redirect := freeRedirectURL(t)
	var page string
	authorize, err := auth.LoopbackAuthorizer(auth.LoopbackOptions{RedirectURL: redirect, Timeout: 10 * time.Second,
		Open: func(u string) error {
			resp, err := http.Get(u)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			page = string(b)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := auth.NewTransport(&auth.Options{Authorize: authorize, RedirectURL: redirect, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, p.resource, strings.NewReader(`{}`))
	_, err = (&http.Client{Transport: tr}).Do(req)
	if !errors.Is(err, auth.ErrAuthorizationDenied) || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("err = %v, want ErrAuthorizationDenied with access_denied", err)
	}
	if !strings.Contains(page, "not granted") || !strings.Contains(page, "access_denied") {
		t.Errorf("page = %q", page)
	}
}

// A new login after a restart, with no token left (logged out), reuses
// the registration the ClientStore kept: no second registration.
func TestEndToEndNewLoginReusesStoredRegistration(t *testing.T) {
	p := newProtected(t)
	b := &browser{t: t}
	redirect := freeRedirectURL(t)
	file := filepath.Join(t.TempDir(), "tokens.json")
	store, err := auth.NewFileTokenStore(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := callText(t, p.client(t, b, redirect, store, 0), "whoami"); got != "ada" {
		t.Fatalf("whoami = %q", got)
	}
	// Log out (forget every token), then start again from the file.
	store2, _ := auth.NewFileTokenStore(file)
	key, err := auth.TokenKey(p.resource)
	if err != nil {
		t.Fatal(err)
	}
	if err := store2.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := callText(t, p.client(t, b, redirect, store2, 0), "whoami"); got != "ada" {
		t.Fatalf("whoami after logout = %q", got)
	}
	if s := p.as.Stats(); s.Registrations != 1 || s.Authorizations != 2 {
		t.Errorf("stats %+v, want one registration and two authorizations", s)
	}
}
