package bench

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// writeCounter counts the writes the server makes on the connections it
// accepts.
type writeCounter struct {
	net.Listener
	writes atomic.Int64
}

func (l *writeCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: &l.writes}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// TestLegacyElicitWritesAsFewAsRaw checks that a 2025-11-25 call whose
// tool elicits live costs roundtrip's server no more writes than the
// hand-written baseline: the head, the priming event and the question in
// one, the 202 of the answer in one, the result with the end of the body
// in one (issue 22: the framing costs one write, not an extra flush).
func TestLegacyElicitWritesAsFewAsRaw(t *testing.T) {
	const calls = 20
	count := func(s subject) int64 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		wc := &writeCounter{Listener: ln}
		srv := &http.Server{Handler: s.handler(t), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(wc)
		defer srv.Close()
		c := s.httpClient(t, "http://"+ln.Addr().String()+"/mcp", newHTTPClient(nil))
		defer c.close()
		ctx := context.Background()
		if err := callWant(ctx, c, "ask", "hello", askResult); err != nil {
			t.Fatal(err)
		}
		before := wc.writes.Load()
		for range calls {
			if err := callWant(ctx, c, "ask", "hello", askResult); err != nil {
				t.Fatal(err)
			}
		}
		// The answer's 202 may still be on its way when the call
		// returns: wait for the writes the baseline makes (bounded).
		for end := time.Now().Add(5 * time.Second); wc.writes.Load()-before < 3*calls && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		return wc.writes.Load() - before
	}
	rt, raw := count(roundtripLegacy), count(rawLegacy)
	t.Logf("server writes for %d calls: roundtrip %d, raw %d", calls, rt, raw)
	if raw != 3*calls {
		t.Fatalf("the raw baseline made %d writes, want %d", raw, 3*calls)
	}
	if rt > raw {
		t.Fatalf("roundtrip's server made %d writes for %d calls, the raw baseline %d", rt, calls, raw)
	}
}
