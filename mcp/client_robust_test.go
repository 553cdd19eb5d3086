package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A misbehaving server never hangs or crashes the client: each case is a
// typed error, within the call's deadline, with bounded memory.

func TestClientRejectsMisbehavingHTTPServers(t *testing.T) {
	t.Parallel()
	const small = 4 << 10
	big := strings.Repeat("x", 64<<10)
	cases := []struct {
		name   string
		method string // the client call: tools/call unless set
		h      func(w http.ResponseWriter, in *rpcIn)
		check  func(error) bool
	}{
		{"garbage body", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(in.ID)+`,"result":{`)
		}, isInvalid(nil)},
		{"answer for another id", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":987654,"result":{"content":[]}}`)
		}, isInvalid(nil)},
		{"huge body with length", "", func(w http.ResponseWriter, in *rpcIn) {
			writeResult(w, in, `{"content":[{"type":"text","text":"`+big+`"}]}`)
		}, isInvalid(ErrMessageTooLarge)},
		{"huge chunked body", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "application/json")
			for range 64 {
				io.WriteString(w, big)
				w.(http.Flusher).Flush()
			}
		}, isInvalid(ErrMessageTooLarge)},
		{"huge SSE event", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "text/event-stream")
			for range 64 {
				io.WriteString(w, "data: "+big+"\n")
				w.(http.Flusher).Flush()
			}
		}, isInvalid(ErrMessageTooLarge)},
		{"endless SSE line", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: ")
			for range 1000 {
				if _, err := io.WriteString(w, big); err != nil {
					return
				}
			}
		}, isInvalid(ErrMessageTooLarge)},
		{"SSE without the response", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": hi\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":1}}\n\n")
		}, isInvalid(nil)},
		{"malformed SSE event", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {nope\n\n")
		}, isInvalid(nil)},
		{"proxy error page", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			io.WriteString(w, "<html>bad gateway</html>")
		}, func(err error) bool { var he *HTTPStatusError; return errors.As(err, &he) && he.StatusCode == 502 }},
		{"HTML with 200", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html></html>")
		}, isInvalid(nil)},
		{"202 to a request", "", func(w http.ResponseWriter, in *rpcIn) { w.WriteHeader(202) }, isInvalid(nil)},
		{"result is not an object", "", func(w http.ResponseWriter, in *rpcIn) { writeResult(w, in, `[1,2]`) }, isInvalid(nil)},
		{"malformed error object", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(in.ID)+`,"error":{"code":"x"}}`)
		}, isInvalid(nil)},
		{"deeply nested result", "", func(w http.ResponseWriter, in *rpcIn) {
			writeResult(w, in, `{"content":[],"structuredContent":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+`}`)
		}, func(err error) bool { return err != nil }},
		{"unknown resultType", "", func(w http.ResponseWriter, in *rpcIn) {
			writeResult(w, in, `{"resultType":"task","content":[]}`)
		}, isInvalid(ErrUnknownResultType)},
		{"input_required on tools/list", MethodToolsList, func(w http.ResponseWriter, in *rpcIn) {
			writeResult(w, in, `{"resultType":"input_required","requestState":"x"}`)
		}, isInvalid(ErrInputRequiredNotAllowed)},
		{"unknown input request", "", func(w http.ResponseWriter, in *rpcIn) {
			writeResult(w, in, `{"resultType":"input_required","inputRequests":{"k":{"method":"tasks/get","params":{}}}}`)
		}, isInvalid(ErrUnknownInputRequest)},
		{"input_required with nothing", "", func(w http.ResponseWriter, in *rpcIn) {
			writeResult(w, in, `{"resultType":"input_required"}`)
		}, isInvalid(nil)},
		{"requestState not a string", "", func(w http.ResponseWriter, in *rpcIn) {
			writeResult(w, in, `{"resultType":"input_required","requestState":{"a":1}}`)
		}, isInvalid(nil)},
		{"repeating cursor", MethodToolsList, func(w http.ResponseWriter, in *rpcIn) {
			writeResult(w, in, `{"resultType":"complete","tools":[],"nextCursor":"same"}`)
		}, isInvalid(nil)},
		{"server error", "", func(w http.ResponseWriter, in *rpcIn) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(in.ID)+`,"error":{"code":-32602,"message":"Unknown tool: t","data":{"name":"t"}}}`)
		}, func(err error) bool {
			return ErrorCode(err) == CodeInvalidParams && !errors.Is(err, ErrInvalidResponse)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) { tc.h(w, readRPC(t, r)) },
				&HTTPClientOptions{MaxMessageBytes: small}, fixtureHandlers(nil))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var err error
			if tc.method == MethodToolsList {
				for _, e := range c.Tools(ctx) {
					if e != nil {
						err = e
					}
				}
			} else {
				_, err = c.CallTool(ctx, "t", nil, nil)
			}
			if !tc.check(err) {
				t.Fatalf("got %v (%T)", err, err)
			}
			if ctx.Err() != nil {
				t.Fatal("the call only ended at the deadline")
			}
		})
	}
}

func isInvalid(reason error) func(error) bool {
	return func(err error) bool {
		return errors.Is(err, ErrInvalidResponse) && (reason == nil || errors.Is(err, reason))
	}
}

func TestClientReadsSSEUntilItsResponse(t *testing.T) {
	t.Parallel()
	var got []string
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": keep-alive\n\n")
		io.WriteString(w, "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\r\ndata: \"params\":{\"progressToken\":1,\"progress\":5}}\r\n\r\n")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":424242,\"result\":{}}\n\n")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"elicitation/create\",\"params\":{}}\n\n")
		io.WriteString(w, "id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(in.ID)+",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n")
		io.WriteString(w, "data: this is never read\n\n")
	}, nil, nil)
	res, err := c.CallTool(context.Background(), "t", nil, &CallOptions{OnProgress: func(p *ProgressParams) {
		got = append(got, fmt.Sprint(p.Progress))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if resultText(t, res) != "ok" || strings.Join(got, ",") != "5" {
		t.Fatalf("result %+v, progress %v", res, got)
	}
}

// A result without resultType comes from a server of an earlier
// revision: it is complete, and never retried.
func TestClientAbsentResultTypeIsComplete(t *testing.T) {
	t.Parallel()
	n := 0
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		n++
		writeResult(w, in, `{"content":[{"type":"text","text":"no-result-type"}]}`)
	}, nil, fixtureHandlers(nil))
	res, err := c.CallTool(context.Background(), "t", nil, nil)
	if err != nil || resultText(t, res) != "no-result-type" || n != 1 {
		t.Fatalf("%+v %v after %d requests", res, err, n)
	}
}

func TestClientEndlessSSEStreamEndsAtTheDeadline(t *testing.T) {
	t.Parallel()
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		readRPC(t, r)
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := io.WriteString(w, ": still here\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	}, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.CallTool(ctx, "t", nil, &CallOptions{OnProgress: func(*ProgressParams) {}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

// fakeStream is a hand-written server on the in-memory pair.
type fakeStream struct {
	t     *testing.T
	w     io.Writer
	lines chan map[string]any
}

func newFakeStream(t *testing.T, opts *StreamClientOptions) (*Client, *fakeStream) {
	ce, se := NewInMemoryTransports()
	f := &fakeStream{t: t, w: se, lines: make(chan map[string]any, 64)}
	go func() {
		sc := bufio.NewScanner(se)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Errorf("client wrote a bad line %q", sc.Bytes())
			}
			f.lines <- v
		}
		close(f.lines)
	}()
	c := NewClient(NewStreamClientTransport(ce, opts), nil)
	t.Cleanup(func() { c.Close(); se.Close() })
	return c, f
}

func (f *fakeStream) next() map[string]any {
	select {
	case v := <-f.lines:
		return v
	case <-time.After(5 * time.Second):
		f.t.Fatal("the client sent nothing")
	}
	return nil
}

func (f *fakeStream) send(s string) { io.WriteString(f.w, s+"\n") }

func TestStreamClientSurvivesAMisbehavingServer(t *testing.T) {
	t.Parallel()
	c, f := newFakeStream(t, &StreamClientOptions{MaxMessageBytes: 1024, Logger: slog.New(slog.DiscardHandler)})
	call := func(ctx context.Context) chan error {
		ch := make(chan error, 1)
		go func() { _, err := c.CallTool(ctx, "t", nil, nil); ch <- err }()
		return ch
	}
	wait := func(ch chan error) error {
		select {
		case err := <-ch:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("the call hangs")
		}
		return nil
	}
	// Garbage, an answer to an unknown id and a server→client request are
	// skipped; the call gets its own answer.
	done := call(context.Background())
	id := f.next()["id"]
	f.send(`{garbage`)
	f.send(`{"jsonrpc":"2.0","id":99999,"result":{"content":[]}}`)
	f.send(`{"jsonrpc":"2.0","id":5,"method":"roots/list","params":{}}`)
	f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, id))
	if err := wait(done); err != nil {
		t.Fatal(err)
	}
	// An oversized line fails the call it answers.
	done = call(context.Background())
	id = f.next()["id"]
	f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, strings.Repeat("y", 4096)))
	if err := wait(done); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	// A malformed line whose id can be read fails its call.
	done = call(context.Background())
	id = f.next()["id"]
	f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[}`, id))
	if err := wait(done); !errors.Is(err, ErrInvalidResponse) {
		t.Fatalf("malformed: %v", err)
	}
	// No answer: the deadline ends the call and the server is told. It
	// passes once the request is out (client_test.go: firedDeadline).
	ctx := newFiredDeadline()
	done = call(ctx)
	id = f.next()["id"]
	ctx.fire()
	if err := wait(done); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("silent server: %v", err)
	}
	n := f.next()
	if n["method"] != notificationCancelled || n["params"].(map[string]any)["requestId"] != id {
		t.Fatalf("want notifications/cancelled for %v, got %v", id, n)
	}
	// A late answer to the cancelled call is ignored.
	f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, id))
	// The connection ends: calls in flight fail.
	done = call(context.Background())
	f.next()
	c.t.(*streamClientTransport).closeFn()
	if err := wait(done); !errors.Is(err, ErrTransportClosed) {
		t.Fatalf("closed: %v", err)
	}
	if _, err := c.CallTool(context.Background(), "t", nil, nil); !errors.Is(err, ErrTransportClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// A server that stops reading cannot block the client past its deadline.
func TestStreamClientWriteToAStuckServerEndsAtTheDeadline(t *testing.T) {
	t.Parallel()
	ce, se := NewInMemoryTransports() // nobody reads se
	defer se.Close()
	c := NewClient(NewStreamClientTransport(ce, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := c.Discover(ctx); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write blocked past the deadline")
	}
}
