package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// threeRounds asks over three dependent rounds (each question uses the
// previous answer): written once, it serves both eras.
func threeRounds(runs *atomic.Int32) ToolHandler {
	return func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if runs != nil {
			runs.Add(1)
		}
		e, err := Elicit[Region](ctx, "Which region should the database live in?")
		if err != nil {
			return nil, err
		}
		region, err := e.Value()
		if err != nil {
			return nil, err
		}
		poem, err := Sample(ctx, &CreateMessageRequest{MaxTokens: 50, Messages: []SamplingMessage{{Role: RoleUser,
			Content: []Content{&TextContent{Text: "A haiku about " + region.Region}}}}})
		if err != nil {
			return nil, err
		}
		roots, err := ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		return TextResult(region.Region + " | " + poem.Content[0].(*TextContent).Text + " | " + roots[0].URI), nil
	}
}

const legacyCaps = `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{"listChanged":true}}`

func dualServer(t testing.TB, opts *ServerOptions) (*Server, *atomic.Int32) {
	s := newTestServer(t, opts)
	var runs atomic.Int32
	s.AddTool(&Tool{Name: "provision", Description: "asks three questions"}, threeRounds(&runs))
	return s, &runs
}

func legacyServer(t testing.TB, s *Server, o *HTTPOptions) (*httptest.Server, *httpHandler) {
	h := NewHTTPHandler(s, o).(*httpHandler)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts, h
}

func legacyText(t testing.TB, v map[string]any) string {
	t.Helper()
	r, ok := v["result"].(map[string]any)
	if !ok {
		t.Fatalf("expected a result, got %v", v)
	}
	c := r["content"].([]any)
	return c[0].(map[string]any)["text"].(string)
}

func TestOneHandlerServesBothEras(t *testing.T) {
	t.Parallel()
	s, runs := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)

	// Modern: three input_required rounds, then the result.
	d := &driver{t: t, h: NewHTTPHandler(s, nil), method: MethodToolsCall, params: `"name":"provision","arguments":{}`}
	modern := text(t, d.run(standardAnswers))
	if len(d.rounds) != 4 {
		t.Errorf("modern: %d rounds, want 3 input rounds + completion", len(d.rounds))
	}
	if runs.Load() != 4 {
		t.Errorf("modern: handler ran %d times, want once per round (4)", runs.Load())
	}

	// Legacy: one tools/call; the three questions are live requests.
	runs.Store(0)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	v := c.request(MethodToolsCall, `{"name":"provision","arguments":{}}`)
	legacy := legacyText(t, v)
	if legacy != modern || modern != "eu-west-1 | a haiku | file:///work" {
		t.Fatalf("legacy %q, modern %q", legacy, modern)
	}
	if strings.Join(c.asked, ",") != "elicitation/create,sampling/createMessage,roots/list" {
		t.Errorf("server-to-client requests: %v", c.asked)
	}
	if runs.Load() != 1 {
		t.Errorf("legacy: handler ran %d times, want once", runs.Load())
	}
	if _, has := v["result"].(map[string]any)["resultType"]; has {
		t.Errorf("a legacy result carries resultType: %v", v)
	}
}

func TestLegacyInitializeAndSessionWire(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, `{}`)
	if c.sid == "" || len(c.sid) != 32 {
		t.Fatalf("session id %q", c.sid)
	}
	init := c.lastInit
	if init["protocolVersion"] != LegacyProtocolVersion || init["serverInfo"].(map[string]any)["name"] != "test-server" {
		t.Errorf("initialize result %v", init)
	}
	caps := init["capabilities"].(map[string]any)
	if caps["tools"] == nil || caps["logging"] == nil || caps["resources"].(map[string]any)["subscribe"] != true {
		t.Errorf("capabilities %v", caps)
	}
	if _, has := init["resultType"]; has {
		t.Error("initialize result carries resultType")
	}
	for _, m := range []string{methodPing, methodSetLevel, methodSubscribe, methodUnsubscribe} {
		params := map[string]string{methodPing: `{}`, methodSetLevel: `{"level":"info"}`, methodSubscribe: `{"uri":"test://static"}`, methodUnsubscribe: `{"uri":"test://static"}`}[m]
		v := c.request(m, params)
		if r, ok := v["result"].(map[string]any); !ok || len(r) != 0 {
			t.Errorf("%s: %v", m, v)
		}
	}
	// Lists carry no cache hints and no resultType in 2025-11-25.
	v := c.request(MethodToolsList, "")
	r := v["result"].(map[string]any)
	for _, k := range []string{"resultType", "ttlMs", "cacheScope", "_meta"} {
		if _, has := r[k]; has {
			t.Errorf("legacy tools/list result has %s", k)
		}
	}
	if len(r["tools"].([]any)) == 0 {
		t.Error("no tools")
	}
	// 2026-07-28 methods are not part of the session.
	v = c.request(MethodDiscover, "")
	if errorCode(t, v) != CodeMethodNotFound {
		t.Errorf("server/discover on a legacy session: %v", v)
	}
	// Errors are named as in the modern era.
	if v := c.request(methodSetLevel, `{"level":"loud"}`); errorCode(t, v) != CodeInvalidParams {
		t.Errorf("bad level: %v", v)
	}
	// A second initialize on the session is refused.
	if v, _ := c.post(`{"jsonrpc":"2.0","id":99,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, nil); errorCode(t, v) != CodeInvalidRequest {
		t.Errorf("second initialize: %v", v)
	}
}

func TestLegacyVersionNegotiation(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	h := NewHTTPHandler(s, nil)
	// Every earlier revision is served as itself; anything else gets the
	// latest legacy revision.
	for v, want := range map[string]string{"2025-06-18": "2025-06-18", "2025-11-25": LegacyProtocolVersion, "2025-03-26": "2025-03-26", "2024-11-05": "2024-11-05", "2024-10-07": LegacyProtocolVersion, "2099-01-01": LegacyProtocolVersion} {
		res := doHTTP(t, h, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}})
		if got := result(t, res.last(t))["protocolVersion"]; got != want {
			t.Errorf("asked %s, negotiated %v", v, got)
		}
	}
	if got := s.SupportedVersions(); strings.Join(got, " ") != LatestProtocolVersion+" "+LegacyProtocolVersion+" 2025-06-18 2025-03-26 2024-11-05" {
		t.Errorf("SupportedVersions = %v", got)
	}
	// The legacy revision is never accepted in a modern _meta envelope.
	body := strings.Replace(req(4, MethodToolsList, ""), "2026-07-28", LegacyProtocolVersion, 1)
	if res := post(t, h, body); res.status != 400 || errorCode(t, res.last(t)) != CodeUnsupportedProtocolVersion {
		t.Errorf("legacy version in _meta: %d %s", res.status, res.body)
	}
}

func TestModernRequestsStayModernOnALegacySession(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	// A request with the modern envelope is modern, session header or not.
	r, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"hi"}`)))
	for k, v := range headersFor(t, req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"hi"}`)) {
		r.Header[k] = v
	}
	r.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	if result(t, v)["resultType"] != "complete" {
		t.Errorf("modern request with a session header: %v", v)
	}
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Error("a modern response echoes the session id")
	}
}

func TestLegacyHandBuiltInputRequiredCanBeRefused(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, &ServerOptions{RefuseLegacyInputRequired: true})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	v := c.request(MethodToolsCall, `{"name":"ask","arguments":{}}`)
	if errorCode(t, v) != CodeInternalError {
		t.Fatalf("got %v", v)
	}
	msg := v["error"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "no input_required vocabulary") || !strings.Contains(msg, LegacyProtocolVersion) {
		t.Errorf("message %q", msg)
	}
}

// A low-level handler's own input requests reach a legacy client as
// live requests, and the handler runs again with the answers and its
// state, as a modern client would retry.
func TestLegacyHandBuiltInputRequestsAreSentLive(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	c.answer = func(method string, params map[string]any) any {
		return accept(map[string]any{"name": "Ada"})
	}
	v := c.request(MethodToolsCall, `{"name":"ask","arguments":{}}`)
	if got := legacyText(t, v); got != "Hello, Ada" {
		t.Fatalf("result %q", got)
	}
	if len(c.asked) != 1 || c.asked[0] != MethodElicit {
		t.Errorf("live requests %v, want one elicitation/create", c.asked)
	}
}

// The bridge stops after LegacyInputRounds rounds of a handler that
// never completes.
func TestLegacyInputBridgeIsBounded(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &ServerOptions{LegacyInputRounds: 3})
	s.AddTool(&Tool{Name: "never", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			return &InputRequiredResult{InputRequests: map[string]InputRequest{"q": &ListRootsRequest{}}, RequestState: "again"}, nil
		})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	v := c.request(MethodToolsCall, `{"name":"never","arguments":{}}`)
	if errorCode(t, v) != CodeInternalError {
		t.Fatalf("got %v", v)
	}
	if len(c.asked) != 3 {
		t.Errorf("%d live requests, want 3 (one per round)", len(c.asked))
	}
}

func TestLegacyCapabilityGating(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, `{"sampling":{}}`)
	v := c.request(MethodToolsCall, `{"name":"provision","arguments":{}}`)
	if errorCode(t, v) != CodeMissingRequiredCapability {
		t.Fatalf("got %v", v)
	}
	data := v["error"].(map[string]any)["data"].(map[string]any)
	if _, ok := data["requiredCapabilities"].(map[string]any)["elicitation"]; !ok {
		t.Errorf("data %v", data)
	}
	if len(c.asked) != 0 {
		t.Errorf("asked %v without the capability", c.asked)
	}
}

func TestLegacyNoBackChannelIsInvalidRequest(t *testing.T) {
	t.Parallel()
	t.Run("json-only", func(t *testing.T) {
		s, _ := dualServer(t, nil)
		ts, _ := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{JSONResponse: true}})
		c := newLegacyClient(t, ts.URL, legacyCaps)
		v := c.request(MethodToolsCall, `{"name":"provision","arguments":{}}`)
		if errorCode(t, v) != CodeInvalidRequest || !strings.Contains(v["error"].(map[string]any)["message"].(string), "elicitation/create") {
			t.Fatalf("got %v", v)
		}
	})
	t.Run("no-sse-accepted", func(t *testing.T) {
		s, _ := dualServer(t, nil)
		ts, _ := legacyServer(t, s, nil)
		c := newLegacyClient(t, ts.URL, legacyCaps)
		r, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"provision"}}`))
		c.headers(r)
		r.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		if errorCode(t, v) != CodeInvalidRequest {
			t.Fatalf("got %v", v)
		}
	})
	t.Run("stateless", func(t *testing.T) {
		s, _ := dualServer(t, nil)
		ts, h := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{Stateless: true}})
		c := newLegacyClient(t, ts.URL, legacyCaps)
		if c.sid != "" || h.legacy.sessionCount() != 0 {
			t.Fatalf("a stateless handler made session %q", c.sid)
		}
		if got := legacyText(t, c.request(MethodToolsCall, `{"name":"echo","arguments":{"text":"hi"}}`)); got != "hi" {
			t.Errorf("echo: %q", got)
		}
		v := c.request(MethodToolsCall, `{"name":"provision","arguments":{}}`)
		if errorCode(t, v) != CodeInvalidRequest || !strings.Contains(v["error"].(map[string]any)["message"].(string), "elicitation/create") {
			t.Fatalf("got %v", v)
		}
	})
	t.Run("sessionful-without-session", func(t *testing.T) {
		s, _ := dualServer(t, nil)
		ts, _ := legacyServer(t, s, nil)
		c := &legacyClient{t: t, url: ts.URL, hc: http.DefaultClient}
		r, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		c.headers(r)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}

func TestLegacyDeleteEndsTheSession(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, h := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	if h.legacy.sessionCount() != 1 {
		t.Fatalf("%d sessions", h.legacy.sessionCount())
	}
	if st := c.delete(); st != http.StatusNoContent {
		t.Fatalf("DELETE: %d", st)
	}
	if h.legacy.sessionCount() != 0 {
		t.Errorf("%d sessions after DELETE", h.legacy.sessionCount())
	}
	r, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	c.headers(r)
	resp, _ := http.DefaultClient.Do(r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST after DELETE: %d", resp.StatusCode)
	}
	if resp := c.get(""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d", resp.StatusCode)
	}
	if st := c.delete(); st != http.StatusNotFound {
		t.Errorf("second DELETE: %d", st)
	}
	// Without a session header GET and DELETE stay 405 (2026-07-28).
	r, _ = http.NewRequest(http.MethodGet, ts.URL, nil)
	resp, _ = http.DefaultClient.Do(r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET without session: %d", resp.StatusCode)
	}
}

func TestLegacyDeleteCancelsWaitingQuestions(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	done := make(chan error, 1)
	s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := Elicit[Region](ctx, "Which region?")
		done <- err
		return nil, err
	})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	c.quiet = true
	c.answer = func(string, map[string]any) any {
		c.delete() // the client ends the session instead of answering
		return map[string]any{"action": "cancel"}
	}
	bg := make(chan struct{})
	go func() { defer close(bg); c.request(MethodToolsCall, `{"name":"wait"}`) }()
	defer func() { <-bg }()
	select {
	case err := <-done:
		if !errors.Is(err, errLegacySessionEnded) && !errors.Is(err, context.Canceled) {
			t.Errorf("question ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler is still waiting after DELETE")
	}
}

func TestLegacyIdleSessionsExpire(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	// Long enough for both handshakes on a loaded machine (a session
	// idle between initialize and notifications/initialized is gone).
	ts, h := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{IdleTimeout: time.Second}})
	idle := newLegacyClient(t, ts.URL, `{}`)
	busy := newLegacyClient(t, ts.URL, `{}`)
	// An open GET stream keeps a session alive.
	resp := busy.get("")
	defer resp.Body.Close()
	testutil.Eventually(t, 5*time.Second, "the idle session to expire", func() bool { return h.legacy.lookup(idle.sid) == nil })
	if v := idle.request(MethodToolsList, ""); errorCode(t, v) != -32001 {
		t.Errorf("request on an expired session: %v", v)
	}
	if h.legacy.lookup(busy.sid) == nil {
		t.Fatal("a session with an open GET stream expired")
	}
	if got := legacyText(t, busy.request(MethodToolsCall, `{"name":"echo","arguments":{"text":"alive"}}`)); got != "alive" {
		t.Errorf("busy session: %q", got)
	}
}

func TestLegacyGETStreamCarriesListChangesAndSubscriptions(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, `{}`)
	resp := c.get("")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readSSE(resp.Body)
	if second := c.get(""); second.StatusCode != http.StatusConflict {
		t.Errorf("second GET stream: %d", second.StatusCode)
	}
	if v := c.request(methodSubscribe, `{"uri":"test://static"}`); v["result"] == nil {
		t.Fatalf("subscribe: %v", v)
	}
	s.ResourceUpdated("test://other") // not subscribed: nothing
	s.ResourceUpdated("test://static")
	m := events.next(t)
	if m["method"] != NotificationResourceUpdated || m["params"].(map[string]any)["uri"] != "test://static" {
		t.Fatalf("got %v", m)
	}
	s.AddTool(&Tool{Name: "late"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	if m := events.next(t); m["method"] != NotificationToolListChanged {
		t.Fatalf("got %v", m)
	}
	c.request(methodUnsubscribe, `{"uri":"test://static"}`)
	s.ResourceUpdated("test://static")
	s.AddPrompt(&Prompt{Name: "late"}, func(context.Context, *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil })
	if m := events.next(t); m["method"] != notificationPromptListChanged {
		t.Fatalf("after unsubscribe got %v", m)
	}
}

func TestLegacyLoggingFollowsSetLevel(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "chatty"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		logMessage(ctx, LevelDebug, "t", "debug line")
		logMessage(ctx, LevelWarning, "t", "warning line")
		return TextResult("ok"), nil
	})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, `{}`)
	c.request(MethodToolsCall, `{"name":"chatty"}`)
	if len(c.notes) != 0 {
		t.Errorf("logs before logging/setLevel: %v", c.notes)
	}
	c.request(methodSetLevel, `{"level":"info"}`)
	c.request(MethodToolsCall, `{"name":"chatty"}`)
	if len(c.notes) != 1 || c.notes[0]["params"].(map[string]any)["data"] != "warning line" {
		t.Errorf("logs at info: %v", c.notes)
	}
}

func TestLegacyProgressAndURLElicitation(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "connect"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ReportProgress(ctx, 1, 2, "asking")
		a, err := ElicitURL(ctx, "Sign in", "https://example.com/login", WithLegacyElicitationID("flow-7"))
		if err != nil {
			return nil, err
		}
		return TextResult(string(a)), nil
	})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	var params map[string]any
	c.answer = func(method string, p map[string]any) any {
		params = p
		return map[string]any{"action": "accept"}
	}
	v := c.request(MethodToolsCall, `{"name":"connect","_meta":{"progressToken":"p1"}}`)
	if legacyText(t, v) != "accept" {
		t.Fatalf("got %v", v)
	}
	if params["mode"] != "url" || params["elicitationId"] != "flow-7" || params["url"] != "https://example.com/login" {
		t.Errorf("URL elicitation params %v", params)
	}
	if len(c.notes) != 1 || c.notes[0]["method"] != notificationProgress || c.notes[0]["params"].(map[string]any)["progressToken"] != "p1" {
		t.Errorf("notifications %v", c.notes)
	}
	// The end of the out-of-band flow is announced on the GET stream.
	resp := c.get("")
	defer resp.Body.Close()
	events := readSSE(resp.Body)
	if !s.CompleteElicitation("flow-7") {
		t.Fatal("CompleteElicitation found no session")
	}
	m := events.next(t)
	if m["method"] != notificationElicitationComplete || m["params"].(map[string]any)["elicitationId"] != "flow-7" {
		t.Errorf("got %v", m)
	}
	if s.CompleteElicitation("flow-7") {
		t.Error("an elicitation completed twice")
	}
}

func TestLegacyClientErrorAnswerIsToolError(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	c.answer = func(string, map[string]any) any { return jsonrpcError(-1, "User rejected the request") }
	v := c.request(MethodToolsCall, `{"name":"provision"}`)
	r := result(t, v)
	if r["isError"] != true || !strings.Contains(legacyText(t, v), "User rejected the request") {
		t.Errorf("got %v", v)
	}
}

func TestLegacyCancelledRequestCancelsItsQuestion(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	done := make(chan error, 1)
	s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := Elicit[Region](ctx, "Which region?")
		done <- err
		return nil, err
	})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	c.quiet = true
	c.answer = func(string, map[string]any) any {
		// Instead of answering, the client cancels its tools/call.
		c.postRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		return nil
	}
	bg := make(chan struct{})
	go func() { defer close(bg); c.request(MethodToolsCall, `{"name":"wait"}`) }()
	defer func() { <-bg }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("question ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
}

func TestLegacyResumeWithLastEventID(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	release := make(chan struct{})
	s.AddTool(&Tool{Name: "poll"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ReportProgress(ctx, 1, 3, "started")
		if !CloseLegacySSEStream(ctx) {
			return nil, errors.New("no stream to close")
		}
		ReportProgress(ctx, 2, 3, "while disconnected")
		<-release
		return TextResult("finished after the reconnection"), nil
	})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	var ids []string
	v, _ := c.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"poll","_meta":{"progressToken":1}}}`, &ids)
	if v != nil {
		t.Fatalf("the stream carried the response: %v", v)
	}
	// The priming event and the first progress notification came.
	if len(ids) != 2 || len(c.notes) != 1 {
		t.Fatalf("event ids %v, notifications %v", ids, c.notes)
	}
	resp := c.get(ids[len(ids)-1])
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET with Last-Event-ID: %d", resp.StatusCode)
	}
	events := readSSE(resp.Body)
	if m := events.next(t); m["method"] != notificationProgress || m["params"].(map[string]any)["message"] != "while disconnected" {
		t.Fatalf("replayed %v", m)
	}
	close(release)
	m := events.next(t)
	if legacyText(t, m) != "finished after the reconnection" || m["id"] != float64(7) {
		t.Fatalf("got %v", m)
	}
	// The whole stream can be replayed again from its start.
	again := c.get(ids[0])
	defer again.Body.Close()
	ev := readSSE(again.Body)
	ev.next(t)
	ev.next(t)
	if m := ev.next(t); m["id"] != float64(7) {
		t.Fatalf("second replay ended with %v", m)
	}
	if bad := c.get("99-1"); bad.StatusCode != http.StatusNotFound {
		t.Errorf("unknown Last-Event-ID: %d", bad.StatusCode)
	}
}

func TestLegacyDisconnectIsNotCancellation(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	finished := make(chan error, 1)
	s.AddTool(&Tool{Name: "slow"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ReportProgress(ctx, 1, 2, "")
		select {
		case <-time.After(200 * time.Millisecond):
			finished <- nil
		case <-ctx.Done():
			finished <- ctx.Err()
		}
		return TextResult("done"), nil
	})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":1}}}`))
	c.headers(r)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	events := readSSE(resp.Body)
	events.next(t) // progress
	cancel()       // the client goes away
	resp.Body.Close()
	if err := <-finished; err != nil {
		t.Fatalf("a disconnect cancelled the legacy request: %v", err)
	}
}

func TestLegacyDisabled(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &ServerOptions{DisableLegacy: true})
	h := NewHTTPHandler(s, nil)
	res := doHTTP(t, h, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		http.Header{"Content-Type": {"application/json"}})
	if res.status != 404 || errorCode(t, res.last(t)) != CodeMethodNotFound {
		t.Errorf("initialize on a modern-only server: %d %s", res.status, res.body)
	}
	if got := s.SupportedVersions(); len(got) != 1 {
		t.Errorf("SupportedVersions = %v", got)
	}
}

func TestElicitFormChecksTheRawSchema(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","default":"John"},
		"age":{"type":"integer","default":30},
		"color":{"type":"string","oneOf":[{"const":"red","title":"Red"},{"const":"blue","title":"Blue"}]},
		"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}}},
		"required":["name"]}`)
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "form"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		res, err := ElicitForm(ctx, "Fill it", schema)
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res.Content)
		return TextResult(string(res.Action) + " " + string(b)), nil
	})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	var sent map[string]any
	answer := map[string]any{"action": "accept", "content": map[string]any{"name": "Jane", "age": 25, "color": "blue", "tags": []string{"a"}}}
	c.answer = func(_ string, p map[string]any) any { sent = p; return answer }
	if got := legacyText(t, c.request(MethodToolsCall, `{"name":"form"}`)); got != `accept {"age":25,"color":"blue","name":"Jane","tags":["a"]}` {
		t.Errorf("got %q", got)
	}
	props := sent["requestedSchema"].(map[string]any)["properties"].(map[string]any)
	if props["age"].(map[string]any)["default"] != float64(30) || props["color"].(map[string]any)["oneOf"] == nil {
		t.Errorf("schema not passed through: %v", props)
	}
	answer = map[string]any{"action": "accept", "content": map[string]any{"name": "Jane", "color": "green"}}
	if v := c.request(MethodToolsCall, `{"name":"form"}`); result(t, v)["isError"] != true {
		t.Errorf("an answer outside the enum was taken: %v", v)
	}
	// The same function asks in a 2026-07-28 round.
	d := &driver{t: t, h: NewHTTPHandler(s, nil), method: MethodToolsCall, params: `"name":"form","arguments":{}`}
	got := text(t, d.run(func(string, map[string]any) any {
		return map[string]any{"action": "decline"}
	}))
	if got != "decline null" {
		t.Errorf("modern: %q", got)
	}
	if _, err := formSchemaFromRaw(json.RawMessage(`{"type":"object","properties":{"x":{"type":"object"}}}`)); err == nil {
		t.Error("a nested object was accepted as a form field")
	}
}

func TestLegacySessionIsBoundToItsPrincipal(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	h := NewHTTPHandler(s, nil)
	// Authentication middleware puts the caller's token in the context.
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := r.Header.Get("X-User")
		h.ServeHTTP(w, r.WithContext(WithTokenInfo(r.Context(), &TokenInfo{ClientID: "app", Issuer: "idp", Subject: who})))
	})
	ts := httptest.NewServer(auth)
	defer ts.Close()
	c := newLegacyClient(t, ts.URL, legacyCaps) // X-User unset: subject ""
	do := func(user string) int {
		r, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		c.headers(r)
		r.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := do(""); st != 200 {
		t.Fatalf("the session's own principal: %d", st)
	}
	if st := do("mallory"); st != http.StatusNotFound {
		t.Errorf("another principal presenting the session id: %d", st)
	}
}

// A fleet names its instance in its session ids so that a load balancer
// can route a session home; the prefixed id works like any other.
func TestLegacySessionIDPrefix(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{SessionIDPrefix: "b."}})
	c := newLegacyClient(t, ts.URL, `{}`)
	if !strings.HasPrefix(c.sid, "b.") || len(c.sid) != 2+32 {
		t.Fatalf("session id %q", c.sid)
	}
	if v := c.request(methodPing, `{}`); v["result"] == nil {
		t.Fatalf("ping on the prefixed session: %v", v)
	}
	for _, bad := range []string{"a b", "é", "\n", strings.Repeat("x", 65)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("prefix %q accepted", bad)
				}
			}()
			NewHTTPHandler(s, &HTTPOptions{Legacy: LegacyHTTPOptions{SessionIDPrefix: bad}})
		}()
	}
}

// Server.Close ends the legacy sessions of its HTTP handlers: an open GET
// stream ends, the session id gets 404, and http.Server.Shutdown is not
// held up by the stream.
func TestServerCloseEndsLegacySessions(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, h := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	stream := c.get("")
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", stream.StatusCode)
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, stream.Body); ended <- err }()

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the GET stream is still open after Server.Close")
	}
	if n := h.legacy.sessionCount(); n != 0 {
		t.Errorf("%d sessions after Close", n)
	}
	r, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	c.headers(r)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST on the closed session: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.Config.Shutdown(ctx); err != nil {
		t.Errorf("http.Server.Shutdown after Server.Close: %v", err)
	}
}

// A handler on a 2025-11-25 session sees the values of its HTTP request's
// context, the verified token first, although its lifetime is the
// session's.
func TestLegacyHandlerSeesTheRequestsToken(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "whoami"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ti := TokenInfoFromContext(ctx)
		if ti == nil {
			return TextResult("nobody"), nil
		}
		return TextResult(ti.Subject), nil
	})
	h := NewHTTPHandler(s, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(WithTokenInfo(r.Context(), &TokenInfo{Subject: "alice", ClientID: "c", Issuer: "i"})))
	}))
	defer ts.Close()
	c := newLegacyClient(t, ts.URL, `{}`)
	if got := legacyText(t, c.request(MethodToolsCall, `{"name":"whoami","arguments":{}}`)); got != "alice" {
		t.Errorf("the handler saw %q", got)
	}
}
