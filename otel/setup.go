package otel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
)

// SetupOptions adjust Setup. The zero value (and nil) is valid.
type SetupOptions struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES sets it ("" means
	// "unknown_service:" and the program's name); ServiceVersion is
	// service.version likewise.
	ServiceName    string
	ServiceVersion string
	// Attributes are more resource attributes (service.instance.id,
	// deployment.environment.name, ...); OTEL_RESOURCE_ATTRIBUTES wins
	// over them.
	Attributes []attribute.KeyValue
	// MetricReaders are added to the meter provider whatever the
	// environment says: a Prometheus exporter behind a scrape endpoint,
	// a ManualReader in a test. With one, metrics are on even when the
	// environment names no metrics exporter.
	MetricReaders []sdkmetric.Reader
	// Console is where the "console" exporters write; nil means standard
	// error, since a stdio server's standard output is its protocol.
	Console io.Writer
}

// Setup configures the OpenTelemetry globals from the standard
// environment variables and returns the function that flushes and stops
// them (call it before the program exits; it is never nil). With
// nothing set it sets nothing: the hooks of this package then record
// into the API's no-op providers and propagate nothing.
//
// What it reads:
//
//   - OTEL_SDK_DISABLED=true: nothing is set up, whatever else is set;
//   - OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER: comma-separated
//     lists of otlp, console and none; when unset, otlp as soon as
//     OTEL_EXPORTER_OTLP_ENDPOINT (or the signal's own
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)
//     is set, else none;
//   - OTEL_EXPORTER_OTLP_PROTOCOL and the per-signal
//     OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_METRICS_PROTOCOL:
//     http/protobuf (the default) or grpc;
//   - OTEL_PROPAGATORS: a list of tracecontext, baggage and none
//     (default tracecontext,baggage), set when traces are on;
//   - OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: the resource.
//
// The exporters and processors read the rest themselves:
// OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE, _INSECURE (and their per-signal forms),
// OTEL_BSP_SCHEDULE_DELAY and the other batch span processor settings,
// OTEL_METRIC_EXPORT_INTERVAL, OTEL_TRACES_SAMPLER and its argument.
// An unknown exporter, protocol or propagator name is an error, and so
// is an exporter that cannot be made; nothing is set then.
func Setup(ctx context.Context, opts *SetupOptions) (shutdown func(context.Context) error, err error) {
	if opts == nil {
		opts = &SetupOptions{}
	}
	none := func(context.Context) error { return nil }
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return none, nil
	}
	traces, err := exporterNames("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if err != nil {
		return none, err
	}
	metrics, err := exporterNames("OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	if err != nil {
		return none, err
	}
	if len(traces) == 0 && len(metrics) == 0 && len(opts.MetricReaders) == 0 {
		return none, nil
	}
	var prop propagation.TextMapPropagator
	if len(traces) > 0 {
		if prop, err = propagators(); err != nil {
			return none, err
		}
	}
	console := opts.Console
	if console == nil {
		console = os.Stderr
	}

	var stops []func(context.Context) error
	stopAll := func(ctx context.Context) error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i](ctx))
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (func(context.Context) error, error) {
		_ = stopAll(ctx)
		return none, err
	}

	res, err := newResource(ctx, opts)
	if err != nil {
		return fail(err)
	}
	var tp *sdktrace.TracerProvider
	if len(traces) > 0 {
		tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
		for _, name := range traces {
			exp, err := spanExporter(ctx, name, console)
			if err != nil {
				return fail(err)
			}
			stops = append(stops, exp.Shutdown)
			tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
		}
		tp = sdktrace.NewTracerProvider(tpOpts...)
		stops = append(stops, tp.Shutdown)
	}
	var mp *sdkmetric.MeterProvider
	if len(metrics) > 0 || len(opts.MetricReaders) > 0 {
		mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, name := range metrics {
			exp, err := metricExporter(ctx, name, console)
			if err != nil {
				return fail(err)
			}
			stops = append(stops, exp.Shutdown)
			mpOpts = append(mpOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
		}
		for _, r := range opts.MetricReaders {
			mpOpts = append(mpOpts, sdkmetric.WithReader(r))
		}
		mp = sdkmetric.NewMeterProvider(mpOpts...)
		stops = append(stops, mp.Shutdown)
	}
	if tp != nil {
		global.SetTracerProvider(tp)
		global.SetTextMapPropagator(prop)
	}
	if mp != nil {
		global.SetMeterProvider(mp)
	}
	// The providers' Shutdown flushes and stops their exporters; the
	// exporters' own Shutdown, kept for the failure path, is not
	// called twice.
	var final []func(context.Context) error
	if tp != nil {
		final = append(final, tp.Shutdown)
	}
	if mp != nil {
		final = append(final, mp.Shutdown)
	}
	return func(ctx context.Context) error {
		var errs []error
		for _, f := range final {
			errs = append(errs, f(ctx))
		}
		return errors.Join(errs...)
	}, nil
}

// exporterNames reads an OTEL_*_EXPORTER list: the names other than
// none, deduplicated; unset, otlp when an OTLP endpoint is configured.
func exporterNames(key, signalEndpoint string) ([]string, error) {
	v, set := os.LookupEnv(key)
	if !set || strings.TrimSpace(v) == "" {
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv(signalEndpoint) != "" {
			return []string{"otlp"}, nil
		}
		return nil, nil
	}
	var out []string
	for n := range strings.SplitSeq(v, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch n {
		case "", "none":
			continue
		case "otlp", "console":
		default:
			return nil, fmt.Errorf("otel: %s: unknown exporter %q (otlp, console or none)", key, n)
		}
		dup := false
		for _, o := range out {
			dup = dup || o == n
		}
		if !dup {
			out = append(out, n)
		}
	}
	return out, nil
}

// otlpProtocol is the OTLP protocol of a signal: its own variable, else
// the general one, else http/protobuf.
func otlpProtocol(signalKey string) (string, error) {
	p := strings.TrimSpace(os.Getenv(signalKey))
	if p == "" {
		p = strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("otel: unsupported OTLP protocol %q (http/protobuf or grpc)", p)
}

func spanExporter(ctx context.Context, name string, console io.Writer) (sdktrace.SpanExporter, error) {
	if name == "console" {
		return stdouttrace.New(stdouttrace.WithWriter(console))
	}
	proto, err := otlpProtocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if err != nil {
		return nil, err
	}
	if proto == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

func metricExporter(ctx context.Context, name string, console io.Writer) (sdkmetric.Exporter, error) {
	if name == "console" {
		return stdoutmetric.New(stdoutmetric.WithWriter(console))
	}
	proto, err := otlpProtocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
	if err != nil {
		return nil, err
	}
	if proto == "grpc" {
		return otlpmetricgrpc.New(ctx)
	}
	return otlpmetrichttp.New(ctx)
}

// propagators reads OTEL_PROPAGATORS.
func propagators() (propagation.TextMapPropagator, error) {
	v := os.Getenv("OTEL_PROPAGATORS")
	if strings.TrimSpace(v) == "" {
		v = "tracecontext,baggage"
	}
	var ps []propagation.TextMapPropagator
	for n := range strings.SplitSeq(v, ",") {
		switch n = strings.ToLower(strings.TrimSpace(n)); n {
		case "tracecontext":
			ps = append(ps, propagation.TraceContext{})
		case "baggage":
			ps = append(ps, propagation.Baggage{})
		case "none", "":
		default:
			return nil, fmt.Errorf("otel: OTEL_PROPAGATORS: unsupported propagator %q (tracecontext, baggage or none)", n)
		}
	}
	return propagation.NewCompositeTextMapPropagator(ps...), nil
}

// newResource is the SDK's attributes, the service's defaults, then the
// environment (which wins).
func newResource(ctx context.Context, opts *SetupOptions) (*resource.Resource, error) {
	name := opts.ServiceName
	if name == "" {
		name = "unknown_service:" + filepath.Base(os.Args[0])
	}
	defaults := []attribute.KeyValue{semconv.ServiceNameKey.String(name)}
	if opts.ServiceVersion != "" {
		defaults = append(defaults, semconv.ServiceVersionKey.String(opts.ServiceVersion))
	}
	defaults = append(defaults, opts.Attributes...)
	return resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(defaults...),
		resource.WithFromEnv(),
	)
}
