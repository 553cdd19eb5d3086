package sse

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// An HTTP/2 stream is reset when its write deadline passes, whether or
// not a write is in progress; so the Writer leaves no deadline behind
// between writes, and a stream idle for longer than its write timeout
// (keep-alive comments come less often than that) lives on.
func TestAnIdleStreamOutlivesItsWriteTimeoutOverHTTP2(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("served over HTTP/%d", r.ProtoMajor)
		}
		w, err := StartStream(rw, nil, timeout)
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Release()
		w.WriteEvent(Event{Data: []byte("before")})
		time.Sleep(3 * timeout)
		if err := w.WriteEvent(Event{Data: []byte("after")}); err != nil {
			t.Errorf("writing after an idle spell: %v", err)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := readEvents(t, NewReader(resp.Body, 0, 0))
	if err != io.EOF || len(got) != 2 {
		t.Fatalf("%d events, then %v; want both events and the end of the stream", len(got), err)
	}
}
