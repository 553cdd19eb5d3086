package mcp

import (
	"context"
	"encoding/json"
	"testing"
)

// refusalServer has the two kinds of handler that ask the same question
// ("Your name?"): "ask" returns its own InputRequiredResult (the bridge
// sends it live), "askAPI" asks with the asking API and returns its
// error.
func refusalServer(t testing.TB) *Server {
	s := newTestServer(t, nil)
	s.AddTool(&Tool{Name: "askAPI", Description: "asks for a name with the asking API"},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			res, err := ElicitForm(ctx, "Your name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`), WithKey("name"))
			if err != nil {
				return nil, err
			}
			return TextResult("Hello, " + res.Content["name"].(string)), nil
		})
	return s
}

// refusedText calls tool and returns the text of its isError result,
// failing when the call did not end in one.
func refusedText(t *testing.T, c *legacyClient, tool string) string {
	t.Helper()
	v := c.request(MethodToolsCall, `{"name":"`+tool+`","arguments":{}}`)
	r, ok := v["result"].(map[string]any)
	if !ok || r["isError"] != true {
		t.Fatalf("%s: %v, want an isError result", tool, v)
	}
	return legacyText(t, v)
}

// A question the client refuses is answered the documented way whatever
// kind of handler asked it: a handler's own InputRequiredResult bridged
// to a live request gives the isError result the asking API gives ("The
// client could not answer question ... (code ...)"), not a bare -32603.
func TestARefusedQuestionIsTheSameAnswerForEveryHandler(t *testing.T) {
	t.Parallel()
	s := refusalServer(t)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	c.answer = func(string, map[string]any) any { return jsonrpcError(CodeMethodNotFound, "Method not found") }
	bridged, asked := refusedText(t, c, "ask"), refusedText(t, c, "askAPI")
	want := `The client could not answer question "Your name?" (elicitation/create): Method not found (code -32601)`
	if bridged != want || asked != want {
		t.Fatalf("bridged handler: %q\nasking API: %q\nwant %q", bridged, asked, want)
	}
}

// A 2025-03-26 session has no elicitation, whatever its client declares:
// neither kind of handler sends elicitation/create, and both answer with
// the isError result naming elicitation and the revision.
func TestAQuestionTheRevisionLacksIsTheSameAnswerForEveryHandler(t *testing.T) {
	t.Parallel()
	s := refusalServer(t)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClientAt(t, ts.URL, "2025-03-26", legacyCaps)
	if c.lastInit["protocolVersion"] != "2025-03-26" {
		t.Fatalf("negotiated %v", c.lastInit["protocolVersion"])
	}
	bridged, asked := refusedText(t, c, "ask"), refusedText(t, c, "askAPI")
	want := "cannot send elicitation/create to the client: protocol revision 2025-03-26 has no elicitation (added in 2025-06-18)"
	if bridged != want || asked != want {
		t.Fatalf("bridged handler: %q\nasking API: %q\nwant %q", bridged, asked, want)
	}
	if len(c.asked) != 0 {
		t.Fatalf("the 2025-03-26 client was sent %v", c.asked)
	}
}
