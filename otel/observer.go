package otel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/semconv/v1.39.0/mcpconv"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// Observer returns a server observer (mcp.ServerOptions.Observer) that
// turns the server's events into metrics:
//
//   - mcp.server.session.duration (histogram, s): the lifetime of each
//     session of an earlier revision, with mcp.protocol.version;
//   - roundtrip.server.session.active (up/down counter, {session}): the
//     sessions of earlier revisions open now, with mcp.protocol.version;
//   - roundtrip.server.stream.active (up/down counter, {stream}): the
//     long-lived streams open now (subscriptions/listen, a session's GET
//     stream, an HTTP+SSE stream), with roundtrip.stream;
//   - roundtrip.server.task.active (up/down counter, {task}): the tasks
//     running in this process;
//   - roundtrip.server.task.ended (counter, {task}): tasks that reached
//     a terminal status, with roundtrip.task.status (absent when the
//     task ended through another instance);
//   - roundtrip.server.request_state.rejected (counter, {request}):
//     requestStates refused, with mcp.method.name and
//     roundtrip.state.cause (an mcp.StateCause value: malformed, key,
//     seal, expired, binding, principal, used, generation, other);
//   - roundtrip.server.guard.unavailable (counter, {request}): legs
//     answered "temporarily unavailable" because the single-use store
//     could not be asked, with mcp.method.name.
//
// Session ids are not recorded (they would make a series each). It is
// safe for concurrent use and returns at once.
func Observer(o *Options) func(mcp.Event) {
	t := newTelemetry(o)
	sessionDur, err := mcpconv.NewServerSessionDuration(t.meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	handle(err)
	sessions, err := t.meter.Int64UpDownCounter(MetricSessionsActive, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions of earlier protocol revisions open on this server."))
	handle(err)
	streams, err := t.meter.Int64UpDownCounter(MetricStreamsActive, metric.WithUnit("{stream}"),
		metric.WithDescription("Long-lived streams (subscriptions/listen, session GET streams, HTTP+SSE streams) open on this server."))
	handle(err)
	active, err := t.meter.Int64UpDownCounter(MetricTasksActive, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks running in this process."))
	handle(err)
	ended, err := t.meter.Int64Counter(MetricTasksEnded, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks that reached a terminal status."))
	handle(err)
	rejected, err := t.meter.Int64Counter(MetricStateRejected, metric.WithUnit("{request}"),
		metric.WithDescription("requestStates refused, by cause."))
	handle(err)
	guard, err := t.meter.Int64Counter(MetricGuardUnavailable, metric.WithUnit("{request}"),
		metric.WithDescription("Legs answered temporarily unavailable because the single-use store could not be asked."))
	handle(err)

	ctx := context.Background()
	version := func(e mcp.Event) metric.MeasurementOption {
		if e.Revision == "" {
			return metric.WithAttributeSet(attribute.NewSet())
		}
		return metric.WithAttributes(semconv.McpProtocolVersionKey.String(e.Revision))
	}
	return func(e mcp.Event) {
		switch e.Kind {
		case mcp.EventSessionOpened:
			sessions.Add(ctx, 1, version(e))
		case mcp.EventSessionClosed:
			sessions.Add(ctx, -1, version(e))
			if e.Revision != "" {
				sessionDur.Record(ctx, seconds(e.Duration), sessionDur.AttrProtocolVersion(e.Revision))
			} else {
				sessionDur.Record(ctx, seconds(e.Duration))
			}
		case mcp.EventStreamOpened:
			streams.Add(ctx, 1, metric.WithAttributes(AttrStream.String(e.Stream)))
		case mcp.EventStreamClosed:
			streams.Add(ctx, -1, metric.WithAttributes(AttrStream.String(e.Stream)))
		case mcp.EventExtension:
			if e.Extension != tasks.Extension {
				break
			}
			switch e.Name {
			case tasks.EventStarted:
				active.Add(ctx, 1)
			case tasks.EventEnded:
				active.Add(ctx, -1)
				if e.Status != "" {
					ended.Add(ctx, 1, metric.WithAttributes(AttrTaskStatus.String(e.Status)))
				} else {
					ended.Add(ctx, 1)
				}
			}
		case mcp.EventStateRejected:
			rejected.Add(ctx, 1, metric.WithAttributes(semconv.McpMethodNameKey.String(e.Method), AttrStateCause.String(string(e.Cause))))
		case mcp.EventGuardUnavailable:
			guard.Add(ctx, 1, metric.WithAttributes(semconv.McpMethodNameKey.String(e.Method)))
		}
	}
}
