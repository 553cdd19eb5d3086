package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// ---- requests ----

const testCaps = `{"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}},"roots":{}}`

// metaJSON is a valid 2026-07-28 _meta object.
func metaJSON(caps string) string {
	if caps == "" {
		caps = "{}"
	}
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}`
}

// req builds a request with a valid _meta envelope; params is the JSON
// object of the other params members (without braces), may be empty.
func req(id int, method, params string) string {
	p := `"_meta":` + metaJSON(testCaps)
	if params != "" {
		p += "," + params
	}
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"` + method + `","params":{` + p + `}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// ---- HTTP ----

type httpResult struct {
	status int
	header http.Header
	body   []byte
	// messages are the JSON-RPC messages of the body: one for a JSON
	// body, every data event for an SSE stream.
	messages [][]byte
}

// headersFor returns the standard headers matching body.
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
	if v, ok := m.Params.Meta[metaProtocolVersion].(string); ok {
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

func doHTTP(t testing.TB, h http.Handler, body string, hdr http.Header) *httpResult {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	for k, v := range hdr {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := &httpResult{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
	res.messages = wiretest.SplitMessages(w.Header().Get("Content-Type"), w.Body.Bytes())
	return res
}

// post sends body with matching headers and validates every message.
func post(t testing.TB, h http.Handler, body string) *httpResult {
	t.Helper()
	res := doHTTP(t, h, body, headersFor(t, body))
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	for _, msg := range res.messages {
		wiretest.CheckWire(t, m.Method, msg)
	}
	return res
}

// last returns the final message (the response) decoded.
func (r *httpResult) last(t testing.TB) map[string]any {
	t.Helper()
	if len(r.messages) == 0 {
		t.Fatalf("no message in response (status %d, body %q)", r.status, r.body)
	}
	var v map[string]any
	if err := json.Unmarshal(r.messages[len(r.messages)-1], &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func errorCode(t testing.TB, v map[string]any) int {
	t.Helper()
	e, ok := v["error"].(map[string]any)
	if !ok {
		t.Fatalf("expected an error, got %v", v)
	}
	return int(e["code"].(float64))
}

func result(t testing.TB, v map[string]any) map[string]any {
	t.Helper()
	r, ok := v["result"].(map[string]any)
	if !ok {
		t.Fatalf("expected a result, got %v", v)
	}
	return r
}

// ---- stream ----

// streamClient talks to ServeStream over the in-memory pair.
type streamClient struct {
	t     testing.TB
	conn  io.ReadWriteCloser
	lines chan []byte
	done  chan error
}

func newStreamClient(t testing.TB, s *Server) *streamClient {
	t.Helper()
	return newStreamClientIn(t, s, context.Background())
}

// newStreamClientIn is newStreamClient with the server's stream served
// in ctx.
func newStreamClientIn(t testing.TB, s *Server, ctx context.Context) *streamClient {
	t.Helper()
	ce, se := NewInMemoryTransports()
	c := &streamClient{t: t, conn: ce, lines: make(chan []byte, 1024), done: make(chan error, 1)}
	go func() { c.done <- s.ServeStream(ctx, se, se, nil); se.Close() }()
	go func() {
		sc := bufio.NewScanner(ce)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			c.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(c.lines)
	}()
	t.Cleanup(func() { ce.Close() })
	return c
}

func (c *streamClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// next returns the next line from the server, failing after a timeout.
func (c *streamClient) next() map[string]any {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatal("server closed the stream")
		}
		var v map[string]any
		if err := json.Unmarshal(l, &v); err != nil {
			c.t.Fatalf("bad line %q: %v", l, err)
		}
		return v
	case <-time.After(5 * time.Second):
		c.t.Fatal("timed out waiting for a message")
	}
	return nil
}

// ---- fixture ----

// newTestServer returns a server with a few tools, prompts and resources.
func newTestServer(t testing.TB, opts *ServerOptions) *Server {
	s := NewServer(Implementation{Name: "test-server", Version: "1.0.0"}, opts)
	s.AddTool(&Tool{Name: "echo", Description: "echoes text", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			var in struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(r.Arguments, &in)
			return TextResult(in.Text), nil
		})
	s.AddTool(&Tool{Name: "ask", Description: "asks for a name", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			ans, err := r.InputResponses.Elicit("name")
			if err != nil || ans.Action != ElicitAccept || r.RequestState != "asked" {
				return &InputRequiredResult{
					InputRequests: map[string]InputRequest{"name": &ElicitRequest{Message: "Your name?",
						RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}},
					RequestState: "asked",
				}, nil
			}
			return TextResult("Hello, " + ans.Content["name"].(string)), nil
		})
	s.AddTool(&Tool{Name: "progress", Description: "reports progress"},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			for i := 0; i <= 2; i++ {
				if err := ReportProgress(ctx, float64(i*50), 100, ""); err != nil {
					return nil, err
				}
			}
			return TextResult("done"), nil
		})
	s.AddTool(&Tool{Name: "region", Description: "header mirrored",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"},"dry":{"type":"boolean","x-mcp-header":"Dry"}}}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) { return TextResult("ok"), nil })
	s.AddPrompt(&Prompt{Name: "greet", Description: "greets", Arguments: []PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: "Hello " + r.Arguments["who"]}}}}, nil
		})
	s.AddResource(&Resource{URI: "test://static", Name: "static", MIMEType: "text/plain"},
		func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, MIMEType: "text/plain", Text: "static text"}}}, nil
		})
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"},
		func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "item " + r.Var("id")}}}, nil
		})
	return s
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func newPost(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	for k, v := range headersFor(nil, body) {
		r.Header[k] = v
	}
	return r
}

// decodeCall decodes one 2026-07-28 message as the transports do:
// envelope, then params in the modern era.
func (s *Server) decodeCall(raw []byte) (*call, *failure) {
	msg, e := jsonrpc.Decode(raw)
	c := &call{msg: msg, era: modern}
	if e != nil {
		return c, &failure{e, http.StatusBadRequest}
	}
	if f := c.era.decode(s, c); f != nil {
		return c, f
	}
	return c, nil
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
