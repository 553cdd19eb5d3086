package otel

import (
	"strconv"
	"sync"
	"time"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/semconv/v1.39.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ScopeName is the instrumentation scope of every span and metric this
// package records.
const ScopeName = "github.com/roundtrip-mcp/roundtrip/otel"

// Options choose where spans, metrics and trace context go. The zero
// value (and a nil *Options) uses the OpenTelemetry globals, which
// Setup configures; the globals are read when a hook is built, but
// they delegate, so a hook built before Setup records once Setup has
// run.
type Options struct {
	// TracerProvider makes the spans; nil means the global one.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments; nil means the global one.
	MeterProvider metric.MeterProvider
	// Propagators read trace context from a request's params._meta and
	// write it there; nil means the global propagator (W3C trace
	// context and baggage after Setup).
	Propagators propagation.TextMapPropagator
}

// The attributes of this package beyond the semantic conventions.
const (
	// AttrRound is the leg of a multi round-trip call a request is (1,
	// 2, ...): on server spans when the request carried a sealed state
	// or is a first leg of a method that can need input, on client leg
	// spans always.
	AttrRound = attribute.Key("roundtrip.round")
	// AttrInputRequired tells whether a tools/call, prompts/get or
	// resources/read was answered with an InputRequiredResult (the
	// client must answer and retry): on server spans and client leg
	// spans, and on mcp.server.operation.duration.
	AttrInputRequired = attribute.Key("roundtrip.input_required")
	// AttrRounds is the number of legs a logical call took (client call
	// spans).
	AttrRounds = attribute.Key("roundtrip.rounds")
	// AttrPending is true on a client call span whose call was handed
	// back as a *mcp.PendingCallError (to be resumed, maybe elsewhere).
	AttrPending = attribute.Key("roundtrip.pending")
	// AttrResumed is true on a client call span that resumes a
	// PendingCall (mcp.Client.Resume).
	AttrResumed = attribute.Key("roundtrip.resumed")
	// AttrTask is true on a span whose tools/call was answered with a
	// task (the tasks extension).
	AttrTask = attribute.Key("roundtrip.task")
	// AttrStream is the kind of a long-lived stream (mcp.Event.Stream:
	// "listen", "get", "http+sse") on roundtrip.server.stream.active.
	AttrStream = attribute.Key("roundtrip.stream")
	// AttrTaskStatus is a task's terminal status on
	// roundtrip.server.task.ended.
	AttrTaskStatus = attribute.Key("roundtrip.task.status")
	// AttrStateCause is why a requestState was refused (an
	// mcp.StateCause value) on roundtrip.server.request_state.rejected.
	AttrStateCause = attribute.Key("roundtrip.state.cause")
)

// The names of the metrics of this package beyond the semantic
// conventions' mcp.server.operation.duration,
// mcp.client.operation.duration and mcp.server.session.duration.
const (
	MetricCallRounds       = "roundtrip.client.call.rounds"
	MetricSessionsActive   = "roundtrip.server.session.active"
	MetricStreamsActive    = "roundtrip.server.stream.active"
	MetricTasksActive      = "roundtrip.server.task.active"
	MetricTasksEnded       = "roundtrip.server.task.ended"
	MetricStateRejected    = "roundtrip.server.request_state.rejected"
	MetricGuardUnavailable = "roundtrip.server.guard.unavailable"
)

// durationBuckets are the bucket boundaries the MCP conventions
// recommend for the operation and session durations, in seconds.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// telemetry is what the hooks record with, made once per hook.
type telemetry struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	meter  metric.Meter
	names  nameCache
}

func newTelemetry(o *Options) *telemetry {
	var tp trace.TracerProvider
	var mp metric.MeterProvider
	var prop propagation.TextMapPropagator
	if o != nil {
		tp, mp, prop = o.TracerProvider, o.MeterProvider, o.Propagators
	}
	if tp == nil {
		tp = global.GetTracerProvider()
	}
	if mp == nil {
		mp = global.GetMeterProvider()
	}
	if prop == nil {
		prop = global.GetTextMapPropagator()
	}
	return &telemetry{
		tracer: tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:   prop,
		meter:  mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL)),
	}
}

// handle reports an instrument that could not be made to the global
// error handler; the hook then records nothing for it (a no-op
// instrument).
func handle(err error) {
	if err != nil {
		global.Handle(err)
	}
}

func (t *telemetry) serverDuration() mcpconv.ServerOperationDuration {
	h, err := mcpconv.NewServerOperationDuration(t.meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	handle(err)
	return h
}

func (t *telemetry) clientDuration() mcpconv.ClientOperationDuration {
	h, err := mcpconv.NewClientOperationDuration(t.meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	handle(err)
	return h
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// transportAttrs are network.transport and network.protocol.name of a
// transport as the library names it (mcp.RequestInfo.Transport on the
// server, mcp.ClientRequest.Transport on the client): HTTP runs over
// TCP, a byte stream (stdio, the in-memory pair, a socket served with
// ServeStream) is a pipe.
func transportAttrs(dst []attribute.KeyValue, transport string) []attribute.KeyValue {
	switch transport {
	case string(mcp.TransportHTTP), string(mcp.TransportHTTPSSE):
		return append(dst, semconv.NetworkTransportTCP, semconv.NetworkProtocolNameKey.String("http"))
	case string(mcp.TransportStream), "stdio", "memory":
		return append(dst, semconv.NetworkTransportPipe)
	}
	return dst
}

// maxNameTarget bounds the target written into a span name: names come
// from the network on the server, and a registered one is at most 128
// bytes.
const maxNameTarget = 128

// spanName is "{method} {target}", or the method alone when there is
// no target (or an oversized one).
func spanName(method, target string) string {
	if target == "" || len(target) > maxNameTarget {
		return method
	}
	return method + " " + target
}

// nameCache keeps the span names made of a method and a target, so
// that a request does not build its name again.
type nameCache struct {
	mu sync.RWMutex
	m  map[[2]string]string
}

func (c *nameCache) get(method, target string) string {
	if target == "" || len(target) > maxNameTarget {
		return method
	}
	k := [2]string{method, target}
	c.mu.RLock()
	n, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return n
	}
	n = spanName(method, target)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[[2]string]string)
	}
	if len(c.m) < maxCachedSets {
		c.m[k] = n
	}
	c.mu.Unlock()
	return n
}

// The span start options that do not depend on the request, made once.
var (
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	clientKind   = trace.WithSpanKind(trace.SpanKindClient)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// opKey names the attribute set of one operation-duration point: the
// few values it is made of, so that the set is built once per
// combination rather than per request.
type opKey struct {
	method, target, version, transport, errType string
	code                                        int
	carrier, inputRequired                      bool
}

// maxCachedSets bounds a cache of attribute sets; past it sets are
// built per request (the SDK's cardinality limit still applies).
const maxCachedSets = 1024

// setCache keeps the attribute sets of the operation metrics.
type setCache struct {
	mu sync.RWMutex
	m  map[opKey]attribute.Set
}

// get returns the set of k.
func (c *setCache) get(k opKey) attribute.Set {
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = opSet(k)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[opKey]attribute.Set)
	}
	if len(c.m) < maxCachedSets {
		c.m[k] = s
	}
	c.mu.Unlock()
	return s
}

// opSet builds the attributes of mcp.server.operation.duration and
// mcp.client.operation.duration.
func opSet(k opKey) attribute.Set {
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, semconv.McpMethodNameKey.String(k.method))
	attrs = targetAttrs(attrs, k.method, k.target)
	if k.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(k.version))
	}
	attrs = transportAttrs(attrs, k.transport)
	if k.carrier {
		attrs = append(attrs, AttrInputRequired.Bool(k.inputRequired))
	}
	attrs = errorAttrs(attrs, k.errType, k.code)
	return attribute.NewSet(attrs...)
}

// targetAttrs are the attributes naming the tool or prompt a request
// is about: gen_ai.tool.name with gen_ai.operation.name execute_tool,
// or gen_ai.prompt.name.
func targetAttrs(dst []attribute.KeyValue, method, target string) []attribute.KeyValue {
	if target == "" {
		return dst
	}
	switch method {
	case mcp.MethodToolsCall:
		return append(dst, semconv.GenAIToolNameKey.String(target), semconv.GenAIOperationNameExecuteTool)
	case mcp.MethodPromptsGet:
		return append(dst, semconv.GenAIPromptNameKey.String(target))
	}
	return dst
}

// errorAttrs are error.type and, for a JSON-RPC error,
// rpc.response.status_code.
func errorAttrs(dst []attribute.KeyValue, errType string, code int) []attribute.KeyValue {
	if errType == "" {
		return dst
	}
	dst = append(dst, semconv.ErrorTypeKey.String(errType))
	if code != 0 {
		dst = append(dst, semconv.RPCResponseStatusCodeKey.String(strconv.Itoa(code)))
	}
	return dst
}
