package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ref "github.com/google/jsonschema-go/jsonschema"
)

func mustCompile(t testing.TB, s string) *Schema {
	t.Helper()
	c, err := Compile([]byte(s), nil)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return c
}

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// chain is n levels of a two-way anyOf of $refs to the next level.
func chain(n int, descend bool) string {
	var defs []string
	for i := range n {
		next := fmt.Sprintf(`{"$ref":"#/$defs/l%d"}`, i+1)
		if descend {
			next = `{"properties":{"a":` + next + `}}`
		}
		defs = append(defs, fmt.Sprintf(`"l%d":{"anyOf":[%s,%s]}`, i, next, next))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"string"}`, n))
	return `{"$ref":"#/$defs/l0","$defs":{` + strings.Join(defs, ",") + `}}`
}

// A $ref loop that never steps into a member or an item would never
// end: it is refused at compile time, however it loops (directly,
// through anyOf, not, if/then/else, dependentSchemas or several $defs).
// A recursion that steps into the value at each turn is no loop.
func TestCyclesThatDoNotDescendAreRefused(t *testing.T) {
	for _, s := range []string{
		`{"$ref":"#"}`,
		`{"anyOf":[{"$ref":"#"}]}`,
		`{"allOf":[{"type":"object"},{"oneOf":[{"not":{"$ref":"#"}}]}]}`,
		`{"if":{"$ref":"#"}}`,
		`{"dependentSchemas":{"a":{"$ref":"#"}}}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"else":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`,
		`{"$ref":"#/properties/x","properties":{"x":{"$ref":"#"}}}`,
		`{"$defs":{"a":{"$anchor":"A","anyOf":[{"$ref":"#A"}]}}}`,
		`{"$id":"https://x.test/s","$defs":{"a":{"$ref":"https://x.test/s"}},"$ref":"#/$defs/a"}`,
	} {
		_, err := Compile([]byte(s), nil)
		if !errors.Is(err, ErrCycle) {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{
		`{"properties":{"next":{"$ref":"#"}}}`,
		`{"items":{"$ref":"#"}}`,
		`{"prefixItems":[{"$ref":"#"}]}`,
		`{"additionalProperties":{"$ref":"#"}}`,
		`{"patternProperties":{"x":{"$ref":"#"}}}`,
		`{"contains":{"$ref":"#"}}`,
		`{"propertyNames":{"$ref":"#/$defs/n"},"$defs":{"n":{"type":"string"}}}`,
		`{"anyOf":[{"type":"string"},{"items":{"$ref":"#"}}]}`,
	} {
		if _, err := Compile([]byte(s), nil); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// Every check has a step budget: exponential schemas end with
// ErrTooCostly within it, in bounded time, whatever the value.
func TestEveryCheckHasAStepBudget(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 30) + `1` + strings.Repeat(`}`, 30)
	for _, tc := range []struct{ schema, value string }{
		{chain(22, false), `5`},
		{chain(40, false), `{"x":[1,2,3]}`},
		{chain(30, true), deep},
		{`{"items":{"anyOf":[` + strings.Repeat(`{"required":["`+strings.Repeat("k", 50)+`"]},`, 500) + `{"type":"object"}]}}`, `[` + strings.Repeat(`{},`, 5000) + `{}]`},
		{`{"items":{"enum":[` + strings.Repeat(`{"a":[1,2,3,4,5,6,7,8]},`, 2000) + `{"a":[1,2,3,4,5,6,7,9]}]}}`, `[` + strings.Repeat(`{"a":[1,2,3,4,5,6,7,9]},`, 1000) + `1]`},
		{`{"items":{"pattern":"` + strings.Repeat(`(a|b)`, 200) + `"}}`, `["` + strings.Repeat(strings.Repeat("ab", 1<<17)+`","`, 4) + `"]`},
	} {
		s := mustCompile(t, tc.schema)
		v := decode(t, tc.value)
		start := time.Now()
		_, steps, err := s.Check(v)
		took := time.Since(start)
		if !errors.Is(err, ErrTooCostly) {
			t.Errorf("%.60s: %v after %d steps", tc.schema, err, steps)
		}
		if steps > DefaultLimits.MaxSteps+DefaultLimits.PatternInsts*1<<16 {
			t.Errorf("%.60s: %d steps", tc.schema, steps)
		}
		if took > 3*time.Second {
			t.Errorf("%.60s: %v", tc.schema, took)
		}
	}
	// The budget grows with the value: a large value under an ordinary
	// schema is checked in full.
	s := mustCompile(t, `{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["id"]}}`)
	big := `[` + strings.Repeat(`{"id":1,"tags":["a","b","c"]},`, 50000) + `{"id":2}]`
	if f, steps, err := s.Check(decode(t, big)); f != nil || err != nil {
		t.Fatalf("%v %v after %d steps", f, err, steps)
	}
}

// A value nested deeper than EvalDepth under a recursive schema ends
// with ErrTooCostly rather than growing the stack.
func TestEvaluationDepthIsBounded(t *testing.T) {
	s := mustCompile(t, `{"properties":{"a":{"$ref":"#"}}}`)
	v := decode(t, strings.Repeat(`{"a":`, 5000)+`1`+strings.Repeat(`}`, 5000))
	if _, _, err := s.Check(v); !errors.Is(err, ErrTooCostly) {
		t.Fatal(err)
	}
	v = decode(t, strings.Repeat(`{"a":`, 1000)+`1`+strings.Repeat(`}`, 1000))
	if f, _, err := s.Check(v); f != nil || err != nil {
		t.Fatal(f, err)
	}
}

// Schemas beyond the bounds, and what the engine does not check, do
// not compile.
func TestCompileBounds(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   error
	}{
		{`{"enum":["` + strings.Repeat("x", 1<<20) + `"]}`, ErrTooLarge},
		{strings.Repeat(`{"not":`, 200) + `{}` + strings.Repeat(`}`, 200), ErrTooLarge},
		{`{"anyOf":[` + strings.Repeat(`true,`, 20000) + `true]}`, ErrTooLarge},
		{`{"pattern":"` + strings.Repeat("a", 5000) + `"}`, ErrTooLarge},
		{`{"anyOf":[` + manyPatterns(120) + `]}`, ErrTooLarge},
		{`{"pattern":"(?=a)"}`, ErrUnsupported},
		{`{"$ref":"https://example.com/s"}`, ErrUnsupported},
		{`{"$ref":"other.json#/a"}`, ErrUnsupported},
		{`{"$ref":"#/$defs/missing"}`, ErrUnsupported},
		{`{"$ref":"#nowhere"}`, ErrUnsupported},
		{`{"unevaluatedProperties":false}`, ErrUnsupported},
		{`{"items":{"unevaluatedItems":false}}`, ErrUnsupported},
		{`{"$dynamicRef":"#x"}`, ErrUnsupported},
		{`{"type":"text"}`, ErrInvalid},
		{`{"type":[]}`, ErrInvalid},
		{`{"minLength":-1}`, ErrInvalid},
		{`{"multipleOf":0}`, ErrInvalid},
		{`{"properties":[]}`, ErrInvalid},
		{`{"anyOf":[]}`, ErrInvalid},
		{`7`, ErrInvalid},
		{`{`, ErrInvalid},
	} {
		if _, err := Compile([]byte(tc.schema), nil); !errors.Is(err, tc.want) {
			t.Errorf("%.80s: %v, want %v", tc.schema, err, tc.want)
		}
	}
}

// manyPatterns is n schemas with distinct patterns of 1000 instructions
// each.
func manyPatterns(n int) string {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf(`{"pattern":"x%da{1000}"}`, i))
	}
	return strings.Join(ps, ",")
}

// Local references of every kind resolve.
func TestLocalReferencesResolve(t *testing.T) {
	for _, tc := range []struct{ schema, good, bad string }{
		{`{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`, `"s"`, `1`},
		{`{"definitions":{"a b":{"type":"string"}},"$ref":"#/definitions/a%20b"}`, `"s"`, `1`},
		{`{"$defs":{"a/b":{"type":"string"},"c~d":{"$ref":"#/$defs/a~1b"}},"$ref":"#/$defs/c~0d"}`, `"s"`, `1`},
		{`{"properties":{"x":{"type":"integer"},"y":{"$ref":"#/properties/x"}}}`, `{"y":1}`, `{"y":"1"}`},
		{`{"components":{"schemas":{"n":{"type":"null"}}},"items":{"$ref":"#/components/schemas/n"}}`, `[null]`, `[0]`},
		{`{"$defs":{"a":{"$anchor":"num","type":"number"}},"items":{"$ref":"#num"}}`, `[1.5]`, `["x"]`},
		{`{"$id":"https://x.test/root.json","$defs":{"i":{"$id":"item.json","type":"boolean"}},"items":{"$ref":"item.json"}}`, `[true]`, `[1]`},
		{`{"$id":"https://x.test/root.json","$defs":{"i":{"$id":"item.json","$defs":{"s":{"type":"string"}},"properties":{"v":{"$ref":"#/$defs/s"}}}},"$ref":"item.json"}`, `{"v":"s"}`, `{"v":1}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"type":"string"}},"$ref":"#/definitions/a","type":"integer"}`, `"s"`, `1`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}],"additionalItems":{"type":"integer"}}`, `["a",1]`, `["a","b"]`},
	} {
		s := mustCompile(t, tc.schema)
		if f, _, err := s.Check(decode(t, tc.good)); f != nil || err != nil {
			t.Errorf("%s on %s: %v %v", tc.schema, tc.good, f, err)
		}
		if f, _, err := s.Check(decode(t, tc.bad)); f == nil || err != nil {
			t.Errorf("%s on %s: accepted (%v)", tc.schema, tc.bad, err)
		}
	}
}

// verdictCases are ordinary schemas and values whose verdicts must be
// jsonschema-go's.
var verdictCases = []struct {
	schema string
	values []string
}{
	{`{"type":"object","properties":{"id":{"type":"string"},"n":{"type":"integer","minimum":0,"maximum":10}},"required":["id"],"additionalProperties":false}`,
		[]string{`{"id":"a"}`, `{"id":"a","n":3}`, `{"id":"a","n":3.5}`, `{"id":"a","n":11}`, `{"n":1}`, `{"id":"a","x":1}`, `[]`, `null`, `{"id":"a","n":-0.0}`, `{"id":"a","n":1e0}`}},
	{`{"type":["string","null"],"minLength":2,"maxLength":3,"pattern":"^[a-zé]+$"}`, []string{`"ab"`, `"a"`, `"abcd"`, `"éé"`, `"AB"`, `null`, `1`}},
	{`{"enum":[1,"a",null,{"k":[1,2]},[true]]}`, []string{`1`, `1.0`, `"a"`, `null`, `{"k":[1,2]}`, `{"k":[2,1]}`, `[true]`, `[false]`, `2`}},
	{`{"const":{"a":[1,{"b":null}]}}`, []string{`{"a":[1,{"b":null}]}`, `{"a":[1,{"b":0}]}`, `{"a":[1]}`}},
	{`{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1,"multipleOf":0.25}`, []string{`0.25`, `0.5`, `0`, `1`, `0.3`, `"0.5"`}},
	{`{"type":"integer","multipleOf":3}`, []string{`9`, `10`, `-3`, `0`, `3.0`}},
	{`{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"boolean"},"minItems":1,"maxItems":4,"uniqueItems":true}`,
		[]string{`["a"]`, `["a",1,true]`, `["a",1,true,true]`, `[1]`, `[]`, `["a",1,true,false,true]`, `["a","b"]`}},
	{`{"contains":{"type":"integer"},"minContains":2,"maxContains":3}`, []string{`[1,2]`, `[1]`, `[1,2,3,4]`, `["a",1,"b",2]`, `{}`}},
	{`{"contains":{"const":1}}`, []string{`[1]`, `[2]`, `[]`}},
	{`{"contains":{"const":1},"minContains":0}`, []string{`[]`, `[2]`}},
	{`{"uniqueItems":true}`, []string{`[1,1.0]`, `[{"a":1,"b":2},{"b":2,"a":1}]`, `[[1],[1,1]]`, `["1",1]`, `[null,false,0,""]`, `[true,true]`}},
	{`{"patternProperties":{"^n_":{"type":"number"},"_x$":{"minimum":5}},"additionalProperties":{"type":"string"}}`, []string{`{"n_1":1}`, `{"n_x":6}`, `{"n_x":4}`, `{"n_1":"a"}`, `{"o":"s"}`, `{"o":1}`}},
	{`{"propertyNames":{"maxLength":2,"pattern":"^[a-z]"},"minProperties":1,"maxProperties":2}`, []string{`{"ab":1}`, `{"abc":1}`, `{"1":1}`, `{}`, `{"a":1,"b":2,"c":3}`}},
	{`{"dependentRequired":{"a":["b","c"]},"dependentSchemas":{"d":{"required":["e"]}}}`, []string{`{}`, `{"a":1,"b":1,"c":1}`, `{"a":1,"b":1}`, `{"d":1}`, `{"d":1,"e":2}`}},
	{`{"allOf":[{"type":"object"},{"required":["a"]}],"anyOf":[{"required":["b"]},{"required":["c"]}],"oneOf":[{"required":["d"]},{"required":["e"]}]}`,
		[]string{`{"a":1,"b":1,"d":1}`, `{"a":1,"d":1}`, `{"a":1,"c":1,"d":1,"e":1}`, `{"b":1,"d":1}`, `{"a":1,"c":1,"e":1}`}},
	{`{"not":{"type":"string"}}`, []string{`1`, `"s"`}},
	{`{"if":{"properties":{"k":{"const":"a"}},"required":["k"]},"then":{"required":["a"]},"else":{"required":["b"]}}`, []string{`{"k":"a","a":1}`, `{"k":"a"}`, `{"k":"b","b":1}`, `{}`, `{"b":1}`}},
	{`{"if":{"type":"string"},"then":{"minLength":2}}`, []string{`"ab"`, `"a"`, `1`}},
	{`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"v":{"type":"integer"}}}},"$ref":"#/$defs/n"}`, []string{`{"next":{"next":{"v":1}}}`, `{"next":{"next":{"v":"x"}}}`, `{"next":1}`}},
	{`{"properties":{"a":false,"b":true}}`, []string{`{"b":1}`, `{"a":1}`}},
	{`false`, []string{`1`, `null`}},
	{`true`, []string{`1`, `{}`}},
	{`{"type":"string","format":"email"}`, []string{`"not an email"`, `1`}},
	{`{"items":{"type":"object","required":["x"]},"minItems":0}`, []string{`[{"x":1},{"y":1}]`, `[]`}},
	{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, []string{`1`, `1.5`, `"s"`}},
}

// The engine's verdicts are jsonschema-go's on ordinary schemas, and a
// refused value's pointer names a place in the value.
func TestVerdictsAgreeWithJSONSchemaGo(t *testing.T) {
	for _, tc := range verdictCases {
		s := mustCompile(t, tc.schema)
		r := reference(t, tc.schema)
		for _, vs := range tc.values {
			v := decode(t, vs)
			f, _, err := s.Check(v)
			if err != nil {
				t.Fatalf("%s on %s: %v", tc.schema, vs, err)
			}
			want := r.Validate(v)
			if (f == nil) != (want == nil) {
				t.Errorf("%s on %s: engine %v, jsonschema-go %v", tc.schema, vs, f, want)
			}
			if f != nil && (f.Reason == "" || !pointerExists(v, f.Pointer)) {
				t.Errorf("%s on %s: %+v", tc.schema, vs, f)
			}
		}
	}
}

func reference(t testing.TB, s string) *ref.Resolved {
	t.Helper()
	var sc ref.Schema
	if err := json.Unmarshal([]byte(s), &sc); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	r, err := sc.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return r
}

func pointerExists(v any, p string) bool {
	if p == "" {
		return true
	}
	_, ok := lookup(v, p)
	return ok
}

// Failures name the value and the keyword, first member in sorted
// order.
func TestFailuresNameThePointerAndTheReason(t *testing.T) {
	for _, tc := range []struct{ schema, value, pointer, reason string }{
		{`{"properties":{"b":{"type":"string"},"a":{"type":"string"}}}`, `{"b":1,"a":1}`, "/a", "type: got integer, want string"},
		{`{"required":["x","y"]}`, `{}`, "", `required: missing "x", "y"`},
		{`{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"integer"}}]}`, `[1,"2"]`, "/1", "type"},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`, "", "anyOf: the boolean matches none of the 2 alternatives"},
		{`{"oneOf":[{"minimum":0},{"maximum":10}]}`, `5`, "", "oneOf: the integer matches alternatives 0 and 1"},
		{`{"propertyNames":{"maxLength":1}}`, `{"ab":1}`, "/ab", "propertyNames"},
		{`{"dependentRequired":{"a":["b"]}}`, `{"a":1}`, "", `dependentRequired: member "a" requires "b"`},
		{`{"contains":{"type":"string"}}`, `[1,2]`, "", "contains"},
		{`{"items":{"enum":["` + strings.Repeat("x", 1000) + `"]}}`, `["` + strings.Repeat("y", 1000) + `"]`, "/0", "enum"},
		{`{"type":"string","maxLength":1}`, `"éé"`, "", "maxLength: 2 characters, more than 1"},
	} {
		f, _, err := mustCompile(t, tc.schema).Check(decode(t, tc.value))
		if err != nil || f == nil || f.Pointer != tc.pointer || !strings.Contains(f.Reason, tc.reason) || len(f.Reason) > 300 {
			t.Errorf("%.60s on %.40s: %+v %v; want %q ~%q", tc.schema, tc.value, f, err, tc.pointer, tc.reason)
		}
	}
}

// BenchmarkStep is the cost of one step, on the exponential chain that
// runs out of its budget.
func BenchmarkStep(b *testing.B) {
	s := mustCompile(b, chain(30, false))
	v := decode(b, `5`)
	var steps int
	for b.Loop() {
		_, steps, _ = s.Check(v)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
}

// Values encoded for uniqueItems (or compared by enum and const) count
// toward the depth bound too: a Go value nested deeper than EvalDepth (which no
// decoder would produce) ends with ErrTooCostly, not a huge stack.
func TestComparisonDepthIsBounded(t *testing.T) {
	var deep any = 1.0
	for range 100_000 {
		deep = []any{deep}
	}
	for _, s := range []string{`{"uniqueItems":true}`} {
		if _, _, err := mustCompile(t, s).Check([]any{deep, deep}); !errors.Is(err, ErrTooCostly) {
			t.Errorf("%s: %v", s, err)
		}
	}
}
