package bench

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/gateway"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// BenchmarkGatewayHop is a modern tools/call through one gateway hop
// (package gateway, as "roundtrip gateway" serves it) to a roundtrip
// upstream, against the same call made directly to that upstream. Both
// over loopback Streamable HTTP, with the roundtrip subject's server and
// client. The direct call is the workload's only other subject, so the
// tables show it as the peer, and the target (cmd/ratios, issue 23) is the
// time ratio to it: at most 2×.
func BenchmarkGatewayHop(b *testing.B) {
	b.Run("subject=direct", func(b *testing.B) {
		benchCalls(b, httpCaller(b, roundtripSubject, nil), "echo", "hello", "hello")
	})
	b.Run("subject="+roundtripSubject.name, func(b *testing.B) {
		upstream := serveHTTP(b, roundtripSubject.handler(b))
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		g, err := gateway.New([]gateway.Upstream{{Name: "u", URL: upstream}}, &gateway.Options{
			Server: &mcp.ServerOptions{Logger: quiet},
			Pool:   &gateway.PoolOptions{Logger: quiet},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { g.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
		c := roundtripSubject.httpClient(b, serveHTTP(b, mcp.NewHTTPHandler(g.Server(), nil)), newHTTPClient(nil))
		b.Cleanup(func() { c.close() })
		benchCalls(b, c, "u__echo", "hello", "hello")
	})
}
