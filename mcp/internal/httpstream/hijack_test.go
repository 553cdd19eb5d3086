package httpstream

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A response written on a hijacked connection (mcp's answer to a second
// GET stream) is still a whole HTTP response: the head net/http's
// handler set, the body in chunks, Connection: close.
func TestHijackedResponseWritesAWholeResponse(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Kept", "yes")
		h := Hijack(w, r, nil)
		if h == nil {
			t.Error("an HTTP/1.1 exchange was not hijacked")
			return
		}
		defer h.End()
		h.Header().Set("Content-Type", "application/json")
		h.WriteHeader(http.StatusConflict)
		io.WriteString(h, `{"error":"Conflict: `)
		io.WriteString(h, `taken"}`)
		if err := h.FlushError(); err != nil {
			t.Error(err)
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusConflict || resp.Header.Get("X-Kept") != "yes" || !resp.Close {
		t.Fatalf("%d %v close=%v: %q, %v", resp.StatusCode, resp.Header, resp.Close, body, err)
	}
	if want := `{"error":"Conflict: taken"}`; string(body) != want || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("body %q (want %q), content type %q", body, want, resp.Header.Get("Content-Type"))
	}
}

// Gone is closed, and onGone called, when the client's side of a
// hijacked connection ends; an HTTP/2 (or HTTP/1.0) exchange is not
// hijacked.
func TestHijackedStreamNoticesTheClientLeaving(t *testing.T) {
	t.Parallel()
	gone := make(chan (<-chan struct{}), 1)
	called := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := Hijack(w, r, func() { close(called) })
		if h == nil {
			t.Error("an HTTP/1.1 exchange was not hijacked")
			return
		}
		h.Write([]byte("hello"))
		h.FlushError()
		gone <- h.Gone()
		go func() { <-h.Gone(); h.End() }()
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.EqualFold(strings.Join(resp.TransferEncoding, ","), "chunked") {
		t.Fatalf("%v, %v", resp, err)
	}
	g := <-gone
	select {
	case <-g:
		t.Fatal("gone before the client left")
	default:
	}
	conn.Close()
	for _, c := range []<-chan struct{}{g, called} {
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatal("the client's leaving was not noticed")
		}
	}
}

// A body read is registered from StartRead to EndRead; Shutdown makes
// later reads and writes short. A ResponseWriter without a read deadline
// is not registered.
func TestExchangesCountBodiesBeingRead(t *testing.T) {
	t.Parallel()
	var x Exchanges
	seen := make(chan [2]int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timed := x.StartRead(w, r, time.Minute)
		reading, _ := x.Held()
		io.ReadAll(r.Body)
		if timed {
			x.EndRead(w, true)
		}
		after, _ := x.Held()
		seen <- [2]int{reading, after}
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-seen; got != [2]int{1, 0} {
		t.Fatalf("bodies being read during and after the read: %v", got)
	}
	if x.StartRead(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil), time.Minute) {
		t.Fatal("a ResponseWriter without SetReadDeadline was registered")
	}
	x.Shutdown()
	if d := x.limit(time.Minute); d != closeGrace {
		t.Fatalf("after Shutdown a read gets %v, want %v", d, closeGrace)
	}
}
