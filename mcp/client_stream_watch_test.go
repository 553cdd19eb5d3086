package mcp

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"
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
			led := 0
			for i := range 4 {
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
	reading := false
	for deadline := time.Now().Add(time.Second); !reading && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		st.mu.Lock()
		reading = st.reading && st.leader == 0
		st.mu.Unlock()
	}
	if !reading {
		t.Fatal("nothing reads the idle session")
	}
	c.Close()
	time.Sleep(5 * watchTick)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.watching {
		t.Error("the idle watch is still armed after Close")
	}
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
