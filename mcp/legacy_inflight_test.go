package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// What a session of an earlier revision may hold over HTTP: its
// requests outlive their POSTs, so one session, and one party, has at
// most its bound of them in flight; past it a request is refused with
// the retryable error; a live question ends at its deadline; a request
// whose answer nobody can receive any more is cancelled; and the end of
// the session releases everything.

const (
	floodRequests   = 3000
	floodSessions   = 4
	floodPerSession = 20
	floodPerParty   = 50 // below floodSessions*floodPerSession: the party's bound binds
	floodWorkers    = 16
	floodSlack      = 40 // goroutines besides the held requests (the client's and server's connections settling)
	floodHeapBudget = 4 << 20
)

// unansweredServer has two tools whose questions nobody answers in these
// tests: ask (Elicit, 2025-06-18 and later) and roots (ListRoots, every
// revision).
func unansweredServer(t testing.TB, question time.Duration) *Server {
	s := newTestServer(t, &ServerOptions{LegacyQuestionTimeout: question})
	s.AddTool(&Tool{Name: "ask"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if _, err := Elicit[struct {
			Name string `json:"name"`
		}](ctx, "Your name?"); err != nil {
			return nil, err
		}
		return TextResult("thanks"), nil
	})
	s.AddTool(&Tool{Name: "roots"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if _, err := ListRoots(ctx); err != nil {
			return nil, err
		}
		return TextResult("thanks"), nil
	})
	return s
}

var floodBounds = LegacyHTTPOptions{MaxRequestsPerSession: floodPerSession, MaxRequestsPerPrincipal: floodPerParty}

// floodOutcome counts how the flood's requests were answered.
type floodOutcome struct {
	admitted, refused atomic.Int64
	other             atomic.Int64
	mu                sync.Mutex
	firstOther        string
}

func (o *floodOutcome) odd(what string) {
	o.other.Add(1)
	o.mu.Lock()
	if o.firstOther == "" {
		o.firstOther = what
	}
	o.mu.Unlock()
}

// retryableBusy reports whether raw is a JSON-RPC error object of the
// retryable shape (ErrTemporarilyUnavailable with retryAfterMs).
func retryableBusy(raw json.RawMessage) bool {
	var e Error
	if json.Unmarshal(raw, &e) != nil {
		return false
	}
	d, ok := retryAfter(&e)
	return ok && d > 0 && errors.Is(&e, ErrTemporarilyUnavailable)
}

// flood sends n requests from floodWorkers goroutines, request i by
// post(i), and waits for them all.
func flood(n int, post func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range floodWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				post(i)
			}
		}()
	}
	wg.Wait()
}

// firstEvent reads an SSE response up to its first data event and lets
// the connection go (the client goes away, as the measured one did).
func firstEvent(body io.Reader) string {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.TrimSpace(d) != "" {
			return d
		}
	}
	return ""
}

// streamablePOST posts body on session sid, as the client of version
// would, and classifies the answer: a question on an SSE stream
// (admitted; the connection is dropped right after it), or 503 with
// Retry-After and the retryable error (refused, for each request of a
// batch).
func streamablePOST(hc *http.Client, url, sid, version, body string, batch int, o *floodOutcome) {
	r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Session-Id", sid)
	if version >= "2025-06-18" {
		r.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := hc.Do(r)
	if err != nil {
		o.odd(err.Error())
		return
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		ev := firstEvent(resp.Body)
		if !strings.Contains(ev, `"method":"elicitation/create"`) && !strings.Contains(ev, `"method":"roots/list"`) {
			o.odd("first event " + ev)
			return
		}
		o.admitted.Add(1)
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		b, _ := io.ReadAll(resp.Body)
		if batch == 0 {
			var m struct{ Error json.RawMessage }
			if json.Unmarshal(b, &m) != nil || !retryableBusy(m.Error) {
				o.odd("503 " + string(b))
				return
			}
			o.refused.Add(1)
			return
		}
		var arr []struct{ Error json.RawMessage }
		if json.Unmarshal(b, &arr) != nil || len(arr) != batch {
			o.odd("503 " + string(b))
			return
		}
		for _, m := range arr {
			if !retryableBusy(m.Error) {
				o.odd("batch member " + string(m.Error))
				return
			}
		}
		o.refused.Add(int64(batch))
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		o.odd(resp.Status + " " + string(b))
	}
}

// checkFlood checks what the flood left: exactly the party's bound of
// requests in flight, the rest refused, and at most that many
// goroutines (plus a small constant) and bounded heap.
func checkFlood(t *testing.T, o *floodOutcome, perRequest int, inflight func() int, baseG int, baseHeap int64, hc *http.Client) {
	t.Helper()
	if n := o.other.Load(); n > 0 {
		t.Fatalf("%d answers neither admitted nor refused with the retryable error, first: %s", n, o.firstOther)
	}
	// A POST admitted carries perRequest requests at most (a batch
	// admitted in part holds the answers of its refused members in the
	// array it ends with); every request of every other POST is refused.
	if a, r := o.admitted.Load(), o.refused.Load(); a*int64(perRequest)+r < floodRequests || (perRequest == 1 && a != floodPerParty) {
		t.Errorf("admitted %d, refused %d of %d: want the party's bound %d admitted and the rest refused", a, r, floodRequests, floodPerParty)
	}
	if n := inflight(); n != floodPerParty {
		t.Errorf("%d requests in flight, want the party's bound %d", n, floodPerParty)
	}
	hc.CloseIdleConnections()
	limit := baseG + floodPerParty + floodSlack
	testutil.Eventually(t, 5*time.Second, "the goroutines to settle within the bound", func() bool { return runtime.NumGoroutine() <= limit })
	grown := heapAlloc() - baseHeap
	t.Logf("admitted %d, refused %d; %d goroutines over the baseline, heap +%d bytes", o.admitted.Load(), o.refused.Load(), runtime.NumGoroutine()-baseG, grown)
	if grown > floodHeapBudget {
		t.Errorf("the heap grew by %d bytes holding %d requests (budget %d)", grown, floodPerParty, floodHeapBudget)
	}
}

// The measured attack, on a 2025-11-25 Streamable HTTP session: 3 000
// POSTs of an asking tool from one anonymous client, each dropping its
// connection once the question came. The process holds the party's
// bound of them, every other one is refused with 503, Retry-After and
// the retryable error, and DELETE releases everything.
func TestASessionHoldsAtMostItsBoundOfRequestsInFlight(t *testing.T) {
	s := unansweredServer(t, time.Minute)
	ts, h := legacyServer(t, s, &HTTPOptions{Legacy: floodBounds})
	var clients []*legacyClient
	for range floodSessions {
		clients = append(clients, newLegacyClient(t, ts.URL, legacyCaps))
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: floodWorkers}}
	baseG, baseHeap := runtime.NumGoroutine(), heapAlloc()
	var o floodOutcome
	flood(floodRequests, func(i int) {
		body := `{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"tools/call","params":{"name":"ask"}}`
		streamablePOST(hc, ts.URL, clients[i%floodSessions].sid, LegacyProtocolVersion, body, 0, &o)
	})
	checkFlood(t, &o, 1, h.legacy.requestsInFlight, baseG, baseHeap, hc)
	for _, c := range clients {
		if st := c.delete(); st != http.StatusNoContent {
			t.Fatalf("DELETE: %d", st)
		}
	}
	testutil.Eventually(t, 5*time.Second, "the ended sessions to release their requests", func() bool {
		return h.legacy.requestsInFlight() == 0 && runtime.NumGoroutine() <= baseG+floodSlack
	})
}

// The same flood in 2025-03-26 batches of 64: each request of a batch
// counts, so the batches do not multiply what the party holds.
func TestEachRequestOfABatchCountsTowardTheBound(t *testing.T) {
	s := unansweredServer(t, time.Minute)
	ts, h := legacyServer(t, s, &HTTPOptions{Legacy: floodBounds})
	var clients []*legacyClient
	for range floodSessions {
		clients = append(clients, newLegacyClientAt(t, ts.URL, "2025-03-26", `{"roots":{}}`))
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: floodWorkers}}
	baseG, baseHeap := runtime.NumGoroutine(), heapAlloc()
	var o floodOutcome
	batches := (floodRequests + maxBatchMessages - 1) / maxBatchMessages
	flood(batches, func(b int) {
		var sb strings.Builder
		sb.WriteByte('[')
		n := 0
		for i := b * maxBatchMessages; i < min((b+1)*maxBatchMessages, floodRequests); i++ {
			if n > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(`{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"tools/call","params":{"name":"roots"}}`)
			n++
		}
		sb.WriteByte(']')
		streamablePOST(hc, ts.URL, clients[b%floodSessions].sid, "2025-03-26", sb.String(), n, &o)
	})
	checkFlood(t, &o, maxBatchMessages, h.legacy.requestsInFlight, baseG, baseHeap, hc)
	for _, c := range clients {
		c.delete()
	}
	testutil.Eventually(t, 5*time.Second, "the ended sessions to release their requests", func() bool {
		return h.legacy.requestsInFlight() == 0 && runtime.NumGoroutine() <= baseG+floodSlack
	})
}

// The same flood on HTTP+SSE (2024-11-05's transport, a 2025-11-25
// session on it): every request outlives its POST, answered 202 at
// once; past the bound the POST is answered 503 and nothing runs. The
// end of the stream releases everything.
func TestAnSSESessionHoldsAtMostItsBoundOfRequestsInFlight(t *testing.T) {
	s := unansweredServer(t, time.Minute)
	u, h := sseServer(t, s, &SSEOptions{HTTPOptions: HTTPOptions{Legacy: floodBounds}})
	var clients []*rawSSE
	for range floodSessions {
		c := openRawSSE(t, u, "")
		c.initialize(LegacyProtocolVersion, legacyCaps)
		clients = append(clients, c)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: floodWorkers}}
	baseG, baseHeap := runtime.NumGoroutine(), heapAlloc()
	var o floodOutcome
	flood(floodRequests, func(i int) {
		body := `{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"tools/call","params":{"name":"ask"}}`
		r, _ := http.NewRequest(http.MethodPost, clients[i%floodSessions].endpoint, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(r)
		if err != nil {
			o.odd(err.Error())
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m struct{ Error json.RawMessage }
		switch {
		case resp.StatusCode == http.StatusAccepted:
			o.admitted.Add(1)
		case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" &&
			json.Unmarshal(b, &m) == nil && retryableBusy(m.Error):
			o.refused.Add(1)
		default:
			o.odd(resp.Status + " " + string(b))
		}
	})
	checkFlood(t, &o, 1, h.requestsInFlight, baseG, baseHeap, hc)
	asked := 0
	for _, c := range clients {
		for len(c.msgs) > 0 {
			if m := <-c.msgs; m["method"] == "elicitation/create" {
				asked++
			}
		}
		c.resp.Body.Close()
	}
	if asked != floodPerParty {
		t.Errorf("%d questions on the streams, want %d", asked, floodPerParty)
	}
	testutil.Eventually(t, 5*time.Second, "the ended sessions to release their requests", func() bool {
		return h.sessionCount() == 0 && runtime.NumGoroutine() <= baseG+floodSlack
	})
}

// A question nobody answers ends at its deadline
// (ServerOptions.LegacyQuestionTimeout), on both transports: the client
// is told to stop (notifications/cancelled), the handler's ask returns
// the documented "could not answer" error (an isError result), and the
// request's slot is free again.
func TestLiveQuestionsEndAtTheirDeadline(t *testing.T) {
	t.Parallel()
	const deadline = 150 * time.Millisecond
	check := func(t *testing.T, res map[string]any, cancelled []map[string]any, took time.Duration) {
		t.Helper()
		r, _ := res["result"].(map[string]any)
		if r == nil || r["isError"] != true || !strings.Contains(legacyText(t, res), "could not answer") || !strings.Contains(legacyText(t, res), "no answer within "+deadline.String()) {
			t.Errorf("the call after its question's deadline: %v", res)
		}
		if took < deadline || took > deadline+5*time.Second {
			t.Errorf("the question ended after %v, want its deadline %v", took, deadline)
		}
		if len(cancelled) != 1 {
			t.Errorf("%d notifications/cancelled for the question, want 1", len(cancelled))
		}
	}
	t.Run("streamable", func(t *testing.T) {
		t.Parallel()
		s := unansweredServer(t, deadline)
		ts, h := legacyServer(t, s, nil)
		c := newLegacyClient(t, ts.URL, legacyCaps)
		c.answer = func(string, map[string]any) any { return nil } // never answers
		start := time.Now()
		res := c.request("tools/call", `{"name":"ask"}`)
		took := time.Since(start)
		var cancelled []map[string]any
		for _, n := range c.notes {
			if n["method"] == notificationCancelled {
				cancelled = append(cancelled, n)
			}
		}
		check(t, res, cancelled, took)
		testutil.Eventually(t, 5*time.Second, "the request's slot to be free", func() bool { return h.legacy.requestsInFlight() == 0 })
	})
	t.Run("http+sse", func(t *testing.T) {
		t.Parallel()
		s := unansweredServer(t, deadline)
		u, h := sseServer(t, s, nil)
		c := openRawSSE(t, u, "")
		c.initialize(LegacyProtocolVersion, legacyCaps)
		start := time.Now()
		c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`)
		var cancelled []map[string]any
		var res map[string]any
		for range 3 {
			m := c.next()
			switch {
			case m["method"] == notificationCancelled:
				cancelled = append(cancelled, m)
			case m["method"] == nil && m["id"] == float64(1):
				res = m
			}
			if res != nil {
				break
			}
		}
		check(t, res, cancelled, time.Since(start))
		testutil.Eventually(t, 5*time.Second, "the request's slot to be free", func() bool { return h.requestsInFlight() == 0 })
	})
}

// A 2025-11-25 request whose response is still a plain JSON body cannot
// be resumed: once its POST's connection is gone, nothing can receive
// its answer, and it is cancelled rather than held until the session
// ends (one whose response is an SSE stream is kept for the client to
// resume: TestLegacyDisconnectIsNotCancellation).
func TestARequestNobodyCanReceiveIsCancelled(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	s.AddTool(&Tool{Name: "block"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(10 * time.Second):
			ended <- nil
		}
		return TextResult("done"), nil
	})
	ts, h := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"block"}}`))
	c.headers(r)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(r); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool did not start")
	}
	cancel() // the client goes away before the answer
	<-done
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the request ran to its end with nobody to receive its answer")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request is still running with nobody to receive its answer")
	}
	testutil.Eventually(t, 5*time.Second, "the request's slot to be free", func() bool { return h.legacy.requestsInFlight() == 0 })
}
