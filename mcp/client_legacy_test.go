package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// The legacy era of the client (2025-11-25): the probe of ModeAuto, the
// handshake, the session, the server's live requests answered by the
// same handlers, resumption. Against the dual-era Server and against
// hand-written servers that show the wire.

// newAskingServer is a dual-era server whose tools ask in straight-line
// code: on a legacy session every question is a live request.
func newAskingServer(t testing.TB) *Server {
	s := NewServer(Implementation{Name: "asking", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "ask_all"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		name, err1 := Elicit[struct {
			Name string `json:"name"`
		}](ctx, "Your name?")
		capital, err2 := Sample(ctx, &CreateMessageRequest{MaxTokens: 5, Messages: []SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: "Capital of France?"}}}}})
		roots, err3 := ListRoots(ctx)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		return TextResult(fmt.Sprintf("Hello %s, capital %s, %d roots", name.Content.Name, capital.Content[0].(*TextContent).Text, len(roots))), nil
	})
	s.AddTool(&Tool{Name: "url_consent"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		action, err := ElicitURL(ctx, "Sign in", "https://example.com/login", WithLegacyElicitationID("flow-7"))
		if err != nil {
			return nil, err
		}
		return TextResult("url: " + string(action)), nil
	})
	s.AddTool(&Tool{Name: "defaults"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		res, err := ElicitForm(ctx, "Profile", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},"score":{"type":"number","default":95.5},"verified":{"type":"boolean","default":true},"status":{"type":"string","enum":["active","inactive"],"default":"active"},"nick":{"type":"string"}}}`))
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res.Content)
		return TextResult(string(b)), nil
	})
	s.AddTool(&Tool{Name: "reconnect"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ReportProgress(ctx, 1, 2, "before the disconnection")
		closed := CloseLegacySSEStream(ctx)
		name, err := Elicit[struct {
			Name string `json:"name"`
		}](ctx, "Your name, after the reconnection?")
		if err != nil {
			return nil, err
		}
		return TextResult(fmt.Sprintf("closed %v, name %s", closed, name.Content.Name)), nil
	})
	s.AddTool(&Tool{Name: "progress"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		for i := range 3 {
			ReportProgress(ctx, float64(i), 2, "step")
		}
		logMessage(ctx, LevelWarning, "asking", "a warning")
		return TextResult("done"), nil
	})
	return s
}

// wireLog records what a handler receives.
type wireLog struct {
	mu   sync.Mutex
	reqs []wireSeen
}

type wireSeen struct {
	method, httpMethod, session, version, mcpMethod, lastEventID string
	body                                                         map[string]any
}

func (l *wireLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		var m map[string]any
		json.Unmarshal(b, &m)
		method, _ := m["method"].(string)
		l.mu.Lock()
		l.reqs = append(l.reqs, wireSeen{method: method, httpMethod: r.Method, session: r.Header.Get("Mcp-Session-Id"),
			version: r.Header.Get(HeaderProtocolVersion), mcpMethod: r.Header.Get(HeaderMethod), lastEventID: r.Header.Get("Last-Event-ID"), body: m})
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *wireLog) all() []wireSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

func legacyHandlers(o *ClientOptions) *ClientOptions {
	o = fixtureHandlers(o)
	return o
}

// Over HTTP, ModeAuto tries the modern era and stays there with a
// modern server; ModeLegacy opens a session on the same endpoint.
func TestClientAutoStaysModernWithAModernServer(t *testing.T) {
	t.Parallel()
	s := newAskingServer(t)
	c := httpClient(t, s, nil, nil)
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != LatestProtocolVersion {
		t.Fatalf("version %q", v)
	}
}

func TestClientLegacyHTTPSessionWire(t *testing.T) {
	t.Parallel()
	s := newAskingServer(t)
	var log wireLog
	c := httpClient(t, s, log.wrap, legacyHandlers(&ClientOptions{Mode: ModeLegacy}))
	ctx := context.Background()
	res, err := c.CallTool(ctx, "ask_all", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "Hello Ada, capital Paris, 2 roots" {
		t.Fatalf("got %q", got)
	}
	if c.ProtocolVersion() != LegacyProtocolVersion {
		t.Fatalf("version %q", c.ProtocolVersion())
	}
	c.Close()
	seen := log.all()
	// initialize, initialized, tools/call, 3 answers, DELETE.
	init := seen[0]
	if init.method != methodInitialize || init.session != "" {
		t.Fatalf("first message %+v", init)
	}
	params := init.body["params"].(map[string]any)
	if params["protocolVersion"] != LegacyProtocolVersion {
		t.Fatalf("initialize params %v", params)
	}
	caps, _ := json.Marshal(params["capabilities"])
	if string(caps) != `{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"sampling":{}}` {
		t.Fatalf("capabilities %s", caps)
	}
	if info := params["clientInfo"].(map[string]any); info["name"] != "roundtrip-go-client" {
		t.Fatalf("clientInfo %v", info)
	}
	if seen[1].method != notificationInitialized || seen[1].session == "" || seen[1].version != LegacyProtocolVersion {
		t.Fatalf("second message %+v", seen[1])
	}
	sid := seen[1].session
	var answers int
	for _, m := range seen[2:] {
		if m.session != sid || m.version != LegacyProtocolVersion {
			t.Errorf("%s %s: session %q version %q", m.httpMethod, m.method, m.session, m.version)
		}
		if m.mcpMethod != "" {
			t.Errorf("%s carries the modern Mcp-Method header", m.method)
		}
		if m.method == MethodToolsCall {
			p := m.body["params"].(map[string]any)
			if _, ok := p["_meta"]; ok {
				t.Errorf("a legacy request carries _meta: %v", p)
			}
		}
		if m.httpMethod == http.MethodPost && m.method == "" {
			answers++
			if _, ok := m.body["result"]; !ok {
				t.Errorf("answer %v", m.body)
			}
		}
	}
	if answers != 3 {
		t.Errorf("%d answers to the server's requests, want 3", answers)
	}
	if last := seen[len(seen)-1]; last.httpMethod != http.MethodDelete || last.session != sid {
		t.Fatalf("Close sent %+v, want DELETE of the session", last)
	}
}

// One set of handlers serves both eras, over every transport.
func TestClientSameHandlersServeBothEras(t *testing.T) {
	t.Parallel()
	s := newAskingServer(t)
	ctx := context.Background()
	var keys sync.Map
	opts := func(mode ClientMode) *ClientOptions {
		o := legacyHandlers(&ClientOptions{Mode: mode})
		o.Elicitation = func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
			keys.Store(InputRequestKey(ctx), true)
			if r.Mode == ElicitModeURL {
				if r.ElicitationID != "flow-7" && mode == ModeLegacy {
					return nil, fmt.Errorf("elicitationId %q", r.ElicitationID)
				}
				return &ElicitResult{Action: ElicitAccept}, nil
			}
			if schema, _ := r.RequestedSchema.(json.RawMessage); strings.Contains(string(schema), "default") {
				return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"nick": "jd", "age": 41}}, nil
			}
			return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
		}
		return o
	}
	for _, mode := range []ClientMode{ModeAuto, ModeLegacy} {
		for _, tr := range []string{"http", "memory"} {
			t.Run(fmt.Sprintf("%s/mode%d", tr, mode), func(t *testing.T) {
				var c *Client
				if tr == "http" {
					c = httpClient(t, s, nil, opts(mode))
				} else {
					c = memClient(t, s, opts(mode))
				}
				res, err := c.CallTool(ctx, "ask_all", nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := resultText(t, res); got != "Hello Ada, capital Paris, 2 roots" {
					t.Fatalf("got %q", got)
				}
				if res, err = c.CallTool(ctx, "url_consent", nil, nil); err != nil || resultText(t, res) != "url: accept" {
					t.Fatalf("url: %v %v", res, err)
				}
				// SEP-1034: the fields the handler leaves out get the
				// schema's defaults; what it gives stays.
				res, err = c.CallTool(ctx, "defaults", nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := resultText(t, res); got != `{"age":41,"name":"John Doe","nick":"jd","score":95.5,"status":"active","verified":true}` {
					t.Fatalf("defaults: %s", got)
				}
				want := LatestProtocolVersion
				if mode == ModeLegacy {
					want = LegacyProtocolVersion
				}
				if c.ProtocolVersion() != want {
					t.Fatalf("version %q, want %q", c.ProtocolVersion(), want)
				}
			})
		}
	}
	var n int
	keys.Range(func(k, _ any) bool {
		if k.(string) == "" {
			t.Error("a handler ran without InputRequestKey")
		}
		n++
		return true
	})
	if n == 0 {
		t.Fatal("no handler ran")
	}
}

// A response stream the server closes before the result is resumed with
// GET and Last-Event-ID; what comes on the new stream (a live request,
// the result) is handled like the rest.
func TestClientLegacyResumesAClosedStream(t *testing.T) {
	t.Parallel()
	s := newAskingServer(t)
	var log wireLog
	var progress atomic.Int32
	c := httpClient(t, s, log.wrap, legacyHandlers(&ClientOptions{Mode: ModeLegacy}))
	start := time.Now()
	res, err := c.CallTool(context.Background(), "reconnect", nil, &CallOptions{OnProgress: func(*ProgressParams) { progress.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "closed true, name Ada" {
		t.Fatalf("got %q", got)
	}
	var get *wireSeen
	for _, m := range log.all() {
		if m.httpMethod == http.MethodGet {
			get = &m
		}
	}
	if get == nil || get.lastEventID == "" || get.session == "" || get.version != LegacyProtocolVersion {
		t.Fatalf("no GET with Last-Event-ID: %+v", log.all())
	}
	// The server's retry interval (1 s by default) is honoured.
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("reconnected after %v, before the retry interval", d)
	}
	if progress.Load() != 1 {
		t.Fatalf("%d progress notifications", progress.Load())
	}
}

func TestClientLegacyProgressAndLogs(t *testing.T) {
	t.Parallel()
	s := newAskingServer(t)
	var logs atomic.Int32
	for _, tr := range []string{"http", "memory"} {
		t.Run(tr, func(t *testing.T) {
			opts := &ClientOptions{Mode: ModeLegacy, LogLevel: LevelInfo, OnLog: func(*LoggingMessageParams) { logs.Add(1) }}
			c := memClient(t, s, opts)
			if tr == "http" {
				c = httpClient(t, s, nil, opts)
			}
			logs.Store(0)
			var got []float64
			var mu sync.Mutex
			res, err := c.CallTool(context.Background(), "progress", nil, &CallOptions{OnProgress: func(p *ProgressParams) {
				mu.Lock()
				got = append(got, p.Progress)
				mu.Unlock()
			}})
			if err != nil || resultText(t, res) != "done" {
				t.Fatal(res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(got) != "[0 1 2]" {
				t.Fatalf("progress %v", got)
			}
			testutil.Eventually(t, 5*time.Second, "a log message", func() bool { return logs.Load() != 0 })
			if logs.Load() != 1 {
				t.Fatalf("%d log messages (logging/setLevel after the handshake)", logs.Load())
			}
		})
	}
}

// legacyOnlyServer is a hand-written 2025-11-25 server: modern requests
// (no session) get 400 with a non-modern error, as the SDKs of that
// revision answer.
type legacyOnlyServer struct {
	t        *testing.T
	mu       sync.Mutex
	sessions int
	seen     []string // method (or HTTP method) of every message
	expire   bool     // answer the next request of the session with 404
	deleted  []string
	gets     int // GET stream attempts
}

func (ls *legacyOnlyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method == http.MethodDelete {
		ls.deleted = append(ls.deleted, sid)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method == http.MethodGet {
		ls.gets++
		w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream
		return
	}
	in := readRPC(ls.t, r)
	ls.seen = append(ls.seen, in.Method)
	switch {
	case in.Method == methodInitialize:
		ls.sessions++
		w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s%d", ls.sessions))
		writeResult(w, in, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"0.9"},"instructions":"be nice"}`)
	case sid == "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}`)
	case sid != fmt.Sprintf("s%d", ls.sessions) || ls.expire:
		ls.expire = false
		w.WriteHeader(http.StatusNotFound)
	case in.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case in.Method == MethodToolsList:
		writeResult(w, in, `{"tools":[{"name":"old_tool","inputSchema":{"type":"object"}}]}`)
	default:
		writeResult(w, in, `{"content":[{"type":"text","text":"called `+in.Params.Name+`"}]}`)
	}
}

func TestClientAutoFallsBackToLegacyOverHTTP(t *testing.T) {
	t.Parallel()
	ls := &legacyOnlyServer{t: t}
	ts := httptest.NewServer(ls)
	defer ts.Close()
	c := NewClient(NewHTTPClientTransport(ts.URL, nil), nil)
	ctx := context.Background()
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || c.ProtocolVersion() != LegacyProtocolVersion {
		t.Fatalf("tools %+v, version %q", tools, c.ProtocolVersion())
	}
	d, err := c.Discover(ctx)
	if err != nil || d.Instructions != "be nice" || d.Capabilities.Tools == nil {
		t.Fatalf("discover on a legacy session: %+v %v", d, err)
	}
	if fmt.Sprint(d.Meta[MetaServerInfo]) == "" {
		t.Fatal("no serverInfo")
	}
	// An expired session: a new one, and the request again.
	ls.mu.Lock()
	ls.expire = true
	ls.mu.Unlock()
	res, err := c.CallTool(ctx, "old_tool", nil, nil)
	if err != nil || resultText(t, res) != "called old_tool" {
		t.Fatalf("after expiry: %v %v", res, err)
	}
	c.Close()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	want := []string{MethodToolsList, methodInitialize, notificationInitialized, MethodToolsList,
		MethodToolsCall, methodInitialize, notificationInitialized, MethodToolsCall}
	if !slices.Equal(ls.seen, want) {
		t.Fatalf("wire %v\nwant %v", ls.seen, want)
	}
	if !slices.Equal(ls.deleted, []string{"s2"}) {
		t.Fatalf("deleted %v", ls.deleted)
	}
	if ls.gets != 2 {
		t.Fatalf("%d GET stream attempts, want one per session", ls.gets)
	}
}

// -32022 listing only legacy versions: a dual-era-less old server.
func TestClientAutoFallsBackOnAnUnsupportedVersionListingLegacyOnly(t *testing.T) {
	t.Parallel()
	var initialized atomic.Bool
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		in := readRPC(t, r)
		switch {
		case in.Method == methodInitialize:
			initialized.Store(true)
			writeResult(w, in, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"x","version":"1"}}`)
		case in.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case !initialized.Load():
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}`, in.ID)
		default:
			writeResult(w, in, `{"tools":[]}`)
		}
	}, nil, nil)
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if c.ProtocolVersion() != LegacyProtocolVersion {
		t.Fatalf("version %q", c.ProtocolVersion())
	}
}

// What does not say anything about the era (a 401, a 500, a network
// failure) is returned as is, and the next call probes again.
func TestClientProbeDecidesNothingOnOtherFailures(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		writeResult(w, in, `{"resultType":"complete","tools":[]}`)
	}, nil, nil)
	_, err := c.ListTools(context.Background(), nil)
	var hs *HTTPStatusError
	if !errors.As(err, &hs) || hs.StatusCode != 401 || c.ProtocolVersion() != "" {
		t.Fatalf("got %v, version %q", err, c.ProtocolVersion())
	}
	if _, err := c.ListTools(context.Background(), nil); err != nil || c.ProtocolVersion() != LatestProtocolVersion {
		t.Fatalf("second call: %v %q", err, c.ProtocolVersion())
	}
}

// stdioLike hides the in-memory pair's type, so that the client probes
// as on a real stdio connection.
type stdioLike struct{ io.ReadWriteCloser }

func newFakeStdio(t *testing.T, opts *ClientOptions) (*Client, *fakeStream) {
	ce, se := NewInMemoryTransports()
	f := &fakeStream{t: t, w: se, lines: make(chan map[string]any, 64)}
	go f.read(se)
	c := NewClient(NewStreamClientTransport(stdioLike{ce}, nil), opts)
	t.Cleanup(func() { c.Close(); se.Close() })
	return c, f
}

// nextNot returns the next message that is not a notification method
// (the cancellation of an abandoned probe is written asynchronously).
func (f *fakeStream) nextNot(method string) map[string]any {
	for {
		if m := f.next(); m["method"] != method || m["id"] != nil {
			return m
		}
	}
}

func (f *fakeStream) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			f.t.Errorf("client wrote a bad line %q", sc.Bytes())
		}
		f.lines <- v
	}
	close(f.lines)
}

// handshake plays the server's side of initialize on a fake stream.
func (f *fakeStream) handshake(version string) {
	f.t.Helper()
	init := f.nextNot(notificationCancelled)
	if init["method"] != methodInitialize {
		f.t.Fatalf("want initialize, got %v", init)
	}
	f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"1"}}}`, init["id"], version))
	if n := f.nextNot(notificationCancelled); n["method"] != notificationInitialized {
		f.t.Fatalf("want notifications/initialized, got %v", n)
	}
}

func TestClientAutoOnStdioProbesWithDiscover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("modern", func(t *testing.T) {
		c, f := newFakeStdio(t, nil)
		done := make(chan error, 1)
		go func() { _, err := c.ListTools(ctx, nil); done <- err }()
		d := f.next()
		if d["method"] != MethodDiscover {
			t.Fatalf("first message %v", d)
		}
		f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}`, d["id"]))
		l := f.next()
		if l["method"] != MethodToolsList || l["params"].(map[string]any)["_meta"] == nil {
			t.Fatalf("then %v", l)
		}
		f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"resultType":"complete","tools":[]}}`, l["id"]))
		if err := waitErr(t, done); err != nil || c.ProtocolVersion() != LatestProtocolVersion {
			t.Fatal(err, c.ProtocolVersion())
		}
	})
	t.Run("method not found", func(t *testing.T) {
		c, f := newFakeStdio(t, nil)
		done := make(chan error, 1)
		go func() { _, err := c.ListTools(ctx, nil); done <- err }()
		d := f.next()
		f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"error":{"code":-32601,"message":"Method not found"}}`, d["id"]))
		f.handshake("2025-11-25")
		l := f.next()
		if l["method"] != MethodToolsList || l["params"].(map[string]any)["_meta"] != nil {
			t.Fatalf("then %v", l)
		}
		f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"tools":[]}}`, l["id"]))
		if err := waitErr(t, done); err != nil || c.ProtocolVersion() != LegacyProtocolVersion {
			t.Fatal(err, c.ProtocolVersion())
		}
	})
	t.Run("silence", func(t *testing.T) {
		c, f := newFakeStdio(t, &ClientOptions{ProbeTimeout: 50 * time.Millisecond})
		done := make(chan error, 1)
		go func() { done <- c.Connect(ctx) }()
		if d := f.next(); d["method"] != MethodDiscover {
			t.Fatalf("first message %v", d)
		}
		f.handshake("2025-06-18")
		if err := waitErr(t, done); err != nil || c.ProtocolVersion() != "2025-06-18" {
			t.Fatal(err, c.ProtocolVersion())
		}
	})
	t.Run("slow modern server", func(t *testing.T) {
		c, f := newFakeStdio(t, &ClientOptions{ProbeTimeout: 50 * time.Millisecond})
		done := make(chan error, 1)
		go func() { done <- c.Connect(ctx) }()
		f.next() // server/discover, unanswered
		init := f.nextNot(notificationCancelled)
		f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"error":{"code":-32601,"message":"Method not found"}}`, init["id"]))
		d := f.nextNot(notificationCancelled)
		if d["method"] != MethodDiscover {
			t.Fatalf("want server/discover again, got %v", d)
		}
		f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}`, d["id"]))
		if err := waitErr(t, done); err != nil || c.ProtocolVersion() != LatestProtocolVersion {
			t.Fatal(err, c.ProtocolVersion())
		}
	})
	t.Run("against the dual-era server", func(t *testing.T) {
		s := newAskingServer(t)
		ce, se := NewInMemoryTransports()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.ServeStream(sctx, se, se, nil)
		c := NewClient(NewStreamClientTransport(stdioLike{ce}, nil), legacyHandlers(nil))
		defer c.Close()
		res, err := c.CallTool(ctx, "ask_all", nil, nil)
		if err != nil || resultText(t, res) != "Hello Ada, capital Paris, 2 roots" || c.ProtocolVersion() != LatestProtocolVersion {
			t.Fatal(res, err, c.ProtocolVersion())
		}
	})
}

func TestClientPinnedLegacyVersionRefusesAnother(t *testing.T) {
	t.Parallel()
	c, f := newFakeStdio(t, &ClientOptions{Mode: ModePinned, ProtocolVersion: "2025-11-25"})
	done := make(chan error, 1)
	go func() { done <- c.Connect(context.Background()) }()
	init := f.next()
	if p := init["params"].(map[string]any); p["protocolVersion"] != "2025-11-25" {
		t.Fatalf("offered %v", p)
	}
	f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}}`, init["id"]))
	if err := waitErr(t, done); !errors.As(err, new(*UnsupportedVersionError)) {
		t.Fatalf("got %v", err)
	}
}

// The server's live requests on a stdio session: answered by the
// handlers; ping answered; a kind without a handler refused with
// -32600; an unknown method -32601; a request the server cancels gets
// no answer and its handler's context ends.
func TestClientAnswersLiveRequestsOnStdio(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	started := make(chan struct{})
	opts := &ClientOptions{Mode: ModeLegacy,
		Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
			if r.Message == "wait" {
				close(started)
				<-ctx.Done()
				close(cancelled)
				return nil, ctx.Err()
			}
			if InputRequestKey(ctx) != "e-1" {
				return nil, fmt.Errorf("key %q", InputRequestKey(ctx))
			}
			return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"ok": true}}, nil
		},
		Roots: func(ctx context.Context, r *ListRootsRequest) (*ListRootsResult, error) {
			return nil, NewError(-32042, "no roots today", nil)
		},
	}
	c, f := newFakeStdio(t, opts)
	go c.Connect(context.Background())
	f.handshake("2025-11-25")
	f.send(`{"jsonrpc":"2.0","id":"e-1","method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`)
	if got := f.next(); got["id"] != "e-1" || fmt.Sprint(got["result"]) != "map[action:accept content:map[ok:true]]" {
		t.Fatalf("elicitation answer %v", got)
	}
	f.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if got := f.next(); got["id"] != float64(7) || fmt.Sprint(got["result"]) != "map[]" {
		t.Fatalf("ping answer %v", got)
	}
	f.send(`{"jsonrpc":"2.0","id":8,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`)
	if got := f.next(); got["id"] != float64(8) || fmt.Sprint(got["error"]) != "map[code:-32600 message:Sampling not supported]" {
		t.Fatalf("no sampling handler: %v", got)
	}
	f.send(`{"jsonrpc":"2.0","id":9,"method":"roots/list"}`)
	if got := f.next(); got["id"] != float64(9) || fmt.Sprint(got["error"]) != "map[code:-32042 message:no roots today]" {
		t.Fatalf("handler error: %v", got)
	}
	f.send(`{"jsonrpc":"2.0","id":10,"method":"tasks/list"}`)
	if got := f.next(); got["id"] != float64(10) || got["error"].(map[string]any)["code"] != float64(CodeMethodNotFound) {
		t.Fatalf("unknown method: %v", got)
	}
	f.send(`{"jsonrpc":"2.0","id":11,"method":"elicitation/create","params":{"message":"wait"}}`)
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not start")
	}
	f.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11}}`)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
	f.send(`{"jsonrpc":"2.0","id":12,"method":"ping"}`)
	if got := f.next(); got["id"] != float64(12) {
		t.Fatalf("an answer to the cancelled request was sent: %v", got)
	}
}

// waitErr waits for the outcome of a call running on another goroutine.
func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the call hangs")
	}
	return nil
}

// The session's GET stream: a request the server sends there is answered
// like one on a response stream; a server that never answers the GET
// does not hold the handshake for long.
func TestClientLegacyGetStream(t *testing.T) {
	t.Parallel()
	answered := make(chan map[string]any, 1)
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			if r.Header.Get("Mcp-Session-Id") != "g" || r.Header.Get(HeaderProtocolVersion) != LegacyProtocolVersion {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: g-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"roots/list\"}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		case http.MethodDelete:
			return
		}
		in := readRPC(t, r)
		switch {
		case in.Method == methodInitialize:
			w.Header().Set("Mcp-Session-Id", "g")
			writeResult(w, in, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"g","version":"1"}}`)
		case in.Method == "" && in.ID != nil:
			var m map[string]any
			json.Unmarshal(in.raw, &m)
			answered <- m
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}, nil, legacyHandlers(&ClientOptions{Mode: ModeLegacy}))
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-answered:
		if m["id"] != "r1" || fmt.Sprint(m["result"]) != "map[roots:[map[uri:file:///a] map[uri:file:///b]]]" {
			t.Fatalf("answer %v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request on the GET stream was not answered")
	}

	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			<-r.Context().Done()
			return
		}
		if r.Method != http.MethodPost {
			return
		}
		in := readRPC(t, r)
		if in.Method == methodInitialize {
			w.Header().Set("Mcp-Session-Id", "h")
			writeResult(w, in, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"h","version":"1"}}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer ts.Close()
	slow := NewClient(NewHTTPClientTransport(ts.URL, nil), &ClientOptions{Mode: ModeLegacy})
	defer slow.Close()
	start := time.Now()
	if err := slow.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the handshake waited %v for the GET stream", d)
	}
}

func TestWithSchemaDefaults(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","default":"x"},"b":{"type":"integer","default":3},"c":{"type":"string"},"d":{"type":"string","default":null}}}`)
	in := map[string]any{"a": "given"}
	out := withSchemaDefaults(in, schema)
	b, _ := appendElicitResult(nil, &ElicitResult{Action: ElicitAccept, Content: out})
	if string(b) != `{"action":"accept","content":{"a":"given","b":3}}` {
		t.Fatalf("got %s", b)
	}
	if len(in) != 1 {
		t.Fatal("the handler's map was modified")
	}
	if withSchemaDefaults(in, json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)) != nil {
		t.Fatal("nothing to add, yet a new map")
	}
}

// The legacy era's costs, for comparison with BenchmarkClientCallToolServer
// and BenchmarkClientTwoLegCallServer: one call on a 2025-11-25 session,
// and one call whose tool asks a question, sent live and answered on the
// same connection (in-memory pair, client and server).
func BenchmarkClientLegacyCallToolServer(b *testing.B) {
	benchCall(b, memClient(b, benchServer(), &ClientOptions{Mode: ModeLegacy}), "echo")
}

func BenchmarkClientLegacyLiveElicitServer(b *testing.B) {
	s := benchServer()
	s.AddTool(&Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		name, err := Elicit[struct {
			Name string `json:"name"`
		}](ctx, "Your name?")
		if err != nil {
			return nil, err
		}
		return TextResult("Hello " + name.Content.Name), nil
	})
	benchCall(b, memClient(b, s, &ClientOptions{Mode: ModeLegacy, Elicitation: benchElicit}), "ask")
}
