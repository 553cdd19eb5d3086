package otel

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// On a 2025-11-25 session the server asks with live requests while the
// call is open: each gets a CLIENT span, the child of the server span
// of the call it serves, and the session is on every span.
func TestLegacyLiveRequestIsChildOfServerSpan(t *testing.T) {
	r := newRig(t)
	s := newTestServer(r.opts, nil)
	c := httpClient(t, s, InstrumentClient(&mcp.ClientOptions{Mode: mcp.ModeLegacy, Elicitation: answerForms}, r.opts))
	res, err := c.CallTool(testContext(t), "ask3", map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; txt != "Ada likes green" {
		t.Fatalf("result %q", txt)
	}
	spans := r.ended()
	leg := one(t, spans, "tools/call ask3", trace.SpanKindClient)
	srv := one(t, spans, "tools/call ask3", trace.SpanKindServer)
	childOf(t, srv, leg)
	wantAttrs(t, srv, map[attribute.Key]string{
		semconv.McpProtocolVersionKey: mcp.LegacyProtocolVersion,
		semconv.NetworkTransportKey:   "tcp",
		AttrInputRequired:             "false",
	})
	sid, ok := attr(srv, semconv.McpSessionIDKey)
	if !ok || sid.AsString() == "" {
		t.Fatalf("server span has no mcp.session.id: %v", srv.Attributes)
	}
	live := find(spans, "elicitation/create", trace.SpanKindClient)
	if len(live) != 2 {
		t.Fatalf("%d elicitation/create spans, want 2:\n%s", len(live), describe(spans))
	}
	for _, l := range live {
		childOf(t, l, srv)
		wantAttrs(t, l, map[attribute.Key]string{
			semconv.McpMethodNameKey:      "elicitation/create",
			semconv.McpProtocolVersionKey: mcp.LegacyProtocolVersion,
			semconv.McpSessionIDKey:       sid.AsString(),
			semconv.NetworkTransportKey:   "tcp",
		})
		noAttrs(t, l, semconv.ErrorTypeKey)
	}
	wantAttrs(t, leg, map[attribute.Key]string{semconv.McpProtocolVersionKey: mcp.LegacyProtocolVersion})

	// The session's metrics: open while it lasts, its duration when it ends.
	if got := sumOf(t, r.metrics(t), MetricSessionsActive, nil); got != 1 {
		t.Errorf("%s = %v while the session is open, want 1", MetricSessionsActive, got)
	}
	// Close ends the session (DELETE) before it returns.
	c.Close()
	if got := sumOf(t, r.metrics(t), MetricSessionsActive, nil); got != 0 {
		t.Errorf("%s = %v once the session is closed, want 0", MetricSessionsActive, got)
	}
	if n := histCount(t, r.metrics(t), "mcp.server.session.duration", map[attribute.Key]string{semconv.McpProtocolVersionKey: mcp.LegacyProtocolVersion}); n != 1 {
		t.Errorf("mcp.server.session.duration has %d sessions, want 1", n)
	}
}

// A live request's params._meta carries the trace context of its span,
// which a client of that revision reads like any _meta member.
func TestLiveRequestMetaCarriesTraceparent(t *testing.T) {
	r := newRig(t)
	s := newTestServer(r.opts, nil)
	ce, se := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.ServeStream(ctx, se, se, nil); se.Close(); close(done) }()
	t.Cleanup(func() { ce.Close(); cancel(); <-done })
	lines := make(chan map[string]json.RawMessage, 16)
	go func() {
		sc := bufio.NewScanner(ce)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	send := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := ce.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]json.RawMessage {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("the server closed the stream")
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no message from the server")
		}
		return nil
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": mcp.LegacyProtocolVersion,
		"capabilities":    map[string]any{"elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": "raw", "version": "1"},
	}})
	next()
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})

	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xa1}, SpanID: trace.SpanID{0xb2}, TraceFlags: trace.FlagsSampled})
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
		"name": "ask3", "arguments": map[string]any{},
		"_meta": map[string]any{"traceparent": fmt.Sprintf("00-%s-%s-01", caller.TraceID(), caller.SpanID())},
	}})
	prop := propagation.TraceContext{}
	var liveParents []trace.SpanContext
	for {
		m := next()
		var method string
		_ = json.Unmarshal(m["method"], &method)
		if method == "" {
			break // the call's result
		}
		if method != "elicitation/create" {
			t.Fatalf("unexpected %s from the server", method)
		}
		var params struct {
			Message string            `json:"message"`
			Meta    map[string]string `json:"_meta"`
		}
		if err := json.Unmarshal(m["params"], &params); err != nil {
			t.Fatal(err)
		}
		sc := trace.SpanContextFromContext(prop.Extract(context.Background(), propagation.MapCarrier(params.Meta)))
		if !sc.IsValid() {
			t.Fatalf("the live request's _meta has no trace context: %s", m["params"])
		}
		liveParents = append(liveParents, sc)
		content := map[string]any{"name": "Ada"}
		if params.Message == "Color?" {
			content = map[string]any{"color": "green"}
		}
		send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"action": "accept", "content": content}})
	}
	spans := r.ended()
	srv := one(t, spans, "tools/call ask3", trace.SpanKindServer)
	if srv.Parent.SpanID() != caller.SpanID() || srv.Parent.TraceID() != caller.TraceID() {
		t.Errorf("server span's parent %s/%s, want the caller's %s/%s", srv.Parent.TraceID(), srv.Parent.SpanID(), caller.TraceID(), caller.SpanID())
	}
	live := find(spans, "elicitation/create", trace.SpanKindClient)
	if len(live) != 2 || len(liveParents) != 2 {
		t.Fatalf("%d live spans, %d live requests; want 2 each", len(live), len(liveParents))
	}
	for i, l := range live {
		childOf(t, l, srv)
		if liveParents[i].SpanID() != l.SpanContext.SpanID() || liveParents[i].TraceID() != caller.TraceID() {
			t.Errorf("live request %d carries %s/%s, want its span %s/%s", i, liveParents[i].TraceID(), liveParents[i].SpanID(), caller.TraceID(), l.SpanContext.SpanID())
		}
		wantAttrs(t, l, map[attribute.Key]string{semconv.NetworkTransportKey: "pipe"})
	}
}

// A low-level handler's own InputRequiredResult on a session is sent
// live by the SDK between two runs of the handler: the live request is
// the child of the server span of the run that asked, and nothing is
// kept once the call is over.
func TestBridgedLiveRequestIsChildOfTheRunThatAsked(t *testing.T) {
	r := newRig(t)
	s := newTestServer(r.opts, nil)
	addVault(s)
	pin := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"pin": "1234"}}, nil
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			r.spans.Reset()
			c := tr.connect(t, s, InstrumentClient(&mcp.ClientOptions{Mode: mcp.ModeLegacy, Elicitation: pin}, r.opts))
			if _, err := c.CallTool(testContext(t), "vault", map[string]any{}, nil); err != nil {
				t.Fatal(err)
			}
			spans := r.ended()
			runs := find(spans, "tools/call vault", trace.SpanKindServer)
			if len(runs) != 2 {
				t.Fatalf("%d runs, want 2:\n%s", len(runs), describe(spans))
			}
			asked := runs[0]
			wantAttrs(t, asked, map[attribute.Key]string{AttrInputRequired: "true"})
			childOf(t, one(t, spans, "elicitation/create", trace.SpanKindClient), asked)
			n := 0
			bridged.Range(func(any, any) bool { n++; return true })
			if n != 0 {
				t.Errorf("%d bridged requests still kept after the call", n)
			}
		})
	}
}
