package sse

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// What the Writer writes, the Reader reads: over a real HTTP connection
// (chunked transfer, one flush per event), every kind of event comes
// back with its fields, line breaks in data becoming "\n".
func TestWhatTheWriterWritesTheReaderReadsOverHTTP(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789"), 10_000)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := StartStream(rw, http.Header{"Mcp-Session-Id": {"s"}}, 10*time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Release()
		for _, err := range []error{
			w.WritePrime(EventID{1, 0}, 1500*time.Millisecond),
			w.KeepAlive(),
			w.WriteEvent(Event{Name: "message", Data: []byte(`{"jsonrpc":"2.0","method":"m"}`)}),
			w.WriteEntries("message", Entry{EventID{1, 1}, []byte("one")}, Entry{EventID{1, 2}, []byte("two")}),
			w.WriteEvent(Event{ID: "custom", Name: "other", Retry: 3 * time.Second, Data: []byte("a\r\nb\rc\nd")}),
			w.WriteComment("between"),
			w.WriteEvent(Event{Data: big}),
			w.WriteEvent(Event{Data: []byte(" leading space\n")}),
		} {
			if err != nil {
				t.Error(err)
			}
		}
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Mcp-Session-Id") != "s" {
		t.Error("extra header lost")
	}
	r := NewReader(resp.Body, 1<<20, 0)
	got, err := readEvents(t, r)
	if err != io.EOF {
		t.Fatalf("%v after %d events", err, len(got))
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	want := []Event{
		{ID: "1-0", Name: "message", Data: []byte{}, Retry: ms(1500)},
		{ID: "1-0", Name: "message", Data: []byte(`{"jsonrpc":"2.0","method":"m"}`), Retry: ms(1500)},
		{ID: "1-1", Name: "message", Data: []byte("one"), Retry: ms(1500)},
		{ID: "1-2", Name: "message", Data: []byte("two"), Retry: ms(1500)},
		{ID: "custom", Name: "other", Data: []byte("a\nb\nc\nd"), Retry: ms(3000)},
		{ID: "custom", Name: "message", Data: big, Retry: ms(3000)},
		{ID: "custom", Name: "message", Data: []byte(" leading space\n"), Retry: ms(3000)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Name != w.Name || !bytes.Equal(g.Data, w.Data) || g.Retry != w.Retry {
			if len(g.Data) > 64 {
				g.Data = g.Data[:64]
			}
			t.Errorf("event %d: %+v\nwant %+v", i, g, w)
		}
	}
	if r.LastEventID() != "custom" {
		t.Errorf("LastEventID %q", r.LastEventID())
	}
}
