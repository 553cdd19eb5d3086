package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// What a client that misbehaves on purpose can cost a server: a body
// that trickles in, a stream nobody reads. Each test runs a real
// http.Server on loopback and talks to it over raw TCP where a well-bred
// client would not do what the test needs.

// smallBufferListener gives every accepted connection a small send
// buffer, so that a client that does not read blocks the server's writes
// after a few KiB.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// loopbackServer serves h on a loopback port with the timeouts an
// embedding server should set; the returned server is shut down at the
// end of the test.
func loopbackServer(t testing.TB, h http.Handler) (*http.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go srv.Serve(smallBufferListener{ln})
	t.Cleanup(func() { srv.Close() })
	return srv, ln.Addr().String()
}

// rawConn dials addr with a small receive buffer: a client that sends and
// never reads.
func rawConn(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	tc.SetReadBuffer(2 << 10)
	t.Cleanup(func() { tc.Close() })
	return tc
}

// rawRequest writes an HTTP/1.1 request head (and body) on c.
func rawRequest(t testing.TB, c net.Conn, method string, hdr http.Header, body string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", method)
	for k, vs := range hdr {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	if method == http.MethodPost {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
}

func heapNow() (inuse, alloc int64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.HeapAlloc)
}

// A body costs what it has sent, for a bounded time: 200 clients that
// each declare 4 MiB and trickle a few bytes hold a few KiB each (not the
// declared length), and each is answered 408 after the read timeout.
// The timeout is short, but long enough for all 200 to be in their
// handlers at once before the first is cut off; the trickle comes well
// within it. Serial: it measures the process's heap.
func TestSlowBodiesCostWhatTheySentForABoundedTime(t *testing.T) {
	if testing.Short() {
		t.Skip("200 connections held for a second")
	}
	const (
		clients  = 200
		declared = 4 << 20
		timeout  = time.Second
		trickle  = timeout / 10
	)
	h := NewHTTPHandler(newTestServer(t, nil), &HTTPOptions{BodyReadTimeout: timeout})
	var inside atomic.Int32
	_, addr := loopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside.Add(1)
		defer inside.Add(-1)
		h.ServeHTTP(w, r)
	}))
	inuse0, alloc0 := heapNow()

	conns := make([]net.Conn, clients)
	sent := make([]time.Time, clients)
	stop := make(chan struct{})
	var trickling sync.WaitGroup
	defer func() { close(stop); trickling.Wait() }()
	for i := range conns {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		sent[i] = time.Now()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"jsonrpc\"", declared)
		trickling.Add(1)
		go func() {
			defer trickling.Done()
			tick := time.NewTicker(trickle)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
	}
	testutil.Eventually(t, timeout, "every body to be in its handler", func() bool { return inside.Load() == clients })
	inuse, alloc := heapNow()
	if n := inside.Load(); n != clients {
		t.Fatalf("only %d of %d bodies were held while the heap was measured", n, clients)
	}
	t.Logf("%d slow bodies held: heap in use +%d KiB, allocated +%d KiB", clients, (inuse-inuse0)>>10, (alloc-alloc0)>>10)
	if inuse-inuse0 > 64<<20 || alloc-alloc0 > 64<<20 {
		t.Errorf("%d slow bodies grew the heap by %d MiB in use, %d MiB allocated (bound 64 MiB)", clients, (inuse-inuse0)>>20, (alloc-alloc0)>>20)
	}

	for i, c := range conns {
		c.SetReadDeadline(sent[i].Add(timeout + 20*time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("client %d: no answer: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(sent[i])
		var m map[string]any
		if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(b, &m) != nil || errorCode(t, m) != CodeInvalidRequest {
			t.Fatalf("client %d: %d %s", i, resp.StatusCode, b)
		}
		if took < timeout-100*time.Millisecond {
			t.Fatalf("client %d was cut off after %v, before the read timeout %v", i, took, timeout)
		}
	}
}

// A body that arrives whole is read as before, and one longer than its
// Content-Length, or shorter, is refused.
func TestBodiesAreReadAsTheyArrive(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, maxBodyPrealloc - 1, maxBodyPrealloc, maxBodyPrealloc + 1, 3*maxBodyPrealloc + 7, 1 << 20} {
		body := strings.Repeat("x", n)
		got, err := readAll(strings.NewReader(body), int64(n))
		if err != nil || string(got) != body {
			t.Errorf("%d bytes: %d read, %v", n, len(got), err)
		}
		if got, err := readAll(io.MultiReader(strings.NewReader(body), iotest1{}), -1); err != nil || string(got) != body {
			t.Errorf("%d bytes, unknown length: %d read, %v", n, len(got), err)
		}
	}
	if _, err := readAll(strings.NewReader("abcd"), 3); err == nil {
		t.Error("a body longer than its Content-Length was accepted")
	}
	if _, err := readAll(strings.NewReader("ab"), 3); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a short body: %v", err)
	}
	// A declared length is believed only as the bytes come.
	r := &countingReader{data: "{}"}
	if _, err := readAll(r, 4<<20); err == nil {
		t.Error("a body shorter than declared was accepted")
	}
	if r.maxBuf > maxBodyPrealloc {
		t.Errorf("a 4 MiB declaration got a %d byte buffer before any byte came", r.maxBuf)
	}
}

type iotest1 struct{}

func (iotest1) Read([]byte) (int, error) { return 0, io.EOF }

type countingReader struct {
	data   string
	maxBuf int
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.maxBuf = max(r.maxBuf, len(p))
	if r.data == "" {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// A client that never reads cannot hang the server: with SSE streams
// nobody reads (a legacy GET stream, a legacy response stream, a
// 2026-07-28 response stream and a subscriptions/listen stream) flooded
// with events, and a body sent by half, DELETE of a session answers at
// once and Server.Close then http.Server.Shutdown finish within 2 s. The
// write timeout is a minute here: nothing relies on it.
func TestNonReadingClientsCannotHangTheServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	big := strings.Repeat("x", 64<<10)
	s.AddTool(&Tool{Name: "flood"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		for i := 0; i < 400 && ctx.Err() == nil; i++ {
			if err := ReportProgress(ctx, float64(i), 400, big); err != nil {
				break
			}
		}
		if r.Meta.ProtocolVersion == LegacyProtocolVersion {
			<-ctx.Done() // held until the session ends
		}
		return TextResult("done"), nil
	})
	h := NewHTTPHandler(s, &HTTPOptions{StreamWriteTimeout: time.Minute, KeepAlive: -1}).(*httpHandler)
	srv, addr := loopbackServer(t, h)
	url := "http://" + addr + "/mcp"
	hc := &http.Client{Timeout: 10 * time.Second}

	legacyHeaders := func(sid string) http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
			"Mcp-Protocol-Version": {LegacyProtocolVersion}, "Mcp-Session-Id": {sid}}
	}
	deleteSession := func(sid string) time.Duration {
		t.Helper()
		r, _ := http.NewRequest(http.MethodDelete, url, nil)
		r.Header.Set("Mcp-Session-Id", sid)
		start := time.Now()
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatalf("DELETE with a stream nobody reads: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d", resp.StatusCode)
		}
		return time.Since(start)
	}

	// 1. A legacy GET stream nobody reads, flooded with resource updates.
	uri := "test://" + strings.Repeat("u", 2000)
	a := newLegacyClient(t, url, `{}`)
	if v := a.request(methodSubscribe, `{"uri":"`+uri+`"}`); v["result"] == nil {
		t.Fatalf("subscribe: %v", v)
	}
	rawRequest(t, rawConn(t, addr), http.MethodGet, http.Header{"Accept": {"text/event-stream"},
		"Mcp-Protocol-Version": {LegacyProtocolVersion}, "Mcp-Session-Id": {a.sid}}, "")
	hs := h.legacy.lookup(a.sid)
	flooding := make(chan struct{})
	floodDone := make(chan struct{})
	go func() {
		defer close(floodDone)
		for {
			select {
			case <-flooding:
				return
			default:
				s.ResourceUpdated(uri)
				runtime.Gosched()
			}
		}
	}()
	defer func() {
		select {
		case <-flooding:
		default:
			close(flooding)
		}
		<-floodDone
	}()
	// The writer is stuck on the socket once the updates fill it: a
	// write still in progress half a second later.
	writing := func() bool {
		st := hs.standalone()
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.conn != nil && st.conn.wr.Writing()
	}
	testutil.Eventually(t, 20*time.Second, "the GET stream's writer to block", func() bool {
		if !writing() {
			return false
		}
		time.Sleep(500 * time.Millisecond)
		return writing()
	})
	d := deleteSession(a.sid)
	t.Logf("DELETE with a blocked GET stream: %v", d)
	if d > 5*time.Second {
		t.Errorf("DELETE took %v with a GET stream nobody reads", d)
	}

	// 2. A legacy response stream nobody reads, flooded with progress.
	b := newLegacyClient(t, url, `{}`)
	rawRequest(t, rawConn(t, addr), http.MethodPost, legacyHeaders(b.sid),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","_meta":{"progressToken":1}}}`)
	hb := h.legacy.lookup(b.sid)
	testutil.Eventually(t, 20*time.Second, "the legacy response stream to fill", func() bool {
		hb.smu.Lock()
		st := hb.streams[1]
		hb.smu.Unlock()
		if st == nil {
			return false
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.seq >= 100
	})
	d = deleteSession(b.sid)
	t.Logf("DELETE with a flooded response stream: %v", d)
	if d > 5*time.Second {
		t.Errorf("DELETE took %v with a response stream nobody reads", d)
	}

	// 3. Held at Close: another legacy GET stream, a 2026-07-28 response
	// stream and a listen stream nobody reads, and half a body.
	c := newLegacyClient(t, url, `{}`)
	rawRequest(t, rawConn(t, addr), http.MethodGet, http.Header{"Accept": {"text/event-stream"},
		"Mcp-Protocol-Version": {LegacyProtocolVersion}, "Mcp-Session-Id": {c.sid}}, "")
	modern := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":` +
		strings.Replace(metaJSON(""), "{", `{"progressToken":1,`, 1) + `,"name":"flood"}}`
	rawRequest(t, rawConn(t, addr), http.MethodPost, headersFor(t, modern), modern)
	listen := req(3, methodSubscriptionsListen, `"notifications":{"resourceSubscriptions":["`+uri+`"]}`)
	rawRequest(t, rawConn(t, addr), http.MethodPost, headersFor(t, listen), listen)
	half := rawConn(t, addr)
	io.WriteString(half, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	testutil.Eventually(t, 20*time.Second, "the streams to be written and the body to be read", func() bool {
		reading, writing := s.exch.Held()
		// c's GET stream, the modern response, the listen stream.
		return writing >= 3 && reading >= 1
	})
	// The floods fill the sockets: the writers of the modern response and
	// of the listen stream are stuck in a write.
	testutil.Eventually(t, 20*time.Second, "two stream writers to block", func() bool {
		return s.exch.InWrite() >= 2
	})

	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		buf := make([]byte, 1<<20)
		t.Log(string(buf[:runtime.Stack(buf, true)])) // who is still in a handler
		t.Fatalf("http.Server.Shutdown after Server.Close: %v (after %v)", err, time.Since(start))
	}
	d = time.Since(start)
	t.Logf("Server.Close + http.Server.Shutdown: %v", d)
	if d > 2*time.Second {
		t.Errorf("Server.Close + http.Server.Shutdown took %v with clients that do not read", d)
	}
}

// BodyReadTimeout bounds the body, not the handler: one that runs past it
// answers as usual (neither a deadline left on the connection nor a
// timeout on the request's context may end it).
func TestBodyReadTimeoutDoesNotBoundTheHandler(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	s.AddTool(&Tool{Name: "slow"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		select {
		case <-time.After(600 * time.Millisecond):
			return TextResult("finished"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	_, addr := loopbackServer(t, NewHTTPHandler(s, &HTTPOptions{BodyReadTimeout: 200 * time.Millisecond}))
	body := req(1, MethodToolsCall, `"name":"slow","arguments":{}`)
	r, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	r.Header = headersFor(t, body)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "finished") {
		t.Fatalf("a handler running past the body read timeout: %d %s", resp.StatusCode, b)
	}
}

// Every SSE write has a deadline: without DELETE or Close, a client that
// stops reading loses its stream after StreamWriteTimeout, on a
// 2026-07-28 response (the handler's notifications then fail) and on a
// legacy GET stream (the exchange is let go).
func TestSSEWritesHaveADeadline(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	big := strings.Repeat("x", 64<<10)
	failed := make(chan error, 1)
	s.AddTool(&Tool{Name: "flood"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		for {
			if err := ReportProgress(ctx, 1, 2, big); err != nil {
				failed <- err
				return nil, err
			}
		}
	})
	h := NewHTTPHandler(s, &HTTPOptions{StreamWriteTimeout: 200 * time.Millisecond, KeepAlive: -1}).(*httpHandler)
	_, addr := loopbackServer(t, h)

	modern := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":` +
		strings.Replace(metaJSON(""), "{", `{"progressToken":1,`, 1) + `,"name":"flood"}}`
	rawRequest(t, rawConn(t, addr), http.MethodPost, headersFor(t, modern), modern)
	select {
	case <-failed:
	case <-time.After(20 * time.Second):
		t.Fatal("writes to a 2026-07-28 stream nobody reads still block")
	}

	uri := "test://" + strings.Repeat("u", 2000)
	c := newLegacyClient(t, "http://"+addr+"/mcp", `{}`)
	c.request(methodSubscribe, `{"uri":"`+uri+`"}`)
	rawRequest(t, rawConn(t, addr), http.MethodGet, http.Header{"Accept": {"text/event-stream"},
		"Mcp-Protocol-Version": {LegacyProtocolVersion}, "Mcp-Session-Id": {c.sid}}, "")
	hs := h.legacy.lookup(c.sid)
	testutil.Eventually(t, 10*time.Second, "the GET stream", func() bool {
		st := hs.standalone()
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.conn != nil
	})
	testutil.Eventually(t, 20*time.Second, "the GET stream nobody reads to be let go", func() bool {
		s.ResourceUpdated(uri)
		st := hs.standalone()
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.conn == nil
	})
	if h.legacy.lookup(c.sid) == nil {
		t.Error("losing its stream ended the session")
	}
}

// A handler writes its live question itself when nothing else writes to
// the exchange (legacyStream.writeDirect), with the deadline every SSE
// write has: to a client that stops reading, the write fails within
// StreamWriteTimeout, the exchange is let go, the handler waits for its
// answer as before (the client may resume the stream), and DELETE ends
// it.
func TestLegacyQuestionToAClientThatDoesNotReadIsLetGo(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	big := strings.Repeat("x", 4<<20) // far past the sockets' buffers
	asking := make(chan struct{})
	asked := make(chan error, 1)
	s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		close(asking)
		_, err := Elicit[Region](ctx, big)
		asked <- err
		return nil, err
	})
	h := NewHTTPHandler(s, &HTTPOptions{StreamWriteTimeout: 200 * time.Millisecond, KeepAlive: -1,
		Legacy: LegacyHTTPOptions{MaxEventBytes: 16 << 20}}).(*httpHandler)
	_, addr := loopbackServer(t, h)
	c := newLegacyClient(t, "http://"+addr+"/mcp", legacyCaps)
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {LegacyProtocolVersion}, "Mcp-Session-Id": {c.sid}}
	rawRequest(t, rawConn(t, addr), http.MethodPost, hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait"}}`)
	<-asking
	hs := h.legacy.lookup(c.sid)
	stream := func() *legacyStream {
		hs.smu.Lock()
		defer hs.smu.Unlock()
		for num, st := range hs.streams {
			if num != 0 {
				return st
			}
		}
		return nil
	}
	testutil.Eventually(t, 20*time.Second, "the exchange nobody reads to be let go", func() bool {
		st := stream()
		if st == nil {
			return false
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.streaming && st.conn == nil
	})
	select {
	case err := <-asked:
		t.Fatalf("the question ended with the exchange: %v", err)
	default:
	}
	if h.legacy.lookup(c.sid) == nil {
		t.Fatal("losing the exchange ended the session")
	}
	c.delete()
	select {
	case err := <-asked:
		if !errors.Is(err, errLegacySessionEnded) && !errors.Is(err, context.Canceled) {
			t.Errorf("question ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler is still waiting after DELETE")
	}
}
