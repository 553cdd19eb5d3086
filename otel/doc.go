// Package otel connects roundtrip's servers and clients to
// OpenTelemetry, following the OpenTelemetry semantic conventions for
// MCP: a span per request on each side, its trace context carried in
// params._meta (traceparent, tracestate, baggage), the
// mcp.server.operation.duration, mcp.client.operation.duration and
// mcp.server.session.duration histograms, and roundtrip's own metrics
// (open sessions, streams and tasks, refused request states, single-use
// store outages, legs per call).
//
// On a server, InstrumentServer sets the three hooks (ServerMiddleware,
// Outgoing, Observer) in the mcp.ServerOptions; on a client,
// InstrumentClient puts ClientMiddleware in the mcp.ClientOptions. A
// multi round-trip call is one client span with a child span per leg,
// each leg's server span the child of its leg, and a call saved as a
// PendingCall and resumed (in another process, by another Client) goes
// on in the same trace. Setup configures the providers from the
// standard OTEL_* environment, and does nothing when none is set.
//
// Nothing of what the application exchanges is recorded: no arguments,
// input responses, request state, results or _meta values beyond the
// trace context; names (tool, prompt, resource URI), ids, versions and
// outcomes only. See docs/design/observability.md.
//
// The package lives in a module of its own, so that the OpenTelemetry
// SDK stays out of the library's module graph.
package otel
