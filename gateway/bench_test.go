package gateway

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// A modern tools/call straight to a roundtrip upstream, and through the
// gateway to the same upstream (both over loopback HTTP).
func BenchmarkToolCallDirect(b *testing.B) {
	up := httptest.NewServer(mcp.NewHTTPHandler(upstreamServer("u"), nil))
	defer up.Close()
	benchCalls(b, up.URL, "echo")
}

func BenchmarkToolCallThroughTheGateway(b *testing.B) {
	up := httptest.NewServer(mcp.NewHTTPHandler(upstreamServer("u"), nil))
	defer up.Close()
	g, err := New([]Upstream{{Name: "u", URL: up.URL}}, &Options{
		Server: &mcp.ServerOptions{Logger: quietLogger()},
		Pool:   &PoolOptions{Logger: quietLogger()},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g.WaitReady(ctx)
	front := httptest.NewServer(mcp.NewHTTPHandler(g.Server(), nil))
	defer front.Close()
	benchCalls(b, front.URL, "u__echo")
}

func benchCalls(b *testing.B, url, tool string) {
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), &mcp.ClientOptions{Logger: quietLogger()})
	defer c.Close()
	args := json.RawMessage(`{"text":"hi"}`)
	ctx := context.Background()
	if _, err := c.CallTool(ctx, tool, args, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.CallTool(ctx, tool, args, nil); err != nil {
			b.Fatal(err)
		}
	}
}
