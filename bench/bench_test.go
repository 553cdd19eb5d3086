package bench

import (
	"bytes"
	"context"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The side-by-side benchmarks. Every benchmark has one sub-benchmark per
// subject (roundtrip, gosdk, mcpgo, raw), named
// Benchmark<Workload>/subject=<subject>: cmd/ratios and cmd/chart group
// on it, and `benchstat -col /subject` puts the subjects side by side.
//
//	ToolCall       tools/call echo("hello") over loopback HTTP, client and server
//	Payload10KB    the same with a 10 KiB text argument echoed back as the result
//	Payload1MiB    the same with 1 MiB
//	TwoLegMRTR     tools/call ask over HTTP: input_required (one elicitation,
//	               answered by the client's handler), retry, complete
//	Pipe           tools/call echo("hello") over a pair of os.Pipes (stdio framing)
//	Handler        the server alone: its http.Handler serving the tools/call
//	               request its own client sends (prepared body, reused recorder)
//	Parallel       ToolCall from 4×GOMAXPROCS goroutines through one client
//
// Run with: go test -run '^$' -bench . -benchmem

// payload returns n bytes of text with a newline every 64 bytes, so that
// encoders take their escaping path as they do on real file contents.
func payload(n int) string {
	const line = "the quick brown fox jumps over the lazy dog, 0123456789 abcdefg\n" // 64 bytes
	return strings.Repeat(line, n/len(line)+1)[:n]
}

var (
	payload10KB = payload(10 << 10)
	payload1MiB = payload(1 << 20)
)

func forEachSubject(b *testing.B, fn func(b *testing.B, s subject)) {
	for _, s := range subjects {
		b.Run("subject="+s.name, func(b *testing.B) { fn(b, s) })
	}
}

// same compares a result with the expected text: length and both ends,
// so that a 1 MiB result is not compared byte by byte on every iteration.
func same(got, want string) bool {
	if len(got) != len(want) {
		return false
	}
	if len(want) <= 128 {
		return got == want
	}
	return got[:64] == want[:64] && got[len(got)-64:] == want[len(want)-64:]
}

func benchCalls(b *testing.B, c caller, tool, text, want string) {
	ctx := context.Background()
	if err := callWant(ctx, c, tool, text, want); err != nil { // warm up: connection, schemas
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		got, err := c.call(ctx, tool, text)
		if err != nil {
			b.Fatal(err)
		}
		if !same(got, want) {
			b.Fatalf("got %d bytes, want %d", len(got), len(want))
		}
	}
	if cpu := processCPU() - cpu0; cpu > 0 {
		// The CPU time (user and system, client and server together) of
		// one call: on a machine shared with other work it varies far
		// less than the time per call does.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkToolCall(b *testing.B) {
	forEachSubject(b, func(b *testing.B, s subject) {
		benchCalls(b, httpCaller(b, s, nil), "echo", "hello", "hello")
	})
}

func BenchmarkPayload10KB(b *testing.B) {
	forEachSubject(b, func(b *testing.B, s subject) {
		b.SetBytes(2 * int64(len(payload10KB)))
		benchCalls(b, httpCaller(b, s, nil), "echo", payload10KB, payload10KB)
	})
}

func BenchmarkPayload1MiB(b *testing.B) {
	forEachSubject(b, func(b *testing.B, s subject) {
		b.SetBytes(2 * int64(len(payload1MiB)))
		benchCalls(b, httpCaller(b, s, nil), "echo", payload1MiB, payload1MiB)
	})
}

func BenchmarkTwoLegMRTR(b *testing.B) {
	forEachSubject(b, func(b *testing.B, s subject) {
		benchCalls(b, httpCaller(b, s, nil), "ask", "hello", askResult)
	})
}

func BenchmarkPipe(b *testing.B) {
	forEachSubject(b, func(b *testing.B, s subject) {
		benchCalls(b, pipeCaller(b, s, nil, nil), "echo", "hello", "hello")
	})
}

// BenchmarkInMemory is the pipe call over mcp.NewInMemoryTransports
// (the pair tests and embedded servers use) instead of os.Pipe: roundtrip's
// client and server against the raw line loop on the same pair.
func BenchmarkInMemory(b *testing.B) {
	for _, s := range []subject{roundtripSubject, rawSubject} {
		b.Run("subject="+s.name, func(b *testing.B) {
			ce, se := mcp.NewInMemoryTransports()
			s.servePipe(b, se, se)
			var c caller
			if s.name == roundtripSubject.name {
				c = rtCaller{mcp.NewClient(mcp.NewStreamClientTransport(ce, nil), rtClientOptions())}
			} else {
				c = s.pipeClient(b, ce, ce)
			}
			b.Cleanup(func() { c.close(); ce.Close() })
			benchCalls(b, c, "echo", "hello", "hello")
		})
	}
}

// recorder is a reusable http.ResponseWriter that records the status and
// the body, so that the handler benchmarks measure the handler and not
// the harness.
type recorder struct {
	h    http.Header
	code int
	body []byte
}

func (w *recorder) Header() http.Header { return w.h }
func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *recorder) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}
func (w *recorder) Flush() {}
func (w *recorder) reset() {
	clear(w.h)
	w.code, w.body = 0, w.body[:0]
}

func BenchmarkHandler(b *testing.B) {
	forEachSubject(b, func(b *testing.B, s subject) {
		hdr, body := toolCallRequest(b, s, "hello")
		h := s.handler(b)
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		r.Header = hdr.Clone()
		r.ContentLength = int64(len(body))
		w := &recorder{h: http.Header{}}
		br := &bytes.Reader{}
		serve := func() {
			br.Reset(body)
			r.Body = io.NopCloser(br)
			w.reset()
			h.ServeHTTP(w, r)
			if w.code != http.StatusOK || !bytes.Contains(w.body, []byte(`"text":"hello"`)) {
				b.Fatalf("status %d: %s", w.code, w.body)
			}
		}
		serve()
		b.ReportAllocs()
		for b.Loop() {
			serve()
		}
	})
}

// parallelism is the number of goroutines per GOMAXPROCS in
// BenchmarkParallel: a call spends most of its time waiting on loopback
// I/O, so more callers than CPUs keep the CPUs busy.
const parallelism = 4

func BenchmarkParallel(b *testing.B) {
	forEachSubject(b, func(b *testing.B, s subject) {
		c := httpCaller(b, s, nil)
		ctx := context.Background()
		if err := callWant(ctx, c, "echo", "hello", "hello"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetParallelism(parallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				got, err := c.call(ctx, "echo", "hello")
				if err != nil {
					b.Error(err)
					return
				}
				if got != "hello" {
					b.Errorf("got %q", got)
					return
				}
			}
		})
	})
}
