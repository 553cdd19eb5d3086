package mcp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The SSE benchmarks measure a tools/call whose handler reports progress
// three times before its result, so that the response is an event
// stream: on 2026-07-28 (BenchmarkHTTPHandlerSSE) and on a 2025-11-25
// session (BenchmarkLegacySSEResponse, resumable events kept in the
// session's replay log). The writer is the reusable benchWriter, with a
// Flush, so that the stream is flushed as it would be over a socket.

type flushingBenchWriter struct{ benchWriter }

func (w *flushingBenchWriter) Flush() {}

func sseBenchServer() *Server {
	s := benchServer()
	s.AddTool(&Tool{Name: "progress"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		for i := range 3 {
			ReportProgress(ctx, float64(i), 3, "step")
		}
		return TextResult("hello"), nil
	})
	return s
}

func BenchmarkHTTPHandlerSSE(b *testing.B) {
	h := NewHTTPHandler(sseBenchServer(), &HTTPOptions{KeepAlive: -1})
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` +
		strings.Replace(metaJSON(""), "{", `{"progressToken":1,`, 1) + `,"name":"progress"}}`)
	r := benchRequest(b, body)
	w := &flushingBenchWriter{benchWriter{h: http.Header{}}}
	rd := &bytes.Reader{}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		r.Body = io.NopCloser(rd)
		w.reset()
		h.ServeHTTP(w, r)
		if w.code != 200 || bytes.Count(w.body, []byte("event: message\n")) != 4 {
			b.Fatalf("status %d: %s", w.code, w.body)
		}
	}
}

func BenchmarkLegacySSEResponse(b *testing.B) {
	h := NewHTTPHandler(sseBenchServer(), &HTTPOptions{KeepAlive: -1})
	init := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(legacyInitLine(`{}`)))
	init.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, init)
	sid := rec.Header().Get("Mcp-Session-Id")
	if sid == "" {
		b.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":1}}}`)
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Session-Id", sid)
	r.Header.Set("MCP-Protocol-Version", LegacyProtocolVersion)
	w := &flushingBenchWriter{benchWriter{h: http.Header{}}}
	rd := &bytes.Reader{}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		r.Body = io.NopCloser(rd)
		w.reset()
		h.ServeHTTP(w, r)
		if w.code != 200 || bytes.Count(w.body, []byte("event: message\n")) != 4 {
			b.Fatalf("status %d: %s", w.code, w.body)
		}
	}
}

// BenchmarkClientReadSSE is the client's side: reading a response stream
// of three notifications and the response.
func BenchmarkClientReadSSE(b *testing.B) {
	var stream bytes.Buffer
	stream.WriteString("id: 1-0\nretry: 1000\ndata: \n\n")
	for i := range 3 {
		stream.WriteString("event: message\nid: 1-" + itoa(i+1) + "\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":" + itoa(i) + "}}\n\n")
	}
	stream.WriteString("event: message\nid: 1-4\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n\n")
	data := stream.Bytes()
	tr := &httpClientTransport{max: defaultMaxMessageBytes}
	notes := 0
	r := &wireRequest{id: 7, method: MethodToolsCall, notify: func(string, []byte) { notes++ }}
	rd := &bytes.Reader{}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(data)
		res, err := tr.readSSE(context.Background(), rd, r, &sseState{})
		if err != nil || !bytes.Contains(res, []byte("hello")) {
			b.Fatalf("%s %v", res, err)
		}
	}
	if notes == 0 {
		b.Fatal("no notifications")
	}
}
