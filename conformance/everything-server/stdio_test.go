package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// The conformance suite speaks HTTP only, so this test covers the stdio
// transport end to end: it builds the everything-server binary, runs it
// as a child process with -stdio and talks newline-delimited JSON-RPC
// over its stdin/stdout.

const (
	readTimeout = 10 * time.Second // any single expected message
	quietPeriod = 400 * time.Millisecond
)

// meta is the 2026-07-28 _meta envelope every request carries.
var meta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}, "roots": map[string]any{}},
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "stdio-test", "version": "1.0.0"},
}

// wireMsg is any message the server writes.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw string
}

type stdioClient struct {
	t     *testing.T
	stdin io.WriteCloser
	msgs  chan wireMsg // every line the server wrote, in order
	// held are messages read while waiting for something else.
	held []wireMsg
}

// TestMain runs the tests through testutil.Run, which removes the
// server binary that testutil.Build compiles once for all of them.
func TestMain(m *testing.M) { os.Exit(testutil.Run(m)) }

// buildServer compiles this package, once per test binary.
func buildServer(t *testing.T) string {
	t.Helper()
	return testutil.Build(t, ".")
}

// startServer runs the binary with -stdio and returns a client for it.
// Cleanup closes stdin, waits a bounded time for a clean exit, and kills
// the process otherwise; the server's stderr is logged if the test
// failed.
func startServer(t *testing.T, bin string) *stdioClient {
	t.Helper()
	cmd := exec.Command(bin, "-stdio")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.Start(t, cmd)
	stdout := p.Stdout
	c := &stdioClient{t: t, stdin: stdin, msgs: make(chan wireMsg, 1024)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(c.msgs)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
		for sc.Scan() {
			line := sc.Text()
			var m wireMsg
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				m = wireMsg{Method: "<invalid JSON on stdout>"}
			}
			m.raw = line
			c.msgs <- m
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // EOF: the server should exit on its own
		select {
		case <-p.Done():
			if err := p.Err(); err != nil {
				t.Errorf("server exited with %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("server did not exit within 5s of stdin EOF; killing it")
			cmd.Process.Kill()
			<-p.Done()
		}
		<-readDone
	})
	return c
}

// send writes one message as a line.
func (c *stdioClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to server stdin: %v", err)
	}
}

// request sends a request with params (which get the _meta envelope).
func (c *stdioClient) request(id int, method string, params map[string]any) {
	c.t.Helper()
	p := map[string]any{"_meta": meta}
	for k, v := range params {
		p[k] = v
	}
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
}

// next returns the next message, or false after timeout.
func (c *stdioClient) next(timeout time.Duration) (wireMsg, bool) {
	if len(c.held) > 0 {
		m := c.held[0]
		c.held = c.held[1:]
		return m, true
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("server closed stdout")
		}
		return m, true
	case <-timer.C:
		return wireMsg{}, false
	}
}

// await reads until the response to id arrives and returns it; other
// messages read on the way are returned as skipped.
func (c *stdioClient) await(id int) (resp wireMsg, skipped []wireMsg) {
	c.t.Helper()
	want := fmt.Sprint(id)
	deadline := time.Now().Add(readTimeout)
	for {
		m, ok := c.next(time.Until(deadline))
		if !ok {
			c.t.Fatalf("no response to request %d within %v", id, readTimeout)
		}
		if m.Method == "" && string(m.ID) == want {
			return m, skipped
		}
		skipped = append(skipped, m)
	}
}

// call sends a request and returns its result object, failing on an
// error response.
func (c *stdioClient) call(id int, method string, params map[string]any) map[string]json.RawMessage {
	c.t.Helper()
	c.request(id, method, params)
	resp, skipped := c.await(id)
	for _, m := range skipped {
		if m.Method == "" {
			c.t.Errorf("%s: unexpected response while waiting for id %d: %s", method, id, m.raw)
		}
	}
	if resp.Error != nil {
		c.t.Fatalf("%s: error response %d %s (data %s)", method, resp.Error.Code, resp.Error.Message, resp.Error.Data)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		c.t.Fatalf("%s: result is not an object: %s", method, resp.raw)
	}
	return res
}

func str(t *testing.T, raw json.RawMessage, what string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: want a string, got %s", what, raw)
	}
	return s
}

func decode[T any](t *testing.T, raw json.RawMessage, what string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v in %s", what, err, raw)
	}
	return v
}

func wantResultType(t *testing.T, res map[string]json.RawMessage, want string) {
	t.Helper()
	if got := str(t, res["resultType"], "resultType"); got != want {
		t.Fatalf("resultType = %q, want %q (result %v)", got, want, res)
	}
}

type inputRequest struct {
	Method string `json:"method"`
	Params struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	} `json:"params"`
}

// wantInputRequired checks an input_required result asking exactly one
// elicitation under key and returns its raw requestState (nil if none).
func wantInputRequired(t *testing.T, res map[string]json.RawMessage, key, message string) json.RawMessage {
	t.Helper()
	wantResultType(t, res, "input_required")
	reqs := decode[map[string]inputRequest](t, res["inputRequests"], "inputRequests")
	if len(reqs) != 1 {
		t.Fatalf("inputRequests has %d entries, want only %q: %s", len(reqs), key, res["inputRequests"])
	}
	ir, ok := reqs[key]
	if !ok {
		t.Fatalf("inputRequests has no key %q: %s", key, res["inputRequests"])
	}
	if ir.Method != "elicitation/create" || ir.Params.Message != message {
		t.Fatalf("inputRequests[%q] = %s %q, want elicitation/create %q", key, ir.Method, ir.Params.Message, message)
	}
	if ir.Params.RequestedSchema["type"] != "object" {
		t.Fatalf("inputRequests[%q]: requestedSchema is not an object schema: %v", key, ir.Params.RequestedSchema)
	}
	return res["requestState"]
}

func toolText(t *testing.T, res map[string]json.RawMessage) string {
	t.Helper()
	content := decode[[]struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}](t, res["content"], "content")
	if len(content) != 1 || content[0].Type != "text" {
		t.Fatalf("content = %s, want one text block", res["content"])
	}
	return content[0].Text
}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

func TestStdio(t *testing.T) {
	bin := buildServer(t)
	c := startServer(t, bin)
	id := 0
	nextID := func() int { id++; return id }

	t.Run("discover", func(t *testing.T) {
		c.t = t
		res := c.call(nextID(), "server/discover", nil)
		wantResultType(t, res, "complete")
		if v := decode[[]string](t, res["supportedVersions"], "supportedVersions"); !slices.Contains(v, "2026-07-28") {
			t.Errorf("supportedVersions = %v, want 2026-07-28 in it", v)
		}
		caps := decode[map[string]json.RawMessage](t, res["capabilities"], "capabilities")
		for _, k := range []string{"tools", "prompts", "resources", "completions"} {
			if caps[k] == nil {
				t.Errorf("capabilities lack %q: %s", k, res["capabilities"])
			}
		}
		m := decode[map[string]struct{ Name string }](t, res["_meta"], "_meta")
		if got := m["io.modelcontextprotocol/serverInfo"].Name; got != "roundtrip-everything-server" {
			t.Errorf("_meta serverInfo name = %q", got)
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		c.t = t
		res := c.call(nextID(), "tools/list", nil)
		wantResultType(t, res, "complete")
		tools := decode[[]struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		}](t, res["tools"], "tools")
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
			if tl.Description == "" || tl.InputSchema["type"] != "object" {
				t.Errorf("tool %s: description %q, inputSchema %v", tl.Name, tl.Description, tl.InputSchema)
			}
		}
		if !slices.IsSorted(names) {
			t.Errorf("tools not in a deterministic (sorted) order: %v", names)
		}
		for _, want := range []string{
			"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
			"test_multiple_content_types", "test_error_handling", "test_tool_with_progress",
			"test_input_required_result_elicitation", "test_input_required_result_sampling",
			"test_input_required_result_list_roots", "test_input_required_result_request_state",
			"test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
			"test_input_required_result_tampered_state", "test_input_required_result_capabilities",
			"test_missing_capability", "test_streaming_elicitation", "test_logging_tool",
			"test_trigger_tool_change", "test_trigger_prompt_change", "json_schema_2020_12_tool",
		} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list lacks %s", want)
			}
		}
		if res["ttlMs"] == nil || res["cacheScope"] == nil {
			t.Errorf("tools/list lacks cache hints: %v", res)
		}
	})

	t.Run("multi-round tool", func(t *testing.T) {
		c.t = t
		const tool = "test_input_required_result_multi_round"
		r1 := c.call(nextID(), "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}})
		state1 := wantInputRequired(t, r1, "step1", "Step 1: What is your name?")
		if str(t, state1, "round 1 requestState") == "" {
			t.Fatal("round 1 has no requestState")
		}

		// The state goes back as the exact JSON token received.
		r2 := c.call(nextID(), "tools/call", map[string]any{
			"name": tool, "arguments": map[string]any{},
			"inputResponses": map[string]any{"step1": accept(map[string]any{"name": "Alice"})},
			"requestState":   state1,
		})
		state2 := wantInputRequired(t, r2, "step2", "Step 2: What is your favorite color?")
		if str(t, state2, "round 2 requestState") == "" || bytes.Equal(state1, state2) {
			t.Fatalf("round 2 requestState %s must be present and differ from round 1's %s", state2, state1)
		}

		r3 := c.call(nextID(), "tools/call", map[string]any{
			"name": tool, "arguments": map[string]any{},
			"inputResponses": map[string]any{"step2": accept(map[string]any{"color": "blue"})},
			"requestState":   state2,
		})
		wantResultType(t, r3, "complete")
		if got, want := toolText(t, r3), "Hello, Alice! Your favorite color is blue."; got != want {
			t.Errorf("round 3 text = %q, want %q", got, want)
		}
		if r3["requestState"] != nil || r3["inputRequests"] != nil {
			t.Errorf("complete result carries MRTR members: %v", r3)
		}

		// A modified state is refused with a JSON-RPC error.
		bad := strings.TrimSuffix(string(state2), `"`) + `-TAMPERED"`
		badID := nextID()
		c.request(badID, "tools/call", map[string]any{
			"name": tool, "arguments": map[string]any{},
			"inputResponses": map[string]any{"step2": accept(map[string]any{"color": "blue"})},
			"requestState":   json.RawMessage(bad),
		})
		resp, _ := c.await(badID)
		if resp.Error == nil || resp.Error.Code != -32602 {
			t.Errorf("tampered requestState: want error -32602, got %s", resp.raw)
		}
	})

	t.Run("input-required prompt", func(t *testing.T) {
		c.t = t
		const prompt = "test_input_required_result_prompt"
		r1 := c.call(nextID(), "prompts/get", map[string]any{"name": prompt})
		state := wantInputRequired(t, r1, "user_context", "What context should the prompt use?")
		params := map[string]any{
			"name":           prompt,
			"inputResponses": map[string]any{"user_context": accept(map[string]any{"context": "stdio test"})},
		}
		if state != nil {
			params["requestState"] = state
		}
		r2 := c.call(nextID(), "prompts/get", params)
		wantResultType(t, r2, "complete")
		msgs := decode[[]struct {
			Role    string `json:"role"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}](t, r2["messages"], "messages")
		if len(msgs) != 1 || msgs[0].Role != "user" || msgs[0].Content.Type != "text" ||
			msgs[0].Content.Text != "Prompt with user context: stdio test" {
			t.Errorf("messages = %s", r2["messages"])
		}
	})

	t.Run("resources/read", func(t *testing.T) {
		c.t = t
		res := c.call(nextID(), "resources/read", map[string]any{"uri": "test://static-text"})
		wantResultType(t, res, "complete")
		contents := decode[[]struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
		}](t, res["contents"], "contents")
		if len(contents) != 1 {
			t.Fatalf("contents = %s, want one entry", res["contents"])
		}
		got := contents[0]
		if got.URI != "test://static-text" || got.MIMEType != "text/plain" || got.Text != "This is the content of the static text resource." {
			t.Errorf("contents[0] = %+v", got)
		}
		if scope := str(t, res["cacheScope"], "cacheScope"); scope != "public" && scope != "private" {
			t.Errorf("cacheScope = %q", scope)
		}
	})

	t.Run("cancellation", func(t *testing.T) {
		c.t = t
		callID := nextID()
		c.request(callID, "tools/call", map[string]any{
			"name": "test_tool_with_progress", "arguments": map[string]any{},
			"_meta": withProgressToken("cancel-me"),
		})
		// Wait for the first progress notification of this call.
		deadline := time.Now().Add(readTimeout)
		{
			m, ok := c.next(time.Until(deadline))
			if !ok {
				t.Fatalf("no notifications/progress within %v", readTimeout)
			}
			if m.Method == "" && string(m.ID) == fmt.Sprint(callID) {
				t.Fatalf("the call answered before any progress notification: %s", m.raw)
			}
			if m.Method != "notifications/progress" {
				t.Fatalf("unexpected message while waiting for progress: %s", m.raw)
			}
			p := decode[struct {
				ProgressToken string  `json:"progressToken"`
				Progress      float64 `json:"progress"`
				Total         float64 `json:"total"`
			}](t, m.Params, "progress params")
			if p.ProgressToken != "cancel-me" || p.Progress != 0 || p.Total != 100 {
				t.Fatalf("first progress = %+v, want token cancel-me, 0 of 100", p)
			}
		}
		c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": callID, "reason": "test cancels it"}})

		// The server still answers other requests...
		listID := nextID()
		c.request(listID, "tools/list", nil)
		resp, skipped := c.await(listID)
		if resp.Error != nil || resp.Result == nil {
			t.Fatalf("tools/list after the cancellation: %s", resp.raw)
		}
		// ...but never the cancelled one, neither before nor after.
		for _, m := range skipped {
			if m.Method == "" {
				t.Errorf("response after cancellation: %s", m.raw)
			}
		}
		end := time.Now().Add(quietPeriod)
		for {
			m, ok := c.next(time.Until(end))
			if !ok {
				break
			}
			if m.Method == "" {
				t.Errorf("response after cancellation: %s", m.raw)
			}
		}
	})
}

func withProgressToken(tok string) map[string]any {
	m := map[string]any{"progressToken": tok}
	for k, v := range meta {
		m[k] = v
	}
	return m
}
