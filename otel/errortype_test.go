package otel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// A server answering every request with a JSON-RPC error code of its own
// invention adds no metric series per code: error.type is "_OTHER" for
// every code that is neither JSON-RPC's nor MCP's (with no
// rpc.response.status_code on the metrics), the known codes stay
// themselves, and the spans keep the code the server sent.
func TestServerErrorCodesAreABoundedSetOfErrorTypes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var in struct {
			ID json.RawMessage `json:"id"`
		}
		b, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(b, &in)
		code := -1000 - n.Add(1)
		if string(in.ID) == "" {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"no"}}`, in.ID, code)
	}))
	t.Cleanup(ts.Close)
	c := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), InstrumentClient(&mcp.ClientOptions{Mode: mcp.ModePinned, ProtocolVersion: mcp.LatestProtocolVersion}, r.opts))
	t.Cleanup(func() { c.Close() })
	ctx := testContext(t)
	const calls = 50
	for range calls {
		if _, err := c.CallTool(ctx, "t", nil, nil); mcp.ErrorCode(err) > -1000 {
			t.Fatalf("want the server's own code, got %v", err)
		}
	}
	rm := r.metrics(t)
	for _, name := range []string{"mcp.client.operation.duration", MetricCallRounds} {
		m, ok := metricNamed(rm, name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		types := map[string]int{}
		for _, set := range pointSets(m) {
			v, _ := set.Value(semconv.ErrorTypeKey)
			types[v.AsString()]++
			if set.HasValue(semconv.RPCResponseStatusCodeKey) {
				t.Errorf("%s: an unknown code is an rpc.response.status_code: %v", name, set)
			}
		}
		if len(types) != 1 || types["_OTHER"] != 1 {
			t.Errorf("%s: error.type values %v, want one series of _OTHER for %d codes", name, types, calls)
		}
	}
	if got := histCount(t, rm, "mcp.client.operation.duration", map[attribute.Key]string{semconv.ErrorTypeKey: "_OTHER"}); got != calls {
		t.Errorf("%d values under _OTHER, want %d", got, calls)
	}
	legs := find(r.ended(), "tools/call t", trace.SpanKindClient)
	if len(legs) != calls {
		t.Fatalf("%d leg spans, want %d: %s", len(legs), calls, describe(r.ended()))
	}
	wantAttrs(t, legs[0], map[attribute.Key]string{semconv.ErrorTypeKey: "_OTHER", semconv.RPCResponseStatusCodeKey: "-1001"})
	for _, code := range []int{mcp.CodeInvalidParams, mcp.ErrTemporarilyUnavailable.Code, -32042} {
		if got := codeErrorType(code); got != fmt.Sprint(code) {
			t.Errorf("known code %d: error.type %q", code, got)
		}
	}
}
