package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

type weather struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
}

func weatherServer() *Server {
	s := NewServer(Implementation{Name: "w", Version: "1"}, nil)
	AddTypedTool(s, &Tool{Name: "weather"}, func(ctx context.Context, r *CallToolRequest, in struct {
		City string `json:"city"`
	}) (weather, error) {
		return weather{City: in.City, TempC: 21.5}, nil
	})
	s.AddTool(&Tool{Name: "broken"}, func(context.Context, *CallToolRequest) (ToolResponse, error) {
		return ErrorResult("no such city"), nil
	})
	s.AddTool(&Tool{Name: "text"}, func(context.Context, *CallToolRequest) (ToolResponse, error) {
		return TextResult("just text"), nil
	})
	return s
}

// StructuredContent and CallToolAs decode a typed tool's result into a
// Go type; an isError result is a *ToolError, a result without
// structured content ErrNoStructuredContent.
func TestStructuredContentDecodesIntoAType(t *testing.T) {
	t.Parallel()
	clientTransports(t, weatherServer(), nil, func(t *testing.T, c *Client) {
		ctx := context.Background()
		listAll(t, c) // the typed tool's inferred outputSchema is checked too
		w, err := CallToolAs[weather](ctx, c, "weather", map[string]string{"city": "Paris"}, nil)
		if err != nil || w != (weather{"Paris", 21.5}) {
			t.Fatal(w, err)
		}
		res, err := c.CallTool(ctx, "weather", map[string]string{"city": "Oslo"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w, err := StructuredContent[weather](res); err != nil || w.City != "Oslo" {
			t.Fatal(w, err)
		}
		if m, err := StructuredContent[map[string]any](res); err != nil || m["tempC"] != 21.5 {
			t.Fatal(m, err)
		}
		_, err = CallToolAs[weather](ctx, c, "broken", nil, nil)
		var te *ToolError
		if !errors.As(err, &te) || te.Tool != "broken" || !strings.Contains(err.Error(), "no such city") || !te.Result.IsError {
			t.Fatalf("got %v", err)
		}
		if _, err := CallToolAs[weather](ctx, c, "text", nil, nil); !errors.Is(err, ErrNoStructuredContent) {
			t.Fatalf("got %v", err)
		}
		if _, err := CallToolAs[int](ctx, c, "weather", map[string]string{"city": "Lima"}, nil); err == nil || !strings.Contains(err.Error(), "decoding structuredContent") {
			t.Fatalf("a mismatched type: %v", err)
		}
	})
	if _, err := StructuredContent[weather](nil); err == nil {
		t.Fatal("nil result")
	}
	if w, err := StructuredContent[weather](&CallToolResult{StructuredContent: map[string]any{"city": "Rome"}}); err != nil || w.City != "Rome" {
		t.Fatal(w, err)
	}
}

const fullForm = `{"type":"object","title":"Trip","description":"Where to?","properties":{
	"name":{"type":"string","title":"Name","description":"Your name","minLength":2,"maxLength":40,"default":"Ada"},
	"email":{"type":"string","format":"email"},
	"code":{"type":"string","pattern":"^[A-Z]{3}$"},
	"age":{"type":"integer","minimum":18,"maximum":120},
	"budget":{"type":"number","minimum":0.5,"default":100.25},
	"agree":{"type":"boolean","default":false},
	"class":{"type":"string","enum":["eco","biz"],"enumNames":["Economy","Business"]},
	"seat":{"type":"string","oneOf":[{"const":"w","title":"Window"},{"const":"a","title":"Aisle"}]},
	"meals":{"type":"array","items":{"type":"string","anyOf":[{"const":"veg","title":"Vegetarian"},{"const":"fish"}]},"minItems":1,"maxItems":2,"default":["veg"]},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},
	"required":["name","age"]}`

// ElicitRequest.Form describes the fields of a requestedSchema in the
// order the server wrote them, with every attribute a client needs to
// render them.
func TestElicitRequestFormDescribesTheFields(t *testing.T) {
	t.Parallel()
	f, err := (&ElicitRequest{Message: "?", RequestedSchema: json.RawMessage(fullForm)}).Form()
	if err != nil {
		t.Fatal(err)
	}
	if f.Title != "Trip" || f.Description != "Where to?" {
		t.Fatalf("%+v", f)
	}
	var names []string
	for _, fd := range f.Fields {
		names = append(names, fd.Name)
	}
	if got := strings.Join(names, ","); got != "name,email,code,age,budget,agree,class,seat,meals,tags" {
		t.Fatalf("order %s", got)
	}
	ip := func(n int) *int { return &n }
	fp := func(n float64) *float64 { return &n }
	want := map[string]FormField{
		"name":   {Name: "name", Title: "Name", Description: "Your name", Type: "string", Required: true, Default: "Ada", MinLength: ip(2), MaxLength: ip(40)},
		"email":  {Name: "email", Type: "string", Format: "email"},
		"code":   {Name: "code", Type: "string", Pattern: "^[A-Z]{3}$"},
		"age":    {Name: "age", Type: "integer", Required: true, Minimum: fp(18), Maximum: fp(120)},
		"budget": {Name: "budget", Type: "number", Minimum: fp(0.5), Default: 100.25},
		"agree":  {Name: "agree", Type: "boolean", Default: false},
		"class":  {Name: "class", Type: "string", Options: []FormOption{{"eco", "Economy"}, {"biz", "Business"}}},
		"seat":   {Name: "seat", Type: "string", Options: []FormOption{{"w", "Window"}, {"a", "Aisle"}}},
		"meals":  {Name: "meals", Type: "array", Options: []FormOption{{"veg", "Vegetarian"}, {"fish", ""}}, MinItems: ip(1), MaxItems: ip(2), Default: []string{"veg"}},
		"tags":   {Name: "tags", Type: "array", Options: []FormOption{{"a", ""}, {"b", ""}}},
	}
	for name, w := range want {
		got := f.Field(name)
		if got == nil || !reflect.DeepEqual(*got, w) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, w)
		}
	}
	if !f.Field("meals").Multiple() || f.Field("seat").Multiple() || f.Field("nope") != nil {
		t.Fatal("Multiple / Field")
	}

	// A form asked by the server's own API reads back the same.
	type trip struct {
		City   string `json:"city" jsonschema:"the city"`
		Nights int    `json:"nights,omitempty"`
	}
	fs, err := formSchemaFor[trip]()
	if err != nil {
		t.Fatal(err)
	}
	f, err = (&ElicitRequest{RequestedSchema: fs.raw}).Form()
	if err != nil || len(f.Fields) != 2 || !f.Field("city").Required || f.Field("nights").Type != "integer" || f.Field("city").Description != "the city" {
		t.Fatalf("%+v %v", f, err)
	}
}

// What Form refuses, and what it needs no schema for.
func TestElicitRequestFormRefusesWhatIsNotAForm(t *testing.T) {
	t.Parallel()
	if _, err := (&ElicitRequest{Mode: ElicitModeURL, URL: "https://x"}).Form(); !errors.Is(err, errNotAForm) {
		t.Fatal(err)
	}
	if f, err := (&ElicitRequest{Message: "ok?"}).Form(); err != nil || len(f.Fields) != 0 {
		t.Fatal(f, err)
	}
	for _, bad := range []string{
		`[]`,
		`{"type":"array"}`,
		`{"type":"object","properties":[]}`,
		`{"type":"object","properties":{"a":{"type":"object"}}}`,
		`{"type":"object","properties":{"a":{}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{"a":{"type":"string","enum":[1,2]}}}`,
		`{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`,
		`{"type":"object","properties":{"a":{"type":"string","default":{"x":1}}}}`,
		`{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","oneOf":[{"title":"no const"}]}}}`,
		`{"type":"object","properties":{"a":{"type":"string","enum":[]}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[]}}}}`,
	} {
		if f, err := (&ElicitRequest{RequestedSchema: json.RawMessage(bad)}).Form(); err == nil {
			t.Errorf("%s: accepted as %+v", bad, f)
		}
	}
	// Keywords without a place in the description are ignored.
	f, err := (&ElicitRequest{RequestedSchema: json.RawMessage(`{"$schema":"x","type":"object","additionalProperties":false,"properties":{"a":{"type":"string","x-ui":"wide"}}}`)}).Form()
	if err != nil || len(f.Fields) != 1 {
		t.Fatal(f, err)
	}
}

// The answer constructors build what the automatic path would send; an
// elicitation handler can read the form and answer from a struct.
func TestElicitAnswerConstructors(t *testing.T) {
	t.Parallel()
	type answer struct {
		City   string   `json:"city"`
		Nights int      `json:"nights"`
		Meals  []string `json:"meals"`
		OK     bool     `json:"ok"`
	}
	r, err := ElicitAnswer(ElicitAccept, answer{"Paris", 3, []string{"veg"}, true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Action != ElicitAccept || !reflect.DeepEqual(r.Content, map[string]any{"city": "Paris", "nights": int64(3), "meals": []string{"veg"}, "ok": true}) {
		t.Fatalf("%+v", r)
	}
	for _, bad := range []any{42, []string{"x"}, map[string]any{"nested": map[string]int{"a": 1}}, func() {}} {
		if _, err := ElicitAnswer(ElicitAccept, bad); err == nil {
			t.Errorf("%T accepted", bad)
		}
	}
	d, derr := ElicitAnswer(ElicitDecline, nil)
	cn, cerr := ElicitAnswer(ElicitCancel, nil)
	a, aerr := ElicitAnswer(ElicitAccept, map[string]any{"a": "b"})
	if derr != nil || cerr != nil || aerr != nil || d.Action != ElicitDecline || cn.Action != ElicitCancel || a.Content["a"] != "b" {
		t.Fatal("constructors", derr, cerr, aerr)
	}
	if _, err := ElicitAnswer(ElicitDecline, map[string]any{"a": "b"}); err == nil {
		t.Error("a declined answer took content")
	}
	if _, err := ElicitAnswer("maybe", nil); err == nil {
		t.Error("an unknown action was taken")
	}

	// Against a real server's asking API.
	type trip struct {
		City   string `json:"city"`
		Nights int    `json:"nights"`
	}
	s := NewServer(Implementation{Name: "ask", Version: "1"}, nil)
	AddTypedTool(s, &Tool{Name: "book"}, func(ctx context.Context, r *CallToolRequest, in struct{}) (*CallToolResult, error) {
		got, err := Elicit[trip](ctx, "Where?")
		if err != nil {
			return nil, err
		}
		if got.Action != ElicitAccept {
			return TextResult(string(got.Action)), nil
		}
		return TextResult(got.Content.City + " x" + string(rune('0'+got.Content.Nights))), nil
	})
	var seen *Form
	c := memClient(t, s, &ClientOptions{Elicitation: func(ctx context.Context, req *ElicitRequest) (*ElicitResult, error) {
		f, err := req.Form()
		if err != nil {
			return nil, err
		}
		seen = f
		if f.Field("city") == nil {
			return ElicitAnswer(ElicitDecline, nil)
		}
		return ElicitAnswer(ElicitAccept, trip{City: "Rome", Nights: 2})
	}})
	res, err := c.CallTool(context.Background(), "book", nil, nil)
	if err != nil || resultText(t, res) != "Rome x2" {
		t.Fatal(res, err)
	}
	if seen == nil || len(seen.Fields) != 2 || seen.Field("nights").Type != "integer" {
		t.Fatalf("%+v", seen)
	}
}

// In manual mode the InputResponses setters answer a PendingCall without
// hand-written JSON.
func TestInputResponsesSettersAnswerAPendingCall(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	c := memClient(t, f.s, nil)
	ctx := context.Background()
	_, err := c.CallTool(ctx, "three_rounds", map[string]string{"nonce": "n1"}, &CallOptions{Manual: true})
	var pe *PendingCallError
	if !errors.As(err, &pe) {
		t.Fatal(err)
	}
	var rs InputResponses
	grace, _ := ElicitAnswer(ElicitAccept, map[string]any{"name": "Grace"})
	if err := rs.SetElicit("name", grace); err != nil {
		t.Fatal(err)
	}
	_, err = c.Resume(ctx, pe.Call, rs, &CallOptions{Manual: true})
	if !errors.As(err, &pe) {
		t.Fatal(err)
	}
	var rs2 InputResponses
	if err := rs2.SetSampling("capital", &CreateMessageResult{Role: RoleAssistant, Model: "m", Content: []Content{&TextContent{Text: "Paris"}}}); err != nil {
		t.Fatal(err)
	}
	if err := rs2.SetRoots("roots", &ListRootsResult{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Resume(ctx, pe.Call, rs2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res.(*CallToolResult)); got != "Hello Grace, capital Paris, 0 roots, nonce n1" {
		t.Fatal(got)
	}
	if err := rs.SetElicit("x", &ElicitResult{Action: "maybe"}); err == nil {
		t.Fatal("an unknown action was set")
	}
	if _, ok := rs["x"]; ok {
		t.Fatal("a refused answer was set")
	}
	if rs.SetElicit("x", nil) == nil || rs.SetSampling("x", nil) == nil || rs.SetRoots("x", nil) == nil {
		t.Fatal("nil results accepted")
	}
	if got, err := rs.Elicit("name"); err != nil || got.Content["name"] != "Grace" {
		t.Fatal(got, err)
	}
}

// Form reads any schema a server sends without panicking, and what it
// returns is a usable description: unique names, known types, options
// for every multi-select.
func FuzzElicitForm(f *testing.F) {
	f.Add(fullForm)
	f.Add(`{"type":"object","properties":{"a":{"type":"string","enum":["x"],"enumNames":[]}}}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"array","items":{"oneOf":[{"const":"q"}]}}},"required":["a","a"]}`)
	f.Add(`{"properties":{"a":{"type":"integer","minimum":1e400}}}`)
	f.Add(`{"properties":{"\u0061":{"type":"boolean","default":null}}}`)
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		form, err := (&ElicitRequest{RequestedSchema: json.RawMessage(s)}).Form()
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, fd := range form.Fields {
			if seen[fd.Name] {
				t.Fatalf("%s: field %q twice", s, fd.Name)
			}
			seen[fd.Name] = true
			switch fd.Type {
			case "string", "number", "integer", "boolean":
			case "array":
				if len(fd.Options) == 0 {
					t.Fatalf("%s: multi-select %q without options", s, fd.Name)
				}
			default:
				t.Fatalf("%s: field %q of type %q", s, fd.Name, fd.Type)
			}
		}
	})
}

// A requestedSchema a server sends is read within bounds: at most
// maxFormFields fields, maxFormOptions options a field, patterns of at
// most maxFormPatternBytes; a schema of 50 000 fields all required (once
// quadratic to read: 8 s) is refused at once.
// Serial: it bounds the wall time of CPU work.
func TestElicitationFormFromAServerIsBounded(t *testing.T) {
	form := func(fields int, prop func(i int) string, required bool) json.RawMessage {
		var props, req []string
		for i := range fields {
			props = append(props, fmt.Sprintf(`"f%d":%s`, i, prop(i)))
			req = append(req, fmt.Sprintf(`"f%d"`, i))
		}
		s := `{"type":"object","properties":{` + strings.Join(props, ",") + `}`
		if required {
			s += `,"required":[` + strings.Join(req, ",") + `]`
		}
		return json.RawMessage(s + `}`)
	}
	str := func(int) string { return `{"type":"string"}` }
	options := func(n int, titled bool) string {
		var o []string
		for i := range n {
			if titled {
				o = append(o, fmt.Sprintf(`{"const":"v%d","title":"V"}`, i))
			} else {
				o = append(o, fmt.Sprintf(`"v%d"`, i))
			}
		}
		return strings.Join(o, ",")
	}
	prop := func(s string) func(int) string { return func(int) string { return s } }
	if f, err := (&ElicitRequest{RequestedSchema: form(maxFormFields, str, true)}).Form(); err != nil || len(f.Fields) != maxFormFields || !f.Fields[0].Required {
		t.Fatalf("%d fields: %v", maxFormFields, err)
	}
	bads := []json.RawMessage{
		form(maxFormFields+1, str, false),
		form(50_000, str, true),
		form(1, prop(`{"type":"string","enum":[`+options(maxFormOptions+1, false)+`]}`), false),
		form(1, prop(`{"type":"string","oneOf":[`+options(maxFormOptions+1, true)+`]}`), false),
		form(1, prop(`{"type":"array","items":{"anyOf":[`+options(maxFormOptions+1, true)+`]}}`), false),
		form(1, prop(`{"type":"string","pattern":"`+strings.Repeat("a", maxFormPatternBytes+1)+`"}`), false),
	}
	start := time.Now() // the refusing is timed, not the building of the forms
	for _, bad := range bads {
		if f, err := (&ElicitRequest{RequestedSchema: bad}).Form(); err == nil {
			t.Errorf("%.80s: accepted (%d fields)", bad, len(f.Fields))
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("refusing took %v", took)
	}
	f, err := (&ElicitRequest{RequestedSchema: form(1, prop(`{"type":"string","enum":[`+options(maxFormOptions, false)+`]}`), false)}).Form()
	if err != nil || len(f.Fields[0].Options) != maxFormOptions {
		t.Fatalf("%d options: %v", maxFormOptions, err)
	}
}
