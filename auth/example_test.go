package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Protecting an MCP server: RequireBearer in front of the handler, the
// resource metadata beside it. A handler reads who called; sealed states
// are bound to that user. In production the verifier is an
// auth.JWTVerifier against the authorization server's key set.
func ExampleRequireBearer() {
	srv := mcp.NewServer(mcp.Implementation{Name: "reports", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		return mcp.TextResult("hello " + mcp.TokenInfoFromContext(ctx).Subject), nil
	})
	verifier := auth.TokenVerifierFunc(func(ctx context.Context, token string) (*mcp.TokenInfo, error) {
		if token != "token-of-ada" {
			return nil, auth.ErrInvalidToken
		}
		return &mcp.TokenInfo{Subject: "ada", ClientID: "reports-cli", Issuer: "https://as.example"}, nil
	})
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	prm, _ := auth.ResourceMetadataURL(ts.URL + "/mcp")
	mux.Handle("/mcp", auth.RequireBearer(mcp.NewHTTPHandler(srv, nil), &auth.BearerOptions{Verifier: verifier, ResourceMetadataURL: prm}))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceHandler(&auth.ProtectedResourceMetadata{
		Resource: ts.URL + "/mcp", AuthorizationServers: []string{"https://as.example"},
	}))

	// Without a token: 401 and a challenge that names the metadata.
	resp, _ := http.Post(ts.URL+"/mcp", "application/json", nil)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate") == `Bearer resource_metadata="`+prm+`"`)

	// With one (an auth.Transport would obtain it through OAuth).
	client := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL+"/mcp", &mcp.HTTPClientOptions{HTTPClient: &http.Client{Transport: bearer{"token-of-ada"}}}), nil)
	defer client.Close()
	res, err := client.CallTool(context.Background(), "whoami", map[string]any{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// 401 true
	// hello ada
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
