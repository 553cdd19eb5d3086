package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// stdio: the connection is the session; server-to-client requests are
// lines on the same stream, answered by response lines.

func legacyInitLine(caps string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"stdio-legacy","version":"1"}}}`
}

// answerUntil answers server requests on the stream until the response
// to id arrives; it returns that response and the methods asked.
func answerUntil(t *testing.T, c *streamClient, id float64, answer func(method string, params map[string]any) any) (map[string]any, []string) {
	t.Helper()
	var asked []string
	for {
		m := c.next()
		switch {
		case m["method"] != nil && m["id"] != nil:
			method := m["method"].(string)
			asked = append(asked, method)
			params, _ := m["params"].(map[string]any)
			res, _ := json.Marshal(answer(method, params))
			rid, _ := json.Marshal(m["id"])
			c.send(`{"jsonrpc":"2.0","id":` + string(rid) + `,"result":` + string(res) + `}`)
		case m["method"] != nil:
			// a notification
		case m["id"] == id:
			return m, asked
		}
	}
}

func TestLegacyStdioSession(t *testing.T) {
	t.Parallel()
	s, runs := dualServer(t, nil)
	c := newStreamClient(t, s)

	// Before initialize, a request without _meta is a modern error.
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if v := c.next(); errorCode(t, v) != CodeInvalidParams {
		t.Fatalf("before initialize: %v", v)
	}

	c.send(legacyInitLine(legacyCaps))
	init := result(t, c.next())
	if init["protocolVersion"] != LegacyProtocolVersion || init["capabilities"].(map[string]any)["tools"] == nil {
		t.Fatalf("initialize: %v", init)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if r := result(t, c.next()); len(r) != 0 {
		t.Errorf("ping: %v", r)
	}

	// The three-round handler, as live requests on the connection.
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"provision","arguments":{}}}`)
	v, asked := answerUntil(t, c, 3, legacyAnswers)
	if got := text(t, v); got != "eu-west-1 | a haiku | file:///work" {
		t.Fatalf("result %q", got)
	}
	if strings.Join(asked, ",") != "elicitation/create,sampling/createMessage,roots/list" || runs.Load() != 1 {
		t.Errorf("asked %v in %d runs", asked, runs.Load())
	}
	if _, has := result(t, v)["resultType"]; has {
		t.Error("legacy result with resultType")
	}

	// A modern request on the same connection stays modern.
	c.send(req(4, MethodToolsCall, `"name":"echo","arguments":{"text":"modern"}`))
	if r := result(t, c.next()); r["resultType"] != "complete" {
		t.Errorf("modern request on a legacy connection: %v", r)
	}

	// List changes reach the initialized session.
	s.AddTool(&Tool{Name: "late"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	if m := c.next(); m["method"] != NotificationToolListChanged {
		t.Errorf("got %v", m)
	}

	// A second initialize is refused.
	c.send(legacyInitLine(`{}`))
	if v := c.next(); errorCode(t, v) != CodeInvalidRequest {
		t.Errorf("second initialize: %v", v)
	}
}

func TestLegacyStdioEOFEndsWaitingQuestions(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	done := make(chan error, 1)
	s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := Sample(ctx, &CreateMessageRequest{MaxTokens: 5, Messages: []SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: "hi"}}}}})
		done <- err
		return nil, err
	})
	c := newStreamClient(t, s)
	c.send(legacyInitLine(legacyCaps))
	c.next()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`)
	if m := c.next(); m["method"] != MethodCreateMessage {
		t.Fatalf("got %v", m)
	}
	c.conn.Close() // EOF: no answer can come
	select {
	case err := <-done:
		if err == nil {
			t.Error("the question got an answer")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the question is still waiting after EOF")
	}
}

// A hand-built input request goes live (legacy_bridge.go) under the same
// capability rule as the asking API.
func TestLegacyStdioHandBuiltInputRequestsNeedTheCapability(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	c := newStreamClient(t, s)
	c.send(legacyInitLine(`{"roots":{}}`))
	c.next()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`)
	if v := c.next(); errorCode(t, v) != CodeMissingRequiredCapability {
		t.Errorf("hand-built input_required without the elicitation capability: %v", v)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"provision"}}`)
	if v := c.next(); errorCode(t, v) != CodeMissingRequiredCapability {
		t.Errorf("missing elicitation capability: %v", v)
	}
}

// Over stdio the bridge asks on the connection: the live request arrives
// as a line, the answer goes back as a line, the handler completes.
func TestLegacyStdioHandBuiltInputRequestsAreSentLive(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	c := newStreamClient(t, s)
	c.send(legacyInitLine(legacyCaps))
	c.next()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`)
	live := c.next()
	if live["method"] != MethodElicit {
		t.Fatalf("expected a live elicitation/create, got %v", live)
	}
	id, _ := json.Marshal(live["id"])
	c.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	v := c.next()
	if got := legacyText(t, v); got != "Hello, Ada" {
		t.Fatalf("result %q", got)
	}
}
