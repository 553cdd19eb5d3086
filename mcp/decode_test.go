package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// benchNestedBody is a tools/call with nested arguments, the case the
// argument checks walk furthest.
var benchNestedBody = []byte(req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"hello","opts":{"zone":"b","tags":["x","y"],"limits":{"cpu":2,"mem":"4Gi"}},"items":[{"id":1,"name":"a"},{"id":2,"name":"b"}]}`))

func BenchmarkDecodeToolCall(b *testing.B) {
	s := benchServer()
	for _, bc := range []struct {
		name string
		body []byte
	}{{"small", benchBody}, {"nested", benchNestedBody}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, f := s.decodeCall(bc.body); f != nil {
					b.Fatal(f.err)
				}
			}
		})
	}
}

// TestArgumentsRepeatingAMemberAreInvalidParams: tools/call and
// prompts/get arguments repeating a member in some object, at any depth,
// names compared after resolving escapes, are -32602 naming the member,
// in both eras, before the handler or the state boundary sees them.
func TestArgumentsRepeatingAMemberAreInvalidParams(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	h := NewHTTPHandler(s, nil)
	cases := []struct{ method, params, name string }{
		{MethodToolsCall, `"name":"echo","arguments":{"region":"us","\u0072egion":"eu"}`, "region"},
		{MethodToolsCall, `"name":"echo","arguments":{"\u0072egion":"eu","region":"us"}`, "region"},
		{MethodToolsCall, `"name":"echo","arguments":{"a":[{"b":{"c":1,"d":2,"c":3}}]}`, "c"},
		{MethodToolsCall, "\"name\":\"echo\",\"arguments\":{\"a\xff\":1,\"a\xfe\":2}", "a\ufffd"},
		{MethodToolsCall, `"name":"echo","arguments":{"text":"x","text":"y"},"requestState":"bogus"`, "text"},
		{MethodPromptsGet, `"name":"greet","arguments":{"who":"Ann","w\u0068o":"Bob"}`, "who"},
	}
	for _, c := range cases {
		res := post(t, h, req(1, c.method, c.params))
		v := res.last(t)
		if res.status != 400 || errorCode(t, v) != CodeInvalidParams {
			t.Errorf("%s: %d %s", c.params, res.status, res.body)
			continue
		}
		if msg := v["error"].(map[string]any)["message"].(string); !strings.Contains(msg, `duplicate member "`+c.name+`" in arguments`) {
			t.Errorf("%s: message %q", c.params, msg)
		}
	}
	// Many members take the set path; distinct names pass.
	var b strings.Builder
	for i := range 100 {
		b.WriteString(`"k` + itoa(i) + `":1,`)
	}
	if v := post(t, h, req(1, MethodToolsCall, `"name":"echo","arguments":{`+b.String()+`"text":"ok"}`)).last(t); v["error"] != nil {
		t.Errorf("100 distinct members: %v", v)
	}
	if v := post(t, h, req(1, MethodToolsCall, `"name":"echo","arguments":{`+b.String()+`"k7":2}`)).last(t); errorCode(t, v) != CodeInvalidParams {
		t.Errorf("a repeat among 100 members: %v", v)
	}
	// 2025-11-25 requests decode through the same code.
	ts, _ := legacyServer(t, s, nil)
	lc := newLegacyClient(t, ts.URL, legacyCaps)
	if v := lc.request(MethodToolsCall, `{"name":"echo","arguments":{"text":"a","te\u0078t":"b"}}`); errorCode(t, v) != CodeInvalidParams {
		t.Errorf("legacy: %v", v)
	}
}

// TestParamsRefuseUnicodeCaseVariants: a member that encoding/json would
// read as a known params, _meta, capabilities or clientInfo member
// (folding U+017F ſ to s, U+212A K to k) is -32602, like an ASCII case
// variant.
func TestParamsRefuseUnicodeCaseVariants(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	for name, body := range map[string]string{
		"params":       req(1, MethodToolsCall, `"name":"echo","arguments":{},"argumentſ":{"text":"x"}`),
		"params ascii": req(1, MethodToolsCall, `"name":"echo","ARGUMENTS":{}`),
		"_meta":        strings.Replace(req(1, MethodToolsList, ""), `"io.modelcontextprotocol/clientInfo"`, `"io.modelcontextprotocol/protocolVerſion":"2025-11-25","io.modelcontextprotocol/clientInfo"`, 1),
		"capabilities": strings.Replace(req(1, MethodToolsList, ""), `"roots":{}`, `"roots":{},"ſampling":{}`, 1),
		"clientInfo":   strings.Replace(req(1, MethodToolsList, ""), `"version":"1"`, `"version":"1","verſion":"2"`, 1),
		"clientInfo 2": strings.Replace(req(1, MethodToolsList, ""), `"version":"1"`, `"version":"1","version":"2"`, 1),
	} {
		hdr := headersFor(t, body)
		res := doHTTP(t, h, body, hdr)
		if res.status != 400 || errorCode(t, res.last(t)) != CodeInvalidParams {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
}

// Provision is a typed tool's input: a bounded count and a nested size.
type Provision struct {
	Count int `json:"count"`
	Opts  struct {
		Size string `json:"size"`
	} `json:"opts"`
}

// TestTypedToolArgumentsAreDecodedAsValidated: a typed tool validates
// its raw arguments by exact name and decodes them with encoding/json;
// a member folding onto a declared property, at any declared depth, is
// an invalid-arguments result, never an unvalidated field value.
func TestTypedToolArgumentsAreDecodedAsValidated(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "typed", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer","maximum":10},"opts":{"type":"object","properties":{"size":{"type":"string","enum":["s","m"]}}}}}`)
	var ran atomic.Int32
	AddTypedTool(s, &Tool{Name: "p", InputSchema: schema}, func(ctx context.Context, _ *CallToolRequest, in Provision) (*CallToolResult, error) {
		ran.Add(1)
		return TextResult(itoa(in.Count) + " " + in.Opts.Size), nil
	})
	h := NewHTTPHandler(s, nil)
	for _, args := range []string{
		`{"count":1,"COUNT":1000}`,
		`{"Count":1000}`,
		`{"count":1,"opts":{"size":"s","ſize":"xxl"}}`,
		`{"count":1,"opts":{"SIZE":"xxl"}}`,
		`{"count":1,"OPTS":{"size":"xxl"}}`,
	} {
		v := post(t, h, req(1, MethodToolsCall, `"name":"p","arguments":`+args)).last(t)
		if r := result(t, v); r["isError"] != true || !strings.Contains(text(t, v), "only in case") {
			t.Errorf("%s: %v", args, r)
		}
	}
	if ran.Load() != 0 {
		t.Fatalf("the handler ran on refused arguments")
	}
	if got := text(t, post(t, h, req(1, MethodToolsCall, `"name":"p","arguments":{"count":3,"opts":{"size":"m"},"extra":{"COUNT":5}}`)).last(t)); got != "3 m" {
		t.Errorf("valid arguments: %q", got)
	}
}

// TestStringIDWithInvalidUTF8IsEchoedAsValidJSON: an id (or progress
// token) holding invalid UTF-8 is echoed as valid UTF-8 JSON, in results
// and in errors.
func TestStringIDWithInvalidUTF8IsEchoedAsValidJSON(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	ok := strings.Replace(req(1, MethodToolsList, ""), `"id":1`, "\"id\":\"a\xffb\"", 1)
	bad := strings.Replace(req(1, "nope/nope", ""), `"id":1`, "\"id\":\"a\xffb\"", 1)
	badParams := strings.Replace(req(1, MethodToolsCall, `"name":5`), `"id":1`, "\"id\":\"\xc3\"", 1)
	for _, body := range []string{ok, bad, badParams} {
		hdr := headersFor(t, body)
		hdr.Set(HeaderMethod, MethodToolsList)
		res := doHTTP(t, h, body, hdr)
		if len(res.messages) == 0 {
			t.Fatalf("%q: no response", body)
		}
		m := res.messages[len(res.messages)-1]
		if !utf8.Valid(m) || !json.Valid(m) {
			t.Errorf("response %q is not valid UTF-8 JSON", m)
		}
		var v struct{ ID string }
		if json.Unmarshal(m, &v) != nil || !strings.Contains(v.ID, "\ufffd") {
			t.Errorf("id not echoed with U+FFFD: %s", m)
		}
	}
	var tok string
	if got := progressToken([]byte("\"t\xff\"")); !utf8.Valid(got) || json.Unmarshal(got, &tok) != nil || tok != "t\ufffd" {
		t.Errorf("progress token %q", got)
	}
}
