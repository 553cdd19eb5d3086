package mcptest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest"
)

// flow is the messages of a wire as "→ method", "← method" (a request
// or notification) and "→ reply", "← reply" (a response).
func flow(msgs []mcptest.Message) string {
	var parts []string
	for _, m := range msgs {
		arrow := "← "
		if m.FromClient {
			arrow = "→ "
		}
		what := m.Method()
		if what == "" {
			what = "reply"
		}
		parts = append(parts, arrow+what)
	}
	return strings.Join(parts, ", ")
}

// The Modern wire of a one-question call: the call, its input_required
// result, the call again with the answer and the state, the result. No
// handshake.
func TestWireRecordsTheModernLegsBothWays(t *testing.T) {
	h := mcptest.New(t, newServer(), nil)
	h.Answer(mcptest.Elicit("Proceed with the migration?", map[string]any{"ok": true}))
	h.CallTool("confirm", nil)
	w := h.Wire()
	if got, want := flow(w), "→ tools/call, ← reply, → tools/call, ← reply"; got != want {
		t.Fatalf("wire %s, want %s", got, want)
	}
	var first struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal(w[1].JSON, &first); err != nil || first.Result.ResultType != "input_required" ||
		len(first.Result.InputRequests) != 1 || first.Result.RequestState == "" {
		t.Errorf("first answer %s (%v)", w[1].JSON, err)
	}
	var retry struct {
		Params struct {
			InputResponses map[string]mcp.ElicitResult `json:"inputResponses"`
			RequestState   string                      `json:"requestState"`
		} `json:"params"`
	}
	if err := json.Unmarshal(w[2].JSON, &retry); err != nil || retry.Params.RequestState != first.Result.RequestState {
		t.Fatalf("retry %s (%v)", w[2].JSON, err)
	}
	for k, a := range retry.Params.InputResponses {
		if _, asked := first.Result.InputRequests[k]; !asked || a.Action != mcp.ElicitAccept || a.Content["ok"] != true {
			t.Errorf("answer %q: %+v", k, a)
		}
	}
	if !strings.Contains(string(w[3].JSON), "confirmed: true") {
		t.Errorf("result %s", w[3].JSON)
	}
}

// The Legacy wire: the handshake, then the call, during which the server
// asks with a live request that the client answers, then the result.
func TestWireRecordsTheLegacyHandshakeAndLiveRequests(t *testing.T) {
	h := mcptest.New(t, newServer(), &mcptest.Options{Era: mcptest.Legacy})
	h.Answer(mcptest.Decline(mcptest.Any))
	if got := mcptest.Text(h.CallTool("confirm", nil)); got != "not confirmed: decline" {
		t.Errorf("result %q", got)
	}
	w := h.Wire()
	want := "→ initialize, ← reply, → notifications/initialized, → tools/call, ← elicitation/create, → reply, ← reply"
	if got := flow(w); got != want {
		t.Fatalf("wire %s, want %s", got, want)
	}
	if !strings.Contains(string(w[5].JSON), `"action":"decline"`) {
		t.Errorf("the answer to the live request: %s", w[5].JSON)
	}
	if s := w[4].String(); !strings.HasPrefix(s, "← {") || !strings.Contains(s, "Proceed with the migration?") {
		t.Errorf("String() = %s", s)
	}
	if s := w[5].String(); !strings.HasPrefix(s, "→ {") {
		t.Errorf("String() = %s", s)
	}
}

func TestWireIsKeptAcrossCalls(t *testing.T) {
	h := mcptest.New(t, newServer(), nil)
	h.CallTool("echo", nil)
	n := len(h.Wire())
	h.CallTool("echo", nil)
	if got := flow(h.Wire()[n:]); got != "→ tools/call, ← reply" || n != 2 {
		t.Errorf("after the first call %d messages; the second call: %s", n, got)
	}
}

// A failed test gets the wire in its log, to see what was said.
func TestAFailedTestLogsTheWire(t *testing.T) {
	ft := newFakeT()
	ft.run(func(ft *fakeT) {
		h := mcptest.New(ft, newServer(), nil)
		h.CallTool("echo", nil)
		ft.Errorf("the test's own failure")
	})
	logs := ft.logText()
	if !strings.Contains(logs, "mcptest: the wire:\n\t→ {") || !strings.Contains(logs, `"echo"`) {
		t.Errorf("logs:\n%s", logs)
	}
	passed := newFakeT()
	passed.run(func(ft *fakeT) { mcptest.New(ft, newServer(), nil).CallTool("echo", nil) })
	if logs := passed.logText(); logs != "" {
		t.Errorf("a passing test logged:\n%s", logs)
	}
}

func TestMessageMethodIsEmptyForResponses(t *testing.T) {
	for raw, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`: "tools/list",
		`{"jsonrpc":"2.0","method":"notifications/x"}`:   "notifications/x",
		`{"jsonrpc":"2.0","id":1,"result":{}}`:           "",
		`not json`:                                       "",
	} {
		if got := (mcptest.Message{JSON: json.RawMessage(raw)}).Method(); got != want {
			t.Errorf("Method of %s = %q, want %q", raw, got, want)
		}
	}
}
