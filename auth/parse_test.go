package auth

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseChallenges(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Challenge
	}{
		{`Bearer`, []Challenge{{Scheme: "Bearer", Params: map[string]string{}}}},
		{`Bearer realm="example", error="invalid_token", error_description="The access token expired"`,
			[]Challenge{{Scheme: "Bearer", Params: map[string]string{"realm": "example", "error": "invalid_token", "error_description": "The access token expired"}}}},
		{`Bearer resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp", scope="a b"`,
			[]Challenge{{Scheme: "Bearer", Params: map[string]string{"resource_metadata": "https://x.example/.well-known/oauth-protected-resource/mcp", "scope": "a b"}}}},
		{`Basic realm="x", Bearer scope=read , error=insufficient_scope`,
			[]Challenge{
				{Scheme: "Basic", Params: map[string]string{"realm": "x"}},
				{Scheme: "Bearer", Params: map[string]string{"scope": "read", "error": "insufficient_scope"}},
			}},
		{`Negotiate a87421000492aa874209af8bc028, Bearer SCOPE="q\"uo\\te"`,
			[]Challenge{
				{Scheme: "Negotiate", Token68: "a87421000492aa874209af8bc028", Params: map[string]string{}},
				{Scheme: "Bearer", Params: map[string]string{"scope": `q"uo\te`}},
			}},
		{`Basic YWxhZGRpbjpvcGVuc2VzYW1l==`, []Challenge{{Scheme: "Basic", Token68: "YWxhZGRpbjpvcGVuc2VzYW1l==", Params: map[string]string{}}}},
		{`Basic, Bearer error = "x"`, []Challenge{
			{Scheme: "Basic", Params: map[string]string{}},
			{Scheme: "Bearer", Params: map[string]string{"error": "x"}},
		}},
		{` , ,Bearer a=b,, c="d",`, []Challenge{{Scheme: "Bearer", Params: map[string]string{"a": "b", "c": "d"}}}},
		{``, nil},
	} {
		got, err := ParseChallenges([]string{tc.in})
		if err != nil {
			t.Errorf("ParseChallenges(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseChallenges(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestParseChallengesMalformed(t *testing.T) {
	for _, in := range []string{
		`Bearer realm="unterminated`,
		`Bearer realm="dangling\`,
		`Bearer a=b c=d`,
		`Bearer a=b, c=`,
		`Bearer a=b, a=c`,
		`Bearer foo bar`,
		`"quoted"`,
		`Bearer a="x` + "\x01" + `"`,
		`Bearer a=b junk`,
		`Bear(er`,
		`Bearer ` + strings.Repeat(`a=b, `, 0) + strings.Repeat("x", maxChallengeHeaderBytes),
		strings.Repeat(`B, `, maxChallenges+1),
	} {
		if _, err := ParseChallenges([]string{in}); !errors.Is(err, ErrMalformedChallenge) {
			t.Errorf("ParseChallenges(%.60q) error = %v, want ErrMalformedChallenge", in, err)
		}
	}
	var params []string
	for i := range maxChallengeParams + 1 {
		params = append(params, "p"+strings.Repeat("x", i)+"=1")
	}
	if _, err := ParseChallenges([]string{"Bearer " + strings.Join(params, ", ")}); !errors.Is(err, ErrMalformedChallenge) {
		t.Errorf("too many params: error = %v", err)
	}
}

func TestBearerChallengeAcrossFields(t *testing.T) {
	h := map[string][]string{"Www-Authenticate": {`Basic realm="x"`, `Bearer scope="s"`}}
	c, ok, err := BearerChallenge(h)
	if err != nil || !ok || c.Param("SCOPE") != "s" {
		t.Fatalf("BearerChallenge = %+v, %v, %v", c, ok, err)
	}
	if _, ok, _ := BearerChallenge(map[string][]string{"Www-Authenticate": {`Basic realm="x"`}}); ok {
		t.Error("found a Bearer challenge where there is none")
	}
}

func TestParseTokenResponse(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tok, err := parseTokenResponse([]byte(`{"access_token":"abc","token_type":"bearer","expires_in":"60","refresh_token":"r","scope":"a b"}`), now)
	if err != nil {
		t.Fatal(err)
	}
	want := &Token{AccessToken: "abc", TokenType: "Bearer", RefreshToken: "r", Scope: "a b", Expiry: now.Add(time.Minute)}
	if !reflect.DeepEqual(tok, want) {
		t.Errorf("got %+v, want %+v", tok, want)
	}
	tok, err = parseTokenResponse([]byte(`{"access_token":"abc","token_type":"Bearer","expires_in":1e300}`), now)
	if err != nil || tok.Expiry != now.Add(maxExpiresIn*time.Second) {
		t.Errorf("huge expires_in: %+v, %v", tok, err)
	}
	for _, in := range []string{
		`[]`, `"x"`, `{}`, `{"access_token":""}`,
		`{"access_token":"a","token_type":"DPoP"}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":"soon"}`,
		`{"access_token":"a b","token_type":"Bearer"}`,
		`{"access_token":"a\r\nX-Evil: 1","token_type":"Bearer"}`,
		`{"access_token":1,"token_type":"Bearer"}`,
		`{"access_token":"a","token_type":"Bearer"`,
	} {
		if tok, err := parseTokenResponse([]byte(in), now); err == nil {
			t.Errorf("parseTokenResponse(%s) = %+v, want an error", in, tok)
		}
	}
}

func TestWellKnownURLs(t *testing.T) {
	mustURL := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"https://x.example/mcp", []string{"https://x.example/.well-known/oauth-protected-resource/mcp", "https://x.example/.well-known/oauth-protected-resource"}},
		{"https://x.example/a/mcp/?q=1", []string{"https://x.example/.well-known/oauth-protected-resource/a/mcp", "https://x.example/.well-known/oauth-protected-resource"}},
		{"https://x.example", []string{"https://x.example/.well-known/oauth-protected-resource"}},
	} {
		if got := prmURLs(mustURL(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("prmURLs(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"https://as.example", []string{"https://as.example/.well-known/oauth-authorization-server", "https://as.example/.well-known/openid-configuration"}},
		{"https://as.example/tenant1", []string{
			"https://as.example/.well-known/oauth-authorization-server/tenant1",
			"https://as.example/.well-known/openid-configuration/tenant1",
			"https://as.example/tenant1/.well-known/openid-configuration",
		}},
	} {
		if got := asMetadataURLs(mustURL(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("asMetadataURLs(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestResourceCovers(t *testing.T) {
	server, _ := url.Parse("https://mcp.example/api/mcp")
	for res, want := range map[string]bool{
		"https://mcp.example/api/mcp":      true,
		"https://mcp.example/api/mcp/":     true,
		"https://mcp.example/api":          true,
		"https://mcp.example":              true,
		"https://mcp.example:443/api/mcp":  true,
		"https://MCP.example/api/mcp":      true,
		"https://mcp.example/ap":           false,
		"https://mcp.example/api/mcp/sub":  false,
		"http://mcp.example/api/mcp":       false,
		"https://mcp.example:8443/api/mcp": false,
		"https://evil.example/api/mcp":     false,
		"https://mcp.example/api/mcp#frag": false,
		"":                                 false,
		"::":                               false,
	} {
		if got := resourceCovers(res, server); got != want {
			t.Errorf("resourceCovers(%q) = %v, want %v", res, got, want)
		}
	}
}

func TestCheckAuthorizationResponse(t *testing.T) {
	asm := &AuthorizationServerMetadata{Issuer: "https://as.example"}
	q := func(s string) url.Values { v, _ := url.ParseQuery(s); return v }
	if code, err := checkAuthorizationResponse(q("code=c&state=s&iss=https%3A%2F%2Fas.example"), "s", asm); err != nil || code != "c" {
		t.Errorf("valid response: %q, %v", code, err)
	}
	for in, want := range map[string]error{
		"code=c&state=x":              ErrStateMismatch,
		"code=c":                      ErrStateMismatch,
		"code=c&state=s&state=s":      ErrStateMismatch,
		"error=access_denied&state=s": ErrAuthorizationDenied,
		"state=s":                     ErrAuthorizationDenied,
		"code=c&state=s&iss=https%3A%2F%2FAS.example":       ErrIssuerMismatch,
		"code=c&state=s&iss=a&iss=https%3A%2F%2Fas.example": ErrIssuerMismatch,
		// iss is checked before anything else, error responses included
		"error=access_denied&state=x&iss=https%3A%2F%2Fevil.example": ErrIssuerMismatch,
	} {
		if _, err := checkAuthorizationResponse(q(in), "s", asm); !errors.Is(err, want) {
			t.Errorf("%s: error = %v, want %v", in, err, want)
		}
	}
}
