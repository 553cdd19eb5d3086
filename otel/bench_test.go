package otel

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// BenchmarkToolsCall is one tools/call from a Client to a Server over
// the in-memory pair, in one run:
//
//   - plain: no hooks;
//   - noop: the hooks of this package on both sides, with OpenTelemetry
//     off (the API's no-op providers: what an instrumented program costs
//     when Setup found nothing to set up);
//   - sdk: the hooks with the SDK on, every span sampled and handed to a
//     batch processor (whose exporter drops them), every metric recorded
//     (a reader that is never collected): three spans per call (the
//     client's call and leg, the server's) and four histogram records.
func BenchmarkToolsCall(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchCall(b, nil, false) })
	b.Run("noop", func(b *testing.B) { benchCall(b, nil, true) })
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discard{}))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
		benchCall(b, &Options{TracerProvider: tp, MeterProvider: mp, Propagators: propagation.TraceContext{}}, true)
	})
}

func benchCall(b *testing.B, o *Options, instrument bool) {
	var sopts *mcp.ServerOptions
	var copts *mcp.ClientOptions
	if instrument {
		sopts, copts = InstrumentServer(nil, o), InstrumentClient(nil, o)
	}
	s := mcp.NewServer(mcp.Implementation{Name: "bench", Version: "1"}, sopts)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return mcp.TextResult("hello"), nil
		})
	ce, se := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.ServeStream(ctx, se, se, nil); se.Close(); close(done) }()
	c := mcp.NewClient(mcp.NewStreamClientTransport(ce, nil), copts)
	defer func() { c.Close(); cancel(); <-done }()
	args := map[string]any{"text": "hi"}
	if _, err := c.CallTool(ctx, "echo", args, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(ctx, "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
