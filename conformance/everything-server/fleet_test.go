package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startHTTP runs the binary on a free loopback port with extra flags and
// returns its endpoint URL. Cleanup kills it.
func startHTTP(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		l, _ := r.ReadString('\n')
		line <- l
		io.Copy(io.Discard, r)
	}()
	select {
	case l := <-line:
		url, ok := strings.CutPrefix(strings.TrimSpace(l), "listening on ")
		if !ok {
			t.Fatalf("unexpected first line %q", l)
		}
		return url
	case <-time.After(20 * time.Second):
		t.Fatal("server did not announce its address")
	}
	return ""
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
