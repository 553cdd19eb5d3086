package jsonschema

import (
	"encoding/json"
	"strings"
	"testing"

	ref "github.com/google/jsonschema-go/jsonschema"
)

// fuzzLimits are small bounds, so that the fuzzer reaches them.
var fuzzLimits = Limits{SchemaBytes: 4096, Subschemas: 256, Depth: 32, PatternBytes: 256, PatternInsts: 4096, Steps: 2000, StepsPerNode: 16, MaxSteps: 50_000, EvalDepth: 256}

// Compiling and checking any schema and any value never panics and
// never takes more steps than the budget (plus the one charge that
// crosses it); a refused value's pointer names a place in the value;
// and where jsonschema-go is safe to run (a schema without cycles whose
// naive cost is small) and reads the schema the same way, the verdicts
// agree.
func FuzzCompileAndCheck(f *testing.F) {
	for _, tc := range verdictCases {
		for _, v := range tc.values {
			f.Add(tc.schema, v)
		}
	}
	for _, s := range []string{`{"$ref":"#"}`, `{"anyOf":[{"$ref":"#"}]}`, chain(12, false), chain(12, true)} {
		f.Add(s, `{"a":{"a":{"a":1}}}`)
	}
	f.Fuzz(func(t *testing.T, schema, value string) {
		s, err := Compile([]byte(schema), &fuzzLimits)
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		fl, steps, err := s.Check(v)
		n := countNodes(v)
		budget := min(fuzzLimits.Steps+n*fuzzLimits.StepsPerNode, fuzzLimits.MaxSteps)
		if slack := 1 + len(value)*fuzzLimits.PatternInsts/1024 + len(schema); steps > budget+slack {
			t.Fatalf("%d steps, budget %d", steps, budget)
		}
		if err != nil {
			return
		}
		if fl != nil && (fl.Reason == "" || !pointerExists(v, fl.Pointer)) {
			t.Fatalf("failure %+v", fl)
		}
		cost, ok := naiveCost(s.root, map[*node]int{}, map[*node]bool{})
		if !ok || cost*n > 200_000 || !sameReading(schema) {
			return
		}
		r, ok := referenceOf(schema)
		if !ok {
			return
		}
		want := r.Validate(v)
		if (fl == nil) != (want == nil) {
			t.Fatalf("engine %v, jsonschema-go %v", fl, want)
		}
	})
}

// naiveCost bounds the applications of a checker that tries every
// alternative (jsonschema-go does, for annotations) per value node;
// false for a schema with any cycle, descending or not.
func naiveCost(n *node, memo map[*node]int, open map[*node]bool) (int, bool) {
	if c, ok := memo[n]; ok {
		return c, true
	}
	if open[n] {
		return 0, false
	}
	open[n] = true
	defer delete(open, n)
	total := 1
	for _, k := range allKids(n) {
		c, ok := naiveCost(k, memo, open)
		if !ok {
			return 0, false
		}
		total += c
		if total > 1_000_000 {
			return 0, false
		}
	}
	memo[n] = total
	return total, true
}

func allKids(n *node) []*node {
	kids := n.inPlace(nil)
	kids = append(kids, n.prefix...)
	for _, s := range []*node{n.items, n.contains, n.addl, n.propNames} {
		if s != nil {
			kids = append(kids, s)
		}
	}
	for _, s := range n.props {
		kids = append(kids, s)
	}
	for _, p := range n.patProps {
		kids = append(kids, p.n)
	}
	return kids
}

// sameReading reports whether jsonschema-go reads schema as this
// package does: not where it differs on purpose (the array form of
// items outside draft-07, which it ignores; dependencies, which it
// reads only in draft-07) or in how it resolves identifiers.
func sameReading(schema string) bool {
	var doc any
	if json.Unmarshal([]byte(schema), &doc) != nil {
		return false
	}
	ok := true
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if kw, known := keywordsFolded[strings.ToLower(k)]; known && kw != k {
					ok = false // encoding/json matches struct fields in any case
				}
				switch k {
				case "$id", "id", "$anchor", "$schema", "dependencies", "additionalItems", "$comment":
					ok = false
				case "items":
					if _, arr := e.([]any); arr {
						ok = false
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	return ok && !strings.Contains(schema, `\u0000`)
}

var keywordsFolded = func() map[string]string {
	m := map[string]string{}
	for _, k := range strings.Fields(`$id $schema $ref $comment $defs $anchor $dynamicAnchor $dynamicRef $vocabulary
		definitions id title description default deprecated readOnly writeOnly examples
		multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern
		additionalItems items prefixItems maxItems minItems uniqueItems contains maxContains minContains
		maxProperties minProperties required additionalProperties properties patternProperties propertyNames
		dependentRequired dependentSchemas dependencies unevaluatedItems unevaluatedProperties
		enum const type allOf anyOf oneOf not if then else format contentEncoding contentMediaType contentSchema`) {
		m[strings.ToLower(k)] = k
	}
	return m
}()

// referenceOf compiles schema with jsonschema-go (false when it cannot,
// or panics).
func referenceOf(schema string) (r *ref.Resolved, ok bool) {
	defer func() {
		if recover() != nil {
			r, ok = nil, false
		}
	}()
	var sc ref.Schema
	if err := json.Unmarshal([]byte(schema), &sc); err != nil {
		return nil, false
	}
	res, err := sc.Resolve(nil)
	if err != nil {
		return nil, false
	}
	return res, true
}
