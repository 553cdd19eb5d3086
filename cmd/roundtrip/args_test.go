package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		`go run ./x`:                  {"go", "run", "./x"},
		`  a   'b c'  "d \"e\"" f\ g`: {"a", "b c", `d "e"`, "f g"},
		`x ''`:                        {"x", ""},
		`"/path with/space" --flag`:   {"/path with/space", "--flag"},
	} {
		got, err := splitCommand(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`} {
		if _, err := splitCommand(bad); err == nil {
			t.Errorf("splitCommand(%q) succeeded", bad)
		}
	}
}

func TestBuildToolArgs(t *testing.T) {
	schema, err := parseObjectSchema(json.RawMessage(`{"type":"object","properties":{
		"zip":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"},"on":{"type":"boolean"},
		"mode":{"type":"string","enum":["a","b"]},"tags":{"type":"array"}},"required":["zip"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	args, err := buildToolArgs([]string{"zip=01234", "n=5", "x=2", "on=true", "mode=b", `tags=["q"]`}, schema)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(args)
	if got, want := string(b), `{"mode":"b","n":5,"on":true,"tags":["q"],"x":2,"zip":"01234"}`; got != want {
		t.Errorf("args = %s, want %s", got, want)
	}
	for _, bad := range [][]string{
		{"n=5"},                    // zip missing
		{"zip=1", "n=1.5"},         // not an integer
		{"zip=1", "mode=c"},        // not in the enum
		{"zip=1", "other=1"},       // additionalProperties false
		{"zip=1", "zip=2"},         // twice
		{"zip"},                    // not KEY=VALUE
		{`{"zip":1}`},              // JSON object, wrong type
		{`{"zip":"1"`},             // not JSON
		{"zip=1", "on=yes please"}, // not a boolean
	} {
		if _, err := buildToolArgs(bad, schema); err == nil {
			t.Errorf("buildToolArgs(%q) succeeded", bad)
		}
	}
	// Without a schema: JSON when it parses, else a string.
	args, err = buildToolArgs([]string{"a=1", "b=x y", "c={\"k\": [1, 2]}", "d=null"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(args)
	if got, want := string(b), `{"a":1,"b":"x y","c":{"k":[1,2]},"d":null}`; got != want {
		t.Errorf("args = %s, want %s", got, want)
	}
}

func TestRootURI(t *testing.T) {
	dir := t.TempDir()
	uri, name, err := rootURI(dir)
	if err != nil || uri != "file://"+filepath.ToSlash(dir) || name != filepath.Base(dir) {
		t.Errorf("rootURI(%q) = %q, %q, %v", dir, uri, name, err)
	}
	uri, _, err = rootURI("rel/dir")
	if err != nil || !strings.HasPrefix(uri, "file:///") || !strings.HasSuffix(uri, "/rel/dir") {
		t.Errorf("rootURI(rel/dir) = %q, %v", uri, err)
	}
	if _, _, err := rootURI("https://x/y"); err == nil {
		t.Error("an https root was accepted")
	}
}

func TestFieldParse(t *testing.T) {
	fields, err := parseForm(json.RawMessage(`{"type":"object","properties":{
		"z":{"type":"string","format":"email"},
		"a":{"type":"array","items":{"anyOf":[{"const":"x","title":"Ex"},{"const":"y","title":"Why"}]},"maxItems":1},
		"e":{"type":"string","enum":["lo","hi"],"enumNames":["Low","High"],"default":"hi"},
		"f":{"type":"number","minimum":0.5},
		"d":{"type":"string","format":"date"}},"required":["z"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.name)
	}
	if got := strings.Join(names, ","); got != "z,a,e,f,d" {
		t.Fatalf("fields in order %s, want the server's order z,a,e,f,d", got)
	}
	z, a, e, f, d := fields[0], fields[1], fields[2], fields[3], fields[4]
	cases := []struct {
		f     *field
		in    string
		want  any
		set   bool
		valid bool
	}{
		{z, "ada@example.test", "ada@example.test", true, true},
		{z, "not-an-email", nil, false, false},
		{z, "", nil, false, false}, // required
		{a, "Why", []string{"y"}, true, true},
		{a, "1", []string{"x"}, true, true},
		{a, "1,2", nil, false, false}, // maxItems
		{a, "", nil, false, true},     // optional, left out
		{e, "", "hi", true, true},     // default
		{e, "low", "lo", true, true},  // by title
		{e, "3", nil, false, false},
		{f, "0.25", nil, false, false},
		{f, "1.5", 1.5, true, true},
		{d, "2026-07-28", "2026-07-28", true, true},
		{d, "28/07/2026", nil, false, false},
	}
	for _, c := range cases {
		v, set, err := c.f.parse(c.in)
		if (err == nil) != c.valid || set != c.set || (c.want != nil && !reflect.DeepEqual(v, c.want)) {
			t.Errorf("%s.parse(%q) = %v, %v, %v; want %v, %v, valid %v", c.f.name, c.in, v, set, err, c.want, c.set, c.valid)
		}
	}
}

// TestAServersFormIsReadWithinBounds: the terminal reads a server's form
// schema (untrusted) within the library's bounds, in linear time.
func TestAServersFormIsReadWithinBounds(t *testing.T) {
	props := func(n int) (string, string) {
		var p, r []string
		for i := range n {
			p = append(p, fmt.Sprintf(`"f%d":{"type":"string"}`, i))
			r = append(r, fmt.Sprintf(`"f%d"`, i))
		}
		return strings.Join(p, ","), strings.Join(r, ",")
	}
	ok, okReq := props(maxFormFields)
	fields, err := parseForm(json.RawMessage(`{"type":"object","properties":{` + ok + `},"required":[` + okReq + `]}`))
	if err != nil || len(fields) != maxFormFields || !fields[maxFormFields-1].required {
		t.Fatalf("a form of %d required fields: %d fields, err %v", maxFormFields, len(fields), err)
	}
	tooMany, tooManyReq := props(50_000)
	start := time.Now()
	if _, err := parseForm(json.RawMessage(`{"type":"object","properties":{` + tooMany + `},"required":[` + tooManyReq + `]}`)); err == nil {
		t.Error("a form of 50 000 fields was read")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing a 50 000-field form took %v", d)
	}
	enum := `"x"` + strings.Repeat(`,"x"`, maxFormChoices)
	if _, err := parseForm(json.RawMessage(`{"type":"object","properties":{"e":{"type":"string","enum":[` + enum + `]}}}`)); err == nil {
		t.Errorf("a field of %d options was read", maxFormChoices+1)
	}
	pattern := strings.Repeat("a", maxFormPatternBytes+1)
	if _, err := parseForm(json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","pattern":"` + pattern + `"}}}`)); err == nil {
		t.Error("a pattern over the bound was read")
	}
	fields, err = parseForm(json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","pattern":"^[a-z]+$"}}}`))
	if err != nil || fields[0].re == nil {
		t.Fatalf("a pattern field: %v", err)
	}
	if _, set, err := fields[0].parse("ABC"); set || err == nil {
		t.Error("a value against the pattern was accepted")
	}
}

// TestTheTerminalReadsFormsWithTheLibrarysReader: the CLI's forms come
// from ElicitRequest.Form, so a schema the library refuses is refused
// here too, and what the library reads (a secret, a titled option) is
// what the terminal asks.
func TestTheTerminalReadsFormsWithTheLibrarysReader(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`{"type":"object","properties":{"a":{"type":"string","oneOf":[{"title":"no const"}]}}}`,
		`{"type":"object","properties":{"a":{"type":"object"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`,
	} {
		if fields, err := parseForm(json.RawMessage(bad)); err == nil {
			t.Errorf("%s: read as %d fields", bad, len(fields))
		}
	}
	fields, err := parseForm(json.RawMessage(`{"type":"object","properties":{"pin":{"type":"string","writeOnly":true,"minLength":4},"c":{"type":"string","oneOf":[{"const":"a","title":"A"}]}}}`))
	if err != nil || len(fields) != 2 {
		t.Fatal(fields, err)
	}
	if pin := fields[0]; !pin.writeOnly || pin.min == nil || *pin.min != 4 {
		t.Errorf("pin: %+v", pin)
	}
	if c := fields[1]; len(c.choices) != 1 || c.choices[0] != (choice{"a", "A"}) {
		t.Errorf("c: %+v", c)
	}
}
