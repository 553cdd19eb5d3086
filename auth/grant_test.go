package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// ccMock is an AS that only knows client_credentials for "cc-client".
func ccMock(t *testing.T, configure func(m *mock)) *mock {
	t.Helper()
	return newMock(t, func(m *mock) {
		m.m2mOnly, m.noDCR = true, true
		m.grantTypes = []string{"client_credentials"}
		if configure != nil {
			configure(m)
		}
	})
}

func grantTransport(t *testing.T, g *Grant, configure func(o *Options)) *Transport {
	t.Helper()
	return newTestTransport(t, func(o *Options) {
		o.Authorize, o.RedirectURL = nil, ""
		o.Grant = g
		if configure != nil {
			configure(o)
		}
	})
}

func TestClientCredentialsSecret(t *testing.T) {
	for _, tc := range []struct {
		name        string
		authMethods []string
		method      string
		wantBasic   bool
	}{
		{"basic by default", nil, "", true},
		{"basic listed", []string{"client_secret_basic"}, "", true},
		{"post, the only one listed", []string{"private_key_jwt", "client_secret_post"}, "", false},
		{"post configured", nil, AuthMethodClientSecretPost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := ccMock(t, func(m *mock) {
				m.ccSecret = "s3cret"
				m.authMethods = tc.authMethods
				m.prmScopes = []string{"mcp:read"}
				m.asScopes = []string{"mcp:read", "offline_access"}
			})
			tr := grantTransport(t, &Grant{Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "s3cret", AuthMethod: tc.method}}, nil)
			status, body, err := post(t, tr, m, `{"n":1}`)
			if err != nil || status != http.StatusOK || body != `{"n":1}` {
				t.Fatalf("got %d %q %v, want 200 with the body", status, body, err)
			}
			auths, tokens, regs := m.snapshot()
			if len(auths) != 0 || len(regs) != 0 || len(tokens) != 1 {
				t.Fatalf("authorization requests %d, registrations %d, token requests %d; want 0, 0, 1", len(auths), len(regs), len(tokens))
			}
			f := tokens[0].form
			if f.Get("grant_type") != "client_credentials" || f.Get("resource") != m.serverURL() {
				t.Errorf("token request form = %v", f)
			}
			// Scope selection as for the code flow, without offline_access.
			if f.Get("scope") != "mcp:read" {
				t.Errorf("scope = %q, want mcp:read", f.Get("scope"))
			}
			if tc.wantBasic {
				if tokens[0].basic != "cc-client:s3cret" || f.Has("client_secret") {
					t.Errorf("basic = %q, form = %v; want the secret in Basic only", tokens[0].basic, f)
				}
			} else if tokens[0].basic != "" || f.Get("client_secret") != "s3cret" || f.Get("client_id") != "cc-client" {
				t.Errorf("basic = %q, form = %v; want client_secret_post", tokens[0].basic, f)
			}

			// The token is reused, and stored with its provenance.
			if status, _, err := post(t, tr, m, `{"n":2}`); err != nil || status != http.StatusOK {
				t.Fatalf("second request: %d %v", status, err)
			}
			if _, tokens, _ := m.snapshot(); len(tokens) != 1 {
				t.Errorf("token requests = %d after a second call, want 1", len(tokens))
			}
			tok, err := tr.Token(context.Background(), m.serverURL())
			if err != nil || tok == nil || tok.Issuer != m.issuer() || tok.Resource != m.serverURL() || tok.ClientID != "cc-client" || tok.Scope != "mcp:read" {
				t.Errorf("stored token = %+v, %v", tok, err)
			}
		})
	}
}

func TestClientCredentialsReacquiresOn401(t *testing.T) {
	m := ccMock(t, func(m *mock) { m.ccSecret = "s3cret" })
	tr := grantTransport(t, &Grant{Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "s3cret"}}, nil)
	if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("first request: %d %v", status, err)
	}
	first, _ := tr.Token(context.Background(), m.serverURL())
	m.mu.Lock()
	clear(m.scopes) // the resource server forgets every token
	m.mu.Unlock()
	if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("after revocation: %d %v", status, err)
	}
	second, _ := tr.Token(context.Background(), m.serverURL())
	if _, tokens, _ := m.snapshot(); len(tokens) != 2 || first == nil || second == nil || first.AccessToken == second.AccessToken {
		t.Errorf("token requests = %d, tokens %+v then %+v; want a second grant and a new token", len(tokens), first, second)
	}
}

func TestClientCredentialsWrongSecret(t *testing.T) {
	m := ccMock(t, func(m *mock) { m.ccSecret = "right" })
	tr := grantTransport(t, &Grant{Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "wrong"}}, nil)
	_, _, err := post(t, tr, m, `{}`)
	var oe *OAuthError
	if !errors.As(err, &oe) || oe.Code != "invalid_client" || oe.StatusCode != http.StatusUnauthorized || !errors.Is(err, ErrTokenRequest) {
		t.Fatalf("error = %v, want an *OAuthError invalid_client, HTTP 401", err)
	}
	if !strings.HasSuffix(oe.Endpoint, "/token") {
		t.Errorf("OAuthError.Endpoint = %q", oe.Endpoint)
	}
	if _, tokens, _ := m.snapshot(); len(tokens) != 1 {
		t.Errorf("token requests = %d, want 1 (no retry)", len(tokens))
	}
}

func TestGrantNotInGrantTypesSupported(t *testing.T) {
	m := ccMock(t, func(m *mock) {
		m.ccSecret = "s3cret"
		m.grantTypes = []string{"authorization_code", "refresh_token"}
	})
	tr := grantTransport(t, &Grant{Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "s3cret"}}, nil)
	if _, _, err := post(t, tr, m, `{}`); !errors.Is(err, ErrGrantUnsupported) {
		t.Fatalf("error = %v, want ErrGrantUnsupported", err)
	}
	if _, tokens, _ := m.snapshot(); len(tokens) != 0 {
		t.Errorf("token requests = %d, want none", len(tokens))
	}

	// Without grant_types_supported the token endpoint decides.
	m2 := ccMock(t, func(m *mock) { m.ccSecret, m.grantTypes = "s3cret", nil })
	tr2 := grantTransport(t, &Grant{Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "s3cret"}}, nil)
	if status, _, err := post(t, tr2, m2, `{}`); err != nil || status != http.StatusOK {
		t.Errorf("without grant_types_supported: %d %v, want 200", status, err)
	}
}

func TestCodeFlowStillNeedsPKCE(t *testing.T) {
	// The relaxed metadata checks are for Options.Grant only.
	m := ccMock(t, nil)
	tr := newTestTransport(t, nil)
	if _, _, err := post(t, tr, m, `{}`); !errors.Is(err, ErrInvalidMetadata) && !errors.Is(err, ErrPKCEUnsupported) {
		t.Fatalf("error = %v, want the code flow to refuse an AS without authorization_endpoint", err)
	}
}

func mustKey(t testing.TB, kind string) crypto.Signer {
	t.Helper()
	var (
		k   crypto.Signer
		err error
	)
	switch kind {
	case "P-256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "P-384":
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "RSA":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "RSA-1024":
		k, err = rsa.GenerateKey(rand.Reader, 1024)
	case "Ed25519":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("unknown key kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	for _, tc := range []struct {
		kind, alg, wantAlg string
	}{
		{"P-256", "", "ES256"},
		{"P-384", "", "ES384"},
		{"RSA", "", "RS256"},
		{"RSA", "PS256", "PS256"},
		{"Ed25519", "", "EdDSA"},
	} {
		t.Run(tc.kind+" "+tc.wantAlg, func(t *testing.T) {
			key := mustKey(t, tc.kind)
			m := ccMock(t, func(m *mock) {
				m.ccKey = key.Public()
				m.authMethods = []string{"private_key_jwt"}
				m.signingAlgs = []string{"ES256", "ES384", "RS256", "PS256", "EdDSA"}
			})
			tr := grantTransport(t, &Grant{Client: ClientCredentials{ClientID: "cc-client", PrivateKey: key, SigningAlgorithm: tc.alg, KeyID: "k1"}}, nil)
			if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
				t.Fatalf("got %d %v, want 200", status, err)
			}
			_, tokens, _ := m.snapshot()
			if len(tokens) != 1 {
				t.Fatalf("token requests = %d, want 1", len(tokens))
			}
			f := tokens[0].form
			if tokens[0].basic != "" || f.Has("client_secret") {
				t.Errorf("a secret was sent with private_key_jwt: basic %q, form %v", tokens[0].basic, f)
			}
			hdr, err := jwt.ParseSigned(f.Get("client_assertion"), []jose.SignatureAlgorithm{jose.SignatureAlgorithm(tc.wantAlg)})
			if err != nil {
				t.Fatalf("client_assertion is not a %s JWS: %v", tc.wantAlg, err)
			}
			if kid := hdr.Headers[0].KeyID; kid != "k1" {
				t.Errorf("kid = %q, want k1", kid)
			}
			// A re-acquisition signs a fresh assertion (the mock refuses a
			// replayed jti).
			m.mu.Lock()
			clear(m.scopes)
			m.mu.Unlock()
			if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
				t.Fatalf("after revocation: %d %v", status, err)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if len(m.assertions) != 2 || m.assertions[0].ID == m.assertions[1].ID {
				t.Errorf("verified assertions = %+v, want two with distinct jti", m.assertions)
			}
			a := m.assertions[0]
			if life := a.Expiry.Time().Sub(a.IssuedAt.Time()); life <= 0 || life > clientAssertionLifetime {
				t.Errorf("assertion lifetime %v", life)
			}
		})
	}
}

func TestPrivateKeyJWTRefusals(t *testing.T) {
	key := mustKey(t, "P-256")
	other := mustKey(t, "P-256")
	for _, tc := range []struct {
		name      string
		configure func(m *mock)
		want      error
		wantToken bool // a token request was made
	}{
		{"method not listed", func(m *mock) { m.authMethods = []string{"client_secret_basic"} }, ErrAuthMethodUnsupported, false},
		{"algorithm not listed", func(m *mock) { m.signingAlgs = []string{"RS256"} }, ErrAuthMethodUnsupported, false},
		{"key not registered", func(m *mock) { m.ccKey = other.Public() }, ErrTokenRequest, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := ccMock(t, func(m *mock) {
				m.ccKey = key.Public()
				tc.configure(m)
			})
			tr := grantTransport(t, &Grant{Client: ClientCredentials{ClientID: "cc-client", PrivateKey: key}}, nil)
			_, _, err := post(t, tr, m, `{}`)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			if _, tokens, _ := m.snapshot(); (len(tokens) > 0) != tc.wantToken {
				t.Errorf("token requests = %d", len(tokens))
			}
		})
	}
}

func TestGrantIssuerPinning(t *testing.T) {
	g := &Grant{Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "s3cret"}}

	t.Run("explicit issuer", func(t *testing.T) {
		m := ccMock(t, func(m *mock) { m.ccSecret = "s3cret" })
		pinned := *g
		pinned.Issuer = "https://as.example"
		tr := grantTransport(t, &pinned, nil)
		if _, _, err := post(t, tr, m, `{}`); !errors.Is(err, ErrIssuerMismatch) {
			t.Fatalf("error = %v, want ErrIssuerMismatch", err)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, h := range m.metadataHits {
			if strings.HasPrefix(h, "as:") {
				t.Errorf("the other authorization server was contacted: %v", m.metadataHits)
			}
		}
		if len(m.tokenRequests) != 0 {
			t.Errorf("token requests = %d, want none", len(m.tokenRequests))
		}
	})

	t.Run("bound at first use", func(t *testing.T) {
		m1 := ccMock(t, func(m *mock) { m.ccSecret = "s3cret" })
		m2 := ccMock(t, func(m *mock) { m.ccSecret = "s3cret" })
		tr := grantTransport(t, g, nil)
		if status, _, err := post(t, tr, m1, `{}`); err != nil || status != http.StatusOK {
			t.Fatalf("first server: %d %v", status, err)
		}
		if _, _, err := post(t, tr, m2, `{}`); !errors.Is(err, ErrIssuerMismatch) {
			t.Fatalf("second server: error = %v, want ErrIssuerMismatch", err)
		}
		if _, tokens, _ := m2.snapshot(); len(tokens) != 0 {
			t.Errorf("the second authorization server got %d token requests", len(tokens))
		}
	})

	t.Run("AS metadata issuer mismatch", func(t *testing.T) {
		m := ccMock(t, func(m *mock) { m.ccSecret, m.metadataIssuer = "s3cret", "https://evil.example" })
		tr := grantTransport(t, g, nil)
		if _, _, err := post(t, tr, m, `{}`); !errors.Is(err, ErrIssuerMismatch) {
			t.Fatalf("error = %v, want ErrIssuerMismatch", err)
		}
		if _, tokens, _ := m.snapshot(); len(tokens) != 0 {
			t.Errorf("token requests = %d, want none", len(tokens))
		}
	})
}

// testAssertion is a syntactically valid compact JWS (the mock compares
// it as a string).
const testAssertion = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2ln"

func TestJWTBearerGrant(t *testing.T) {
	m := ccMock(t, func(m *mock) {
		m.grantTypes = []string{GrantJWTBearer}
		m.authMethods = []string{"none"}
		m.jwtAssertion = testAssertion
		m.challengeScope = "mcp:tools"
	})
	var (
		mu   sync.Mutex
		reqs []AssertionRequest
	)
	tr := grantTransport(t, &Grant{
		Type:   GrantJWTBearer,
		Client: ClientCredentials{ClientID: "workload"},
		Assertion: func(_ context.Context, r AssertionRequest) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, r)
			return testAssertion + "\n", nil // as read from a token file
		},
	}, nil)
	if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d %v, want 200", status, err)
	}
	_, tokens, _ := m.snapshot()
	if len(tokens) != 1 {
		t.Fatalf("token requests = %d", len(tokens))
	}
	f := tokens[0].form
	if f.Get("grant_type") != GrantJWTBearer || f.Get("assertion") != testAssertion || f.Get("client_id") != "workload" || f.Get("scope") != "mcp:tools" || f.Get("resource") != m.serverURL() {
		t.Errorf("token request form = %v", f)
	}
	mu.Lock()
	defer mu.Unlock()
	want := AssertionRequest{Issuer: m.issuer(), TokenEndpoint: m.issuer() + "/token", Resource: m.serverURL(), Scope: "mcp:tools"}
	if len(reqs) != 1 || reqs[0] != want {
		t.Errorf("assertion requests = %+v, want [%+v]", reqs, want)
	}
}

func TestJWTBearerGrantFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		assertion func() (string, error)
		check     func(t *testing.T, err error)
		tokens    int
	}{
		{"refused assertion", func() (string, error) { return "aaa.bbb.ccc", nil }, func(t *testing.T, err error) {
			var oe *OAuthError
			if !errors.As(err, &oe) || oe.Code != "invalid_grant" {
				t.Errorf("error = %v, want an *OAuthError invalid_grant", err)
			}
		}, 1},
		{"not a JWS", func() (string, error) { return "a.b c.d", nil }, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "compact JWS") {
				t.Errorf("error = %v", err)
			}
		}, 0},
		{"assertion error", func() (string, error) { return "", context.DeadlineExceeded }, func(t *testing.T, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error = %v, want it to wrap the AssertionFunc's error", err)
			}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := ccMock(t, func(m *mock) {
				m.grantTypes = []string{GrantJWTBearer}
				m.jwtAssertion = testAssertion
			})
			tr := grantTransport(t, &Grant{Type: GrantJWTBearer, Assertion: func(context.Context, AssertionRequest) (string, error) { return tc.assertion() }}, nil)
			_, _, err := post(t, tr, m, `{}`)
			tc.check(t, err)
			// Never retried, never another grant.
			if _, tokens, _ := m.snapshot(); len(tokens) != tc.tokens {
				t.Errorf("token requests = %d, want %d", len(tokens), tc.tokens)
			}
		})
	}
}

func TestGrantTokenResponseBounds(t *testing.T) {
	g := &Grant{Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "s3cret"}}
	t.Run("too large", func(t *testing.T) {
		m := ccMock(t, func(m *mock) { m.ccSecret, m.tokenPad = "s3cret", 4096 })
		tr := grantTransport(t, g, func(o *Options) { o.MaxResponseBytes = 2048 })
		if _, _, err := post(t, tr, m, `{}`); !errors.Is(err, ErrResponseTooLarge) {
			t.Fatalf("error = %v, want ErrResponseTooLarge", err)
		}
	})
	t.Run("not Bearer", func(t *testing.T) {
		m := ccMock(t, func(m *mock) { m.ccSecret, m.tokenType = "s3cret", "DPoP" })
		tr := grantTransport(t, g, nil)
		if _, _, err := post(t, tr, m, `{}`); err == nil || !strings.Contains(err.Error(), "not Bearer") {
			t.Fatalf("error = %v, want the non-Bearer token refused", err)
		}
		if tok, _ := tr.Token(context.Background(), m.serverURL()); tok != nil {
			t.Errorf("stored token %+v", tok)
		}
	})
}

func TestNewTransportGrantValidation(t *testing.T) {
	ec := mustKey(t, "P-256")
	bad := []struct {
		name string
		o    Options
	}{
		{"with Authorize", Options{Authorize: headless, RedirectURL: "http://127.0.0.1:9/cb", Grant: &Grant{Client: ClientCredentials{ClientID: "c", ClientSecret: "s"}}}},
		{"unknown type", Options{Grant: &Grant{Type: "password", Client: ClientCredentials{ClientID: "c", ClientSecret: "s"}}}},
		{"client credentials without authentication", Options{Grant: &Grant{Client: ClientCredentials{ClientID: "c"}}}},
		{"client credentials without client_id", Options{Grant: &Grant{Client: ClientCredentials{ClientSecret: "s"}}}},
		{"private_key_jwt without key", Options{Grant: &Grant{Client: ClientCredentials{ClientID: "c", AuthMethod: AuthMethodPrivateKeyJWT}}}},
		{"short RSA key", Options{Grant: &Grant{Client: ClientCredentials{ClientID: "c", PrivateKey: mustKey(t, "RSA-1024")}}}},
		{"algorithm not for the key", Options{Grant: &Grant{Client: ClientCredentials{ClientID: "c", PrivateKey: ec, SigningAlgorithm: "RS256"}}}},
		{"HMAC algorithm", Options{Grant: &Grant{Client: ClientCredentials{ClientID: "c", PrivateKey: ec, SigningAlgorithm: "HS256"}}}},
		{"unknown auth method", Options{Grant: &Grant{Client: ClientCredentials{ClientID: "c", ClientSecret: "s", AuthMethod: "tls_client_auth"}}}},
		{"jwt-bearer without Assertion", Options{Grant: &Grant{Type: GrantJWTBearer}}},
		{"relative issuer", Options{Grant: &Grant{Issuer: "as.example", Client: ClientCredentials{ClientID: "c", ClientSecret: "s"}}}},
		{"pre-registered key without client_id", Options{Authorize: headless, RedirectURL: "http://127.0.0.1:9/cb", PreRegistered: map[string]ClientCredentials{"https://as.example": {PrivateKey: ec}}}},
	}
	for _, tc := range bad {
		if _, err := NewTransport(&tc.o); err == nil {
			t.Errorf("%s: NewTransport succeeded, want an error", tc.name)
		}
	}
	for name, g := range map[string]*Grant{
		"secret":            {Client: ClientCredentials{ClientID: "c", ClientSecret: "s"}},
		"key":               {Client: ClientCredentials{ClientID: "c", PrivateKey: ec, SigningAlgorithm: "ES256"}},
		"public jwt-bearer": {Type: GrantJWTBearer, Assertion: func(context.Context, AssertionRequest) (string, error) { return "", nil }},
		"issuer pinned":     {Issuer: "https://as.example/t1", Client: ClientCredentials{ClientID: "c", ClientSecret: "s"}},
	} {
		if _, err := NewTransport(&Options{Grant: g}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestAuthorizationCodeWithPrivateKeyJWT(t *testing.T) {
	key := mustKey(t, "P-256")
	m := newMock(t, func(m *mock) { m.ccKey, m.noDCR = key.Public(), true })
	tr := newTestTransport(t, func(o *Options) {
		o.PreRegistered = map[string]ClientCredentials{m.issuer(): {ClientID: "cc-client", PrivateKey: key}}
	})
	if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d %v, want 200", status, err)
	}
	_, tokens, _ := m.snapshot()
	if len(tokens) != 1 || tokens[0].form.Get("grant_type") != "authorization_code" || tokens[0].form.Get("client_assertion_type") != ClientAssertionType {
		t.Fatalf("token requests = %+v", tokens)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.assertions) != 1 {
		t.Errorf("verified assertions = %d, want 1", len(m.assertions))
	}
}
