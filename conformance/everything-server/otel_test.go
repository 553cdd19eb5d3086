package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// otlpReceiver is an OTLP/HTTP endpoint on loopback that decodes the
// protobuf export requests it is sent.
type otlpReceiver struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
	metrics map[string]bool
	got     chan struct{} // a signal per export
	url     string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{metrics: map[string]bool{}, got: make(chan struct{}, 1024)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		var req coltracepb.ExportTraceServiceRequest
		if !readProto(w, r, &req) {
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			if v := stringAttr(rs.GetResource().GetAttributes(), "service.name"); v != "" {
				rc.service = append(rc.service, v)
			}
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		writeProto(w, &coltracepb.ExportTraceServiceResponse{})
		rc.got <- struct{}{}
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		var req colmetricpb.ExportMetricsServiceRequest
		if !readProto(w, r, &req) {
			return
		}
		rc.mu.Lock()
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					rc.metrics[m.Name] = true
				}
			}
		}
		rc.mu.Unlock()
		writeProto(w, &colmetricpb.ExportMetricsServiceResponse{})
		rc.got <- struct{}{}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	rc.url = ts.URL
	return rc
}

func readProto(w http.ResponseWriter, r *http.Request, m proto.Message) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err == nil {
		err = proto.Unmarshal(b, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

func stringAttr(attrs []*commonpb.KeyValue, key string) string {
	for _, a := range attrs {
		if a.Key == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// waitFor waits, export by export, until cond holds (checked under the
// receiver's lock), for at most 20 s.
func (rc *otlpReceiver) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		rc.mu.Lock()
		ok := cond()
		rc.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-rc.got:
		case <-deadline.C:
			t.Fatalf("no %s exported within 20 s", what)
		}
	}
}

// serverSpans returns the SERVER spans named name in trace tid.
func (rc *otlpReceiver) serverSpans(name string, tid []byte) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if s.Name == name && s.Kind == tracepb.Span_SPAN_KIND_SERVER && string(s.TraceId) == string(tid) {
			out = append(out, s)
		}
	}
	return out
}

func spanAttrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes {
		v := a.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[a.Key] = v.GetStringValue()
		case v.GetIntValue() != 0:
			m[a.Key] = fmt.Sprint(v.GetIntValue())
		default:
			m[a.Key] = fmt.Sprint(v.GetBoolValue())
		}
	}
	return m
}

// legIDs is a client middleware that sends each leg of a call with a
// traceparent of its own in params._meta: trace tid, span id
// spanBase+round.
func legIDs(tid [16]byte, spanBase uint64) mcp.ClientMiddleware {
	return func(next mcp.ClientHandler) mcp.ClientHandler {
		return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
			round := 1
			if req.Call != nil {
				round = req.Call.Round
			}
			req.Meta["traceparent"] = fmt.Sprintf("00-%s-%016x-01", hex.EncodeToString(tid[:]), spanBase+uint64(round))
			return next(ctx, req)
		}
	}
}

// The acceptance test of tracing: the everything-server binary,
// started with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP
// receiver on loopback, exports a SERVER span for a tools/call carrying
// a traceparent in params._meta, in that trace, the child of that span,
// with the conventions' attributes; and for a three-round call three
// server spans, each the child of the span id its leg carried.
func TestEverythingServerExportsSpansOverOTLP(t *testing.T) {
	rc := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.url)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_METRICS_EXPORTER", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")      // ms: export spans at once
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "200") // ms
	_, url := testutil.Listen(t, buildServer(t), "-http", "127.0.0.1:0")

	answer := func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		for _, field := range []string{"name", "color"} {
			if strings.Contains(r.Message, field) {
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{field: "x"}}, nil
			}
		}
		return nil, fmt.Errorf("unexpected question %q", r.Message)
	}
	tid := [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	const base = 0x00f067aa0ba90200
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), &mcp.ClientOptions{
		Elicitation: answer,
		Middleware:  []mcp.ClientMiddleware{legIDs(tid, base)},
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// One leg: the span of test_simple_text is the child of leg 1.
	if _, err := c.CallTool(ctx, "test_simple_text", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	var simple *tracepb.Span
	rc.waitFor(t, "server span of test_simple_text", func() bool {
		if got := rc.serverSpans("tools/call test_simple_text", tid[:]); len(got) == 1 {
			simple = got[0]
		}
		return simple != nil
	})
	if got := fmt.Sprintf("%x", simple.ParentSpanId); got != fmt.Sprintf("%016x", base+1) {
		t.Errorf("parent span %s, want the one _meta carried (%016x)", got, base+1)
	}
	attrs := spanAttrs(simple)
	for k, want := range map[string]string{
		"mcp.method.name":          "tools/call",
		"gen_ai.tool.name":         "test_simple_text",
		"gen_ai.operation.name":    "execute_tool",
		"mcp.protocol.version":     mcp.LatestProtocolVersion,
		"network.transport":        "tcp",
		"network.protocol.name":    "http",
		"roundtrip.input_required": "false",
	} {
		if attrs[k] != want {
			t.Errorf("%s = %q, want %q (attributes %v)", k, attrs[k], want, attrs)
		}
	}
	if attrs["jsonrpc.request.id"] == "" {
		t.Errorf("no jsonrpc.request.id: %v", attrs)
	}
	rc.mu.Lock()
	for _, svc := range rc.service {
		if svc != "roundtrip-everything-server" {
			t.Errorf("service.name %q", svc)
		}
	}
	rc.mu.Unlock()

	// Three legs: three server spans, each the child of its leg's id.
	tid[15]++ // a trace of its own
	c3 := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), &mcp.ClientOptions{
		Elicitation: answer,
		Middleware:  []mcp.ClientMiddleware{legIDs(tid, base)},
	})
	defer c3.Close()
	if _, err := c3.CallTool(ctx, "test_input_required_result_multi_round", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	var legs []*tracepb.Span
	rc.waitFor(t, "three server spans of the multi-round call", func() bool {
		legs = rc.serverSpans("tools/call test_input_required_result_multi_round", tid[:])
		return len(legs) == 3
	})
	byParent := map[string]*tracepb.Span{}
	for _, s := range legs {
		byParent[fmt.Sprintf("%x", s.ParentSpanId)] = s
	}
	for round := 1; round <= 3; round++ {
		s := byParent[fmt.Sprintf("%016x", base+uint64(round))]
		if s == nil {
			t.Errorf("no server span is the child of leg %d's span %016x", round, base+uint64(round))
			continue
		}
		a := spanAttrs(s)
		if a["roundtrip.round"] != fmt.Sprint(round) {
			t.Errorf("leg %d: roundtrip.round = %q", round, a["roundtrip.round"])
		}
		if want := fmt.Sprint(round < 3); a["roundtrip.input_required"] != want {
			t.Errorf("leg %d: roundtrip.input_required = %q, want %s", round, a["roundtrip.input_required"], want)
		}
	}
	rc.waitFor(t, "mcp.server.operation.duration", func() bool { return rc.metrics["mcp.server.operation.duration"] })
}
