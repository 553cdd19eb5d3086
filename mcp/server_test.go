package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"net/http"
	"strings"
	"testing"
)

func TestDiscoverAdvertisesVersionsCapabilitiesAndServerInfo(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, &ServerOptions{Instructions: "be nice"}), nil)
	res := post(t, h, req(1, MethodDiscover, ""))
	if res.status != 200 {
		t.Fatalf("status %d", res.status)
	}
	r := result(t, res.last(t))
	if r["resultType"] != "complete" {
		t.Errorf("resultType = %v", r["resultType"])
	}
	if v := r["supportedVersions"].([]any); len(v) == 0 || v[0] != LatestProtocolVersion {
		t.Errorf("supportedVersions = %v", v)
	}
	info := r["_meta"].(map[string]any)[MetaServerInfo].(map[string]any)
	if info["name"] != "test-server" || info["version"] != "1.0.0" {
		t.Errorf("serverInfo = %v", info)
	}
	caps := r["capabilities"].(map[string]any)
	for _, k := range []string{"tools", "prompts", "resources"} {
		if caps[k] == nil {
			t.Errorf("capability %s missing: %v", k, caps)
		}
	}
	if r["instructions"] != "be nice" {
		t.Errorf("instructions = %v", r["instructions"])
	}
}

// A server advertises what it has: a tools-only server no prompts or
// resources; a kind appears once registered, or when the options force it.
func TestCapabilitiesFollowRegistrations(t *testing.T) {
	t.Parallel()
	caps := func(s *Server) map[string]any {
		t.Helper()
		return result(t, post(t, NewHTTPHandler(s, nil), req(1, MethodDiscover, "")).last(t))["capabilities"].(map[string]any)
	}
	s := NewServer(Implementation{Name: "tools-only", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "t"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	c := caps(s)
	if c["tools"] == nil || c["prompts"] != nil || c["resources"] != nil {
		t.Errorf("tools-only server advertises %v", c)
	}
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "x://{id}", Name: "x"}, func(context.Context, *ReadResourceRequest) (ResourceResponse, error) {
		return &ReadResourceResult{}, nil
	})
	if c := caps(s); c["resources"] == nil {
		t.Errorf("after a template: %v", c)
	}
	forced := NewServer(Implementation{Name: "later", Version: "1"}, &ServerOptions{Capabilities: &ServerCapabilities{Prompts: &ListChangedCapability{ListChanged: true}}})
	if c := caps(forced); c["prompts"] == nil || c["tools"] != nil {
		t.Errorf("forced prompts: %v", c)
	}
}

func TestEveryCompleteResultCarriesResultTypeAndCacheHints(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	for _, m := range []string{MethodToolsList, methodPromptsList, MethodResourcesList, methodResourceTemplatesList} {
		r := result(t, post(t, h, req(1, m, "")).last(t))
		if r["resultType"] != "complete" {
			t.Errorf("%s: resultType %v", m, r["resultType"])
		}
		if _, ok := r["ttlMs"].(float64); !ok || r["cacheScope"] != "private" {
			t.Errorf("%s: cache hints %v %v", m, r["ttlMs"], r["cacheScope"])
		}
	}
	r := result(t, post(t, h, req(2, MethodResourcesRead, `"uri":"test://static"`)).last(t))
	if r["cacheScope"] == nil || r["ttlMs"] == nil {
		t.Errorf("resources/read lacks cache hints: %v", r)
	}
	r = result(t, post(t, h, req(3, MethodToolsCall, `"name":"echo","arguments":{"text":"hi"}`)).last(t))
	if r["resultType"] != "complete" {
		t.Errorf("tools/call resultType %v", r["resultType"])
	}
}

func TestMissingMetaIsInvalidParamsWith400(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	cases := map[string]string{
		"no params":       `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
		"no _meta":        `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`,
		"no version":      `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"no capabilities": `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	}
	for name, body := range cases {
		hdr := headersFor(t, body)
		hdr.Set(HeaderProtocolVersion, LatestProtocolVersion)
		res := doHTTP(t, h, body, hdr)
		if res.status != 400 {
			t.Errorf("%s: status %d", name, res.status)
		}
		v := res.last(t)
		if errorCode(t, v) != CodeInvalidParams || v["id"] != float64(7) {
			t.Errorf("%s: %s", name, res.body)
		}
		wiretest.CheckWire(t, "", res.messages[0])
	}
}

func TestClientInfoIsOptional(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	if res := post(t, h, body); res.status != 200 {
		t.Fatalf("status %d: %s", res.status, res.body)
	}
}

func TestUnsupportedVersionListsSupported(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	body := strings.Replace(req(4, MethodToolsList, ""), "2026-07-28", "1900-01-01", 1)
	res := post(t, h, body)
	if res.status != 400 {
		t.Fatalf("status %d", res.status)
	}
	v := res.last(t)
	if errorCode(t, v) != CodeUnsupportedProtocolVersion {
		t.Fatalf("%s", res.body)
	}
	data := v["error"].(map[string]any)["data"].(map[string]any)
	if data["requested"] != "1900-01-01" || data["supported"].([]any)[0] != LatestProtocolVersion {
		t.Errorf("data = %v", data)
	}
}

func TestRemovedAndUnknownMethodsAre404MethodNotFound(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	for _, m := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "no/such"} {
		body := req(9, m, "")
		res := post(t, h, body)
		if res.status != 404 || errorCode(t, res.last(t)) != CodeMethodNotFound || res.last(t)["id"] != float64(9) {
			t.Errorf("%s: %d %s", m, res.status, res.body)
		}
	}
}

func TestBadInputGetsClearJSONRPCErrors(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	cases := []struct {
		name, body string
		code       int
		mention    string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0",`, CodeParseError, ""},
		{"not an object", `[1,2]`, CodeInvalidRequest, ""},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, CodeInvalidRequest, "jsonrpc"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, CodeInvalidRequest, "id"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, CodeInvalidRequest, "id"},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, "method"},
		{"duplicate member", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`, CodeInvalidRequest, "duplicate"},
		{"case variant", `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`, CodeInvalidRequest, "case"},
		{"name not a string", req(1, MethodToolsCall, `"name":5`), CodeInvalidParams, "name"},
		{"arguments not an object", req(1, MethodToolsCall, `"name":"echo","arguments":[1]`), CodeInvalidParams, "arguments"},
		{"duplicate param", req(1, MethodToolsCall, `"name":"echo","name":"ask"`), CodeInvalidParams, "duplicate"},
		{"case-variant param", req(1, MethodToolsCall, `"name":"echo","Name":"ask"`), CodeInvalidParams, "case"},
		{"cursor not a string", req(1, MethodToolsList, `"cursor":3`), CodeInvalidParams, "cursor"},
		{"bad log level", strings.Replace(req(1, MethodToolsList, ""), `"io.modelcontextprotocol/clientInfo"`, `"io.modelcontextprotocol/logLevel":"loud","io.modelcontextprotocol/clientInfo"`, 1), CodeInvalidParams, "logLevel"},
		{"capabilities not an object", strings.Replace(req(1, MethodToolsList, ""), testCaps, `[]`, 1), CodeInvalidParams, "clientCapabilities"},
	}
	for _, c := range cases {
		hdr := headersFor(t, c.body)
		hdr.Set(HeaderProtocolVersion, LatestProtocolVersion)
		hdr.Set(HeaderMethod, "tools/list")
		res := doHTTP(t, h, c.body, hdr)
		if res.status != 400 {
			t.Errorf("%s: status %d", c.name, res.status)
		}
		v := res.last(t)
		if got := errorCode(t, v); got != c.code {
			t.Errorf("%s: code %d, want %d (%s)", c.name, got, c.code, res.body)
		}
		msg := v["error"].(map[string]any)["message"].(string)
		if c.mention != "" && !strings.Contains(msg, c.mention) {
			t.Errorf("%s: message %q does not name %q", c.name, msg, c.mention)
		}
		wiretest.CheckWire(t, "", res.messages[0])
	}
}

func TestUnknownToolAndResourceAreInvalidParams(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	v := post(t, h, req(1, MethodToolsCall, `"name":"nope"`)).last(t)
	if errorCode(t, v) != CodeInvalidParams {
		t.Errorf("%v", v)
	}
	v = post(t, h, req(2, MethodResourcesRead, `"uri":"test://missing"`)).last(t)
	if errorCode(t, v) != CodeInvalidParams || v["error"].(map[string]any)["data"].(map[string]any)["uri"] != "test://missing" {
		t.Errorf("%v", v)
	}
}

func TestResourceTemplateMatchesURI(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	r := result(t, post(t, h, req(1, MethodResourcesRead, `"uri":"test://items/42"`)).last(t))
	c := r["contents"].([]any)[0].(map[string]any)
	if c["text"] != "item 42" || c["uri"] != "test://items/42" {
		t.Errorf("%v", c)
	}
}

func TestPromptRequiredArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	if v := post(t, h, req(1, MethodPromptsGet, `"name":"greet"`)).last(t); errorCode(t, v) != CodeInvalidParams {
		t.Errorf("%v", v)
	}
	r := result(t, post(t, h, req(2, MethodPromptsGet, `"name":"greet","arguments":{"who":"Ann"}`)).last(t))
	msg := r["messages"].([]any)[0].(map[string]any)["content"].(map[string]any)
	if msg["text"] != "Hello Ann" {
		t.Errorf("%v", msg)
	}
}

// ---- multi round-trip, low level ----

func TestInputRequiredResultThenCompleteOnRetry(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	r := result(t, post(t, h, req(1, MethodToolsCall, `"name":"ask","arguments":{}`)).last(t))
	if r["resultType"] != "input_required" {
		t.Fatalf("round 1: %v", r)
	}
	if _, has := r["ttlMs"]; has {
		t.Error("an input_required result carries no cache hints")
	}
	ir := r["inputRequests"].(map[string]any)["name"].(map[string]any)
	if ir["method"] != MethodElicit || ir["params"].(map[string]any)["mode"] != "form" {
		t.Errorf("input request %v", ir)
	}
	if _, has := ir["id"]; has {
		t.Error("input requests are bare: no id")
	}
	state, _ := json.Marshal(r["requestState"])
	r = result(t, post(t, h, req(2, MethodToolsCall, `"name":"ask","arguments":{},"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+string(state))).last(t))
	if r["resultType"] != "complete" || r["content"].([]any)[0].(map[string]any)["text"] != "Hello, Ada" {
		t.Fatalf("round 2: %v", r)
	}
}

func TestInputResponsesDecodeByTheKindAsked(t *testing.T) {
	t.Parallel()
	// The same JSON is a valid elicitation answer but not a sampling or
	// roots answer: decoding follows the kind the handler asks for.
	raw := InputResponses{"k": json.RawMessage(`{"action":"accept","content":{"a":1,"b":[ "x" ],"c":true}}`)}
	e, err := raw.Elicit("k")
	if err != nil || e.Action != ElicitAccept || e.Content["a"] != int64(1) {
		t.Fatalf("elicit: %v %v", e, err)
	}
	if _, err := raw.Sampling("k"); err == nil {
		t.Error("an elicitation answer decoded as sampling")
	}
	if _, err := raw.Roots("k"); err == nil {
		t.Error("an elicitation answer decoded as roots")
	}
	if _, err := raw.Elicit("missing"); !errors.Is(err, ErrNoInputResponse) {
		t.Errorf("missing key: %v", err)
	}
	bad := InputResponses{"k": json.RawMessage(`12345`), "n": json.RawMessage(`{"action":"accept","content":{"x":{"nested":1}}}`)}
	if _, err := bad.Elicit("k"); err == nil {
		t.Error("a number accepted as an elicitation answer")
	}
	if _, err := bad.Elicit("n"); err == nil {
		t.Error("a nested object accepted in elicitation content")
	}
	s := InputResponses{"s": json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m","stopReason":"endTurn"}`)}
	if r, err := s.Sampling("s"); err != nil || r.Content[0].(*TextContent).Text != "Paris" {
		t.Errorf("sampling: %v %v", r, err)
	}
	rt := InputResponses{"r": json.RawMessage(`{"roots":[{"uri":"file:///a","name":"A"}]}`)}
	if r, err := rt.Roots("r"); err != nil || r.Roots[0].URI != "file:///a" {
		t.Errorf("roots: %v %v", r, err)
	}
}

func TestEmptyInputRequiredResultIsInternalError(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "s", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "bad"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		return &InputRequiredResult{}, nil
	})
	v := post(t, NewHTTPHandler(s, nil), req(1, MethodToolsCall, `"name":"bad"`)).last(t)
	if errorCode(t, v) != CodeInternalError {
		t.Errorf("%v", v)
	}
}

func TestInputRequiredOnlyOnCarrierMethods(t *testing.T) {
	t.Parallel()
	// Middleware that tries to answer tools/list with input_required.
	mw := func(next ServerHandler) ServerHandler {
		return func(ctx context.Context, method string, p Params) (Result, error) {
			if method == MethodToolsList {
				return &InputRequiredResult{RequestState: "x"}, nil
			}
			return next(ctx, method, p)
		}
	}
	h := NewHTTPHandler(newTestServer(t, &ServerOptions{Middleware: []ServerMiddleware{mw}}), nil)
	v := post(t, h, req(1, MethodToolsList, "")).last(t)
	if errorCode(t, v) != CodeInternalError {
		t.Errorf("tools/list returned %v", v)
	}
	for _, m := range []string{MethodToolsCall, MethodPromptsGet, MethodResourcesRead} {
		if !isInputRequiredMethod(m) {
			t.Errorf("%s should be a carrier", m)
		}
	}
}

func TestNonStringRequestStateIsRejected(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	v := post(t, h, req(1, MethodToolsCall, `"name":"ask","requestState":42`)).last(t)
	if v["error"] == nil && result(t, v)["resultType"] == "complete" {
		t.Errorf("non-string state reached completion: %v", v)
	}
}

func TestMissingCapabilityErrorIs400WithRequiredCapabilities(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "s", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "needs_sampling"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if r.Meta.ClientCapabilities.Sampling == nil {
			return nil, MissingCapabilityError(ClientCapabilities{Sampling: &SamplingCapabilities{}}, "needs sampling")
		}
		return TextResult("ok"), nil
	})
	h := NewHTTPHandler(s, nil)
	body := strings.Replace(req(1, MethodToolsCall, `"name":"needs_sampling"`), testCaps, `{}`, 1)
	res := post(t, h, body)
	if res.status != 400 || errorCode(t, res.last(t)) != CodeMissingRequiredCapability {
		t.Fatalf("%d %s", res.status, res.body)
	}
	data := res.last(t)["error"].(map[string]any)["data"].(map[string]any)
	if rc, ok := data["requiredCapabilities"].(map[string]any); !ok || rc["sampling"] == nil || len(rc) != 1 {
		t.Errorf("data = %v", data)
	}
}

func TestToolErrorBecomesIsErrorResult(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "s", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "boom"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		return nil, errors.New("disk full")
	})
	s.AddTool(&Tool{Name: "panics"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		panic("oops")
	})
	h := NewHTTPHandler(s, nil)
	r := result(t, post(t, h, req(1, MethodToolsCall, `"name":"boom"`)).last(t))
	if r["isError"] != true || r["content"].([]any)[0].(map[string]any)["text"] != "disk full" {
		t.Errorf("%v", r)
	}
	if v := post(t, h, req(2, MethodToolsCall, `"name":"panics"`)).last(t); errorCode(t, v) != CodeInternalError {
		t.Errorf("panic: %v", v)
	}
}

// ---- typed tools ----

type addArgs struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

func TestTypedToolInfersSchemasAndValidatesArguments(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "s", Version: "1"}, nil)
	called := 0
	AddTypedTool(s, &Tool{Name: "add", Description: "adds"}, func(ctx context.Context, r *CallToolRequest, in addArgs) (addOut, error) {
		called++
		return addOut{Sum: in.A + in.B}, nil
	})
	h := NewHTTPHandler(s, nil)
	r := result(t, post(t, h, req(1, MethodToolsList, "")).last(t))
	tool := r["tools"].([]any)[0].(map[string]any)
	in := tool["inputSchema"].(map[string]any)
	if in["type"] != "object" || in["properties"].(map[string]any)["a"].(map[string]any)["type"] != "integer" {
		t.Errorf("inputSchema %v", in)
	}
	if tool["outputSchema"] == nil {
		t.Error("outputSchema not inferred")
	}
	r = result(t, post(t, h, req(2, MethodToolsCall, `"name":"add","arguments":{"a":2,"b":3}`)).last(t))
	if r["structuredContent"].(map[string]any)["sum"] != float64(5) {
		t.Errorf("%v", r)
	}
	r = result(t, post(t, h, req(3, MethodToolsCall, `"name":"add","arguments":{"a":"two","b":3}`)).last(t))
	if r["isError"] != true || called != 1 {
		t.Errorf("invalid arguments reached the handler or were not reported: %v", r)
	}
}

// ---- lists ----

func TestListsAreOrderedAndPaginated(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "s", Version: "1"}, &ServerOptions{PageSize: 2})
	for _, n := range []string{"d", "b", "e", "a", "c"} {
		s.AddTool(&Tool{Name: n}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	}
	h := NewHTTPHandler(s, nil)
	var names []string
	cursor := ""
	for i := 0; i < 10; i++ {
		p := ""
		if i > 0 {
			c, _ := json.Marshal(cursor)
			p = `"cursor":` + string(c)
		}
		r := result(t, post(t, h, req(i, MethodToolsList, p)).last(t))
		for _, tl := range r["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		nc, ok := r["nextCursor"].(string)
		if !ok {
			break
		}
		cursor = nc
	}
	if strings.Join(names, "") != "abcde" {
		t.Errorf("pages gave %v", names)
	}
	if v := post(t, h, req(1, MethodToolsList, `"cursor":"garbage!"`)).last(t); errorCode(t, v) != CodeInvalidParams {
		t.Errorf("bad cursor: %v", v)
	}
}

// ---- HTTP transport ----

func TestHTTPOnlyPost(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
		r, _ := http.NewRequest(m, "http://localhost/mcp", nil)
		w := newRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, w.Code)
		}
	}
}

func TestNotificationIsAccepted202(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`
	if res := doHTTP(t, h, body, headersFor(t, body)); res.status != 202 || len(res.body) != 0 {
		t.Errorf("%d %q", res.status, res.body)
	}
}

func TestOversizedBodyIs413WithJSONRPCError(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), &HTTPOptions{MaxBodyBytes: 1024})
	body := req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"`+strings.Repeat("x", 2000)+`"}`)
	res := doHTTP(t, h, body, headersFor(t, body))
	if res.status != 413 || errorCode(t, res.last(t)) != CodeInvalidRequest {
		t.Errorf("%d %s", res.status, res.body)
	}
}

func TestHeadersMustMatchBody(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	call := req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"x"}`)
	cases := map[string]func(http.Header){
		"missing version":   func(h http.Header) { h.Del(HeaderProtocolVersion) },
		"version mismatch":  func(h http.Header) { h.Set(HeaderProtocolVersion, "2025-11-25") },
		"missing method":    func(h http.Header) { h.Del(HeaderMethod) },
		"method mismatch":   func(h http.Header) { h.Set(HeaderMethod, "tools/list") },
		"method case":       func(h http.Header) { h.Set(HeaderMethod, "Tools/Call") },
		"missing name":      func(h http.Header) { h.Del(HeaderName) },
		"name mismatch":     func(h http.Header) { h.Set(HeaderName, "ask") },
		"bad base64 name":   func(h http.Header) { h.Set(HeaderName, "=?base64?ZWNob?=") },
		"non-ascii literal": func(h http.Header) { h.Set(HeaderName, "ech\u00f6") },
	}
	for name, mutate := range cases {
		hdr := headersFor(t, call)
		mutate(hdr)
		res := doHTTP(t, h, call, hdr)
		if res.status != 400 || errorCode(t, res.last(t)) != CodeHeaderMismatch {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
		wiretest.CheckWire(t, "", res.messages[0])
	}
	ok := map[string]func(http.Header){
		"base64 name":        func(h http.Header) { h.Set(HeaderName, "=?base64?ZWNobw==?=") },
		"whitespace trimmed": func(h http.Header) { h.Set(HeaderMethod, "  tools/call ") },
	}
	for name, mutate := range ok {
		hdr := headersFor(t, call)
		mutate(hdr)
		if res := doHTTP(t, h, call, hdr); res.status != 200 {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
}

func TestParamHeadersMirrorAnnotatedArguments(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	call := req(1, MethodToolsCall, `"name":"region","arguments":{"region":"eu west","count":42,"dry":true}`)
	good := func() http.Header {
		hdr := headersFor(t, call)
		hdr.Set("Mcp-Param-Region", "eu west")
		hdr.Set("Mcp-Param-Count", "42")
		hdr.Set("Mcp-Param-Dry", "true")
		return hdr
	}
	if res := doHTTP(t, h, call, good()); res.status != 200 {
		t.Fatalf("good headers: %d %s", res.status, res.body)
	}
	// Integers compare as integers: a body of 42.0 or 4.2e1 is 42 (a
	// header, though, must be canonical decimal; see
	// TestIntegerParamHeadersAreCanonicalDecimal).
	for _, n := range []string{"42.0", "4.2e1"} {
		c := strings.Replace(call, `"count":42`, `"count":`+n, 1)
		hdr := headersFor(t, c)
		hdr.Set("Mcp-Param-Region", "eu west")
		hdr.Set("Mcp-Param-Count", "42")
		hdr.Set("Mcp-Param-Dry", "true")
		if res := doHTTP(t, h, c, hdr); res.status != 200 {
			t.Errorf("body %s, header 42: %d %s", n, res.status, res.body)
		}
	}
	hdr := good()
	hdr.Set("Mcp-Param-Region", "=?base64?"+"ZXUgd2VzdA=="+"?=")
	if res := doHTTP(t, h, call, hdr); res.status != 200 {
		t.Errorf("base64 value: %d %s", res.status, res.body)
	}
	bad := map[string]func(http.Header){
		"omitted":       func(h http.Header) { h.Del("Mcp-Param-Region") },
		"different":     func(h http.Header) { h.Set("Mcp-Param-Region", "us") },
		"wrong number":  func(h http.Header) { h.Set("Mcp-Param-Count", "43") },
		"bool spelling": func(h http.Header) { h.Set("Mcp-Param-Dry", "True") },
		"bad padding":   func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?ZXUgd2VzdA?=") },
	}
	for name, mutate := range bad {
		hdr := good()
		mutate(hdr)
		res := doHTTP(t, h, call, hdr)
		if res.status != 400 || errorCode(t, res.last(t)) != CodeHeaderMismatch {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
	noArg := req(2, MethodToolsCall, `"name":"region","arguments":{}`)
	hdr = headersFor(t, noArg)
	hdr.Set("Mcp-Param-Region", "eu")
	if res := doHTTP(t, h, noArg, hdr); res.status != 400 {
		t.Errorf("header without argument: %d", res.status)
	}
}

func TestEncodeHeaderValue(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":      "plain",
		" padded":    "=?base64?IHBhZGRlZA==?=",
		"caf\u00e9":  "=?base64?Y2Fmw6k=?=",
		"=?base64?x": "=?base64?PT9iYXNlNjQ/eA==?=",
		"a\nb":       "=?base64?YQpi?=",
	} {
		if got := encodeHeaderValue(in); got != want {
			t.Errorf("encodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
		if back, ok := decodeHeaderValue(encodeHeaderValue(in)); !ok || back != strings.Trim(in, " \t") && back != in {
			t.Errorf("round trip of %q gave %q", in, back)
		}
	}
}

func TestDNSRebindingProtection(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	body := req(1, MethodToolsList, "")
	try := func(host, origin string) int {
		r := newPost(body)
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := newRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for _, host := range []string{"localhost", "localhost:8080", "127.0.0.1:3000", "[::1]:9"} {
		if c := try(host, ""); c != 200 {
			t.Errorf("host %s: %d", host, c)
		}
	}
	if c := try("evil.example.com", ""); c != 403 {
		t.Errorf("evil host: %d", c)
	}
	if c := try("localhost:3000", "http://evil.example.com"); c != 403 {
		t.Errorf("evil origin: %d", c)
	}
	if c := try("localhost:3000", "http://localhost:5173"); c != 200 {
		t.Errorf("loopback origin: %d", c)
	}
	h2 := NewHTTPHandler(newTestServer(t, nil), &HTTPOptions{AllowedHosts: []string{"mcp.example.com"}, AllowedOrigins: []string{"https://app.example.com"}})
	r := newPost(body)
	r.Host = "mcp.example.com"
	r.Header.Set("Origin", "https://app.example.com")
	w := newRecorder()
	h2.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("allowed host and origin: %d", w.Code)
	}
}

func TestNotificationsTurnTheResponseIntoSSE(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	body := strings.Replace(req(1, MethodToolsCall, `"name":"progress"`), `"io.modelcontextprotocol/clientInfo"`, `"progressToken":"tok","io.modelcontextprotocol/clientInfo"`, 1)
	res := post(t, h, body)
	if ct := res.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	if res.header.Get("X-Accel-Buffering") != "no" {
		t.Error("missing X-Accel-Buffering: no")
	}
	if len(res.messages) != 4 {
		t.Fatalf("want 3 progress + 1 result, got %d", len(res.messages))
	}
	var last float64 = -1
	for _, m := range res.messages[:3] {
		var n struct {
			Method string
			Params struct {
				ProgressToken string
				Progress      float64
			}
		}
		json.Unmarshal(m, &n)
		if n.Method != notificationProgress || n.Params.ProgressToken != "tok" || n.Params.Progress < last {
			t.Errorf("notification %s", m)
		}
		last = n.Params.Progress
	}
	if result(t, res.last(t))["content"] == nil {
		t.Error("final message is not the result")
	}
	// Without a progress token: plain JSON.
	res = post(t, h, req(2, MethodToolsCall, `"name":"progress"`))
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("no token: content type %q", ct)
	}
}

func TestLogNotificationsOnlyWhenRequested(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "s", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "logs"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		logMessage(ctx, LevelDebug, "t", "debug line")
		logMessage(ctx, LevelError, "t", "error line")
		return TextResult("ok"), nil
	})
	h := NewHTTPHandler(s, nil)
	if res := post(t, h, req(1, MethodToolsCall, `"name":"logs"`)); len(res.messages) != 1 {
		t.Errorf("logs sent without logLevel: %d messages", len(res.messages))
	}
	body := strings.Replace(req(2, MethodToolsCall, `"name":"logs"`), `"io.modelcontextprotocol/clientInfo"`, `"io.modelcontextprotocol/logLevel":"warning","io.modelcontextprotocol/clientInfo"`, 1)
	res := post(t, h, body)
	if len(res.messages) != 2 || !strings.Contains(string(res.messages[0]), "error line") {
		t.Errorf("want only the error line, got %q", res.messages)
	}
}

func TestClientInfoDecoding(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	withInfo := func(info string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":` + info + `}}}`
	}
	for _, ok := range []string{`{"name":"c","version":"1"}`, `{"name":"c","version":"1","title":"T","icons":[{"src":"https://x/i.png"}]}`, `null`} {
		if res := post(t, h, withInfo(ok)); res.status != 200 {
			t.Errorf("%s: %d %s", ok, res.status, res.body)
		}
	}
	for _, bad := range []string{`{"name":5}`, `"c"`, `{"name":"c","icons":3}`} {
		res := post(t, h, withInfo(bad))
		if res.status != 400 || errorCode(t, res.last(t)) != CodeInvalidParams {
			t.Errorf("%s: %d %s", bad, res.status, res.body)
		}
	}
}
