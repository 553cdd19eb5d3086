package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

var orderSchema = json.RawMessage(`{"type":"object","properties":{
	"id":{"type":"string"},
	"items":{"type":"array","items":{"$ref":"#/$defs/item"}},
	"status":{"enum":["open","closed"]}},
	"required":["id","items"],"additionalProperties":false,
	"$defs":{"item":{"type":"object","properties":{"sku":{"type":"string","minLength":3},"price":{"type":"number","minimum":0}},"required":["sku","price"]}}}`)

// outputServer serves tools whose results are given by the test: "order"
// declares orderSchema, "plain" declares none.
func outputServer(t testing.TB, result *CallToolResult, opts ...ToolOption) *Server {
	s := NewServer(Implementation{Name: "out", Version: "1"}, nil)
	h := func(context.Context, *CallToolRequest) (ToolResponse, error) {
		cp := *result
		return &cp, nil
	}
	s.AddTool(&Tool{Name: "order", OutputSchema: orderSchema}, h, opts...)
	s.AddTool(&Tool{Name: "plain"}, h, opts...)
	return s
}

func structured(v string) *CallToolResult {
	return &CallToolResult{Content: []Content{&TextContent{Text: v}}, StructuredContent: json.RawMessage(v)}
}

func listAll(t testing.TB, c *Client) {
	t.Helper()
	for _, err := range c.Tools(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The client checks structuredContent against the outputSchema it saw
// in tools/list: a mismatch is an *OutputValidationError naming the
// JSON pointer that failed.
func TestClientRejectsStructuredContentBreakingTheOutputSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ value, pointer, reason string }{
		{`{"id":"o1","items":[{"sku":"abc","price":1},{"sku":"def","price":"9"}]}`, "/items/1/price", "type"},
		{`{"id":"o1","items":[{"sku":"ab","price":1}]}`, "/items/0/sku", "minLength"},
		{`{"id":"o1","items":[{"sku":"abc"}]}`, "/items/0", `required: missing "price"`},
		{`{"id":"o1","items":[],"extra":true}`, "/extra", "additionalProperties"},
		{`{"id":"o1","items":[],"status":"lost"}`, "/status", "enum"},
		{`{"items":[]}`, "", `required: missing "id"`},
		{`[1,2]`, "", "type: got array, want object"},
	} {
		s := outputServer(t, structured(tc.value))
		clientTransports(t, s, nil, func(t *testing.T, c *Client) {
			listAll(t, c)
			res, err := c.CallTool(context.Background(), "order", nil, nil)
			var ve *OutputValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("%s: got %v, %v", tc.value, res, err)
			}
			if ve.Tool != "order" || ve.Pointer != tc.pointer || !strings.Contains(ve.Reason, tc.reason) || ve.Result == nil {
				t.Fatalf("%s: got %+v, want pointer %q reason ~%q", tc.value, ve, tc.pointer, tc.reason)
			}
			if !strings.Contains(err.Error(), `"`+tc.pointer+`"`) {
				t.Fatalf("the message does not name the pointer: %v", err)
			}
		})
	}
}

// A result that matches passes; a tool without outputSchema and an
// isError result are not checked.
func TestClientAcceptsMatchingStructuredContent(t *testing.T) {
	t.Parallel()
	ok := `{"id":"o1","items":[{"sku":"abc","price":1.5}],"status":"open"}`
	clientTransports(t, outputServer(t, structured(ok)), nil, func(t *testing.T, c *Client) {
		listAll(t, c)
		res, err := c.CallTool(context.Background(), "order", nil, nil)
		if err != nil || string(res.StructuredContent.(json.RawMessage)) != ok {
			t.Fatal(res, err)
		}
	})
	bad := structured(`{"nonsense":1}`)
	clientTransports(t, outputServer(t, bad), nil, func(t *testing.T, c *Client) {
		listAll(t, c)
		if _, err := c.CallTool(context.Background(), "plain", nil, nil); err != nil {
			t.Fatalf("a tool without outputSchema was checked: %v", err)
		}
	})
	failed := structured(`{"nonsense":1}`)
	failed.IsError = true
	clientTransports(t, outputServer(t, failed), nil, func(t *testing.T, c *Client) {
		listAll(t, c)
		res, err := c.CallTool(context.Background(), "order", nil, nil)
		if err != nil || !res.IsError {
			t.Fatalf("an isError result was checked: %v %v", res, err)
		}
	})
}

// A tool with an outputSchema must send structuredContent.
func TestClientRejectsAMissingStructuredContent(t *testing.T) {
	t.Parallel()
	c := memClient(t, outputServer(t, TextResult("no structure")), nil)
	listAll(t, c)
	_, err := c.CallTool(context.Background(), "order", nil, nil)
	var ve *OutputValidationError
	if !errors.As(err, &ve) || ve.Pointer != "" || !strings.Contains(ve.Reason, "missing") {
		t.Fatalf("got %v", err)
	}
}

// The client checks only against a schema it has seen: a tool it has not
// listed is not checked, and no tools/list is sent for it.
func TestClientDoesNotValidateToolsItHasNotListed(t *testing.T) {
	t.Parallel()
	mc := &methodCounter{}
	srv := NewServer(Implementation{Name: "out", Version: "1"}, &ServerOptions{Middleware: []ServerMiddleware{mc.middleware}})
	srv.AddTool(&Tool{Name: "order", OutputSchema: orderSchema}, func(context.Context, *CallToolRequest) (ToolResponse, error) {
		return structured(`{"wrong":true}`), nil
	})
	c := memClient(t, srv, nil)
	if _, err := c.CallTool(context.Background(), "order", nil, nil); err != nil {
		t.Fatalf("a tool not listed yet was checked: %v", err)
	}
	if n := mc.count(MethodToolsList); n != 0 {
		t.Fatalf("%d tools/list sent for the check", n)
	}
	listAll(t, c)
	if _, err := c.CallTool(context.Background(), "order", nil, nil); !errors.Is(err, ErrInvalidOutput) {
		t.Fatalf("once listed: %v", err)
	}
}

// ClientOptions.SkipOutputValidation turns the check off.
func TestClientSkipOutputValidation(t *testing.T) {
	t.Parallel()
	c := memClient(t, outputServer(t, structured(`{"wrong":true}`)), &ClientOptions{SkipOutputValidation: true})
	listAll(t, c)
	if _, err := c.CallTool(context.Background(), "order", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// A schema changed in a later tools/list replaces the one learned; a
// tool listed again without one is not checked any more.
func TestClientRelearnsOutputSchemas(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "out", Version: "1"}, nil)
	h := func(context.Context, *CallToolRequest) (ToolResponse, error) { return structured(`{"n":"text"}`), nil }
	s.AddTool(&Tool{Name: "t", OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}, h)
	c := memClient(t, s, nil)
	listAll(t, c)
	if _, err := c.CallTool(context.Background(), "t", nil, nil); !errors.Is(err, ErrInvalidOutput) {
		t.Fatalf("got %v", err)
	}
	s.AddTool(&Tool{Name: "t", OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"string"}}}`)}, h)
	listAll(t, c)
	if _, err := c.CallTool(context.Background(), "t", nil, nil); err != nil {
		t.Fatalf("after the new schema: %v", err)
	}
	s.AddTool(&Tool{Name: "t"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return structured(`7`), nil })
	listAll(t, c)
	if _, err := c.CallTool(context.Background(), "t", nil, nil); err != nil {
		t.Fatalf("after the schema went: %v", err)
	}
}

// WithOutputValidation: the server refuses to send a result of its own
// tool that breaks the tool's outputSchema (-32603 naming the pointer),
// and sends those that match.
func TestServerWithOutputValidationRefusesInvalidResults(t *testing.T) {
	t.Parallel()
	type out struct {
		N int `json:"n"`
	}
	s := NewServer(Implementation{Name: "out", Version: "1"}, nil)
	AddTypedTool(s, &Tool{Name: "typed", OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}`)},
		func(ctx context.Context, r *CallToolRequest, in struct {
			N int `json:"n"`
		}) (out, error) {
			return out{N: in.N}, nil
		}, WithOutputValidation())
	s.AddTool(&Tool{Name: "low", OutputSchema: orderSchema}, func(context.Context, *CallToolRequest) (ToolResponse, error) {
		return &CallToolResult{Content: []Content{}, StructuredContent: map[string]any{"id": "o", "items": []any{map[string]any{"sku": "abc", "price": -1}}}}, nil
	}, WithOutputValidation())
	s.AddTool(&Tool{Name: "failing", OutputSchema: orderSchema}, func(context.Context, *CallToolRequest) (ToolResponse, error) {
		return ErrorResult("it broke"), nil
	}, WithOutputValidation())
	c := memClient(t, s, &ClientOptions{SkipOutputValidation: true})
	ctx := context.Background()
	res, err := c.CallTool(ctx, "typed", map[string]int{"n": 3}, nil)
	if err != nil || string(res.StructuredContent.(json.RawMessage)) != `{"n":3}` {
		t.Fatal(res, err)
	}
	for _, tc := range []struct {
		tool    string
		args    any
		pointer string
	}{{"typed", map[string]int{"n": -3}, "/n"}, {"low", nil, "/items/0/price"}} {
		_, err := c.CallTool(ctx, tc.tool, tc.args, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInternalError || !strings.Contains(e.Message, `"`+tc.pointer+`"`) {
			t.Fatalf("%s: got %v", tc.tool, err)
		}
		var data map[string]string
		if json.Unmarshal(e.Data, &data) != nil || data["pointer"] != tc.pointer || data["tool"] != tc.tool {
			t.Fatalf("%s: data %s", tc.tool, e.Data)
		}
	}
	if res, err := c.CallTool(ctx, "failing", nil, nil); err != nil || !res.IsError {
		t.Fatalf("an isError result was checked: %v %v", res, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a schema that cannot compile did not panic")
		}
	}()
	s.AddTool(&Tool{Name: "bad", OutputSchema: json.RawMessage(`{"$ref":"https://example.com/remote"}`)},
		func(context.Context, *CallToolRequest) (ToolResponse, error) { return nil, nil }, WithOutputValidation())
}

// The walk that names the failing value, keyword by keyword.
func TestOutputValidationPointsAtTheFailingValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ schema, value, pointer, reason string }{
		{`{"type":"object","properties":{"a/b":{"type":"string"},"c~d":{"type":"string"}}}`, `{"a/b":1}`, "/a~1b", "type"},
		{`{"type":"object","properties":{"c~d":{"type":"string"}}}`, `{"c~d":1}`, "/c~0d", "type"},
		{`{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`, `["a",1.5]`, "/1", "type: got number, want integer"},
		{`{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, `[1,2,1]`, "/2", "uniqueItems"},
		{`{"type":"array","maxItems":1}`, `[1,2]`, "", "maxItems"},
		{`{"anyOf":[{"type":"string"},{"type":"object","properties":{"x":{"type":"integer"}}}]}`, `{"x":"no"}`, "/x", "type"},
		{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `true`, "", "oneOf"},
		{`{"allOf":[{"type":"object"},{"required":["z"]}]}`, `{}`, "", "required"},
		{`{"type":"object","patternProperties":{"^n_":{"type":"number"}}}`, `{"n_1":"x"}`, "/n_1", "type"},
		{`{"type":"object","additionalProperties":{"type":"boolean"}}`, `{"k":1}`, "/k", "type"},
		{`{"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["a"]},"else":{"required":["b"]}}`, `{"kind":"a"}`, "", `missing "a"`},
		{`{"type":"string","pattern":"^[a-z]+$"}`, `"ABC"`, "", "pattern"},
		{`{"type":"number","exclusiveMaximum":10}`, `10`, "", "exclusiveMaximum"},
		{`{"type":"integer","multipleOf":3}`, `10`, "", "multipleOf"},
		{`{"const":{"a":1}}`, `{"a":2}`, "", "const"},
		{`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"v":{"type":"integer"}}}},"$ref":"#/$defs/n"}`, `{"next":{"next":{"v":"x"}}}`, "/next/next/v", "type"},
		{`{"type":"object","properties":{"a":false}}`, `{"a":1}`, "/a", "false"},
		{`{"not":{"type":"string"}}`, `"s"`, "", "not"},
	} {
		v, err := compileOutputSchema([]byte(tc.schema))
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		ptr, reason, ok := v.check([]byte(tc.value))
		if ok || ptr != tc.pointer || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s on %s: %q %q %v; want %q ~%q", tc.schema, tc.value, ptr, reason, ok, tc.pointer, tc.reason)
		}
	}
}

// benchOutputCanned answers tools/list with tools (each with its
// schema) and every other request with result.
func benchOutputCanned(b testing.TB, tools, result string, opts *ClientOptions) *Client {
	ce, se := NewInMemoryTransports()
	listed := `{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":` + tools + `}`
	list := []byte(`"method":"tools/list"`)
	go serveLines(se, se, func(line []byte) string {
		if bytes.Contains(line, list) {
			return listed
		}
		return result
	})
	c := NewClient(NewStreamClientTransport(ce, nil), opts)
	b.Cleanup(func() { c.Close(); se.Close() })
	return c
}

// BenchmarkToolsCallOutputValidation is one tools/call of a tool
// with a structured result, its schema inside the fast subset (as
// inferred from a Go type) or not (a $ref), checked or not; and one of a
// tool without outputSchema with validation on (the common call, which
// must not pay for the feature).
func BenchmarkToolsCallOutputValidation(b *testing.B) {
	const fast = `{"type":"object","properties":{"id":{"type":"string"},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"price":{"type":"number","minimum":0}},"required":["sku","price"],"additionalProperties":false}}},"required":["id","items"],"additionalProperties":false}`
	const value = `{"id":"o1","items":[{"sku":"abc","price":1.5},{"sku":"def","price":2},{"sku":"ghi","price":30}]}`
	result := `{"resultType":"complete","content":[{"type":"text","text":"ok"}],"structuredContent":` + value + `}`
	tools := `[{"name":"fast","inputSchema":{"type":"object"},"outputSchema":` + fast + `},` +
		`{"name":"full","inputSchema":{"type":"object"},"outputSchema":` + compactOrderSchema(b) + `},` +
		`{"name":"none","inputSchema":{"type":"object"}}]`
	for _, bc := range []struct {
		name, tool string
		skip       bool
	}{
		{"fast-schema/off", "fast", true}, {"fast-schema/on", "fast", false},
		{"full-schema/off", "full", true}, {"full-schema/on", "full", false},
		{"no-schema/off", "none", true}, {"no-schema/on", "none", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := benchOutputCanned(b, tools, result, &ClientOptions{SkipOutputValidation: bc.skip})
			listAll(b, c)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.CallTool(ctx, bc.tool, benchArgs, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func compactOrderSchema(t testing.TB) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, orderSchema); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// BenchmarkOutputSchemaCheck is the check alone, on the value of
// BenchmarkToolsCallOutputValidation: the fast validator on the raw
// bytes, and the full one (decode, then validate).
func BenchmarkOutputSchemaCheck(b *testing.B) {
	const fast = `{"type":"object","properties":{"id":{"type":"string"},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"price":{"type":"number","minimum":0}},"required":["sku","price"],"additionalProperties":false}}},"required":["id","items"],"additionalProperties":false}`
	value := []byte(`{"id":"o1","items":[{"sku":"abc","price":1.5},{"sku":"def","price":2},{"sku":"ghi","price":30}]}`)
	for _, bc := range []struct{ name, schema string }{{"fast", fast}, {"full", compactOrderSchema(b)}} {
		b.Run(bc.name, func(b *testing.B) {
			v, err := compileOutputSchema([]byte(bc.schema))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok := v.check(value); !ok {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// A call of a tool without outputSchema costs nothing more with
// validation on, even when the client knows other tools' schemas; a
// call whose result is checked by the fast validator costs a few
// allocations (measured: 8, the member names it records).
func TestAllocsClientCallWithOutputValidation(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	const schema = `{"type":"object","properties":{"id":{"type":"string"},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"price":{"type":"number","minimum":0}},"required":["sku","price"],"additionalProperties":false}}},"required":["id","items"],"additionalProperties":false}`
	result := `{"resultType":"complete","content":[{"type":"text","text":"ok"}],"structuredContent":{"id":"o1","items":[{"sku":"abc","price":1.5},{"sku":"def","price":2},{"sku":"ghi","price":30}]}}`
	tools := `[{"name":"fast","inputSchema":{"type":"object"},"outputSchema":` + schema + `},{"name":"none","inputSchema":{"type":"object"}}]`
	measure := func(skip bool, tool string) float64 {
		c := benchOutputCanned(t, tools, result, &ClientOptions{SkipOutputValidation: skip})
		listAll(t, c)
		var failed atomic.Bool
		n := testing.AllocsPerRun(200, func() {
			if _, err := c.CallTool(context.Background(), tool, benchArgs, nil); err != nil {
				failed.Store(true)
			}
		})
		if failed.Load() {
			t.Fatal("a call failed")
		}
		return n
	}
	off, none, fast := measure(true, "none"), measure(false, "none"), measure(false, "fast")
	if none > off {
		t.Errorf("a tool without outputSchema: %.0f allocations with validation on, %.0f off", none, off)
	}
	const budget = 10 // measured: 8
	if fast-off > budget {
		t.Errorf("a fast-schema check: %.0f allocations more than without it, budget %d", fast-off, budget)
	}
	if testing.Verbose() {
		t.Logf("validation off %.0f, on without schema %.0f, on with a fast schema %.0f allocations", off, none, fast)
	}
}

// fuzzOutputSchemas are the schemas FuzzOutputSchemaCheck checks values
// against, by index.
var fuzzOutputSchemas = []string{
	`{"type":"object","properties":{"id":{"type":"string"},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"price":{"type":"number","minimum":0}},"required":["sku","price"],"additionalProperties":false}}},"required":["id","items"],"additionalProperties":false}`,
	`{"type":"object","properties":{"id":{"type":"string"},"items":{"type":"array","items":{"$ref":"#/$defs/item"}},"status":{"enum":["open","closed"]}},"required":["id","items"],"additionalProperties":false,"$defs":{"item":{"type":"object","properties":{"sku":{"type":"string","minLength":3},"price":{"type":"number","minimum":0}},"required":["sku","price"]}}}`,
	`{"anyOf":[{"type":"string","pattern":"^a"},{"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"boolean"},"uniqueItems":true}]}`,
	`{"oneOf":[{"type":"object","patternProperties":{"^n":{"type":"number","multipleOf":2}}},{"type":"null"}],"not":{"const":{"n":4}}}`,
	`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"v":{"type":"integer","exclusiveMaximum":5}},"minProperties":1}},"$ref":"#/$defs/n"}`,
	`{"if":{"properties":{"k":{"const":"a"}}},"then":{"required":["a"]},"else":{"maxProperties":2},"additionalProperties":{"type":["string","boolean"]}}`,
}

// The check's verdict is the full validator's, and the pointer it gives
// for a refused value names a place that exists in the value.
func FuzzOutputSchemaCheck(f *testing.F) {
	for i, v := range []string{
		`{"id":"o1","items":[{"sku":"abc","price":1.5}]}`,
		`{"id":"o1","items":[{"sku":"ab","price":-1}],"x":1}`,
		`"abc"`, `[1,true,false]`, `[1,true,true]`, `{"n1":3}`, `{"n":4}`, `null`,
		`{"next":{"next":{"v":7}}}`, `{"k":"a","b":1}`, `{"k":"b","c":"x","d":true}`,
	} {
		f.Add(uint8(i%len(fuzzOutputSchemas)), v)
	}
	vs := make([]*outputValidator, len(fuzzOutputSchemas))
	refs := make([]*jsonschema.Resolved, len(fuzzOutputSchemas))
	for i, s := range fuzzOutputSchemas {
		v, err := compileOutputSchema([]byte(s))
		if err != nil {
			f.Fatalf("schema %d: %v", i, err)
		}
		vs[i] = v
		refs[i] = referenceSchema(f, s)
	}
	f.Fuzz(func(t *testing.T, which uint8, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		if _, dup := jsonrpc.DuplicateMember([]byte(s)); dup {
			return
		}
		v := vs[int(which)%len(vs)]
		var generic any
		if json.Unmarshal([]byte(s), &generic) != nil {
			return
		}
		full := refs[int(which)%len(vs)].Validate(generic) == nil
		ptr, reason, ok := v.check([]byte(s))
		if ok != full {
			t.Fatalf("%s: check %v, validator %v", s, ok, full)
		}
		if ok {
			return
		}
		if reason == "" {
			t.Fatalf("%s: no reason", s)
		}
		if !pointerExists(generic, ptr) {
			t.Fatalf("%s: pointer %q names nothing in the value (%s)", s, ptr, reason)
		}
	})
}

// referenceSchema compiles a trusted schema with
// github.com/google/jsonschema-go, the reference the engine's verdicts
// are held to.
func referenceSchema(t testing.TB, raw string) *jsonschema.Resolved {
	t.Helper()
	s := new(jsonschema.Schema)
	if err := json.Unmarshal([]byte(raw), s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pointerExists reports whether the JSON pointer p names a value in v.
func pointerExists(v any, p string) bool {
	if p == "" {
		return true
	}
	if p[0] != '/' {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return true
}

// The acceptance case: a typed tool (AddTool, its outputSchema inferred
// from its Go result type) returns a value its own schema refuses (a
// field type whose MarshalJSON writes a string where reflection infers a
// number); a Client with default options, over loopback HTTP, returns an
// *OutputValidationError whose message names the JSON pointer, and
// still hands over the result.
func TestClientCatchesATypedToolsInvalidStructuredContent(t *testing.T) {
	t.Parallel()
	type line struct {
		SKU   string     `json:"sku"`
		Price quotedCost `json:"price"`
	}
	type order struct {
		ID    string `json:"id"`
		Lines []line `json:"lines"`
	}
	s := NewServer(Implementation{Name: "typed", Version: "1"}, nil)
	AddTypedTool(s, &Tool{Name: "order"}, func(ctx context.Context, r *CallToolRequest, in struct {
		Price float64 `json:"price"`
	}) (order, error) {
		return order{ID: "o1", Lines: []line{{SKU: "a", Price: 1}, {SKU: "b", Price: quotedCost(in.Price)}}}, nil
	})
	c := httpClient(t, s, nil, nil)
	ctx := context.Background()
	listAll(t, c)
	if _, err := c.CallTool(ctx, "order", map[string]float64{"price": 2}, nil); err != nil {
		t.Fatalf("a valid result: %v", err)
	}
	res, err := c.CallTool(ctx, "order", map[string]float64{"price": -1}, nil)
	var verr *OutputValidationError
	if res != nil || !errors.As(err, &verr) || !errors.Is(err, ErrInvalidOutput) {
		t.Fatalf("got %v, %v", res, err)
	}
	if verr.Pointer != "/lines/1/price" || !strings.Contains(err.Error(), `"/lines/1/price"`) || !strings.Contains(verr.Reason, "type: got string, want number") {
		t.Fatalf("pointer %q, message %q", verr.Pointer, err)
	}
	if verr.Tool != "order" || verr.Result == nil || verr.Result.StructuredContent == nil {
		t.Fatalf("the error does not name the tool or hold the result: %+v", verr)
	}
	if _, err := CallToolAs[order](ctx, c, "order", map[string]float64{"price": -1}, nil); !errors.Is(err, ErrInvalidOutput) {
		t.Fatalf("CallToolAs: %v", err)
	}
}

// quotedCost is a number that encodes as one, except a negative cost,
// which it writes as the string "refund" (the kind of bug an inferred
// schema cannot see).
type quotedCost float64

func (q quotedCost) MarshalJSON() ([]byte, error) {
	if q < 0 {
		return []byte(`"refund"`), nil
	}
	return json.Marshal(float64(q))
}

// The schemas inferred from Go types stay inside the fast subset
// (internal/jsonschema.Fast): typed tools check their arguments on the
// raw bytes, and so does the output validation of such a schema.
func TestTypedToolSchemasInferredFromGoTypesGetTheFastValidator(t *testing.T) {
	t.Parallel()
	type inner struct {
		X int `json:"x"`
	}
	type args struct {
		S string         `json:"s"`
		L []string       `json:"l,omitempty"`
		M map[string]int `json:"m,omitempty"`
		N inner          `json:"n"`
		P *inner         `json:"p,omitempty"`
	}
	cs, err := schemaFor[args](nil)
	if err != nil {
		t.Fatal(err)
	}
	if cs.fast == nil {
		t.Fatalf("the inferred schema left the fast subset: %s", cs.raw)
	}
	if !cs.fast.Valid([]byte(`{"s":"a","n":{"x":1}}`)) || cs.fast.Valid([]byte(`{"s":"a","n":{"x":1.5}}`)) {
		t.Fatal("the fast validator does not hold the inferred schema")
	}
	v, err := compileOutputSchema(cs.raw)
	if err != nil || v.fast == nil {
		t.Fatalf("output validation of the inferred schema: fast %v, %v", v != nil && v.fast != nil, err)
	}
}
