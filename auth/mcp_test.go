package auth

import (
	"context"
	"net/http"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// TestWithMCPClient runs the SDK's client through a Transport against
// the SDK's server behind a bearer check: the first call authorizes, the
// rest reuse the token.
func TestWithMCPClient(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "protected", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return mcp.TextResult("hi"), nil
		})
	m := newMock(t, func(m *mock) {
		m.next = mcp.NewHTTPHandler(srv, nil)
		m.challengeScope = "mcp:tools"
	})
	tr := newTestTransport(t, nil)
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.LegacyProtocolVersion} {
		t.Run(version, func(t *testing.T) {
			c := mcp.NewClient(mcp.NewHTTPClientTransport(m.serverURL(), &mcp.HTTPClientOptions{
				HTTPClient:        &http.Client{Transport: tr},
				NoLegacyGetStream: true,
			}), &mcp.ClientOptions{Mode: mcp.ModePinned, ProtocolVersion: version})
			defer c.Close()
			ctx := context.Background()
			res, err := c.CallTool(ctx, "hello", map[string]any{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if txt, ok := res.Content[0].(*mcp.TextContent); !ok || txt.Text != "hi" {
				t.Fatalf("result = %+v", res)
			}
		})
	}
	auths, _, _ := m.snapshot()
	if len(auths) != 1 || auths[0].Get("scope") != "mcp:tools" {
		t.Errorf("authorization requests = %v, want one with scope mcp:tools", auths)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.rsRequests) < 3 {
		t.Fatalf("only %d requests reached the server", len(m.rsRequests))
	}
	for _, r := range m.rsRequests[1:] {
		if r.auth == "" {
			t.Errorf("a request after the authorization went without a token: %s", r.body)
		}
	}
}
