package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// sink is a second server on loopback, where redirects point: it answers
// like a cooperative token endpoint and counts what reaches it.
type sink struct {
	srv *httptest.Server
	n   atomic.Int32
}

func newSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.n.Add(1)
		writeJSON(w, http.StatusOK, map[string]any{"access_token": "stolen", "token_type": "Bearer", "client_id": "stolen"})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) url(path string) string { return s.srv.URL + path }

// checkNotFollowed fails unless err is the ErrRedirect of a status
// answer and nothing reached s.
func checkNotFollowed(t *testing.T, err error, s *sink, status int) {
	t.Helper()
	if n := s.n.Load(); n != 0 {
		t.Errorf("the redirect target received %d requests", n)
	}
	if !errors.Is(err, ErrRedirect) {
		t.Fatalf("error %v, want ErrRedirect", err)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("HTTP %d", status)) || !strings.Contains(msg, "redirects are not followed") {
		t.Errorf("error %q does not name the status and say redirects are not followed", msg)
	}
}

// redirectMock is a mock whose servers answer the requests to the given
// paths with a redirect to s.
func redirectMock(t *testing.T, s *sink, configure func(m *mock), paths ...string) *mock {
	t.Helper()
	return newMock(t, func(m *mock) {
		if configure != nil {
			configure(m)
		}
		m.redirects = map[string]string{}
		for _, p := range paths {
			m.redirects[p] = s.url(p)
		}
	})
}

// The token endpoint's redirects are not followed: the authorization
// code, PKCE verifier and client secret (post or Basic) of the code
// exchange go nowhere else, whatever the 3xx.
func TestTokenRequestsFollowNoRedirects(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound, http.StatusSeeOther} {
		for _, method := range []string{AuthMethodClientSecretPost, AuthMethodClientSecretBasic} {
			t.Run(fmt.Sprintf("%d %s", status, method), func(t *testing.T) {
				s := newSink(t)
				m := redirectMock(t, s, func(m *mock) {
					m.redirectStatus = status
					m.regSecret, m.regAuthMethod = "dcr-secret", method
				}, "/token")
				tr := newTestTransport(t, nil)
				_, _, err := post(t, tr, m, `{}`)
				checkNotFollowed(t, err, s, status)
				m.mu.Lock()
				defer m.mu.Unlock()
				if !slices.Equal(m.redirected, []string{"/token authorization_code"}) {
					t.Errorf("redirected requests %q, want the code exchange", m.redirected)
				}
			})
		}
	}
}

// A refresh-token request answered with a redirect is not sent on: the
// refresh token stays with the authorization server that issued it.
func TestRefreshRequestsFollowNoRedirects(t *testing.T) {
	s := newSink(t)
	m := newMock(t, func(m *mock) { m.refreshTokens = true })
	tr := newTestTransport(t, nil)
	if status, _, err := post(t, tr, m, `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	m.mu.Lock()
	clear(m.scopes) // revoke the access token: the next request refreshes
	m.redirects = map[string]string{"/token": s.url("/token")}
	m.mu.Unlock()
	_, _, err := post(t, tr, m, `{}`)
	checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.redirected) == 0 || m.redirected[0] != "/token refresh_token" {
		t.Errorf("redirected requests %q, want the refresh first", m.redirected)
	}
}

// Dynamic client registration answered with a redirect is not sent on.
func TestRegistrationFollowsNoRedirects(t *testing.T) {
	s := newSink(t)
	m := redirectMock(t, s, nil, "/register")
	_, _, err := post(t, newTestTransport(t, nil), m, `{}`)
	checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
}

// Metadata discovery follows no redirect: a candidate URL that answers
// with one has no document, and the redirect target is never asked.
func TestMetadataDiscoveryFollowsNoRedirects(t *testing.T) {
	t.Run("protected resource", func(t *testing.T) {
		s := newSink(t)
		m := redirectMock(t, s, nil, "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource")
		_, _, err := post(t, newTestTransport(t, nil), m, `{}`)
		checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
		if !errors.Is(err, ErrMetadataNotFound) {
			t.Errorf("error %v, want ErrMetadataNotFound", err)
		}
	})
	t.Run("authorization server", func(t *testing.T) {
		s := newSink(t)
		m := redirectMock(t, s, nil, "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
		_, _, err := post(t, newTestTransport(t, nil), m, `{}`)
		checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
	})
}

// The grants without a user follow no redirect from the token endpoint:
// neither the client secret of the client credentials grant nor the
// assertion of the JWT bearer grant goes elsewhere.
func TestMachineGrantsFollowNoRedirects(t *testing.T) {
	t.Run("client credentials", func(t *testing.T) {
		s := newSink(t)
		m := redirectMock(t, s, func(m *mock) {
			m.m2mOnly, m.noDCR, m.grantTypes, m.ccSecret = true, true, []string{GrantClientCredentials}, "s3cret"
		}, "/token")
		tr := grantTransport(t, &Grant{Client: ClientCredentials{ClientID: "cc-client", ClientSecret: "s3cret", AuthMethod: AuthMethodClientSecretPost}}, nil)
		_, _, err := post(t, tr, m, `{}`)
		checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
	})
	t.Run("JWT bearer", func(t *testing.T) {
		s := newSink(t)
		m := redirectMock(t, s, func(m *mock) {
			m.m2mOnly, m.noDCR, m.grantTypes, m.jwtAssertion = true, true, []string{GrantJWTBearer}, testAssertion
		}, "/token")
		tr := grantTransport(t, &Grant{Type: GrantJWTBearer, Client: ClientCredentials{ClientID: "workload"},
			Assertion: func(context.Context, AssertionRequest) (string, error) { return testAssertion, nil }}, nil)
		_, _, err := post(t, tr, m, `{}`)
		checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
	})
}

// The ID-JAG exchange at the identity provider follows no redirect: the
// user's identity assertion and the client's credentials go nowhere
// else.
func TestIDJAGExchangeFollowsNoRedirects(t *testing.T) {
	s := newSink(t)
	m := emaMock(t)
	p := newIDP(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, s.url("/token"), http.StatusTemporaryRedirect)
	})
	tr := grantTransport(t, emaGrant(t, IDJAGOptions{
		TokenEndpoint: p.tokenEndpoint(),
		Client:        ClientCredentials{ClientID: "idp-client", ClientSecret: "idp-secret"},
		SubjectToken:  idToken,
		HTTPClient:    &http.Client{}, // one that would follow redirects
	}), nil)
	_, _, err := post(t, tr, m, `{}`)
	checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
	if forms, _ := p.requests(); len(forms) != 1 {
		t.Errorf("exchange requests = %d, want 1", len(forms))
	}
}

// The token request DPoP retries with the server's nonce follows no
// redirect either.
func TestDPoPRetryFollowsNoRedirects(t *testing.T) {
	s := newSink(t)
	m := newDPoPMock(t, func(m *dpopMock) { m.asNonce, m.retryRedirect = "as-1", s.url("/token") })
	_, _, err := postTo(t, dpopTransport(t, m, nil), m.serverURL(), `{}`)
	checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
	if _, tokens, _ := m.requests(); len(tokens) != 2 || tokens[1].proof == nil || tokens[1].proof.Nonce != "as-1" {
		t.Errorf("token requests = %+v, want the first and its nonce retry", tokens)
	}
}

// A caller's own HTTPClient, which would follow redirects, does not make
// the Transport follow them, and is left as it was.
func TestCallersHTTPClientFollowsNoRedirectsEither(t *testing.T) {
	s := newSink(t)
	m := redirectMock(t, s, nil, "/token")
	hc := &http.Client{}
	tr := newTestTransport(t, func(o *Options) { o.HTTPClient = hc })
	_, _, err := post(t, tr, m, `{}`)
	checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
	if hc.CheckRedirect != nil {
		t.Error("NewTransport modified the caller's http.Client")
	}
	// The caller's client itself still follows redirects.
	resp, err := hc.Post(m.issuer()+"/token", "application/x-www-form-urlencoded", strings.NewReader("grant_type=x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s.n.Load() != 1 {
		t.Error("the caller's client no longer follows redirects")
	}
}
