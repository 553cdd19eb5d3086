package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

// startHTTP runs the binary on a free loopback port with extra flags and
// returns its endpoint URL. Cleanup kills it.
func startHTTP(t *testing.T, bin string, args ...string) string {
	t.Helper()
	url, _ := startHTTPProcess(t, bin, args...)
	return url
}

// startHTTPProcess is startHTTP that also returns the process.
func startHTTPProcess(t *testing.T, bin string, args ...string) (string, *testutil.Process) {
	t.Helper()
	p, url := testutil.Listen(t, bin, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	return url, p
}

// callTool posts one tools/call and returns the decoded response.
func callTool(t *testing.T, url string, id int, name string, extra map[string]any) map[string]json.RawMessage {
	t.Helper()
	params := map[string]any{
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
		},
		"name": name, "arguments": map[string]any{},
	}
	for k, v := range extra {
		params[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", name)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func newKey() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.RawURLEncoding.EncodeToString(k)
}

const multiRound = "test_input_required_result_multi_round"

func stateOf(t *testing.T, m map[string]json.RawMessage) string {
	t.Helper()
	var r struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(m["result"], &r); err != nil || r.ResultType != "input_required" || r.RequestState == "" {
		t.Fatalf("want input_required with state, got %s %s", m["result"], m["error"])
	}
	return r.RequestState
}

func answer(key, field, value string) map[string]any {
	return map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{field: value}}}
}

func TestRoundMovesBetweenProcessesSharingKeys(t *testing.T) {
	bin := buildServer(t)
	keys := newKey() + "," + newKey()
	a := startHTTP(t, bin, "-state-keys", keys)
	b := startHTTP(t, bin, "-state-keys", keys)
	other := startHTTP(t, bin, "-state-keys", newKey())

	s1 := stateOf(t, callTool(t, a, 1, multiRound, nil))
	s2 := stateOf(t, callTool(t, b, 2, multiRound, map[string]any{"requestState": s1, "inputResponses": answer("step1", "name", "Ada")}))
	if s2 == s1 {
		t.Error("round 2 reused the state of round 1")
	}
	done := callTool(t, a, 3, multiRound, map[string]any{"requestState": s2, "inputResponses": answer("step2", "color", "green")})
	if !strings.Contains(string(done["result"]), "Hello, Ada! Your favorite color is green.") {
		t.Fatalf("round 3: %s %s", done["result"], done["error"])
	}

	rejected := callTool(t, other, 4, multiRound, map[string]any{"requestState": s1, "inputResponses": answer("step1", "name", "Ada")})
	want := `{"code":-32602,"message":"Invalid or expired requestState","data":{"reason":"invalid_request_state"}}`
	if string(rejected["error"]) != want {
		t.Errorf("a process with other keys: %s %s", rejected["result"], rejected["error"])
	}
}

func TestStateTTLIsObservable(t *testing.T) {
	bin := buildServer(t)
	url := startHTTP(t, bin, "-state-keys", newKey(), "-state-ttl", "1s")
	s1 := stateOf(t, callTool(t, url, 1, multiRound, nil))
	time.Sleep(1200 * time.Millisecond)
	late := callTool(t, url, 2, multiRound, map[string]any{"requestState": s1, "inputResponses": answer("step1", "name", "Ada")})
	if !strings.Contains(string(late["error"]), "Invalid or expired requestState") {
		t.Errorf("expired state accepted: %s %s", late["result"], late["error"])
	}
}

// Two processes sharing a Redis guard: a state used on one is refused on
// the other with other answers, and the identical leg gets the recorded
// answer there.
func TestSingleUseIsSharedThroughTheGuardFlag(t *testing.T) {
	bin := buildServer(t)
	sock := redistest.Start(t)
	keys := newKey()
	a := startHTTP(t, bin, "-state-keys", keys, "-guard", "unix://"+sock)
	b := startHTTP(t, bin, "-state-keys", keys, "-guard", "unix://"+sock)
	s1 := stateOf(t, callTool(t, a, 1, multiRound, nil))
	leg := map[string]any{"requestState": s1, "inputResponses": answer("step1", "name", "Ada")}
	first := callTool(t, a, 2, multiRound, leg)
	again := callTool(t, b, 2, multiRound, leg)
	if string(first["result"]) != string(again["result"]) || first["result"] == nil {
		t.Errorf("the identical leg on the other process: %s %s, want %s", again["result"], again["error"], first["result"])
	}
	other := callTool(t, b, 3, multiRound, map[string]any{"requestState": s1, "inputResponses": answer("step1", "name", "Eve")})
	if !strings.Contains(string(other["error"]), "Invalid or expired requestState") {
		t.Errorf("the used state with other answers: %s %s", other["result"], other["error"])
	}
}

// The key file is re-read on SIGHUP: a rotation needs no restart.
func TestKeyFileIsReloadedOnSIGHUP(t *testing.T) {
	bin := buildServer(t)
	file := filepath.Join(t.TempDir(), "keys")
	oldKey, newK := newKey(), newKey()
	os.WriteFile(file, []byte(oldKey+"\n"), 0o600)
	url, proc := startHTTPProcess(t, bin, "-state-key-file", file)
	sOld := stateOf(t, callTool(t, url, 1, multiRound, nil))
	os.WriteFile(file, []byte(newK+"\n"), 0o600) // OLD retired at once
	proc.Cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := callTool(t, url, 2, multiRound, map[string]any{"requestState": sOld, "inputResponses": answer("step1", "name", "Ada")})
		if strings.Contains(string(r["error"]), "Invalid or expired requestState") {
			break // the process now holds only NEW
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key file was not reloaded: %s", r["result"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A state sealed now verifies with NEW: the same process, no restart.
	sNew := stateOf(t, callTool(t, url, 3, multiRound, nil))
	if r := callTool(t, url, 4, multiRound, map[string]any{"requestState": sNew, "inputResponses": answer("step1", "name", "Ada")}); r["error"] != nil {
		t.Errorf("a state sealed after the reload: %s", r["error"])
	}
}

func TestDrainOnSIGTERMAnswersReadinessThenExits(t *testing.T) {
	bin := buildServer(t)
	url, proc := startHTTPProcess(t, bin)
	base := strings.TrimSuffix(url, "/mcp")
	resp, err := http.Get(base + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz before SIGTERM: %v %v", resp, err)
	}
	resp.Body.Close()
	proc.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-proc.Done():
		if err := proc.Err(); err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit within 15 s of SIGTERM")
	}
}

// post2025 posts one message of a 2025-11-25 session (sid empty for
// initialize) and returns the response's session id and its JSON-RPC
// message (from a JSON body or the first SSE data line), nil for a 202.
func post2025(t *testing.T, url, sid string, msg map[string]any) (string, map[string]json.RawMessage) {
	t.Helper()
	body, _ := json.Marshal(msg)
	r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusAccepted {
		return resp.Header.Get("Mcp-Session-Id"), nil
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%v: status %d: %s", msg["method"], resp.StatusCode, data)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(string(data), "\n") {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data:"); ok && strings.TrimSpace(d) != "" {
				data = []byte(d)
				break
			}
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%v: %v in %s", msg["method"], err, data)
	}
	return resp.Header.Get("Mcp-Session-Id"), m
}

// Two processes sharing one Redis with -session-store: a 2025-11-25
// session initialized on one is served by the other.
func TestSessionMovesBetweenProcessesThroughTheSessionStoreFlag(t *testing.T) {
	bin := buildServer(t)
	sock := redistest.Start(t)
	a := startHTTP(t, bin, "-session-store", "unix://"+sock)
	b := startHTTP(t, bin, "-session-store", "unix://"+sock)
	sid, init := post2025(t, a, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "fleet-test", "version": "1"},
	}})
	if sid == "" || init["result"] == nil {
		t.Fatalf("initialize: session %q, %s %s", sid, init["result"], init["error"])
	}
	post2025(t, a, sid, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	_, res := post2025(t, b, sid, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "test_simple_text", "arguments": map[string]any{}}})
	if !strings.Contains(string(res["result"]), "This is a simple text response for testing.") {
		t.Fatalf("tools/call on the other process: %s %s", res["result"], res["error"])
	}
	// And back on the first, after the second served it.
	_, res = post2025(t, a, sid, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
	if !strings.Contains(string(res["result"]), "test_simple_text") {
		t.Errorf("tools/list on the first process: %s %s", res["result"], res["error"])
	}
}

// -session-store takes what -guard takes: a URL, or with
// -guard-sentinels the master's name; a bad URL is named in the error.
func TestSessionStoreFlagBuildsTheStore(t *testing.T) {
	if s, err := sessionStoreOf(stateFlags{}); s != nil || err != nil {
		t.Errorf("no flag: %v %v, want no store", s, err)
	}
	for _, url := range []string{"redis://127.0.0.1:1/2", "rediss://127.0.0.1:1", "unix:///tmp/none.sock"} {
		if s, err := sessionStoreOf(stateFlags{sessions: url}); s == nil || err != nil {
			t.Errorf("%s: %v %v", url, s, err)
		}
	}
	if s, err := sessionStoreOf(stateFlags{sessions: "mymaster", sentinels: "127.0.0.1:1,127.0.0.1:2"}); s == nil || err != nil {
		t.Errorf("a Sentinel master: %v %v", s, err)
	}
	if _, err := sessionStoreOf(stateFlags{sessions: "http://x"}); err == nil || !strings.Contains(err.Error(), "-session-store") {
		t.Errorf("a bad URL: %v, want an error naming -session-store", err)
	}
	if _, err := guardOf(stateFlags{guard: "http://x"}); err == nil || !strings.Contains(err.Error(), "-guard") {
		t.Errorf("a bad -guard URL: %v, want an error naming -guard", err)
	}
}
