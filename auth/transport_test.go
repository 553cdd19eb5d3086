package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFlowWithDynamicRegistration(t *testing.T) {
	m := newMock(t, nil)
	tr := newTestTransport(t, nil)

	status, body, err := post(t, tr, m, `{"n":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || body != `{"n":1}` {
		t.Fatalf("got %d %q, want 200 with the request body replayed", status, body)
	}
	auths, tokens, regs := m.snapshot()
	if len(regs) != 1 || len(auths) != 1 || len(tokens) != 1 {
		t.Fatalf("registrations %d, authorization requests %d, token requests %d; want 1 each", len(regs), len(auths), len(tokens))
	}
	reg := regs[0]
	if reg["application_type"] != "native" {
		t.Errorf("application_type = %v, want native for a loopback redirect URI", reg["application_type"])
	}
	if gt, _ := reg["grant_types"].([]any); !slices.Contains(gt, any("refresh_token")) || !slices.Contains(gt, any("authorization_code")) {
		t.Errorf("grant_types = %v", reg["grant_types"])
	}
	a := auths[0]
	for k, want := range map[string]string{
		"response_type":         "code",
		"client_id":             "client-1",
		"code_challenge_method": "S256",
		"resource":              m.serverURL(),
		"redirect_uri":          "http://127.0.0.1:9/callback",
	} {
		if got := a.Get(k); got != want {
			t.Errorf("authorization request %s = %q, want %q", k, got, want)
		}
	}
	if a.Has("scope") {
		t.Errorf("scope = %q sent although nothing defines one", a.Get("scope"))
	}
	f := tokens[0].form
	if f.Get("resource") != m.serverURL() || f.Get("grant_type") != "authorization_code" || f.Get("client_id") != "client-1" {
		t.Errorf("token request form = %v", f)
	}

	// The next request reuses the token: no new flow.
	if status, _, err := post(t, tr, m, `{"n":2}`); err != nil || status != http.StatusOK {
		t.Fatalf("second request: %d, %v", status, err)
	}
	if auths, _, _ := m.snapshot(); len(auths) != 1 {
		t.Errorf("authorization requests = %d after a second call, want 1", len(auths))
	}
	tok, err := tr.Token(context.Background(), m.serverURL())
	if err != nil || tok == nil || tok.Issuer != m.issuer() || tok.Resource != m.serverURL() || tok.ClientID != "client-1" {
		t.Errorf("stored token = %+v, %v", tok, err)
	}
}

func TestDiscoveryVariants(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(m *mock)
		wantHits  []string
	}{
		{"path-aware PRM from challenge, RFC 8414", nil,
			[]string{"rs:/.well-known/oauth-protected-resource/mcp", "as:/.well-known/oauth-authorization-server"}},
		{"PRM not in challenge, root PRM, path issuer", func(m *mock) { m.prmInChallenge, m.prmAtRoot, m.asPrefix = false, true, "/tenant1" },
			[]string{"rs:/.well-known/oauth-protected-resource", "as:/.well-known/oauth-authorization-server/tenant1"}},
		{"OpenID configuration with path appending", func(m *mock) { m.asPrefix, m.openID = "/tenant1", true },
			[]string{"rs:/.well-known/oauth-protected-resource/mcp", "as:/tenant1/.well-known/openid-configuration"}},
		{"OpenID configuration at the root", func(m *mock) { m.openID, m.prmInChallenge = true, false },
			[]string{"rs:/.well-known/oauth-protected-resource/mcp", "as:/.well-known/openid-configuration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMock(t, tc.configure)
			tr := newTestTransport(t, nil)
			if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
				t.Fatalf("got %d, %v", status, err)
			}
			m.mu.Lock()
			hits := slices.Clone(m.metadataHits)
			m.mu.Unlock()
			if !slices.Equal(hits, tc.wantHits) {
				t.Errorf("metadata served = %v, want %v", hits, tc.wantHits)
			}
			auths, _, _ := m.snapshot()
			wantRes := m.serverURL()
			if m.prmAtRoot {
				wantRes = m.rs.URL
			}
			if got := auths[0].Get("resource"); got != wantRes {
				t.Errorf("resource = %q, want the PRM's %q verbatim", got, wantRes)
			}
		})
	}
}

func TestScopeSelection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(m *mock)
		noOffline bool
		want      string
	}{
		{"from the challenge", func(m *mock) { m.challengeScope, m.prmScopes = "mcp:basic", []string{"mcp:other"} }, false, "mcp:basic"},
		{"from PRM scopes_supported", func(m *mock) { m.prmScopes = []string{"a", "b", "c"} }, false, "a b c"},
		{"omitted", nil, false, ""},
		{"offline_access when the AS lists it", func(m *mock) { m.prmScopes, m.asScopes = []string{"a"}, []string{"a", "offline_access"} }, false, "a offline_access"},
		{"offline_access disabled", func(m *mock) { m.prmScopes, m.asScopes = []string{"a"}, []string{"a", "offline_access"} }, true, "a"},
		{"no offline_access when not listed", func(m *mock) { m.prmScopes, m.asScopes = []string{"a"}, []string{"a", "b"} }, false, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMock(t, tc.configure)
			tr := newTestTransport(t, func(o *Options) { o.NoOfflineAccess = tc.noOffline })
			if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
				t.Fatalf("got %d, %v", status, err)
			}
			auths, _, _ := m.snapshot()
			if got := auths[0].Get("scope"); got != tc.want {
				t.Errorf("scope = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStepUp(t *testing.T) {
	m := newMock(t, func(m *mock) { m.challengeScope, m.writeScope = "mcp:basic", "mcp:write" })
	tr := newTestTransport(t, nil)
	if status, _, err := post(t, tr, m, `{"op":"read"}`); err != nil || status != http.StatusOK {
		t.Fatalf("read: %d, %v", status, err)
	}
	status, body, err := post(t, tr, m, `{"op":"write"}`)
	if err != nil || status != http.StatusOK || body != `{"op":"write"}` {
		t.Fatalf("write: %d %q, %v", status, body, err)
	}
	auths, _, regs := m.snapshot()
	if len(auths) != 2 {
		t.Fatalf("authorization requests = %d, want 2", len(auths))
	}
	if got := auths[1].Get("scope"); got != "mcp:basic mcp:write" {
		t.Errorf("step-up scope = %q, want the union %q", got, "mcp:basic mcp:write")
	}
	if len(regs) != 1 {
		t.Errorf("registrations = %d, want 1 (the client is reused)", len(regs))
	}
}

func TestStepUpIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name           string
		challengeScope string
		wantAuths      int
	}{
		// The token lacks the scope: one step-up, then the 403 stands.
		{"one step-up", "", 2},
		// The token already has the challenged scope: re-authorizing
		// cannot help, the 403 stands at once.
		{"token already has the scope", "mcp:write", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMock(t, func(m *mock) {
				m.writeScope, m.alwaysForbid, m.challengeScope = "mcp:write", true, tc.challengeScope
			})
			tr := newTestTransport(t, nil)
			for range 3 {
				status, _, err := post(t, tr, m, `{"op":"write"}`)
				if err != nil {
					t.Fatal(err)
				}
				if status != http.StatusForbidden {
					t.Fatalf("status = %d, want the server's 403", status)
				}
			}
			auths, _, _ := m.snapshot()
			// Later requests carry a token with the challenged scope:
			// no further authorization.
			if len(auths) != tc.wantAuths {
				t.Errorf("authorization requests = %d after 3 requests, want %d", len(auths), tc.wantAuths)
			}
			m.mu.Lock()
			n := len(m.rsRequests)
			m.mu.Unlock()
			if n > 3*3 {
				t.Errorf("%d requests reached the server for 3 calls", n)
			}
		})
	}
}

func TestAuthorizationResponseIss(t *testing.T) {
	for _, tc := range []struct {
		name       string
		advertised bool
		mode       string
		wantErr    error
	}{
		{"advertised and correct", true, "correct", nil},
		{"not advertised, absent", false, "omit", nil},
		{"not advertised, correct", false, "correct", nil},
		{"advertised, absent", true, "omit", ErrIssuerMissing},
		{"advertised, wrong", true, "wrong", ErrIssuerMismatch},
		{"not advertised, wrong", false, "wrong", ErrIssuerMismatch},
		{"trailing slash is not normalized away", true, "slash", ErrIssuerMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMock(t, func(m *mock) { m.issSupported, m.issMode = tc.advertised, tc.mode })
			tr := newTestTransport(t, nil)
			status, _, err := post(t, tr, m, `{}`)
			_, tokens, _ := m.snapshot()
			if tc.wantErr == nil {
				if err != nil || status != http.StatusOK {
					t.Fatalf("got %d, %v; want success", status, err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if len(tokens) != 0 {
				t.Errorf("the code went to the token endpoint %d times despite the iss failure", len(tokens))
			}
		})
	}
}

func TestMetadataChecks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(m *mock)
		wantErr   error
	}{
		{"AS metadata issuer mismatch", func(m *mock) { m.metadataIssuer = "https://attacker.example" }, ErrIssuerMismatch},
		{"PRM resource on another origin", func(m *mock) { m.prmResource = "https://evil.example/mcp" }, ErrResourceMismatch},
		{"PRM resource on another path", func(m *mock) { m.prmResource = "http://" + "127.0.0.1:1/other" }, ErrResourceMismatch},
		{"no S256", func(m *mock) { m.noS256 = true }, ErrPKCEUnsupported},
		{"no way to get a client", func(m *mock) { m.noDCR = true }, ErrNoClient},
		{"insecure issuer", func(m *mock) { m.prmAS = "http://auth.example" }, ErrInvalidMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMock(t, tc.configure)
			tr := newTestTransport(t, nil)
			_, _, err := post(t, tr, m, `{}`)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			auths, _, regs := m.snapshot()
			if len(auths) != 0 || len(regs) != 0 {
				t.Errorf("authorization requests %d, registrations %d after refusing the metadata; want none", len(auths), len(regs))
			}
		})
	}
}

func TestTokenEndpointAuthMethods(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(m *mock)
		opts      func(o *Options, m *mock)
		want      string // "basic", "post" or "none"
	}{
		{"basic from registration", func(m *mock) {
			m.authMethods, m.regSecret, m.regAuthMethod = []string{"client_secret_basic"}, "s3cret", "client_secret_basic"
		}, nil, "basic"},
		{"post from registration", func(m *mock) {
			m.authMethods, m.regSecret, m.regAuthMethod = []string{"client_secret_post"}, "s3cret", "client_secret_post"
		}, nil, "post"},
		{"none from registration", func(m *mock) { m.authMethods = []string{"none"} }, nil, "none"},
		{"post chosen from metadata", func(m *mock) { m.authMethods, m.regSecret = []string{"client_secret_post"}, "s3cret" }, nil, "post"},
		{"pre-registered, basic", func(m *mock) {
			m.noDCR, m.authMethods, m.preClientID = true, []string{"client_secret_basic"}, "pre:client"
		}, func(o *Options, m *mock) {
			o.PreRegistered = map[string]ClientCredentials{m.issuer(): {ClientID: "pre:client", ClientSecret: "pre-secret"}}
		}, "basic"},
		{"CIMD", func(m *mock) { m.cimd = true }, func(o *Options, m *mock) {
			o.ClientMetadataURL = "https://client.example/metadata.json"
		}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMock(t, tc.configure)
			tr := newTestTransport(t, func(o *Options) {
				if tc.opts != nil {
					tc.opts(o, m)
				}
			})
			if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
				t.Fatalf("got %d, %v", status, err)
			}
			auths, tokens, regs := m.snapshot()
			tok := tokens[0]
			var got string
			switch {
			case tok.basic != "":
				got = "basic"
			case tok.form.Has("client_secret"):
				got = "post"
			default:
				got = "none"
			}
			if got != tc.want {
				t.Errorf("token endpoint authentication = %s, want %s (form %v)", got, tc.want, tok.form)
			}
			switch tc.want {
			case "basic":
				if tok.form.Has("client_id") || tok.form.Has("client_secret") {
					t.Errorf("credentials in the form as well as in Basic: %v", tok.form)
				}
			case "none":
				if tok.form.Get("client_id") != auths[0].Get("client_id") {
					t.Errorf("token request client_id %q, authorization request %q", tok.form.Get("client_id"), auths[0].Get("client_id"))
				}
			}
			if strings.HasPrefix(tc.name, "pre-registered") || tc.name == "CIMD" {
				if len(regs) != 0 {
					t.Errorf("registered %d times instead of using the configured identity", len(regs))
				}
			}
			if tc.name == "CIMD" && auths[0].Get("client_id") != "https://client.example/metadata.json" {
				t.Errorf("client_id = %q, want the metadata document URL", auths[0].Get("client_id"))
			}
		})
	}
}

func TestRefresh(t *testing.T) {
	t.Run("expired token refreshed before sending", func(t *testing.T) {
		m := newMock(t, func(m *mock) { m.refreshTokens, m.expiresIn = true, 3600 })
		tr := newTestTransport(t, nil)
		if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
			t.Fatalf("got %d, %v", status, err)
		}
		tr.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
			t.Fatalf("after expiry: %d, %v", status, err)
		}
		auths, tokens, _ := m.snapshot()
		if len(auths) != 1 || len(tokens) != 2 || tokens[1].form.Get("grant_type") != "refresh_token" {
			t.Fatalf("authorizations %d, token requests %d (last %v); want 1 and a refresh", len(auths), len(tokens), tokens[len(tokens)-1].form)
		}
		if tokens[1].form.Get("resource") != m.serverURL() {
			t.Errorf("refresh resource = %q", tokens[1].form.Get("resource"))
		}
		m.mu.Lock()
		last := m.rsRequests[len(m.rsRequests)-1].auth
		m.mu.Unlock()
		tok, _ := tr.Token(context.Background(), m.serverURL())
		if last != "Bearer "+tok.AccessToken || tok.RefreshToken == "" {
			t.Errorf("last request sent %q; stored token %+v", last, tok)
		}
	})
	t.Run("revoked token refreshed on 401", func(t *testing.T) {
		m := newMock(t, func(m *mock) { m.refreshTokens = true })
		tr := newTestTransport(t, nil)
		if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
			t.Fatalf("got %d, %v", status, err)
		}
		m.mu.Lock()
		clear(m.scopes) // revoke every access token
		m.mu.Unlock()
		if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
			t.Fatalf("after revocation: %d, %v", status, err)
		}
		auths, tokens, _ := m.snapshot()
		if len(auths) != 1 || tokens[len(tokens)-1].form.Get("grant_type") != "refresh_token" {
			t.Errorf("authorizations %d, last grant %q; want 1 and refresh_token", len(auths), tokens[len(tokens)-1].form.Get("grant_type"))
		}
	})
}

func TestAuthorizationServerMigration(t *testing.T) {
	m2 := newMock(t, func(m *mock) { m.n = 1000 }) // its client ids differ
	m := newMock(t, func(m *mock) { m.trust = m2 })
	tr := newTestTransport(t, nil)
	if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	m.mu.Lock()
	m.prmAS = m2.issuer()
	clear(m.scopes)
	m.mu.Unlock()
	if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("after the migration: %d, %v", status, err)
	}
	_, _, regs1 := m.snapshot()
	auths2, tokens2, regs2 := m2.snapshot()
	if len(regs1) != 1 || len(regs2) != 1 {
		t.Fatalf("registrations: old AS %d, new AS %d; want 1 each", len(regs1), len(regs2))
	}
	if len(auths2) != 1 || len(tokens2) != 1 {
		t.Fatalf("new AS: authorizations %d, token requests %d", len(auths2), len(tokens2))
	}
	if got := auths2[0].Get("client_id"); got != "client-1001" {
		t.Errorf("client_id at the new AS = %q, want its own registration client-1001", got)
	}
	if got := tokens2[0].form.Get("client_id"); got != "client-1001" {
		t.Errorf("token request client_id at the new AS = %q", got)
	}
	tok, _ := tr.Token(context.Background(), m.serverURL())
	if tok.Issuer != m2.issuer() {
		t.Errorf("token issuer = %q, want the new AS %q", tok.Issuer, m2.issuer())
	}
}

func TestNoAuthorizer(t *testing.T) {
	m := newMock(t, nil)
	tr, err := NewTransport(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := post(t, tr, m, `{}`); !errors.Is(err, ErrNoAuthorizer) {
		t.Fatalf("error = %v, want ErrNoAuthorizer", err)
	}
}

func TestAuthorizeError(t *testing.T) {
	m := newMock(t, nil)
	boom := errors.New("user closed the browser")
	tr := newTestTransport(t, func(o *Options) {
		o.Authorize = func(context.Context, string) (*url.URL, error) { return nil, boom }
	})
	if _, _, err := post(t, tr, m, `{}`); !errors.Is(err, boom) {
		t.Fatalf("error = %v, want the Authorize error", err)
	}
}

func TestConcurrentRequestsShareOneFlow(t *testing.T) {
	m := newMock(t, nil)
	tr := newTestTransport(t, nil)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body, err := post(t, tr, m, fmt.Sprintf(`{"i":%d}`, i))
			if err == nil && (status != http.StatusOK || body != fmt.Sprintf(`{"i":%d}`, i)) {
				err = fmt.Errorf("got %d %q", status, body)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if auths, _, regs := m.snapshot(); len(auths) != 1 || len(regs) != 1 {
		t.Errorf("authorizations %d, registrations %d for 8 concurrent requests; want 1 each", len(auths), len(regs))
	}
}

func TestOversizedMetadata(t *testing.T) {
	m := newMock(t, func(m *mock) { m.prmScopes = []string{strings.Repeat("x", 4096)} })
	tr := newTestTransport(t, func(o *Options) { o.MaxResponseBytes = 1024 })
	if _, _, err := post(t, tr, m, `{}`); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("error = %v, want ErrResponseTooLarge", err)
	}
}

func TestNewTransportValidation(t *testing.T) {
	for _, o := range []*Options{
		{Authorize: headless},
		{Authorize: headless, RedirectURL: "/relative"},
		{ClientMetadataURL: "http://client.example/md.json"},
		{ApplicationType: "desktop"},
	} {
		if _, err := NewTransport(o); err == nil {
			t.Errorf("NewTransport(%+v) succeeded", *o)
		}
	}
}
