package redisguard

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

// An idempotent tool called twice with the same key runs once, across two
// instances whose guards share one Redis (issue 24's acceptance line).
func TestIdempotentToolRunsOnceAcrossTwoInstances(t *testing.T) {
	srv := redistest.StartServer(t, false)
	var runs atomic.Int32
	instance := func() *mcp.Client {
		s := mcp.NewServer(mcp.Implementation{Name: "shop", Version: "1"}, &mcp.ServerOptions{
			RequestState: mcp.RequestStateOptions{Guard: New(srv.Client())},
		})
		mcp.AddTypedTool(s, &mcp.Tool{Name: "charge", Meta: mcp.Meta{mcp.IdempotencyMetaKey: true}},
			func(ctx context.Context, req *mcp.CallToolRequest, in struct {
				Amount int `json:"amount"`
			}) (*mcp.CallToolResult, error) {
				return mcp.TextResult(fmt.Sprintf("charged %d (run %d)", in.Amount, runs.Add(1))), nil
			})
		hs := httptest.NewServer(mcp.NewHTTPHandler(s, nil))
		t.Cleanup(hs.Close)
		c := mcp.NewClient(mcp.NewHTTPClientTransport(hs.URL, nil), nil)
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := instance(), instance()
	call := func(c *mcp.Client, amount int) (string, error) {
		res, err := c.CallTool(context.Background(), "charge", map[string]any{"amount": amount},
			&mcp.CallOptions{Meta: mcp.Meta{mcp.IdempotencyMetaKey: "order-1234"}})
		if err != nil {
			return "", err
		}
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	first, err := call(a, 10)
	if err != nil {
		t.Fatal(err)
	}
	again, err := call(b, 10)
	if err != nil {
		t.Fatal(err)
	}
	if first != "charged 10 (run 1)" || again != first || runs.Load() != 1 {
		t.Fatalf("one key on two instances: %q then %q after %d runs, want one run answered twice", first, again, runs.Load())
	}
	var e *mcp.Error
	if _, err := call(b, 99); !errors.As(err, &e) || e.Code != mcp.CodeInvalidParams || e.Message != "Idempotency key already used with other arguments" {
		t.Fatalf("the key with other arguments on the other instance: %v", err)
	}
	if runs.Load() != 1 {
		t.Errorf("the tool ran %d times", runs.Load())
	}
}
