package mcp

import (
	"context"
	"encoding/json"
	"testing"
)

// The defaults of a tool's input schema are applied to the arguments a
// call leaves out, before the handler runs, typed or not.
func TestToolInputDefaultsAreAppliedBeforeTheHandler(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer","default":2},"region":{"type":"string","default":"eu"},"name":{"type":"string"}},"required":["name","size"]}`)
	type args struct {
		Name   string `json:"name"`
		Size   int    `json:"size"`
		Region string `json:"region"`
	}
	s := NewServer(Implementation{Name: "defaults", Version: "1"}, nil)
	AddTypedTool(s, &Tool{Name: "typed", InputSchema: schema}, func(ctx context.Context, _ *CallToolRequest, in args) (*CallToolResult, error) {
		b, _ := json.Marshal(in)
		return TextResult(string(b)), nil
	})
	s.AddTool(&Tool{Name: "raw", InputSchema: schema}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		return TextResult(string(r.Arguments)), nil
	})
	h := NewHTTPHandler(s, nil)
	for _, c := range []struct{ tool, args, want string }{
		{"typed", `{"name":"db"}`, `{"name":"db","size":2,"region":"eu"}`},          // a required property with a default is satisfied
		{"typed", `{"name":"db","size":7}`, `{"name":"db","size":7,"region":"eu"}`}, // given, kept
		{"raw", `{"name":"db"}`, `{"name":"db","region":"eu","size":2}`},
		{"raw", `{}`, `{"region":"eu","size":2}`},
		{"raw", `{"\u0073ize":5,"region":"us"}`, `{"\u0073ize":5,"region":"us"}`}, // an escaped name is the name
	} {
		d := &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"` + c.tool + `","arguments":` + c.args}
		if got := text(t, d.run(nil)); got != c.want {
			t.Errorf("%s %s: the handler saw %s, want %s", c.tool, c.args, got, c.want)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	defs := []argDefault{{"a", json.RawMessage(`1`)}, {"b", json.RawMessage(`"x"`)}}
	for in, want := range map[string]string{
		``:              `{"a":1,"b":"x"}`,
		` { } `:         `{ "a":1,"b":"x"}`,
		`{"a":3}`:       `{"a":3,"b":"x"}`,
		`{"a":3,"b":4}`: `{"a":3,"b":4}`,
		`[1]`:           `[1]`,
		`{"a":`:         `{"a":`,
	} {
		got, _ := withDefaults(json.RawMessage(in), defs)
		if string(got) != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
		if json.Valid([]byte(in)) && in != "" && !json.Valid(got) {
			t.Errorf("%q: %s is not JSON", in, got)
		}
	}
}

func FuzzWithDefaults(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"b" : [1,2] } `, `{"\u0061":null}`, `[]`, `"s"`} {
		f.Add(s)
	}
	defs := []argDefault{{"a", json.RawMessage(`1`)}, {"b", json.RawMessage(`{"c":[true]}`)}}
	f.Fuzz(func(t *testing.T, in string) {
		got, added := withDefaults(json.RawMessage(in), defs)
		if !added {
			if string(got) != in {
				t.Fatalf("%q changed to %q without a default added", in, got)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("%q became %q: %v", in, got, err)
		}
		if _, ok := m["a"]; !ok {
			t.Fatalf("%q became %q without a", in, got)
		}
	})
}
