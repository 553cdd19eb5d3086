package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// forwardServer has a tool that reports progress and one that says when
// its call was cancelled.
func forwardServer(name string, started, cancelled chan<- string) *mcp.Server {
	srv := upstreamServer(name)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, error) {
		mcp.ReportProgress(ctx, 1, 2, "half way")
		return mcp.TextResult("done"), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, error) {
		started <- name
		<-ctx.Done()
		cancelled <- name
		return nil, ctx.Err()
	})
	return srv
}

func TestProgressAndCancellationAreForwarded(t *testing.T) {
	t.Parallel()
	started, cancelled := make(chan string, 4), make(chan string, 4)
	_, url := startGateway(t, []Upstream{
		{Name: "modern", URL: serveModern(t, forwardServer("modern", started, cancelled))},
		{Name: "legacy", URL: serveLegacyOnly(t, forwardServer("legacy", started, cancelled))},
	}, nil)
	for _, mode := range []mcp.ClientMode{mcp.ModeAuto, mcp.ModeLegacy} {
		c := downstream(t, url, "alice", mode, nil)
		for _, up := range []string{"modern", "legacy"} {
			var mu sync.Mutex
			var got []string
			res, err := c.CallTool(context.Background(), up+"__progress", nil, &mcp.CallOptions{OnProgress: func(p *mcp.ProgressParams) {
				mu.Lock()
				got = append(got, p.Message)
				mu.Unlock()
			}})
			if err != nil || resultText(t, res) != "done" {
				t.Fatalf("mode %d → %s: %v %v", mode, up, res, err)
			}
			mu.Lock()
			if len(got) != 1 || got[0] != "half way" {
				t.Errorf("mode %d → %s: progress %q", mode, up, got)
			}
			mu.Unlock()

			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, up+"__wait", nil, nil)
				errc <- err
			}()
			if name := <-started; name != up {
				t.Fatalf("started %s, want %s", name, up)
			}
			cancel()
			<-errc
			select {
			case name := <-cancelled:
				if name != up {
					t.Errorf("cancelled %s, want %s", name, up)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("mode %d → %s: the downstream's cancel did not reach the upstream", mode, up)
			}
		}
	}
}
