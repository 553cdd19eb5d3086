package tasks_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// Helpers of the tasks tests: the wire checks and client fixtures of
// package mcp's tests, on the public API.

// withTasks enables the tasks extension on o (tasks.EnableClient).
func withTasks(o *ClientOptions, to *tasks.ClientOptions) *ClientOptions {
	tasks.EnableClient(o, to)
	return o
}

// encodeHeaderValue encodes a header value as the SDK does: as it is
// when plain visible ASCII, else base64 between =?base64? and ?=.
func encodeHeaderValue(v string) string {
	plain := !strings.HasPrefix(v, "=?base64?") && strings.TrimSpace(v) == v
	for i := 0; plain && i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			plain = false
		}
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

type rpcIn struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta           map[string]json.RawMessage `json:"_meta"`
		Name           string                     `json:"name"`
		InputResponses json.RawMessage            `json:"inputResponses"`
		RequestState   *string                    `json:"requestState"`
	} `json:"params"`
	raw []byte
}

func headersFor(t testing.TB, body string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	var m struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
			Name *string        `json:"name"`
			URI  *string        `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(body), &m) != nil {
		return h
	}
	if v, ok := m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string); ok {
		h.Set(HeaderProtocolVersion, v)
	}
	if m.Method != "" {
		h.Set(HeaderMethod, m.Method)
	}
	if m.Params.Name != nil {
		h.Set(HeaderName, encodeHeaderValue(*m.Params.Name))
	} else if m.Params.URI != nil {
		h.Set(HeaderName, encodeHeaderValue(*m.Params.URI))
	}
	return h
}

func metaJSON(caps string) string {
	if caps == "" {
		caps = "{}"
	}
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func result(t testing.TB, v map[string]any) map[string]any {
	t.Helper()
	r, ok := v["result"].(map[string]any)
	if !ok {
		t.Fatalf("expected a result, got %v", v)
	}
	return r
}

func errorCode(t testing.TB, v map[string]any) int {
	t.Helper()
	e, ok := v["error"].(map[string]any)
	if !ok {
		t.Fatalf("expected an error, got %v", v)
	}
	return int(e["code"].(float64))
}

func readRPC(t testing.TB, r *http.Request) *rpcIn {
	var in rpcIn
	b := make([]byte, 0, 512)
	buf := make([]byte, 512)
	for {
		n, err := r.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Errorf("client sent invalid JSON %q: %v", b, err)
	}
	in.raw = b
	return &in
}

func rawHTTPClient(t testing.TB, h http.HandlerFunc, hopts *HTTPClientOptions, opts *ClientOptions) *Client {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c := NewClient(NewHTTPClientTransport(ts.URL+"/mcp", hopts), opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func clientTransports(t *testing.T, s *Server, opts *ClientOptions, fn func(t *testing.T, c *Client)) {
	t.Run("http", func(t *testing.T) { fn(t, httpClient(t, s, nil, opts)) })
	t.Run("memory", func(t *testing.T) { fn(t, memClient(t, s, opts)) })
}

func httpClient(t testing.TB, s *Server, wrap func(http.Handler) http.Handler, opts *ClientOptions) *Client {
	t.Helper()
	var h http.Handler = NewHTTPHandler(s, nil)
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c := NewClient(NewHTTPClientTransport(ts.URL+"/mcp", nil), opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func memClient(t testing.TB, s *Server, opts *ClientOptions) *Client {
	t.Helper()
	ce, se := NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.ServeStream(ctx, se, se, nil); se.Close(); close(done) }()
	c := NewClient(NewStreamClientTransport(ce, nil), opts)
	t.Cleanup(func() { c.Close(); cancel(); <-done })
	return c
}

func writeResult(w http.ResponseWriter, in *rpcIn, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, in.ID, result)
}

func fixtureHandlers(o *ClientOptions) *ClientOptions {
	if o == nil {
		o = &ClientOptions{}
	}
	o.Elicitation = func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
		return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
	}
	//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
	o.Sampling = func(ctx context.Context, r *CreateMessageRequest) (*CreateMessageResult, error) {
		return &CreateMessageResult{Role: RoleAssistant, Model: "m", Content: []Content{&TextContent{Text: "Paris"}}}, nil
	}
	//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
	o.Roots = func(ctx context.Context, r *ListRootsRequest) (*ListRootsResult, error) {
		return &ListRootsResult{Roots: []Root{{URI: "file:///a"}, {URI: "file:///b"}}}, nil
	}
	return o
}

func resultText(t testing.TB, r *CallToolResult) string {
	t.Helper()
	if r == nil || len(r.Content) != 1 {
		t.Fatalf("want one content block, got %+v", r)
	}
	tc, ok := r.Content[0].(*TextContent)
	if !ok {
		t.Fatalf("want text, got %T", r.Content[0])
	}
	if r.IsError {
		t.Fatalf("tool error: %s", tc.Text)
	}
	return tc.Text
}
