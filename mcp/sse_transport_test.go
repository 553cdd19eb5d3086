package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// The HTTP+SSE transport of 2024-11-05 (sse_transport.go), driven by a
// raw client: a GET stream whose first event names the message URL,
// POSTs answered 202, everything the server says on the stream.

// rawSSE is one HTTP+SSE session of a raw client.
type rawSSE struct {
	t        testing.TB
	hc       *http.Client
	user     string
	resp     *http.Response
	endpoint string // absolute
	msgs     chan map[string]any
	ended    chan struct{} // closed when the stream ends
	comments atomic.Int32  // keep-alive comments seen
}

// sseServer serves NewSSEHandler at /sse (X-User, when set, is the
// verified subject) and returns the stream's URL.
func sseServer(t testing.TB, s *Server, o *SSEOptions) (string, *sseHandler) {
	h := NewSSEHandler(s, o).(*sseHandler)
	mux := http.NewServeMux()
	mux.Handle("/sse", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-User"); u != "" {
			r = r.WithContext(WithTokenInfo(r.Context(), &TokenInfo{ClientID: "app", Issuer: "idp", Subject: u}))
		}
		h.ServeHTTP(w, r)
	}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/sse", h
}

// samplingServer is a server with a tool that samples once.
func samplingServer(t testing.TB, opts *ServerOptions) *Server {
	s := newTestServer(t, opts)
	s.AddTool(&Tool{Name: "haiku", Description: "asks the client's model for a haiku"},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			res, err := Sample(ctx, &CreateMessageRequest{MaxTokens: 50, Messages: []SamplingMessage{{Role: RoleUser,
				Content: []Content{&TextContent{Text: "A haiku about the sea"}}}}})
			if err != nil {
				return nil, err
			}
			return TextResult("model said: " + res.Content[0].(*TextContent).Text), nil
		})
	return s
}

// openRawSSE GETs the stream, checks that its first event is endpoint,
// and reads the rest in the background.
func openRawSSE(t testing.TB, streamURL, user string) *rawSSE {
	t.Helper()
	c := &rawSSE{t: t, hc: &http.Client{}, user: user, msgs: make(chan map[string]any, 64), ended: make(chan struct{})}
	r, _ := http.NewRequest(http.MethodGet, streamURL, nil)
	r.Header.Set("Accept", "text/event-stream")
	if user != "" {
		r.Header.Set("X-User", user)
	}
	resp, err := c.hc.Do(r)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	c.resp = resp
	rd := sse.NewReader(&commentCounter{r: resp.Body, n: &c.comments}, 0, 0)
	ev, err := rd.Next()
	if err != nil || ev.Name != "endpoint" {
		t.Fatalf("first event: %+v %v", ev, err)
	}
	base, _ := url.Parse(streamURL)
	ep, err := base.Parse(string(ev.Data))
	if err != nil {
		t.Fatal(err)
	}
	c.endpoint = ep.String()
	go func() {
		defer close(c.ended)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			if ev.Name != "message" {
				t.Errorf("event %q on the stream", ev.Name)
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(ev.Data, &m); err != nil {
				t.Errorf("message event %q: %v", ev.Data, err)
				continue
			}
			c.msgs <- m
		}
	}()
	return c
}

// commentCounter counts the keep-alive comment lines going by.
type commentCounter struct {
	r io.Reader
	n *atomic.Int32
}

func (c *commentCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int32(strings.Count(string(p[:n]), ": keep-alive\n")))
	return n, err
}

// post POSTs body to the session's endpoint and returns the status.
func (c *rawSSE) post(body string) int {
	c.t.Helper()
	st, _ := c.postTo(c.endpoint, body, nil)
	return st
}

func (c *rawSSE) postTo(u, body string, hdr http.Header) (int, map[string]any) {
	c.t.Helper()
	r, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if c.user != "" {
		r.Header.Set("X-User", c.user)
	}
	for k, v := range hdr {
		r.Header[k] = v
	}
	resp, err := c.hc.Do(r)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 {
		_ = json.Unmarshal(b, &m)
	}
	return resp.StatusCode, m
}

// next returns the next message of the stream.
func (c *rawSSE) next() map[string]any {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-c.ended:
		c.t.Fatal("the stream ended")
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message on the stream within 10s")
	}
	return nil
}

// mustPost POSTs body and checks the 202.
func (c *rawSSE) mustPost(body string) {
	c.t.Helper()
	if st := c.post(body); st != http.StatusAccepted {
		c.t.Fatalf("POST %s: %d, want 202", body, st)
	}
}

// initialize runs the handshake offering version and returns the
// negotiated one.
func (c *rawSSE) initialize(version, caps string) string {
	c.t.Helper()
	c.mustPost(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	m := c.next()
	res, ok := m["result"].(map[string]any)
	if !ok || m["id"] != float64(0) {
		c.t.Fatalf("initialize: %v", m)
	}
	c.mustPost(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return res["protocolVersion"].(string)
}

// waitEnded waits for the stream to end.
func (c *rawSSE) waitEnded(why string) {
	c.t.Helper()
	select {
	case <-c.ended:
	case <-time.After(5 * time.Second):
		c.t.Fatalf("the stream is still open after %s", why)
	}
}

// The first event of the stream is endpoint, naming the path the GET
// came in on with the session parameter; POSTs there are answered 202.
func TestSSEEndpointEventComesFirst(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, nil), nil)
	c := openRawSSE(t, u, "")
	ep, _ := url.Parse(c.endpoint)
	if ep.Path != "/sse" || ep.Query().Get("sessionId") == "" {
		t.Fatalf("endpoint %q", c.endpoint)
	}
	// MessageURL replaces the path; a query of its own is kept.
	u2, _ := sseServer(t, newTestServer(t, nil), &SSEOptions{MessageURL: "/api/sse?x=1"})
	r, err := http.Get(u2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	ev, err := sse.NewReader(r.Body, 0, 0).Next()
	if err != nil || ev.Name != "endpoint" || !strings.HasPrefix(string(ev.Data), "/api/sse?x=1&sessionId=") {
		t.Fatalf("endpoint event %+v %v", ev, err)
	}
}

// Over HTTP+SSE a session completes a tool that samples: the response
// to initialize, the sampling request and the tool's result arrive on
// the stream, and the answer to the sampling request is POSTed.
func TestSSESessionCompletesAToolThatSamples(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, samplingServer(t, nil), nil)
	c := openRawSSE(t, u, "")
	if v := c.initialize("2024-11-05", `{"sampling":{}}`); v != "2024-11-05" {
		t.Fatalf("negotiated %q", v)
	}
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"haiku","arguments":{}}}`)
	q := c.next()
	if q["method"] != MethodCreateMessage || q["id"] == nil {
		t.Fatalf("expected sampling/createMessage on the stream, got %v", q)
	}
	id, _ := json.Marshal(q["id"])
	c.mustPost(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"waves"}}}`)
	if got := legacyText(t, c.next()); got != "model said: waves" {
		t.Fatalf("result %q", got)
	}
}

// The session negotiates the transport's own revision, 2024-11-05, for a
// client that offers it.
func TestSSESessionNegotiatesTheOfferedRevision(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, nil), nil)
	c := openRawSSE(t, u, "")
	if got := c.initialize("2024-11-05", `{}`); got != "2024-11-05" {
		t.Fatalf("negotiated %q, want 2024-11-05", got)
	}
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if got := legacyText(t, c.next()); got != "hi" {
		t.Fatalf("echo: %q", got)
	}
}

// Errors of a well-formed message are JSON-RPC errors on the stream (the
// POST is accepted); a request before initialize is one of them, ping
// excepted.
func TestSSEMessageErrorsGoOnTheStream(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, nil), nil)
	c := openRawSSE(t, u, "")
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if m := c.next(); errorCode(t, m) != CodeInvalidRequest {
		t.Fatalf("before initialize: %v", m)
	}
	c.mustPost(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := c.next(); m["result"] == nil {
		t.Fatalf("ping before initialize: %v", m)
	}
	c.initialize(LegacyProtocolVersion, `{}`)
	c.mustPost(`{"jsonrpc":"2.0","id":3,"method":"no/such"}`)
	if m := c.next(); errorCode(t, m) != CodeMethodNotFound {
		t.Fatalf("unknown method: %v", m)
	}
	c.mustPost(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if m := c.next(); errorCode(t, m) != CodeInvalidRequest {
		t.Fatalf("second initialize: %v", m)
	}
	if st, m := c.postTo(c.endpoint, `{"jsonrpc":`, nil); st != http.StatusBadRequest || errorCode(t, m) != CodeParseError {
		t.Fatalf("malformed body: %d %v", st, m)
	}
}

// The Host and Origin checks of the Streamable HTTP handler apply to
// both endpoints: 403.
func TestSSEHostAndOriginAreRefusedWith403(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, nil), nil)
	c := openRawSSE(t, u, "")
	for _, tc := range []struct {
		method, url string
		hdr         http.Header
		host        string
	}{
		{http.MethodGet, u, http.Header{"Origin": {"https://evil.example"}}, ""},
		{http.MethodGet, u, nil, "evil.example"},
		{http.MethodPost, c.endpoint, http.Header{"Origin": {"https://evil.example"}}, ""},
		{http.MethodPost, c.endpoint, nil, "evil.example:80"},
	} {
		r, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		for k, v := range tc.hdr {
			r.Header[k] = v
		}
		if tc.host != "" {
			r.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with %v host %q: %d, want 403", tc.method, tc.hdr, tc.host, resp.StatusCode)
		}
	}
}

// A POST body over MaxBodyBytes is refused with 413 (and the session
// goes on).
func TestSSEBodyOverTheBoundIs413(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, nil), &SSEOptions{HTTPOptions: HTTPOptions{MaxBodyBytes: 1024}})
	c := openRawSSE(t, u, "")
	c.initialize(LegacyProtocolVersion, `{}`)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 2000) + `"}}}`
	if st := c.post(big); st != http.StatusRequestEntityTooLarge {
		t.Fatalf("big body: %d, want 413", st)
	}
	c.mustPost(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"small"}}}`)
	if got := legacyText(t, c.next()); got != "small" {
		t.Fatalf("after the 413: %q", got)
	}
}

// A sessionId that names no session of the caller is 404: unknown, or
// opened by another principal. A POST without sessionId is 405, the cue
// for a Streamable HTTP client to fall back.
func TestSSEUnknownSessionIs404(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, nil), nil)
	alice := openRawSSE(t, u, "alice")
	alice.initialize(LegacyProtocolVersion, `{}`)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if st, m := alice.postTo(u+"?sessionId=0123456789abcdef", ping, nil); st != http.StatusNotFound || errorCode(t, m) != -32001 {
		t.Errorf("unknown session: %d %v", st, m)
	}
	mallory := &rawSSE{t: t, hc: &http.Client{}, user: "mallory"}
	if st, _ := mallory.postTo(alice.endpoint, ping, nil); st != http.StatusNotFound {
		t.Errorf("another principal's session: %d, want 404", st)
	}
	r, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(ping))
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
		t.Errorf("POST without sessionId: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	alice.mustPost(ping) // alice's own session is fine
	if m := alice.next(); m["result"] == nil {
		t.Fatalf("ping: %v", m)
	}
}

// The end of the stream ends the session: its request in flight is
// cancelled, and its sessionId gets 404.
func TestSSEStreamEndEndsTheSession(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	started, cancelled := make(chan struct{}), make(chan struct{})
	s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	u, h := sseServer(t, s, nil)
	c := openRawSSE(t, u, "")
	c.initialize(LegacyProtocolVersion, `{}`)
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	<-started
	c.resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the request in flight was not cancelled when the stream ended")
	}
	testutil.Eventually(t, 5*time.Second, "no session after the stream ended", func() bool { return h.sessionCount() == 0 })
	if st := c.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); st != http.StatusNotFound {
		t.Fatalf("POST after the stream ended: %d, want 404", st)
	}
}

// notifications/cancelled cancels the named request, and nothing is sent
// for it.
func TestSSECancelledRequestSendsNothing(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	started := make(chan struct{})
	s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		close(started)
		<-ctx.Done()
		return TextResult("too late"), nil
	})
	u, _ := sseServer(t, s, nil)
	c := openRawSSE(t, u, "")
	c.initialize(LegacyProtocolVersion, `{}`)
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	<-started
	c.mustPost(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	c.mustPost(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := c.next(); m["id"] != float64(2) {
		t.Fatalf("expected only the ping's answer, got %v", m)
	}
}

// Sessions are counted per party: at its bound, a party's new stream
// ends that party's session unused the longest among those with no
// request in progress, never another party's; when each has one, the
// GET is 503 with Retry-After.
func TestSSESessionsAreBoundedPerPrincipal(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := make(chan struct{}, 4)
	s.AddTool(&Tool{Name: "hold"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return TextResult("held"), nil
	})
	u, h := sseServer(t, s, &SSEOptions{HTTPOptions: HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 2}}})
	bob := openRawSSE(t, u, "bob")
	a1 := openRawSSE(t, u, "alice")
	a2 := openRawSSE(t, u, "alice")
	a1.initialize(LegacyProtocolVersion, `{}`) // a1 is now used more recently than a2
	a3 := openRawSSE(t, u, "alice")
	a2.waitEnded("alice's third stream")
	if st := a2.post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`); st != http.StatusNotFound {
		t.Fatalf("the evicted session answered %d", st)
	}
	// a1 and a3 each get a request in progress: no room for a fourth.
	a1.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
	a3.initialize(LegacyProtocolVersion, `{}`)
	a3.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
	<-started
	<-started
	r, _ := http.NewRequest(http.MethodGet, u, nil)
	r.Header.Set("X-User", "alice")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("alice's GET with every session busy: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// bob was never touched, and can still open more.
	bob.initialize(LegacyProtocolVersion, `{}`)
	openRawSSE(t, u, "bob")
	if n := h.sessionCount(); n != 4 {
		t.Fatalf("%d sessions, want 4 (alice 2, bob 2)", n)
	}
}

// MaxSessions bounds all parties together without ending one party's
// session for another: the newcomer gets 503.
func TestSSEGlobalSessionBoundNeverEvictsAnotherPrincipal(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, nil), &SSEOptions{HTTPOptions: HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessions: 1}}})
	alice := openRawSSE(t, u, "alice")
	r, _ := http.NewRequest(http.MethodGet, u, nil)
	r.Header.Set("X-User", "bob")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("bob's GET at the global bound: %d, want 503", resp.StatusCode)
	}
	alice.initialize(LegacyProtocolVersion, `{}`)
}

// Server.Close ends the streams (and with them the sessions); a new GET
// is 503, and http.Server.Shutdown returns.
func TestSSEServerCloseEndsTheStreams(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	h := NewSSEHandler(s, nil).(*sseHandler)
	ts := httptest.NewServer(h)
	defer ts.Close()
	c := openRawSSE(t, ts.URL, "")
	c.initialize(LegacyProtocolVersion, `{}`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.waitEnded("Server.Close")
	if st := c.post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`); st != http.StatusNotFound {
		t.Errorf("POST after Close: %d, want 404", st)
	}
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET after Close: %d, want 503", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.Config.Shutdown(ctx); err != nil {
		t.Errorf("http.Server.Shutdown after Server.Close: %v", err)
	}
	if n := h.sessionCount(); n != 0 {
		t.Errorf("%d sessions after Close", n)
	}
}

// An idle stream carries keep-alive comments; list changes go on the
// stream once the client sent notifications/initialized.
func TestSSEStreamCarriesKeepAlivesAndListChanges(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	u, _ := sseServer(t, s, &SSEOptions{HTTPOptions: HTTPOptions{KeepAlive: 20 * time.Millisecond}})
	c := openRawSSE(t, u, "")
	c.initialize(LegacyProtocolVersion, `{}`)
	s.AddTool(&Tool{Name: "new"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) { return TextResult("new"), nil })
	if m := c.next(); m["method"] != NotificationToolListChanged {
		t.Fatalf("expected %s, got %v", NotificationToolListChanged, m)
	}
	testutil.Eventually(t, 5*time.Second, "two keep-alive comments", func() bool { return c.comments.Load() >= 2 })
}

// A client that stops reading its stream loses it once what waits for
// it passes the bound, and its session with it; the handler's
// notifications then fail instead of piling up.
func TestSSEClientThatStopsReadingLosesItsSession(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	failed := make(chan error, 1)
	s.AddTool(&Tool{Name: "flood"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		big := strings.Repeat("x", 64<<10)
		for i := 0; i < 4096; i++ {
			if err := ReportProgress(ctx, float64(i), 0, big); err != nil {
				failed <- err
				return nil, err
			}
		}
		failed <- nil
		return TextResult("done"), nil
	})
	u, h := sseServer(t, s, &SSEOptions{HTTPOptions: HTTPOptions{StreamWriteTimeout: 200 * time.Millisecond,
		Legacy: LegacyHTTPOptions{MaxEventBytes: 64 << 10}}})
	// A raw client that reads the endpoint event and then nothing.
	r, _ := http.NewRequest(http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ev, err := sse.NewReader(resp.Body, 0, 0).Next()
	if err != nil || ev.Name != "endpoint" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	base, _ := url.Parse(u)
	ep, _ := base.Parse(string(ev.Data))
	c := &rawSSE{t: t, hc: &http.Client{}, endpoint: ep.String()}
	c.mustPost(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{},"_meta":{"progressToken":1}}}`)
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("256 MiB of progress went to a client that does not read")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the flooding handler is still running")
	}
	testutil.Eventually(t, 5*time.Second, "no session left", func() bool { return h.sessionCount() == 0 })
}

// With DisableLegacy the server has no session era: 404 for every
// request.
func TestSSEHandlerOfAModernOnlyServerIs404(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, &ServerOptions{DisableLegacy: true}), nil)
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
}

// A POST body that does not arrive within BodyReadTimeout is answered
// 408, as on Streamable HTTP.
func TestSSESlowBodyIs408(t *testing.T) {
	t.Parallel()
	u, _ := sseServer(t, newTestServer(t, nil), &SSEOptions{HTTPOptions: HTTPOptions{BodyReadTimeout: 100 * time.Millisecond}})
	c := openRawSSE(t, u, "")
	ep, _ := url.Parse(c.endpoint)
	conn, err := net.Dial("tcp", ep.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", ep.RequestURI(), ep.Host)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("slow body: %d, want 408", resp.StatusCode)
	}
}

// Every write of the stream has a deadline: a client that stops reading
// while one large message is being written loses its stream within
// StreamWriteTimeout, and its session with it.
func TestSSEStreamWritesHaveADeadline(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	s.AddTool(&Tool{Name: "huge"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		return TextResult(strings.Repeat("x", 32<<20)), nil
	})
	u, h := sseServer(t, s, &SSEOptions{HTTPOptions: HTTPOptions{StreamWriteTimeout: 200 * time.Millisecond}})
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ev, err := sse.NewReader(resp.Body, 0, 0).Next()
	if err != nil || ev.Name != "endpoint" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	base, _ := url.Parse(u)
	ep, _ := base.Parse(string(ev.Data))
	c := &rawSSE{t: t, hc: &http.Client{}, endpoint: ep.String()}
	c.mustPost(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"huge","arguments":{}}}`)
	// The bound guards against a hang; encoding 32 MiB under -race on a
	// loaded machine takes seconds before the write can time out.
	testutil.Eventually(t, time.Minute, "no session after the client stopped reading", func() bool { return h.sessionCount() == 0 })
}

// An HTTP+SSE session's notifications are encoded by its era, as on the
// other transports: a 2024-11-05 session's progress carries no message
// (2025-03-26 added it), a 2025-03-26 session's does.
func TestSSENotificationsSpeakTheSessionRevision(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{"2025-03-26", "2024-11-05"} {
		u, _ := sseServer(t, richServer(t), nil)
		c := openRawSSE(t, u, "")
		if got := c.initialize(rev, `{}`); got != rev {
			t.Fatalf("negotiated %q, want %s", got, rev)
		}
		c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rich","arguments":{},"_meta":{"progressToken":7}}}`)
		var p map[string]any
		for m := c.next(); m["id"] == nil; m = c.next() {
			if m["method"] == notificationProgress {
				p = m["params"].(map[string]any)
			}
		}
		if p == nil {
			t.Fatalf("%s: no progress notification before the result", rev)
		}
		if _, has := p["message"]; has != (rev == "2025-03-26") {
			t.Errorf("%s: progress %v", rev, p)
		}
	}
}
