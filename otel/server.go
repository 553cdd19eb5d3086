package otel

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/semconv/v1.39.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// InstrumentServer sets the three server hooks of opts (a nil opts is
// a new one) and returns opts: ServerMiddleware first in
// opts.Middleware (outermost of the application's, so that its span
// covers them), Outgoing first in opts.OutgoingMiddleware, and Observer
// in opts.Observer (called before an observer already set, which is
// kept). Call it before mcp.NewServer:
//
//	srv := mcp.NewServer(impl, otel.InstrumentServer(&mcp.ServerOptions{...}, nil))
func InstrumentServer(opts *mcp.ServerOptions, o *Options) *mcp.ServerOptions {
	if opts == nil {
		opts = &mcp.ServerOptions{}
	}
	opts.Middleware = append([]mcp.ServerMiddleware{ServerMiddleware(o)}, opts.Middleware...)
	opts.OutgoingMiddleware = append([]mcp.ServerRequestMiddleware{Outgoing(o)}, opts.OutgoingMiddleware...)
	observe := Observer(o)
	if prev := opts.Observer; prev != nil {
		opts.Observer = func(e mcp.Event) { observe(e); prev(e) }
	} else {
		opts.Observer = observe
	}
	return opts
}

// ServerMiddleware returns server middleware (mcp.ServerOptions.
// Middleware) that gives every request a SERVER span and records
// mcp.server.operation.duration, as the OpenTelemetry conventions for
// MCP say.
//
// The span's parent is the trace context the client put in
// params._meta (traceparent, tracestate, baggage: whatever the
// propagators read), else the context's own span; when both exist the
// context's span is linked. Its name is "{mcp.method.name} {target}",
// the target being the tool or prompt name (a resource URI stays out of
// the name). Its attributes: mcp.method.name, jsonrpc.request.id,
// mcp.protocol.version, mcp.session.id (sessions of earlier revisions),
// gen_ai.tool.name with gen_ai.operation.name "execute_tool",
// gen_ai.prompt.name, mcp.resource.uri, network.transport,
// network.protocol.name and .version, and roundtrip.round (the leg of a
// multi round-trip call, when known) and roundtrip.input_required (on
// tools/call, prompts/get and resources/read). A JSON-RPC error sets
// error.type and rpc.response.status_code to its code and the span's
// status to Error with its message; a tool's isError result sets
// error.type "tool_error". A handler asking through the asking API
// (mcp.ErrInputRequired) is input_required, not an error.
//
// The metric has the same attributes but the per-request ones
// (jsonrpc.request.id, mcp.session.id, mcp.resource.uri,
// roundtrip.round, network.protocol.version), and names the tool or
// prompt only when the request did not fail with -32602 or -32601 (an
// unknown name would otherwise make a new series).
//
// Nothing of the request's arguments, answers, state or result is
// recorded. Put the middleware first in ServerOptions.Middleware
// (InstrumentServer does).
func ServerMiddleware(o *Options) mcp.ServerMiddleware {
	t := newTelemetry(o)
	dur := t.serverDuration()
	sets := &setCache{}
	return func(next mcp.ServerHandler) mcp.ServerHandler {
		return func(ctx context.Context, method string, params mcp.Params) (mcp.Result, error) {
			start := time.Now()
			var meta *mcp.RequestMeta
			if params != nil {
				meta = params.RequestMeta()
			}
			var raw json.RawMessage
			if meta != nil {
				raw = meta.Raw
			}
			ambient := trace.SpanContextFromContext(ctx)
			pctx := t.prop.Extract(ctx, rawMetaCarrier(raw))
			target, uri := requestTarget(params)
			var ctx2 context.Context
			var span trace.Span
			name := t.names.get(method, target)
			if psc := trace.SpanContextFromContext(pctx); ambient.IsValid() && !psc.Equal(ambient) {
				ctx2, span = t.tracer.Start(pctx, name, serverKind, trace.WithLinks(trace.Link{SpanContext: ambient}))
			} else {
				ctx2, span = t.tracer.Start(pctx, name, serverKind)
			}
			reqCtx := ctx
			ctx = ctx2
			recording, measuring := span.IsRecording(), dur.Enabled(ctx)
			if !recording && !measuring {
				// OpenTelemetry is off: nothing to describe.
				res, err := next(ctx, method, params)
				span.End()
				return res, err
			}
			info, _ := mcp.RequestInfoFrom(ctx)
			k := opKey{method: method, target: target, version: info.ProtocolVersion, transport: string(info.Transport), carrier: carrierMethod(method)}
			if k.version == "" && meta != nil {
				k.version = meta.ProtocolVersion
			}
			var attrs []attribute.KeyValue
			if recording {
				attrs = make([]attribute.KeyValue, 0, 16)
				attrs = append(attrs, semconv.McpMethodNameKey.String(method))
				attrs = targetAttrs(attrs, method, target)
				if k.version != "" {
					attrs = append(attrs, semconv.McpProtocolVersionKey.String(k.version))
				}
				attrs = transportAttrs(attrs, string(info.Transport))
				if id := requestID(info.ID); id != "" {
					attrs = append(attrs, semconv.JSONRPCRequestIDKey.String(id))
				}
				if info.SessionID != "" {
					attrs = append(attrs, semconv.McpSessionIDKey.String(info.SessionID))
				}
				if uri != "" {
					attrs = append(attrs, semconv.McpResourceURIKey.String(uri))
				}
				if info.HTTP != nil {
					if v := protoVersion(info.HTTP.ProtoMajor, info.HTTP.ProtoMinor); v != "" {
						attrs = append(attrs, semconv.NetworkProtocolVersionKey.String(v))
					}
				}
				if info.Round > 0 {
					attrs = append(attrs, AttrRound.Int(info.Round))
				}
			}

			res, err := next(ctx, method, params)

			out := serverOutcome(res, err)
			if k.carrier && k.version != mcp.LatestProtocolVersion {
				bridge(reqCtx, res, span.SpanContext())
			}
			if recording {
				// One call, so that the span's attributes grow once.
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
				k.inputRequired, k.errType, k.code = out.inputRequired, out.errType, out.code
				if out.code == mcp.CodeInvalidParams || out.code == mcp.CodeMethodNotFound {
					k.target = "" // a name the server does not know: no series of its own
				}
				dur.Inst().Record(ctx, seconds(time.Since(start)), metric.WithAttributeSet(sets.get(k)))
			}
			return res, err
		}
	}
}

// requestTarget returns the tool or prompt name of a request (the span
// name's target), or the resource URI of one that names a resource.
func requestTarget(params mcp.Params) (target, uri string) {
	switch p := params.(type) {
	case *mcp.CallToolRequest:
		if p != nil {
			return p.Name, ""
		}
	case *mcp.GetPromptRequest:
		if p != nil {
			return p.Name, ""
		}
	case *mcp.ReadResourceRequest:
		if p != nil {
			return "", p.URI
		}
	case *mcp.SubscribeRequest:
		if p != nil {
			return "", p.URI
		}
	}
	return "", ""
}

// carrierMethod reports whether method may answer input_required.
func carrierMethod(method string) bool {
	switch method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead:
		return true
	}
	return false
}

// requestID is jsonrpc.request.id: the id's string, or its number as
// written; "" for a null or absent id.
func requestID(raw string) string {
	if raw == "" || raw == "null" {
		return ""
	}
	if s, ok := jsonrpc.String([]byte(raw)); ok {
		return s
	}
	return raw
}

func protoVersion(major, minor int) string {
	switch {
	case major == 2:
		return "2"
	case major == 1 && minor == 1:
		return "1.1"
	case major == 1 && minor == 0:
		return "1.0"
	case major == 3:
		return "3"
	}
	return ""
}

// outcome is how a request ended, as the telemetry records it.
type outcome struct {
	inputRequired bool
	task          bool
	pending       bool
	errType       string // error.type; "" on success
	code          int    // the JSON-RPC error code, 0 when none
	message       string // the span status description
}

// serverOutcome sorts what a handler (and the middleware inside this
// one) returned.
func serverOutcome(res mcp.Result, err error) outcome {
	var o outcome
	if err == nil {
		switch r := res.(type) {
		case *mcp.InputRequiredResult:
			o.inputRequired = r != nil
		case *mcp.CallToolResult:
			if r != nil && r.IsError {
				o.errType = "tool_error"
			}
		case *mcp.ExtensionResult:
			o.task = r != nil && r.ResultType == tasks.ResultType
		}
		return o
	}
	if errors.Is(err, mcp.ErrInputRequired) {
		o.inputRequired = true
		return o
	}
	var e *mcp.Error
	switch {
	case errors.Is(err, mcp.ErrTemporarilyUnavailable):
		o.code, o.message = mcp.ErrTemporarilyUnavailable.Code, mcp.ErrTemporarilyUnavailable.Message
	case errors.As(err, &e):
		o.code, o.message = e.Code, e.Message
	default:
		// The server answers any other error with an internal error.
		o.code, o.message = mcp.CodeInternalError, "Internal error"
	}
	o.errType = strconv.Itoa(o.code)
	return o
}

// Outgoing returns server middleware for the requests the server sends
// to a client (mcp.ServerOptions.OutgoingMiddleware): the live
// elicitation/create, sampling/createMessage and roots/list of a
// session of an earlier revision. Each gets a CLIENT span, a child of
// the span of the request it serves, whose context is injected into the
// request's params._meta, and mcp.client.operation.duration is recorded
// for it. That parent is the server span of ServerMiddleware when the
// handler asks through the asking API; when a low-level handler returns
// its own InputRequiredResult, which the SDK sends live between two runs
// of the handler, it is the span of the run that asked (ServerMiddleware
// must then be the first of ServerOptions.Middleware, as
// InstrumentServer makes it, so that both see the request's context). Attributes:
// mcp.method.name, mcp.protocol.version, mcp.session.id,
// network.transport and network.protocol.name; a client's JSON-RPC
// error sets error.type and rpc.response.status_code to its code.
// Nothing of the request's params or the client's answer is recorded.
func Outgoing(o *Options) mcp.ServerRequestMiddleware {
	t := newTelemetry(o)
	dur := t.clientDuration()
	sets := &setCache{}
	return func(next mcp.ServerRequestHandler) mcp.ServerRequestHandler {
		return func(ctx context.Context, req *mcp.ServerRequest) (json.RawMessage, error) {
			start := time.Now()
			if !trace.SpanContextFromContext(ctx).IsValid() {
				ctx = bridgedParent(ctx)
			}
			ctx, span := t.tracer.Start(ctx, req.Method, clientKind)
			recording, measuring := span.IsRecording(), dur.Enabled(ctx)
			if !recording && !measuring {
				res, err := next(ctx, req)
				span.End()
				return res, err
			}
			k := opKey{method: req.Method, version: req.ProtocolVersion}
			if info, ok := mcp.RequestInfoFrom(ctx); ok {
				k.transport = string(info.Transport)
			}
			var attrs []attribute.KeyValue
			if recording {
				attrs = make([]attribute.KeyValue, 0, 7)
				attrs = append(attrs, semconv.McpMethodNameKey.String(req.Method))
				if k.version != "" {
					attrs = append(attrs, semconv.McpProtocolVersionKey.String(k.version))
				}
				attrs = transportAttrs(attrs, k.transport)
				if req.SessionID != "" {
					attrs = append(attrs, semconv.McpSessionIDKey.String(req.SessionID))
				}
			}
			t.prop.Inject(ctx, metaCarrier{&req.Meta})
			res, err := next(ctx, req)
			out := clientOutcome(err)
			if recording {
				span.SetAttributes(errorAttrs(attrs, out.errType, out.code)...)
				if out.errType != "" {
					span.SetStatus(codes.Error, out.message)
				}
			}
			span.End()
			if measuring {
				k.errType, k.code = out.errType, out.metricCode()
				dur.Inst().Record(ctx, seconds(time.Since(start)), metric.WithAttributeSet(sets.get(k)))
			}
			return res, err
		}
	}
}

// clientOutcome sorts the error of a request this side sent: the
// peer's JSON-RPC error (its code when known, see codeErrorType), a
// timeout, a cancellation, or anything else ("_OTHER": a transport
// failure, whose text may name URLs and is not recorded).
func clientOutcome(err error) outcome {
	var o outcome
	if err == nil {
		return o
	}
	var e *mcp.Error
	var ce *mcp.ClientRequestError
	switch {
	case errors.As(err, &e):
		o.code, o.message = e.Code, e.Message
	case errors.As(err, &ce):
		o.code, o.message = ce.Code, ce.Message
	case errors.Is(err, context.DeadlineExceeded):
		o.errType = "timeout"
	case errors.Is(err, context.Canceled):
		o.errType = "cancelled"
	default:
		o.errType = string(mcpconv.ErrorTypeOther)
	}
	if o.code != 0 {
		o.errType = codeErrorType(o.code)
	}
	return o
}

// knownCodes are the JSON-RPC error codes recorded as themselves in
// error.type (and, on metrics, rpc.response.status_code): those of
// JSON-RPC 2.0, those of MCP's revisions (-32002 resource not found and
// -32042 URL elicitation required of the earlier ones, -32020 to -32022
// of 2026-07-28), -32000 (temporarily unavailable: retry) and -32001
// (a request timeout, as other SDKs send it).
var knownCodes = map[int]bool{
	-32700: true, -32600: true, -32601: true, -32602: true, -32603: true,
	-32000: true, -32001: true, -32002: true, -32042: true,
	-32020: true, -32021: true, -32022: true,
}

// codeErrorType is the error.type of the peer's JSON-RPC error code: the
// code itself when it is one of knownCodes, else "_OTHER", so that a
// peer sending a new code on every answer cannot add a metric series
// each time (error.type SHOULD have low cardinality).
func codeErrorType(code int) string {
	if knownCodes[code] {
		return strconv.Itoa(code)
	}
	return string(mcpconv.ErrorTypeOther)
}

// metricCode is the rpc.response.status_code of o on metrics: its code
// when known, else none (spans, which make no series, keep every code).
func (o outcome) metricCode() int {
	if knownCodes[o.code] {
		return o.code
	}
	return 0
}

// On a session of an earlier revision, a low-level handler's own
// InputRequiredResult is answered by the SDK: it sends the input
// requests to the client live, after that run of the handler returned
// and before the next, under the request's context, outside the server
// span. bridged keeps the span of the run that asked, by that context
// (the one ServerMiddleware was given, while the request lasts), so
// that Outgoing makes the live requests its children.
var bridged sync.Map // context.Context → trace.SpanContext

// bridge records (or, once the request no longer asks, forgets) the
// span whose run returned res under the request context ctx.
func bridge(ctx context.Context, res mcp.Result, sc trace.SpanContext) {
	if irr, ok := res.(*mcp.InputRequiredResult); !ok || irr == nil || !sc.IsValid() {
		bridged.Delete(ctx)
		return
	}
	if _, loaded := bridged.Swap(ctx, sc); !loaded {
		context.AfterFunc(ctx, func() { bridged.Delete(ctx) })
	}
}

// bridgedParent returns ctx with the span of the run that asked as its
// parent, when ctx is such a request's context.
func bridgedParent(ctx context.Context) context.Context {
	if v, ok := bridged.Load(ctx); ok {
		return trace.ContextWithSpanContext(ctx, v.(trace.SpanContext))
	}
	return ctx
}
