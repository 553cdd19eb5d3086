package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/internal/oauthtest"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// protectedServer serves testServer behind bearer authentication, with
// its protected resource metadata, and the authorization server that
// issues its tokens (which also knows the pre-registered client "pre-1"
// with secret "pre-secret").
func protectedServer(t *testing.T) (string, *oauthtest.Server) {
	t.Helper()
	as, err := oauthtest.New(oauthtest.Options{Subject: "ada", Scopes: []string{"mcp"}, Clients: map[string]string{"pre-1": "pre-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	srv := testServer()
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	resource := hs.URL + "/mcp"
	v, err := auth.NewJWTVerifier(auth.JWTOptions{Issuer: as.Issuer(), Audience: resource, JWKSURL: as.JWKSURL()})
	if err != nil {
		t.Fatal(err)
	}
	prm, _ := auth.ResourceMetadataURL(resource)
	mux.Handle("/mcp", auth.RequireBearer(mcp.NewHTTPHandler(srv, nil), &auth.BearerOptions{
		Verifier: v, ResourceMetadataURL: prm, Logger: slog.New(slog.DiscardHandler)}))
	u, _ := url.Parse(prm)
	mux.Handle(u.Path, auth.ProtectedResourceHandler(&auth.ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{as.Issuer()}, ScopesSupported: []string{"mcp"}}))
	return resource, as
}

func freeRedirect(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String() + "/callback"
}

// oauthCLI runs the CLI and plays the user's browser: it watches stderr
// for the authorization URL, GETs it and follows the redirects to the
// CLI's loopback listener. It returns the result and how many times the
// browser was used.
func oauthCLI(t *testing.T, stdin string, args ...string) (result, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errw testutil.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, strings.NewReader(stdin), &out, &errw) }()
	var logins atomic.Int32
	browserDone := make(chan struct{})
	go func() {
		defer close(browserDone)
		seen := 0
		for ctx.Err() == nil {
			lines := strings.Split(errw.String(), "\n")
			for _, l := range lines[seen:max(seen, len(lines)-1)] {
				if u, ok := strings.CutPrefix(l, "  http"); ok {
					logins.Add(1)
					resp, err := http.Get("http" + u)
					if err != nil {
						t.Errorf("browser: %v", err)
						return
					}
					page, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if !strings.Contains(string(page), "You may close this window") {
						t.Errorf("browser ended on %s: %s", resp.Request.URL, page)
					}
				}
			}
			seen = max(seen, len(lines)-1)
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var code int
	select {
	case code = <-done:
	case <-ctx.Done():
		t.Fatalf("the CLI did not finish; stderr:\n%s", errw.String())
	}
	cancel()
	<-browserDone
	r := result{out.String(), errw.String(), code}
	t.Logf("roundtrip %s → %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, r.stdout, r.stderr)
	return r, int(logins.Load())
}

func TestOAuth(t *testing.T) {
	url, as := protectedServer(t)
	redirect := freeRedirect(t)
	file := filepath.Join(t.TempDir(), "tokens.json")
	flags := []string{"--url", url, "--oauth", "--oauth-redirect", redirect, "--oauth-token-file", file}

	// Without --oauth the server's 401 is an auth failure.
	r := cli(t, "", "tools", "--url", url)
	r.must(t, exitAuth)
	if !strings.Contains(r.stderr, "401") {
		t.Errorf("stderr lacks the 401")
	}

	// The first run logs in through the browser, then calls.
	r, logins := oauthCLI(t, "", append([]string{"call", "echo", "text=hi"}, flags...)...)
	r.must(t, 0, "hi")
	if logins != 1 || !strings.Contains(r.stderr, "requires authorization") || !strings.Contains(r.stderr, "authorized.") {
		t.Errorf("%d logins; stderr %q", logins, r.stderr)
	}
	if s := as.Stats(); s != (oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1}) {
		t.Errorf("after the first run: %+v", s)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("token file: %v, %v", fi, err)
	}

	// The next runs use the stored token: no browser, no token request;
	// a call that asks questions goes through several rounds with it.
	r, logins = oauthCLI(t, "us-east-1\n20\n", append([]string{"call", "provision", "name=orders"}, flags...)...)
	r.must(t, 0, "Provisioned orders in us-east-1 with 20 GB.")
	r2, logins2 := oauthCLI(t, "", append([]string{"tools"}, flags...)...)
	r2.must(t, 0, "provision")
	if logins+logins2 != 0 || strings.Contains(r.stderr+r2.stderr, "requires authorization") {
		t.Errorf("a later run logged in again")
	}
	if s := as.Stats(); s != (oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1}) {
		t.Errorf("after the later runs: %+v", s)
	}

	// An access token the server no longer accepts (the AS was asked to
	// forget nothing, but the resource refuses): the stored refresh token
	// and registration are used without the browser.
	b, _ := os.ReadFile(file)
	tampered := strings.Replace(string(b), `"access_token": "`, `"access_token": "x`, 1)
	if tampered == string(b) {
		t.Fatalf("no access token in the file: %s", b)
	}
	if err := os.WriteFile(file, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	r, logins = oauthCLI(t, "", append([]string{"call", "echo", "text=again"}, flags...)...)
	r.must(t, 0, "again")
	if s := as.Stats(); logins != 0 || s != (oauthtest.Stats{Registrations: 1, Authorizations: 1, CodeGrants: 1, RefreshGrants: 1}) {
		t.Errorf("a refused token: %d logins, stats %+v; want one refresh", logins, s)
	}

	// logout forgets the token: the next run logs in again.
	cli(t, "", "logout", "--url", url, "--oauth-token-file", file).must(t, 0, "forgot the token for "+url)
	cli(t, "", "logout", "--url", url, "--oauth-token-file", file).must(t, 0, "no token stored")
	r, logins = oauthCLI(t, "", append([]string{"discover"}, flags...)...)
	r.must(t, 0, "testsrv")
	if s := as.Stats(); logins != 1 || s.Authorizations != 2 {
		t.Errorf("after logout: %d logins, stats %+v", logins, s)
	}
	cli(t, "", "logout", "--all", "--oauth-token-file", file).must(t, 0, "removed "+file)
	if _, err := os.Stat(file); err == nil {
		t.Errorf("logout --all left the file")
	}
}

func TestOAuthPreRegistered(t *testing.T) {
	url, as := protectedServer(t)
	redirect := freeRedirect(t)
	file := filepath.Join(t.TempDir(), "tokens.json")
	t.Setenv(clientSecretEnv, "pre-secret")
	r, logins := oauthCLI(t, "", "tools", "--url", url, "--oauth", "--oauth-redirect", redirect, "--oauth-token-file", file,
		"--oauth-issuer", as.Issuer(), "--oauth-client-id", "pre-1")
	r.must(t, 0, "echo")
	if s := as.Stats(); logins != 1 || s != (oauthtest.Stats{Authorizations: 1, CodeGrants: 1}) {
		t.Errorf("%d logins, stats %+v; want one authorization and no registration", logins, s)
	}
	// A wrong secret is refused by the token endpoint: an auth failure.
	t.Setenv(clientSecretEnv, "")
	r, _ = oauthCLI(t, "", "tools", "--url", url, "--oauth", "--oauth-redirect", redirect, "--oauth-token-file", filepath.Join(t.TempDir(), "t.json"),
		"--oauth-issuer", as.Issuer(), "--oauth-client-id", "pre-1", "--oauth-client-secret", "wrong")
	r.must(t, exitAuth)
	if !strings.Contains(r.stderr, "invalid_client") {
		t.Errorf("stderr lacks invalid_client")
	}
}

// TestOAuthDefaultTokenFile: without --oauth-token-file the tokens go
// under the user's configuration directory.
func TestOAuthDefaultTokenFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("AppData", filepath.Join(home, "AppData"))
	dir, err := os.UserConfigDir()
	if err != nil {
		t.Fatal(err)
	}
	url, _ := protectedServer(t)
	r, logins := oauthCLI(t, "", "tools", "--url", url, "--oauth", "--oauth-redirect", freeRedirect(t))
	r.must(t, 0, "echo")
	if logins != 1 {
		t.Errorf("%d logins", logins)
	}
	if _, err := os.Stat(filepath.Join(dir, "roundtrip", "oauth-tokens.json")); err != nil {
		t.Errorf("the default token file: %v", err)
	}
}

func TestOAuthUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.json")
	for _, args := range [][]string{
		{"tools", "--oauth", "--oauth-token-file", file, "--", "true"},
		{"tools", "--url", "http://127.0.0.1:1/mcp", "--oauth", "--oauth-client-id", "x", "--oauth-token-file", file},
		{"tools", "--url", "http://127.0.0.1:1/mcp", "--oauth", "--oauth-issuer", "https://as.example", "--oauth-token-file", file},
		{"tools", "--url", "http://127.0.0.1:1/mcp", "--oauth", "--oauth-client-secret", "s", "--oauth-token-file", file},
		{"tools", "--url", "http://127.0.0.1:1/mcp", "--oauth", "--oauth-redirect", "https://127.0.0.1:8765/cb", "--oauth-token-file", file},
		{"tools", "--url", "http://127.0.0.1:1/mcp", "--oauth", "--oauth-redirect", "http://example.com:8765/cb", "--oauth-token-file", file},
		{"tools", "--url", "http://127.0.0.1:1/mcp", "--oauth", "-H", "Authorization: Bearer x", "--oauth-token-file", file},
		{"tools", "--url", "http://127.0.0.1:1/mcp", "--oauth-client-id", "x"},
		{"logout", "--oauth-token-file", file},
	} {
		cli(t, "", args...).must(t, exitUsage)
	}
	cli(t, "", "help", "logout").must(t, 0, "-all", "oauth-token-file")
	cli(t, "", "--help").must(t, 0, "--oauth", "logout")
}
