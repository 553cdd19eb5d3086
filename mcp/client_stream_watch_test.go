package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// leaderOf waits until a call reads its own response on st (the
// stream's leader) and returns its id; 0 when none did within 200 ms.
func leaderOf(st *streamClientTransport) int64 {
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		st.mu.Lock()
		id := st.leader
		st.mu.Unlock()
		if id != 0 {
			return id
		}
	}
	return 0
}

// On a 2025-11-25 session a call made while no other is in flight reads
// its own response, as on a 2026-07-28 one; between calls the idle watch
// reads what the server sends (a notification, a request), and the next
// call reads for itself again.
func TestStreamLegacySessionCallReadsItsOwnResponseAndTheWatchReadsBetweenCalls(t *testing.T) {
	t.Parallel()
	streamKinds(t, func(t *testing.T, kind string) {
		logs := make(chan *LoggingMessageParams, 4)
		c, f := newFakeOver(t, kind, &ClientOptions{Mode: ModeLegacy, OnLog: func(m *LoggingMessageParams) { logs <- m }})
		st, ok := c.t.(*streamClientTransport)
		if !ok {
			t.Fatalf("the client's transport is a %T", c.t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		first := callAsync(c, ctx, "first")
		f.handshake("2025-11-25")
		for round := range 3 {
			// The first call after an idle spell is read by the goroutine
			// the watch started, which stops once it is answered; the
			// calls made back to back after it read their own responses.
			// A loaded machine (-race, make check) can keep the watch's
			// goroutine reading for a few more calls: up to 12 are made
			// until one has read its own response.
			led := 0
			for i := 0; i < 4 || (led == 0 && i < 12); i++ {
				var ch chan callOutcome
				if round == 0 && i == 0 {
					ch = first
				} else {
					ch = callAsync(c, ctx, fmt.Sprint("call", round, i))
				}
				m := f.next()
				if m["method"] != MethodToolsCall {
					t.Fatalf("round %d: want tools/call, got %v", round, m)
				}
				if i > 0 && fmt.Sprint(leaderOf(st)) == fmt.Sprint(m["id"]) {
					led++
				}
				f.send(textResult(m["id"], "ok"))
				if out := waitResult(t, ch); out.err != nil {
					t.Fatalf("round %d: %v", round, out.err)
				}
			}
			if led == 0 {
				t.Fatalf("round %d: no call read its own response", round)
			}
			// Idle: the server speaks, the watch reads.
			time.Sleep(time.Duration(round) * 5 * time.Millisecond)
			f.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"idle %d"}}`, round))
			if l := waitResult(t, logs); l.Data != fmt.Sprintf("idle %d", round) {
				t.Fatalf("round %d: the notification between calls arrived as %v", round, l.Data)
			}
			f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"ping%d","method":"ping"}`, round))
			if m := f.next(); m["id"] != fmt.Sprint("ping", round) || m["result"] == nil {
				t.Fatalf("round %d: the ping between calls got %v", round, m)
			}
		}
	})
}

// The idle watch does not read while a call does, and stops with the
// transport.
func TestStreamLegacyIdleWatchStopsWithTheTransport(t *testing.T) {
	t.Parallel()
	c, f := newFakeOver(t, "pipe", &ClientOptions{Mode: ModeLegacy})
	st := c.t.(*streamClientTransport)
	done := make(chan error, 1)
	go func() { _, err := c.ListTools(context.Background(), nil); done <- err }()
	f.handshake("2025-11-25")
	l := f.next()
	f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"tools":[]}}`, l["id"]))
	if err := waitResult(t, done); err != nil {
		t.Fatal(err)
	}
	// Within a few ticks the watch has something read between calls.
	testutil.Eventually(t, time.Second, "something to read the idle session", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.reading && st.leader == 0
	})
	c.Close()
	testutil.Eventually(t, time.Second, "the idle watch to be disarmed after Close", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return !st.watching
	})
}

// plainPair is a stream without read deadlines (io.Pipe).
type plainPair struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (p plainPair) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p plainPair) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p plainPair) Close() error                { p.w.Close(); return p.r.Close() }

// On a stream without read deadlines, calls whose context can end are
// read for by one goroutine for the whole session; calls and the
// server's requests between them are served as on any stream.
func TestStreamLegacySessionWithoutReadDeadlines(t *testing.T) {
	t.Parallel()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	f := &fakeStream{t: t, lines: make(chan map[string]any, 64), w: sw}
	go f.read(sr)
	c := NewClient(NewStreamClientTransport(plainPair{cr, cw}, nil), &ClientOptions{Mode: ModeLegacy})
	t.Cleanup(func() { c.Close(); sw.Close(); sr.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := callAsync(c, ctx, "first")
	f.handshake("2025-11-25")
	for i := range 4 {
		ch := first
		if i > 0 {
			ch = callAsync(c, ctx, fmt.Sprint("call", i))
		}
		m := f.next()
		f.send(textResult(m["id"], "ok"))
		if out := waitResult(t, ch); out.err != nil {
			t.Fatalf("call %d: %v", i, out.err)
		}
		time.Sleep(time.Duration(i) * 2 * time.Millisecond)
		f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"ping%d","method":"ping"}`, i))
		if m := f.next(); m["id"] != fmt.Sprint("ping", i) || m["result"] == nil {
			t.Fatalf("the ping after call %d got %v", i, m)
		}
	}
}

// A 2025-11-25 server may write to the client while the client is still
// writing a request the server has not read yet: the client reads it,
// even though the call being written has not begun to read, so that
// neither side waits on the other forever.
func TestStreamLegacyCallBlockedWritingStillReadsTheServer(t *testing.T) {
	t.Parallel()
	cr, sw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close(); sr.Close() })
	big := strings.Repeat("x", 256<<10) // more than a pipe holds
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			in := bufio.NewReaderSize(sr, 64<<10)
			var m map[string]any
			line, err := in.ReadBytes('\n')
			if err != nil || json.Unmarshal(line, &m) != nil || m["method"] != methodInitialize {
				return fmt.Errorf("want initialize, got %q (%v)", line, err)
			}
			fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":%v,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"1"}}}`+"\n", m["id"])
			if line, err = in.ReadBytes('\n'); err != nil || !strings.Contains(string(line), notificationInitialized) {
				return fmt.Errorf("want notifications/initialized, got %q (%v)", line, err)
			}
			// The call's first bytes, then a notification larger than
			// the pipe before reading on.
			head := make([]byte, 64)
			if _, err := io.ReadFull(in, head); err != nil {
				return err
			}
			if _, err := fmt.Fprintf(sw, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%q}}`+"\n", big); err != nil {
				return err
			}
			rest, err := in.ReadBytes('\n')
			if err != nil {
				return err
			}
			if err := json.Unmarshal(append(head, rest...), &m); err != nil {
				return err
			}
			_, err = io.WriteString(sw, textResult(m["id"], "done")+"\n")
			return err
		}()
	}()
	logs := make(chan int, 1)
	c := NewClient(NewStreamClientTransport(filePair{cr, cw}, nil), &ClientOptions{Mode: ModeLegacy,
		OnLog: func(m *LoggingMessageParams) { s, _ := m.Data.(string); logs <- len(s) }})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "big", map[string]any{"text": big}, nil)
	if err != nil {
		t.Fatalf("the call: %v", err)
	}
	if got := res.Content[0].(*TextContent).Text; got != "done" {
		t.Errorf("the call returned %q", got)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if n := waitResult(t, logs); n != len(big) {
		t.Errorf("the notification arrived with %d bytes, want %d", n, len(big))
	}
}
