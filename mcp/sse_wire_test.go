package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// The SSE wire of both eras and the client's reading of it, now that one
// implementation (package sse) writes and reads every stream.

// The framing is the one both eras always had: 2026-07-28 events are
// "event: message" and one data line; a 2025-11-25 stream starts with a
// priming event (id, retry, empty data) and every event carries its id;
// the head turns proxy buffering off.
func TestSSEFramingOfBothErasIsTheWireFormat(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(sseBenchServer(), &HTTPOptions{KeepAlive: -1})
	modern := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` +
		strings.Replace(metaJSON(""), "{", `{"progressToken":1,`, 1) + `,"name":"progress"}}`
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(modern))
	r.Header = headersFor(t, modern)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	head := func(w *httptest.ResponseRecorder) string {
		return w.Header().Get("Content-Type") + " " + w.Header().Get("Cache-Control") + " " + w.Header().Get("X-Accel-Buffering")
	}
	if got := head(w); got != "text/event-stream no-cache no" {
		t.Errorf("2026-07-28 head: %q", got)
	}
	if !regexp.MustCompile(`^(event: message\ndata: \{[^\n]*\}\n\n){4}$`).MatchString(w.Body.String()) {
		t.Errorf("2026-07-28 stream:\n%s", w.Body)
	}

	init := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(legacyInitLine(`{}`)))
	init.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, init)
	sid := w.Header().Get("Mcp-Session-Id")
	legacy := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":1}}}`
	r = httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(legacy))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Session-Id", sid)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if got := head(w); got != "text/event-stream no-cache no" || w.Header().Get("Mcp-Session-Id") != sid {
		t.Errorf("2025-11-25 head: %q, session %q", got, w.Header().Get("Mcp-Session-Id"))
	}
	want := `^id: 1-0\nretry: 1000\ndata: \n\n` +
		`event: message\nid: 1-1\ndata: \{[^\n]*\}\n\n` +
		`event: message\nid: 1-2\ndata: \{[^\n]*\}\n\n` +
		`event: message\nid: 1-3\ndata: \{[^\n]*\}\n\n` +
		`event: message\nid: 1-4\ndata: \{"jsonrpc":"2.0","id":1,"result"[^\n]*\}\n\n$`
	if !regexp.MustCompile(want).MatchString(w.Body.String()) {
		t.Errorf("2025-11-25 stream:\n%s", w.Body)
	}
}

// The session's replay log drops its oldest events first. A client that
// resumes from an id whose later events are gone would miss them without
// knowing: it gets 404 (the stream cannot be resumed). One that resumes
// from an id whose later events are all kept gets them, then the rest of
// the stream.
func TestLegacyResumeFromAnIDWhoseLaterEventsAreGoneIs404(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	release := make(chan struct{})
	s.AddTool(&Tool{Name: "burst"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ReportProgress(ctx, 0, 200, "before the burst")
		CloseLegacySSEStream(ctx)
		for i := 1; i <= 200; i++ {
			ReportProgress(ctx, float64(i), 200, strings.Repeat("x", 100))
		}
		<-release
		return TextResult("after the burst"), nil
	})
	ts, h := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxEventBytes: 4 << 10}})
	c := newLegacyClient(t, ts.URL, legacyCaps)
	var ids []string
	if v, _ := c.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"burst","_meta":{"progressToken":1}}}`, &ids); v != nil || len(ids) != 2 {
		t.Fatalf("the first connection: %v, event ids %v", v, ids)
	}
	hs := h.legacy.lookup(c.sid)
	testutil.Eventually(t, 10*time.Second, "the burst", func() bool {
		hs.smu.Lock()
		st := hs.streams[1]
		hs.smu.Unlock()
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.seq == 201
	})
	for _, last := range ids { // the priming id, the first event's
		resp := c.get(last)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "no longer kept") {
			t.Errorf("resuming from %s, whose later events are gone: %d %s", last, resp.StatusCode, b)
		}
	}
	resp := c.get("1-200")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resuming from 1-200: %d", resp.StatusCode)
	}
	events := readSSE(resp.Body)
	if m := events.next(t); m["method"] != notificationProgress || m["params"].(map[string]any)["progress"] != float64(200) {
		t.Fatalf("replayed %v", m)
	}
	close(release)
	if m := events.next(t); legacyText(t, m) != "after the burst" {
		t.Fatalf("then %v", m)
	}
}

// A stream started once Server.Close has been called gets the close
// grace from its first write, like the streams open at Close: a client
// that does not read it cannot hold http.Server.Shutdown for the write
// timeout (a minute here).
func TestAStreamStartedAfterCloseIsCutOffWithinTheGrace(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	big := strings.Repeat("x", 64<<10)
	failed := make(chan time.Time, 1)
	s.AddTool(&Tool{Name: "flood"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		for {
			if err := ReportProgress(ctx, 1, 2, big); err != nil {
				failed <- time.Now()
				return nil, err
			}
		}
	})
	h := NewHTTPHandler(s, &HTTPOptions{StreamWriteTimeout: time.Minute, KeepAlive: -1})
	_, addr := loopbackServer(t, h)
	s.Close()
	start := time.Now()
	modern := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":` +
		strings.Replace(metaJSON(""), "{", `{"progressToken":1,`, 1) + `,"name":"flood"}}`
	rawRequest(t, rawConn(t, addr), http.MethodPost, headersFor(t, modern), modern)
	select {
	case at := <-failed:
		if d := at.Sub(start); d > 10*time.Second {
			t.Errorf("the stream nobody reads lasted %v after Close", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a stream started after Close still blocks on a client that does not read")
	}
}

// The client reads events as an EventSource does: an event the stream
// ends in the middle of (no blank line after it) is not dispatched, so a
// response cut off there is no response.
func TestClientIgnoresAnUnterminatedLastSSEEvent(t *testing.T) {
	t.Parallel()
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(in.ID)+",\"result\":{\"content\":[]}}\n")
	}, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.CallTool(ctx, "t", nil, nil)
	if !errors.Is(err, ErrInvalidResponse) || ctx.Err() != nil {
		t.Fatalf("got %v", err)
	}
}

// A GET stream the server cannot resume from the last event id (404:
// the events after it are no longer kept) is opened afresh, without
// Last-Event-ID, and goes on carrying the session's notifications.
func TestClientReopensAGETStreamThatCannotBeResumed(t *testing.T) {
	t.Parallel()
	var refused, fresh atomic.Int32
	logged := make(chan *LoggingMessageParams, 1)
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			if r.Header.Get("Last-Event-ID") != "" {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Expired Last-Event-ID"}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			if fresh.Add(1) == 1 {
				io.WriteString(w, "id: g-1\nretry: 10\ndata: \n\n") // then the stream ends
				return
			}
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"after\"}}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		case http.MethodDelete:
			return
		}
		in := readRPC(t, r)
		if in.Method == methodInitialize {
			w.Header().Set("Mcp-Session-Id", "g")
			writeResult(w, in, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"g","version":"1"}}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}, nil, legacyHandlers(&ClientOptions{Mode: ModeLegacy, Logger: slog.New(slog.DiscardHandler), OnLog: func(m *LoggingMessageParams) {
		select {
		case logged <- m:
		default:
		}
	}}))
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-logged:
		if m.Data != "after" && fmt.Sprint(m.Data) != "after" {
			t.Fatalf("logged %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing came on the GET stream (%d refused resumptions, %d fresh streams)", refused.Load(), fresh.Load())
	}
	if refused.Load() != 1 || fresh.Load() != 2 {
		t.Errorf("%d refused resumptions, %d fresh streams; want 1 and 2", refused.Load(), fresh.Load())
	}
}
