package sse

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// A client that does not read, against a real http.Server on loopback:
// the server's writes block once the socket buffers are full, and only a
// deadline can end them.

// smallBufferListener gives every accepted connection a small send
// buffer, so that writes to a client that does not read block early.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// stalledStream starts a server whose handler writes 64 KiB events with
// timeout per write until a write fails, and a raw TCP client that asks
// for the stream and never reads. It returns the handler's Writer once
// its writes are blocked, and the channel on which the handler reports
// the error that ended it.
func stalledStream(t *testing.T, timeout time.Duration) (*Writer, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	writers := make(chan *Writer, 1)
	ended := make(chan error, 1)
	var written atomic.Int64
	big := bytes.Repeat([]byte("x"), 64<<10)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := StartStream(rw, nil, timeout)
		if err != nil {
			ended <- err
			return
		}
		defer w.Release()
		writers <- w
		for {
			if err := w.WriteEvent(Event{Name: "message", Data: big}); err != nil {
				ended <- err
				return
			}
			written.Add(1)
		}
	})}
	go srv.Serve(smallBufferListener{ln})
	t.Cleanup(func() { srv.Close() })

	c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte("GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	var w *Writer
	select {
	case w = <-writers:
	case err := <-ended:
		t.Fatalf("the stream did not start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not start")
	}
	// Blocked: no event has gone through for a while (unblocked, the
	// handler writes thousands a second).
	deadline := time.Now().Add(20 * time.Second)
	for last := int64(-1); ; {
		time.Sleep(200 * time.Millisecond)
		n := written.Load()
		if n == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a client that does not read never blocked")
		}
		last = n
	}
	if timeout >= 10*time.Second {
		select {
		case err := <-ended:
			t.Fatalf("the write ended by itself: %v", err)
		default:
		}
	}
	return w, ended
}

func TestAbortUnblocksAWriteToAClientThatDoesNotRead(t *testing.T) {
	t.Parallel()
	w, ended := stalledStream(t, time.Minute)
	start := time.Now()
	w.Abort()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Abort waited %v for the blocked write", d)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, ErrAborted) {
			t.Errorf("the write ended with %v, want ErrAborted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Abort did not unblock a write to a client that does not read (timeout 1 minute)")
	}
}

func TestShortenCutsABlockedWriteToTheGrace(t *testing.T) {
	t.Parallel()
	w, ended := stalledStream(t, time.Minute)
	w.Shorten(300 * time.Millisecond)
	select {
	case err := <-ended:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("the write ended with %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shorten did not bound a blocked write (timeout 1 minute, grace 300ms)")
	}
}

func TestTheWriteTimeoutEndsAWriteToAClientThatDoesNotRead(t *testing.T) {
	t.Parallel()
	_, ended := stalledStream(t, time.Second)
	select {
	case err := <-ended:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("the write ended with %v, want a timeout", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a write to a client that does not read outlived its timeout")
	}
}
