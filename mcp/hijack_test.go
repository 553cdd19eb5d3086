package mcp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// hijackCounting serves h on a test server that counts the connections
// net/http handed over (http.StateHijacked).
func hijackCounting(t *testing.T, h http.Handler, tls bool) (*httptest.Server, *atomic.Int32) {
	ts := httptest.NewUnstartedServer(h)
	var hijacked atomic.Int32
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateHijacked {
			hijacked.Add(1)
		}
	}
	if tls {
		ts.EnableHTTP2 = true
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts, &hijacked
}

// A session's GET stream over HTTP/1.1 leaves net/http: the connection is
// hijacked, and the stream is still a well-framed chunked response that
// carries the session's events, frees its slot when the client leaves,
// and ends cleanly when the server closes.
func TestLegacyGETStreamOverHTTP1IsTakenOverFromNetHTTP(t *testing.T) {
	s, _ := dualServer(t, nil)
	ts, hijacked := hijackCounting(t, NewHTTPHandler(s, nil), false)
	c := newLegacyClient(t, ts.URL, `{}`)
	resp := c.get("")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("GET: %d %q %v", resp.StatusCode, resp.Header.Get("Content-Type"), resp.TransferEncoding)
	}
	if resp.Header.Get("Mcp-Session-Id") != c.sid || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("the stream's head lacks what net/http would have sent: %v", resp.Header)
	}
	if n := hijacked.Load(); n != 1 {
		t.Errorf("%d connections hijacked, want the GET stream's", n)
	}
	events := readSSE(resp.Body)
	s.AddTool(&Tool{Name: "late"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	if m := events.next(t); m["method"] != NotificationToolListChanged {
		t.Fatalf("got %v", m)
	}
	if second := c.get(""); second.StatusCode != http.StatusConflict {
		t.Errorf("a second GET stream while the first is open: %d", second.StatusCode)
		second.Body.Close()
	}

	// The client leaves: the session's stream is free again.
	resp.Body.Close()
	var again *http.Response
	testutil.Eventually(t, 5*time.Second, "the stream freed after its client left", func() bool {
		again = c.get("")
		if again.StatusCode == http.StatusOK {
			return true
		}
		again.Body.Close()
		return false
	})
	ended := make(chan error, 1)
	go func() { _, err := io.ReadAll(again.Body); ended <- err }()
	s.Close()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream did not end cleanly (its last chunk): %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Server.Close did not end the hijacked stream")
	}
}

// Over HTTP/2 a stream is not a connection: it stays in net/http.
func TestLegacyGETStreamOverHTTP2StaysInNetHTTP(t *testing.T) {
	s, _ := dualServer(t, nil)
	ts, hijacked := hijackCounting(t, NewHTTPHandler(s, nil), true)
	c := &legacyClient{t: t, url: ts.URL, hc: ts.Client(), caps: `{}`, answer: legacyAnswers, version: LegacyProtocolVersion}
	c.initialize()
	resp := c.get("")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("GET: %d over %s", resp.StatusCode, resp.Proto)
	}
	events := readSSE(resp.Body)
	s.AddTool(&Tool{Name: "late"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	if m := events.next(t); m["method"] != NotificationToolListChanged {
		t.Fatalf("got %v", m)
	}
	if n := hijacked.Load(); n != 0 {
		t.Errorf("%d connections hijacked over HTTP/2", n)
	}
}

// A listen stream over HTTP/1.1 leaves net/http too, and ends (its
// listener gone) when the client leaves.
func TestListenStreamOverHTTP1IsTakenOverAndEndsWhenTheClientLeaves(t *testing.T) {
	log := &eventLog{}
	s := newTestServer(t, &ServerOptions{Observer: log.add})
	ts, hijacked := hijackCounting(t, NewHTTPHandler(s, nil), false)
	body := req(3, methodSubscriptionsListen, `"notifications":{"promptsListChanged":true}`)
	r, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
	for k, v := range headersFor(t, body) {
		r.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" || hijacked.Load() != 1 {
		t.Fatalf("content type %q, %d connections hijacked", resp.Header.Get("Content-Type"), hijacked.Load())
	}
	events := readSSE(resp.Body)
	if m := events.next(t); m["method"] != NotificationSubscriptionsAck {
		t.Fatalf("first %v", m)
	}
	s.AddPrompt(&Prompt{Name: "p2"}, func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil })
	if m := events.next(t); m["method"] != notificationPromptListChanged {
		t.Fatalf("then %v", m)
	}
	resp.Body.Close()
	testutil.Eventually(t, 5*time.Second, "the listen stream to end after its client left", func() bool {
		return log.count(EventStreamClosed) != 0
	})
	s.hub.mu.Lock()
	n := len(s.hub.listeners)
	s.hub.mu.Unlock()
	if n != 0 {
		t.Errorf("%d listeners left after the client left", n)
	}
}

// A listener holds what it was not yet told once, and a bounded amount
// of it.
func TestListenerKeepsEachPendingChangeOnceAndABoundedNumber(t *testing.T) {
	l := &listener{ready: make(chan struct{}, 1)}
	l.offer(change{kind: changeTools})
	l.offer(change{kind: changeTools})
	l.offer(change{kind: changeResource, uri: "a"})
	l.offer(change{kind: changeResource, uri: "b"})
	if got := l.take(); len(got) != 3 || got[0].kind != changeTools || got[2].uri != "b" {
		t.Fatalf("pending %+v", got)
	}
	if len(l.take()) != 0 {
		t.Fatal("take did not forget")
	}
	for i := range 2 * maxPendingChanges {
		l.offer(change{kind: changeResource, uri: strconv.Itoa(i)})
	}
	if got := l.take(); len(got) != maxPendingChanges || got[0].uri != "0" {
		t.Fatalf("%d pending, want the first %d", len(got), maxPendingChanges)
	}
	select {
	case <-l.ready:
	default:
		t.Error("no token on ready after offers")
	}
}

// The deadlines net/http left on the connection (http.Server.ReadTimeout,
// WriteTimeout) do not end a hijacked stream: it outlives them and still
// carries events.
func TestHijackedStreamOutlivesTheServersTimeouts(t *testing.T) {
	s, _ := dualServer(t, nil)
	ts := httptest.NewUnstartedServer(NewHTTPHandler(s, nil))
	ts.Config.ReadTimeout = 100 * time.Millisecond
	ts.Config.WriteTimeout = 100 * time.Millisecond
	ts.Start()
	t.Cleanup(ts.Close)
	c := newLegacyClient(t, ts.URL, `{}`)
	resp := c.get("")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	events := readSSE(resp.Body)
	time.Sleep(300 * time.Millisecond)
	s.AddTool(&Tool{Name: "late"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	if m := events.next(t); m["method"] != NotificationToolListChanged {
		t.Fatalf("after the server's timeouts: %v", m)
	}
}
