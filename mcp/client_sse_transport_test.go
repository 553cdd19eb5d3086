package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// The client over HTTP+SSE (client_sse_transport.go): the fallback of
// 2025-03-26 from a refused initialize POST, HTTPClientOptions.SSE, the
// session's live requests, its end and its renewal.

// sseOnly serves only HTTP+SSE at /sse, counting the requests: a POST
// without sessionId (a Streamable HTTP attempt) gets refusal, or
// NewSSEHandler's own 405 when refusal is 0.
type sseOnly struct {
	url                  string
	h                    *sseHandler
	gets, posts, attempt atomic.Int32
}

func newSSEOnly(t testing.TB, s *Server, refusal int) *sseOnly {
	o := &sseOnly{h: NewSSEHandler(s, nil).(*sseHandler)}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sse" {
			http.NotFound(w, r)
			return
		}
		switch {
		case r.Method == http.MethodGet:
			o.gets.Add(1)
		case r.URL.Query().Get("sessionId") == "":
			o.attempt.Add(1)
			if refusal != 0 {
				http.Error(w, "no Streamable HTTP here", refusal)
				return
			}
		default:
			o.posts.Add(1)
		}
		o.h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	o.url = ts.URL + "/sse"
	return o
}

func sseClient(t testing.TB, url string, hopts *HTTPClientOptions, opts *ClientOptions) *Client {
	c := NewClient(NewHTTPClientTransport(url, hopts), fixtureHandlers(opts))
	t.Cleanup(func() { c.Close() })
	return c
}

func callText(t testing.TB, c *Client, ctx context.Context, tool string) string {
	t.Helper()
	res, err := c.CallTool(ctx, tool, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: %+v", tool, res)
	}
	return res.Content[0].(*TextContent).Text
}

// A client of a server that speaks only HTTP+SSE falls back after a 4xx
// to the POST of initialize (400, 404, 405), GETs the URL, and runs its
// session there: a tool whose questions (elicitation, sampling, roots)
// arrive on the stream and are answered by POSTs.
func TestClientFallsBackToHTTPSSEAfterA4xxToInitialize(t *testing.T) {
	t.Parallel()
	for _, refusal := range []int{0, http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed} {
		for _, mode := range []ClientMode{ModeAuto, ModeLegacy} {
			name := map[ClientMode]string{ModeAuto: "auto", ModeLegacy: "legacy"}[mode]
			t.Run(http.StatusText(refusal)+"/"+name, func(t *testing.T) {
				srv := newSSEOnly(t, newAskingServer(t), refusal)
				c := sseClient(t, srv.url, nil, &ClientOptions{Mode: mode})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if got := callText(t, c, ctx, "ask_all"); got != "Hello Ada, capital Paris, 2 roots" {
					t.Fatalf("ask_all: %q", got)
				}
				if v := c.ProtocolVersion(); v != LegacyProtocolVersion {
					t.Errorf("version %q", v)
				}
				d, err := c.Discover(ctx)
				if err != nil || len(d.SupportedVersions) != 1 {
					t.Errorf("discover: %+v %v", d, err)
				}
				if g := srv.gets.Load(); g != 1 {
					t.Errorf("%d GETs, want 1", g)
				}
				if a := srv.attempt.Load(); a == 0 || a > 2 {
					t.Errorf("%d Streamable HTTP attempts, want the probe and initialize at most", a)
				}
			})
		}
	}
}

// A 5xx to the POST of initialize, or a network failure, says nothing
// about the transport: the call fails with it, and no GET is sent.
func TestClientDoesNotFallBackOn5xxOrANetworkError(t *testing.T) {
	t.Parallel()
	var gets atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			gets.Add(1)
			http.Error(w, "no stream", http.StatusMethodNotAllowed)
		case r.Header.Get("X-Fail") == "reset":
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
		default:
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}
	}))
	defer ts.Close()
	for _, fail := range []string{"5xx", "reset"} {
		t.Run(fail, func(t *testing.T) {
			gets.Store(0)
			c := sseClient(t, ts.URL, &HTTPClientOptions{Header: http.Header{"X-Fail": {fail}}}, &ClientOptions{Mode: ModeLegacy, LegRetries: -1})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.ListTools(ctx, nil)
			if err == nil {
				t.Fatal("the call succeeded")
			}
			var hs *HTTPStatusError
			if fail == "5xx" && (!errors.As(err, &hs) || hs.StatusCode != http.StatusServiceUnavailable) {
				t.Errorf("error %v, want the 503", err)
			}
			if g := gets.Load(); g != 0 {
				t.Errorf("%d GETs after a %s", g, fail)
			}
		})
	}
}

// A GET that does not bring an event stream with endpoint first leaves
// the POST's error standing, with what the GET got.
func TestClientFallbackNeedsTheEndpointEventFirst(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Error(w, "gone", http.StatusNotFound)
			return
		}
		wr, _ := sse.StartStream(w, nil, time.Second)
		wr.WriteEvent(sse.Event{Name: "message", Data: []byte(`{"jsonrpc":"2.0","method":"x"}`)})
	}))
	defer ts.Close()
	c := sseClient(t, ts.URL, nil, &ClientOptions{Mode: ModeLegacy})
	err := c.Connect(context.Background())
	var hs *HTTPStatusError
	if !errors.As(err, &hs) || hs.StatusCode != http.StatusNotFound || !strings.Contains(err.Error(), "not endpoint") {
		t.Fatalf("error %v", err)
	}
	// NoSSEFallback: the 404 alone.
	c2 := sseClient(t, ts.URL, &HTTPClientOptions{NoSSEFallback: true}, &ClientOptions{Mode: ModeLegacy})
	if err := c2.Connect(context.Background()); !errors.As(err, &hs) || strings.Contains(err.Error(), "GET") {
		t.Fatalf("error with NoSSEFallback %v", err)
	}
}

// HTTPClientOptions.SSE speaks HTTP+SSE from the start, in every mode:
// no Streamable HTTP POST is sent.
func TestClientSpeaksHTTPSSEWhenAskedWithoutTryingStreamableHTTP(t *testing.T) {
	t.Parallel()
	for _, mode := range []ClientMode{ModeAuto, ModeLegacy} {
		srv := newSSEOnly(t, newAskingServer(t), 0)
		c := sseClient(t, srv.url, &HTTPClientOptions{SSE: true}, &ClientOptions{Mode: mode})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		if got := callText(t, c, ctx, "defaults"); !strings.Contains(got, `"name":"Ada"`) {
			t.Errorf("defaults: %q", got)
		}
		cancel()
		if a := srv.attempt.Load(); a != 0 {
			t.Errorf("mode %d: %d Streamable HTTP attempts", mode, a)
		}
	}
}

// fakeSSE is a hand-written HTTP+SSE server: its endpoint event names
// endpoint (relative or absolute), and it answers initialize with
// version and tools/list with no tools.
func fakeSSE(t testing.TB, endpoint, version string) string {
	msgs := make(chan []byte, 16)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusAccepted)
			msg, e := jsonrpc.Decode(b)
			if e != nil || !msg.IsRequest() {
				return
			}
			var res string
			switch msg.Method {
			case methodInitialize:
				res = `{"protocolVersion":"` + version + `","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`
			default:
				res = `{"tools":[]}`
			}
			msgs <- jsonrpc.AppendResponse(nil, msg.ID, []byte(res))
			return
		}
		wr, err := sse.StartStream(w, nil, time.Second)
		if err != nil {
			return
		}
		defer wr.Release()
		if wr.WriteEvent(sse.Event{Name: "endpoint", Data: []byte(endpoint)}) != nil {
			return
		}
		for {
			select {
			case m := <-msgs:
				if wr.WriteEvent(sse.Event{Name: "message", Data: m}) != nil {
					return
				}
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// Over HTTP+SSE the client accepts the revision the server answers with,
// down to the transport's own, 2024-11-05 (and 2025-03-26).
func TestClientOverHTTPSSEAcceptsTheRevisionTheServerAnswers(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2024-11-05", "2025-03-26"} {
		u := fakeSSE(t, "/messages?session=1", v)
		c := sseClient(t, u, &HTTPClientOptions{SSE: true}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := c.ListTools(ctx, nil); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		cancel()
		if got := c.ProtocolVersion(); got != v {
			t.Errorf("version %q, want %q", got, v)
		}
	}
}

// The endpoint event may not send the client's messages (and their
// headers) to another origin.
func TestClientRefusesAnEndpointOfAnotherOrigin(t *testing.T) {
	t.Parallel()
	u := fakeSSE(t, "http://elsewhere.example/messages", "2024-11-05")
	c := sseClient(t, u, &HTTPClientOptions{SSE: true}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err == nil || !strings.Contains(err.Error(), "another origin") {
		t.Fatalf("error %v", err)
	}
}

// When the stream ends (the server ended the session), the next call
// opens a new stream and a new session, as a Streamable HTTP client does
// on a 404.
func TestClientOpensANewHTTPSSESessionWhenTheStreamEnds(t *testing.T) {
	t.Parallel()
	srv := newSSEOnly(t, newAskingServer(t), 0)
	c := sseClient(t, srv.url, nil, &ClientOptions{Mode: ModeLegacy})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	srv.h.mu.Lock()
	var all []*sseSession
	for _, ss := range srv.h.sessions {
		all = append(all, ss)
	}
	srv.h.mu.Unlock()
	for _, ss := range all {
		ss.end(true)
	}
	// The client may see the end first, or the POST's 404: either way a
	// new session.
	testutil.Eventually(t, 5*time.Second, "the ended session to go", func() bool { return srv.h.sessionCount() == 0 })
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatalf("after the stream ended: %v", err)
	}
	if g := srv.gets.Load(); g != 2 {
		t.Errorf("%d GETs, want 2", g)
	}
}

// Cancelling a call over HTTP+SSE tells the server
// (notifications/cancelled), whose handler is cancelled; Close ends the
// stream, and with it the session.
func TestClientCancelAndCloseOverHTTPSSE(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	started, cancelled := make(chan struct{}), make(chan struct{})
	s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	srv := newSSEOnly(t, s, 0)
	c := sseClient(t, srv.url, &HTTPClientOptions{SSE: true}, &ClientOptions{Mode: ModeLegacy})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.CallTool(ctx, "wait", nil, nil); errc <- err }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler was not cancelled")
	}
	if n := srv.h.sessionCount(); n != 1 {
		t.Fatalf("%d sessions", n)
	}
	c.Close()
	testutil.Eventually(t, 5*time.Second, "no session after Close", func() bool { return srv.h.sessionCount() == 0 })
}

// Progress and log messages of a call arrive on the stream and reach
// the call's callback and OnLog.
func TestClientProgressAndLogsOverHTTPSSE(t *testing.T) {
	t.Parallel()
	srv := newSSEOnly(t, newAskingServer(t), 0)
	var logs atomic.Int32
	c := sseClient(t, srv.url, &HTTPClientOptions{SSE: true}, &ClientOptions{Mode: ModeLegacy, LogLevel: LevelDebug,
		OnLog: func(*LoggingMessageParams) { logs.Add(1) }})
	var progress atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "progress", nil, &CallOptions{OnProgress: func(*ProgressParams) { progress.Add(1) }})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	if progress.Load() != 3 || logs.Load() != 1 {
		t.Fatalf("%d progress notifications, %d log messages", progress.Load(), logs.Load())
	}
	b, _ := json.Marshal(res.Content)
	if !strings.Contains(string(b), "done") {
		t.Fatalf("content %s", b)
	}
}
