package otel_test

import (
	"context"
	"fmt"
	"sort"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/otel"
)

// A server and a client instrumented: a call that asks one question is
// one client span (INTERNAL) with a CLIENT span per leg, and each leg's
// SERVER span is its child, in one trace. Here the spans go to memory;
// in a program, otel.Setup configures the providers from OTEL_*.
func ExampleInstrumentServer() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	o := &otel.Options{TracerProvider: tp, Propagators: propagation.TraceContext{}}

	// #region otel-instrument
	srv := mcp.NewServer(mcp.Implementation{Name: "traced", Version: "1.0.0"},
		otel.InstrumentServer(&mcp.ServerOptions{}, o))
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "greet"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		name, err := mcp.Elicit[struct {
			Name string `json:"name"`
		}](ctx, "Your name?")
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("Hello, " + name.Content.Name), nil
	})

	opts := otel.InstrumentClient(&mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
		},
	}, o)
	// #endregion otel-instrument
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), serverEnd, serverEnd, nil)
	client := mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), opts)
	defer client.Close()

	res, err := client.CallTool(context.Background(), "greet", map[string]any{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	var lines []string
	traces := map[string]bool{}
	for _, s := range spans.GetSpans() {
		if s.Name != "tools/call greet" {
			continue
		}
		lines = append(lines, s.SpanKind.String()+" "+s.Name)
		traces[s.SpanContext.TraceID().String()] = true
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Println("traces:", len(traces))
	// Output:
	// Hello, Ada
	// client tools/call greet
	// client tools/call greet
	// internal tools/call greet
	// server tools/call greet
	// server tools/call greet
	// traces: 1
}
