package otel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/otel"
)

// Setup in main: the providers come from the standard OTEL_* environment
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER, ...), and a metric
// reader given here (a Prometheus exporter, or a ManualReader as below)
// is added whatever the environment says. Hooks built with nil Options
// use the globals Setup configured.
func ExampleSetup() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	// #region otel-setup
	shutdown, err := otel.Setup(ctx, &otel.SetupOptions{
		ServiceName:    "orders",
		ServiceVersion: "1.4.0",
		MetricReaders:  []sdkmetric.Reader{reader},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer shutdown(ctx) // flushes what is buffered

	srv := mcp.NewServer(mcp.Implementation{Name: "orders", Version: "1.4.0"},
		otel.InstrumentServer(&mcp.ServerOptions{}, nil))
	// #endregion otel-setup
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "ping"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.TextResult("pong"), nil
	})
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(ctx, serverEnd, serverEnd, nil)
	client := mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), nil)
	defer client.Close()
	if _, err := client.CallTool(ctx, "ping", map[string]any{}, nil); err != nil {
		fmt.Println(err)
		return
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "mcp.server.operation.duration" {
				fmt.Println("recorded:", m.Name)
			}
		}
	}
	// Output:
	// recorded: mcp.server.operation.duration
}
