package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// filePair is a client's end of two os.Pipe pipes, as a server process's
// stdout and stdin are: its reading side has read deadlines.
type filePair struct{ r, w *os.File }

func (p filePair) Read(b []byte) (int, error)        { return p.r.Read(b) }
func (p filePair) Write(b []byte) (int, error)       { return p.w.Write(b) }
func (p filePair) SetReadDeadline(t time.Time) error { return p.r.SetReadDeadline(t) }
func (p filePair) Close() error                      { return errors.Join(p.w.Close(), p.r.Close()) }

// newFakeOver is a client on a stream whose server side the test plays,
// over os.Pipe ("pipe") or NewInMemoryTransports ("memory"); both let a
// call read its own response.
func newFakeOver(t *testing.T, kind string, opts *ClientOptions) (*Client, *fakeStream) {
	t.Helper()
	f := &fakeStream{t: t, lines: make(chan map[string]any, 64)}
	var ct ClientTransport
	switch kind {
	case "pipe":
		cr, sw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		sr, cw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		f.w = sw
		go f.read(sr)
		ct = NewStreamClientTransport(filePair{cr, cw}, nil)
		t.Cleanup(func() { sw.Close(); sr.Close() })
	case "memory":
		ce, se := NewInMemoryTransports()
		f.w = se
		go f.read(se)
		ct = NewStreamClientTransport(ce, nil)
		t.Cleanup(func() { se.Close() })
	}
	if opts == nil {
		opts = &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion}
	}
	c := NewClient(ct, opts)
	t.Cleanup(func() { c.Close() })
	return c, f
}

func streamKinds(t *testing.T, f func(t *testing.T, kind string)) {
	for _, kind := range []string{"pipe", "memory"} {
		t.Run(kind, func(t *testing.T) { f(t, kind) })
	}
}

func waitResult[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return")
	}
	var zero T
	return zero
}

type callOutcome struct {
	res *CallToolResult
	err error
}

func callAsync(c *Client, ctx context.Context, name string) chan callOutcome {
	ch := make(chan callOutcome, 1)
	go func() { r, err := c.CallTool(ctx, name, nil, nil); ch <- callOutcome{r, err} }()
	return ch
}

func textResult(id any, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"resultType":"complete","content":[{"type":"text","text":%q}]}}`, id, text)
}

// A call that reads its own response stops when its context ends, even
// in the middle of a line; the next reader goes on with that line, which
// arrives whole.
func TestStreamCallReadingItsResponseStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	streamKinds(t, func(t *testing.T, kind string) {
		logs := make(chan *LoggingMessageParams, 1)
		c, f := newFakeOver(t, kind, &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion,
			OnLog: func(m *LoggingMessageParams) { logs <- m }})
		ctx, cancel := context.WithCancel(context.Background())
		slow := callAsync(c, ctx, "slow")
		if m := f.next(); m["method"] != MethodToolsCall {
			t.Fatalf("want tools/call, got %v", m)
		}
		line := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"half and half"}}` + "\n"
		io.WriteString(f.w, line[:40])
		time.Sleep(20 * time.Millisecond) // most likely read by the call by now; the test holds either way
		cancel()
		if out := waitResult(t, slow); !errors.Is(out.err, context.Canceled) {
			t.Fatalf("the cancelled call returned %v, %v", out.res, out.err)
		}
		if m := f.next(); m["method"] != notificationCancelled {
			t.Fatalf("want notifications/cancelled, got %v", m)
		}
		next := callAsync(c, context.Background(), "echo")
		m := f.next()
		io.WriteString(f.w, line[40:])
		f.send(textResult(m["id"], "after"))
		if out := waitResult(t, next); out.err != nil || out.res.Content[0].(*TextContent).Text != "after" {
			t.Fatalf("the next call got %v, %v", out.res, out.err)
		}
		if l := waitResult(t, logs); l.Data != "half and half" {
			t.Errorf("the split line arrived as %v", l.Data)
		}
	})
}

// Overlapping calls each get their own response, in whichever order the
// server answers: the call reading for itself hands reading over when it
// is answered first.
func TestStreamOverlappingCallsEachGetTheirResponse(t *testing.T) {
	t.Parallel()
	streamKinds(t, func(t *testing.T, kind string) {
		for _, order := range []string{"first answered first", "second answered first"} {
			t.Run(order, func(t *testing.T) {
				c, f := newFakeOver(t, kind, nil)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				a := callAsync(c, ctx, "a")
				ma := f.next()
				b := callAsync(c, ctx, "b")
				mb := f.next()
				first, second := ma, mb
				firstCh, secondCh := a, b
				if order == "second answered first" {
					first, second = mb, ma
					firstCh, secondCh = b, a
				}
				// The first answered call returns before the second's
				// answer is written.
				firstName := first["params"].(map[string]any)["name"].(string)
				f.send(textResult(first["id"], firstName))
				firstOut := waitResult(t, firstCh)
				secondName := second["params"].(map[string]any)["name"].(string)
				f.send(textResult(second["id"], secondName))
				for name, out := range map[string]callOutcome{firstName: firstOut, secondName: waitResult(t, secondCh)} {
					if out.err != nil || out.res.Content[0].(*TextContent).Text != name {
						t.Errorf("call %s got %v, %v", name, out.res, out.err)
					}
				}
				// And a call after them reads for itself again.
				c3 := callAsync(c, ctx, "c")
				f.send(textResult(f.next()["id"], "c"))
				if out := waitResult(t, c3); out.err != nil {
					t.Fatal(out.err)
				}
			})
		}
	})
}

// A 2025-11-25 session on a stream is read between calls: the server may
// send a request at any time, and the client answers it.
func TestStreamLegacySessionIsReadBetweenCalls(t *testing.T) {
	t.Parallel()
	streamKinds(t, func(t *testing.T, kind string) {
		c, f := newFakeOver(t, kind, &ClientOptions{Mode: ModeLegacy})
		done := make(chan error, 1)
		go func() { _, err := c.ListTools(context.Background(), nil); done <- err }()
		f.handshake("2025-11-25")
		l := f.next()
		f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"tools":[]}}`, l["id"]))
		if err := waitResult(t, done); err != nil {
			t.Fatal(err)
		}
		f.send(`{"jsonrpc":"2.0","id":"between","method":"ping"}`)
		if m := f.next(); m["id"] != "between" || m["result"] == nil {
			t.Fatalf("the ping between calls got %v", m)
		}
	})
}

// A stream client's call slots are its own, not the process's: a client
// in a testing/synctest bubble, after calls made outside any bubble, waits
// only on channels made in its bubble, so the bubble's clock advances to
// the call's deadline instead of the call waiting forever.
func TestAStreamClientInASynctestBubbleWaitsOnlyOnItsBubblesChannels(t *testing.T) {
	c, f := newFakeOver(t, "memory", nil)
	var calls []chan callOutcome
	for i := range 8 { // slots made and returned outside any bubble
		calls = append(calls, callAsync(c, context.Background(), fmt.Sprint("t", i)))
	}
	for range calls {
		m := f.next()
		f.send(textResult(m["id"], "done"))
	}
	for _, ch := range calls {
		if out := waitResult(t, ch); out.err != nil {
			t.Fatal(out.err)
		}
	}
	// In the bubble, calls at once: one reads for all, the others wait on
	// their slots.
	const inBubble = 4
	done := make(chan error, inBubble)
	go synctest.Test(t, func(t *testing.T) {
		c := silentPipe(t, &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
		for i := range inBubble {
			go func() {
				_, err := c.CallTool(context.Background(), fmt.Sprint("b", i), nil, nil)
				done <- err
			}()
		}
		synctest.Wait()
		time.Sleep(2 * defaultCallTimeout)
	})
	for range inBubble {
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a call in the bubble: %v, want its default deadline", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call in the bubble never reached its deadline: it waits on a channel made outside the bubble")
		}
	}
}
