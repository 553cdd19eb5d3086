package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/roundtrip-mcp/roundtrip/gateway"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/otel"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// gwUpstreamLegacyOnly serves testServer as a 2025-11-25 server would: a
// POST that is neither initialize nor part of a session is a plain 400, so
// the gateway's client falls back to a 2025 session.
func gwUpstreamLegacyOnly(t *testing.T) string {
	t.Helper()
	srv := testServer()
	h := mcp.NewHTTPHandler(srv, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			body, _ := io.ReadAll(r.Body)
			if !bytes.Contains(body, []byte(`"initialize"`)) {
				http.Error(w, "Bad Request: No valid session ID provided", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL
}

// gatewayRun is a "roundtrip gateway --http 127.0.0.1:0" running in the
// test process.
type gatewayRun struct {
	url    string // http://ADDR/mcp
	base   string // http://ADDR
	stderr *testutil.Buffer
	stop   func() int // cancels (as SIGTERM does) and returns the exit status
}

// startGateway runs the gateway on config until the test ends (or stop).
func startGateway(t *testing.T, config string, extra ...string) *gatewayRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errw := &testutil.Buffer{}
	done := make(chan int, 1)
	go func() {
		code := run(ctx, append([]string{"gateway", "-c", config, "--http", "127.0.0.1:0"}, extra...), strings.NewReader(""), pw, errw)
		pw.CloseWithError(fmt.Errorf("exited %d", code))
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no listening line: %v\nstderr:\n%s", err, errw.String())
	}
	go io.Copy(io.Discard, pr)
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/mcp") {
		t.Fatalf("first line %q, want listening on http://127.0.0.1:PORT/mcp", line)
	}
	g := &gatewayRun{url: u, base: strings.TrimSuffix(u, "/mcp"), stderr: errw}
	var code *int
	g.stop = func() int {
		if code == nil {
			cancel()
			c := <-done
			code = &c
		}
		return *code
	}
	t.Cleanup(func() {
		g.stop()
		if t.Failed() {
			t.Logf("gateway stderr:\n%s", errw.String())
		}
	})
	return g
}

// waitUp waits until /readyz reports every upstream up.
func (g *gatewayRun) waitUp(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, "every upstream up", func() bool {
		resp, err := http.Get(g.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// gwConnect connects a roundtrip client to the gateway.
func gwConnect(t *testing.T, url string, opts *mcp.ClientOptions, header http.Header) *mcp.Client {
	t.Helper()
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{Header: header}), opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func toolNames(t *testing.T, c *mcp.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var names []string
	for tool, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// TestGatewayServesEveryUpstream: a stdio upstream (this test binary), a
// 2026-07-28 HTTP upstream and a 2025-only one behind one endpoint; the
// CLI itself, in both eras, lists and calls through it, answering the
// upstreams' questions; /readyz names each upstream; cancelling (SIGTERM
// in the program) drains and exits 0.
func TestGatewayServesEveryUpstream(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	modern, _ := httpServer(t)
	legacy := gwUpstreamLegacyOnly(t)
	dir := t.TempDir()
	cfg := writeFile(t, filepath.Join(dir, "gw.json"), fmt.Sprintf(`{
	  // the CLI's own format, comments and all
	  "mcpServers": {
	    "local": {"command": %q, "args": ["serve-stdio"], "env": {"GW_TEST": "from-config"}},
	    "modern": {"type": "http", "url": %q},
	    "old": {"url": %q}
	  },
	  "gateway": {"timeout": "20s", "servers": {"old": {"prefix": "legacy"}}}
	}`, self, modern, legacy))
	g := startGateway(t, cfg)
	g.waitUp(t)

	resp, err := http.Get(g.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Ready     bool `json:"ready"`
		Upstreams []struct {
			Name, State, ProtocolVersion string
		} `json:"upstreams"`
	}
	json.NewDecoder(resp.Body).Decode(&ready)
	resp.Body.Close()
	got := map[string]string{}
	for _, u := range ready.Upstreams {
		got[u.Name] = u.State + " " + u.ProtocolVersion
	}
	if !ready.Ready || got["local"] != "up 2026-07-28" || got["modern"] != "up 2026-07-28" || !strings.HasPrefix(got["old"], "up 2025-") {
		t.Errorf("/readyz = %+v, want the three up (old in a 2025 revision)", ready)
	}

	c := gwConnect(t, g.url, nil, nil)
	names := strings.Join(toolNames(t, c), " ")
	for _, want := range []string{"local__echo", "modern__provision", "legacy__deploy", "local__env"} {
		if !strings.Contains(names, want) {
			t.Errorf("tools lack %s: %s", want, names)
		}
	}
	// The config's env reaches the stdio upstream.
	cli(t, "", "call", "--url", g.url, "local__env", "name=GW_TEST").must(t, 0, "GW_TEST=from-config")
	// A 2026-07-28 client answers a 2025 upstream's live questions as
	// input_required rounds, and a modern upstream's rounds as they are.
	cli(t, "eu-west-1\n7\n", "call", "--url", g.url, "legacy__provision", "name=a").must(t, 0, "Provisioned a in eu-west-1 with 7 GB.")
	cli(t, "us-east-1\n3\n", "call", "--url", g.url, "modern__provision", "name=b").must(t, 0, "Provisioned b in us-east-1 with 3 GB.")
	// A 2025 client answers a 2026-07-28 upstream's rounds live.
	r := cli(t, "ap-south-1\n9\n", "--legacy", "call", "--url", g.url, "local__provision", "name=c")
	r.must(t, 0, "Provisioned c in ap-south-1 with 9 GB.")
	cli(t, "", "--legacy", "discover", "--url", g.url).must(t, 0, "roundtrip-gateway")
	// Prompts and resources come through too, with their questions.
	cli(t, "", "prompts", "--url", g.url).must(t, 0, "modern__greet", "legacy__greet")
	cli(t, "1\n", "get", "--url", g.url, "modern__greet", "name=Ada").must(t, 0, "Greet Ada in a warm tone.")
	cli(t, "2\n", "get", "--url", g.url, "legacy__greet", "name=Bob").must(t, 0, "Greet Bob in a formal tone.")
	// test://readme is exposed by all three, so each is rewritten and
	// read from its own upstream.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := 0
	for res, err := range c.Resources(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.URI, "roundtrip-gateway://") {
			t.Errorf("a URI three upstreams share is not rewritten: %s", res.URI)
			continue
		}
		rr, err := c.ReadResource(ctx, res.URI, nil)
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "Read me first." {
			t.Errorf("read %s: %v %+v", res.URI, err, rr)
		}
		read++
	}
	if read != 3 {
		t.Errorf("read %d resources, want 3", read)
	}

	if code := g.stop(); code != 0 {
		t.Errorf("exit status %d after cancel, want 0", code)
	}
	logs := g.stderr.String()
	for _, want := range []string{`"msg":"serving"`, `"msg":"draining"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks the JSON log %s:\n%s", want, logs)
		}
	}
}

// TestGatewayHidesWhatAPrincipalMayNotUse: with bearer auth from a tokens
// file and a per-tool allow list, a token without the scope sees no such
// tool and gets, calling it, the answer an unknown tool gets.
func TestGatewayHidesWhatAPrincipalMayNotUse(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	dir := t.TempDir()
	tokens := writeFile(t, filepath.Join(dir, "tokens.json"), `{"tok-admin": {"subject": "ada", "scopes": ["math"]}, "tok-user": {"subject": "bob"}}`)
	cfg := writeFile(t, filepath.Join(dir, "gw.json"), fmt.Sprintf(`{"mcpServers": {"s": {"url": %q}},
	  "gateway": {"auth": {"tokensFile": %q}, "servers": {"s": {"tools": {"add": {"scopes": ["math"]}}}}}}`, url, tokens))
	g := startGateway(t, cfg)
	g.waitUp(t)

	resp, err := http.Post(g.url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	// /readyz answers probes (no token) with the status alone, and names
	// the upstreams to a request whose token verifies.
	for _, tc := range []struct {
		token string
		names bool
	}{{"", false}, {"nope", false}, {"tok-user", true}} {
		req, _ := http.NewRequest(http.MethodGet, g.base+"/readyz", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"upstreams"`) != tc.names {
			t.Errorf("/readyz with token %q: %d %s; want 200, the upstreams named: %v", tc.token, resp.StatusCode, body, tc.names)
		}
	}
	admin := gwConnect(t, g.url, nil, http.Header{"Authorization": {"Bearer tok-admin"}})
	user := gwConnect(t, g.url, nil, http.Header{"Authorization": {"Bearer tok-user"}})
	if names := strings.Join(toolNames(t, admin), " "); !strings.Contains(names, "s__add") {
		t.Errorf("the admin does not see s__add: %s", names)
	}
	if names := strings.Join(toolNames(t, user), " "); strings.Contains(names, "s__add") || !strings.Contains(names, "s__echo") {
		t.Errorf("the user's tools: %s, want s__echo and no s__add", names)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := admin.CallTool(ctx, "s__add", map[string]any{"a": 2, "b": 3}, nil)
	if err != nil || res.IsError {
		t.Fatalf("admin's call: %v %+v", err, res)
	}
	_, hidden := user.CallTool(ctx, "s__add", map[string]any{"a": 2, "b": 3}, nil)
	_, unknown := user.CallTool(ctx, "s__adx", map[string]any{"a": 2, "b": 3}, nil)
	if hidden == nil || unknown == nil {
		t.Fatalf("hidden: %v, unknown: %v; want both refused", hidden, unknown)
	}
	if h, u := strings.ReplaceAll(hidden.Error(), "s__add", "NAME"), strings.ReplaceAll(unknown.Error(), "s__adx", "NAME"); h != u {
		t.Errorf("a hidden tool is told apart from an unknown one:\n hidden:  %s\n unknown: %s", h, u)
	}
}

// TestGatewayStdio: --stdio serves the aggregate on stdin and stdout, and
// ends when stdin does.
func TestGatewayStdio(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	cfg := writeFile(t, filepath.Join(t.TempDir(), "gw.json"), fmt.Sprintf(`{"mcpServers": {"s": {"url": %q}}}`, url))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cli(t, "", "tools", "--", self, "run-cli", "gateway", "-c", cfg, "--stdio").must(t, 0, "s__echo")
	r := cli(t, "eu-west-1\n1\n", "call", "s__provision", "name=x", "--", self, "run-cli", "gateway", "-c", cfg, "--stdio")
	r.must(t, 0, "Provisioned x in eu-west-1 with 1 GB.")
}

// TestGatewayDrainsOnSIGTERM: the program itself (signals and all) under
// SIGTERM stops being ready, lets the call in flight finish, and exits 0.
func TestGatewayDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	cfg := writeFile(t, filepath.Join(t.TempDir(), "gw.json"), fmt.Sprintf(`{"mcpServers": {"s": {"url": %q}}, "gateway": {"drainTimeout": "20s"}}`, url))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "run-cli", "gateway", "-c", cfg, "--http", "127.0.0.1:0")
	var errw testutil.Buffer
	cmd.Stderr = &errw
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v\n%s", err, errw.String())
	}
	g := &gatewayRun{url: strings.TrimPrefix(strings.TrimSpace(line), "listening on ")}
	g.base = strings.TrimSuffix(g.url, "/mcp")
	g.waitUp(t)
	c := gwConnect(t, g.url, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	slow := make(chan outcome, 1)
	go func() {
		res, err := c.CallTool(ctx, "s__slow", map[string]any{}, nil)
		slow <- outcome{res, err}
	}()
	testutil.Eventually(t, 10*time.Second, "the slow call in flight upstream", func() bool {
		return inFlight(g.base) > 0
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "/readyz 503 while draining", func() bool {
		resp, err := http.Get(g.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	o := <-slow
	if o.err != nil || o.res.IsError || len(o.res.Content) == 0 {
		t.Fatalf("the call in flight during the drain: %v %+v", o.err, o.res)
	}
	if tc, ok := o.res.Content[0].(*mcp.TextContent); !ok || tc.Text != "done" {
		t.Errorf("the call in flight got %+v, want done", o.res.Content[0])
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the gateway exited with %v after SIGTERM, want 0\n%s", err, errw.String())
	}
}

// inFlight reads the calls in flight upstream from /readyz.
func inFlight(base string) int {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var ready struct {
		Upstreams []struct {
			InFlight int `json:"inFlight"`
		} `json:"upstreams"`
	}
	json.NewDecoder(resp.Body).Decode(&ready)
	n := 0
	for _, u := range ready.Upstreams {
		n += u.InFlight
	}
	return n
}

// TestGatewayConfigErrors: what is wrong in the command line or the
// config is a usage error naming it, before anything is started.
func TestGatewayConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := `"mcpServers": {"s": {"url": "http://127.0.0.1:1/mcp"}}`
	for _, tc := range []struct {
		name, config string
		args         []string
		has          string
	}{
		{name: "no mode", config: `{` + good + `}`, has: "give one of --http ADDR and --stdio"},
		{name: "both modes", config: `{` + good + `}`, args: []string{"--stdio", "--http", ":0"}, has: "give one of"},
		{name: "unknown member", config: `{` + good + `, "gateway": {"servers": {"s": {"alow": {}}}}}`, args: []string{"--stdio"}, has: `unknown field "alow"`},
		{name: "unknown server", config: `{` + good + `, "gateway": {"servers": {"t": {}}}}`, args: []string{"--stdio"}, has: `gateway.servers has "t"`},
		{name: "bad duration", config: `{` + good + `, "gateway": {"timeout": "soon"}}`, args: []string{"--stdio"}, has: `duration "soon"`},
		{name: "redis without keys", config: `{` + good + `, "gateway": {"redis": "redis://127.0.0.1:1/0"}}`, args: []string{"--stdio"}, has: "needs gateway.stateKeysFile"},
		{name: "two kinds of auth", config: `{` + good + `, "gateway": {"auth": {"tokensFile": "t.json", "issuer": "https://login.example.com"}}}`, args: []string{"--stdio"}, has: "not both"},
		{name: "auth without a verifier", config: `{` + good + `, "gateway": {"auth": {"scopes": ["mcp"]}}}`, args: []string{"--stdio"}, has: "gateway.auth"},
		{name: "bad upstream name", config: `{"mcpServers": {"a b": {"url": "http://127.0.0.1:1/mcp"}}}`, args: []string{"--stdio"}, has: "a b"},
	} {
		cfg := writeFile(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json"), tc.config)
		var out, errw testutil.Buffer
		code := run(context.Background(), append([]string{"gateway", "-c", cfg}, tc.args...), strings.NewReader(""), &out, &errw)
		if code != exitUsage || !strings.Contains(errw.String(), tc.has) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, code, errw.String(), exitUsage, tc.has)
		}
	}
}

// TestGatewayTakesNoCommonFlags: the gateway comes first on the command
// line; a common flag before it is a usage error saying so.
func TestGatewayTakesNoCommonFlags(t *testing.T) {
	t.Parallel()
	r := cli(t, "", "--json", "gateway", "-c", "x.json", "--stdio")
	if r.code != exitUsage || !strings.Contains(r.stdout, "takes none of the common flags") {
		t.Errorf("exit %d, stdout %q; want a usage error naming the form", r.code, r.stdout)
	}
	if r := cli(t, "", "help", "gateway"); r.code != 0 || !strings.Contains(r.stdout, "roundtrip gateway -c CONFIG") {
		t.Errorf("help gateway: %d %q", r.code, r.stdout)
	}
}

// TestGatewayRunsAProjectFilesCommandOnlyWhenAllowed: without -c the
// gateway reads ./.mcp.json as the CLI does, and a stdio command defined
// there is refused unless --allow-command.
func TestGatewayRunsAProjectFilesCommandOnlyWhenAllowed(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
	t.Setenv(envConfig, "")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".mcp.json"), fmt.Sprintf(`{"mcpServers": {"work": {"command": %q, "args": ["serve-stdio"]}}}`, self))
	var out, errw testutil.Buffer
	code := run(context.Background(), []string{"gateway", "--stdio"}, strings.NewReader(""), &out, &errw)
	if code != exitUsage || !strings.Contains(errw.String(), "--allow-command") {
		t.Errorf("exit %d, stderr %q; want a usage error naming --allow-command", code, errw.String())
	}
	cli(t, "", "tools", "--", self, "run-cli", "gateway", "--stdio", "--allow-command").must(t, 0, "work__echo")
}

// TestTheExampleConfigIsValid: the config the documentation shows
// (examples/gateway/gateway.json) is read, its servers become upstreams
// with the options it gives, and its auth section builds.
func TestTheExampleConfigIsValid(t *testing.T) {
	t.Setenv("TICKETS_TOKEN", "t0ken")
	cfg, sec, err := loadGatewayConfig(filepath.Join("..", "..", "examples", "gateway", "gateway.json"))
	if err != nil {
		t.Fatal(err)
	}
	ups, _, err := gwUpstreams(cfg, sec, false)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]gateway.Upstream{}
	for _, u := range ups {
		by[u.Name] = u
	}
	if len(by) != 4 || by["everything"].Prefix != "demo" || by["everything"].Ask == nil || by["everything"].Ask.Sampling || !by["everything"].Ask.Forms {
		t.Errorf("everything: %+v", by["everything"])
	}
	if f := by["files"]; f.Allow == nil || f.Allow.Scopes[0] != "files" || f.Tools["write_file"] == nil || f.Command != "npx" {
		t.Errorf("files: %+v", f)
	}
	if tk := by["tickets"]; tk.Header.Get("Authorization") != "Bearer t0ken" || tk.Timeout != 20*time.Second || tk.MaxConcurrency != 4 || tk.Ask.URLHosts[0] != "tickets.example.com" {
		t.Errorf("tickets: %+v", tk)
	}
	if by["legacy"].Transport != gateway.TransportSSE || by["everything"].Timeout != time.Minute {
		t.Errorf("legacy: %+v, everything's timeout %v", by["legacy"], by["everything"].Timeout)
	}
	bo, md, err := bearerOptions(sec.Auth, nil)
	if err != nil || md == nil || bo.ResourceMetadataURL != "https://mcp.example.com/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("auth: %v %+v %+v", err, bo, md)
	}
}

// TestGatewayTracesACallAcrossItsUpstreamLegs: with OpenTelemetry set up
// (the globals, as Setup sets them from OTEL_*), a downstream call of
// three legs (two rounds) to a 2026-07-28 upstream is one trace: the
// client's spans, the gateway's server span of each leg, its client spans
// upstream and the upstream's server spans. Not parallel: it sets the
// OpenTelemetry globals.
func TestGatewayTracesACallAcrossItsUpstreamLegs(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prop := propagation.TraceContext{}
	prevTP, prevProp := otelapi.GetTracerProvider(), otelapi.GetTextMapPropagator()
	otelapi.SetTracerProvider(tp)
	otelapi.SetTextMapPropagator(prop)
	t.Cleanup(func() {
		otelapi.SetTracerProvider(prevTP)
		otelapi.SetTextMapPropagator(prevProp)
	})
	modern := testServerWith(otel.InstrumentServer(testServerOptions(), nil))
	hs := httptest.NewServer(mcp.NewHTTPHandler(modern, nil))
	t.Cleanup(func() { hs.Close(); modern.Close() })
	cfg := writeFile(t, filepath.Join(t.TempDir(), "gw.json"), fmt.Sprintf(`{"mcpServers": {"m": {"url": %q}}}`, hs.URL))
	g := startGateway(t, cfg)
	g.waitUp(t)
	c := mcp.NewClient(mcp.NewHTTPClientTransport(g.url, nil), otel.InstrumentClient(&mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if strings.Contains(r.Message, "region") {
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"region": "eu-west-1"}}, nil
			}
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"gb": 2}}, nil
		},
	}, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exp.Reset()
	res, err := c.CallTool(ctx, "m__provision", map[string]any{"name": "x"}, nil)
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	spans := exp.GetSpans()
	var b strings.Builder
	traces := map[trace.TraceID]bool{}
	kinds := map[trace.SpanKind]int{}
	for _, s := range spans {
		if !strings.HasPrefix(s.Name, "tools/call") {
			continue
		}
		traces[s.SpanContext.TraceID()] = true
		kinds[s.SpanKind]++
		fmt.Fprintf(&b, "%s %s %s\n", s.SpanKind, s.Name, s.SpanContext.TraceID())
	}
	t.Logf("spans of tools/call:\n%s", b.String())
	// Three legs (two rounds), each a client span downstream, a server
	// span in the gateway, a client span from the gateway upstream and a
	// server span upstream; plus the call's own span.
	if len(traces) != 1 || kinds[trace.SpanKindServer] < 6 || kinds[trace.SpanKindClient] < 6 {
		t.Errorf("want one trace with the legs on both hops (6 server and 6 client spans at least), got %d traces, %v:\n%s", len(traces), kinds, b.String())
	}
}

// TestGatewayReloadsItsKeysOnSIGHUP: the state key file is re-read on
// SIGHUP (and when it changes), logged with the new key ids.
func TestGatewayReloadsItsKeysOnSIGHUP(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	dir := t.TempDir()
	old := base64.RawURLEncoding.EncodeToString(requeststate.GenerateKey())
	keys := writeFile(t, filepath.Join(dir, "keys"), old+"\n")
	cfg := writeFile(t, filepath.Join(dir, "gw.json"), fmt.Sprintf(`{"mcpServers": {"s": {"url": %q}}, "gateway": {"stateKeysFile": %q}}`, url, keys))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := testutil.Listen(t, self, "run-cli", "gateway", "-c", cfg, "--http", "127.0.0.1:0")
	writeFile(t, keys, base64.RawURLEncoding.EncodeToString(requeststate.GenerateKey())+"\n"+old+"\n")
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the reload logged", func() bool {
		return strings.Contains(p.Stderr.String(), `"msg":"state keys reloaded"`)
	})
	if strings.Contains(p.Stderr.String(), "not reloaded") {
		t.Errorf("a reload failed:\n%s", p.Stderr.String())
	}
}

// TestAStdioUpstreamsStderrIsLogged: what a stdio upstream writes on its
// standard error becomes a JSON log record per line, with its name; a
// line is bounded.
func TestAStdioUpstreamsStderrIsLogged(t *testing.T) {
	t.Parallel()
	var out testutil.Buffer
	l := &lineLogger{log: slog.New(slog.NewJSONHandler(&out, nil)), upstream: "u"}
	l.Write([]byte("first li"))
	l.Write([]byte("ne\r\nsecond\n\x1b]0;title\x07\n"))
	l.Write([]byte(strings.Repeat("x", 3*maxStderrLine) + "\nafter\n"))
	var lines []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%q is not a JSON record: %v", s, err)
		}
		lines = append(lines, m)
	}
	want := []string{"first line", "second", "\x1b]0;title\x07", strings.Repeat("x", maxStderrLine), "after"}
	if len(lines) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if lines[i]["line"] != w || lines[i]["upstream"] != "u" || lines[i]["msg"] != "upstream stderr" {
			t.Errorf("record %d: %v, want line %.40q", i, lines[i], w)
		}
	}
	if lines[3]["truncated"] != true {
		t.Errorf("the long line is not marked truncated: %v", lines[3])
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("a control character reached the log raw")
	}

	// Through the command: the upstream's stderr in the gateway's log.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, filepath.Join(t.TempDir(), "gw.json"), fmt.Sprintf(`{"mcpServers": {"loud": {"command": "sh", "args": ["-c", "echo hello from stderr >&2; exec \"$0\" serve-stdio", %q]}}}`, self))
	g := startGateway(t, cfg)
	g.waitUp(t)
	testutil.Eventually(t, 10*time.Second, "the upstream's stderr logged", func() bool {
		return strings.Contains(g.stderr.String(), `"msg":"upstream stderr","upstream":"loud","line":"hello from stderr"`)
	})
}
