package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// An HTTP/2 stream is reset once its write deadline passes, whether or
// not anything is being written. So no SSE stream may keep the deadline
// of its last write: a stream that stays idle for longer than
// StreamWriteTimeout (a slow tool between two notifications, a quiet
// GET stream, keep-alives less frequent than the timeout) must live on,
// over a real HTTP/2 server: a 2026-07-28 response stream and a
// 2025-11-25 GET stream.
func TestAnIdleSSEResponseOutlivesTheWriteTimeoutOverHTTP2(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	s := newTestServer(t, nil)
	s.AddTool(&Tool{Name: "pause"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ReportProgress(ctx, 1, 2, "before the pause")
		select {
		case <-time.After(4 * timeout):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return TextResult("after the pause"), nil
	})
	ts := httptest.NewUnstartedServer(NewHTTPHandler(s, &HTTPOptions{StreamWriteTimeout: timeout, KeepAlive: -1}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	hc := ts.Client()
	hc.Timeout = 20 * time.Second

	do := func(method, body string, hdr http.Header) *http.Response {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r, _ := http.NewRequest(method, ts.URL, rd)
		r.Header = hdr
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 {
			t.Fatalf("served over HTTP/%d", resp.ProtoMajor)
		}
		return resp
	}
	// events reads a stream's events with data until it ends.
	events := func(resp *http.Response, n int, between func()) ([]string, error) {
		t.Helper()
		defer resp.Body.Close()
		rd := sse.NewReader(resp.Body, 0, 0)
		var got []string
		for len(got) < n {
			ev, err := rd.Next()
			if err != nil {
				return got, err
			}
			if len(ev.Data) == 0 {
				continue // a priming event
			}
			got = append(got, string(ev.Data))
			if len(got) == 1 && between != nil {
				between()
			}
		}
		return got, nil
	}

	// 2026-07-28: a notification, a pause four times the write timeout,
	// the result.
	modern := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":` +
		strings.Replace(metaJSON(""), "{", `{"progressToken":1,`, 1) + `,"name":"pause"}}`
	got, err := events(do(http.MethodPost, modern, headersFor(t, modern)), 2, nil)
	if err != nil || len(got) != 2 || !strings.Contains(got[1], "after the pause") {
		t.Fatalf("the 2026-07-28 stream: %q, then %v", got, err)
	}

	// 2025-11-25: the session's GET stream, quiet for four times the
	// write timeout, then a list change.
	legacy := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	resp := do(http.MethodPost, legacyInitLine(`{}`), legacy)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	legacy.Set("Mcp-Session-Id", sid)
	legacy.Set("MCP-Protocol-Version", LegacyProtocolVersion)
	resp = do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, legacy)
	resp.Body.Close()
	get := do(http.MethodGet, "", http.Header{"Accept": {"text/event-stream"}, "Mcp-Session-Id": {sid}, "MCP-Protocol-Version": {LegacyProtocolVersion}})
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", get.StatusCode)
	}
	noop := func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil }
	s.AddTool(&Tool{Name: "first"}, noop)
	got, err = events(get, 2, func() {
		time.Sleep(4 * timeout)
		s.AddTool(&Tool{Name: "after-the-pause"}, noop)
	})
	if err != nil || len(got) != 2 || !strings.Contains(got[1], NotificationToolListChanged) {
		t.Fatalf("the 2025-11-25 GET stream: %q, then %v", got, err)
	}
}
