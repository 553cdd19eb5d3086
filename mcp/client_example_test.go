package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Logging every request a Client sends, and trace context on every
// request of a context and on every leg of one call.
func ExampleLogClientRequests() {
	server := mcp.NewServer(mcp.Implementation{Name: "demo", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "whoami"}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		var meta map[string]any
		_ = json.Unmarshal(r.Meta.Raw, &meta)
		return mcp.TextResult(fmt.Sprint("traceparent ", meta["traceparent"], ", baggage ", meta["baggage"])), nil
	})
	ce, se := mcp.NewInMemoryTransports()
	go server.ServeStream(context.Background(), se, se, nil)

	// Drop the time and the duration, which change from run to run.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == "duration" {
			return slog.Attr{}
		}
		return a
	}}))
	client := mcp.NewClient(mcp.NewStreamClientTransport(ce, nil), &mcp.ClientOptions{
		Middleware: []mcp.ClientMiddleware{mcp.LogClientRequests(logger)},
	})
	defer client.Close()

	ctx := mcp.WithMeta(context.Background(), mcp.Meta{"baggage": "tenant=acme"})
	res, err := client.CallTool(ctx, "whoami", nil, &mcp.CallOptions{
		Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// level=INFO msg="mcp client request" method=tools/call tool=whoami round=1 protocol=2026-07-28 transport=memory outcome=ok
	// traceparent 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, baggage tenant=acme
}
