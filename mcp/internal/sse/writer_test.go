package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a ResponseWriter that records, in order, every deadline
// set (as the time from base), write and flush.
type recorder struct {
	base     time.Time
	header   http.Header
	status   int
	out      bytes.Buffer
	calls    []string
	dlErr    error
	writeErr error
	onWrite  func()
}

func newRecorder() *recorder { return &recorder{base: time.Now(), header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.calls = append(r.calls, fmt.Sprintf("status %d", code))
}
func (r *recorder) Write(p []byte) (int, error) {
	r.calls = append(r.calls, "write")
	if r.onWrite != nil {
		r.onWrite()
	}
	if r.writeErr != nil {
		return 0, r.writeErr
	}
	return r.out.Write(p)
}
func (r *recorder) SetWriteDeadline(t time.Time) error {
	if t.Equal(aLongTimeAgo) {
		r.calls = append(r.calls, "deadline past")
	} else if t.IsZero() {
		r.calls = append(r.calls, "no deadline")
	} else {
		r.calls = append(r.calls, "deadline "+t.Sub(r.base).String())
	}
	return r.dlErr
}
func (r *recorder) FlushError() error {
	r.calls = append(r.calls, "flush")
	return nil
}

func (r *recorder) takeCalls() string {
	s := strings.Join(r.calls, ", ")
	r.calls = nil
	return s
}

// wrapped is middleware's ResponseWriter: it offers only Unwrap.
type wrapped struct{ http.ResponseWriter }

func (w wrapped) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func TestWriterSetsTheWriteDeadlineBeforeEachEvent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		w := NewWriter(rec, 5*time.Second)
		if err := w.Start(nil); err != nil {
			t.Fatal(err)
		}
		if got, want := rec.takeCalls(), "deadline 5s, status 200, flush, no deadline"; got != want {
			t.Errorf("Start: %s, want %s", got, want)
		}
		time.Sleep(time.Second)
		w.WriteEvent(Event{Name: "message", Data: []byte("{}")})
		time.Sleep(time.Second)
		w.WritePrime(EventID{1, 0}, time.Second)
		time.Sleep(time.Second)
		w.KeepAlive()
		if got, want := rec.takeCalls(), "deadline 6s, write, flush, no deadline, deadline 7s, write, flush, no deadline, deadline 8s, write, flush, no deadline"; got != want {
			t.Errorf("events: %s\nwant %s", got, want)
		}
		w.WriteEntries("message", Entry{EventID{1, 1}, []byte("a")}, Entry{EventID{1, 2}, []byte("b")})
		if got, want := rec.takeCalls(), "deadline 8s, write, deadline 8s, write, flush, no deadline"; got != want {
			t.Errorf("entries: %s\nwant %s", got, want)
		}
		if err := w.Arm(); err != nil {
			t.Fatal(err)
		}
		if got := rec.takeCalls(); got != "deadline 8s" {
			t.Errorf("Arm: %s", got)
		}
	})
}

func TestWriterFindsTheDeadlineAndFlushThroughUnwrap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		w, err := StartStream(wrapped{wrapped{rec}}, nil, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteEvent(Event{Data: []byte("x")})
		if got, want := rec.takeCalls(), "deadline 1s, status 200, flush, no deadline, deadline 1s, write, flush, no deadline"; got != want {
			t.Errorf("%s\nwant %s", got, want)
		}
	})
}

func TestWriterWritesWithoutADeadlineWhenTheResponseHasNone(t *testing.T) {
	t.Parallel()
	rr := httptest.NewRecorder()
	w, err := StartStream(rr, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEvent(Event{Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if !rr.Flushed || rr.Body.String() != "data: x\n\n" {
		t.Errorf("flushed %v, body %q", rr.Flushed, rr.Body.String())
	}
}

func TestWriterStartSendsTheEventStreamHead(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	rec.header.Set("X-Kept", "yes")
	rec.header.Set("Content-Type", "application/json")
	if _, err := StartStream(rec, http.Header{"Mcp-Session-Id": {"s1"}}, 0); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
		"X-Accel-Buffering": "no", "Mcp-Session-Id": "s1", "X-Kept": "yes"} {
		if got := rec.header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if rec.status != http.StatusOK {
		t.Errorf("status %d", rec.status)
	}
}

func TestWriterStartFlushesTheHeadAtOnce(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := StartStream(rw, nil, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		<-release
		w.Release()
	}))
	defer srv.Close()
	defer close(release)
	resp, err := srv.Client().Get(srv.URL) // returns once the head has arrived
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("%d %v", resp.StatusCode, resp.Header)
	}
}

func TestWriterSplitsDataAtEveryLineBreak(t *testing.T) {
	t.Parallel()
	rr := httptest.NewRecorder()
	w, _ := StartStream(rr, nil, 0)
	w.WriteEvent(Event{Data: []byte("a\nb\r\nc\rd\n")})
	w.WriteEvent(Event{Data: []byte("\r\n\r")})
	want := "data: a\ndata: b\ndata: c\ndata: d\ndata: \n\n" + "data: \ndata: \ndata: \n\n"
	if got := rr.Body.String(); got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}

func TestWriterWritesFieldsInTheOrderEventIDRetryData(t *testing.T) {
	t.Parallel()
	rr := httptest.NewRecorder()
	w, _ := StartStream(rr, nil, 0)
	w.WriteEvent(Event{Name: "message", Data: []byte(`{"jsonrpc":"2.0"}`)})
	w.WriteEvent(Event{Name: "n", ID: "i", Retry: 1500 * time.Millisecond, Data: []byte("d")})
	w.WriteEvent(Event{})
	w.WritePrime(EventID{4, 0}, time.Second)
	w.WritePrime(EventID{4, 9}, 0)
	w.WriteEntries("message", Entry{EventID{4, 1}, []byte("{}")})
	w.WriteEntries("", Entry{EventID{0, 2}, []byte("x")})
	w.WriteComment("hi")
	w.KeepAlive()
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n" +
		"event: n\nid: i\nretry: 1500\ndata: d\n\n" +
		"data: \n\n" +
		"id: 4-0\nretry: 1000\ndata: \n\n" +
		"id: 4-9\ndata: \n\n" +
		"event: message\nid: 4-1\ndata: {}\n\n" +
		"id: 0-2\ndata: x\n\n" +
		": hi\n\n" +
		": keep-alive\n\n"
	if got := rr.Body.String(); got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}

func TestWriterRefusesFieldsThatWouldBreakTheFraming(t *testing.T) {
	t.Parallel()
	rr := httptest.NewRecorder()
	w, _ := StartStream(rr, nil, 0)
	for _, e := range []Event{{ID: "a\nb"}, {ID: "a\rb"}, {ID: "a\x00b"}, {Name: "a\nb"}, {Name: "\r"}} {
		if err := w.WriteEvent(e); err != ErrInvalidField {
			t.Errorf("%+v: %v, want ErrInvalidField", e, err)
		}
	}
	if err := w.WriteComment("a\nb"); err != ErrInvalidField {
		t.Errorf("comment: %v", err)
	}
	if err := w.WriteEntries("a\rb", Entry{}); err != ErrInvalidField {
		t.Errorf("entries: %v", err)
	}
	if rr.Body.Len() != 0 {
		t.Errorf("wrote %q", rr.Body.String())
	}
	if err := w.WriteEvent(Event{Data: []byte("ok")}); err != nil {
		t.Errorf("a refused event broke the stream: %v", err)
	}
}

func TestWriterWritesNothingBeforeStart(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	w := NewWriter(rec, time.Second)
	if err := w.WriteEvent(Event{Data: []byte("x")}); err != ErrNotStarted {
		t.Errorf("WriteEvent: %v", err)
	}
	if err := w.KeepAlive(); err != ErrNotStarted {
		t.Errorf("KeepAlive: %v", err)
	}
	if len(rec.calls) != 0 || w.Started() {
		t.Errorf("calls %v, started %v", rec.calls, w.Started())
	}
	if w.Start(nil); !w.Started() {
		t.Error("not started after Start")
	}
	if err := w.Start(nil); err != ErrStarted {
		t.Errorf("Start twice: %v", err)
	}
}

func TestWriterStopsAfterAFailedWrite(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	w, _ := StartStream(rec, nil, time.Second)
	boom := errors.New("broken pipe")
	rec.writeErr = boom
	if err := w.WriteEvent(Event{Data: []byte("x")}); err != boom {
		t.Fatalf("%v", err)
	}
	rec.writeErr = nil
	rec.takeCalls()
	if err := w.WriteEvent(Event{Data: []byte("y")}); err != boom {
		t.Errorf("after a failed write: %v, want the same error", err)
	}
	if err := w.Arm(); err != boom {
		t.Errorf("Arm: %v", err)
	}
	if c := rec.takeCalls(); c != "" {
		t.Errorf("a broken response was touched again: %s", c)
	}
}

func TestWriterDoesNotWriteWhatItCouldNotBound(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	w, _ := StartStream(rec, nil, time.Second)
	rec.dlErr = errors.New("use of closed connection")
	rec.takeCalls()
	if err := w.WriteEvent(Event{Data: []byte("x")}); err != rec.dlErr {
		t.Fatalf("%v", err)
	}
	if c := rec.takeCalls(); strings.Contains(c, "write") {
		t.Errorf("wrote without a deadline: %s", c)
	}
}

func TestWritesAfterAbortReturnErrAborted(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	w, _ := StartStream(rec, nil, time.Second)
	w.Abort()
	w.Abort()
	if got := rec.takeCalls(); !strings.HasSuffix(got, "deadline past") || strings.Count(got, "past") != 1 {
		t.Errorf("Abort: %s", got)
	}
	if err := w.WriteEvent(Event{Data: []byte("x")}); err != ErrAborted {
		t.Errorf("%v", err)
	}
	if c := rec.takeCalls(); c != "" {
		t.Errorf("an aborted stream moved its deadline again, or wrote: %s", c)
	}
}

func TestShortenBoundsTheWriteInProgressAndEveryLaterOne(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		w, _ := StartStream(rec, nil, 10*time.Second)
		rec.takeCalls()
		w.Shorten(time.Minute)
		if c := rec.takeCalls(); c != "" {
			t.Errorf("Shorten of an idle stream set a deadline: %s", c)
		}
		rec.onWrite = func() { // as from another goroutine, while the write blocks
			w.Shorten(time.Minute)     // later than the deadline: left alone
			w.Shorten(time.Second)     // sooner: moved
			w.Shorten(2 * time.Second) // later than the moved one: left alone
		}
		w.WriteEvent(Event{})
		if c, want := rec.takeCalls(), "deadline 10s, write, deadline 1s, flush, no deadline"; c != want {
			t.Errorf("Shorten during a write: %s\nwant %s", c, want)
		}
		rec.onWrite = nil
		time.Sleep(time.Second)
		w.WriteEvent(Event{})
		if c, want := rec.takeCalls(), "deadline 2s, write, flush, no deadline"; c != want {
			t.Errorf("after Shorten: %s, want %s (each write bounded by the grace)", c, want)
		}
		w.Shorten(0)
		if err := w.WriteEvent(Event{}); err != ErrAborted {
			t.Errorf("Shorten(0): %v, want ErrAborted", err)
		}
	})
}

func TestReleaseArmsALastDeadlineForTheEndOfTheResponse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		w, _ := StartStream(rec, nil, 3*time.Second)
		rec.takeCalls()
		time.Sleep(time.Second)
		w.Release()
		w.Release()
		if c := rec.takeCalls(); c != "deadline 4s" {
			t.Errorf("Release: %s, want one deadline 3s from now", c)
		}
	})
}

func TestAbortAndShortenLeaveAReleasedResponseAlone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		w, _ := StartStream(rec, nil, time.Second)
		rec.takeCalls()
		w.Release()
		if c := rec.takeCalls(); c != "deadline 1s" {
			t.Errorf("Release: %s", c)
		}
		w.Abort()
		w.Shorten(time.Millisecond)
		if c := rec.takeCalls(); c != "" {
			t.Errorf("touched after Release: %s", c)
		}
		if err := w.WriteEvent(Event{}); err != ErrReleased {
			t.Errorf("%v", err)
		}
	})
}

func TestWriterWritesAnEventWithoutAllocating(t *testing.T) {
	w, _ := StartStream(&discardRW{h: http.Header{}}, nil, time.Second)
	data := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}`)
	n := testing.AllocsPerRun(1000, func() {
		w.WriteEvent(Event{Name: "message", Data: data})
		w.WriteEntries("message", Entry{EventID{3, 7}, data})
		w.WritePrime(EventID{3, 7}, time.Second)
		w.KeepAlive()
	})
	if n != 0 {
		t.Errorf("%.1f allocations, want 0", n)
	}
}

// discardRW is a ResponseWriter with deadlines and flushing that
// discards what it is given.
type discardRW struct {
	h http.Header
	n int
}

func (d *discardRW) Header() http.Header                 { return d.h }
func (d *discardRW) WriteHeader(int)                     {}
func (d *discardRW) Write(p []byte) (int, error)         { d.n += len(p); return len(p), nil }
func (d *discardRW) SetWriteDeadline(time.Time) error    { return nil }
func (d *discardRW) FlushError() error                   { return nil }
func (d *discardRW) ReadFrom(r io.Reader) (int64, error) { return io.Copy(io.Discard, r) }

func TestBatchFlushesWhatItWroteOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		w := NewWriter(rec, 5*time.Second)
		err := w.Batch(func() error {
			if err := w.Start(nil); err != nil {
				return err
			}
			if err := w.WritePrime(EventID{1, 0}, time.Second); err != nil {
				return err
			}
			return w.WriteEntries("message", Entry{EventID{1, 1}, []byte("a")})
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rec.takeCalls(), "deadline 5s, status 200, deadline 5s, write, deadline 5s, write, flush, no deadline"; got != want {
			t.Errorf("batch: %s\nwant %s", got, want)
		}
		if got, want := rec.out.String(), "id: 1-0\nretry: 1000\ndata: \n\nevent: message\nid: 1-1\ndata: a\n\n"; got != want {
			t.Errorf("body %q\nwant %q", got, want)
		}
		// A batch that wrote nothing flushes nothing; after a batch each
		// write flushes again.
		if err := w.Batch(func() error { return nil }); err != nil || rec.takeCalls() != "" {
			t.Errorf("an empty batch: %v, %s", err, rec.takeCalls())
		}
		w.KeepAlive()
		if got, want := rec.takeCalls(), "deadline 5s, write, flush, no deadline"; got != want {
			t.Errorf("after the batch: %s, want %s", got, want)
		}
		// A failed write ends the batch with its error and no flush.
		rec.writeErr = errors.New("gone")
		if err := w.Batch(func() error { return w.KeepAlive() }); err == nil || strings.Contains(rec.takeCalls(), "flush") {
			t.Errorf("a failed batch: %v", err)
		}
	})
}

// TestBatchLastLeavesTheFlushToTheEndOfTheResponse checks that the last
// batch of a response writes within the deadline but does not flush (net/http
// writes it with the end of the body once the handler returns), and that
// Release then bounds that write.
func TestBatchLastLeavesTheFlushToTheEndOfTheResponse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		w := NewWriter(rec, 5*time.Second)
		if err := w.Start(nil); err != nil {
			t.Fatal(err)
		}
		rec.takeCalls()
		err := w.BatchLast(func() error {
			return w.WriteEntries("message", Entry{EventID{1, 2}, []byte("last")})
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rec.takeCalls(), "deadline 5s, write, no deadline"; got != want {
			t.Errorf("last batch: %s\nwant %s", got, want)
		}
		if got, want := rec.out.String(), "event: message\nid: 1-2\ndata: last\n\n"; got != want {
			t.Errorf("body %q\nwant %q", got, want)
		}
		w.Release()
		if got, want := rec.takeCalls(), "deadline 5s"; got != want {
			t.Errorf("release: %s, want %s", got, want)
		}
		// A failed write ends it with its error.
		rec2 := newRecorder()
		w2 := NewWriter(rec2, 5*time.Second)
		w2.Start(nil)
		rec2.writeErr = errors.New("gone")
		if err := w2.BatchLast(func() error { return w2.KeepAlive() }); err == nil {
			t.Error("a failed last batch reported no error")
		}
	})
}
