package mcp

import (
	"encoding/json"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzLegacyHTTP sends arbitrary bodies to a 2025-11-25 session of the
// Streamable HTTP handler (and, with mode, without the session header or
// with a wrong protocol version). Nothing may panic or hang, the status is
// one the transport defines, and every message in the answer is a
// well-formed JSON-RPC response or notification.
func FuzzLegacyHTTP(f *testing.F) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"x"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","inputResponses":{},"requestState":"x"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"test://static"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"test://items/1"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"A"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":1,"result":{"action":"accept"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{`, ``, `null`,
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	// No answer ever comes to a live request here: a hand-built
	// InputRequiredResult is refused rather than sent as one.
	s := newTestServer(f, &ServerOptions{RefuseLegacyInputRequired: true})
	h := NewHTTPHandler(s, &HTTPOptions{MaxBodyBytes: 64 << 10})
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(legacyInitLine(legacyCaps)))
	r.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(w, r)
	sid := w.Header().Get("Mcp-Session-Id")
	if sid == "" {
		f.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(string(body)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", LegacyProtocolVersion)
		switch mode % 4 {
		case 0, 1:
			r.Header.Set("Mcp-Session-Id", sid)
		case 2:
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("MCP-Protocol-Version", "2025-06-18")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case 200, 202, 400, 404, 413, 415:
		default:
			t.Fatalf("unexpected status %d", w.Code)
		}
		if w.Code == 202 || w.Body.Len() == 0 {
			return
		}
		for _, m := range wiretest.SplitMessages(w.Header().Get("Content-Type"), w.Body.Bytes()) {
			if strings.TrimSpace(string(m)) == "" {
				continue // the priming event of a resumable stream has no data
			}
			checkJSONRPCMessage(t, m)
		}
	})
}

// FuzzLegacyBatch sends arbitrary bodies to a 2025-03-26 session, whose
// revision has JSON-RPC batches (and, with mode, to a 2025-11-25 session,
// which refuses them). Nothing may panic or hang, the status is one the
// transport defines, and the answer is a JSON-RPC message or an array of
// them.
func FuzzLegacyBatch(f *testing.F) {
	seeds := []string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"p"}}},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}},{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}]`,
		`[{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"A"}}},1,"x",null]`,
		`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}]`,
		`[{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}]`,
		`[]`, `[[]]`, `[`, `[{}]`,
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	s := newTestServer(f, nil)
	h := NewHTTPHandler(s, &HTTPOptions{MaxBodyBytes: 64 << 10})
	open := func(version string) string {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(strings.Replace(legacyInitLine(legacyCaps), LegacyProtocolVersion, version, 1)))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(w, r)
		sid := w.Header().Get("Mcp-Session-Id")
		if sid == "" {
			f.Fatalf("initialize: %d %s", w.Code, w.Body)
		}
		return sid
	}
	batching, refusing := open("2025-03-26"), open("2025-11-25")
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(string(body)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		sid := batching
		if mode%4 == 3 {
			sid = refusing
		}
		r.Header.Set("Mcp-Session-Id", sid)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case 200, 202, 400, 404, 413, 415:
		default:
			t.Fatalf("unexpected status %d", w.Code)
		}
		if w.Code == 202 || w.Body.Len() == 0 {
			return
		}
		for _, m := range wiretest.SplitMessages(w.Header().Get("Content-Type"), w.Body.Bytes()) {
			m = []byte(strings.TrimSpace(string(m)))
			if len(m) == 0 {
				continue // the priming event of a resumable stream has no data
			}
			if m[0] != '[' {
				checkJSONRPCMessage(t, m)
				continue
			}
			var arr []json.RawMessage
			if err := json.Unmarshal(m, &arr); err != nil || len(arr) == 0 {
				t.Fatalf("bad batch answer %q: %v", m, err)
			}
			for _, e := range arr {
				checkJSONRPCMessage(t, e)
			}
		}
	})
}
