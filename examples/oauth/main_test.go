package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestOAuthDemoGetsATokenAndCalls(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello reports-bot\n" {
		t.Errorf("printed %q", out.String())
	}
}

// The protected server refuses a request without a token with a
// challenge naming its metadata, and a client with a wrong secret gets
// no token and no result.
func TestOAuthServerRefusesCallersWithoutAToken(t *testing.T) {
	as := newAuthorizationServer("reports-bot", "s3cret")
	asServer := httptest.NewServer(as)
	defer asServer.Close()
	as.issuer = asServer.URL
	srv := newProtectedServer(as, as.issuer)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("got %d %q, want 401 naming the metadata", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	var out strings.Builder
	if err := callAsBot(t.Context(), srv.URL+"/mcp", as.issuer, "wrong", &out); err == nil || out.Len() != 0 {
		t.Errorf("with a wrong secret: err %v, printed %q", err, out.String())
	}
}

// The interactive Transport of the auth page builds (its flow needs a
// person and a browser, so it is not run).
func TestOAuthUserTransportBuilds(t *testing.T) {
	if _, err := userTransport(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
