package otel

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// otelEnv are the variables Setup and the exporters read; each test of
// Setup starts with all of them unset.
var otelEnv = []string{
	"OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_PROPAGATORS",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_INSECURE", "OTEL_TRACES_SAMPLER",
}

// cleanEnv unsets the OTEL_* variables for the test and puts the
// globals back afterwards.
func cleanEnv(t *testing.T) {
	for _, k := range otelEnv {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	tp, mp, prop := global.GetTracerProvider(), global.GetMeterProvider(), global.GetTextMapPropagator()
	t.Cleanup(func() {
		if global.GetTracerProvider() != tp {
			global.SetTracerProvider(tp)
		}
		if global.GetMeterProvider() != mp {
			global.SetMeterProvider(mp)
		}
		if global.GetTextMapPropagator() != prop {
			global.SetTextMapPropagator(prop)
		}
	})
}

// receiver collects OTLP exports, over HTTP (protobuf) or gRPC.
type receiver struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string // service.name of each resource
	inst    []string // service.instance.id of each resource
	metrics []string // metric names
	url     string
}

func (rc *receiver) traces(req *coltracepb.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			switch a.Key {
			case "service.name":
				rc.service = append(rc.service, a.GetValue().GetStringValue())
			case "service.instance.id":
				rc.inst = append(rc.inst, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
}

func (rc *receiver) metricsIn(req *colmetricpb.ExportMetricsServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				rc.metrics = append(rc.metrics, m.Name)
			}
		}
	}
}

func (rc *receiver) spanNames() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, s := range rc.spans {
		out = append(out, s.Name)
	}
	return out
}

// httpReceiver serves OTLP/HTTP on loopback.
func httpReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		var req coltracepb.ExportTraceServiceRequest
		if !decodeProto(w, r, &req) {
			return
		}
		rc.traces(&req)
		writeProto(w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		var req colmetricpb.ExportMetricsServiceRequest
		if !decodeProto(w, r, &req) {
			return
		}
		rc.metricsIn(&req)
		writeProto(w, &colmetricpb.ExportMetricsServiceResponse{})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	rc.url = ts.URL
	return rc
}

func decodeProto(w http.ResponseWriter, r *http.Request, m proto.Message) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err == nil {
		err = proto.Unmarshal(b, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	rc *receiver
}

func (g grpcTraces) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.rc.traces(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	colmetricpb.UnimplementedMetricsServiceServer
	rc *receiver
}

func (g grpcMetrics) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	g.rc.metricsIn(req)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// grpcReceiver serves OTLP/gRPC on loopback.
func grpcReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, grpcTraces{rc: rc})
	colmetricpb.RegisterMetricsServiceServer(s, grpcMetrics{rc: rc})
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	rc.url = "http://" + ln.Addr().String()
	return rc
}

// tracedCall runs one instrumented tools/call with the global providers.
func tracedCall(t *testing.T) {
	t.Helper()
	s := newTestServer(nil, nil)
	c := httpClient(t, s, InstrumentClient(nil, nil))
	if _, err := c.CallTool(testContext(t), "echo", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, Setup exports traces and metrics
// over OTLP, by HTTP (the default) or gRPC, under OTEL_SERVICE_NAME.
func TestSetupExportsOverOTLPHTTPAndGRPC(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		receiver func(*testing.T) *receiver
	}{{"", httpReceiver}, {"http/protobuf", httpReceiver}, {"grpc", grpcReceiver}} {
		t.Run("protocol="+tc.protocol, func(t *testing.T) {
			cleanEnv(t)
			rc := tc.receiver(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.url)
			if tc.protocol != "" {
				t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
			}
			t.Setenv("OTEL_SERVICE_NAME", "setup-test")
			shutdown, err := Setup(testContext(t), &SetupOptions{ServiceName: "overridden",
				Attributes: []attribute.KeyValue{attribute.String("service.instance.id", "i-7")}})
			if err != nil {
				t.Fatal(err)
			}
			tracedCall(t)
			if err := shutdown(testContext(t)); err != nil {
				t.Fatal(err)
			}
			names := strings.Join(rc.spanNames(), ",")
			for _, want := range []string{"tools/call echo"} {
				if strings.Count(names, want) != 3 { // call, leg, server
					t.Errorf("exported spans %s, want three %q", names, want)
				}
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			for _, svc := range rc.service {
				if svc != "setup-test" {
					t.Errorf("service.name %q, want OTEL_SERVICE_NAME", svc)
				}
			}
			if len(rc.inst) == 0 || rc.inst[0] != "i-7" {
				t.Errorf("service.instance.id %q, want SetupOptions.Attributes' i-7", rc.inst)
			}
			got := strings.Join(rc.metrics, ",")
			for _, want := range []string{"mcp.server.operation.duration", "mcp.client.operation.duration", MetricCallRounds} {
				if !strings.Contains(got, want) {
					t.Errorf("exported metrics %s, want %s", got, want)
				}
			}
		})
	}
}

// With no OTEL_* variable set, Setup sets nothing and the hooks record
// into the API's no-op providers.
func TestSetupWithNothingSetIsOff(t *testing.T) {
	cleanEnv(t)
	tp, mp := global.GetTracerProvider(), global.GetMeterProvider()
	shutdown, err := Setup(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if global.GetTracerProvider() != tp || global.GetMeterProvider() != mp {
		t.Error("Setup changed the global providers with nothing configured")
	}
	if err := shutdown(testContext(t)); err != nil {
		t.Fatal(err)
	}
}

// OTEL_SDK_DISABLED=true wins over an endpoint.
func TestSetupHonoursSDKDisabled(t *testing.T) {
	cleanEnv(t)
	rc := httpReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.url)
	t.Setenv("OTEL_SDK_DISABLED", "TRUE")
	tp := global.GetTracerProvider()
	shutdown, err := Setup(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tracedCall(t)
	_ = shutdown(testContext(t))
	if global.GetTracerProvider() != tp || len(rc.spanNames()) != 0 {
		t.Errorf("disabled, yet %d spans were exported", len(rc.spanNames()))
	}
}

// An exporter, protocol or propagator Setup does not know is an error,
// not a silent no-op.
func TestSetupRefusesUnknownNames(t *testing.T) {
	for _, env := range [][2]string{
		{"OTEL_TRACES_EXPORTER", "zipkin"},
		{"OTEL_METRICS_EXPORTER", "otlp,carrier-pigeon"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
		{"OTEL_PROPAGATORS", "b3"},
	} {
		t.Run(env[0]+"="+env[1], func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
			t.Setenv(env[0], env[1])
			tp := global.GetTracerProvider()
			bad := env[1][strings.LastIndex(env[1], ",")+1:]
			if _, err := Setup(testContext(t), nil); err == nil || !strings.Contains(err.Error(), bad) {
				t.Errorf("err = %v, want one naming %q", err, bad)
			}
			if global.GetTracerProvider() != tp {
				t.Error("a failed Setup changed the globals")
			}
		})
	}
}

// The console exporters write where SetupOptions.Console says, never to
// standard output by default (a stdio server's protocol channel).
func TestSetupConsoleWritesToConsoleWriter(t *testing.T) {
	cleanEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "console,none")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	var buf bytes.Buffer
	shutdown, err := Setup(testContext(t), &SetupOptions{Console: &buf})
	if err != nil {
		t.Fatal(err)
	}
	tracedCall(t)
	if err := shutdown(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"Name":"tools/call echo"`) {
		t.Errorf("console output lacks the spans:\n%.500s", buf.String())
	}
}

// A reader in SetupOptions.MetricReaders (a scrape endpoint's) turns
// metrics on without any variable, and tracing stays off.
func TestSetupMetricReadersAloneTurnMetricsOn(t *testing.T) {
	cleanEnv(t)
	reader := sdkmetric.NewManualReader()
	tp := global.GetTracerProvider()
	shutdown, err := Setup(testContext(t), &SetupOptions{MetricReaders: []sdkmetric.Reader{reader}})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(testContext(t))
	if global.GetTracerProvider() != tp {
		t.Error("tracing was set up without a traces exporter")
	}
	observe := Observer(nil)
	observe(mcp.Event{Kind: mcp.EventExtension, Extension: tasks.Extension, Name: tasks.EventStarted})
	r := &rig{reader: reader}
	if got := sumOf(t, r.metrics(t), MetricTasksActive, nil); got != 1 {
		t.Errorf("%s = %d through the reader, want 1", MetricTasksActive, got)
	}
}
