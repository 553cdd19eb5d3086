package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// The benchmarks measure one tools/call with small arguments and a small
// text result. BenchmarkHTTPHandler* are the server-side cost alone: the
// http.Handler with a recorder and a prepared body; the Bare baseline is a
// plain net/http handler that decodes the same JSON-RPC request with
// encoding/json and writes a fixed result.

var benchBody = []byte(req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"hello"}`))

func benchServer() *Server {
	s := NewServer(Implementation{Name: "bench", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			return TextResult("hello"), nil
		})
	return s
}

func benchRequest(b testing.TB, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
	for k, v := range headersFor(b, string(body)) {
		r.Header[k] = v
	}
	return r
}

// benchWriter is a minimal, reusable http.ResponseWriter, so that the
// handler benchmarks measure the handler and not the harness.
type benchWriter struct {
	h    http.Header
	code int
	body []byte
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Write(b []byte) (int, error) { w.body = append(w.body, b...); return len(b), nil }
func (w *benchWriter) reset() {
	clear(w.h)
	w.code, w.body = 200, w.body[:0]
}

// benchHandler serves the prepared body b.N times through h, reusing the
// request and the writer.
func benchHandler(b *testing.B, h http.Handler) {
	r := benchRequest(b, benchBody)
	w := &benchWriter{h: http.Header{}}
	body := &bytes.Reader{}
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(benchBody)
		r.Body = io.NopCloser(body)
		w.reset()
		h.ServeHTTP(w, r)
		if w.code != 200 || !bytes.Contains(w.body, []byte(`"hello"`)) {
			b.Fatalf("status %d: %s", w.code, w.body)
		}
	}
}

func BenchmarkHTTPHandler(b *testing.B) { benchHandler(b, NewHTTPHandler(benchServer(), nil)) }

// BenchmarkHTTPHandlerRecorder is the same call with a fresh
// httptest request and recorder per iteration.
func BenchmarkHTTPHandlerRecorder(b *testing.B) {
	h := NewHTTPHandler(benchServer(), nil)
	hdr := headersFor(b, string(benchBody))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(benchBody))
		r.Header = hdr.Clone()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// bareHandler is the baseline: decode the JSON-RPC request with
// encoding/json, write a fixed result.
var bareHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			Meta      map[string]any  `json:"_meta"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"hello"}]}}`)
})

func BenchmarkHTTPHandlerBare(b *testing.B) { benchHandler(b, bareHandler) }

// lineRoundTrip writes one request line and reads one response line.
func lineRoundTrip(b *testing.B, w io.Writer, br *bufio.Reader) {
	if _, err := w.Write(append(benchBody, '\n')); err != nil {
		b.Fatal(err)
	}
	line, err := br.ReadSlice('\n')
	if err != nil || !bytes.Contains(line, []byte(`"hello"`)) {
		b.Fatalf("%q %v", line, err)
	}
}

func BenchmarkToolCallInMemory(b *testing.B) {
	ce, se := NewInMemoryTransports()
	go benchServer().ServeStream(context.Background(), se, se, nil)
	defer ce.Close()
	br := bufio.NewReader(ce)
	b.ReportAllocs()
	for b.Loop() {
		lineRoundTrip(b, ce, br)
	}
}

func BenchmarkToolCallStdioPipe(b *testing.B) {
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	go func() { benchServer().ServeStream(context.Background(), inR, outW, nil); outW.Close() }()
	defer inW.Close()
	br := bufio.NewReader(outR)
	b.ReportAllocs()
	for b.Loop() {
		lineRoundTrip(b, inW, br)
	}
}

func BenchmarkToolCallLoopbackHTTP(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: NewHTTPHandler(benchServer(), nil)}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/mcp"
	hdr := headersFor(b, string(benchBody))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.ReportAllocs()
	for b.Loop() {
		r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
		r.Header = hdr.Clone()
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.StatusCode)
		}
	}
}
