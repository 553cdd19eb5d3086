package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// readEvents reads every event of in (data copied) and the error that
// ended the stream.
func readEvents(t testing.TB, r *Reader) ([]Event, error) {
	t.Helper()
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		ev.Data = bytes.Clone(ev.Data)
		out = append(out, ev)
	}
}

func readString(t testing.TB, in string) []Event {
	t.Helper()
	evs, err := readEvents(t, NewReader(strings.NewReader(in), 0, 0))
	if err != io.EOF {
		t.Fatalf("reading %q: %v, want io.EOF", in, err)
	}
	return evs
}

func datas(evs []Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Data)
	}
	return out
}

func wantDatas(t *testing.T, in string, want ...string) []Event {
	t.Helper()
	evs := readString(t, in)
	got := datas(evs)
	if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		t.Fatalf("reading %q: data %q, want %q", in, got, want)
	}
	return evs
}

func TestReaderStripsOneLeadingSpace(t *testing.T) {
	t.Parallel()
	wantDatas(t, "data:x\n\ndata: x\n\ndata:  x\n\ndata:\tx\n\n", "x", "x", " x", "\tx")
	evs := readString(t, "event:  ping\nid:  7\ndata: d\n\n")
	if evs[0].Name != " ping" || evs[0].ID != " 7" {
		t.Errorf("event %q id %q: only one space may be stripped", evs[0].Name, evs[0].ID)
	}
}

func TestReaderAcceptsLFCRLFAndCRLineEnds(t *testing.T) {
	t.Parallel()
	wantDatas(t, "data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\r\ndata: e\r\n\n", "a", "b", "c", "d", "e")
	// CR then LF is one line end, never two: no blank line here.
	wantDatas(t, "data: a\r\ndata: b\r\n\r\n", "a\nb")
}

func TestReaderDispatchesAtACRWithoutWaitingForMore(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	r := NewReader(pr, 0, 0)
	go pw.Write([]byte("data: a\r\r"))
	done := make(chan Event, 1)
	go func() {
		ev, _ := r.Next()
		done <- ev
	}()
	select {
	case ev := <-done:
		if string(ev.Data) != "a" {
			t.Fatalf("data %q", ev.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an event ended by CR was held back waiting for a possible LF")
	}
	// The LF that may follow a CR still belongs to it.
	go pw.Write([]byte("\ndata: b\n\n"))
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "b" {
		t.Fatalf("next: %q, %v", ev.Data, err)
	}
}

func TestReaderIgnoresComments(t *testing.T) {
	t.Parallel()
	wantDatas(t, ": keep-alive\n\n:\ndata: a\n: in the middle\ndata: b\n\n", "a\nb")
}

func TestReaderTreatsAFieldWithoutColonAsEmptyValue(t *testing.T) {
	t.Parallel()
	evs := wantDatas(t, "data\ndata\n\nevent\ndata: x\n\n", "\n", "x")
	if evs[1].Name != "message" {
		t.Errorf("an empty event field: name %q, want message", evs[1].Name)
	}
}

func TestReaderJoinsDataLinesWithNewline(t *testing.T) {
	t.Parallel()
	wantDatas(t, "data: a\ndata:\ndata: b\n\n", "a\n\nb")
}

func TestReaderDispatchesAnEventOnlyAtABlankLine(t *testing.T) {
	t.Parallel()
	wantDatas(t, "data: a\n\ndata: b\n", "a")
	wantDatas(t, "data: a\n\ndata: b", "a")
	wantDatas(t, "data: a")
}

func TestReaderDoesNotDispatchABlockWithoutData(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("id: 1-0\nretry: 250\nevent: e\n\ndata: x\n\n"), 0, 0)
	ev, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if string(ev.Data) != "x" || ev.Name != "message" {
		t.Errorf("got %q named %q; the block without data must not be dispatched and its event type must not carry over", ev.Data, ev.Name)
	}
	if ev.ID != "1-0" || ev.Retry != 250*time.Millisecond {
		t.Errorf("id %q retry %v: the block without data still sets them", ev.ID, ev.Retry)
	}
}

func TestReaderDispatchesAnEmptyDataLine(t *testing.T) {
	t.Parallel()
	// A priming event: an id and one empty data field.
	evs := wantDatas(t, "id: 3-0\nretry: 1000\ndata: \n\n", "")
	if evs[0].ID != "3-0" || evs[0].Retry != time.Second {
		t.Errorf("prime: %+v", evs[0])
	}
}

func TestReaderKeepsTheLastEventIDAcrossEvents(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 9\n"), 0, 0)
	evs, err := readEvents(t, r)
	if err != io.EOF {
		t.Fatal(err)
	}
	if got := []string{evs[0].ID, evs[1].ID, evs[2].ID}; got[0] != "1" || got[1] != "1" || got[2] != "" {
		t.Errorf("ids %q, want [1 1 \"\"] (an empty id field resets it)", got)
	}
	if r.LastEventID() != "" {
		t.Errorf("LastEventID %q: an id without the blank line after it has not taken effect", r.LastEventID())
	}
	r = NewReader(strings.NewReader("id: 5\n\n"), 0, 0)
	readEvents(t, r)
	if r.LastEventID() != "5" {
		t.Errorf("LastEventID %q: a blank line makes the id take effect even with no event", r.LastEventID())
	}
}

func TestReaderIgnoresAnIDContainingNUL(t *testing.T) {
	t.Parallel()
	evs := readString(t, "id: a\ndata: 1\n\nid: b\x00c\ndata: 2\n\n")
	if evs[1].ID != "a" {
		t.Errorf("id %q, want a", evs[1].ID)
	}
}

func TestReaderIgnoresARetryThatIsNotDigits(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "1.5", "-1", "+1", " 1", "1s", "99999999999999999999"} {
		r := NewReader(strings.NewReader("retry: 40\nretry: "+v+"\ndata: x\n\n"), 0, 0)
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Retry != 40*time.Millisecond {
			t.Errorf("retry %q: %v, want the earlier 40ms", v, ev.Retry)
		}
	}
	r := NewReader(strings.NewReader(""), 0, 0)
	r.Next()
	if _, ok := r.Retry(); ok {
		t.Error("Retry reports a value the stream never set")
	}
	r = NewReader(strings.NewReader("retry: 0\n"), 0, 0)
	r.Next()
	if d, ok := r.Retry(); !ok || d != 0 {
		t.Errorf("retry 0: %v %v, want 0 true (the field takes effect at once)", d, ok)
	}
}

func TestReaderDefaultsTheEventNameToMessage(t *testing.T) {
	t.Parallel()
	evs := readString(t, "data: a\n\nevent: ping\ndata: b\n\ndata: c\n\nevent: message\ndata: d\n\n")
	got := []string{evs[0].Name, evs[1].Name, evs[2].Name, evs[3].Name}
	if strings.Join(got, ",") != "message,ping,message,message" {
		t.Errorf("names %q", got)
	}
}

func TestReaderIgnoresUnknownFields(t *testing.T) {
	t.Parallel()
	wantDatas(t, "foo: bar\nData: no\ndata : no\ndata: yes\nx\n\n", "yes")
}

func TestReaderSkipsOneByteOrderMarkAtTheStart(t *testing.T) {
	t.Parallel()
	wantDatas(t, "\xEF\xBB\xBFdata: a\n\n", "a")
	// Only one, and only at the start: a second is part of a field name.
	wantDatas(t, "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n", "b")
	wantDatas(t, "data: a\n\n\xEF\xBB\xBFdata: b\n\n", "a")
	// A stream that begins like one, and is not.
	wantDatas(t, "\xEF\xBBdata: a\n\ndata: b\n\n", "b")
}

func TestReaderHandlesLinesLongerThanItsBuffer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	in := ": " + long + "\nevent: " + long + "\nid: " + long + "\nretry: 0000000000000000000000000000000000000042\n" +
		"data: " + long + "\ndata: " + long + "\n" + "unknown" + long + ": v\n\n"
	for _, size := range []int{16, 17, 31, 64, 4096} {
		r := newReaderSize(strings.NewReader(in), 0, 0, size)
		evs, err := readEvents(t, r)
		if err != io.EOF || len(evs) != 1 {
			t.Fatalf("buffer %d: %d events, %v", size, len(evs), err)
		}
		ev := evs[0]
		if ev.Name != long || ev.ID != long || string(ev.Data) != long+"\n"+long || ev.Retry != 42*time.Millisecond {
			t.Errorf("buffer %d: %+v", size, ev)
		}
	}
}

// endless is a source that never ends: the same bytes again and again.
type endless struct {
	pattern []byte
	read    int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], e.pattern[(e.read+n)%len(e.pattern):])
	}
	e.read += n
	return n, nil
}

func TestReaderReportsALineLongerThanItsBoundWithoutReadingItAll(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"data: ", ": ", "id: ", "event: ", "junk: ", ""} {
		src := &endless{pattern: []byte("y")}
		r := NewReader(io.MultiReader(strings.NewReader(prefix), src), 1<<20, 1000)
		if _, err := r.Next(); !errors.Is(err, ErrLineTooLong) && !(prefix == "data: " && errors.Is(err, ErrEventTooLarge)) {
			t.Fatalf("%q: %v, want ErrLineTooLong", prefix, err)
		}
		if src.read > 1000+readBufSize {
			t.Errorf("%q: read %d bytes of an endless line bounded to 1000", prefix, src.read)
		}
	}
	if _, err := readEvents(t, NewReader(strings.NewReader("data: "+strings.Repeat("z", 20)+"\n\n"), 100, 10)); err != ErrLineTooLong {
		t.Errorf("a short line past the bound: %v", err)
	}
}

func TestReaderReportsAnEventLargerThanItsBound(t *testing.T) {
	t.Parallel()
	src := &endless{pattern: []byte("data: 0123456789\n")}
	r := NewReader(src, 1000, 0)
	if _, err := r.Next(); err != ErrEventTooLarge {
		t.Fatalf("%v, want ErrEventTooLarge", err)
	}
	if src.read > 1000*2+readBufSize {
		t.Errorf("read %d bytes for an event bounded to 1000 data bytes", src.read)
	}
	// Exactly at the bound passes; the newlines joining lines count.
	if evs, err := readEvents(t, NewReader(strings.NewReader("data: 0123\ndata: 5678\n\n"), 9, 0)); err != io.EOF || len(evs) != 1 {
		t.Errorf("9 bytes of data within a bound of 9: %v", err)
	}
	if _, err := readEvents(t, NewReader(strings.NewReader("data: 0123\ndata: 56789\n\n"), 9, 0)); err != ErrEventTooLarge {
		t.Errorf("10 bytes of data within a bound of 9: %v", err)
	}
}

func TestReaderErrorsAreSticky(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("data: "+strings.Repeat("z", 20)+"\n\ndata: ok\n\n"), 10, 100)
	for range 3 {
		if _, err := r.Next(); err != ErrEventTooLarge {
			t.Fatalf("%v, want ErrEventTooLarge again", err)
		}
	}
	r = NewReader(strings.NewReader(""), 0, 0)
	r.Next()
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the end: %v", err)
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestReaderPassesOnTheSourceError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), failingReader{boom}), 0, 0)
	evs, err := readEvents(t, r)
	if err != boom || len(evs) != 1 {
		t.Fatalf("%d events, %v; want 1 and the source's error", len(evs), err)
	}
	r = NewReader(failingReader{nil}, 0, 0)
	if _, err := r.Next(); err != io.ErrNoProgress {
		t.Fatalf("a source that returns nothing forever: %v", err)
	}
}

func TestReaderReusesNoMemoryOfALargeEvent(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 200<<10)
	r := NewReader(strings.NewReader("data: "+big+"\n\ndata: small\n\n"), 0, 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if cap(r.data) > maxKeptBuffer {
		t.Errorf("the reader keeps %d bytes of a past large event", cap(r.data))
	}
}

func TestReaderReadsAnEventWithoutAllocating(t *testing.T) {
	msg := "event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}` + "\n\n"
	src := &endless{pattern: []byte(msg)}
	r := NewReader(src, 0, 0)
	r.Next()
	n := testing.AllocsPerRun(1000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%.1f allocations per event, want 0", n)
	}
}
