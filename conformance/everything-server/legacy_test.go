package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The same binary over stdio in the 2025-11-25 era: initialize opens the
// session, the legacy tools send live server-to-client requests on stdout
// and read the answers from stdin; a request with the modern _meta
// envelope on the same connection is still served as 2026-07-28.
func TestStdioLegacySession(t *testing.T) {
	c := startServer(t, buildServer(t))
	c.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": "legacy-stdio-test", "version": "1.0.0"},
	}})
	init, _ := c.await(1)
	var ir struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    map[string]any `json:"capabilities"`
	}
	if init.Error != nil || json.Unmarshal(init.Result, &ir) != nil || ir.ProtocolVersion != "2025-11-25" || ir.Capabilities["tools"] == nil {
		t.Fatalf("initialize: %s", init.raw)
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})

	// legacyCall sends a 2025-11-25 request (no _meta) and answers the
	// server's requests with answer until the response comes.
	legacyCall := func(id int, name string, args map[string]any, answer func(method string, params json.RawMessage) any) (string, []string) {
		t.Helper()
		c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
		var asked []string
		deadline := time.Now().Add(readTimeout)
		for {
			m, ok := c.next(time.Until(deadline))
			if !ok {
				t.Fatalf("%s: no response", name)
			}
			if m.Method != "" && m.ID != nil {
				asked = append(asked, m.Method)
				c.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": answer(m.Method, m.Params)})
				continue
			}
			if m.Method == "" && string(m.ID) == itoa(id) {
				var res struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
					ResultType *string `json:"resultType"`
				}
				if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || len(res.Content) == 0 {
					t.Fatalf("%s: %s", name, m.raw)
				}
				if res.ResultType != nil {
					t.Errorf("%s: a 2025-11-25 result carries resultType", name)
				}
				return res.Content[0].Text, asked
			}
		}
	}

	text, asked := legacyCall(2, "test_sampling", map[string]any{"prompt": "Capital of France?"}, func(method string, _ json.RawMessage) any {
		return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}
	})
	if text != "LLM response: Paris" || strings.Join(asked, ",") != "sampling/createMessage" {
		t.Errorf("test_sampling: %q after %v", text, asked)
	}

	var schema struct {
		RequestedSchema struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"requestedSchema"`
	}
	text, _ = legacyCall(3, "test_elicitation_sep1034_defaults", nil, func(method string, params json.RawMessage) any {
		json.Unmarshal(params, &schema)
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Jane", "age": 25, "score": 88, "status": "inactive", "verified": false}}
	})
	if !strings.HasPrefix(text, "Elicitation completed: action=accept") || schema.RequestedSchema.Properties["score"]["default"] != 95.5 {
		t.Errorf("test_elicitation_sep1034_defaults: %q, schema %v", text, schema.RequestedSchema.Properties)
	}

	// A modern request on the same process.
	res := c.call(4, "tools/call", map[string]any{"name": "test_simple_text"})
	wantResultType(t, res, "complete")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
