package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fixtures of the client tests: a real Server with tools that ask for
// input, reached over loopback HTTP or the in-memory pair.

// seenCall is what a fixture tool saw on one leg.
type seenCall struct {
	tool      string
	responses InputResponses
	state     string
	hasState  bool
	meta      RequestMeta
}

// clientFixture is a server whose tools record every leg they see.
type clientFixture struct {
	s  *Server
	mu sync.Mutex
	// calls are the legs seen, in order.
	calls []seenCall
}

func (f *clientFixture) record(r *CallToolRequest) {
	f.mu.Lock()
	f.calls = append(f.calls, seenCall{tool: r.Name, responses: r.InputResponses, state: r.RequestState, hasState: r.HasRequestState(), meta: r.Meta})
	f.mu.Unlock()
}

func (f *clientFixture) legs(tool string) []seenCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seenCall
	for _, c := range f.calls {
		if c.tool == tool {
			out = append(out, c)
		}
	}
	return out
}

var nameSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)

func newClientFixture(t testing.TB) *clientFixture {
	f := &clientFixture{s: NewServer(Implementation{Name: "client-fixture", Version: "1"}, &ServerOptions{PageSize: 2})}
	s := f.s
	tool := func(name string, schema string, h ToolHandler) {
		var in any
		if schema != "" {
			in = json.RawMessage(schema)
		}
		s.AddTool(&Tool{Name: name, InputSchema: in}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			f.record(r)
			return h(ctx, r)
		})
	}
	tool("echo", `{"type":"object","properties":{"text":{"type":"string"}}}`, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		var in struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(r.Arguments, &in)
		return TextResult(in.Text), nil
	})
	// three_rounds: elicitation, then sampling + roots together, then
	// complete. The state names the round and carries the flow's nonce
	// (an argument), so a leg of another flow would be caught.
	tool("three_rounds", `{"type":"object","properties":{"nonce":{"type":"string"}}}`, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		var in struct {
			Nonce string `json:"nonce"`
		}
		_ = json.Unmarshal(r.Arguments, &in)
		switch {
		case !r.HasRequestState():
			if r.InputResponses != nil {
				return ErrorResult("first leg carried inputResponses"), nil
			}
			return &InputRequiredResult{
				InputRequests: map[string]InputRequest{"name": &ElicitRequest{Message: "Your name?", RequestedSchema: nameSchema}},
				RequestState:  "r1|" + in.Nonce + `|"quoted" \ state`,
			}, nil
		case r.RequestState == "r1|"+in.Nonce+`|"quoted" \ state`:
			ans, err := r.InputResponses.Elicit("name")
			if err != nil || len(r.InputResponses) != 1 {
				return ErrorResult(fmt.Sprintf("round 2 wants exactly the name answer, got %v (%v)", r.InputResponses, err)), nil
			}
			name, _ := ans.Content["name"].(string)
			return &InputRequiredResult{
				InputRequests: map[string]InputRequest{
					"capital": &CreateMessageRequest{MaxTokens: 10, Messages: []SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: "Capital of France?"}}}}},
					"roots":   &ListRootsRequest{},
				},
				RequestState: "r2|" + in.Nonce + "|" + name,
			}, nil
		case strings.HasPrefix(r.RequestState, "r2|"+in.Nonce+"|"):
			name := strings.TrimPrefix(r.RequestState, "r2|"+in.Nonce+"|")
			s, err1 := r.InputResponses.Sampling("capital")
			roots, err2 := r.InputResponses.Roots("roots")
			if err1 != nil || err2 != nil || len(r.InputResponses) != 2 {
				return ErrorResult(fmt.Sprintf("round 3 wants capital and roots: %v %v", err1, err2)), nil
			}
			text := s.Content[0].(*TextContent).Text
			return TextResult(fmt.Sprintf("Hello %s, capital %s, %d roots, nonce %s", name, text, len(roots.Roots), in.Nonce)), nil
		}
		return nil, NewError(CodeInvalidParams, "unexpected requestState "+r.RequestState, nil)
	})
	tool("forever", "", func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		return &InputRequiredResult{InputRequests: map[string]InputRequest{"again": &ElicitRequest{Message: "Again?"}}}, nil
	})
	// state_only: n state-only rounds, then one round asking a question,
	// then m state-only rounds, then complete (n and m are arguments).
	tool("state_only", `{"type":"object","properties":{"n":{"type":"integer"},"m":{"type":"integer"}}}`, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		var in struct{ N, M int }
		_ = json.Unmarshal(r.Arguments, &in)
		var round int
		fmt.Sscanf(r.RequestState, "s%d", &round)
		round++
		switch {
		case round <= in.N || (round > in.N+1 && round <= in.N+1+in.M):
			return &InputRequiredResult{RequestState: fmt.Sprintf("s%d", round)}, nil
		case round == in.N+1:
			return &InputRequiredResult{InputRequests: map[string]InputRequest{"go": &ElicitRequest{Message: "Go on?"}}, RequestState: fmt.Sprintf("s%d", round)}, nil
		}
		return TextResult(fmt.Sprintf("done after %d rounds", round)), nil
	})
	tool("ask_sampling", "", func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		return &InputRequiredResult{InputRequests: map[string]InputRequest{"s": &CreateMessageRequest{MaxTokens: 5}}}, nil
	})
	tool("two_elicits", "", func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if r.InputResponses != nil {
			return TextResult("answered"), nil
		}
		return &InputRequiredResult{InputRequests: map[string]InputRequest{
			"fails": &ElicitRequest{Message: "fail"}, "blocks": &ElicitRequest{Message: "block"}}}, nil
	})
	tool("slow", "", func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		select {
		case <-ctx.Done():
			f.mu.Lock()
			f.calls = append(f.calls, seenCall{tool: "slow-cancelled"})
			f.mu.Unlock()
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return TextResult("late"), nil
		}
	})
	tool("progress", "", func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		for i := 0; i <= 2; i++ {
			ReportProgress(ctx, float64(i*50), 100, "step")
		}
		logMessage(ctx, LevelWarning, "fixture", "a warning")
		return TextResult("done"), nil
	})
	tool("region", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"},"dry":{"type":"boolean","x-mcp-header":"Dry"},"opts":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`,
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) { return TextResult("ok"), nil })
	s.AddPrompt(&Prompt{Name: "asking_prompt", Arguments: []PromptArgument{{Name: "topic", Required: true}}},
		func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
			ans, err := r.InputResponses.Elicit("audience")
			if err != nil {
				return &InputRequiredResult{InputRequests: map[string]InputRequest{"audience": &ElicitRequest{Message: "Audience?"}}}, nil
			}
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: fmt.Sprintf("%s for %v", r.Arguments["topic"], ans.Content["name"])}}}}, nil
		})
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://ask/{id}", Name: "ask"},
		func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
			if _, err := r.InputResponses.Roots("where"); err != nil {
				return &InputRequiredResult{InputRequests: map[string]InputRequest{"where": &ListRootsRequest{}}, RequestState: "rs"}, nil
			}
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "item " + r.Var("id")}}}, nil
		})
	s.AddResource(&Resource{URI: "test://static", Name: "static"}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "static"}}}, nil
	})
	return f
}

// fixtureHandlers answer the fixture's questions: name "Ada", capital
// "Paris", two roots.
func fixtureHandlers(o *ClientOptions) *ClientOptions {
	if o == nil {
		o = &ClientOptions{}
	}
	o.Elicitation = func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
		return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
	}
	o.Sampling = func(ctx context.Context, r *CreateMessageRequest) (*CreateMessageResult, error) {
		return &CreateMessageResult{Role: RoleAssistant, Model: "m", Content: []Content{&TextContent{Text: "Paris"}}}, nil
	}
	o.Roots = func(ctx context.Context, r *ListRootsRequest) (*ListRootsResult, error) {
		return &ListRootsResult{Roots: []Root{{URI: "file:///a"}, {URI: "file:///b"}}}, nil
	}
	return o
}

// clientTransports runs fn over loopback HTTP and over the in-memory pair.
func clientTransports(t *testing.T, s *Server, opts *ClientOptions, fn func(t *testing.T, c *Client)) {
	t.Run("http", func(t *testing.T) { fn(t, httpClient(t, s, nil, opts)) })
	t.Run("memory", func(t *testing.T) { fn(t, memClient(t, s, opts)) })
}

// httpClient serves s on a loopback listener, wrapped by wrap (may be
// nil), and returns a client for it.
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

// memClient serves s with ServeStream on the in-memory pair.
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

// rawHTTPClient returns a client for a hand-written handler.
func rawHTTPClient(t testing.TB, h http.HandlerFunc, hopts *HTTPClientOptions, opts *ClientOptions) *Client {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c := NewClient(NewHTTPClientTransport(ts.URL+"/mcp", hopts), opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// rpcIn is a request as a raw handler reads it.
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

// writeResult answers in with result (a JSON object text).
func writeResult(w http.ResponseWriter, in *rpcIn, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, in.ID, result)
}
