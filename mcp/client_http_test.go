package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// headerLog records the headers of every request a handler sees.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Clone())
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) last() http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[len(l.seen)-1]
}

func TestClientSendsStandardHeaders(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	var log headerLog
	c := httpClient(t, f.s, log.wrap, fixtureHandlers(nil))
	ctx := context.Background()
	check := func(method, name string) {
		t.Helper()
		h := log.last()
		for k, want := range map[string]string{
			"MCP-Protocol-Version": LatestProtocolVersion,
			"Mcp-Method":           method,
			"Content-Type":         "application/json",
			"Accept":               "application/json, text/event-stream",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("%s: header %s = %q, want %q", method, k, got, want)
			}
		}
		if got := h.Get("Mcp-Name"); got != name {
			t.Errorf("%s: Mcp-Name = %q, want %q", method, got, name)
		}
	}
	if _, err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	check(MethodDiscover, "")
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	check(MethodToolsList, "")
	if _, err := c.CallTool(ctx, "three_rounds", map[string]string{"nonce": "h"}, nil); err != nil {
		t.Fatal(err)
	}
	check(MethodToolsCall, "three_rounds") // also on the retries
	if _, err := c.GetPrompt(ctx, "asking_prompt", map[string]string{"topic": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	check(MethodPromptsGet, "asking_prompt")
	// A URI that is not plain ASCII goes base64-encoded.
	uri := "test://ünï code "
	f.s.AddResource(&Resource{URI: uri, Name: "odd"}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "odd"}}}, nil
	})
	if _, err := c.ReadResource(ctx, uri, nil); err != nil {
		t.Fatal(err)
	}
	check(MethodResourcesRead, encodeHeaderValue(uri))
	if !strings.HasPrefix(log.last().Get("Mcp-Name"), "=?base64?") {
		t.Errorf("Mcp-Name %q is not base64", log.last().Get("Mcp-Name"))
	}
}

func TestClientMirrorsXMcpHeaderArguments(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	var log headerLog
	c := httpClient(t, f.s, log.wrap, nil)
	ctx := context.Background()
	// Before tools/list the client does not know the annotations: the
	// server rejects the call with -32020, the client re-reads tools/list
	// and retries once, successfully.
	n := len(log.seen)
	if _, err := c.CallTool(ctx, "region", map[string]any{"region": "eu-west-1"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := len(log.seen) - n; got < 3 {
		t.Errorf("want call, tools/list pages, call; saw %d requests", got)
	}
	if got := log.last().Get("Mcp-Param-Region"); got != "eu-west-1" {
		t.Errorf("Mcp-Param-Region after refresh = %q", got)
	}
	cases := []struct {
		args string
		want map[string]string // header -> value; "" means absent
	}{
		{`{"region":"us-west1","count":42,"dry":false}`, map[string]string{"Region": "us-west1", "Count": "42", "Dry": "false"}},
		{`{"region":" padded ","count":1e3,"dry":null}`, map[string]string{"Region": "=?base64?IHBhZGRlZCA=?=", "Count": "1000", "Dry": ""}},
		{`{"region":"Hello, 世界","opts":{"zone":"b"}}`, map[string]string{"Region": encodeHeaderValue("Hello, 世界"), "Zone": "b", "Count": ""}},
		{`{}`, map[string]string{"Region": "", "Count": "", "Dry": "", "Zone": ""}},
	}
	for _, tc := range cases {
		res, err := c.CallTool(ctx, "region", json.RawMessage(tc.args), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if res.IsError {
			t.Fatalf("%s: %+v", tc.args, res)
		}
		h := log.last()
		for name, want := range tc.want {
			vs := h.Values(headerParamPrefix + name)
			if want == "" && len(vs) != 0 || want != "" && (len(vs) != 1 || vs[0] != want) {
				t.Errorf("%s: Mcp-Param-%s = %q, want %q", tc.args, name, vs, want)
			}
		}
	}
}

// A tool whose x-mcp-header annotations are invalid is dropped from the
// client's view (with a warning) and not called; valid tools stay.
func TestClientDropsToolsWithInvalidHeaderAnnotations(t *testing.T) {
	t.Parallel()
	var called atomic.Int32
	var logs bytes.Buffer
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		switch in.Method {
		case MethodToolsList:
			writeResult(w, in, `{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[
				{"name":"valid_tool","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},
				{"name":"number_header","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}},
				{"name":"dup_header","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}},
				{"name":"space_header","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"My Region"}}}},
				{"name":"ref_tool","inputSchema":{"type":"object","properties":{"p":{"$ref":"http://127.0.0.1:1/never"}}}}]}`)
		default:
			called.Add(1)
			writeResult(w, in, `{"resultType":"complete","content":[]}`)
		}
	}, nil, &ClientOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	page, err := c.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range page.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "valid_tool,ref_tool" {
		t.Fatalf("kept %v", names)
	}
	for _, dropped := range []string{"number_header", "dup_header", "space_header"} {
		if !strings.Contains(logs.String(), "level=WARN msg=\"mcp: client: dropping a tool with invalid x-mcp-header annotations\" tool="+dropped) {
			t.Errorf("no warning for %s in:\n%s", dropped, logs.String())
		}
	}
	if _, err := c.CallTool(context.Background(), "dup_header", nil, nil); !errors.Is(err, errInvalidTool) {
		t.Fatalf("calling a dropped tool: %v", err)
	}
	if called.Load() != 0 {
		t.Fatal("the dropped tool was called")
	}
}

// Every request carries the _meta envelope; capabilities follow the
// registered handlers; progressToken only when progress is asked for.
func TestClientRequestMeta(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var metas []map[string]json.RawMessage
	h := func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		mu.Lock()
		metas = append(metas, in.Params.Meta)
		mu.Unlock()
		writeResult(w, in, `{"resultType":"complete","content":[]}`)
	}
	last := func() map[string]json.RawMessage { mu.Lock(); defer mu.Unlock(); return metas[len(metas)-1] }
	c := rawHTTPClient(t, h, nil, &ClientOptions{Info: Implementation{Name: "me", Version: "9"}})
	c.CallTool(context.Background(), "x", nil, nil)
	m := last()
	if string(m[MetaClientCapabilities]) != `{}` || string(m[metaProtocolVersion]) != `"2026-07-28"` || string(m[metaClientInfo]) != `{"name":"me","version":"9"}` {
		t.Errorf("meta %s", m)
	}
	if _, ok := m["progressToken"]; ok {
		t.Error("progressToken without a progress callback")
	}
	c = rawHTTPClient(t, h, nil, fixtureHandlers(&ClientOptions{SamplingTools: true}))
	c.CallTool(context.Background(), "x", nil, &CallOptions{OnProgress: func(*ProgressParams) {}})
	m = last()
	if got := string(m[MetaClientCapabilities]); got != `{"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}},"roots":{}}` {
		t.Errorf("capabilities %s", got)
	}
	if _, ok := m["progressToken"]; !ok {
		t.Error("no progressToken with a progress callback")
	}
}

func TestClientRetriesWithASupportedVersion(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	var versions []string
	var mu sync.Mutex
	reject := func(supported string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			in := readRPC(t, r)
			mu.Lock()
			versions = append(versions, r.Header.Get(HeaderProtocolVersion))
			mu.Unlock()
			if n.Add(1) == 1 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(400)
				w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(in.ID) + `,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":` + supported + `,"requested":"x"}}}`))
				return
			}
			writeResult(w, in, `{"resultType":"complete","tools":[]}`)
		}
	}
	c := rawHTTPClient(t, reject(`["2026-07-28"]`), nil, nil)
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 || versions[1] != LatestProtocolVersion {
		t.Fatalf("versions sent %v", versions)
	}
	n.Store(0)
	c = rawHTTPClient(t, reject(`["2099-01-01","2025-11-25"]`), nil, &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	_, err := c.ListTools(context.Background(), nil)
	var uv *UnsupportedVersionError
	if !errors.As(err, &uv) || !errors.As(err, new(*UnsupportedVersionError)) || len(uv.Supported) != 2 || ErrorCode(err) != CodeUnsupportedProtocolVersion {
		t.Fatalf("got %v", err)
	}
}
