package mcp_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type ChargeArgs struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// A side-effecting tool that takes an idempotency key: the client's
// retry of a call whose answer it did not get (same key, same
// arguments) is answered with the recorded result, and the charge runs
// once. The key with other arguments is refused.
func ExampleIdempotencyMetaKey() {
	// #region idempotent-tool
	var charges atomic.Int32
	// A fleet shares the keys through its single-use store:
	// ServerOptions.RequestState.Guard = redisguard.New(redisClient).
	srv := mcp.NewServer(mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{
		Name: "charge",
		Meta: mcp.Meta{mcp.IdempotencyMetaKey: true}, // this tool honours idempotency keys
	}, func(ctx context.Context, req *mcp.CallToolRequest, in ChargeArgs) (
		*mcp.CallToolResult, error) {
		n := charges.Add(1) // the side effect
		msg := fmt.Sprintf("charged %d for %s (charge #%d)", in.Amount, in.Order, n)
		return mcp.TextResult(msg), nil
	})
	// #endregion idempotent-tool
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer hs.Close()
	client := mcp.NewClient(mcp.NewHTTPClientTransport(hs.URL, nil), nil)
	defer client.Close()

	// #region idempotent-call
	ctx := context.Background()
	// One key per intended effect, unguessable where callers are not
	// authenticated (they then share one namespace).
	opts := &mcp.CallOptions{Meta: mcp.Meta{mcp.IdempotencyMetaKey: "order-1234-charge"}}
	// The second call stands for a retry after a lost answer.
	for range 2 {
		args := ChargeArgs{Order: "1234", Amount: 40}
		res, err := client.CallTool(ctx, "charge", args, opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	}
	_, err := client.CallTool(ctx, "charge", ChargeArgs{Order: "1234", Amount: 400}, opts)
	fmt.Println(mcp.ErrorCode(err), err)
	// #endregion idempotent-call

	// Output:
	// charged 40 for 1234 (charge #1)
	// charged 40 for 1234 (charge #1)
	// -32602 jsonrpc error -32602: Idempotency key already used with other arguments
}
