package otel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The server span of a request is the child of the client's leg span,
// whose context travels in params._meta, on every transport.
func TestServerSpanIsChildOfClientLegOnEveryTransport(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			r := newRig(t)
			s := newTestServer(r.opts, nil)
			c := tr.connect(t, s, InstrumentClient(nil, r.opts))
			ctx := testContext(t)
			if _, err := c.CallTool(ctx, "echo", map[string]any{}, nil); err != nil {
				t.Fatal(err)
			}
			spans := r.ended()
			call := one(t, spans, "tools/call echo", trace.SpanKindInternal)
			leg := one(t, spans, "tools/call echo", trace.SpanKindClient)
			srv := one(t, spans, "tools/call echo", trace.SpanKindServer)
			childOf(t, leg, call)
			childOf(t, srv, leg)
			common := map[attribute.Key]string{
				semconv.McpMethodNameKey:      "tools/call",
				semconv.GenAIToolNameKey:      "echo",
				semconv.GenAIOperationNameKey: "execute_tool",
				semconv.McpProtocolVersionKey: mcp.LatestProtocolVersion,
				semconv.NetworkTransportKey:   tr.network,
				AttrInputRequired:             "false",
			}
			wantAttrs(t, srv, common)
			wantAttrs(t, leg, common)
			wantAttrs(t, leg, map[attribute.Key]string{AttrRound: "1"})
			wantAttrs(t, call, map[attribute.Key]string{AttrRounds: "1", semconv.GenAIToolNameKey: "echo"})
			if id, ok := attr(srv, semconv.JSONRPCRequestIDKey); !ok || id.AsString() == "" {
				t.Errorf("server span has no jsonrpc.request.id: %v", srv.Attributes)
			}
			if tr.network == "tcp" {
				wantAttrs(t, srv, map[attribute.Key]string{semconv.NetworkProtocolNameKey: "http", semconv.NetworkProtocolVersionKey: "1.1"})
			}
			noAttrs(t, srv, semconv.ErrorTypeKey, semconv.McpSessionIDKey)
			if srv.Status.Code != codes.Unset || leg.Status.Code != codes.Unset {
				t.Errorf("status server %v, leg %v; want unset", srv.Status, leg.Status)
			}
		})
	}
}

// A three-round call (two input_required results) is one INTERNAL span
// with three CLIENT legs, each the parent of its server span.
func TestThreeRoundCallIsOneSpanWithALegPerRound(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			r := newRig(t)
			s := newTestServer(r.opts, nil)
			c := tr.connect(t, s, InstrumentClient(&mcp.ClientOptions{Elicitation: answerForms}, r.opts))
			res, err := c.CallTool(testContext(t), "ask3", map[string]any{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if txt := res.Content[0].(*mcp.TextContent).Text; txt != "Ada likes green" {
				t.Fatalf("result %q", txt)
			}
			spans := r.ended()
			call := one(t, spans, "tools/call ask3", trace.SpanKindInternal)
			legs := find(spans, "tools/call ask3", trace.SpanKindClient)
			servers := find(spans, "tools/call ask3", trace.SpanKindServer)
			if len(legs) != 3 || len(servers) != 3 {
				t.Fatalf("%d legs, %d server spans; want 3 each:\n%s", len(legs), len(servers), describe(spans))
			}
			wantAttrs(t, call, map[attribute.Key]string{AttrRounds: "3"})
			noAttrs(t, call, AttrPending, semconv.ErrorTypeKey)
			for i, leg := range legs {
				childOf(t, leg, call)
				round := []string{"1", "2", "3"}[i]
				asked := []string{"true", "true", "false"}[i]
				wantAttrs(t, leg, map[attribute.Key]string{AttrRound: round, AttrInputRequired: asked})
				var srv *int
				for j := range servers {
					if servers[j].Parent.SpanID() == leg.SpanContext.SpanID() {
						srv = &j
					}
				}
				if srv == nil {
					t.Fatalf("leg %d has no server span as its child:\n%s", i+1, describe(spans))
				}
				sv := servers[*srv]
				wantAttrs(t, sv, map[attribute.Key]string{AttrRound: round, AttrInputRequired: asked})
				if sv.SpanContext.TraceID() != call.SpanContext.TraceID() {
					t.Errorf("server span of leg %d in trace %s, want %s", i+1, sv.SpanContext.TraceID(), call.SpanContext.TraceID())
				}
			}
		})
	}
}

// A call stopped at an input_required round and saved as a PendingCall
// keeps its trace: the Client that resumes it (another one, as another
// process would, from the JSON) continues the same trace, its call span
// the child of the first.
func TestResumedPendingCallContinuesTheTrace(t *testing.T) {
	srvRig, first, second := newRig(t), newRig(t), newRig(t)
	s := newTestServer(srvRig.opts, nil)
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)}}
	a := httpClient(t, s, InstrumentClient(&mcp.ClientOptions{Capabilities: caps}, first.opts))
	ctx := testContext(t)
	_, err := a.CallTool(ctx, "ask3", map[string]any{}, &mcp.CallOptions{Manual: true})
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		t.Fatalf("want a PendingCallError, got %v", err)
	}
	saved, err := json.Marshal(pending.Call)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(saved), `"traceparent"`) {
		t.Fatalf("the saved call carries no trace context: %s", saved)
	}
	firstCall := one(t, first.ended(), "tools/call ask3", trace.SpanKindInternal)
	wantAttrs(t, firstCall, map[attribute.Key]string{AttrPending: "true", AttrRounds: "1"})
	noAttrs(t, firstCall, semconv.ErrorTypeKey)

	var loaded mcp.PendingCall
	if err := json.Unmarshal(saved, &loaded); err != nil {
		t.Fatal(err)
	}
	b := httpClient(t, s, InstrumentClient(&mcp.ClientOptions{Elicitation: answerForms}, second.opts))
	answer, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}})
	res, err := b.Resume(ctx, &loaded, mcp.InputResponses{"name": answer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text; txt != "Ada likes green" {
		t.Fatalf("result %q", txt)
	}
	resumed := one(t, second.ended(), "tools/call ask3", trace.SpanKindInternal)
	childOf(t, resumed, firstCall)
	wantAttrs(t, resumed, map[attribute.Key]string{AttrResumed: "true", AttrRounds: "2"})
	legs := find(second.ended(), "tools/call ask3", trace.SpanKindClient)
	if len(legs) != 2 {
		t.Fatalf("%d legs after resuming, want 2", len(legs))
	}
	for _, leg := range legs {
		childOf(t, leg, resumed)
	}
	// Every server span, before and after the hop, is in the one trace.
	servers := find(srvRig.ended(), "tools/call ask3", trace.SpanKindServer)
	if len(servers) != 3 {
		t.Fatalf("%d server spans, want 3", len(servers))
	}
	for _, sv := range servers {
		if sv.SpanContext.TraceID() != firstCall.SpanContext.TraceID() {
			t.Errorf("server span in trace %s, want %s", sv.SpanContext.TraceID(), firstCall.SpanContext.TraceID())
		}
	}
}

// The client's context span, when there is one, is the parent of a
// call's span; a remote parent from _meta wins over the server's
// context span, which is then linked.
func TestCallSpanIsChildOfTheCallersSpan(t *testing.T) {
	r := newRig(t)
	s := newTestServer(r.opts, nil)
	c := httpClient(t, s, InstrumentClient(nil, r.opts))
	ctx, app := r.tp.Tracer("app").Start(testContext(t), "handle order")
	if _, err := c.CallTool(ctx, "echo", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	app.End()
	spans := r.ended()
	childOf(t, one(t, spans, "tools/call echo", trace.SpanKindInternal), one(t, spans, "handle order", trace.SpanKindInternal))
}

// Lists, prompts and resources are traced with the conventions' names:
// a prompt's name is the target, a resource URI an attribute only.
func TestSpanNamesFollowTheConventions(t *testing.T) {
	r := newRig(t)
	s := newTestServer(r.opts, nil)
	c := httpClient(t, s, InstrumentClient(nil, r.opts))
	ctx := testContext(t)
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPrompt(ctx, "greet", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadResource(ctx, "test://doc", nil); err != nil {
		t.Fatal(err)
	}
	spans := r.ended()
	for _, k := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		one(t, spans, "tools/list", k)
		p := one(t, spans, "prompts/get greet", k)
		wantAttrs(t, p, map[attribute.Key]string{semconv.GenAIPromptNameKey: "greet", semconv.McpMethodNameKey: "prompts/get"})
		noAttrs(t, p, semconv.GenAIOperationNameKey, semconv.GenAIToolNameKey)
		res := one(t, spans, "resources/read", k)
		wantAttrs(t, res, map[attribute.Key]string{semconv.McpResourceURIKey: "test://doc"})
	}
}

// A JSON-RPC error sets error.type and rpc.response.status_code to its
// code and the status to Error with its message; an isError result is
// error.type tool_error; both sides agree.
func TestErrorsAreRecordedByCode(t *testing.T) {
	r := newRig(t)
	s := newTestServer(r.opts, nil)
	c := httpClient(t, s, InstrumentClient(nil, r.opts))
	ctx := testContext(t)
	if _, err := c.CallTool(ctx, "fail", map[string]any{}, nil); mcp.ErrorCode(err) != -32042 {
		t.Fatalf("want the -32042 error, got %v", err)
	}
	res, err := c.CallTool(ctx, "broken", map[string]any{}, nil)
	if err != nil || !res.IsError {
		t.Fatalf("want an isError result, got %v, %v", res, err)
	}
	if _, err := c.CallTool(ctx, "nope", map[string]any{}, nil); mcp.ErrorCode(err) != mcp.CodeInvalidParams {
		t.Fatalf("want -32602 for an unknown tool, got %v", err)
	}
	spans := r.ended()
	for _, k := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer, trace.SpanKindInternal} {
		f := one(t, spans, "tools/call fail", k)
		wantAttrs(t, f, map[attribute.Key]string{semconv.ErrorTypeKey: "-32042"})
		if k != trace.SpanKindInternal {
			wantAttrs(t, f, map[attribute.Key]string{semconv.RPCResponseStatusCodeKey: "-32042"})
		}
		if f.Status.Code != codes.Error || f.Status.Description != "deliberate failure" {
			t.Errorf("%s span status %+v, want Error with the message", k, f.Status)
		}
		b := one(t, spans, "tools/call broken", k)
		wantAttrs(t, b, map[attribute.Key]string{semconv.ErrorTypeKey: "tool_error"})
		noAttrs(t, b, semconv.RPCResponseStatusCodeKey)
		if b.Status.Code != codes.Error {
			t.Errorf("%s span of an isError result: status %+v, want Error", k, b.Status)
		}
		wantAttrs(t, one(t, spans, "tools/call nope", k), map[attribute.Key]string{semconv.ErrorTypeKey: "-32602"})
	}
}

// A server span's parent is the context in params._meta; the context's
// own span (an HTTP server span, say) is then a link.
func TestServerSpanParentIsFromMetaAndAmbientIsLinked(t *testing.T) {
	r := newRig(t)
	mw := ServerMiddleware(r.opts)
	var seen trace.SpanContext
	h := mw(func(ctx context.Context, method string, p mcp.Params) (mcp.Result, error) {
		seen = trace.SpanContextFromContext(ctx)
		return mcp.EmptyResult{}, nil
	})
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ctx, ambient := r.tp.Tracer("http").Start(context.Background(), "POST /mcp", trace.WithSpanKind(trace.SpanKindServer))
	p := &mcp.ListRequest{}
	p.Meta.Raw = json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"00-` +
		remote.TraceID().String() + `-` + remote.SpanID().String() + `-01","nested":{"traceparent":"00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"}}`)
	if _, err := h(ctx, mcp.MethodToolsList, p); err != nil {
		t.Fatal(err)
	}
	ambient.End()
	srv := one(t, r.ended(), "tools/list", trace.SpanKindServer)
	if srv.Parent.TraceID() != remote.TraceID() || srv.Parent.SpanID() != remote.SpanID() || !srv.Parent.IsRemote() {
		t.Errorf("parent %v, want the remote %v", srv.Parent, remote)
	}
	if len(srv.Links) != 1 || srv.Links[0].SpanContext.SpanID() != ambient.SpanContext().SpanID() {
		t.Errorf("links %v, want the ambient span", srv.Links)
	}
	if seen.SpanID() != srv.SpanContext.SpanID() {
		t.Errorf("the handler's context holds span %s, want the server span %s", seen.SpanID(), srv.SpanContext.SpanID())
	}
}
