package mcp

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// Allocation guards on the hot paths: a regression fails the test suite.
// (Timing is never asserted in tests; see the benchmarks.)

func TestAllocsHTTPToolCall(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	h := NewHTTPHandler(benchServer(), nil)
	r := benchRequest(t, benchBody)
	w := &benchWriter{h: http.Header{}}
	body := &bytes.Reader{}
	n := testing.AllocsPerRun(200, func() {
		body.Reset(benchBody)
		r.Body = io.NopCloser(body)
		w.reset()
		h.ServeHTTP(w, r)
	})
	if w.code != 200 {
		t.Fatalf("status %d: %s", w.code, w.body)
	}
	const budget = 26 // measured: 22
	if n > budget {
		t.Errorf("tools/call through the HTTP handler: %.0f allocations, budget %d", n, budget)
	}
}

func TestAllocsStreamToolCall(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	s := benchServer()
	line := append([]byte(nil), benchBody...)
	c, _ := s.decodeCall(line)
	n := testing.AllocsPerRun(200, func() {
		c, _ := s.decodeCall(line)
		res, _ := s.execute(t.Context(), c, nil)
		s.appendResult(nil, c.msg.ID, res)
	})
	if c == nil {
		t.Fatal("decode failed")
	}
	const budget = 23 // measured: 19
	if n > budget {
		t.Errorf("decode + dispatch + encode: %.0f allocations, budget %d", n, budget)
	}
	if testing.Verbose() {
		t.Logf("decode + dispatch + encode: %.0f allocations", n)
	}
}
