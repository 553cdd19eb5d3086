package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The public seams an extension package is built on (extension_seam.go,
// client_extension_seam.go), each tested on its own; mcp/tasks tests
// them together.

// A WrapTool wrapper applies after every other option, whatever their
// order: it gets the handler a typed tool's decoding and
// WithOutputValidation built, so what it sees of a call (and what it
// answers later, a task's result) is checked as a synchronous call.
func TestWrappedToolsRunAfterEveryOtherOption(t *testing.T) {
	t.Parallel()
	type out struct {
		N int `json:"n"`
	}
	s := NewServer(Implementation{Name: "wrap", Version: "1"}, nil)
	var mu sync.Mutex
	var sawErr error
	wrap := WrapTool(func(next ToolHandler) ToolHandler {
		return func(ctx context.Context, req *CallToolRequest) (ToolResponse, error) {
			resp, err := next(ctx, req)
			mu.Lock()
			sawErr = err
			mu.Unlock()
			return resp, err
		}
	})
	AddTypedTool(s, &Tool{Name: "bad", OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"string"}}}`)},
		func(ctx context.Context, req *CallToolRequest, in struct{}) (out, error) { return out{N: 1}, nil },
		wrap, WithOutputValidation())
	v := post(t, NewHTTPHandler(s, nil), req(1, MethodToolsCall, `"name":"bad","arguments":{}`)).last(t)
	if errorCode(t, v) != CodeInternalError {
		t.Fatalf("an invalid structured result: %v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if sawErr == nil || !strings.Contains(sawErr.Error(), "output") {
		t.Fatalf("the wrapper saw %v, want the output validation's error (it must wrap the validated handler)", sawErr)
	}
}

// A tool (through a wrapper) may answer with an *ExtensionResult of a
// result type its extension defines: resultType and the server's
// identity first, then the value's members.
func TestAToolMayAnswerWithAnExtensionsResultType(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "ext", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "job"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult("sync"), nil },
		WrapTool(func(ToolHandler) ToolHandler {
			return func(context.Context, *CallToolRequest) (ToolResponse, error) {
				return &ExtensionResult{ResultType: "com.example/job", Value: map[string]string{"jobId": "j1"}}, nil
			}
		}))
	r := post(t, NewHTTPHandler(s, nil), req(1, MethodToolsCall, `"name":"job","arguments":{}`))
	want := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"com.example/job",` + string(s.serverInfoMeta) + `,"jobId":"j1"}}`
	if got := strings.TrimSpace(string(r.messages[len(r.messages)-1])); got != want {
		t.Fatalf("answer\n%s\nwant\n%s", got, want)
	}
}

// detachAsker records the questions of a detached context and answers
// them.
type detachAsker struct {
	mu  sync.Mutex
	got []Question
	ans json.RawMessage
}

func (a *detachAsker) Ask(ctx context.Context, q *Question) (json.RawMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, *q)
	q.Key += "_x" // an asker may rename the key it asks under
	return a.ans, nil
}

// Detach gives work that goes on after the answer a context that keeps
// the request's values but not its cancellation, that can no longer send
// on the request's stream, and whose questions go, checked, to the
// extension's Asker: the capability before (the asker is not asked when
// the request did not declare it), the answer after (a bad one is an
// *InvalidAnswerError under the key the asker used).
func TestADetachedContextOutlivesTheRequestAndAsksTheExtension(t *testing.T) {
	t.Parallel()
	type name struct {
		Name string `json:"name"`
	}
	type outcome struct {
		live      bool
		transport TransportKind
		name      string
		err       error
	}
	s := NewServer(Implementation{Name: "detach", Version: "1"}, nil)
	a := &detachAsker{ans: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}
	done := make(chan outcome, 1)
	proceed := make(chan struct{}, 1)
	s.AddTool(&Tool{Name: "bg"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		d := Detach(ctx, a)
		go func() {
			<-proceed // the client has the answer: the request is over
			info, _ := RequestInfoFrom(d)
			ans, err := Elicit[name](d, "Who?", WithKey("who"))
			done <- outcome{live: d.Err() == nil, transport: info.Transport, name: ans.Content.Name, err: err}
		}()
		return TextResult("started"), nil
	})
	url := loopback(t, s)
	call := func(body string) outcome {
		t.Helper()
		if _, msgs := postTo(t, url, body, headersFor(t, body)); result(t, lastMsg(t, msgs))["isError"] == true {
			t.Fatalf("call: %s", msgs)
		}
		proceed <- struct{}{}
		return <-done
	}
	o := call(req(1, MethodToolsCall, `"name":"bg","arguments":{}`))
	if !o.live || o.transport != "" || o.err != nil || o.name != "Ada" {
		t.Fatalf("detached: %+v", o)
	}
	a.mu.Lock()
	if len(a.got) != 1 || a.got[0].Key != "who" || !strings.Contains(string(a.got[0].Request), `"method":"elicitation/create"`) {
		t.Fatalf("asker got %+v", a.got)
	}
	a.mu.Unlock()

	// A bad answer is reported under the asker's key.
	a.ans = json.RawMessage(`{"action":"accept","content":{"name":7}}`)
	o = call(req(2, MethodToolsCall, `"name":"bg","arguments":{}`))
	var ia *InvalidAnswerError
	if !errors.As(o.err, &ia) || ia.Key != "who_x" {
		t.Fatalf("a bad answer: %v", o.err)
	}
	// Without the capability the asker is not asked.
	o = call(extRequest(3, MethodToolsCall, `{}`, `"name":"bg","arguments":{}`))
	a.mu.Lock()
	n := len(a.got)
	a.mu.Unlock()
	if ErrorCode(o.err) != CodeMissingRequiredCapability || n != 2 {
		t.Fatalf("without elicitation: %v (asker asked %d times)", o.err, n)
	}
}

// ExtensionDeclared is the request's own negotiation: true for a
// 2026-07-28 request naming the extension, false for one that does not,
// on a session of an earlier revision and outside a request.
func TestExtensionDeclaredFollowsTheRequest(t *testing.T) {
	t.Parallel()
	const ext = "com.example/x"
	s := NewServer(Implementation{Name: "decl", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "decl"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		return TextResult(map[bool]string{true: "yes", false: "no"}[ExtensionDeclared(ctx, ext)]), nil
	})
	h := NewHTTPHandler(s, nil)
	for caps, want := range map[string]string{`{"extensions":{"` + ext + `":{}}}`: "yes", `{"extensions":{"com.example/y":{}}}`: "no", `{}`: "no"} {
		v := post(t, h, extRequest(1, MethodToolsCall, caps, `"name":"decl","arguments":{}`)).last(t)
		if got := toolText(t, result(t, v)); got != want {
			t.Errorf("caps %s: %s, want %s", caps, got, want)
		}
	}
	c := newStdioRevClient(t, s, "2025-11-25", `{"extensions":{"`+ext+`":{}}}`)
	if res, _, _ := c.call(MethodToolsCall, `{"name":"decl","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"`+ext+`":{}}}}}`); toolText(t, result(t, res)) != "no" {
		t.Errorf("a session: %v", res)
	}
	if ExtensionDeclared(context.Background(), ext) {
		t.Error("declared outside a request")
	}
}

// toolText is the text of a CallToolResult's first block.
func toolText(t testing.TB, r map[string]any) string {
	t.Helper()
	c, _ := r["content"].([]any)
	if len(c) == 0 {
		t.Fatalf("no content: %v", r)
	}
	s, _ := c[0].(map[string]any)["text"].(string)
	return s
}

// Close runs what extensions registered with OnClose, on every Close.
func TestCloseRunsTheExtensionsCloseHooks(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "close", Version: "1"}, nil)
	var n int
	s.OnClose(func() { n++ })
	s.OnClose(func() { n += 10 })
	_ = s.Close()
	_ = s.Close()
	if n != 22 {
		t.Fatalf("hooks ran to %d, want 22 (both hooks, twice)", n)
	}
}

// MarshalResult and Principal give an extension the bytes the server
// sends and the identity sealed state is bound to.
func TestServerGivesExtensionsItsResultBytesAndPrincipal(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "m", Version: "1"}, &ServerOptions{RequestState: RequestStateOptions{Principal: func(ctx context.Context) (string, error) { return "p1", nil }}})
	b, err := s.MarshalResult(TextResult("hi"))
	if err != nil || string(b) != `{"resultType":"complete",`+string(s.serverInfoMeta)+`,"content":[{"type":"text","text":"hi"}]}` {
		t.Fatalf("MarshalResult: %s %v", b, err)
	}
	if p, err := s.Principal(context.Background()); p != "p1" || err != nil {
		t.Fatalf("Principal: %q %v", p, err)
	}
	var got []Event
	o := NewServer(Implementation{Name: "m", Version: "1"}, &ServerOptions{Observer: func(e Event) { got = append(got, e) }})
	o.Report(Event{Kind: EventExtension, Extension: "com.example/x", Name: "x.done", Status: "ok"})
	if len(got) != 1 || got[0].Name != "x.done" || o.Logger() == nil {
		t.Fatalf("Report: %+v", got)
	}
}

// The client's call loop hands a result type an extension defines to
// the extension's ResultHandler, whose follow-up requests (Client.Request
// on behalf of the call) carry the call's Meta and CallInfo, and whose
// answer is the call's result; without a handler the type is an
// invalid response.
func TestTheCallLoopHandsAnExtensionsResultTypeToIt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	h := func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		mu.Lock()
		bodies = append(bodies, string(in.raw))
		mu.Unlock()
		switch in.Method {
		case MethodToolsCall:
			writeResult(w, in, `{"resultType":"com.example/job","jobId":"j1"}`)
		case "com.example/job/get":
			writeResult(w, in, `{"resultType":"complete","content":[{"type":"text","text":"done j1"}]}`)
		}
	}
	var rc recorder
	follow := func(ctx context.Context, call *ResultCall) (json.RawMessage, error) {
		var seed struct {
			JobID string `json:"jobId"`
		}
		if call.Method != MethodToolsCall || call.Target != "job" || json.Unmarshal(call.Result, &seed) != nil {
			return nil, errors.New("unexpected call")
		}
		res, err := call.Client.Request(ctx, &MethodCall{Method: "com.example/job/get", Params: map[string]string{"jobId": seed.JobID}, TargetMember: "jobId"}, call)
		if err != nil {
			return nil, err
		}
		return res.Result, nil
	}
	c := rawHTTPClient(t, h, nil, &ClientOptions{
		Extensions: &ClientExtensions{Results: map[ResultType]ResultHandler{"com.example/job": follow}},
		Middleware: []ClientMiddleware{rc.middleware},
	})
	res, err := c.CallTool(context.Background(), "job", nil, &CallOptions{Meta: Meta{"traceparent": "tp"}})
	if err != nil || resultText(t, res) != "done j1" {
		t.Fatalf("%v %v", res, err)
	}
	seen := rc.all()
	if len(seen) != 2 || seen[1].method != "com.example/job/get" || seen[1].target != "j1" || seen[1].call == nil || seen[1].call != seen[0].call {
		t.Fatalf("middleware saw %+v", seen)
	}
	mu.Lock()
	for _, b := range bodies {
		if !strings.Contains(b, `"traceparent":"tp"`) {
			t.Errorf("a request of the call without its Meta: %s", b)
		}
	}
	mu.Unlock()
	plain := rawHTTPClient(t, h, nil, nil)
	if _, err := plain.CallTool(context.Background(), "job", nil, nil); !errors.Is(err, ErrUnknownResultType) {
		t.Fatalf("without a handler: %v", err)
	}
}

// Client.Answer answers input requests with the client's handlers as a
// round does, keys in order; one that does not decode is an invalid
// response of the method named.
func TestClientAnswersAnExtensionsInputRequests(t *testing.T) {
	t.Parallel()
	c := NewClient(NewHTTPClientTransport("http://127.0.0.1:1/mcp", nil), fixtureHandlers(nil))
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := c.Answer(ctx, "com.example/x/get", map[string]json.RawMessage{
		"b": json.RawMessage(`{"method":"roots/list","params":{}}`),
		"a": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Who?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`),
	})
	if err != nil || !strings.HasPrefix(string(b), `{"a":{"action":"accept"`) || !strings.Contains(string(b), `,"b":{"roots":[`) {
		t.Fatalf("answers %s %v", b, err)
	}
	_, err = c.Answer(ctx, "com.example/x/get", map[string]json.RawMessage{"a": json.RawMessage(`{"method":"nope"}`)})
	var ie *InvalidResponseError
	if !errors.As(err, &ie) || ie.Method != "com.example/x/get" {
		t.Fatalf("an unknown request: %v", err)
	}
}
