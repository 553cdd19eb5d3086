package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// A resource server that takes DPoP-bound tokens (and still Bearer
// ones), and a tool that needs a scope of its own: a token without it
// gets 403 insufficient_scope naming what the call takes, and an
// auth.Transport steps up and retries.
func ExampleRequireBearer_dpopAndToolScopes() {
	srv := mcp.NewServer(mcp.Implementation{Name: "reports", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "delete_report"}, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		return mcp.TextResult("deleted"), nil
	})
	verifier := auth.TokenVerifierFunc(func(ctx context.Context, token string) (*mcp.TokenInfo, error) {
		if token != "token-of-ada" {
			return nil, auth.ErrInvalidToken
		}
		return &mcp.TokenInfo{Subject: "ada", Scopes: []string{"reports"}}, nil
	})
	nonceKey := []byte(strings.Repeat("k", 32)) // in production: 32 random bytes, the same on every instance
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	prm, _ := auth.ResourceMetadataURL(ts.URL + "/mcp")

	// #region dpop-scopes
	protected := auth.RequireBearer(mcp.NewHTTPHandler(srv, nil), &auth.BearerOptions{
		Verifier:            verifier, // an auth.JWTVerifier passes the token's cnf on
		ResourceMetadataURL: prm,
		Scopes:              []string{"reports"},
		ToolScopes:          map[string][]string{"delete_report": {"reports:admin"}},
		DPoP: &auth.DPoPVerifyOptions{
			// BaseURL: "https://reports.example", // where clients reach it, behind a proxy
			NonceKey: nonceKey,
			// ReplayCache: redisdpop.New(rdb),   // one cache for the whole fleet
		},
	})
	// #endregion dpop-scopes
	mux.Handle("/mcp", protected)

	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_report","arguments":{}}}`))
	req.Header.Set("Authorization", "Bearer token-of-ada")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	challenges, _ := auth.ParseChallenges(resp.Header.Values("WWW-Authenticate"))
	fmt.Println(resp.StatusCode)
	for _, c := range challenges {
		fmt.Printf("%s error=%s scope=%q\n", c.Scheme, c.Param("error"), c.Param("scope"))
	}
	// Output:
	// 403
	// Bearer error=insufficient_scope scope="reports reports:admin"
	// DPoP error=insufficient_scope scope="reports reports:admin"
}
