package otel

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/semconv/v1.39.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// InstrumentClient puts ClientMiddleware first in opts.Middleware (a
// nil opts is a new one) and returns opts:
//
//	c := mcp.NewClient(transport, otel.InstrumentClient(&mcp.ClientOptions{...}, nil))
func InstrumentClient(opts *mcp.ClientOptions, o *Options) *mcp.ClientOptions {
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.Middleware = append([]mcp.ClientMiddleware{ClientMiddleware(o)}, opts.Middleware...)
	return opts
}

// ClientMiddleware returns client middleware (mcp.ClientOptions.
// Middleware) that traces what a Client sends:
//
//   - every request gets a CLIENT span, "{mcp.method.name} {target}"
//     (the tool or prompt name), whose context is injected into the
//     request's params._meta, so that the server's span is its child;
//     it records mcp.client.operation.duration;
//   - a logical tools/call, prompts/get or resources/read also gets one
//     INTERNAL span of the same name over all its legs: each leg's
//     CLIENT span (roundtrip.round 1, 2, ...) and the task requests of
//     a call that became a task are its children. It ends when the call
//     does, with roundtrip.rounds, and roundtrip.pending when the call
//     was handed back as a *mcp.PendingCallError; the number of legs is
//     recorded in roundtrip.client.call.rounds;
//   - the call span's context is kept in the PendingCall
//     (mcp.CallInfo.Carry becomes PendingCall.Meta), and a call resumed
//     from it (mcp.Client.Resume, in this process or another) starts its
//     call span as a child of the stored one: the same trace, with
//     roundtrip.resumed. The context's own span, when there is one, is
//     then linked.
//
// Span attributes: mcp.method.name, gen_ai.tool.name with
// gen_ai.operation.name "execute_tool", gen_ai.prompt.name,
// mcp.resource.uri, mcp.protocol.version, network.transport,
// network.protocol.name, roundtrip.round and roundtrip.input_required
// (leg spans); a JSON-RPC error sets error.type and
// rpc.response.status_code to its code and the status to Error with
// its message (a code that is neither JSON-RPC's nor MCP's own sets
// error.type "_OTHER", and the metrics then carry no
// rpc.response.status_code: a server cannot add a series per code), a tool's isError result sets error.type "tool_error", a
// timeout "timeout", a cancellation "cancelled", anything else (a
// transport failure) "_OTHER" without its text. The metrics carry the
// same attributes but mcp.resource.uri and roundtrip.round. Arguments,
// answers, request state and results are never recorded.
func ClientMiddleware(o *Options) mcp.ClientMiddleware {
	t := newTelemetry(o)
	c := &clientTel{telemetry: t, dur: t.clientDuration()}
	var err error
	c.rounds, err = t.meter.Int64Histogram(MetricCallRounds, metric.WithUnit("{round}"),
		metric.WithDescription("Legs a logical tools/call, prompts/get or resources/read took (input_required rounds plus one), per call that ended."),
		metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5, 6, 8, 10, 15, 20))
	handle(err)
	return func(next mcp.ClientHandler) mcp.ClientHandler {
		return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
			return c.send(ctx, req, next)
		}
	}
}

type clientTel struct {
	*telemetry
	dur    mcpconv.ClientOperationDuration
	rounds metric.Int64Histogram
	sets   setCache
}

// callKey stores a logical call's *callState in its CallInfo.
type callKey struct{}

// callState is a logical call's span and how its last leg ended.
type callState struct {
	ctx       context.Context // carries the call span
	span      trace.Span
	toolError bool // the last leg was an isError result
}

// clientTarget is the span name's target of a request the client sends
// (the tool or prompt name; a resource URI or task id is not one).
func clientTarget(req *mcp.ClientRequest) string {
	switch req.Method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet:
		return req.Target
	}
	return ""
}

func (c *clientTel) send(ctx context.Context, req *mcp.ClientRequest, next mcp.ClientHandler) (json.RawMessage, error) {
	start := time.Now()
	parent := ctx
	var cs *callState
	if ci := req.Call; ci != nil {
		cs, _ = ci.Value(callKey{}).(*callState)
		if cs == nil {
			cs = c.startCall(ctx, req, ci)
		}
		parent = cs.ctx
	}
	target := clientTarget(req)
	ctx, span := c.tracer.Start(parent, c.names.get(req.Method, target), clientKind)
	c.prop.Inject(ctx, metaCarrier{&req.Meta})
	recording, measuring := span.IsRecording(), c.dur.Enabled(ctx)
	if !recording && !measuring {
		res, err := next(ctx, req)
		span.End()
		return res, err
	}
	var attrs []attribute.KeyValue
	if recording {
		attrs = make([]attribute.KeyValue, 0, 12)
		attrs = append(attrs, semconv.McpMethodNameKey.String(req.Method))
		attrs = targetAttrs(attrs, req.Method, target)
		if req.Method == mcp.MethodResourcesRead && req.Target != "" {
			attrs = append(attrs, semconv.McpResourceURIKey.String(req.Target))
		}
		if req.Call != nil {
			attrs = append(attrs, AttrRound.Int(req.Call.Round))
		}
	}
	res, err := next(ctx, req)

	out := clientOutcome(err)
	if err == nil {
		var isError bool
		out.inputRequired, isError, out.task = resultMembers(res)
		if isError {
			out.errType = "tool_error"
		}
	}
	if cs != nil {
		cs.toolError = out.errType == "tool_error"
	}
	// The era and the transport are known once the request went out.
	k := opKey{method: req.Method, target: target, version: req.ProtocolVersion, transport: req.Transport,
		carrier: carrierMethod(req.Method), inputRequired: out.inputRequired, errType: out.errType, code: out.metricCode()}
	if recording {
		if k.version != "" {
			attrs = append(attrs, semconv.McpProtocolVersionKey.String(k.version))
		}
		attrs = transportAttrs(attrs, k.transport)
		if k.carrier {
			attrs = append(attrs, AttrInputRequired.Bool(out.inputRequired))
		}
		if out.task {
			attrs = append(attrs, AttrTask.Bool(true))
		}
		attrs = errorAttrs(attrs, out.errType, out.code)
		span.SetAttributes(attrs...)
		if out.errType != "" {
			span.SetStatus(codes.Error, out.message)
		}
	}
	span.End()
	if measuring {
		c.dur.Inst().Record(ctx, seconds(time.Since(start)), metric.WithAttributeSet(c.sets.get(k)))
	}
	return res, err
}

// startCall starts the span of a logical call at its first leg, stores
// it in the call, writes its context into the call's Carry and ends it
// when the call ends.
func (c *clientTel) startCall(ctx context.Context, req *mcp.ClientRequest, ci *mcp.CallInfo) *callState {
	parent := ctx
	target := clientTarget(req)
	var link trace.SpanStartOption
	if len(ci.Resumed) > 0 {
		resumed := ci.Resumed
		rctx := c.prop.Extract(ctx, metaCarrier{&resumed})
		ambient := trace.SpanContextFromContext(ctx)
		if sc := trace.SpanContextFromContext(rctx); sc.IsValid() && !sc.Equal(ambient) {
			parent = rctx
			if ambient.IsValid() {
				link = trace.WithLinks(trace.Link{SpanContext: ambient})
			}
		}
	}
	var span trace.Span
	name := c.names.get(req.Method, target)
	if link != nil {
		ctx, span = c.tracer.Start(parent, name, internalKind, link)
	} else {
		ctx, span = c.tracer.Start(parent, name, internalKind)
	}
	cs := &callState{ctx: ctx, span: span}
	ci.SetValue(callKey{}, cs)
	c.prop.Inject(ctx, metaCarrier{&ci.Carry})
	recording, measuring := span.IsRecording(), c.rounds.Enabled(ctx)
	if !recording && !measuring {
		ci.OnEnd(func(int, error) { span.End() })
		return cs
	}
	var attrs []attribute.KeyValue
	if recording {
		attrs = make([]attribute.KeyValue, 0, 10)
		attrs = append(attrs, semconv.McpMethodNameKey.String(req.Method))
		attrs = targetAttrs(attrs, req.Method, target)
		if req.Method == mcp.MethodResourcesRead && req.Target != "" {
			attrs = append(attrs, semconv.McpResourceURIKey.String(req.Target))
		}
		if len(ci.Resumed) > 0 {
			attrs = append(attrs, AttrResumed.Bool(true))
		}
	}
	method := req.Method
	ci.OnEnd(func(rounds int, err error) {
		var pe *mcp.PendingCallError
		var te *tasks.PendingError
		var out outcome
		switch {
		case err == nil:
			if cs.toolError {
				out.errType = "tool_error"
			}
		case errors.As(err, &pe):
			out.pending = true
		case errors.As(err, &te):
			out.task = true
		default:
			out = clientOutcome(err)
		}
		end := make([]attribute.KeyValue, 0, 6)
		if out.pending {
			end = append(end, AttrPending.Bool(true))
		}
		if out.task {
			end = append(end, AttrTask.Bool(true))
		}
		if recording {
			attrs = errorAttrs(append(attrs, end...), out.errType, out.code)
			span.SetAttributes(append(attrs, AttrRounds.Int(rounds))...)
			if out.errType != "" {
				span.SetStatus(codes.Error, out.message)
			}
		}
		span.End()
		if measuring {
			m := make([]attribute.KeyValue, 0, 8)
			m = append(m, semconv.McpMethodNameKey.String(method))
			m = targetAttrs(m, method, target)
			m = errorAttrs(append(m, end...), out.errType, out.metricCode())
			c.rounds.Record(ctx, int64(rounds), metric.WithAttributes(m...))
		}
	})
	return cs
}
