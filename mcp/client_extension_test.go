package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// extClientTransports are the transports and eras a custom method is
// called over: Streamable HTTP and a byte stream, each on 2026-07-28 and
// on a 2025-11-25 session.
var extClientTransports = []struct {
	name   string
	legacy bool
	client func(t *testing.T, s *Server, opts *ClientOptions) *Client
}{
	{"http", false, func(t *testing.T, s *Server, o *ClientOptions) *Client { return httpClient(t, s, nil, o) }},
	{"stdio", false, func(t *testing.T, s *Server, o *ClientOptions) *Client { return stdioClient(t, s, o) }},
	{"http-2025-11-25", true, func(t *testing.T, s *Server, o *ClientOptions) *Client {
		o.Mode = ModeLegacy
		return httpClient(t, s, nil, o)
	}},
	{"stdio-2025-11-25", true, func(t *testing.T, s *Server, o *ClientOptions) *Client {
		o.Mode = ModeLegacy
		return stdioClient(t, s, o)
	}},
}

// extClientOptions declares the search extension and confirms every
// elicitation.
func extClientOptions() *ClientOptions {
	return &ClientOptions{
		Extensions: &ClientExtensions{Declared: map[string]json.RawMessage{extSearch: nil}},
		Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
			return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"ok": true}}, nil
		},
	}
}

func TestClientCallsACustomMethod(t *testing.T) {
	t.Parallel()
	for _, tr := range extClientTransports {
		t.Run(tr.name, func(t *testing.T) {
			s, _ := newExtServer(t, nil)
			c := tr.client(t, s, extClientOptions())
			ctx := context.Background()
			res, err := c.CallMethod(ctx, &MethodCall{Method: mQuery, Params: map[string]any{"query": "go"}}, nil)
			if err != nil {
				t.Fatalf("CallMethod: %v", err)
			}
			if res.ResultType != ResultComplete {
				t.Errorf("ResultType = %q, want complete", res.ResultType)
			}
			var out searchOut
			if err := json.Unmarshal(res.Result, &out); err != nil || out.Query != "go" || len(out.Hits) != 1 || out.Hits[0] != "go-1" {
				t.Errorf("result = %s (%v), want the query echoed with one hit", res.Result, err)
			}
			// The typed form decodes the same result.
			typed, err := CallMethodAs[searchOut](ctx, c, &MethodCall{Method: mQuery, Params: json.RawMessage(`{"query":"rt","limit":2}`)}, nil)
			if err != nil || typed.Query != "rt" || typed.Hits[0] != "rt-1" {
				t.Errorf("CallMethodAs[searchOut] = %+v, %v", typed, err)
			}
			if !tr.legacy && !strings.Contains(string(res.Result), `"resultType":"complete"`) {
				t.Errorf("a 2026-07-28 result lacks its resultType: %s", res.Result)
			}
		})
	}
}

func TestClientCarrierCustomMethodIsCompletedByTheCallLoop(t *testing.T) {
	t.Parallel()
	for _, tr := range extClientTransports {
		t.Run(tr.name, func(t *testing.T) {
			s, runs := newExtServer(t, nil)
			var mu sync.Mutex
			var asked []string
			opts := extClientOptions()
			opts.Elicitation = func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
				mu.Lock()
				asked = append(asked, r.Message)
				mu.Unlock()
				return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"ok": true}}, nil
			}
			c := tr.client(t, s, opts)
			out, err := CallMethodAs[map[string]any](context.Background(), c,
				&MethodCall{Method: mDelete, Params: map[string]any{"index": "books"}, TargetMember: "index", Carrier: true}, nil)
			if err != nil {
				t.Fatalf("CallMethod: %v", err)
			}
			if (*out)["deleted"] != true || (*out)["index"] != "books" {
				t.Errorf("result = %v, want deleted books", *out)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || asked[0] != "Delete index books?" {
				t.Errorf("the client was asked %q, want the one confirmation", asked)
			}
			want := int32(2) // asked, then answered on the retry
			if tr.legacy {
				want = 1 // a session asks live, within the one request
			}
			if got := runs.Load(); got != want {
				t.Errorf("the handler ran %d times, want %d", got, want)
			}
		})
	}
}

func TestClientCarrierCustomMethodInManualModeContinuesWithCallOptions(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	opts := extClientOptions()
	opts.Elicitation = nil
	opts.Capabilities = &ClientCapabilities{Elicitation: &ElicitationCapabilities{Form: json.RawMessage(`{}`)}}
	c := httpClient(t, s, nil, opts)
	ctx := context.Background()
	call := &MethodCall{Method: mDelete, Params: map[string]any{"index": "books"}, TargetMember: "index", Carrier: true}
	_, err := c.CallMethod(ctx, call, &CallOptions{Manual: true})
	var pe *PendingCallError
	if !errors.As(err, &pe) {
		t.Fatalf("Manual call: err = %v, want a *PendingCallError", err)
	}
	if pe.Call.Method != mDelete || pe.Call.Name != "books" || !strings.Contains(string(pe.Call.Arguments), `"index":"books"`) || len(pe.Call.InputRequests) != 1 {
		t.Fatalf("PendingCall = %+v, want the method, its target, its params and one question", pe.Call)
	}
	responses := InputResponses{}
	for k := range pe.Call.InputRequests {
		responses[k] = json.RawMessage(`{"action":"accept","content":{"ok":true}}`)
	}
	res, err := c.CallMethod(ctx, call, &CallOptions{InputResponses: responses, RequestState: pe.Call.RequestState})
	if err != nil {
		t.Fatalf("continuing: %v", err)
	}
	if !strings.Contains(string(res.Result), `"deleted":true`) {
		t.Errorf("result = %s, want deleted", res.Result)
	}
}

func TestClientCustomMethodOfAnUndeclaredExtensionIsMissingCapability(t *testing.T) {
	t.Parallel()
	s, runs := newExtServer(t, nil)
	c := httpClient(t, s, nil, &ClientOptions{})
	_, err := c.CallMethod(context.Background(), &MethodCall{Method: mQuery, Params: map[string]any{"query": "go"}}, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeMissingRequiredCapability || !strings.Contains(string(e.Data), extSearch) {
		t.Fatalf("err = %v, want -32021 naming %s", err, extSearch)
	}
	if runs.Load() != 0 {
		t.Error("the handler ran")
	}
}

func TestClientDeclaresItsExtensionsOnEveryModernRequest(t *testing.T) {
	t.Parallel()
	c := memClient(t, NewServer(Implementation{Name: "s", Version: "1"}, nil), &ClientOptions{
		Extensions: &ClientExtensions{Declared: map[string]json.RawMessage{extSearch: json.RawMessage(`{"v":2}`), "com.example/bad": json.RawMessage(`[1]`), "io.modelcontextprotocol/tasks": nil}},
	})
	caps := c.modernCapabilities()
	if string(caps.Extensions[extSearch]) != `{"v":2}` || string(caps.Extensions["io.modelcontextprotocol/tasks"]) != `{}` || string(caps.Extensions["com.example/bad"]) != `{}` {
		t.Errorf("extensions = %v, want the declared settings, {} for nil settings, and {} for settings that are not an object", caps.Extensions)
	}
	if legacy := c.legacyCapabilities(); legacy.Extensions != nil {
		t.Errorf("initialize declares extensions %v; earlier revisions have none", legacy.Extensions)
	}
}

func TestClientRefusesCallsThatAreNotCustomMethods(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	c := httpClient(t, s, nil, extClientOptions())
	for _, call := range []*MethodCall{
		{Method: MethodToolsCall},
		{Method: "notifications/x"},
		{Method: "rpc.x"},
		{Method: "has space"},
		{Method: mQuery, Params: []int{1}},
		{Method: mQuery, Params: map[string]any{"_meta": map[string]any{}}},
		{Method: mDelete, Params: map[string]any{"index": "a", "requestState": "x"}, Carrier: true, TargetMember: "index"},
		{Method: mDelete, Params: map[string]any{"name": "a"}, TargetMember: "index"},
		{Method: mDelete, Params: map[string]any{"index": 3}, TargetMember: "index"},
	} {
		if _, err := c.CallMethod(context.Background(), call, nil); !errors.Is(err, errCustomMethod) {
			t.Errorf("CallMethod(%+v) = %v, want errCustomMethod", call, err)
		}
	}
}

func TestClientNonCarrierCustomMethodAnsweredInputRequiredIsInvalid(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	c := httpClient(t, s, nil, extClientOptions())
	// The server's delete asks; a call that does not say it may is refused.
	_, err := c.CallMethod(context.Background(), &MethodCall{Method: mDelete, Params: map[string]any{"index": "a"}, TargetMember: "index"}, nil)
	if !errors.Is(err, ErrInputRequiredNotAllowed) {
		t.Fatalf("err = %v, want ErrInputRequiredNotAllowed", err)
	}
}

func TestClientReadsAnExtensionsOwnResultType(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	s.AddMethod(&MethodSpec{Name: "com.example/search/later", Extension: extSearch}, func(ctx context.Context, r *ExtensionRequest) (Result, error) {
		return &ExtensionResult{Value: map[string]any{"ticket": "t1"}, ResultType: "com.example/queued"}, nil
	})
	c := httpClient(t, s, nil, extClientOptions())
	call := &MethodCall{Method: "com.example/search/later"}
	res, err := c.CallMethod(context.Background(), call, nil)
	if err != nil || res.ResultType != "com.example/queued" || !strings.Contains(string(res.Result), `"ticket":"t1"`) {
		t.Fatalf("CallMethod = %+v, %v; want the extension's resultType and its object", res, err)
	}
	if _, err := CallMethodAs[map[string]any](context.Background(), c, call, nil); !errors.Is(err, ErrUnknownResultType) {
		t.Errorf("typed CallMethod of a non-complete result: err = %v, want ErrUnknownResultType", err)
	}
}

func TestClientCustomMethodsRunThroughClientMiddleware(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	var mu sync.Mutex
	var seen []string
	opts := extClientOptions()
	opts.Middleware = []ClientMiddleware{func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, r *ClientRequest) (json.RawMessage, error) {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.Target)
			mu.Unlock()
			return next(ctx, r)
		}
	}}
	c := httpClient(t, s, nil, opts)
	if _, err := c.CallMethod(context.Background(), &MethodCall{Method: mDelete, Params: map[string]any{"index": "books"}, TargetMember: "index", Carrier: true}, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != mDelete+" books" || seen[1] != mDelete+" books" {
		t.Errorf("middleware saw %q, want both legs of the call with their target", seen)
	}
}

func TestClientReceivesAnExtensionsNotifications(t *testing.T) {
	t.Parallel()
	for _, tr := range extClientTransports {
		t.Run(tr.name, func(t *testing.T) {
			s, _ := newExtServer(t, nil)
			s.AddMethod(&MethodSpec{Name: "com.example/search/reindex", Extension: extSearch, Legacy: true}, func(ctx context.Context, r *ExtensionRequest) (Result, error) {
				for i := range 3 {
					if err := Notify(ctx, "com.example/search/progress", map[string]any{"step": i}); err != nil {
						return nil, err
					}
				}
				return EmptyResult{}, nil
			})
			var mu sync.Mutex
			var got []string
			opts := extClientOptions()
			opts.Extensions.OnNotification = func(method string, params json.RawMessage) {
				mu.Lock()
				got = append(got, method+" "+string(params))
				mu.Unlock()
			}
			c := tr.client(t, s, opts)
			if _, err := c.CallMethod(context.Background(), &MethodCall{Method: "com.example/search/reindex"}, nil); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{`com.example/search/progress {"step":0}`, `com.example/search/progress {"step":1}`, `com.example/search/progress {"step":2}`}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("notifications = %q, want %q (in order, before the response)", got, want)
			}
		})
	}
}

func TestClientListenReceivesTheBroadcastsOfADeclaredExtension(t *testing.T) {
	t.Parallel()
	for _, tr := range extClientTransports[:2] {
		t.Run(tr.name, func(t *testing.T) {
			s, _ := newExtServer(t, nil)
			var onNote []string
			var mu sync.Mutex
			opts := extClientOptions()
			opts.Extensions.OnNotification = func(method string, _ json.RawMessage) {
				mu.Lock()
				onNote = append(onNote, method)
				mu.Unlock()
			}
			c := tr.client(t, s, opts)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan *ListenNotification, 8)
			done := make(chan error, 1)
			go func() {
				done <- c.Listen(ctx, SubscriptionFilter{ToolsListChanged: true}, func(n *ListenNotification) { got <- n })
			}()
			next := func() *ListenNotification {
				t.Helper()
				select {
				case n := <-got:
					return n
				case <-time.After(5 * time.Second):
					t.Fatal("no notification")
				}
				return nil
			}
			if n := next(); n.Method != NotificationSubscriptionsAck {
				t.Fatalf("first notification %s", n.Method)
			}
			if err := s.NotifyListeners(extSearch, "com.example/search/reindexed", map[string]any{"index": "logs"}); err != nil {
				t.Fatal(err)
			}
			n := next()
			if n.Method != "com.example/search/reindexed" || !strings.Contains(string(n.Params), `"index":"logs"`) {
				t.Fatalf("got %s %s, want the extension's broadcast", n.Method, n.Params)
			}
			cancel()
			<-done
			mu.Lock()
			defer mu.Unlock()
			if len(onNote) != 0 {
				t.Errorf("OnNotification got %q; a Listen stream's notifications go to Listen's callback", onNote)
			}
		})
	}
}

// FuzzClientCustomMethodCall holds the client's reading of a custom
// method's params and results to its contract: no panic; params it
// accepts are sent as the same object (with the target read from it);
// an answer is input_required only for a carrier.
func FuzzClientCustomMethodCall(f *testing.F) {
	f.Add([]byte(`{"index":"books","force":true}`), []byte(`{"resultType":"complete","deleted":true}`), true)
	f.Add([]byte(`{"index":"a\u0062"}`), []byte(`{"resultType":"input_required","requestState":"x"}`), false)
	f.Add([]byte(`{"_meta":{}}`), []byte(`{"resultType":7}`), true)
	f.Add([]byte(`{"index":3,"index":"x"}`), []byte(`[]`), false)
	f.Add([]byte(`{}`), []byte(`{"resultType":"com.example/queued"}`), false)
	f.Fuzz(func(t *testing.T, params, result []byte, carrier bool) {
		call := &MethodCall{Method: mDelete, Params: json.RawMessage(params), TargetMember: "index", Carrier: carrier}
		cc, err := newCustomCarrier(call)
		if err == nil {
			sent := append([]byte{'{'}, cc.custom.appendParams(nil, nil, nil)...)
			if len(sent) > 1 {
				sent[1] = ' '
			}
			sent = append(sent, '}')
			var a, b any
			if json.Unmarshal(sent, &a) != nil || json.Unmarshal(params, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("accepted params %q are sent as %q", params, sent)
			}
			if !cc.custom.hasTarget {
				t.Fatal("a call with a TargetMember has no target")
			}
		} else if !errors.Is(err, errCustomMethod) {
			t.Fatalf("params %q: %v is not errCustomMethod", params, err)
		}
		cu := &customCall{carrier: carrier}
		rt, err := cu.resultType(mDelete, result)
		if err == nil && rt == ResultInputRequired && !carrier {
			t.Fatalf("input_required accepted for a call that is not a carrier: %q", result)
		}
		if err == nil && rt == "" {
			t.Fatalf("empty resultType from %q", result)
		}
	})
}
