package otel

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// The operation metrics have the conventions' names, unit and
// attributes on both sides; per-request values (ids, session, URI,
// round) stay on the spans.
func TestMetricsCarryTheConventionNamesAndAttributes(t *testing.T) {
	r := newRig(t)
	s := newTestServer(r.opts, nil)
	c := httpClient(t, s, InstrumentClient(&mcp.ClientOptions{Elicitation: answerForms}, r.opts))
	ctx := testContext(t)
	for _, tool := range []string{"echo", "ask3", "fail", "broken", "nope"} {
		_, _ = c.CallTool(ctx, tool, map[string]any{}, nil)
	}
	if _, err := c.ReadResource(ctx, "test://doc", nil); err != nil {
		t.Fatal(err)
	}
	rm := r.metrics(t)
	base := map[attribute.Key]string{
		semconv.McpMethodNameKey:       "tools/call",
		semconv.GenAIOperationNameKey:  "execute_tool",
		semconv.McpProtocolVersionKey:  mcp.LatestProtocolVersion,
		semconv.NetworkTransportKey:    "tcp",
		semconv.NetworkProtocolNameKey: "http",
	}
	with := func(kv ...string) map[attribute.Key]string {
		m := map[attribute.Key]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[attribute.Key(kv[i])] = kv[i+1]
		}
		return m
	}
	for _, name := range []string{"mcp.server.operation.duration", "mcp.client.operation.duration"} {
		m, ok := metricNamed(rm, name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if m.Unit != "s" {
			t.Errorf("%s unit %q, want s", name, m.Unit)
		}
		for _, tc := range []struct {
			attrs map[attribute.Key]string
			n     uint64
		}{
			{with("gen_ai.tool.name", "echo", "roundtrip.input_required", "false"), 1},
			{with("gen_ai.tool.name", "ask3", "roundtrip.input_required", "true"), 2},
			{with("gen_ai.tool.name", "ask3", "roundtrip.input_required", "false"), 1},
			{with("gen_ai.tool.name", "fail", "error.type", "-32042", "rpc.response.status_code", "-32042"), 1},
			{with("gen_ai.tool.name", "broken", "error.type", "tool_error"), 1},
			{map[attribute.Key]string{semconv.McpMethodNameKey: "resources/read", AttrInputRequired: "false"}, 1},
		} {
			if got := histCount(t, rm, name, tc.attrs); got != tc.n {
				t.Errorf("%s %v: %d values, want %d", name, tc.attrs, got, tc.n)
			}
		}
		for _, p := range histPoints[float64](t, rm, name, map[attribute.Key]string{semconv.GenAIToolNameKey: "echo"}) {
			if p.Attributes.HasValue(semconv.ErrorTypeKey) {
				t.Errorf("%s: a success carries error.type", name)
			}
		}
	}
	// An unknown tool fails with -32602 and is counted without its name
	// on the server, which would otherwise make a series per name sent.
	if got := histCount(t, rm, "mcp.server.operation.duration", map[attribute.Key]string{semconv.ErrorTypeKey: "-32602"}); got != 1 {
		t.Errorf("unknown tool: %d values, want 1", got)
	}
	if got := histCount(t, rm, "mcp.server.operation.duration", map[attribute.Key]string{semconv.GenAIToolNameKey: "nope"}); got != 0 {
		t.Errorf("the unknown tool's name is an attribute of the server metric")
	}
	// Legs per logical call.
	ask := histPoints[int64](t, rm, MetricCallRounds, map[attribute.Key]string{semconv.GenAIToolNameKey: "ask3"})
	if len(ask) != 1 || ask[0].Count != 1 || ask[0].Sum != 3 {
		t.Errorf("%s for ask3: %+v, want one call of 3 legs", MetricCallRounds, ask)
	}
	echo := histPoints[int64](t, rm, MetricCallRounds, map[attribute.Key]string{semconv.GenAIToolNameKey: "echo"})
	if len(echo) != 1 || echo[0].Sum != 1 {
		t.Errorf("%s for echo: %+v, want one call of 1 leg", MetricCallRounds, echo)
	}
	failed := histPoints[int64](t, rm, MetricCallRounds, map[attribute.Key]string{semconv.GenAIToolNameKey: "fail", semconv.ErrorTypeKey: "-32042"})
	if len(failed) != 1 {
		t.Errorf("%s for a failed call: %+v, want it with error.type", MetricCallRounds, failed)
	}
	// What is per request stays out of every metric.
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, set := range pointSets(m) {
				for _, k := range []attribute.Key{semconv.JSONRPCRequestIDKey, semconv.McpSessionIDKey, semconv.McpResourceURIKey, AttrRound} {
					if set.HasValue(k) {
						t.Errorf("metric %s has the per-request attribute %s", m.Name, k)
					}
				}
			}
		}
	}
}

// The observer turns each kind of event into its metric.
func TestObserverRecordsEveryEventKind(t *testing.T) {
	r := newRig(t)
	observe := Observer(r.opts)
	for _, e := range []mcp.Event{
		{Kind: mcp.EventSessionOpened, Revision: "2025-11-25", SessionID: "s1"},
		{Kind: mcp.EventSessionOpened, Revision: "2025-11-25", SessionID: "s2"},
		{Kind: mcp.EventSessionClosed, Revision: "2025-11-25", SessionID: "s1", Duration: 1500 * time.Millisecond},
		{Kind: mcp.EventStreamOpened, Stream: "listen"},
		{Kind: mcp.EventStreamOpened, Stream: "get"},
		{Kind: mcp.EventStreamClosed, Stream: "get"},
		{Kind: mcp.EventExtension, Extension: tasks.Extension, Name: tasks.EventStarted},
		{Kind: mcp.EventExtension, Extension: tasks.Extension, Name: tasks.EventStarted},
		{Kind: mcp.EventExtension, Extension: tasks.Extension, Name: tasks.EventEnded, Status: string(tasks.Completed)},
		{Kind: mcp.EventStateRejected, Method: "tools/call", Cause: mcp.StateCauseSeal},
		{Kind: mcp.EventStateRejected, Method: "tools/call", Cause: mcp.StateCauseSeal},
		{Kind: mcp.EventStateRejected, Method: "prompts/get", Cause: mcp.StateCauseExpired},
		{Kind: mcp.EventGuardUnavailable, Method: "tools/call"},
	} {
		observe(e)
	}
	rm := r.metrics(t)
	v := map[attribute.Key]string{semconv.McpProtocolVersionKey: "2025-11-25"}
	for _, tc := range []struct {
		name  string
		attrs map[attribute.Key]string
		want  int64
	}{
		{MetricSessionsActive, v, 1},
		{MetricStreamsActive, map[attribute.Key]string{AttrStream: "listen"}, 1},
		{MetricStreamsActive, map[attribute.Key]string{AttrStream: "get"}, 0},
		{MetricTasksActive, nil, 1},
		{MetricTasksEnded, map[attribute.Key]string{AttrTaskStatus: "completed"}, 1},
		{MetricStateRejected, map[attribute.Key]string{semconv.McpMethodNameKey: "tools/call", AttrStateCause: "seal"}, 2},
		{MetricStateRejected, map[attribute.Key]string{semconv.McpMethodNameKey: "prompts/get", AttrStateCause: "expired"}, 1},
		{MetricGuardUnavailable, map[attribute.Key]string{semconv.McpMethodNameKey: "tools/call"}, 1},
	} {
		if got := sumOf(t, rm, tc.name, tc.attrs); got != tc.want {
			t.Errorf("%s %v = %d, want %d", tc.name, tc.attrs, got, tc.want)
		}
	}
	p := histPoints[float64](t, rm, "mcp.server.session.duration", v)
	if len(p) != 1 || p[0].Count != 1 || p[0].Sum != 1.5 {
		t.Errorf("mcp.server.session.duration %+v, want one session of 1.5 s", p)
	}
	m, _ := metricNamed(rm, "mcp.server.session.duration")
	if m.Unit != "s" {
		t.Errorf("session duration unit %q", m.Unit)
	}
}

// A requestState the server refuses is counted by its cause, end to
// end.
func TestRejectedStatesAreCountedByCause(t *testing.T) {
	r := newRig(t)
	s := newTestServer(r.opts, nil)
	c := httpClient(t, s, InstrumentClient(&mcp.ClientOptions{Elicitation: answerForms}, r.opts))
	_, err := c.CallTool(testContext(t), "ask3", map[string]any{}, &mcp.CallOptions{RequestState: "not-a-sealed-state"})
	if mcp.ErrorCode(err) != mcp.CodeInvalidParams {
		t.Fatalf("want the -32602 of a bad state, got %v", err)
	}
	want := map[attribute.Key]string{semconv.McpMethodNameKey: "tools/call", AttrStateCause: string(mcp.StateCauseMalformed)}
	if got := sumOf(t, r.metrics(t), MetricStateRejected, want); got != 1 {
		t.Errorf("%s %v = %d, want 1", MetricStateRejected, want, got)
	}
}
