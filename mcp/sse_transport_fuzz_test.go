package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// FuzzSSEMessages POSTs arbitrary bodies to an HTTP+SSE session (held
// open by a reader on loopback) and, with mode, to no session or to an
// unknown one. Nothing may panic or hang, the status is one the
// transport defines, and every message the stream carries is a
// well-formed JSON-RPC message.
func FuzzSSEMessages(f *testing.F) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"x"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"haiku"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"test://static"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"A"}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{`, ``, `null`,
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	s := samplingServer(f, nil)
	h := NewSSEHandler(s, &SSEOptions{HTTPOptions: HTTPOptions{MaxBodyBytes: 64 << 10}})
	ts := httptest.NewServer(h)
	f.Cleanup(ts.Close)
	resp, err := http.Get(ts.URL + "/sse")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { resp.Body.Close() })
	rd := sse.NewReader(resp.Body, 0, 0)
	ev, err := rd.Next()
	if err != nil || ev.Name != "endpoint" {
		f.Fatalf("first event %+v %v", ev, err)
	}
	base, _ := url.Parse(ts.URL + "/sse")
	ep, _ := base.Parse(string(ev.Data))
	endpoint := ep.Path + "?" + ep.RawQuery
	var mu sync.Mutex
	var bad []string
	go func() {
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			if ev.Name != "message" || !wellFormedMessage(ev.Data) {
				mu.Lock()
				bad = append(bad, ev.Name+": "+string(ev.Data))
				mu.Unlock()
			}
		}
	}()
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"fuzz","version":"1"}}}`
	for _, b := range []string{initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "http://localhost"+endpoint, strings.NewReader(b))
		h.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted {
			f.Fatalf("%s: %d", b, w.Code)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		target := endpoint
		switch mode % 4 {
		case 2:
			target = "/sse"
		case 3:
			target = "/sse?sessionId=00ff"
		}
		r := httptest.NewRequest(http.MethodPost, "http://localhost"+target, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case 202, 400, 404, 405, 413:
		default:
			t.Fatalf("unexpected status %d", w.Code)
		}
		if w.Code != 202 {
			checkJSONRPCMessage(t, w.Body.Bytes())
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("the stream carried %q", bad)
		}
	})
}

// wellFormedMessage reports whether b is one JSON-RPC 2.0 message.
func wellFormedMessage(b []byte) bool {
	var v map[string]json.RawMessage
	if json.Unmarshal(b, &v) != nil || string(v["jsonrpc"]) != `"2.0"` {
		return false
	}
	_, e := jsonrpc.Decode(b)
	return e == nil
}

// FuzzClientSSEStream feeds an arbitrary event stream, after its
// endpoint event, to the client's HTTP+SSE reader while a call waits:
// nothing may panic or hang, and the call gets an answer (its response,
// or the end of the stream).
func FuzzClientSSEStream(f *testing.F) {
	seeds := []string{
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n",
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\",\"params\":{}}\n\n",
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n\n",
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"x\"}}\n\n",
		"event: endpoint\ndata: /other\n\n: keep-alive\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\n\n",
		"event: message\ndata: [1,2]\n\n",
		"",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		tr := NewHTTPClientTransport("http://127.0.0.1:1/sse", &HTTPClientOptions{MaxMessageBytes: 4096}).(*httpClientTransport)
		defer tr.Close()
		tr.bind(&clientHooks{
			unrouted: func(string, []byte) {},
			serve:    func(context.Context, jsonrpc.ID, string, []byte) []byte { return nil },
		})
		ctx, cancel := context.WithCancel(tr.ctx)
		l := &sseLink{s: &tr.sse, endpoint: "http://127.0.0.1:1/sse?sessionId=x", ctx: ctx, cancel: cancel}
		l.calls = newCallTable(&l.mu)
		c := &waitingCall{ch: make(chan streamReply, 1), method: MethodToolsList, notify: func(string, []byte) {}}
		l.calls.addLocked(1, c)
		l.read(sse.NewReader(bytes.NewReader(stream), 4096, 0), io.NopCloser(nil))
		select {
		case <-c.ch:
		default:
			t.Fatal("the waiting call got no answer when the stream ended")
		}
		if l.ended() == nil {
			t.Fatal("the link is not marked ended")
		}
	})
}
