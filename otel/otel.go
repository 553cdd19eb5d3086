package otel

import (
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
	MetricCallRounds        = "roundtrip.client.call.rounds"
	MetricSessionsActive    = "roundtrip.server.session.active"
	MetricStreamsActive     = "roundtrip.server.stream.active"
	MetricTasksActive       = "roundtrip.server.task.active"
	MetricTasksEnded        = "roundtrip.server.task.ended"
	MetricStateRejected     = "roundtrip.server.request_state.rejected"
	MetricGuardUnavailable  = "roundtrip.server.guard.unavailable"
	metricCallRoundsUnit    = "{round}"
	metricCallRoundsDescrip = "Legs (input_required rounds plus one) a logical tools/call, prompts/get or resources/read took, per call that ended."
)

// durationBuckets are the bucket boundaries the MCP conventions
// recommend for the operation and session durations, in seconds.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// telemetry is what the hooks record with, made once per hook.
type telemetry struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	meter  metric.Meter
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
	case mcp.TransportHTTP, mcp.TransportHTTPSSE:
		return append(dst, semconv.NetworkTransportTCP, semconv.NetworkProtocolNameKey.String("http"))
	case mcp.TransportStream, "stdio", "memory":
		return append(dst, semconv.NetworkTransportPipe)
	}
	return dst
}

// maxNameTarget bounds the target written into a span name: names come
// from the network on the server, and a registered one is at most 128
// bytes.
const maxNameTarget = 128

func spanName(method, target string) string {
	if target == "" || len(target) > maxNameTarget {
		return method
	}
	return method + " " + target
}
