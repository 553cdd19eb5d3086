package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// FuzzClientResponse feeds arbitrary bytes to the client's response
// decoding: as a JSON body, as an SSE stream, or as lines of the stdio
// framing, answering one of the client's methods; then decodes the
// result as the client would (input_required included: the round is
// answered with stub handlers and the pending call goes through its JSON
// form; a task's states are fuzzed in mcp/tasks, FuzzTaskState).
// Nothing may panic, and what is accepted must be consistent.
func FuzzClientResponse(f *testing.F) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}},"b":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}},"c":{"method":"roots/list","params":{}}},"requestState":"s\ud800"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","requestState":""}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"x":{"method":"tasks/get"}}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"task"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","tools":[{"name":"t","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}}],"nextCursor":""}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"v","data":{"supported":["2026-07-28"]}}}`,
		`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}`,
		": c\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":7,\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\n\ndata: x\r\n\r\n",
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","messages":[{"role":"user","content":{"type":"image","data":"AA==","mimeType":"image/png"}}],"contents":[{"uri":"u","blob":"AA=="}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		"{", "", "null", "[]",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	c := NewClient(NewHTTPClientTransport("http://127.0.0.1:1/mcp", nil), fixtureHandlers(&ClientOptions{Logger: slog.New(slog.DiscardHandler)}))
	methodsFuzzed := []string{MethodToolsCall, MethodPromptsGet, MethodResourcesRead, MethodToolsList, MethodDiscover, methodComplete, methodPromptsList, methodSubscriptionsListen}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		method := methodsFuzzed[int(mode)%len(methodsFuzzed)]
		r := &wireRequest{id: 7, method: method, notify: func(string, []byte) {}}
		var raw []byte
		var err error
		switch int(mode) / len(methodsFuzzed) % 3 {
		case 0:
			tr := &httpClientTransport{max: 64 << 10}
			raw, err = tr.readJSON(&http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(data)), ContentLength: -1}, r)
		case 1:
			tr := &httpClientTransport{max: 64 << 10}
			raw, err = tr.readSSE(context.Background(), bytes.NewReader(data), r, &sseState{})
		case 2:
			raw, err = fuzzStreamLines(data, r)
		}
		if err != nil {
			return
		}
		fuzzDecode(t, c, method, raw)
	})
}

// fuzzStreamLines dispatches data, line by line, to a stream transport
// waiting for request 7.
func fuzzStreamLines(data []byte, r *wireRequest) ([]byte, error) {
	st := &streamClientTransport{max: 64 << 10, log: slog.New(slog.DiscardHandler)}
	st.calls = newCallTable(&st.mu)
	call := &waitingCall{ch: make(chan streamReply, 1), method: r.method, notify: r.notify}
	st.calls.addLocked(7, call)
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			st.dispatch(line)
		}
		select {
		case rep := <-call.ch:
			return rep.result, rep.err
		default:
		}
	}
	return nil, io.EOF
}

func fuzzDecode(t *testing.T, c *Client, method string, raw []byte) {
	switch method {
	case MethodToolsList:
		c.decodeToolsPage(raw)
		return
	case MethodDiscover:
		decodeComplete[DiscoverResult](method, raw)
		return
	case methodComplete:
		decodeComplete[CompleteResult](method, raw)
		return
	case methodPromptsList:
		decodeComplete[ListPromptsResult](method, raw)
		return
	case methodSubscriptionsListen:
		decodeComplete[struct{}](method, raw)
		return
	}
	rt, err := resultTypeOf(method, raw)
	if err != nil {
		return
	}
	if rt == ResultComplete {
		switch method {
		case MethodToolsCall:
			decodeCallToolResult(raw)
		case MethodPromptsGet:
			decodeInto[GetPromptResult](method, raw)
		default:
			decodeInto[ReadResourceResult](method, raw)
		}
		return
	}
	ir, err := decodeInputRequired(method, raw)
	if err != nil {
		return
	}
	if len(ir.keys) > 0 {
		resp, err := c.fulfil(context.Background(), ir)
		if err != nil {
			t.Fatalf("stub handlers failed: %v", err)
		}
		if !json.Valid(resp) {
			t.Fatalf("inputResponses is not valid JSON: %s", resp)
		}
	}
	p := ir.pending(&carrierCall{method: method, target: "x"})
	// Through an encoder that does not escape HTML the state token stays
	// byte for byte; json.Marshal may turn & < > into \u escapes, which
	// keeps the string (the spec compares strings).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		t.Fatalf("marshalling an accepted pending call: %v", err)
	}
	back := roundTripPending(t, buf.Bytes(), p)
	if !bytes.Equal(back.stateToken(), p.stateToken()) {
		t.Fatalf("state token %s became %s", p.stateToken(), back.stateToken())
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("json.Marshal of a pending call: %v", err)
	}
	back = roundTripPending(t, b, p)
	unescape := strings.NewReplacer(`\u0026`, "&", `\u003c`, "<", `\u003e`, ">", `\u2028`, "\u2028", `\u2029`, "\u2029")
	if unescape.Replace(string(back.stateToken())) != unescape.Replace(string(p.stateToken())) {
		t.Fatalf("state token %s became %s", p.stateToken(), back.stateToken())
	}
}

func roundTripPending(t *testing.T, b []byte, p *PendingCall) *PendingCall {
	var back PendingCall
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("pending call does not round-trip: %v\n%s", err, b)
	}
	if back.RequestState != p.RequestState || len(back.InputRequests) != len(p.InputRequests) {
		t.Fatalf("pending call changed in its JSON form:\n%+v\n%+v", p, back)
	}
	return &back
}

// FuzzPendingCallJSON feeds arbitrary bytes to PendingCall.UnmarshalJSON
// (a stored call, meta included, read back in another process): nothing
// may panic, and what is accepted must survive its own JSON form with
// the same call, state and meta.
func FuzzPendingCallJSON(f *testing.F) {
	for _, s := range []string{
		`{"method":"tools/call","name":"t","arguments":{"a":1},"inputRequests":{"q":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"s","meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=b"}}`,
		`{"method":"resources/read","uri":"u","meta":{"n":[1,{"x":null}],"e":{}}}`,
		`{"method":"prompts/get","name":"p","meta":null}`,
		`{"method":"tools/call","meta":7}`,
		`{"method":"tools/list"}`,
		`{"method":"tools/call","name":"t","requestState":"\ud800","meta":{"\u0000":"\u2028"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p PendingCall
		if json.Unmarshal(data, &p) != nil {
			return
		}
		b, err := json.Marshal(&p)
		if err != nil {
			t.Fatalf("an accepted pending call does not marshal: %v", err)
		}
		var back PendingCall
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("pending call does not round-trip: %v\n%s", err, b)
		}
		var m1, m2 []byte
		if len(p.Meta) > 0 || len(back.Meta) > 0 { // an empty meta is omitted
			m1, _ = json.Marshal(p.Meta)
			m2, _ = json.Marshal(back.Meta)
		}
		if back.Method != p.Method || back.Name != p.Name || back.URI != p.URI || back.RequestState != p.RequestState ||
			len(back.InputRequests) != len(p.InputRequests) || !bytes.Equal(m1, m2) {
			t.Fatalf("pending call changed in its JSON form:\n%+v\n%+v", p, back)
		}
	})
}
