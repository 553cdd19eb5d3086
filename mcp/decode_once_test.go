package mcp

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// countDecodes counts s's envelope and params decodes until the test
// ends.
func countDecodes(t *testing.T, s *Server) (envelopes, params *atomic.Int64) {
	envelopes, params = new(atomic.Int64), new(atomic.Int64)
	s.hooks.Store(&testHooks{
		envelopeDecoded: func() { envelopes.Add(1) },
		paramsDecoded:   func() { params.Add(1) },
	})
	t.Cleanup(func() { s.hooks.Store(nil) })
	return envelopes, params
}

// Every message is decoded once, whatever its era: the envelope once,
// the params (of a request) once, in the era the transport chose before
// decoding them.
func TestEveryMessageIsDecodedOnce(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)
	stateless, _ := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{Stateless: true}})
	p := newParty(t, ts.URL, "", nil)
	sid, _, _ := p.initialize()
	if sid == "" {
		t.Fatal("no session")
	}
	sp := newParty(t, stateless.URL, "", nil)
	env, par := countDecodes(t, s)
	check := func(name string, wantParams int64, send func()) {
		t.Helper()
		env.Store(0)
		par.Store(0)
		send()
		if e, p := env.Load(), par.Load(); e != 1 || p != wantParams {
			t.Errorf("%s: %d envelope and %d params decodes, want 1 and %d", name, e, p, wantParams)
		}
	}
	h := NewHTTPHandler(s, nil)
	check("modern tools/call", 1, func() { post(t, h, req(1, MethodToolsCall, `"name":"provision","arguments":{}`)) })
	check("modern tools/list with an unsupported version", 1, func() {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`
		doHTTP(t, h, body, headersFor(t, body))
	})
	check("modern notification", 0, func() { post(t, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`) })
	check("legacy initialize", 0, func() { p.initialize() })
	check("legacy session request", 1, func() { p.do(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil) })
	check("legacy session notification", 0, func() { p.do(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil) })
	check("legacy stateless request", 1, func() {
		sp.do("", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, http.Header{HeaderProtocolVersion: {LegacyProtocolVersion}})
	})

	// On a stream: a modern request, initialize, then a session request
	// and a modern one on the same connection.
	c := newStreamClient(t, s)
	var mu sync.Mutex
	stream := func(name string, wantParams int64, line string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		check(name, wantParams, func() { c.send(line); c.next() })
	}
	stream("stream: modern request", 1, req(4, MethodToolsList, ""))
	stream("stream: initialize", 0, `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	stream("stream: session request", 1, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	stream("stream: modern request after initialize", 1, req(7, MethodToolsList, ""))
}
