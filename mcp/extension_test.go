package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

const (
	extSearch = "com.example/search"
	extCaps   = `{"elicitation":{"form":{}},"extensions":{"com.example/search":{}}}`
	mQuery    = "com.example/search/query"
	mDelete   = "com.example/search/delete"
)

type searchIn struct {
	Query string `json:"query" jsonschema:"what to look for"`
	Limit int    `json:"limit,omitempty"`
}

type searchOut struct {
	Query string   `json:"query"`
	Hits  []string `json:"hits"`
}

type deleteIn struct {
	Index string `json:"index"`
	Force bool   `json:"force,omitempty"`
}

type confirmation struct {
	OK bool `json:"ok"`
}

// newExtServer serves an extension with a plain method (query) and a
// carrier that asks before it acts (delete, targeted at an index).
func newExtServer(t testing.TB, opts *ServerOptions) (*Server, *atomic.Int32) {
	s := NewServer(Implementation{Name: "ext-server", Version: "1"}, opts)
	s.AddExtension(extSearch, map[string]any{"maxLimit": 10})
	AddTypedMethod(s, &MethodSpec{Name: mQuery, Extension: extSearch, Legacy: true},
		func(ctx context.Context, req *ExtensionRequest, in searchIn) (searchOut, error) {
			return searchOut{Query: in.Query, Hits: []string{in.Query + "-1"}}, nil
		})
	var runs atomic.Int32
	AddTypedMethod(s, &MethodSpec{Name: mDelete, Extension: extSearch, Carrier: true, TargetMember: "index", Legacy: true},
		func(ctx context.Context, req *ExtensionRequest, in deleteIn) (map[string]any, error) {
			runs.Add(1)
			c, err := Elicit[confirmation](ctx, "Delete index "+req.Target+"?")
			if err != nil {
				return nil, err
			}
			v, err := c.Value()
			if err != nil {
				return nil, err
			}
			return map[string]any{"deleted": v.OK, "index": in.Index}, nil
		})
	return s, &runs
}

// extRequest builds a 2026-07-28 request with caps.
func extRequest(id int, method, caps, params string) string {
	p := `"_meta":` + metaJSON(caps)
	if params != "" {
		p += "," + params
	}
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"` + method + `","params":{` + p + `}}`
}

// extHeaders are the standard headers of body, Mcp-Name set to name
// when it is not empty.
func extHeaders(t testing.TB, body, name string) http.Header {
	h := headersFor(t, body)
	if name != "" {
		h.Set(HeaderName, encodeHeaderValue(name))
	}
	return h
}

// postTo posts body to url with h over loopback and returns the status
// and the messages of the answer (one JSON body, or the SSE events).
func postTo(t testing.TB, url, body string, h http.Header) (int, [][]byte) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = h
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, wiretest.SplitMessages(resp.Header.Get("Content-Type"), b)
}

func decodeMsg(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("bad message %q: %v", b, err)
	}
	return v
}

func lastMsg(t testing.TB, msgs [][]byte) map[string]any {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatal("no message")
	}
	return decodeMsg(t, msgs[len(msgs)-1])
}

func loopback(t testing.TB, s *Server) string {
	hs := httptest.NewServer(NewHTTPHandler(s, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// A custom method is answered over Streamable HTTP and over a byte
// stream in the 2026-07-28 form: resultType, the server's identity,
// then the handler's members.
func TestCustomMethodIsServedOverHTTPAndStdio(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	body := extRequest(1, mQuery, extCaps, `"query":"cats"`)
	status, msgs := postTo(t, loopback(t, s), body, extHeaders(t, body, ""))
	if status != http.StatusOK {
		t.Fatalf("HTTP status %d: %s", status, msgs)
	}
	wiretest.CheckWire(t, mQuery, msgs[0])
	want := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ext-server","version":"1"}},"query":"cats","hits":["cats-1"]}}`
	if string(msgs[0]) != want {
		t.Fatalf("HTTP answer\n%s\nwant\n%s", msgs[0], want)
	}

	c := newStreamClient(t, s)
	c.send(extRequest(1, mQuery, extCaps, `"query":"cats"`))
	got, _ := json.Marshal(c.next())
	var wantV any
	_ = json.Unmarshal([]byte(want), &wantV)
	wantB, _ := json.Marshal(wantV)
	if !bytes.Equal(got, wantB) {
		t.Fatalf("stdio answer %s, want %s", got, wantB)
	}
}

// A 2026-07-28 request of a custom method whose client did not declare
// the extension is answered -32021 naming it, and the handler does not
// run.
func TestCustomMethodOfAnUndeclaredExtensionIsMissingCapability(t *testing.T) {
	t.Parallel()
	s, runs := newExtServer(t, nil)
	url := loopback(t, s)
	for _, caps := range []string{`{}`, `{"extensions":{"com.example/other":{}}}`} {
		body := extRequest(1, mDelete, caps, `"index":"a"`)
		status, msgs := postTo(t, url, body, extHeaders(t, body, "a"))
		wiretest.CheckWire(t, mDelete, msgs[0])
		v := lastMsg(t, msgs)
		if status != http.StatusBadRequest || errorCode(t, v) != CodeMissingRequiredCapability {
			t.Fatalf("caps %s: status %d, %v", caps, status, v)
		}
		data := v["error"].(map[string]any)["data"].(map[string]any)
		exts := data["requiredCapabilities"].(map[string]any)["extensions"].(map[string]any)
		if _, ok := exts[extSearch]; !ok || len(exts) != 1 {
			t.Fatalf("requiredCapabilities %v does not name the extension alone", data)
		}
	}
	if runs.Load() != 0 {
		t.Fatalf("the handler ran %d times", runs.Load())
	}
}

// Methods nobody registered stay -32601 (HTTP 404); a method served on
// 2026-07-28 only is -32601 on a session too.
func TestUnknownMethodsStayMethodNotFound(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	s.AddMethod(&MethodSpec{Name: "com.example/search/modern", Extension: extSearch},
		func(context.Context, *ExtensionRequest) (Result, error) { return EmptyResult{}, nil })
	url := loopback(t, s)
	body := extRequest(1, "com.example/search/nope", extCaps, "")
	status, msgs := postTo(t, url, body, extHeaders(t, body, ""))
	if v := lastMsg(t, msgs); status != http.StatusNotFound || errorCode(t, v) != CodeMethodNotFound {
		t.Fatalf("unknown method: status %d, %v", status, v)
	}

	lc := newLegacyClient(t, url, `{}`)
	if v := lc.request("com.example/search/modern", ""); errorCode(t, v) != CodeMethodNotFound {
		t.Fatalf("modern-only method on a session: %v", v)
	}
	if v := lc.request("com.example/search/nope", ""); errorCode(t, v) != CodeMethodNotFound {
		t.Fatalf("unknown method on a session: %v", v)
	}
}

// On a session of an earlier revision (which negotiates no extension per request) a
// method registered with Legacy is served without an extension check,
// and its result is the handler's object alone.
func TestLegacySessionGetsACustomResultPlain(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	lc := newLegacyClient(t, loopback(t, s), `{}`)
	v := lc.request(mQuery, `{"query":"dogs"}`)
	r := result(t, v)
	if _, ok := r["resultType"]; ok {
		t.Fatalf("legacy result has resultType: %v", r)
	}
	if _, ok := r["_meta"]; ok {
		t.Fatalf("legacy result has _meta: %v", r)
	}
	if r["query"] != "dogs" || len(r["hits"].([]any)) != 1 {
		t.Fatalf("legacy result %v", r)
	}
	// The declared extension is in the initialize result too (capabilities
	// are open in every revision; see TestLegacyInitializeDeclaresTheServersExtensionsButTasks).
	if caps := lc.lastInit["capabilities"].(map[string]any); caps["extensions"] == nil {
		t.Fatalf("a 2025-11-25 initialize left out the declared extensions: %v", caps)
	} else if _, ok := caps["extensions"].(map[string]any)[extSearch]; !ok {
		t.Fatalf("a 2025-11-25 initialize left out %s: %v", extSearch, caps)
	}

	// Over stdio as well; a carrier asks with a live request there.
	c := newStreamClient(t, s)
	c.send(legacyInitLine(`{"elicitation":{}}`))
	c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"` + mDelete + `","params":{"index":"logs"}}`)
	res, asked := answerUntil(t, c, 7, func(string, map[string]any) any {
		return map[string]any{"action": "accept", "content": map[string]any{"ok": true}}
	})
	if r := result(t, res); r["deleted"] != true || r["index"] != "logs" || r["resultType"] != nil {
		t.Fatalf("stdio session result %v", res)
	}
	if len(asked) != 1 || asked[0] != MethodElicit {
		t.Fatalf("asked %v", asked)
	}
}

// Middleware sees a custom method like any other: its name and its
// *ExtensionRequest (the decoded target included), and what it returns
// is what the client gets.
func TestCustomMethodsRunThroughUserMiddleware(t *testing.T) {
	t.Parallel()
	var seen []string
	mw := func(next ServerHandler) ServerHandler {
		return func(ctx context.Context, method string, p Params) (Result, error) {
			if r, ok := p.(*ExtensionRequest); ok {
				seen = append(seen, method+"|"+r.Extension()+"|"+r.Target)
				if r.Target == "forbidden" {
					return nil, jsonrpcError(CodeInvalidParams, "Invalid params: not this index")
				}
			}
			return next(ctx, method, p)
		}
	}
	s, runs := newExtServer(t, &ServerOptions{Middleware: []ServerMiddleware{mw}})
	url := loopback(t, s)
	body := extRequest(1, mDelete, extCaps, `"index":"forbidden"`)
	_, msgs := postTo(t, url, body, extHeaders(t, body, "forbidden"))
	if v := lastMsg(t, msgs); errorCode(t, v) != CodeInvalidParams {
		t.Fatalf("middleware's answer not sent: %v", v)
	}
	body = extRequest(2, mQuery, extCaps, `"query":"q"`)
	postTo(t, url, body, extHeaders(t, body, ""))
	if want := []string{mDelete + "|" + extSearch + "|forbidden", mQuery + "|" + extSearch + "|"}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("middleware saw %v, want %v", seen, want)
	}
	if runs.Load() != 0 {
		t.Fatal("the handler ran behind the middleware's answer")
	}
}

// A carrier custom method that asks completes a two-round call: the
// first leg answers input_required with a sealed requestState (not the
// plaintext), the retry with the answer and the state completes, and
// the state is bound to the method, the target and the params.
func TestCarrierCustomMethodAsksThenCompletesWithASealedState(t *testing.T) {
	t.Parallel()
	s, runs := newExtServer(t, nil)
	url := loopback(t, s)
	params := `"index":"logs","force":true`
	body := extRequest(1, mDelete, extCaps, params)
	_, msgs := postTo(t, url, body, extHeaders(t, body, "logs"))
	wiretest.CheckWire(t, mDelete, msgs[0])
	r := result(t, lastMsg(t, msgs))
	if r["resultType"] != "input_required" {
		t.Fatalf("first leg: %v", r)
	}
	state, _ := r["requestState"].(string)
	if state == "" || strings.Contains(state, "logs") {
		t.Fatalf("requestState %q is not a sealed token", state)
	}
	var key string
	for k := range r["inputRequests"].(map[string]any) {
		key = k
	}
	answer := `,"inputResponses":{"` + key + `":{"action":"accept","content":{"ok":true}}},"requestState":` + quote(state)

	// The state does not open for another target or other params.
	for _, other := range []struct{ params, name string }{{`"index":"other","force":true`, "other"}, {`"index":"logs"`, "logs"}} {
		b := extRequest(2, mDelete, extCaps, other.params+answer)
		_, m := postTo(t, url, b, extHeaders(t, b, other.name))
		if got := lastMsg(t, m); !sameError(got, ErrInvalidRequestState) {
			t.Fatalf("state reused for %s: %v", other.params, got)
		}
	}

	body = extRequest(3, mDelete, extCaps, params+answer)
	_, msgs = postTo(t, url, body, extHeaders(t, body, "logs"))
	wiretest.CheckWire(t, mDelete, msgs[0])
	r = result(t, lastMsg(t, msgs))
	if r["resultType"] != "complete" || r["deleted"] != true || r["index"] != "logs" {
		t.Fatalf("second leg: %v", r)
	}
	if runs.Load() != 2 {
		t.Fatalf("handler ran %d times, want 2", runs.Load())
	}
}

func sameError(v map[string]any, e *Error) bool {
	got, _ := json.Marshal(v["error"]) // maps marshal sorted
	var w any
	b, _ := json.Marshal(e)
	_ = json.Unmarshal(b, &w)
	want, _ := json.Marshal(w)
	return bytes.Equal(got, want)
}

// A forged requestState on a carrier custom method gets the one fixed
// -32602 every rejected state gets, and the handler does not run.
func TestForgedStateOnACustomMethodIsTheFixedInvalidParams(t *testing.T) {
	t.Parallel()
	s, runs := newExtServer(t, nil)
	url := loopback(t, s)
	for _, st := range []string{`"forged"`, `"AAAA"`, `42`} {
		body := extRequest(1, mDelete, extCaps, `"index":"logs","requestState":`+st)
		status, msgs := postTo(t, url, body, extHeaders(t, body, "logs"))
		if v := lastMsg(t, msgs); status != http.StatusOK || !sameError(v, ErrInvalidRequestState) {
			t.Fatalf("state %s: status %d, %v", st, status, v)
		}
	}
	if runs.Load() != 0 {
		t.Fatalf("handler ran %d times on forged states", runs.Load())
	}
}

// A method with a TargetMember binds it to Mcp-Name on HTTP: required
// on 2026-07-28 and equal to the member, so that intermediaries see what
// the server executes.
func TestCustomMethodTargetIsBoundToMcpName(t *testing.T) {
	t.Parallel()
	s, runs := newExtServer(t, nil)
	url := loopback(t, s)
	body := extRequest(1, mDelete, extCaps, `"index":"logs"`)
	for name, edit := range map[string]func(http.Header){
		"missing":  func(h http.Header) { h.Del(HeaderName) },
		"mismatch": func(h http.Header) { h.Set(HeaderName, "other") },
	} {
		h := extHeaders(t, body, "logs")
		edit(h)
		status, msgs := postTo(t, url, body, h)
		if v := lastMsg(t, msgs); status != http.StatusBadRequest || errorCode(t, v) != CodeHeaderMismatch {
			t.Fatalf("%s Mcp-Name: status %d, %v", name, status, v)
		}
	}
	// The target member itself is required and a string.
	for _, p := range []string{``, `"index":7`, `"Index":"logs"`} {
		b := extRequest(2, mDelete, extCaps, p)
		status, msgs := postTo(t, url, b, extHeaders(t, b, "logs"))
		if v := lastMsg(t, msgs); status != http.StatusBadRequest || errorCode(t, v) != CodeInvalidParams {
			t.Fatalf("params {%s}: status %d, %v", p, status, v)
		}
	}
	if runs.Load() != 0 {
		t.Fatal("handler ran")
	}
}

// A typed method validates its params against the schema of In before
// the handler runs: wrong types, missing required members, repeated
// members and members folding onto a declared one are -32602.
func TestTypedMethodParamsAreValidatedBeforeTheHandler(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	url := loopback(t, s)
	for _, p := range []string{`"query":7`, ``, `"query":"a","QUERY":"b"`, `"query":"a","query":"b"`, `"query":"a","extra":{"x":1,"x":2}`} {
		b := extRequest(1, mQuery, extCaps, p)
		_, msgs := postTo(t, url, b, extHeaders(t, b, ""))
		if v := lastMsg(t, msgs); errorCode(t, v) != CodeInvalidParams {
			t.Fatalf("params {%s}: %v", p, v)
		}
	}
}

// Registration rejects what the wire could not carry or would confuse:
// methods of the specification, notifications, invalid names and
// extension identifiers, a target the SDK reads itself, and typed
// methods whose params or result are not objects.
func TestCustomMethodRegistrationRejectsInvalidSpecs(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	h := func(context.Context, *ExtensionRequest) (Result, error) { return EmptyResult{}, nil }
	for _, spec := range []*MethodSpec{
		nil,
		{Name: MethodToolsCall, Extension: extSearch},
		{Name: methodPing, Extension: extSearch},
		{Name: methodInitialize, Extension: extSearch},
		{Name: "notifications/x", Extension: extSearch},
		{Name: "rpc.x", Extension: extSearch},
		{Name: "has space", Extension: extSearch},
		{Name: "", Extension: extSearch},
		{Name: "x/y", Extension: "no-slash"},
		{Name: "x/y", Extension: "com.example/"},
		{Name: "x/y", Extension: ".com/x"},
		{Name: "x/y", Extension: extSearch, TargetMember: "_meta"},
		{Name: "x/y", Extension: extSearch, Carrier: true, TargetMember: "requestState"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("AddTypedMethod(%+v) did not panic", spec)
				}
			}()
			s.AddMethod(spec, h)
		}()
	}
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		f()
	}
	mustPanic("AddExtension(bad id)", func() { s.AddExtension("bad", nil) })
	mustPanic("AddExtension(array settings)", func() { s.AddExtension(extSearch, []int{1}) })
	mustPanic("typed, string params", func() {
		AddTypedMethod(s, &MethodSpec{Name: "x/y", Extension: extSearch}, func(context.Context, *ExtensionRequest, string) (searchOut, error) { return searchOut{}, nil })
	})
	mustPanic("typed, int result", func() {
		AddTypedMethod(s, &MethodSpec{Name: "x/y", Extension: extSearch}, func(context.Context, *ExtensionRequest, searchIn) (int, error) { return 0, nil })
	})
}

// An ExtensionResult with its own _meta keeps it (no server identity is
// spliced beside it), a ResultType of the extension is sent as is, and
// a value that is not an object, or carries resultType itself, is a
// server bug: -32603.
func TestExtensionResultIsEncodedInTheRequestsEra(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	results := map[string]Result{
		"own-meta":  &ExtensionResult{Value: json.RawMessage(`{ "_meta" : {"k":1}, "v" : 2 }`)},
		"typed":     &ExtensionResult{Value: map[string]int{"n": 1}, ResultType: "com.example/pending"},
		"empty":     &ExtensionResult{},
		"array":     &ExtensionResult{Value: []int{1}},
		"has-rtype": &ExtensionResult{Value: map[string]string{"resultType": "complete"}},
		"nil":       (*ExtensionResult)(nil),
	}
	for name, res := range results {
		s.AddMethod(&MethodSpec{Name: "x/" + name, Extension: extSearch}, func(context.Context, *ExtensionRequest) (Result, error) { return res, nil })
	}
	url := loopback(t, s)
	want := map[string]string{
		"own-meta": `{"resultType":"complete","_meta":{"k":1},"v":2}`,
		"typed":    `{"resultType":"com.example/pending","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"t","version":"1"}},"n":1}`,
		"empty":    `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"t","version":"1"}}}`,
	}
	for name := range results {
		body := extRequest(1, "x/"+name, extCaps, "")
		_, msgs := postTo(t, url, body, extHeaders(t, body, ""))
		v := lastMsg(t, msgs)
		if w, ok := want[name]; ok {
			got, _ := json.Marshal(v["result"])
			var wv any
			_ = json.Unmarshal([]byte(w), &wv)
			wb, _ := json.Marshal(wv)
			if !bytes.Equal(got, wb) {
				t.Errorf("%s: %s, want %s", name, got, wb)
			}
			continue
		}
		if errorCode(t, v) != CodeInternalError {
			t.Errorf("%s: %v", name, v)
		}
	}
}

// Notify sends an extension's notification on the request's own stream
// before its response (SSE on HTTP, the connection on stdio); the
// specification's notifications are refused.
func TestNotifySendsOnTheRequestStreamBeforeTheResponse(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	var refused error
	s.AddMethod(&MethodSpec{Name: "x/work", Extension: extSearch}, func(ctx context.Context, r *ExtensionRequest) (Result, error) {
		refused = Notify(ctx, notificationProgress, nil)
		if err := Notify(ctx, "com.example/search/progress", map[string]int{"done": 1}); err != nil {
			return nil, err
		}
		return &ExtensionResult{}, nil
	})
	body := extRequest(1, "x/work", extCaps, "")
	_, msgs := postTo(t, loopback(t, s), body, extHeaders(t, body, ""))
	if len(msgs) != 2 {
		t.Fatalf("HTTP: %d messages: %s", len(msgs), msgs)
	}
	if n := decodeMsg(t, msgs[0]); n["method"] != "com.example/search/progress" || n["params"].(map[string]any)["done"] != 1.0 {
		t.Fatalf("HTTP notification %v", n)
	}
	if !errors.Is(refused, errNotificationMethod) {
		t.Fatalf("Notify of notifications/progress: %v", refused)
	}

	c := newStreamClient(t, s)
	c.send(extRequest(1, "x/work", extCaps, ""))
	if n := c.next(); n["method"] != "com.example/search/progress" {
		t.Fatalf("stdio: first line %v", n)
	}
	if r := c.next(); r["result"] == nil {
		t.Fatalf("stdio: second line %v", r)
	}
	if err := Notify(context.Background(), "com.example/x", nil); err != nil {
		t.Fatalf("Notify outside a request: %v", err)
	}
}

// NotifyListeners reaches the listen streams whose request declared the
// extension, with the stream's subscription id in _meta, and no other.
func TestNotifyListenersReachesOnlyStreamsThatDeclaredTheExtension(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	with, without := newStreamClient(t, s), newStreamClient(t, s)
	listen := `"notifications":{"resourceSubscriptions":["test://marker"]}`
	with.send(extRequest(11, methodSubscriptionsListen, extCaps, listen))
	without.send(extRequest(12, methodSubscriptionsListen, `{}`, listen))
	with.next() // acknowledged
	without.next()
	if err := s.NotifyListeners(extSearch, "com.example/search/reindexed", json.RawMessage(`{"_meta":{"k":"v"},"index":"logs"}`)); err != nil {
		t.Fatal(err)
	}
	s.ResourceUpdated("test://marker")
	n := with.next()
	p, _ := n["params"].(map[string]any)
	meta, _ := p["_meta"].(map[string]any)
	if n["method"] != "com.example/search/reindexed" || p["index"] != "logs" || meta["k"] != "v" || meta[metaSubscriptionID] != 11.0 {
		t.Fatalf("stream with the extension got %v", n)
	}
	if n := without.next(); n["method"] != NotificationResourceUpdated {
		t.Fatalf("stream without the extension got %v first", n)
	}
	if err := s.NotifyListeners(extSearch, NotificationToolListChanged, nil); !errors.Is(err, errNotificationMethod) {
		t.Fatalf("a specification notification: %v", err)
	}
}

// server/discover advertises the extensions AddExtension and AddMethod
// registered, settings included, beside those of the options.
func TestExtensionsAreAdvertisedInDiscover(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, &ServerOptions{Capabilities: &ServerCapabilities{Extensions: map[string]json.RawMessage{"org.example/opt": json.RawMessage(`{}`)}}})
	s.AddMethod(&MethodSpec{Name: "net.example/x/do", Extension: "net.example/x"}, func(context.Context, *ExtensionRequest) (Result, error) { return EmptyResult{}, nil })
	v := post(t, NewHTTPHandler(s, nil), req(1, MethodDiscover, "")).last(t)
	exts := result(t, v)["capabilities"].(map[string]any)["extensions"].(map[string]any)
	if exts[extSearch].(map[string]any)["maxLimit"] != 10.0 || exts["net.example/x"] == nil || exts["org.example/opt"] == nil || len(exts) != 3 {
		t.Fatalf("extensions %v", exts)
	}
}

// FuzzDecodeExtension feeds arbitrary params to the seam's decoder of a
// carrier with a target: no panic; what decodes has a valid Params
// without the members the SDK read.
func FuzzDecodeExtension(f *testing.F) {
	for _, s := range []string{
		`{"_meta":` + metaJSON(extCaps) + `,"index":"a","force":true,"inputResponses":{"k":{"action":"accept"}},"requestState":"x"}`,
		`{"_meta":{},"index":"a","Index":"b"}`,
		`{"_meta":{},"index":"a","x":{"y":1,"y":2}}`,
		`{"_meta":{},"index":"\u0061","requeststate":1}`,
		`{"_meta":{},"in\u0064ex":"a","n":[1,{"a":null}]}`,
		`[]`, `{`, `{"_meta":{}}`,
	} {
		f.Add([]byte(s))
	}
	s, _ := newExtServer(f, nil)
	spec := s.customSpec(mDelete, true)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var pres metaPresence
		p, err := spec.decode(raw, &pres)
		r, ok := p.(*ExtensionRequest)
		if !ok || r == nil {
			t.Fatalf("decoder returned %T (err %v)", p, err)
		}
		if err != nil || !json.Valid(raw) {
			return
		}
		if !json.Valid(r.Params) {
			t.Fatalf("params %q: invalid Params %q", raw, r.Params)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(r.Params, &m) != nil {
			t.Fatalf("Params %q is not an object", r.Params)
		}
		for _, k := range []string{"_meta", "inputResponses", "requestState"} {
			if _, ok := m[k]; ok {
				t.Fatalf("Params %q kept %s", r.Params, k)
			}
		}
	})
}

// A second extension cannot take a method name another extension
// registered: the registration panics (it would have replaced the first
// handler while the first extension stayed advertised), and the first
// method is served and advertised as before. The same extension may
// still replace its own method.
func TestAMethodNameOfAnotherExtensionIsRefused(t *testing.T) {
	t.Parallel()
	s, _ := newExtServer(t, nil)
	const other = "org.other/search"
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			p := recover()
			if msg, _ := p.(string); !strings.Contains(msg, mQuery) || !strings.Contains(msg, extSearch) || !strings.Contains(msg, other) {
				t.Errorf("%s: panic %v, want one naming the method and both extensions", what, p)
			}
		}()
		f()
	}
	mustPanic("AddMethod", func() {
		s.AddMethod(&MethodSpec{Name: mQuery, Extension: other}, func(context.Context, *ExtensionRequest) (Result, error) { return EmptyResult{}, nil })
	})
	mustPanic("typed AddMethod", func() {
		AddTypedMethod(s, &MethodSpec{Name: mQuery, Extension: other}, func(context.Context, *ExtensionRequest, searchIn) (searchOut, error) { return searchOut{}, nil })
	})
	body := extRequest(1, mQuery, extCaps, `"query":"cats"`)
	_, msgs := postTo(t, loopback(t, s), body, extHeaders(t, body, ""))
	if r := result(t, lastMsg(t, msgs)); r["query"] != "cats" {
		t.Fatalf("the first extension's method answered %s", msgs)
	}
	v := post(t, NewHTTPHandler(s, nil), req(2, MethodDiscover, "")).last(t)
	if exts := result(t, v)["capabilities"].(map[string]any)["extensions"].(map[string]any); exts[other] != nil || exts[extSearch] == nil {
		t.Fatalf("extensions advertised %v", exts)
	}
	// Its own extension replaces it, as documented.
	s.AddMethod(&MethodSpec{Name: mQuery, Extension: extSearch}, func(context.Context, *ExtensionRequest) (Result, error) {
		return &ExtensionResult{Value: map[string]any{"replaced": true}}, nil
	})
	_, msgs = postTo(t, loopback(t, s), body, extHeaders(t, body, ""))
	if r := result(t, lastMsg(t, msgs)); r["replaced"] != true {
		t.Fatalf("the replaced method answered %s", msgs)
	}
}
