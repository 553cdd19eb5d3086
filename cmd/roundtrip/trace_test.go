package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/otel"
)

// The CLI traces what it sends: each run is a span over its requests,
// whose context reaches the server; a call saved with --save and
// finished by "resume" (another run) stays in one trace.
func TestCallIsTracedAcrossSaveAndResume(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prop := propagation.TraceContext{}
	prevTP, prevProp := otelapi.GetTracerProvider(), otelapi.GetTextMapPropagator()
	otelapi.SetTracerProvider(tp)
	otelapi.SetTextMapPropagator(prop)
	t.Cleanup(func() {
		otelapi.SetTracerProvider(prevTP)
		otelapi.SetTextMapPropagator(prevProp)
	})
	srv := testServerWith(otel.InstrumentServer(testServerOptions(), &otel.Options{TracerProvider: tp, Propagators: prop}))
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	t.Cleanup(func() { hs.Close(); srv.Close() })

	file := filepath.Join(t.TempDir(), "pending.json")
	cli(t, "", "call", "--url", hs.URL, "--save", file, "deploy", "service=checkout").must(t, 0)
	cli(t, "2\n3\nShip it.\n\ny\n", "resume", file).must(t, 0, "Deployed checkout")

	spans := exp.GetSpans()
	byName := func(name string, k trace.SpanKind) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range spans {
			if s.Name == name && s.SpanKind == k {
				out = append(out, s)
			}
		}
		return out
	}
	runs := append(byName("roundtrip call", trace.SpanKindInternal), byName("roundtrip resume", trace.SpanKindInternal)...)
	calls := byName("tools/call deploy", trace.SpanKindInternal)
	servers := byName("tools/call deploy", trace.SpanKindServer)
	// The first run stops at round one; resume answers it in a Resume,
	// and round two in another (each a logical call of its own).
	if len(runs) != 2 || len(calls) != 3 || len(servers) != 3 {
		var b strings.Builder
		for _, s := range spans {
			b.WriteString(s.SpanKind.String() + " " + s.Name + "\n")
		}
		t.Fatalf("%d runs, %d calls, %d server spans; want 2, 3, 3:\n%s", len(runs), len(calls), len(servers), b.String())
	}
	first := calls[0]
	if first.Parent.SpanID() != runs[0].SpanContext.SpanID() {
		t.Errorf("the call's span is not the child of the run's")
	}
	for i, resumed := range calls[1:] {
		if resumed.Parent.SpanID() != calls[i].SpanContext.SpanID() || resumed.SpanContext.TraceID() != first.SpanContext.TraceID() {
			t.Errorf("resumed call %d is not the child of the call it resumes", i+1)
		}
		if len(resumed.Links) != 1 || resumed.Links[0].SpanContext.SpanID() != runs[1].SpanContext.SpanID() {
			t.Errorf("resumed call %d does not link the resume run's span: %v", i+1, resumed.Links)
		}
	}
	for _, s := range servers {
		if s.SpanContext.TraceID() != first.SpanContext.TraceID() {
			t.Errorf("a server span is in trace %s, want %s", s.SpanContext.TraceID(), first.SpanContext.TraceID())
		}
	}
}
