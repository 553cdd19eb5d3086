package auth

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// FuzzParseChallenges: any header value parses or fails with
// ErrMalformedChallenge, never panics, and what parses is consistent.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer`,
		`Bearer error="invalid_token", resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp", scope="a b"`,
		`Bearer error="insufficient_scope", scope="mcp:write", error_description="needs \"write\""`,
		`Basic realm="x", Bearer scope=read , error=insufficient_scope`,
		`Negotiate a87421000492aa874209af8bc028==, Bearer`,
		`Basic, Bearer a = "b" ,, c=d`,
		`Bearer realm="unterminated`,
		`Bearer a=b c=d`,
		`, , ,`,
		"Bearer a=\"\x00\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := ParseChallenges([]string{s})
		if err != nil {
			if !errors.Is(err, ErrMalformedChallenge) {
				t.Fatalf("error %v does not wrap ErrMalformedChallenge", err)
			}
			return
		}
		if len(cs) > maxChallenges {
			t.Fatalf("%d challenges", len(cs))
		}
		for _, c := range cs {
			if c.Scheme == "" {
				t.Fatal("empty scheme")
			}
			if c.Token68 != "" && len(c.Params) > 0 {
				t.Fatal("both token68 and params")
			}
			for k := range c.Params {
				if k != strings.ToLower(k) || k == "" {
					t.Fatalf("param name %q not lower-cased", k)
				}
			}
		}
	})
}

// FuzzParseTokenResponse: any body is a Bearer token (or, with DPoP, a
// Bearer or DPoP one) safe to put in a header, or an error.
func FuzzParseTokenResponse(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"abc","token_type":"Bearer","expires_in":3600,"refresh_token":"r","scope":"a b"}`,
		`{"access_token":"abc","token_type":"bearer","expires_in":"60"}`,
		`{"access_token":"abc","token_type":"Bearer","expires_in":-5}`,
		`{"access_token":"abc","token_type":"Bearer","expires_in":1e400}`,
		`{"access_token":"a\r\nb","token_type":"Bearer"}`,
		`{"access_token":"abc","token_type":"DPoP"}`,
		`{"access_token":"abc","token_type":"dpop","expires_in":60}`,
		`{"access_token":"abc","token_type":"N_A"}`,
		`[]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return // the response is read through MaxResponseBytes
		}
		if tok, err := parseTokenResponseOf(b, now, true); err == nil {
			if tok.AccessToken == "" || tok.TokenType != TokenTypeBearer && tok.TokenType != TokenTypeDPoP {
				t.Fatalf("accepted with DPoP %+v", tok)
			}
		}
		tok, err := parseTokenResponse(b, now)
		if err != nil {
			return
		}
		if tok.AccessToken == "" || tok.TokenType != "Bearer" {
			t.Fatalf("accepted %+v", tok)
		}
		if strings.ContainsAny(tok.AccessToken, " \r\n\t\x00") {
			t.Fatalf("access token %q would break the header", tok.AccessToken)
		}
		if !tok.Expiry.IsZero() && (tok.Expiry.Before(now) || tok.Expiry.After(now.Add(maxExpiresIn*time.Second))) {
			t.Fatalf("expiry %v out of range", tok.Expiry)
		}
	})
}

// FuzzMetadata: any protected resource or authorization server metadata
// document is accepted only when it is consistent with what it was
// fetched for.
func FuzzMetadata(f *testing.F) {
	for _, s := range []string{
		`{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"],"scopes_supported":["a"]}`,
		`{"resource":"https://evil.example/mcp","authorization_servers":["https://as.example"]}`,
		`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/authorize","token_endpoint":"https://as.example/token","code_challenge_methods_supported":["S256"]}`,
		`{"issuer":"https://as.example/","authorization_endpoint":"http://as.example/authorize","token_endpoint":"https://as.example/token"}`,
		`{"resource":1}`, `[]`, `{}`,
		`{"issuer":"https://mcp.example","authorization_endpoint":"https://mcp.example/oauth/authorize","token_endpoint":"https://mcp.example:443/oauth/token","registration_endpoint":"https://mcp.example/register","code_challenge_methods_supported":["S256"]}`,
		`{"issuer":"https://mcp.example/","authorization_endpoint":"https://mcp.example/authorize","token_endpoint":"https://as.example/token","code_challenge_methods_supported":["S256"]}`,
	} {
		f.Add([]byte(s))
	}
	server, _ := url.Parse("https://mcp.example/mcp")
	onOrigin := func(e string) bool {
		u, err := url.Parse(e)
		return err == nil && u.Scheme == "https" && u.User == nil && (strings.EqualFold(u.Host, "mcp.example") || strings.EqualFold(u.Host, "mcp.example:443"))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var prm ProtectedResourceMetadata
		if decodeObject(b, &prm) == nil && validatePRM(&prm, server) == nil {
			if !resourceCovers(prm.Resource, server) || len(prm.AuthorizationServers) == 0 {
				t.Fatalf("accepted PRM %+v", prm)
			}
		}
		var m AuthorizationServerMetadata
		if decodeObject(b, &m) == nil && validateASMetadata(&m, "https://as.example", false) == nil {
			if m.Issuer != "https://as.example" {
				t.Fatalf("accepted issuer %q", m.Issuer)
			}
			for _, e := range []string{m.AuthorizationEndpoint, m.TokenEndpoint} {
				u, err := url.Parse(e)
				if err != nil || u.Host == "" || u.Scheme != "https" && (u.Scheme != "http" || !isLoopback(u.Hostname())) {
					t.Fatalf("accepted endpoint %q", e)
				}
			}
		}
		// The 2025-03-26 fallback: the issuer is the origin, every
		// endpoint on it.
		var lm AuthorizationServerMetadata
		if decodeObject(b, &lm) == nil && validateLegacyASMetadata(&lm, "https://mcp.example", false, true) == nil {
			if lm.Issuer != "https://mcp.example" && lm.Issuer != "https://mcp.example/" {
				t.Fatalf("fallback accepted issuer %q", lm.Issuer)
			}
			for _, e := range []string{lm.AuthorizationEndpoint, lm.TokenEndpoint} {
				if !onOrigin(e) {
					t.Fatalf("fallback accepted endpoint %q", e)
				}
			}
			if lm.RegistrationEndpoint != "" && !onOrigin(lm.RegistrationEndpoint) {
				t.Fatalf("fallback accepted registration endpoint %q", lm.RegistrationEndpoint)
			}
		}
	})
}

// FuzzParseDPoPProof: any DPoP header value is a proof whose signature
// checked out, with its claims and the thumbprint of its key, or an
// error; never a panic, whatever its size. The seed corpus
// (testdata/fuzz/FuzzParseDPoPProof) has proofs by each key type, a
// private jwk, a kid instead of a jwk, HS256, alg none, JSON
// serialization and wrong claim types.
func FuzzParseDPoPProof(f *testing.F) {
	algs := []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.RS256, jose.EdDSA}
	for _, kind := range []string{"P-256", "Ed25519"} {
		k, err := newDPoPKey(&DPoPOptions{Key: mustKey(f, kind)})
		if err != nil {
			f.Fatal(err)
		}
		u, _ := url.Parse("https://mcp.example/mcp")
		p, err := k.proof("POST", u, "token", "nonce", time.Unix(1700000000, 0))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Add("")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIiwidHlwIjoiZHBvcCtqd3QifQ.e30.")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseDPoPProof(s, algs)
		if err != nil {
			return
		}
		c := p.claims
		if len(s) > maxDPoPProofBytes || p.jkt == "" || c.JTI == "" || len(c.JTI) > maxDPoPJTI || c.HTM == "" || c.HTU == "" || c.IAT <= 0 {
			t.Fatalf("accepted %q as %+v", s, p)
		}
	})
}
