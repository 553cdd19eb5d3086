package jsonschema

import (
	"encoding/json"
	"testing"

	ref "github.com/google/jsonschema-go/jsonschema"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

type fastInner struct {
	X int `json:"x"`
}

type fastArgs struct {
	S  string         `json:"s"`
	I  int            `json:"i,omitempty"`
	F  float64        `json:"f"`
	B  bool           `json:"b"`
	P  *int           `json:"p,omitempty"`
	L  []string       `json:"l,omitempty"`
	M  map[string]int `json:"m,omitempty"`
	N  fastInner      `json:"n"`
	NP *fastInner     `json:"np,omitempty"`
	A  any            `json:"a,omitempty"`
	U  uint8          `json:"u,omitempty"`
}

// inferred is what mcp's typed tools make of T's schema: inferred by
// jsonschema-go, encoded, compiled fast, and resolved as the full
// validator the fast one is held to.
type inferred struct {
	raw      []byte
	fast     *Fast
	resolved *ref.Resolved
}

func infer[T any](tb testing.TB) *inferred {
	tb.Helper()
	s, err := ref.For[T](nil)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &inferred{raw: raw, fast: CompileFast(raw), resolved: res}
}

func TestFastSchemaCoversInferredSchemas(t *testing.T) {
	t.Parallel()
	cs := infer[fastArgs](t)
	if cs.fast == nil {
		t.Fatalf("inferred schema left the fast subset: %s", cs.raw)
	}
	for _, c := range []struct {
		json string
		ok   bool
	}{
		{`{"s":"a","f":1.5,"b":true,"n":{"x":1}}`, true},
		{`{"s":"a","f":1,"b":false,"n":{"x":1},"l":["q"],"m":{"k":2},"np":null,"a":[1,{}],"u":255,"i":3}`, true},
		{`{"s":"a","f":1,"b":false,"n":{"x":1},"u":256}`, false},
		{`{"s":"a","f":1,"b":false,"n":{"x":1.5}}`, false},
		{`{"s":"a","f":1,"b":false,"n":{}}`, false},
		{`{"s":"a","f":1,"b":false,"n":{"x":1,"y":2}}`, false},
		{`{"s":"a","f":1,"b":false,"n":{"x":1},"extra":1}`, false},
		{`{"s":1,"f":1,"b":false,"n":{"x":1}}`, false},
		{`{"f":1,"b":false,"n":{"x":1}}`, false},
		{`{"s":"a","f":1,"b":false,"n":{"x":1},"m":{"k":"v"}}`, false},
		{`{"s":"a","f":1,"b":false,"n":{"x":1},"l":[1]}`, false},
		{`[]`, false},
	} {
		if got := cs.fast.Valid([]byte(c.json)); got != c.ok {
			t.Errorf("%s: fast says %v", c.json, got)
		}
	}
}

// hasDuplicateKeys reports whether any object in v repeats a member
// (the fast validator checks every occurrence; a decoded map keeps the
// last).
func hasDuplicateKeys(v []byte) bool {
	_, dup := jsonrpc.DuplicateMember(v)
	return dup
}

// FuzzFastSchemaAgrees holds the fast validator to the full one.
func FuzzFastSchemaAgrees(f *testing.F) {
	for _, s := range []string{
		`{"s":"a","f":1.5,"b":true,"n":{"x":1}}`,
		`{"s":"a","f":1,"b":false,"n":{"x":1},"l":["q"],"m":{"k":2},"np":null,"a":[1,{}],"u":255,"i":3}`,
		`{"s":"a","f":1e2,"b":false,"n":{"x":-0},"u":0.0}`,
		`{"s":"\u00e9","f":-1,"b":true,"n":{"x":9007199254740993}}`,
		`{}`, `null`, `[{"x":1}]`,
	} {
		f.Add(s)
	}
	cs := infer[fastArgs](f)
	if cs.fast == nil {
		f.Fatal("no fast schema")
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) || hasDuplicateKeys([]byte(s)) {
			return
		}
		var generic any
		if json.Unmarshal([]byte(s), &generic) != nil {
			return
		}
		full := cs.resolved.Validate(generic) == nil
		if fast := cs.fast.Valid([]byte(s)); fast != full {
			t.Fatalf("%s: fast %v, full %v", s, fast, full)
		}
	})
}
