package otel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// rig is one process's telemetry, recorded in memory: spans as they
// end, metrics on demand.
type rig struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	opts   *Options
}

func newRig(t testing.TB) *rig {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return &rig{spans: exp, reader: reader, tp: tp, opts: &Options{
		TracerProvider: tp,
		MeterProvider:  mp,
		Propagators:    propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}}
}

// ended returns the spans ended so far.
func (r *rig) ended() tracetest.SpanStubs { return r.spans.GetSpans() }

// metrics collects the metrics recorded so far.
func (r *rig) metrics(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// find returns the spans named name of kind k.
func find(spans tracetest.SpanStubs, name string, k trace.SpanKind) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name && s.SpanKind == k {
			out = append(out, s)
		}
	}
	return out
}

// one returns the only span named name of kind k.
func one(t testing.TB, spans tracetest.SpanStubs, name string, k trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	got := find(spans, name, k)
	if len(got) != 1 {
		t.Fatalf("%d %s spans %q, want 1; all spans:\n%s", len(got), k, name, describe(spans))
	}
	return got[0]
}

func describe(spans tracetest.SpanStubs) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s %q trace=%s span=%s parent=%s\n", s.SpanKind, s.Name, s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.Parent.SpanID())
	}
	return b.String()
}

// attr returns the value of attribute k of s, and whether it is set.
func attr(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if a.Key == k {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// wantAttrs fails unless s has each attribute of want with that value
// (as its Emit text).
func wantAttrs(t testing.TB, s tracetest.SpanStub, want map[attribute.Key]string) {
	t.Helper()
	for k, v := range want {
		got, ok := attr(s, k)
		if !ok {
			t.Errorf("span %q has no %s; it has %v", s.Name, k, s.Attributes)
			continue
		}
		if got.String() != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, got.String(), v)
		}
	}
}

// noAttrs fails if s has any of keys.
func noAttrs(t testing.TB, s tracetest.SpanStub, keys ...attribute.Key) {
	t.Helper()
	for _, k := range keys {
		if v, ok := attr(s, k); ok {
			t.Errorf("span %q has %s = %q, want none", s.Name, k, v.String())
		}
	}
}

// childOf fails unless child's parent is parent (same trace).
func childOf(t testing.TB, child, parent tracetest.SpanStub) {
	t.Helper()
	if child.Parent.TraceID() != parent.SpanContext.TraceID() || child.Parent.SpanID() != parent.SpanContext.SpanID() {
		t.Errorf("span %s %q: parent %s/%s, want %s %q %s/%s", child.SpanKind, child.Name,
			child.Parent.TraceID(), child.Parent.SpanID(), parent.SpanKind, parent.Name,
			parent.SpanContext.TraceID(), parent.SpanContext.SpanID())
	}
}

// Forms the test tools ask for.
type nameForm struct {
	Name string `json:"name"`
}

type colorForm struct {
	Color string `json:"color"`
}

// newTestServer is a server instrumented with o: "echo" answers at once;
// "ask3" asks two questions through the asking API, one per round (three
// legs on 2026-07-28; two live requests on a session); "fail" returns a
// JSON-RPC error; "broken" an isError result; the prompt "greet" and the
// resource "test://doc".
func newTestServer(o *Options, extra func(*mcp.ServerOptions)) *mcp.Server {
	opts := &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)}
	if extra != nil {
		extra(opts)
	}
	s := mcp.NewServer(mcp.Implementation{Name: "otel-test", Version: "1"}, InstrumentServer(opts, o))
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		return mcp.TextResult("echo"), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask3", InputSchema: obj}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		n, err := mcp.Elicit[nameForm](ctx, "Name?", mcp.WithKey("name"))
		if err != nil {
			return nil, err
		}
		name, err := n.Value()
		if err != nil {
			return nil, err
		}
		c, err := mcp.Elicit[colorForm](ctx, "Color?", mcp.WithKey("color"))
		if err != nil {
			return nil, err
		}
		color, err := c.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(name.Name + " likes " + color.Color), nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		return nil, mcp.NewError(-32042, "deliberate failure", nil)
	})
	s.AddTool(&mcp.Tool{Name: "broken", InputSchema: obj}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		return nil, errors.New("it broke")
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(ctx context.Context, r *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"}, func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, Text: "doc"}}}, nil
	})
	return s
}

// answerForms answers the forms of ask3.
func answerForms(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	switch {
	case strings.HasPrefix(r.Message, "Name"):
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
	case strings.HasPrefix(r.Message, "Color"):
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"color": "green"}}, nil
	}
	return nil, fmt.Errorf("unexpected question %q", r.Message)
}

// transports are the ways a test client reaches a server: Streamable
// HTTP on loopback, newline-delimited JSON-RPC on a byte stream (the
// stdio framing, here over a network pipe), and the in-memory pair.
var transports = []struct {
	name      string
	network   string // network.transport the spans carry
	connect   func(t *testing.T, s *mcp.Server, opts *mcp.ClientOptions) *mcp.Client
	clientTag string // mcp.ClientRequest.Transport
}{
	{"http", "tcp", httpClient, "http"},
	{"stdio", "pipe", func(t *testing.T, s *mcp.Server, o *mcp.ClientOptions) *mcp.Client {
		ce, se := net.Pipe()
		return streamClient(t, s, ce, se, o)
	}, "stdio"},
	{"memory", "pipe", func(t *testing.T, s *mcp.Server, o *mcp.ClientOptions) *mcp.Client {
		ce, se := mcp.NewInMemoryTransports()
		return streamClient(t, s, ce, se, o)
	}, "memory"},
}

func httpClient(t *testing.T, s *mcp.Server, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	ts := httptest.NewServer(mcp.NewHTTPHandler(s, nil))
	t.Cleanup(ts.Close)
	c := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL+"/mcp", nil), opts)
	t.Cleanup(func() { c.Close() })
	return c
}

type rwc interface {
	Read([]byte) (int, error)
	Write([]byte) (int, error)
	Close() error
}

func streamClient(t *testing.T, s *mcp.Server, ce, se rwc, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.ServeStream(ctx, se, se, nil); se.Close(); close(done) }()
	c := mcp.NewClient(mcp.NewStreamClientTransport(ce, nil), opts)
	t.Cleanup(func() { c.Close(); cancel(); <-done })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
