package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A stdio call without a deadline ends at ClientOptions.DefaultTimeout
// when the server never answers, as a context deadline would end it
// (context.DeadlineExceeded, notifications/cancelled), and the transport
// goes on: the next call works, and a line the server was writing when
// the bound cut the read arrives whole. Whether the call read its own
// reply (it leads) or waited while another call read (it overlaps one).
func TestStdioCallsWithoutADeadlineEndAtTheDefaultAndTheTransportGoesOn(t *testing.T) {
	t.Parallel()
	const bound = 150 * time.Millisecond
	opts := func(logs chan *LoggingMessageParams) *ClientOptions {
		return &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion, DefaultTimeout: bound,
			OnLog: func(m *LoggingMessageParams) { logs <- m }}
	}
	cancelled := func(t *testing.T, f *fakeStream, ids ...any) {
		t.Helper()
		want := map[string]bool{}
		for _, id := range ids {
			want[string(mustJSON(t, id))] = true
		}
		for range ids {
			m := f.next()
			p, _ := m["params"].(map[string]any)
			if m["method"] != notificationCancelled || !want[string(mustJSON(t, p["requestId"]))] {
				t.Fatalf("want notifications/cancelled for %v, got %v", ids, m)
			}
			delete(want, string(mustJSON(t, p["requestId"])))
		}
	}
	t.Run("leading", func(t *testing.T) {
		t.Parallel()
		logs := make(chan *LoggingMessageParams, 1)
		c, f := newFakeOver(t, "pipe", opts(logs))
		start := time.Now()
		hang := callAsync(c, context.Background(), "hang")
		m := f.next()
		if m["method"] != MethodToolsCall {
			t.Fatalf("want tools/call, got %v", m)
		}
		line := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"half and half"}}` + "\n"
		io.WriteString(f.w, line[:40])
		out := waitResult(t, hang)
		if !errors.Is(out.err, context.DeadlineExceeded) || time.Since(start) < bound {
			t.Fatalf("the unanswered call returned %v, %v after %v, want context.DeadlineExceeded after %v", out.res, out.err, time.Since(start), bound)
		}
		cancelled(t, f, m["id"])
		// The next call has a deadline of its own: on a loaded machine the
		// test's answer may take longer than the bound.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		next := callAsync(c, ctx, "echo")
		m = f.next()
		io.WriteString(f.w, line[40:])
		f.send(textResult(m["id"], "after"))
		if out := waitResult(t, next); out.err != nil || out.res.Content[0].(*TextContent).Text != "after" {
			t.Fatalf("the next call got %v, %v", out.res, out.err)
		}
		if l := waitResult(t, logs); l.Data != "half and half" {
			t.Errorf("the split line arrived as %v", l.Data)
		}
	})
	t.Run("overlapping", func(t *testing.T) {
		t.Parallel()
		c, f := newFakeOver(t, "pipe", opts(make(chan *LoggingMessageParams, 1)))
		start := time.Now()
		a := callAsync(c, context.Background(), "a")
		ma := f.next()
		b := callAsync(c, context.Background(), "b") // a reads: b waits
		mb := f.next()
		for name, ch := range map[string]chan callOutcome{"a": a, "b": b} {
			if out := waitResult(t, ch); !errors.Is(out.err, context.DeadlineExceeded) || time.Since(start) < bound {
				t.Fatalf("unanswered call %s returned %v, %v after %v", name, out.res, out.err, time.Since(start))
			}
		}
		cancelled(t, f, ma["id"], mb["id"])
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // as above
		defer cancel()
		next := callAsync(c, ctx, "echo")
		f.send(textResult(f.next()["id"], "after"))
		if out := waitResult(t, next); out.err != nil || out.res.Content[0].(*TextContent).Text != "after" {
			t.Fatalf("the next call got %v, %v", out.res, out.err)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A stdio write still blocked at a call's default bound (a server that
// stopped reading) closes the transport, as it does at a context's
// deadline: half a line cannot be taken back.
func TestStdioWriteBlockedAtTheDefaultBoundClosesTheTransport(t *testing.T) {
	t.Parallel()
	cr, sw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sr, cw, err := os.Pipe() // nobody reads sr
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close(); sr.Close() })
	const bound = 100 * time.Millisecond
	c := NewClient(NewStreamClientTransport(filePair{cr, cw}, nil),
		&ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion, DefaultTimeout: bound})
	t.Cleanup(func() { c.Close() })
	big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 4<<20)}) // more than a pipe holds
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := c.CallTool(context.Background(), "echo", big, nil); done <- err }()
	if err := waitResult(t, done); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < bound {
		t.Fatalf("the blocked write returned %v after %v, want context.DeadlineExceeded after %v", err, time.Since(start), bound)
	}
	if _, err := c.CallTool(context.Background(), "echo", nil, nil); !errors.Is(err, ErrTransportClosed) {
		t.Fatalf("a call after the blocked write: %v, want ErrTransportClosed", err)
	}
}

// The default bound costs a stdio call nothing: a call without a
// deadline, which the transport bounds itself, allocates no more than
// one with no bound at all (DefaultTimeout negative).
func TestAllocsStdioCallWithTheDefaultBoundCostsNothing(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	measure := func(d time.Duration) float64 {
		cr, sw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		sr, cw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go serveCanned(sr, sw, "", cannedComplete)
		c := NewClient(NewStreamClientTransport(filePair{cr, cw}, nil),
			&ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion, DefaultTimeout: d})
		defer func() { c.Close(); sw.Close(); sr.Close() }()
		var failed atomic.Bool
		n := testing.AllocsPerRun(200, func() {
			if _, err := c.CallTool(context.Background(), "echo", benchArgs, nil); err != nil {
				failed.Store(true)
			}
		})
		if failed.Load() {
			t.Fatal("a call failed")
		}
		return n
	}
	unbounded, bounded := measure(-1), measure(0)
	if bounded > unbounded {
		t.Errorf("one stdio tools/call: %.0f allocations with the default bound, %.0f without", bounded, unbounded)
	}
	if testing.Verbose() {
		t.Logf("one stdio tools/call: %.0f allocations with the default bound, %.0f without", bounded, unbounded)
	}
}
