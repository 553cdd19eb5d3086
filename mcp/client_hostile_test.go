package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// A hostile server, written on raw net/http (or a raw stdio loop), cannot
// make the client send its requests or credentials elsewhere, run its
// handlers without bound, hold unbounded goroutines and connections, or
// stall a call for ever.

// seen records what a raw server received.
type seen struct {
	mu      sync.Mutex
	n       int
	headers []http.Header
	bodies  []string
}

func (s *seen) add(r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.headers = append(s.headers, r.Header.Clone())
	s.bodies = append(s.bodies, string(b))
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// redirector answers every request with 307 to target+path.
func redirector(t *testing.T, target string, hits *atomic.Int64) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", target+r.URL.Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// answering is a server that answers every request with a complete
// result, recording what it got.
func answering(t *testing.T, got *seen) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		got.mu.Lock()
		got.n++
		got.headers = append(got.headers, r.Header.Clone())
		got.bodies = append(got.bodies, string(in.raw))
		got.mu.Unlock()
		writeResult(w, in, `{"resultType":"complete","content":[{"type":"text","text":"elsewhere"}]}`)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestClientFollowsNoRedirectUnlessAsked(t *testing.T) {
	t.Parallel()
	var other seen
	elsewhere := answering(t, &other)
	var hits atomic.Int64
	from := redirector(t, elsewhere.URL, &hits)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	user := &http.Client{}
	c := NewClient(NewHTTPClientTransport(from.URL+"/mcp", &HTTPClientOptions{HTTPClient: user}), &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	defer c.Close()
	_, err := c.CallTool(ctx, "t", nil, nil)
	if !errors.Is(err, ErrRedirect) || !strings.Contains(err.Error(), "FollowRedirects") {
		t.Fatalf("a redirected POST: %v, want ErrRedirect", err)
	}
	if other.count() != 0 || hits.Load() != 1 {
		t.Fatalf("the redirect's target got %d requests (the origin %d)", other.count(), hits.Load())
	}
	if user.CheckRedirect != nil {
		t.Fatal("the caller's http.Client was modified")
	}
	// The session's other requests refuse them too: a legacy handshake
	// is a POST, and the HTTP+SSE stream a GET.
	legacy := NewClient(NewHTTPClientTransport(from.URL+"/mcp", &HTTPClientOptions{NoSSEFallback: true}), &ClientOptions{Mode: ModeLegacy})
	defer legacy.Close()
	if err := legacy.Connect(ctx); !errors.Is(err, ErrRedirect) {
		t.Fatalf("a redirected initialize: %v", err)
	}
	sse := NewClient(NewHTTPClientTransport(from.URL+"/sse", &HTTPClientOptions{SSE: true}), &ClientOptions{Mode: ModeLegacy})
	defer sse.Close()
	if err := sse.Connect(ctx); !errors.Is(err, ErrRedirect) {
		t.Fatalf("a redirected HTTP+SSE stream: %v", err)
	}
	if other.count() != 0 {
		t.Fatalf("the redirect's target got %d requests", other.count())
	}

	// Asked for, the redirect is followed.
	follow := NewClient(NewHTTPClientTransport(from.URL+"/mcp", &HTTPClientOptions{FollowRedirects: true}), &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	defer follow.Close()
	res, err := follow.CallTool(ctx, "t", nil, nil)
	if err != nil || resultText(t, res) != "elsewhere" {
		t.Fatalf("with FollowRedirects: %v %v", res, err)
	}
}

func TestCredentialsNeverCrossOrigins(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	secrets := http.Header{"Authorization": {"Bearer secret"}, "X-Api-Key": {"k"}, "Cookie": {"c=1"}}
	// Another port of the same host is another origin: neither the
	// Authorization header (which net/http would keep) nor the custom
	// ones (which it always keeps) go there.
	var other seen
	elsewhere := answering(t, &other)
	var hits atomic.Int64
	from := redirector(t, elsewhere.URL, &hits)
	c := NewClient(NewHTTPClientTransport(from.URL+"/mcp", &HTTPClientOptions{FollowRedirects: true, Header: secrets}), &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	defer c.Close()
	if _, err := c.CallTool(ctx, "t", nil, nil); err != nil {
		t.Fatal(err)
	}
	if other.count() != 1 {
		t.Fatalf("%d requests reached the target", other.count())
	}
	h := other.headers[0]
	for _, k := range []string{"Authorization", "X-Api-Key", "Cookie"} {
		if h.Get(k) != "" {
			t.Errorf("%s crossed to another origin: %q", k, h.Get(k))
		}
	}
	if h.Get(HeaderMethod) != MethodToolsCall || h.Get(HeaderProtocolVersion) == "" {
		t.Errorf("the MCP headers were dropped too: %v", h)
	}
	// Within one origin, they stay.
	var same seen
	var mux http.ServeMux
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) {
		same.mu.Lock()
		same.headers = append(same.headers, r.Header.Clone())
		same.mu.Unlock()
		writeResult(w, readRPC(t, r), `{"resultType":"complete","content":[]}`)
	})
	ts := httptest.NewServer(&mux)
	defer ts.Close()
	sc := NewClient(NewHTTPClientTransport(ts.URL+"/old", &HTTPClientOptions{FollowRedirects: true, Header: secrets}), &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	defer sc.Close()
	if _, err := sc.CallTool(ctx, "t", nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(same.headers) != 1 || same.headers[0].Get("X-Api-Key") != "k" || same.headers[0].Get("Authorization") != "Bearer secret" {
		t.Fatalf("a same-origin redirect lost the headers: %v", same.headers)
	}
	// An HTTP+SSE server naming an endpoint of another origin is a
	// redirect in disguise: refused, nothing is POSTed there.
	var posted seen
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posted.add(r) }))
	defer target.Close()
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages?s=1\n\n", target.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer stream.Close()
	lc := NewClient(NewHTTPClientTransport(stream.URL, &HTTPClientOptions{SSE: true, FollowRedirects: true, Header: secrets}), &ClientOptions{Mode: ModeLegacy})
	defer lc.Close()
	if err := lc.Connect(ctx); !errors.Is(err, ErrRedirect) {
		t.Fatalf("an endpoint of another origin: %v", err)
	}
	if posted.count() != 0 {
		t.Fatalf("%d messages went to the other origin", posted.count())
	}
}

func TestInputRequestsPerRoundAreBounded(t *testing.T) {
	t.Parallel()
	var legs atomic.Int64
	var asked atomic.Int64
	roots := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"resultType":"input_required","requestState":"s","inputRequests":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"r%d":{"method":"roots/list","params":{}}`, i)
		}
		b.WriteString("}}")
		return b.String()
	}
	huge, edge := roots(120000), roots(defaultMaxInputRequests)
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		legs.Add(1)
		switch {
		case in.Params.RequestState != nil:
			writeResult(w, in, `{"resultType":"complete","content":[]}`)
		case in.Params.Name == "edge":
			writeResult(w, in, edge)
		default:
			writeResult(w, in, huge)
		}
	}, &HTTPClientOptions{MaxMessageBytes: 8 << 20}, &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion,
		Roots: func(context.Context, *ListRootsRequest) (*ListRootsResult, error) {
			asked.Add(1)
			return &ListRootsResult{}, nil
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.CallTool(ctx, "flood", nil, nil)
	if !errors.Is(err, errTooManyInputRequests) || !errors.Is(err, ErrInvalidResponse) {
		t.Fatalf("120000 input requests in a round: %v", err)
	}
	if asked.Load() != 0 || legs.Load() != 1 {
		t.Fatalf("the handler ran %d times, %d legs sent", asked.Load(), legs.Load())
	}
	_, err = c.CallTool(ctx, "flood", nil, &CallOptions{Manual: true})
	if !errors.Is(err, errTooManyInputRequests) {
		t.Fatalf("in manual mode: %v", err)
	}
	// The bound itself is fine.
	legs.Store(0)
	if _, err := c.CallTool(ctx, "edge", nil, nil); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != defaultMaxInputRequests || legs.Load() != 2 {
		t.Fatalf("a round of %d: the handler ran %d times, %d legs", defaultMaxInputRequests, asked.Load(), legs.Load())
	}
}

// countingHandler counts the client's warnings about dropped requests.
type countingHandler struct {
	slog.Handler
	dropped *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "too many in flight") {
		h.dropped.Add(1)
	}
	return nil
}

// 5000 requests of a 2025-11-25 server on the session's GET stream,
// whose answers the server never takes, hold at most
// maxConcurrentAnswers + maxConcurrentRefusals answers (goroutines and
// connections) in the client; the others are refused or dropped (logged).
// (HTTP+SSE answers through the same slots of the transport.)
func TestServerRequestsAreAnsweredWithBoundedGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("5000 server requests")
	}
	const requests = 5000
	before := runtime.NumGoroutine()
	var posts, held, maxHeld, conns, maxConns atomic.Int64
	peak := func(m *atomic.Int64, n int64) {
		for old := m.Load(); n > old && !m.CompareAndSwap(old, n); old = m.Load() {
		}
	}
	release := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range requests {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"roots/list\"}\n\n", i)
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		case http.MethodPost:
		default:
			return
		}
		in := readRPC(t, r)
		switch in.Method {
		case methodInitialize:
			w.Header().Set("Mcp-Session-Id", "s")
			writeResult(w, in, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"h","version":"1"}}`)
		case "": // an answer, never taken
			posts.Add(1)
			peak(&maxHeld, held.Add(1))
			defer held.Add(-1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			peak(&maxConns, conns.Add(1))
		case http.StateClosed, http.StateHijacked:
			conns.Add(-1)
		}
	}
	ts.Start()
	defer ts.Close()
	defer close(release)
	var dropped atomic.Int64
	opts := legacyHandlers(&ClientOptions{Mode: ModeLegacy, Logger: slog.New(countingHandler{slog.DiscardHandler, &dropped})})
	c := NewClient(NewHTTPClientTransport(ts.URL, nil), opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	// Every request is answered (a POST the server holds), refused (a POST
	// too) or dropped; the stream is read to its end.
	testutil.Eventually(t, 20*time.Second, "every request handled", func() bool {
		return posts.Load()+dropped.Load() >= requests-maxConcurrentRefusals
	})
	g := runtime.NumGoroutine() - before
	t.Logf("%d requests: %d goroutines more, %d answers held at most, %d connections at most, %d POSTed, %d dropped",
		requests, g, maxHeld.Load(), maxConns.Load(), posts.Load(), dropped.Load())
	const bound = maxConcurrentAnswers + maxConcurrentRefusals
	if maxHeld.Load() > bound {
		t.Errorf("%d answers in flight at once, want at most %d", maxHeld.Load(), bound)
	}
	if maxConns.Load() > bound+4 {
		t.Errorf("%d connections at once, want at most %d", maxConns.Load(), bound+4)
	}
	// Client and server share the process: each held answer is a handful
	// of goroutines on both sides.
	if g > 10*bound+50 {
		t.Errorf("%d goroutines more than before", g)
	}
}

// silentPipe is a client on net.Pipe whose server reads every line and
// never answers.
func silentPipe(t *testing.T, opts *ClientOptions) *Client {
	ce, se := net.Pipe()
	go io.Copy(io.Discard, se)
	c := NewClient(NewStreamClientTransport(ce, nil), opts)
	t.Cleanup(func() { c.Close(); se.Close() })
	return c
}

func TestCallsWithoutADeadlineGetTheDefault(t *testing.T) {
	t.Parallel()
	modern := func(o ClientOptions) *ClientOptions {
		o.Mode, o.ProtocolVersion = ModePinned, LatestProtocolVersion
		return &o
	}
	synctest.Test(t, func(t *testing.T) {
		c := silentPipe(t, modern(ClientOptions{}))
		start := time.Now()
		_, err := c.CallTool(context.Background(), "t", nil, nil)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != defaultCallTimeout {
			t.Fatalf("a call without a deadline: %v after %v, want a deadline after %v", err, time.Since(start), defaultCallTimeout)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		c := silentPipe(t, modern(ClientOptions{DefaultTimeout: time.Minute}))
		start := time.Now()
		_, err := c.ListTools(context.Background(), nil)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute {
			t.Fatalf("DefaultTimeout 1m: %v after %v", err, time.Since(start))
		}
		// The caller's own deadline, even a later one, wins.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start = time.Now()
		_, err = c.CallTool(ctx, "t", nil, nil)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Hour {
			t.Fatalf("a context deadline of 1h: %v after %v", err, time.Since(start))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A listen stream is not cut, nor is anything with a negative
		// DefaultTimeout.
		for _, o := range []*ClientOptions{modern(ClientOptions{}), modern(ClientOptions{DefaultTimeout: -1})} {
			c := silentPipe(t, o)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				if o.DefaultTimeout < 0 {
					_, err := c.CallTool(ctx, "t", nil, nil)
					done <- err
					return
				}
				done <- c.Listen(ctx, SubscriptionFilter{ToolsListChanged: true}, func(*ListenNotification) {})
			}()
			time.Sleep(2 * defaultCallTimeout)
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("ended after %v: %v", 2*defaultCallTimeout, err)
			default:
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("after cancel: %v", err)
			}
		}
	})
}

// closeCounter is a RoundTripper that counts CloseIdleConnections.
type closeCounter struct {
	http.RoundTripper
	closes atomic.Int64
}

func (c *closeCounter) CloseIdleConnections() { c.closes.Add(1) }

// Closing a Client leaves the idle connections of a caller's
// http.Client alone: another request of the caller's may be about to
// take one (net/http then fails it, "CloseIdleConnections called").
func TestClosingAClientLeavesTheCallersConnectionsAlone(t *testing.T) {
	t.Parallel()
	var got seen
	ts := answering(t, &got)
	rt := &closeCounter{RoundTripper: http.DefaultTransport}
	c := NewClient(NewHTTPClientTransport(ts.URL+"/mcp", &HTTPClientOptions{HTTPClient: &http.Client{Transport: rt}}), &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CallTool(ctx, "t", nil, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := rt.closes.Load(); n != 0 {
		t.Fatalf("the caller's transport had its idle connections closed %d times", n)
	}
}
