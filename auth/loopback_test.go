package auth

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func authURL(redirect, state string) string {
	q := url.Values{"redirect_uri": {redirect}, "client_id": {"c"}}
	if state != "" {
		q.Set("state", state)
	}
	return "https://as.example/authorize?" + q.Encode()
}

func TestLoopbackOptionsValidation(t *testing.T) {
	for _, bad := range []string{
		"", "https://127.0.0.1:8765/cb", "http://example.com:8765/cb", "http://10.0.0.1:8765/cb",
		"http://127.0.0.1/cb", "http://127.0.0.1:0/cb", "http://127.0.0.1:8765/cb?x=1",
		"http://127.0.0.1:8765/cb#f", "http://u:p@127.0.0.1:8765/cb", "myapp:/cb", "://",
	} {
		if _, err := LoopbackAuthorizer(LoopbackOptions{RedirectURL: bad}); err == nil {
			t.Errorf("LoopbackAuthorizer accepted %q", bad)
		}
	}
	for _, good := range []string{"http://127.0.0.1:8765/callback", "http://[::1]:8765/cb", "http://localhost:8765", "http://127.0.0.2:1234/x"} {
		if _, err := LoopbackAuthorizer(LoopbackOptions{RedirectURL: good}); err != nil {
			t.Errorf("LoopbackAuthorizer(%q): %v", good, err)
		}
	}
}

// get sends a request to the listener and returns status and body.
func get(t *testing.T, method, u, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, u, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLoopbackCatchesTheRedirect(t *testing.T) {
	redirect := "http://127.0.0.1:" + freePort(t) + "/callback"
	base := strings.TrimSuffix(redirect, "/callback")
	type answer struct {
		status int
		body   string
	}
	answers := map[string]answer{}
	authorize, err := LoopbackAuthorizer(LoopbackOptions{RedirectURL: redirect, Timeout: 10 * time.Second, Open: func(string) error {
		// The "browser", plus noise that must not end the wait.
		for name, r := range map[string]struct{ method, url, host string }{
			"other path":  {"GET", base + "/favicon.ico", ""},
			"wrong state": {"GET", redirect + "?code=x&state=forged", ""},
			"no state":    {"GET", redirect + "?code=x", ""},
			"wrong host":  {"GET", redirect + "?code=x&state=s1", "evil.example:80"},
			"post":        {"POST", redirect + "?code=x&state=s1", ""},
		} {
			st, b := get(t, r.method, r.url, r.host)
			answers[name] = answer{st, b}
		}
		st, b := get(t, "GET", redirect+"?code=abc&state=s1&iss=https%3A%2F%2Fas.example", "")
		answers["redirect"] = answer{st, b}
		st, b = get(t, "GET", redirect+"?code=again&state=s1", "")
		answers["second"] = answer{st, b}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := authorize(context.Background(), authURL(redirect, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.String(), redirect+"?code=abc&state=s1&iss=https%3A%2F%2Fas.example"; got != want {
		t.Errorf("redirect URL = %s, want %s", got, want)
	}
	for name, want := range map[string]int{"other path": 404, "wrong state": 400, "no state": 400, "wrong host": 404, "post": 405, "redirect": 200, "second": 409} {
		if got := answers[name].status; got != want {
			t.Errorf("%s: HTTP %d, want %d", name, got, want)
		}
	}
	if !strings.Contains(answers["redirect"].body, "You may close this window") {
		t.Errorf("page = %q", answers["redirect"].body)
	}
	// The listener is gone.
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second); err == nil {
		c.Close()
		t.Errorf("still listening after the redirect")
	}
}

func TestLoopbackErrorPageAndDefaultOpen(t *testing.T) {
	redirect := "http://localhost:" + freePort(t) + "/cb"
	var out testutil.Buffer
	done := make(chan struct{})
	var page string
	authorize, err := LoopbackAuthorizer(LoopbackOptions{RedirectURL: redirect, Output: &out, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		// The printed URL is what a user would open; then the AS
		// redirects back with an error.
		for i := 0; i < 500 && !strings.Contains(out.String(), "Waiting"); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		_, page = get(t, "GET", redirect+"?error=access_denied%3Cscript%3E&state=s2", "")
	}()
	u, err := authorize(context.Background(), authURL(redirect, "s2"))
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if u.Query().Get("error") != "access_denied<script>" {
		t.Errorf("redirect URL = %s", u)
	}
	if !strings.Contains(out.String(), authURL(redirect, "s2")) {
		t.Errorf("output lacks the authorization URL: %q", out.String())
	}
	if !strings.Contains(page, "not granted") || strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("page = %q", page)
	}
}

func TestLoopbackFailures(t *testing.T) {
	redirect := "http://127.0.0.1:" + freePort(t) + "/cb"
	opened := 0
	authorize, err := LoopbackAuthorizer(LoopbackOptions{RedirectURL: redirect, Timeout: 100 * time.Millisecond,
		Open: func(string) error { opened++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	// Another redirect_uri: refused before listening or opening.
	if _, err := authorize(context.Background(), authURL("http://127.0.0.1:1/other", "s")); !errors.Is(err, ErrRedirectMismatch) {
		t.Errorf("mismatch: err = %v", err)
	}
	if opened != 0 {
		t.Errorf("opened with a mismatched redirect")
	}
	// Nobody comes back: the timeout.
	start := time.Now()
	if _, err := authorize(context.Background(), authURL(redirect, "s")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: err = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the timeout took %v", time.Since(start))
	}
	// The caller gives up.
	ctx, cancel := context.WithCancel(context.Background())
	authorize2, _ := LoopbackAuthorizer(LoopbackOptions{RedirectURL: redirect, Open: func(string) error { cancel(); return nil }})
	if _, err := authorize2(ctx, authURL(redirect, "s")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: err = %v", err)
	}
	// Open fails: the error is returned and the port is free again.
	boom := errors.New("no browser")
	authorize3, _ := LoopbackAuthorizer(LoopbackOptions{RedirectURL: redirect, Open: func(string) error { return boom }})
	if _, err := authorize3(context.Background(), authURL(redirect, "s")); !errors.Is(err, boom) {
		t.Errorf("open: err = %v", err)
	}
	// The port is taken.
	ln, err := net.Listen("tcp", strings.TrimSuffix(strings.TrimPrefix(redirect, "http://"), "/cb"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := authorize(context.Background(), authURL(redirect, "s")); err == nil || !strings.Contains(err.Error(), "listening") {
		t.Errorf("busy port: err = %v", err)
	}
	// Not an http(s) authorization URL.
	if _, err := authorize(context.Background(), "javascript:alert(1)"); err == nil {
		t.Errorf("a javascript: URL was accepted")
	}
}

func TestStartBrowserRefusesOtherSchemes(t *testing.T) {
	for _, u := range []string{"file:///etc/passwd", "javascript:alert(1)", "%%"} {
		if err := startBrowser(u); err == nil {
			t.Errorf("startBrowser(%q) did not refuse", u)
		}
	}
}
