package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

func TestStreamServesManyRequestsInFlight(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	release := make(chan struct{})
	var started atomic.Int32
	s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		started.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return TextResult("released"), nil
	})
	c := newStreamClient(t, s)
	const n = 20
	for i := 0; i < n; i++ {
		c.send(req(100+i, MethodToolsCall, `"name":"wait"`))
	}
	// While all twenty wait, another request is still answered.
	c.send(req(1, MethodToolsList, ""))
	if v := c.next(); v["id"] != float64(1) {
		t.Fatalf("tools/list was not answered first: %v", v)
	}
	testutil.Eventually(t, 5*time.Second, "all requests to start concurrently", func() bool { return started.Load() == n })
	close(release)
	seen := map[float64]bool{}
	for i := 0; i < n; i++ {
		v := c.next()
		seen[v["id"].(float64)] = true
	}
	if len(seen) != n {
		t.Errorf("got %d distinct responses", len(seen))
	}
}

// The server and its client run in a bubble: synctest.Wait returns once
// the handler is blocked on its context, so the cancellation reaches a
// request in flight however slow the machine.
func TestStreamCancelledRequestGetsNoResponse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newTestServer(t, nil)
		started, cancelled := make(chan struct{}), make(chan struct{})
		s.AddTool(&Tool{Name: "slow"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return TextResult("too late"), nil
		})
		c := newStreamClient(t, s)
		c.send(req(5, MethodToolsCall, `"name":"slow"`))
		synctest.Wait()
		select {
		case <-started:
		default:
			t.Fatal("the request did not reach its handler")
		}
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user"}}`)
		// The request is served on the goroutine that read it; within
		// two periods of the hand-off watch another goroutine reads.
		time.Sleep(3 * handOffAfter)
		synctest.Wait()
		select {
		case <-cancelled:
		default:
			t.Fatal("handler context was not cancelled")
		}
		c.send(req(6, MethodToolsList, ""))
		if v := c.next(); v["id"] != float64(6) {
			t.Fatalf("a response for the cancelled request arrived: %v", v)
		}
		synctest.Wait() // nothing else is on its way
		select {
		case l := <-c.lines:
			t.Fatalf("a response for the cancelled request arrived after: %s", l)
		default:
		}
	})
}

func TestStreamReturnsOnEOFAfterAnsweringInFlight(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	in := strings.NewReader(req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"bye"}`) + "\n")
	var out testutil.Buffer
	done := make(chan error, 1)
	go func() { done <- s.ServeStream(context.Background(), in, &out, nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStream: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStream did not return at EOF")
	}
	if !strings.Contains(out.String(), `"text":"bye"`) {
		t.Errorf("in-flight request not answered before exit: %q", out.String())
	}
}

func TestStreamOversizedLineIsRejectedAndReadingGoesOn(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	big := req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"`+strings.Repeat("y", 5000)+`"}`)
	in := strings.NewReader(big + "\n" + req(2, MethodToolsList, "") + "\n")
	var out bytes.Buffer
	if err := s.ServeStream(context.Background(), in, &out, &StreamOptions{MaxMessageBytes: 1024}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", lines)
	}
	if !strings.Contains(lines[0], `"code":-32600`) || !strings.Contains(lines[1], `"id":2`) {
		t.Errorf("lines %q", lines)
	}
}

func TestStreamMalformedLinesGetErrorsNotPanics(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	c := newStreamClient(t, s)
	c.send(`{not json`)
	if v := c.next(); errorCode(t, v) != CodeParseError {
		t.Errorf("%v", v)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`)
	if v := c.next(); errorCode(t, v) != CodeInvalidParams || v["id"] != float64(3) {
		t.Errorf("%v", v)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"result":{}}`)
	if v := c.next(); errorCode(t, v) != CodeInvalidRequest {
		t.Errorf("%v", v)
	}
}

func TestListenAcknowledgesFirstThenDeliversFilteredChanges(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	c := newStreamClient(t, s)
	c.send(req(10, methodSubscriptionsListen, `"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://static"]}`))
	ack := c.next()
	if ack["method"] != NotificationSubscriptionsAck {
		t.Fatalf("first message is not the ack: %v", ack)
	}
	b, _ := json.Marshal(ack)
	wiretest.CheckWire(t, "", b)
	p := ack["params"].(map[string]any)
	if p["_meta"].(map[string]any)[metaSubscriptionID] != float64(10) || p["notifications"].(map[string]any)["toolsListChanged"] != true {
		t.Errorf("ack %v", ack)
	}
	// A prompt change is not wanted; a tool change and the resource are.
	s.AddPrompt(&Prompt{Name: "new"}, func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil })
	s.AddTool(&Tool{Name: "new"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	n := c.next()
	if n["method"] != NotificationToolListChanged {
		t.Fatalf("got %v", n)
	}
	s.ResourceUpdated("test://other")
	s.ResourceUpdated("test://static")
	n = c.next()
	if n["method"] != NotificationResourceUpdated || n["params"].(map[string]any)["uri"] != "test://static" {
		t.Fatalf("got %v", n)
	}
	for _, m := range []map[string]any{n} {
		b, _ := json.Marshal(m)
		wiretest.CheckWire(t, "", b)
		if m["params"].(map[string]any)["_meta"].(map[string]any)[metaSubscriptionID] != float64(10) {
			t.Errorf("no subscriptionId: %v", m)
		}
	}
	// Graceful end: the listen result closes the stream.
	s.Close()
	res := c.next()
	r := result(t, res)
	if r["_meta"].(map[string]any)[metaSubscriptionID] != float64(10) {
		t.Errorf("listen result %v", res)
	}
	b, _ = json.Marshal(res)
	wiretest.CheckWire(t, methodSubscriptionsListen, b)
}

// TestHTTPDisconnectCancelsHandler runs a real loopback server: closing
// the connection must cancel the handler's context.
func TestHTTPDisconnectCancelsHandler(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	started, cancelled := make(chan struct{}), make(chan struct{})
	s.AddTool(&Tool{Name: "hang"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: NewHTTPHandler(s, nil)}
	go srv.Serve(ln)
	defer srv.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body := req(1, MethodToolsCall, `"name":"hang"`)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: hang\r\nContent-Length: %d\r\n\r\n%s", ln.Addr(), len(body), body)
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("handler did not start (lower-case header names must be accepted)")
	}
	conn.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("disconnect did not cancel the handler")
	}
}

func TestHTTPListenStreamOverLoopback(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: NewHTTPHandler(s, &HTTPOptions{KeepAlive: 20 * time.Millisecond})}
	go srv.Serve(ln)
	defer srv.Close()
	body := req(3, methodSubscriptionsListen, `"notifications":{"promptsListChanged":true}`)
	r, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/mcp", strings.NewReader(body))
	for k, v := range headersFor(t, body) {
		r.Header[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(r.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	buf := make([]byte, 0, 4096)
	read := func(want string) {
		t.Helper()
		tmp := make([]byte, 1024)
		for !strings.Contains(string(buf), want) {
			n, err := resp.Body.Read(tmp)
			buf = append(buf, tmp[:n]...)
			if err != nil {
				t.Fatalf("waiting for %q: %v (have %q)", want, err, buf)
			}
		}
	}
	read(NotificationSubscriptionsAck)
	read(": keep-alive")
	s.AddPrompt(&Prompt{Name: "p2"}, func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil })
	read(notificationPromptListChanged)
}

func TestStreamEndsStuckRequestsAfterTheGrace(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	s.AddTool(&Tool{Name: "stuck"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	in := strings.NewReader(req(1, MethodToolsCall, `"name":"stuck"`) + "\n")
	done := make(chan struct{})
	go func() {
		s.ServeStream(context.Background(), in, io.Discard, &StreamOptions{ShutdownGrace: 50 * time.Millisecond})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStream waited forever for a stuck handler after EOF")
	}
}
