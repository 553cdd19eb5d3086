package mcp

import (
	"encoding/json"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHTTPHandler sends arbitrary bodies (with headers derived from the
// body, or mangled) to the Streamable HTTP handler. Nothing may panic or
// hang, the status is one the transport defines, and every message in
// the answer is a well-formed JSON-RPC response or notification.
func FuzzHTTPHandler(f *testing.F) {
	seeds := []string{
		req(1, MethodDiscover, ""),
		req(2, MethodToolsList, `"cursor":"YzE6ZWNobw"`),
		req(3, MethodToolsCall, `"name":"echo","arguments":{"text":"hi"}`),
		req(4, MethodToolsCall, `"name":"ask","inputResponses":{"name":{"action":"accept","content":{"name":"A"}}},"requestState":"asked"`),
		req(5, MethodToolsCall, `"name":"region","arguments":{"region":"x","count":1,"dry":false}`),
		req(6, MethodPromptsGet, `"name":"greet","arguments":{"who":"B"}`),
		req(7, MethodResourcesRead, `"uri":"test://items/9"`),
		req(8, methodComplete, `"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"A"}`),
		req(9, MethodToolsCall, `"name":"ask","inputResponses":null,"requestState":7`),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":[]}}}}`,
		`{"jsonrpc":"2.0","id":"\ud800","method":"initialize","params":{}}`,
		req(10, MethodToolsCall, `"name":"region","arguments":{"region":"x","REGION":"y"}`),
		req(11, MethodToolsCall, `"name":"region","arguments":{"region":"x","\u0072egion":"y"}`),
		req(12, MethodToolsCall, `"name":"echo","arguments":{"a":[{"b":1,"b":2}]},"argumentſ":{}`),
		req(13, MethodToolsCall, `"name":"region","arguments":{"count":16.0,"dry":true}`),
		req(14, MethodPromptsGet, `"name":"greet","arguments":{"who":"A","w\u0068o":"B"}`),
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"tools/list\",\"params\":{}}",
		`{`, ``, `null`,
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	h := NewHTTPHandler(newTestServer(f, nil), &HTTPOptions{MaxBodyBytes: 64 << 10})
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(string(body)))
		for k, v := range headersFor(t, string(body)) {
			r.Header[k] = v
		}
		switch mode % 4 {
		case 1:
			r.Header.Del(HeaderMethod)
		case 2:
			r.Header.Set(HeaderName, "=?base64?"+string(body[:min(len(body), 8)])+"?=")
		case 3:
			r.Header.Set("Mcp-Param-Region", string(body[:min(len(body), 5)]))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case 200, 202, 400, 403, 404, 413, 415:
		default:
			t.Fatalf("unexpected status %d", w.Code)
		}
		if w.Code == 202 {
			return
		}
		msgs := wiretest.SplitMessages(w.Header().Get("Content-Type"), w.Body.Bytes())
		if len(msgs) == 0 {
			t.Fatalf("status %d with no message", w.Code)
		}
		for _, m := range msgs {
			checkJSONRPCMessage(t, m)
		}
	})
}

// checkJSONRPCMessage fails unless m is a JSON-RPC notification or a
// response with exactly one of result and error.
func checkJSONRPCMessage(t *testing.T, m []byte) {
	t.Helper()
	var v struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   *Error          `json:"error"`
	}
	if err := json.Unmarshal(m, &v); err != nil || v.JSONRPC != "2.0" {
		t.Fatalf("bad message %q: %v", m, err)
	}
	if v.Method == "" && (v.Result == nil) == (v.Error == nil) {
		t.Fatalf("response needs exactly one of result and error: %s", m)
	}
}
