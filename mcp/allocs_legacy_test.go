package mcp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Allocation guards on the 2025-11-25 session call and on the stream
// transport end to end (framing included, which TestAllocsStreamToolCall
// leaves out). Each budget is the count measured when the guard was
// written plus a small margin, both stated next to it; a regression past
// the margin fails the suite. (Timing is never asserted in tests.)

const legacyAllocsInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"allocs","version":"1"}}}`

var legacyAllocsCall = []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)

func TestAllocsLegacyHTTPSessionToolCall(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	h := NewHTTPHandler(benchServer(), nil)
	post := func(session string, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			r.Header.Set(headerSessionID, session)
			r.Header.Set("Mcp-Protocol-Version", LegacyProtocolVersion)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	init := post("", []byte(legacyAllocsInit))
	id := init.Header().Get(headerSessionID)
	if init.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", init.Code, init.Body)
	}
	if w := post(id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); w.Code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", w.Code, w.Body)
	}
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(headerSessionID, id)
	r.Header.Set("Mcp-Protocol-Version", LegacyProtocolVersion)
	r.ContentLength = int64(len(legacyAllocsCall))
	w := &benchWriter{h: http.Header{}}
	body := &bytes.Reader{}
	serve := func() {
		body.Reset(legacyAllocsCall)
		r.Body = io.NopCloser(body)
		w.reset()
		h.ServeHTTP(w, r)
	}
	serve()
	if w.code != http.StatusOK || !bytes.Contains(w.body, []byte(`"text":"hello"`)) || bytes.Contains(w.body, []byte(`resultType`)) {
		t.Fatalf("session tools/call: %d %s", w.code, w.body)
	}
	n := testing.AllocsPerRun(200, serve)
	const budget = legacyHTTPAllocsMeasured + 4
	if n > budget {
		t.Errorf("session tools/call through the HTTP handler: %.0f allocations, budget %d", n, budget)
	}
	if testing.Verbose() {
		t.Logf("session tools/call through the HTTP handler: %.0f allocations", n)
	}
}

// streamAllocs serves benchServer on an io.Pipe pair with ServeStream,
// sends the lines of setup, then measures one request line and the
// reading of its response line.
func streamAllocs(t *testing.T, setup []string, call []byte, want string) float64 {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		benchServer().ServeStream(context.Background(), inR, outW, nil)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close(); <-done })
	br := bufio.NewReaderSize(outR, 4096)
	for _, line := range setup {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains([]byte(line), []byte(`"id"`)) {
			if _, err := br.ReadSlice('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
	line := append(append([]byte(nil), call...), '\n')
	var got []byte
	exchange := func() {
		if _, err := inW.Write(line); err != nil {
			t.Fatal(err)
		}
		var err error
		if got, err = br.ReadSlice('\n'); err != nil {
			t.Fatal(err)
		}
	}
	exchange()
	if !bytes.Contains(got, []byte(want)) {
		t.Fatalf("response %s, want %s in it", got, want)
	}
	return testing.AllocsPerRun(200, exchange)
}

func TestAllocsLegacyStreamToolCall(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	n := streamAllocs(t, []string{legacyAllocsInit, `{"jsonrpc":"2.0","method":"notifications/initialized"}`}, legacyAllocsCall, `"text":"hello"`)
	const budget = legacyStreamAllocsMeasured + 4
	if n > budget {
		t.Errorf("session tools/call on a byte stream: %.0f allocations, budget %d", n, budget)
	}
	if testing.Verbose() {
		t.Logf("session tools/call on a byte stream: %.0f allocations", n)
	}
}

func TestAllocsStreamTransportToolCall(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	n := streamAllocs(t, nil, benchBody, `"text":"hello"`)
	const budget = streamTransportAllocsMeasured + 4
	if n > budget {
		t.Errorf("2026-07-28 tools/call through ServeStream (framing included): %.0f allocations, budget %d", n, budget)
	}
	if testing.Verbose() {
		t.Logf("2026-07-28 tools/call through ServeStream: %.0f allocations", n)
	}
}

// The counts measured when the guards were written (go1.26, linux/amd64).
const (
	legacyHTTPAllocsMeasured      = 38
	legacyStreamAllocsMeasured    = 23
	streamTransportAllocsMeasured = 25
)
