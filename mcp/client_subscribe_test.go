package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
)

// check2025 validates msg against the 2025-11-25 definition def.
func check2025(t testing.TB, def string, msg []byte) {
	t.Helper()
	if err := wiretest.Validate(t, "2025-11-25", def, msg); err != nil {
		t.Fatalf("%s does not match 2025-11-25 %s: %v", msg, def, err)
	}
}

// exchange is one POST of a session: the request and the messages of
// its answer.
type exchange struct {
	method   string
	request  []byte
	response [][]byte
}

// exchangeLog records the POSTs a handler serves.
type exchangeLog struct {
	mu  sync.Mutex
	all []exchange
}

type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(b []byte) (int, error) { w.buf.Write(b); return w.ResponseWriter.Write(b) }
func (w *teeWriter) Flush()                      { w.ResponseWriter.(http.Flusher).Flush() }

func (l *exchangeLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		tw := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		var m struct {
			Method string `json:"method"`
		}
		json.Unmarshal(b, &m)
		l.mu.Lock()
		l.all = append(l.all, exchange{m.Method, b, wiretest.SplitMessages(w.Header().Get("Content-Type"), tw.buf.Bytes())})
		l.mu.Unlock()
	})
}

func (l *exchangeLog) of(method string) []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []exchange
	for _, e := range l.all {
		if e.method == method {
			out = append(out, e)
		}
	}
	return out
}

// On a 2025-11-25 session over loopback HTTP, Subscribe and Unsubscribe
// send resources/(un)subscribe, the server's resources/updated reach
// OnSessionNotification from the session's GET stream (and only for a
// subscribed resource), and Ping gets its empty answer; every message
// matches the 2025-11-25 schema.
func TestClientLegacySubscribeUnsubscribePing(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "sub", Version: "1"}, nil)
	for _, uri := range []string{"test://a", "test://b"} {
		s.AddResource(&Resource{URI: uri, Name: uri}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "x"}}}, nil
		})
	}
	notes := make(chan *ListenNotification, 16)
	var log exchangeLog
	c := httpClient(t, s, log.wrap, &ClientOptions{Mode: ModeLegacy, OnSessionNotification: func(n *ListenNotification) { notes <- n }})
	ctx := context.Background()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	next := func() *ListenNotification {
		t.Helper()
		select {
		case n := <-notes:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
		}
		return nil
	}
	for _, uri := range []string{"test://a", "test://b"} {
		if err := c.Subscribe(ctx, uri); err != nil {
			t.Fatalf("Subscribe(%s): %v", uri, err)
		}
	}
	s.ResourceUpdated("test://other") // not subscribed: nothing
	s.ResourceUpdated("test://a")
	n := next()
	if n.Method != NotificationResourceUpdated || n.URI != "test://a" {
		t.Fatalf("got %+v", n)
	}
	note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": n.Method, "params": n.Params})
	check2025(t, "ResourceUpdatedNotification", note)
	if err := c.Unsubscribe(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	s.ResourceUpdated("test://a") // unsubscribed: nothing
	s.ResourceUpdated("test://b")
	if n := next(); n.URI != "test://b" {
		t.Fatalf("after Unsubscribe(test://a) got %+v", n)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	for method, defs := range map[string][2]string{
		methodSubscribe:   {"SubscribeRequest", "JSONRPCResultResponse"},
		methodUnsubscribe: {"UnsubscribeRequest", "JSONRPCResultResponse"},
		methodPing:        {"PingRequest", "JSONRPCResultResponse"},
	} {
		ex := log.of(method)
		if len(ex) == 0 {
			t.Fatalf("no %s was sent", method)
		}
		for _, e := range ex {
			check2025(t, defs[0], e.request)
			if len(e.response) != 1 {
				t.Fatalf("%s answered %q", method, e.response)
			}
			check2025(t, defs[1], e.response[0])
			if !bytes.Contains(e.response[0], []byte(`"result":{}`)) {
				t.Fatalf("%s answered %s", method, e.response[0])
			}
		}
	}
	if got := string(log.of(methodSubscribe)[0].request); !strings.Contains(got, `"params":{"uri":"test://a"}`) {
		t.Fatalf("subscribe request %s", got)
	}
}

// A 2025 server that refuses a subscription fails Subscribe with its
// error; a list change reaches OnSessionNotification too.
func TestClientLegacySubscribeErrorAndListChange(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "sub", Version: "1"}, nil)
	notes := make(chan *ListenNotification, 16)
	c := httpClient(t, s, nil, &ClientOptions{Mode: ModeLegacy, OnSessionNotification: func(n *ListenNotification) { notes <- n }})
	ctx := context.Background()
	err := c.Subscribe(ctx, strings.Repeat("x", 1<<16))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidParams {
		t.Fatalf("Subscribe of an oversized uri: %v", err)
	}
	s.AddTool(&Tool{Name: "late"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	select {
	case n := <-notes:
		if n.Method != NotificationToolListChanged {
			t.Fatalf("got %+v", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed")
	}
}

// On 2026-07-28, which removed them, Subscribe, Unsubscribe and Ping
// fail at once with errors.ErrUnsupported naming what to use instead,
// and send nothing.
func TestClientModernSubscribeAndPingAreUnsupported(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "m", Version: "1"}, nil)
	var log exchangeLog
	c := httpClient(t, s, log.wrap, nil)
	ctx := context.Background()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	sent := len(log.all)
	for name, call := range map[string]func() error{
		"subscriptions/listen": func() error { return c.Subscribe(ctx, "test://a") },
		"Client.Listen":        func() error { return c.Unsubscribe(ctx, "test://a") },
		"Client.Discover":      func() error { return c.Ping(ctx) },
	} {
		err := call()
		if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), LatestProtocolVersion) {
			t.Errorf("got %v, want ErrUnsupported naming %s", err, name)
		}
	}
	if len(log.all) != sent {
		t.Fatalf("%d requests sent for removed methods", len(log.all)-sent)
	}
}

// On a 2025 byte stream (the in-memory pair) Ping is answered, and a
// subscription's updates, which name no request there, reach
// OnSessionNotification.
func TestClientLegacyPingAndSubscribeOnAByteStream(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "p", Version: "1"}, nil)
	s.AddResource(&Resource{URI: "test://a", Name: "a"}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "x"}}}, nil
	})
	notes := make(chan *ListenNotification, 4)
	c := memClient(t, s, &ClientOptions{Mode: ModeLegacy, OnSessionNotification: func(n *ListenNotification) { notes <- n }})
	ctx := context.Background()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if c.ProtocolVersion() != LegacyProtocolVersion {
		t.Fatalf("version %q", c.ProtocolVersion())
	}
	if err := c.Subscribe(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	s.ResourceUpdated("test://a")
	select {
	case n := <-notes:
		if n.Method != NotificationResourceUpdated || n.URI != "test://a" {
			t.Fatalf("got %+v", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/updated on the byte stream")
	}
}
