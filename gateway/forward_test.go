package gateway

import (
	"context"
	"encoding/json"
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

type traceKey struct{}

// The upstream legs of a downstream call run with the downstream
// request's context values (where a tracer finds its span), through the
// middleware PoolOptions.ConfigureClient adds.
func TestUpstreamLegsCarryTheDownstreamRequestsValues(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]string{} // method → the value found
	mark := func(next mcp.ServerHandler) mcp.ServerHandler {
		return func(ctx context.Context, method string, p mcp.Params) (mcp.Result, error) {
			if method == mcp.MethodToolsCall {
				ctx = context.WithValue(ctx, traceKey{}, "trace-1")
			}
			return next(ctx, method, p)
		}
	}
	_, url := startGateway(t, []Upstream{
		{Name: "modern", URL: serveModern(t, upstreamServer("modern"))},
		{Name: "legacy", URL: serveLegacyOnly(t, upstreamServer("legacy"))},
	}, &Options{
		Server: &mcp.ServerOptions{Logger: quietLogger(), Middleware: []mcp.ServerMiddleware{mark}},
		Pool: &PoolOptions{Logger: quietLogger(), ConfigureClient: func(up string, o *mcp.ClientOptions) *mcp.ClientOptions {
			o.Middleware = append(o.Middleware, func(next mcp.ClientHandler) mcp.ClientHandler {
				return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
					if v, ok := ctx.Value(traceKey{}).(string); ok {
						mu.Lock()
						seen[up+" "+req.Method] = v
						mu.Unlock()
					}
					return next(ctx, req)
				}
			})
			return o
		}},
	})
	c := downstream(t, url, "alice", mcp.ModeAuto, answers(&mcp.ClientOptions{}))
	for _, up := range []string{"modern", "legacy"} {
		if _, err := c.CallTool(context.Background(), up+"__ask", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"modern tools/call", "legacy tools/call"} {
		if seen[k] != "trace-1" {
			t.Errorf("%s: %q (seen %v)", k, seen[k], seen)
		}
	}
}

func TestAnUpstreamsResourceUpdatesReachSubscribedClients(t *testing.T) {
	t.Parallel()
	msrv, lsrv := upstreamServer("modern"), upstreamServer("legacy")
	_, url := startGateway(t, []Upstream{
		{Name: "modern", URL: serveModern(t, msrv)},
		{Name: "legacy", URL: serveLegacyOnly(t, lsrv)},
	}, nil)
	c := downstream(t, url, "alice", mcp.ModeAuto, nil)
	for _, tc := range []struct {
		srv      *mcp.Server
		uri, agg string
	}{
		{msrv, "file:///modern.txt", "file:///modern.txt"},
		{lsrv, "file:///shared.txt", rewriteURI("legacy", "file:///shared.txt")},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan string, 16)
		acked := make(chan struct{})
		go c.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{tc.agg}}, func(n *mcp.ListenNotification) {
			switch n.Method {
			case mcp.NotificationSubscriptionsAck:
				close(acked)
			case "notifications/resources/updated":
				got <- n.URI
			}
		})
		<-acked
		// The upstream's own subscription may not be open yet: update
		// until the client hears of it.
		eventually(t, "the update of "+tc.uri, func() bool {
			tc.srv.ResourceUpdated(tc.uri)
			select {
			case u := <-got:
				if u != tc.agg {
					t.Fatalf("updated %q, want %q", u, tc.agg)
				}
				return true
			default:
				return false
			}
		})
		cancel()
	}
}
