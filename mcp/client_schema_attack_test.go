package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// anyOfChain is a schema of n levels, each an anyOf of two $refs to the
// next level (checked naively, 2^n applications); the last level is
// leaf. With descend, each alternative steps into member "a", so that
// the value is n deep too.
func anyOfChain(n int, descend bool, leaf string) string {
	var defs []string
	for i := range n {
		next := fmt.Sprintf(`{"$ref":"#/$defs/l%d"}`, i+1)
		if descend {
			next = `{"type":"object","properties":{"a":` + next + `},"required":["a"]}`
		}
		defs = append(defs, fmt.Sprintf(`"l%d":{"anyOf":[%s,%s]}`, i, next, next))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":%s`, n, leaf))
	return `{"$ref":"#/$defs/l0","$defs":{` + strings.Join(defs, ",") + `}}`
}

// nested is {"a":{"a":...leaf...}}, n deep.
func nested(n int, leaf string) string {
	return strings.Repeat(`{"a":`, n) + leaf + strings.Repeat(`}`, n)
}

// hostileSchemaServer is a server on raw net/http whose tools/list
// declares each tool of schemas with its outputSchema, and whose
// tools/call answers with results[name] as structuredContent.
func hostileSchemaServer(t *testing.T, schemas, results map[string]string, logs *syncBuffer) *Client {
	var tools []string
	for name, s := range schemas {
		tools = append(tools, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"},"outputSchema":%s}`, name, s))
	}
	return rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		switch in.Method {
		case MethodToolsList:
			writeResult(w, in, `{"resultType":"complete","tools":[`+strings.Join(tools, ",")+`]}`)
		default:
			sc := results[in.Params.Name]
			writeResult(w, in, `{"resultType":"complete","content":[{"type":"text","text":"x"}],"structuredContent":`+sc+`}`)
		}
	}, nil, &ClientOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))})
}

// boundedCall calls tool and fails the test when the call takes more
// than a few seconds or allocates more than 256 MiB.
func boundedCall(t *testing.T, c *Client, tool string) (*CallToolResult, error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, tool, nil, nil)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if took > 5*time.Second {
		t.Errorf("%s: the call took %v", tool, took)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Errorf("%s: the call allocated %d MiB", tool, alloc>>20)
	}
	return res, err
}

// A schema whose $ref loops back to itself without stepping into the
// value ({"$ref":"#"}, {"anyOf":[{"$ref":"#"}]}, a loop through $defs)
// is refused when compiled: the tool's results are not checked, one
// warning says why, and the process survives (it used to die of a
// stack overflow).
func TestCyclicOutputSchemaIsRefusedNotFollowed(t *testing.T) {
	schemas := map[string]string{
		"self":    `{"$ref":"#"}`,
		"anyself": `{"anyOf":[{"$ref":"#"}]}`,
		"loop":    `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`,
		"viaprop": `{"$ref":"#/properties/x","properties":{"x":{"$ref":"#"}}}`,
	}
	results := map[string]string{"self": `{"v":1}`, "anyself": `[1]`, "loop": `"s"`, "viaprop": `{"x":1}`}
	var logs syncBuffer
	c := hostileSchemaServer(t, schemas, results, &logs)
	listAll(t, c)
	for name := range schemas {
		res, err := boundedCall(t, c, name)
		if err != nil || res == nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if n := strings.Count(string(logs.Bytes()), "cannot be compiled"); n != len(schemas) {
		t.Fatalf("%d warnings, want one per tool:\n%s", n, string(logs.Bytes()))
	}
	if !strings.Contains(string(logs.Bytes()), "without descending into the value") {
		t.Fatalf("the warning does not say why:\n%s", string(logs.Bytes()))
	}
}

// A recursive schema that steps into the value at each turn is no
// cycle: it is checked, and a failure deep in the value is named.
func TestRecursiveOutputSchemaThatDescendsIsChecked(t *testing.T) {
	schemas := map[string]string{"tree": `{"type":"object","properties":{"a":{"$ref":"#"},"v":{"type":"integer"}}}`}
	var logs syncBuffer
	c := hostileSchemaServer(t, schemas, map[string]string{"tree": nested(200, `{"v":"x"}`)}, &logs)
	listAll(t, c)
	_, err := boundedCall(t, c, "tree")
	var ve *OutputValidationError
	if !errors.As(err, &ve) || ve.Pointer != strings.Repeat("/a", 200)+"/v" || !strings.Contains(ve.Reason, "type: got string, want integer") {
		t.Fatalf("got %v", err)
	}
}

// A check has a step budget: a 22-level chain of two-way anyOf (2^22
// applications checked naively; it used to take 84 s and 8.5 GB) ends
// within seconds with a clear error, in place or descending into a 22
// deep value that fails at the bottom, while a value the first
// alternatives accept is still checked and passes.
func TestOutputSchemaCheckHasAStepBudget(t *testing.T) {
	schemas := map[string]string{
		"flat":     anyOfChain(22, false, `{"type":"string"}`),
		"deep":     anyOfChain(22, true, `{"type":"string"}`),
		"deepgood": anyOfChain(22, true, `{"type":"string"}`),
	}
	results := map[string]string{"flat": `{"big":5}`, "deep": nested(22, `5`), "deepgood": nested(22, `"ok"`)}
	var logs syncBuffer
	c := hostileSchemaServer(t, schemas, results, &logs)
	listAll(t, c)
	for _, name := range []string{"flat", "deep"} {
		_, err := boundedCall(t, c, name)
		var ve *OutputValidationError
		if !errors.As(err, &ve) || !strings.Contains(ve.Reason, "too costly to check") || ve.Result == nil {
			t.Fatalf("%s: got %v", name, err)
		}
	}
	if res, err := boundedCall(t, c, "deepgood"); err != nil || res == nil {
		t.Fatalf("deepgood: %v", err)
	}
	if strings.Contains(string(logs.Bytes()), "cannot be compiled") {
		t.Fatalf("a schema without cycle was refused:\n%s", string(logs.Bytes()))
	}
}

// A server's schema has bounds: one too large, nesting too deep, with a
// remote $ref or a pattern Go cannot compile is not compiled (results
// unchecked, one warning), and costs no more than its size to refuse.
func TestOutputSchemaBeyondItsBoundsIsNotCompiled(t *testing.T) {
	schemas := map[string]string{
		"huge":    `{"enum":["` + strings.Repeat("x", 2<<20) + `"]}`,
		"deep":    strings.Repeat(`{"items":`, 1000) + `{}` + strings.Repeat(`}`, 1000),
		"remote":  `{"$ref":"https://example.com/s.json"}`,
		"pattern": `{"type":"string","pattern":"(?<=a)b"}`,
		"many":    `{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"type":"string"},`, 30000), ",") + `]}`,
	}
	results := map[string]string{"huge": `1`, "deep": `1`, "remote": `1`, "pattern": `"b"`, "many": `1`}
	var logs syncBuffer
	c := hostileSchemaServer(t, schemas, results, &logs)
	listAll(t, c)
	for name := range schemas {
		if _, err := boundedCall(t, c, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if n := strings.Count(string(logs.Bytes()), "cannot be compiled"); n != len(schemas) {
		t.Fatalf("%d warnings, want %d:\n%s", n, len(schemas), string(logs.Bytes()))
	}
}

// WithOutputValidation on a hand-written schema uses the same bounded
// engine: a cyclic schema panics at AddTool (as any schema that cannot
// compile does) instead of killing the process at the first result.
func TestServerOutputValidationRefusesACyclicSchema(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "out", Version: "1"}, nil)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "without descending") {
			t.Fatalf("got %v", r)
		}
	}()
	s.AddTool(&Tool{Name: "self", OutputSchema: json.RawMessage(`{"$ref":"#"}`)},
		func(context.Context, *CallToolRequest) (ToolResponse, error) { return structured(`1`), nil }, WithOutputValidation())
}

// A typed tool's hand-written input schema with a $ref cycle that does
// not descend into the value is refused at AddTool: jsonschema-go,
// which validates the arguments, would overflow the stack at a client's
// first call.
func TestTypedToolRefusesACyclicInputSchema(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "in", Version: "1"}, nil)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "without descending") {
			t.Fatalf("got %v", r)
		}
	}()
	AddTypedTool(s, &Tool{Name: "cyclic", InputSchema: json.RawMessage(`{"type":"object","allOf":[{"$ref":"#"}]}`)},
		func(context.Context, *CallToolRequest, map[string]any) (any, error) { return nil, nil })
}
