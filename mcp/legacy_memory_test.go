package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// Session hygiene: a finished session (DELETE or expiry) leaves nothing
// behind, and what one live session may hold is bounded.

// churnSession runs one whole legacy session against h in memory:
// initialize, initialized, a tool call, a subscription, then DELETE (or
// nothing, leaving the session to expire).
func churnSession(tb testing.TB, h http.Handler, del bool) {
	do := func(method, body, sid string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://localhost/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("MCP-Protocol-Version", LegacyProtocolVersion)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := do(http.MethodPost, legacyInitLine(legacyCaps), "")
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != 200 || sid == "" {
		tb.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	if w := do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid); w.Code != 202 {
		tb.Fatalf("initialized: %d", w.Code)
	}
	if w := do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, sid); !strings.Contains(w.Body.String(), `"text":"x"`) {
		tb.Fatalf("tools/call: %d %s", w.Code, w.Body)
	}
	if w := do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://static"}}`, sid); w.Code != 200 {
		tb.Fatalf("subscribe: %d", w.Code)
	}
	if del {
		if w := do(http.MethodDelete, "", sid); w.Code != http.StatusNoContent {
			tb.Fatalf("DELETE: %d", w.Code)
		}
	}
}

func heapAlloc() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func hubListeners(s *Server) int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return len(s.hub.listeners)
}

// The sessions run in a bubble: its clock stands still while they are
// served, however loaded the machine, so none expires before its last
// request; then exactly one idle timeout passes and the undeleted
// sessions (those not evicted for room) must be gone, with everything
// they held.
func TestLegacySessionsLeaveNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := dualServer(t, nil)
		const idle = 300 * time.Millisecond
		h := NewHTTPHandler(s, &HTTPOptions{Legacy: LegacyHTTPOptions{IdleTimeout: idle}}).(*httpHandler)
		goroutines := runtime.NumGoroutine()
		churnSession(t, h, true) // warm up
		before := heapAlloc()
		for i := range 2000 {
			churnSession(t, h, i%2 == 0) // half DELETEd, half left to expire
		}
		// The undeleted beyond MaxSessions were evicted for room; the rest
		// wait for their idle timeout.
		if h.legacy.sessionCount() == 0 {
			t.Fatal("no session left to expire")
		}
		time.Sleep(idle)
		// An expiring session leaves the registry first and drops its hub
		// listener just after: Wait lets both finish.
		synctest.Wait()
		if n := h.legacy.sessionCount(); n != 0 {
			t.Fatalf("%d sessions left", n)
		}
		if n := hubListeners(s); n != 0 {
			t.Errorf("%d hub listeners left", n)
		}
		s.legacy.mu.Lock()
		elicits := len(s.legacy.elicits)
		s.legacy.mu.Unlock()
		if elicits != 0 {
			t.Errorf("%d elicitation ids left", elicits)
		}
		if grown := heapAlloc() - before; grown > 1<<20 {
			t.Errorf("heap grew by %d bytes over 2000 finished sessions", grown)
		}
		if n := runtime.NumGoroutine(); n > goroutines+2 {
			t.Errorf("%d goroutines, %d before", n, goroutines)
		}
	})
}

// The flood call has an id of its own: it is still in flight when the
// subscriptions start, and a request reusing its id is refused (id in
// use), which once made the last subscription the 1024th, not the 1025th.
func TestLegacySessionMemoryIsBounded(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	release := make(chan struct{})
	s.AddTool(&Tool{Name: "flood"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		CloseLegacySSEStream(ctx)
		for i := range 2000 {
			ReportProgress(ctx, float64(i), 2000, strings.Repeat("x", 100))
		}
		<-release
		return TextResult("done"), nil
	})
	const budget = 16 << 10
	ts, h := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxEventBytes: budget}})
	c := newLegacyClient(t, ts.URL, legacyCaps)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.post(`{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"flood","_meta":{"progressToken":1}}}`, nil)
	}()
	<-done
	hs := h.legacy.lookup(c.sid)
	testutil.Eventually(t, 5*time.Second, "2000 progress events", func() bool {
		// Lock order: a stream's mu before the session's smu, never inside.
		hs.smu.Lock()
		st := hs.streams[1]
		var bytes int
		if hs.log != nil {
			bytes = hs.log.Size()
		}
		hs.smu.Unlock()
		var n int
		if st != nil {
			st.mu.Lock()
			n = int(st.seq)
			st.mu.Unlock()
		}
		if bytes > budget {
			t.Fatalf("the session keeps %d event bytes, budget %d", bytes, budget)
		}
		return n >= 2000
	})
	close(release)

	// Subscriptions are bounded too.
	for i := range maxLegacySubscriptions {
		if res := c.request(methodSubscribe, fmt.Sprintf(`{"uri":"test://r/%d"}`, i)); res["result"] == nil {
			t.Fatalf("subscription %d refused: %v", i+1, res)
		}
	}
	last := c.request(methodSubscribe, fmt.Sprintf(`{"uri":"test://r/%d"}`, maxLegacySubscriptions))
	if errorCode(t, last) != CodeInvalidParams {
		t.Errorf("subscription %d accepted: %v", maxLegacySubscriptions+1, last)
	}
}

// BenchmarkLegacySessionChurn measures one whole legacy session
// (initialize, initialized, tools/call, resources/subscribe, DELETE) and
// reports the heap still held after all of them finished, per session:
// it stays at zero whatever the number of sessions, which the
// sub-benchmarks show for 100 to 10000 finished sessions.
func BenchmarkLegacySessionChurn(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s, _ := dualServer(b, nil)
			h := NewHTTPHandler(s, nil).(*httpHandler)
			churnSession(b, h, true)
			before := heapAlloc()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for range n {
					churnSession(b, h, true)
				}
			}
			b.StopTimer()
			retained := heapAlloc() - before
			if h.legacy.sessionCount() != 0 {
				b.Fatalf("%d sessions open", h.legacy.sessionCount())
			}
			b.ReportMetric(float64(retained), "retained-heap-B")
			b.ReportMetric(float64(retained)/float64(n*b.N), "retained-B/session")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/session")
		})
	}
}

func TestLegacyMaxSessionsEndsTheLongestIdle(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, h := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessions: 2}})
	// The idle list is in order of use, not of the clock: no pause needed
	// between the sessions.
	first := newLegacyClient(t, ts.URL, `{}`)
	second := newLegacyClient(t, ts.URL, `{}`)
	first.request(methodPing, "") // now second is the longest idle
	third := newLegacyClient(t, ts.URL, `{}`)
	if h.legacy.sessionCount() != 2 || h.legacy.lookup(second.sid) != nil || h.legacy.lookup(first.sid) == nil || h.legacy.lookup(third.sid) == nil {
		t.Fatalf("sessions after the third initialize: first %v second %v third %v",
			h.legacy.lookup(first.sid) != nil, h.legacy.lookup(second.sid) != nil, h.legacy.lookup(third.sid) != nil)
	}
	// Sessions with an exchange in progress are never ended for room.
	for _, c := range []*legacyClient{first, third} {
		resp := c.get("")
		defer resp.Body.Close()
	}
	r, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(legacyInitLine(`{}`)))
	r.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("initialize with every session busy: %d", resp.StatusCode)
	}
}

// A subscription request that reaches a session after it ended (it was
// found, then DELETEd, expired or evicted before the request ran) fails
// with the "Session not found" code; it used to answer {}.
func TestSubscribeOnAnEndedSessionFails(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, h := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, `{}`)
	hs := h.legacy.lookup(c.sid)
	scope := hs.scope()
	h.legacy.closeSession(hs)
	for _, method := range []string{methodSubscribe, methodUnsubscribe} {
		_, err := scope.extra(context.Background(), method, &SubscribeRequest{URI: "test://static"})
		var e *Error
		if !errors.As(err, &e) || e.Code != codeSessionNotFound {
			t.Errorf("%s on an ended session: %v, want code %d", method, err, codeSessionNotFound)
		}
	}
}
