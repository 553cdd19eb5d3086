package auth

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testIDJAG is the ID-JAG the mock identity provider issues (a JWS in
// form; nobody verifies it but the mock AS, which compares strings).
const testIDJAG = "eyJhbGciOiJFUzI1NiIsInR5cCI6Im9hdXRoLWlkLWphZytqd3QifQ.eyJzdWIiOiJ1c2VyIn0.c2ln"

// idp is a mock enterprise identity provider's token endpoint on
// loopback: it records the exchange requests and answers with reply.
type idp struct {
	srv   *httptest.Server
	reply func(w http.ResponseWriter, r *http.Request)

	mu    sync.Mutex
	forms []url.Values
	basic []string
}

func newIDP(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *idp {
	t.Helper()
	p := &idp{reply: reply}
	if p.reply == nil {
		p.reply = func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"access_token": testIDJAG, "issued_token_type": TokenTypeIDJAG, "token_type": "N_A", "expires_in": 300})
		}
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/token" || r.ParseForm() != nil {
			http.NotFound(w, r)
			return
		}
		id, secret, _ := r.BasicAuth()
		p.mu.Lock()
		p.forms = append(p.forms, r.PostForm)
		p.basic = append(p.basic, id+":"+secret)
		p.mu.Unlock()
		p.reply(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) tokenEndpoint() string { return p.srv.URL + "/token" }

func (p *idp) requests() ([]url.Values, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.forms...), append([]string(nil), p.basic...)
}

// emaMock is an MCP authorization server that takes the JWT bearer grant
// with testIDJAG from client "cc-client" (client_secret_basic).
func emaMock(t *testing.T) *mock {
	return ccMock(t, func(m *mock) {
		m.grantTypes = []string{GrantJWTBearer}
		m.jwtAssertion = testIDJAG
		m.challengeScope = "mcp:tools"
	})
}

func emaGrant(t *testing.T, o IDJAGOptions) *Grant {
	t.Helper()
	a, err := IDJAGAssertion(o)
	if err != nil {
		t.Fatal(err)
	}
	return &Grant{Type: GrantJWTBearer, Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "s3cret"}, Assertion: a}
}

func idToken(context.Context) (string, error) { return "the.id.token\n", nil }

func TestIDJAGAssertionEndToEnd(t *testing.T) {
	m := emaMock(t)
	p := newIDP(t, nil)
	tr := grantTransport(t, emaGrant(t, IDJAGOptions{
		TokenEndpoint: p.tokenEndpoint(),
		Client:        ClientCredentials{ClientID: "idp-client"},
		SubjectToken:  idToken,
	}), nil)
	if status, body, err := post(t, tr, m, `{"n":1}`); err != nil || status != http.StatusOK || body != `{"n":1}` {
		t.Fatalf("got %d %q %v, want 200 with the body", status, body, err)
	}
	forms, basics := p.requests()
	if len(forms) != 1 {
		t.Fatalf("exchange requests = %d, want 1", len(forms))
	}
	want := url.Values{
		"grant_type":           {GrantTokenExchange},
		"requested_token_type": {TokenTypeIDJAG},
		"audience":             {m.issuer()},
		"resource":             {m.serverURL()},
		"scope":                {"mcp:tools"},
		"subject_token":        {"the.id.token"},
		"subject_token_type":   {TokenTypeIDToken},
		"client_id":            {"idp-client"},
	}
	for k, v := range want {
		if got := forms[0][k]; len(got) != 1 || got[0] != v[0] {
			t.Errorf("exchange %s = %q, want %q", k, got, v[0])
		}
	}
	if len(forms[0]) != len(want) || basics[0] != ":" {
		t.Errorf("exchange form = %v, Basic %q; want exactly %v and no Basic", forms[0], basics[0], want)
	}
	// The ID-JAG is the assertion at the MCP authorization server, whose
	// own client authenticates there with client_secret_basic.
	_, tokens, _ := m.snapshot()
	if len(tokens) != 1 {
		t.Fatalf("token requests = %d, want 1", len(tokens))
	}
	if f := tokens[0].form; f.Get("grant_type") != GrantJWTBearer || f.Get("assertion") != testIDJAG || tokens[0].basic != "cc-client:s3cret" {
		t.Errorf("token request = %v, Basic %q", f, tokens[0].basic)
	}
}

func TestIDJAGAssertionClientAuth(t *testing.T) {
	key := mustKey(t, "P-256")
	for _, tc := range []struct {
		name   string
		client ClientCredentials
		check  func(t *testing.T, f url.Values, basic string, issuer string)
	}{
		{"basic", ClientCredentials{ClientID: "idp client", ClientSecret: "p@ss"}, func(t *testing.T, f url.Values, basic, _ string) {
			// Form-encoded, then Basic (RFC 6749 section 2.3.1).
			if basic != "idp+client:p%40ss" || f.Has("client_secret") || f.Has("client_id") {
				t.Errorf("Basic %q, form %v", basic, f)
			}
		}},
		{"post", ClientCredentials{ClientID: "idp-client", ClientSecret: "s", AuthMethod: AuthMethodClientSecretPost}, func(t *testing.T, f url.Values, basic, _ string) {
			if basic != ":" || f.Get("client_id") != "idp-client" || f.Get("client_secret") != "s" {
				t.Errorf("Basic %q, form %v", basic, f)
			}
		}},
		{"private_key_jwt", ClientCredentials{ClientID: "idp-client", PrivateKey: key}, func(t *testing.T, f url.Values, basic, issuer string) {
			if basic != ":" || f.Get("client_assertion_type") != ClientAssertionType || f.Get("client_id") != "idp-client" {
				t.Fatalf("Basic %q, form %v", basic, f)
			}
			tok, err := jwt.ParseSigned(f.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256})
			if err != nil {
				t.Fatal(err)
			}
			var c jwt.Claims
			if err := tok.Claims(&key.(*ecdsa.PrivateKey).PublicKey, &c); err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(jwt.Expected{Issuer: "idp-client", Subject: "idp-client", AnyAudience: jwt.Audience{issuer}}); err != nil {
				t.Errorf("client assertion: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newIDP(t, nil)
			a, err := IDJAGAssertion(IDJAGOptions{TokenEndpoint: p.tokenEndpoint(), Issuer: p.srv.URL, Client: tc.client, SubjectToken: idToken})
			if err != nil {
				t.Fatal(err)
			}
			jag, err := a(context.Background(), AssertionRequest{Issuer: "https://as.example", Resource: "https://mcp.example/mcp"})
			if err != nil || jag != testIDJAG {
				t.Fatalf("assertion = %q, %v", jag, err)
			}
			forms, basics := p.requests()
			if forms[0].Has("scope") {
				t.Errorf("scope sent without one requested: %v", forms[0])
			}
			tc.check(t, forms[0], basics[0], p.srv.URL)
		})
	}
}

func TestIDJAGAssertionFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reply   func(w http.ResponseWriter, r *http.Request)
		subject func(context.Context) (string, error)
		max     int64
		check   func(t *testing.T, err error)
	}{
		{"refused", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "expired ID token"})
		}, nil, 0, func(t *testing.T, err error) {
			var oe *OAuthError
			if !errors.As(err, &oe) || oe.Code != "invalid_grant" || oe.StatusCode != http.StatusBadRequest || !strings.HasSuffix(oe.Endpoint, "/token") || !errors.Is(err, ErrTokenRequest) {
				t.Errorf("error = %v, want the IdP's *OAuthError invalid_grant", err)
			}
		}},
		{"wrong issued_token_type", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"access_token": testIDJAG, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer"})
		}, nil, 0, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "issued_token_type") {
				t.Errorf("error = %v, want the issued_token_type refused", err)
			}
		}},
		{"not a JWT", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"access_token": "opaque&scope=admin", "issued_token_type": TokenTypeIDJAG, "token_type": "N_A"})
		}, nil, 0, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "compact serialization") {
				t.Errorf("error = %v, want a non-JWT refused", err)
			}
		}},
		{"too large", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"access_token": testIDJAG, "issued_token_type": TokenTypeIDJAG, "pad": strings.Repeat("x", 4096)})
		}, nil, 1024, func(t *testing.T, err error) {
			if !errors.Is(err, ErrResponseTooLarge) {
				t.Errorf("error = %v, want ErrResponseTooLarge", err)
			}
		}},
		{"subject token error", nil, func(context.Context) (string, error) { return "", context.Canceled }, 0, func(t *testing.T, err error) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want it to wrap SubjectToken's error", err)
			}
		}},
		{"empty subject token", nil, func(context.Context) (string, error) { return " \n", nil }, 0, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "empty") {
				t.Errorf("error = %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := emaMock(t)
			p := newIDP(t, tc.reply)
			subject := tc.subject
			if subject == nil {
				subject = idToken
			}
			tr := grantTransport(t, emaGrant(t, IDJAGOptions{TokenEndpoint: p.tokenEndpoint(), SubjectToken: subject, MaxResponseBytes: tc.max}), nil)
			_, _, err := post(t, tr, m, `{}`)
			tc.check(t, err)
			// A failed exchange never reaches the MCP authorization server.
			if _, tokens, _ := m.snapshot(); len(tokens) != 0 {
				t.Errorf("token requests at the MCP authorization server = %d, want 0", len(tokens))
			}
		})
	}
}

func TestIDJAGOptionsValidation(t *testing.T) {
	key := mustKey(t, "P-256")
	for _, tc := range []struct {
		name string
		o    IDJAGOptions
		want string
	}{
		{"no endpoint", IDJAGOptions{SubjectToken: idToken}, "TokenEndpoint"},
		{"plain http", IDJAGOptions{TokenEndpoint: "http://idp.example/token", SubjectToken: idToken}, "TokenEndpoint"},
		{"no subject token", IDJAGOptions{TokenEndpoint: "https://idp.example/token"}, "SubjectToken"},
		{"private_key_jwt without issuer", IDJAGOptions{TokenEndpoint: "https://idp.example/token", SubjectToken: idToken, Client: ClientCredentials{ClientID: "c", PrivateKey: key}}, "Issuer"},
		{"bad auth method", IDJAGOptions{TokenEndpoint: "https://idp.example/token", SubjectToken: idToken, Client: ClientCredentials{ClientID: "c", AuthMethod: "tls_client_auth"}}, "AuthMethod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := IDJAGAssertion(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one about %s", err, tc.want)
			}
		})
	}
	if _, err := IDJAGAssertion(IDJAGOptions{TokenEndpoint: "http://idp.example/token", AllowInsecureHTTP: true, SubjectToken: idToken}); err != nil {
		t.Errorf("AllowInsecureHTTP: %v", err)
	}
}

// FuzzParseTokenExchangeResponse: any body is an ID-JAG that can go in a
// form as a JWT, or an error.
func FuzzParseTokenExchangeResponse(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"` + testIDJAG + `","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A","expires_in":300}`,
		`{"access_token":"a.b.c","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}`,
		`{"access_token":"a.b.c","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer"}`,
		`{"access_token":"a.b c.d","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}`,
		`{"access_token":"","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}`,
		`{"access_token":1}`, `[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return // the response is read through MaxResponseBytes
		}
		jag, err := parseTokenExchangeResponse(b)
		if err != nil {
			if jag != "" {
				t.Fatalf("error %v with an ID-JAG %q", err, jag)
			}
			return
		}
		if !isJWS(jag) || strings.Count(jag, ".") != 2 || strings.ContainsAny(jag, " \r\n\t&=+%") {
			t.Fatalf("accepted ID-JAG %q", jag)
		}
	})
}
