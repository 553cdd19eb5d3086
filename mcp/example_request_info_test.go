package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// A handler that reads a tenant header of the HTTP request that carried
// the call, on every era: RequestHeader is nil on a byte stream (stdio),
// so the handler says so rather than guessing.
func ExampleRequestHeader() {
	srv := mcp.NewServer(mcp.Implementation{Name: "tenants", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: []byte(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			h := mcp.RequestHeader(ctx)
			if h == nil {
				return mcp.ErrorResult("no HTTP request: not served over HTTP"), nil
			}
			info, _ := mcp.RequestInfoFrom(ctx)
			return mcp.TextResult("tenant " + h.Get("X-Tenant") + " over " + string(info.Transport)), nil
		})
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ts.Close()

	client := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, &mcp.HTTPClientOptions{
		Header: http.Header{"X-Tenant": {"acme"}},
	}), nil)
	defer client.Close()
	res, err := client.CallTool(context.Background(), "whoami", map[string]any{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: tenant acme over http
}

// A handler that reads the verified token of its caller: the bearer
// middleware in front of the MCP handler puts it in the request's
// context, and the handler finds it with TokenInfoFromContext (nil for
// a server without authentication).
func ExampleTokenInfoFromContext() {
	srv := mcp.NewServer(mcp.Implementation{Name: "accounts", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "me", InputSchema: []byte(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			ti := mcp.TokenInfoFromContext(ctx)
			if ti == nil {
				return mcp.ErrorResult("not authenticated"), nil
			}
			return mcp.TextResult(fmt.Sprintf("subject %s, scopes %v", ti.Subject, ti.Scopes)), nil
		})
	verify := auth.TokenVerifierFunc(func(ctx context.Context, token string) (*mcp.TokenInfo, error) {
		if token != "t0ken" {
			return nil, errors.New("unknown token")
		}
		return &mcp.TokenInfo{Subject: "alice", Scopes: []string{"accounts:read"}}, nil
	})
	ts := httptest.NewServer(auth.RequireBearer(mcp.NewHTTPHandler(srv, nil), &auth.BearerOptions{Verifier: verify}))
	defer ts.Close()

	client := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, &mcp.HTTPClientOptions{
		Header: http.Header{"Authorization": {"Bearer t0ken"}},
	}), nil)
	defer client.Close()
	res, err := client.CallTool(context.Background(), "me", map[string]any{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: subject alice, scopes [accounts:read]
}
