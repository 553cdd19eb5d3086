package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Client observability: extra _meta (CallOptions.Meta, WithMeta),
// client middleware (ClientRequest, CallInfo), PendingCall.Meta and
// LogClientRequests.

// metaLog records, per method, the _meta members a server received
// beyond the SDK's envelope (read in server middleware from
// RequestMeta.Raw).
type metaLog struct {
	mu   sync.Mutex
	seen []metaSeen
}

type metaSeen struct {
	method string
	meta   map[string]json.RawMessage
}

func (ml *metaLog) middleware(next ServerHandler) ServerHandler {
	return func(ctx context.Context, method string, params Params) (Result, error) {
		var m map[string]json.RawMessage
		if params != nil {
			if raw := params.RequestMeta().Raw; len(raw) > 0 {
				if err := json.Unmarshal(raw, &m); err != nil {
					return nil, fmt.Errorf("server got invalid _meta %s: %v", raw, err)
				}
			}
		}
		ml.mu.Lock()
		ml.seen = append(ml.seen, metaSeen{method, m})
		ml.mu.Unlock()
		return next(ctx, method, params)
	}
}

// of returns the raw value of member name in each request of method.
func (ml *metaLog) of(method, name string) []string {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	var out []string
	for _, s := range ml.seen {
		if s.method == method {
			out = append(out, string(s.meta[name]))
		}
	}
	return out
}

func (ml *metaLog) count() int {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return len(ml.seen)
}

// newObservedServer is a server with every kind of method, recording
// the _meta it receives: tool "ask" asks a name (one input_required
// round, two legs), tool "echo", prompt "greet", resource "test://doc",
// template "test://item/{id}", completions.
func newObservedServer(t testing.TB, ml *metaLog) *Server {
	t.Helper()
	s := NewServer(Implementation{Name: "observed", Version: "1"}, &ServerOptions{
		Middleware: []ServerMiddleware{ml.middleware},
		Completions: func(ctx context.Context, r *CompleteRequest) (*CompleteResult, error) {
			return &CompleteResult{Completion: Completion{Values: []string{"a"}}}, nil
		},
	})
	s.AddTool(&Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ans, err := r.InputResponses.Elicit("name")
		if err != nil {
			return &InputRequiredResult{InputRequests: map[string]InputRequest{"name": &ElicitRequest{Message: "Name?", RequestedSchema: nameSchema}}, RequestState: "st"}, nil
		}
		return TextResult(fmt.Sprint("Hello ", ans.Content["name"])), nil
	})
	s.AddTool(&Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		return TextResult("echo"), nil
	})
	s.AddPrompt(&Prompt{Name: "greet"}, func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
		return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: "hi"}}}}, nil
	})
	s.AddResource(&Resource{URI: "test://doc", Name: "doc"}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "doc"}}}, nil
	})
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://item/{id}", Name: "item"}, func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "item"}}}, nil
	})
	return s
}

// stdioClient serves s with ServeStream on one end of a network pipe
// (a byte stream that is not the in-memory pair: the stdio framing).
func stdioClient(t testing.TB, s *Server, opts *ClientOptions) *Client {
	t.Helper()
	ce, se := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.ServeStream(ctx, se, se, nil); se.Close(); close(done) }()
	c := NewClient(NewStreamClientTransport(ce, nil), opts)
	t.Cleanup(func() { c.Close(); cancel(); <-done })
	return c
}

// observedTransports are the transports and eras the observability
// tests run over, each making a client of s.
var observedTransports = []struct {
	name      string
	transport string // ClientRequest.Transport
	legacy    bool
	client    func(t *testing.T, s *Server, opts *ClientOptions) *Client
}{
	{"http", "http", false, func(t *testing.T, s *Server, o *ClientOptions) *Client { return httpClient(t, s, nil, o) }},
	{"memory", "memory", false, func(t *testing.T, s *Server, o *ClientOptions) *Client { return memClient(t, s, o) }},
	{"stdio", "stdio", false, func(t *testing.T, s *Server, o *ClientOptions) *Client { return stdioClient(t, s, o) }},
	{"http+sse", "http+sse", true, func(t *testing.T, s *Server, o *ClientOptions) *Client {
		return sseClient(t, newSSEOnly(t, s, 0).url, &HTTPClientOptions{SSE: true}, o)
	}},
	{"http-2025-11-25", "http", true, func(t *testing.T, s *Server, o *ClientOptions) *Client {
		o.Mode = ModeLegacy
		return httpClient(t, s, nil, o)
	}},
	{"stdio-2025-11-25", "stdio", true, func(t *testing.T, s *Server, o *ClientOptions) *Client {
		o.Mode = ModeLegacy
		return stdioClient(t, s, o)
	}},
}

// seenRequest is what a recording middleware saw of one request.
type seenRequest struct {
	method, target, transport string
	before, after             string // ProtocolVersion before next and once it returned
	round                     int
	call                      *CallInfo
	params                    string
	err                       error
}

// recorder is client middleware that records every request and adds
// the member "x-mw" (the method) to each.
type recorder struct {
	mu   sync.Mutex
	seen []seenRequest
}

func (rc *recorder) middleware(next ClientHandler) ClientHandler {
	return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
		sr := seenRequest{method: req.Method, target: req.Target, before: req.ProtocolVersion, call: req.Call, params: string(req.Params)}
		if req.Call != nil {
			sr.round = req.Call.Round
		}
		req.Meta["x-mw"] = req.Method
		res, err := next(ctx, req)
		sr.after, sr.transport, sr.err = req.ProtocolVersion, req.Transport, err
		rc.mu.Lock()
		rc.seen = append(rc.seen, sr)
		rc.mu.Unlock()
		return res, err
	}
}

func (rc *recorder) all() []seenRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.seen)
}

func (rc *recorder) methods() []string {
	var out []string
	for _, s := range rc.all() {
		out = append(out, s.method)
	}
	return out
}

// CallOptions.Meta reaches the server on every leg of a call, on every
// transport and in both eras; in a 2025-11-25 session too (where _meta
// is optional), and next to a progress token.
func TestCallOptionsMetaArrivesAtTheServer(t *testing.T) {
	t.Parallel()
	for _, tr := range observedTransports {
		t.Run(tr.name, func(t *testing.T) {
			ml := &metaLog{}
			c := tr.client(t, newObservedServer(t, ml), fixtureHandlers(nil))
			ctx := context.Background()
			opts := &CallOptions{Meta: Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor.example/n": 7}}
			res, err := c.CallTool(ctx, "ask", nil, opts)
			if err != nil || resultText(t, res) != "Hello Ada" {
				t.Fatalf("%v %v", res, err)
			}
			// The handler runs twice in both eras: for two legs, or on a
			// legacy session for the one request (the server runs it
			// again with the answer to its live question).
			legs := 2
			got := ml.of(MethodToolsCall, "traceparent")
			if len(got) != legs {
				t.Fatalf("server saw %d legs %q, want %d", len(got), got, legs)
			}
			for i, v := range got {
				if v != `"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"` {
					t.Errorf("leg %d: traceparent %s", i+1, v)
				}
			}
			if n := ml.of(MethodToolsCall, "vendor.example/n"); n[0] != "7" {
				t.Errorf("vendor member %q", n)
			}
			// With a progress token, in the same _meta.
			opts.OnProgress = func(*ProgressParams) {}
			if _, err := c.CallTool(ctx, "echo", nil, opts); err != nil {
				t.Fatal(err)
			}
			if got := ml.of(MethodToolsCall, "traceparent"); len(got) != legs+1 || got[legs] == "" {
				t.Fatalf("with progress: %q", got)
			}
			if got := ml.of(MethodToolsCall, "progressToken"); got[legs] == "" {
				t.Fatalf("the progress token is gone: %q", got)
			}
		})
	}
}

// WithMeta puts its members on every method, merged with an enclosing
// WithMeta and with CallOptions.Meta (which wins on a clash).
func TestWithMetaReachesListToolsAndCalls(t *testing.T) {
	t.Parallel()
	ml := &metaLog{}
	c := httpClient(t, newObservedServer(t, ml), nil, fixtureHandlers(nil))
	ctx := WithMeta(context.Background(), Meta{"baggage": "k=v", "tracestate": "outer"})
	ctx = WithMeta(ctx, Meta{"tracestate": "inner"})
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := ml.of(MethodToolsList, "baggage"); len(got) != 1 || got[0] != `"k=v"` {
		t.Fatalf("tools/list baggage %q", got)
	}
	if got := ml.of(MethodToolsList, "tracestate"); got[0] != `"inner"` {
		t.Fatalf("tools/list tracestate %q: the inner WithMeta wins", got)
	}
	if _, err := c.CallTool(ctx, "ask", nil, &CallOptions{Meta: Meta{"tracestate": "call"}}); err != nil {
		t.Fatal(err)
	}
	if got := ml.of(MethodToolsCall, "tracestate"); len(got) != 2 || got[0] != `"call"` || got[1] != `"call"` {
		t.Fatalf("tools/call tracestate %q: CallOptions.Meta wins on every leg", got)
	}
	if got := ml.of(MethodToolsCall, "baggage"); got[0] != `"k=v"` || got[1] != `"k=v"` {
		t.Fatalf("tools/call baggage %q", got)
	}
	// A context without WithMeta sends none.
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := ml.of(MethodToolsList, "baggage"); got[1] != "" {
		t.Fatalf("a plain context sent baggage %q", got[1])
	}
}

// An extra member the SDK owns (io.modelcontextprotocol/*,
// progressToken), or one that does not marshal, is refused with an
// error naming it, and nothing is sent.
func TestReservedMetaIsRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	ml := &metaLog{}
	var rc recorder
	plain := httpClient(t, newObservedServer(t, ml), nil, fixtureHandlers(nil))
	observed := httpClient(t, newObservedServer(t, ml), nil, fixtureHandlers(&ClientOptions{Middleware: []ClientMiddleware{rc.middleware}}))
	adds := func(name string, v any) ClientMiddleware {
		return func(next ClientHandler) ClientHandler {
			return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
				req.Meta[name] = v
				return next(ctx, req)
			}
		}
	}
	bg := context.Background()
	for _, name := range []string{metaProtocolVersion, "io.modelcontextprotocol/related-task", "progressToken"} {
		for _, c := range []*Client{plain, observed} {
			_, err := c.CallTool(bg, "echo", nil, &CallOptions{Meta: Meta{name: "x"}})
			if !errors.Is(err, ErrReservedMeta) || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Errorf("CallOptions.Meta %q: %v", name, err)
			}
			_, err = c.ListTools(WithMeta(bg, Meta{"ok": 1, name: "x"}), nil)
			if !errors.Is(err, ErrReservedMeta) || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Errorf("WithMeta %q: %v", name, err)
			}
		}
		mw := httpClient(t, newObservedServer(t, ml), nil, &ClientOptions{Middleware: []ClientMiddleware{adds(name, "x")}})
		if _, err := mw.ListTools(bg, nil); !errors.Is(err, ErrReservedMeta) || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
			t.Errorf("added by middleware %q: %v", name, err)
		}
	}
	_, err := plain.CallTool(bg, "echo", nil, &CallOptions{Meta: Meta{"bad": make(chan int)}})
	if err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("unmarshalable value: %v", err)
	}
	if n := ml.count(); n != 0 {
		t.Fatalf("%d requests reached the servers", n)
	}
	// The refused calls never reached the middleware.
	if got := rc.methods(); len(got) != 0 {
		t.Fatalf("middleware saw %q", got)
	}
}

// Client middleware sees every request made for the caller, on every
// transport and in both eras, with its method, target, transport and
// protocol version; what it adds to Meta reaches the server.
func TestClientMiddlewareSeesEveryMethodOnEveryTransport(t *testing.T) {
	t.Parallel()
	for _, tr := range observedTransports {
		t.Run(tr.name, func(t *testing.T) {
			ml := &metaLog{}
			var rc recorder
			c := tr.client(t, newObservedServer(t, ml), fixtureHandlers(&ClientOptions{Middleware: []ClientMiddleware{rc.middleware}}))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			type step struct {
				method, target string
				run            func() error
			}
			steps := []step{
				{MethodDiscover, "", func() error { _, err := c.Discover(ctx); return err }},
				{MethodToolsList, "", func() error { _, err := c.ListTools(ctx, nil); return err }},
				{methodPromptsList, "", func() error { _, err := c.ListPrompts(ctx, nil); return err }},
				{MethodResourcesList, "", func() error { _, err := c.ListResources(ctx, nil); return err }},
				{methodResourceTemplatesList, "", func() error { _, err := c.ListResourceTemplates(ctx, nil); return err }},
				{MethodToolsCall, "ask", func() error { _, err := c.CallTool(ctx, "ask", nil, nil); return err }},
				{MethodPromptsGet, "greet", func() error { _, err := c.GetPrompt(ctx, "greet", nil, nil); return err }},
				{MethodResourcesRead, "test://doc", func() error { _, err := c.ReadResource(ctx, "test://doc", nil); return err }},
				{methodComplete, "", func() error {
					_, err := c.Complete(ctx, &CompleteRequest{Ref: CompleteReference{Type: "ref/prompt", Name: "greet"}, Argument: CompleteArgument{Name: "a", Value: "b"}})
					return err
				}},
			}
			if !tr.legacy {
				steps = append(steps, step{methodSubscriptionsListen, "", func() error {
					lctx, lcancel := context.WithCancel(ctx)
					defer lcancel()
					err := c.Listen(lctx, SubscriptionFilter{ToolsListChanged: true}, func(*ListenNotification) { lcancel() })
					if errors.Is(err, context.Canceled) {
						err = nil
					}
					return err
				}})
			}
			var want []string
			for _, s := range steps {
				if err := s.run(); err != nil {
					t.Fatalf("%s: %v", s.method, err)
				}
				want = append(want, s.method)
				if s.method == MethodToolsCall && !tr.legacy {
					want = append(want, s.method) // the second leg
				}
			}
			if got := rc.methods(); !slices.Equal(got, want) {
				t.Fatalf("middleware saw\n %q\nwant\n %q", got, want)
			}
			version := c.ProtocolVersion()
			if tr.legacy == (version == LatestProtocolVersion) || version == "" {
				t.Fatalf("session version %q", version)
			}
			if tr.name == "http-2025-11-25" || tr.name == "stdio-2025-11-25" {
				if version != LegacyProtocolVersion {
					t.Fatalf("version %q, want %s", version, LegacyProtocolVersion)
				}
			}
			for i, s := range rc.all() {
				var target string
				for _, st := range steps {
					if st.method == s.method {
						target = st.target
					}
				}
				if s.target != target || s.transport != tr.transport || s.after != version {
					t.Errorf("request %d: %+v, want target %q, transport %q, version %q", i, s, target, tr.transport, version)
				}
				// HTTP in ModeAuto: the first request is the probe, sent
				// before the era is known.
				probe := i == 0 && (tr.name == "http" || tr.name == "http+sse")
				if wantBefore := version; s.before != wantBefore && !(probe && s.before == "") {
					t.Errorf("request %d (%s): ProtocolVersion %q before next, want %q", i, s.method, s.before, wantBefore)
				}
				isCall := s.method == MethodToolsCall || s.method == MethodPromptsGet || s.method == MethodResourcesRead
				if isCall != (s.call != nil) {
					t.Errorf("request %d (%s): Call %v", i, s.method, s.call)
				}
				if !json.Valid([]byte(s.params)) || !strings.HasPrefix(s.params, "{") || strings.Contains(s.params, "_meta") {
					t.Errorf("request %d (%s): Params %s", i, s.method, s.params)
				}
			}
			// What the middleware added reached the server, on every
			// request it received.
			for _, m := range []string{MethodToolsList, MethodToolsCall, MethodPromptsGet, MethodResourcesRead, methodComplete} {
				got := ml.of(m, "x-mw")
				if len(got) == 0 {
					t.Errorf("%s: the server saw none", m)
				}
				for _, v := range got {
					if v != `"`+m+`"` {
						t.Errorf("%s: the server saw x-mw %s", m, v)
					}
				}
			}
		})
	}
}

// The first element of ClientOptions.Middleware is outermost, and a
// middleware may pass on a copy of the request.
func TestClientMiddlewareOrderFirstIsOutermost(t *testing.T) {
	t.Parallel()
	ml := &metaLog{}
	var order []string
	mw := func(name string) ClientMiddleware {
		return func(next ClientHandler) ClientHandler {
			return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
				order = append(order, name+">")
				cp := *req
				cp.Meta[name] = len(order)
				res, err := next(ctx, &cp)
				order = append(order, "<"+name)
				return res, err
			}
		}
	}
	c := memClient(t, newObservedServer(t, ml), &ClientOptions{Middleware: []ClientMiddleware{mw("a"), nil, mw("b")}})
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "a> b> <b <a" {
		t.Fatalf("order %s", got)
	}
	if a, b := ml.of(MethodToolsList, "a"), ml.of(MethodToolsList, "b"); a[0] != "1" || b[0] != "2" {
		t.Fatalf("server saw a=%q b=%q", a, b)
	}
	// A request of another Client is refused at the end of the chain.
	forged := memClient(t, newObservedServer(t, ml), &ClientOptions{Middleware: []ClientMiddleware{func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
			return next(ctx, &ClientRequest{Method: req.Method, Meta: req.Meta})
		}
	}}})
	if _, err := forged.ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "did not make") {
		t.Fatalf("a forged request: %v", err)
	}
}

// Middleware can add members per leg (a span per leg: a new
// traceparent each time), and they reach the server on that leg.
func TestClientMiddlewareMetaReachesTheServer(t *testing.T) {
	t.Parallel()
	ml := &metaLog{}
	perLeg := func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
			if req.Call != nil {
				req.Meta["traceparent"] = fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%016x-01", req.Call.Round)
			}
			return next(ctx, req)
		}
	}
	c := httpClient(t, newObservedServer(t, ml), nil, fixtureHandlers(&ClientOptions{Middleware: []ClientMiddleware{perLeg}}))
	if _, err := c.CallTool(context.Background(), "ask", nil, &CallOptions{Meta: Meta{"traceparent": "from-call", "tracestate": "t"}}); err != nil {
		t.Fatal(err)
	}
	got := ml.of(MethodToolsCall, "traceparent")
	want := []string{`"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001-01"`, `"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000002-01"`}
	if !slices.Equal(got, want) {
		t.Fatalf("server saw %q, want %q", got, want)
	}
	if ts := ml.of(MethodToolsCall, "tracestate"); ts[0] != `"t"` || ts[1] != `"t"` {
		t.Fatalf("tracestate %q", ts)
	}
}

// CallInfo.Round numbers the legs of a call: 1, 2, 3 for a three-round
// call, the same *CallInfo on each; OnEnd gets the number of legs.
func TestCallInfoRoundCountsTheLegsOfAThreeRoundCall(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	var rc recorder
	var ends []int
	onEnd := func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
			if req.Call != nil && req.Call.Round == 1 {
				req.Call.OnEnd(func(rounds int, err error) {
					if err != nil {
						t.Errorf("OnEnd err %v", err)
					}
					ends = append(ends, rounds)
				})
			}
			return next(ctx, req)
		}
	}
	clientTransports(t, f.s, fixtureHandlers(&ClientOptions{Middleware: []ClientMiddleware{onEnd, rc.middleware}}), func(t *testing.T, c *Client) {
		rc.seen, ends = nil, nil
		if _, err := c.CallTool(context.Background(), "three_rounds", map[string]string{"nonce": "n"}, nil); err != nil {
			t.Fatal(err)
		}
		seen := rc.all()
		if len(seen) != 3 {
			t.Fatalf("%d legs", len(seen))
		}
		for i, s := range seen {
			if s.round != i+1 || s.call != seen[0].call || s.method != MethodToolsCall || s.target != "three_rounds" {
				t.Errorf("leg %d: %+v", i+1, s)
			}
		}
		if !slices.Equal(ends, []int{3}) {
			t.Fatalf("OnEnd ran with %v, want once with 3", ends)
		}
		// The legs' Params are those sent: the state of round 2 is there.
		if !strings.Contains(seen[1].params, `"requestState":`) || strings.Contains(seen[0].params, `"requestState"`) {
			t.Fatalf("params %s / %s", seen[0].params, seen[1].params)
		}
	})
}

// onEndCounter is middleware that registers an OnEnd on each call and
// counts how often it ran, with the error it got.
type onEndCounter struct {
	mu   sync.Mutex
	runs int
	errs []error
	vals []any
}

type valKey struct{}

func (oc *onEndCounter) middleware(next ClientHandler) ClientHandler {
	return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
		if ci := req.Call; ci != nil && ci.Value(valKey{}) == nil {
			ci.SetValue(valKey{}, "v")
			ci.OnEnd(func(rounds int, err error) {
				oc.mu.Lock()
				oc.runs++
				oc.errs = append(oc.errs, err)
				oc.vals = append(oc.vals, ci.Value(valKey{}))
				oc.mu.Unlock()
			})
		}
		return next(ctx, req)
	}
}

func (oc *onEndCounter) check(t *testing.T, want func(error) bool) {
	t.Helper()
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.runs != 1 || !want(oc.errs[0]) || oc.vals[0] != "v" {
		t.Fatalf("OnEnd ran %d times with %v (value %v)", oc.runs, oc.errs, oc.vals)
	}
	oc.runs, oc.errs, oc.vals = 0, nil, nil
}

// OnEnd runs exactly once however the call ends: success, a handler's
// error, a PendingCallError (Manual), the caller's context ending.
func TestCallInfoOnEndRunsOnceOnEveryPath(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	oc := &onEndCounter{}
	opts := fixtureHandlers(&ClientOptions{Middleware: []ClientMiddleware{oc.middleware}})
	opts.Elicitation = func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
		if r.Message == "Again?" {
			return nil, errors.New("the user walked away")
		}
		return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
	}
	clientTransports(t, f.s, opts, func(t *testing.T, c *Client) {
		bg := context.Background()
		if _, err := c.CallTool(bg, "three_rounds", map[string]string{"nonce": "n"}, nil); err != nil {
			t.Fatal(err)
		}
		oc.check(t, func(err error) bool { return err == nil })

		_, err := c.CallTool(bg, "forever", nil, nil)
		if err == nil || !strings.Contains(err.Error(), "walked away") {
			t.Fatalf("handler error: %v", err)
		}
		oc.check(t, func(e error) bool { return e == err })

		var pce *PendingCallError
		_, err = c.CallTool(bg, "three_rounds", map[string]string{"nonce": "n"}, &CallOptions{Manual: true})
		if !errors.As(err, &pce) {
			t.Fatalf("manual: %v", err)
		}
		oc.check(t, func(e error) bool { return errors.As(e, &pce) })

		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		defer cancel()
		if _, err = c.CallTool(ctx, "slow", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled: %v", err)
		}
		oc.check(t, func(e error) bool { return errors.Is(e, context.DeadlineExceeded) })

		// The server's error (an unknown tool) ends the call too.
		if _, err = c.CallTool(bg, "no_such_tool", nil, nil); err == nil {
			t.Fatal("unknown tool: no error")
		}
		oc.check(t, func(e error) bool { return e != nil })
	})
}

// A call stopped by a panic in middleware still ends (OnEnd), and the
// panic goes on up.
func TestCallInfoOnEndRunsWhenACallPanics(t *testing.T) {
	t.Parallel()
	oc := &onEndCounter{}
	boom := func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
			panic("boom")
		}
	}
	c := memClient(t, newClientFixture(t).s, &ClientOptions{Middleware: []ClientMiddleware{oc.middleware, boom}})
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v", p)
			}
		}()
		c.CallTool(context.Background(), "echo", nil, nil)
	}()
	oc.check(t, func(e error) bool { return errors.Is(e, errCallPanicked) })
}

// OnEnd registered after the call ended runs at once, with the call's
// outcome; functions run last-registered first.
func TestCallInfoOnEndAfterTheEndRunsAtOnce(t *testing.T) {
	t.Parallel()
	ci := &CallInfo{Round: 2}
	var order []int
	ci.OnEnd(func(int, error) { order = append(order, 1) })
	ci.OnEnd(func(int, error) { order = append(order, 2) })
	want := errors.New("x")
	ci.end(want)
	ci.end(nil) // once only
	var got error
	var rounds int
	ci.OnEnd(func(r int, err error) { rounds, got = r, err })
	if !slices.Equal(order, []int{2, 1}) || got != want || rounds != 2 {
		t.Fatalf("order %v, late OnEnd %d %v", order, rounds, got)
	}
}

// CallInfo.Carry is saved in PendingCall.Meta, survives the JSON round
// trip, and is handed back as CallInfo.Resumed by Client.Resume in
// another Client; there Carry starts as a copy of it.
func TestCallInfoCarryIsSavedInPendingCallAndResumed(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	type seen struct {
		round          int
		resumed, carry Meta
	}
	var mu sync.Mutex
	var log []seen
	tracer := func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
			ci := req.Call
			mu.Lock()
			log = append(log, seen{ci.Round, ci.Resumed, maps.Clone(ci.Carry)})
			mu.Unlock()
			if ci.Resumed == nil && ci.Round == 1 {
				ci.Carry = Meta{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
			}
			return next(ctx, req)
		}
	}
	first := httpClient(t, f.s, nil, &ClientOptions{Middleware: []ClientMiddleware{tracer}})
	_, err := first.CallTool(context.Background(), "three_rounds", map[string]string{"nonce": "carry"}, &CallOptions{Manual: true})
	var pce *PendingCallError
	if !errors.As(err, &pce) {
		t.Fatal(err)
	}
	if pce.Call.Meta["traceparent"] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Fatalf("PendingCall.Meta %v", pce.Call.Meta)
	}
	b, err := json.Marshal(pce.Call)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`)) {
		t.Fatalf("JSON %s", b)
	}
	var p PendingCall
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	// Another process: another Client, the same middleware.
	second := memClient(t, f.s, &ClientOptions{Middleware: []ClientMiddleware{tracer}})
	_, err = second.Resume(context.Background(), &p, InputResponses{"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}, &CallOptions{Manual: true})
	var pce2 *PendingCallError
	if !errors.As(err, &pce2) {
		t.Fatal(err)
	}
	mu.Lock()
	got := log[1]
	mu.Unlock()
	if got.round != 1 || got.resumed["traceparent"] != p.Meta["traceparent"] || got.carry["traceparent"] != p.Meta["traceparent"] {
		t.Fatalf("the resumed call's first leg saw %+v", got)
	}
	// Carry started as a copy of Resumed and was not changed: it is kept.
	if pce2.Call.Meta["traceparent"] != p.Meta["traceparent"] {
		t.Fatalf("second PendingCall.Meta %v", pce2.Call.Meta)
	}
	pce2.Call.Meta["x"] = 1
	if _, ok := p.Meta["x"]; ok {
		t.Fatal("the new PendingCall shares its Meta with the one resumed")
	}
	// A Client without middleware keeps the Meta of the call it resumes.
	plain := memClient(t, f.s, nil)
	delete(pce2.Call.Meta, "x")
	_, err = plain.Resume(context.Background(), pce2.Call, InputResponses{
		"capital": json.RawMessage(`{"role":"assistant","model":"m","content":[{"type":"text","text":"Paris"}]}`),
		"roots":   json.RawMessage(`{"roots":[]}`),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	forever := &PendingCall{Method: MethodToolsCall, Name: "forever", Meta: Meta{"traceparent": "kept"}}
	_, err = plain.Resume(context.Background(), forever, nil, &CallOptions{Manual: true})
	if !errors.As(err, &pce) || pce.Call.Meta["traceparent"] != "kept" {
		t.Fatalf("without middleware: %v %v", err, pce)
	}
}

// LogClientRequests logs method, target, round, version, transport,
// duration and outcome of each request, never params, answers, state
// or _meta.
func TestLogClientRequestsLogsMethodTargetDurationOutcome(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	f := newClientFixture(t)
	c := memClient(t, f.s, fixtureHandlers(&ClientOptions{Middleware: []ClientMiddleware{LogClientRequests(logger)}}))
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "three_rounds", map[string]string{"nonce": "secret-nonce"}, &CallOptions{Meta: Meta{"traceparent": "secret-trace"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "no_such_tool", nil, nil); err == nil {
		t.Fatal("no error")
	}
	if _, err := c.ReadResource(ctx, "test://static", nil); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.CallTool(cctx, "slow", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 7 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.Bytes())
	}
	want := []struct {
		method, tool, outcome string
		round                 float64
		level                 string
	}{
		{MethodToolsCall, "three_rounds", "input_required", 1, "INFO"},
		{MethodToolsCall, "three_rounds", "input_required", 2, "INFO"},
		{MethodToolsCall, "three_rounds", "ok", 3, "INFO"},
		{MethodToolsList, "", "ok", 0, "INFO"},
		{MethodToolsCall, "no_such_tool", "error", 1, "WARN"},
		{MethodResourcesRead, "", "ok", 1, "INFO"},
		{MethodToolsCall, "slow", "cancelled", 1, "INFO"},
	}
	for i, w := range want {
		l := lines[i]
		if l["msg"] != "mcp client request" || l["method"] != w.method || l["outcome"] != w.outcome || l["level"] != w.level ||
			l["protocol"] != LatestProtocolVersion || l["transport"] != "memory" {
			t.Errorf("line %d: %v, want %+v", i, l, w)
		}
		if w.tool != "" && l["tool"] != w.tool {
			t.Errorf("line %d: tool %v", i, l["tool"])
		}
		if r, _ := l["round"].(float64); r != w.round {
			t.Errorf("line %d: round %v, want %v", i, l["round"], w.round)
		}
		if _, ok := l["duration"]; !ok {
			t.Errorf("line %d: no duration", i)
		}
	}
	if lines[0]["inputRequests"] != 1.0 || lines[1]["inputRequests"] != 2.0 {
		t.Errorf("inputRequests %v %v", lines[0]["inputRequests"], lines[1]["inputRequests"])
	}
	if code, _ := lines[4]["code"].(float64); int(code) != CodeInvalidParams && int(code) != CodeMethodNotFound {
		t.Errorf("code %v", lines[4]["code"])
	}
	if lines[5]["uri"] != "test://static" {
		t.Errorf("uri %v", lines[5]["uri"])
	}
	for _, secret := range []string{"secret-nonce", "secret-trace", "Ada", "Paris", "quoted", "requestState", "arguments"} {
		if bytes.Contains(buf.Bytes(), []byte(secret)) {
			t.Errorf("the log holds %q:\n%s", secret, buf.Bytes())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

type otherCtxKey struct{}

// Without middleware and without extra _meta a call allocates what it
// did before observability existed (the client side of one tools/call,
// against a responder that allocates nothing). With WithMeta alone it
// allocates no more than with any other context value: the members are
// checked and encoded once, by WithMeta.
func TestAllocsClientCallWithoutMiddleware(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	c := cannedServer(t, "", cannedComplete)
	bg := context.Background()
	var failed atomic.Bool
	measure := func(ctx context.Context) float64 {
		return testing.AllocsPerRun(200, func() {
			if _, err := c.CallTool(ctx, "echo", benchArgs, nil); err != nil {
				failed.Store(true)
			}
		})
	}
	plain := measure(bg)
	valued := measure(context.WithValue(bg, otherCtxKey{}, 1))
	withMeta := measure(WithMeta(bg, Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}))
	if failed.Load() {
		t.Fatal("a call failed")
	}
	const budget = 23 // measured: 23 before observability existed, and after
	if plain > budget {
		t.Errorf("one tools/call: %.0f allocations, budget %d", plain, budget)
	}
	if withMeta > valued {
		t.Errorf("one tools/call with WithMeta: %.0f allocations, %.0f with another context value", withMeta, valued)
	}
	if testing.Verbose() {
		t.Logf("one tools/call: %.0f allocations; %.0f with WithMeta, %.0f with another context value", plain, withMeta, valued)
	}
}
