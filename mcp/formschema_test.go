package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Place is an elicitation form with an enum and a field whose name holds
// an s (folded by encoding/json from U+017F ſ) and a k (from U+212A K).
type Place struct {
	Region string `json:"region" mcp:"enum=us|eu"`
	Size   string `json:"size,omitempty"`
	Kind   string `json:"kind,omitempty"`
}

// foldedAnswers are accepted answers that encoding/json would decode
// differently from how an exact-key validator reads them.
var foldedAnswers = map[string]string{
	"upper-case variant":    `{"region":"us","REGION":"mars"}`,
	"variant only":          `{"REGION":"mars"}`,
	"escaped duplicate":     `{"region":"us","\u0072egion":"eu"}`,
	"plain duplicate":       `{"region":"us","region":"eu"}`,
	"long s variant":        `{"region":"us","ſize":"huge"}`,
	"kelvin sign variant":   `{"region":"us","\u212Aind":"evil"}`,
	"escaped long s":        `{"region":"us","\u017Fize":"huge"}`,
	"title-case variant":    `{"region":"us","Region":"mars"}`,
	"variant before proper": `{"Region":"mars","region":"us"}`,
}

// placeServer asks for a Place (Elicit[T]) in tool "typed" and for the
// same form as raw schema (ElicitForm) in tool "raw"; both report what
// the handler saw.
func placeServer(t *testing.T) *Server {
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "typed"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		e, err := Elicit[Place](ctx, "Where?", WithKey("place"))
		if err != nil {
			return nil, err
		}
		p, err := e.Value()
		if err != nil {
			return nil, err
		}
		return TextResult(fmt.Sprintf("region=%s size=%s kind=%s", p.Region, p.Size, p.Kind)), nil
	})
	raw := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","enum":["us","eu"]},"size":{"type":"string"},"kind":{"type":"string"}},"required":["region"]}`)
	s.AddTool(&Tool{Name: "raw"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		res, err := ElicitForm(ctx, "Where?", raw, WithKey("place"))
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res.Content)
		return TextResult(string(res.Action) + " " + string(b)), nil
	})
	return s
}

func acceptRaw(content string) json.RawMessage {
	return json.RawMessage(`{"action":"accept","content":` + content + `}`)
}

// TestAnswersAreDecodedExactlyAsChecked: in both eras, for Elicit[T] and
// ElicitForm, an answer holding a member that folds onto a declared field
// (upper case, ſ, K) or a duplicate after escape resolution is an invalid
// answer, never a value the validator did not see.
func TestAnswersAreDecodedExactlyAsChecked(t *testing.T) {
	t.Parallel()
	s := placeServer(t)
	h := NewHTTPHandler(s, nil)
	ts, _ := legacyServer(t, s, nil)
	lc := newLegacyClient(t, ts.URL, legacyCaps)
	for _, tool := range []string{"typed", "raw"} {
		for name, content := range foldedAnswers {
			answer := acceptRaw(content)
			d := &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"` + tool + `","arguments":{}`}
			v := d.run(func(string, map[string]any) any { return answer })
			if r := result(t, v); r["isError"] != true || !strings.Contains(text(t, v), `question "Where?" is not valid`) {
				t.Errorf("2026-07-28 %s, %s: handler saw %v", tool, name, r)
			}
			lc.answer = func(string, map[string]any) any { return answer }
			lv := lc.request(MethodToolsCall, `{"name":"`+tool+`"}`)
			if r := result(t, lv); r["isError"] != true || !strings.Contains(legacyText(t, lv), `question "Where?" is not valid`) {
				t.Errorf("2025-11-25 %s, %s: handler saw %v", tool, name, r)
			}
		}
	}
	// The proper answer goes through both.
	good := acceptRaw(`{"region":"eu","size":"s","kind":"k"}`)
	d := &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"typed","arguments":{}`}
	if got := text(t, d.run(func(string, map[string]any) any { return good })); got != "region=eu size=s kind=k" {
		t.Errorf("typed: %q", got)
	}
	lc.answer = func(string, map[string]any) any { return good }
	if got := legacyText(t, lc.request(MethodToolsCall, `{"name":"raw"}`)); got != `accept {"kind":"k","region":"eu","size":"s"}` {
		t.Errorf("raw: %q", got)
	}
}

// TestUndeclaredAnswerFieldsAreDropped: members the form does not declare
// never reach the handler (ElicitResult.Content lacks them; T cannot see
// them), and decline/cancel carry no content.
func TestUndeclaredAnswerFieldsAreDropped(t *testing.T) {
	t.Parallel()
	s := placeServer(t)
	h := NewHTTPHandler(s, nil)
	answer := acceptRaw(`{"region":"us","admin":true,"note":"x"}`)
	d := &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"raw","arguments":{}`}
	if got := text(t, d.run(func(string, map[string]any) any { return answer })); got != `accept {"region":"us"}` {
		t.Errorf("ElicitForm content: %q", got)
	}
	decline := json.RawMessage(`{"action":"decline","content":{"region":"us","admin":true}}`)
	d = &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"raw","arguments":{}`}
	if got := text(t, d.run(func(string, map[string]any) any { return decline })); got != `decline null` {
		t.Errorf("declined content: %q", got)
	}
	fs, _ := formSchemaFor[Place]()
	if got := string(fs.declaredContent([]byte(`{"admin":true,"region":"us","\u0073ize":"m"}`))); got != `{"region":"us","size":"m"}` {
		t.Errorf("declaredContent: %s", got)
	}
}

// TestAnswerEnvelopeRefusesCaseVariants: "Action" or "CONTENT" beside the
// real members would be read by folding decoders instead of them.
func TestAnswerEnvelopeRefusesCaseVariants(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"action":"accept","Action":"decline"}`,
		`{"action":"decline","CONTENT":{"region":"us"}}`,
		`{"action":"accept","\u0061ction":"decline"}`,
		`{"action":"accept","content":{},"content":{}}`,
	} {
		if _, _, err := decodeElicit([]byte(raw)); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
}

// TestElicitFormEnforcesTheRestrictedSchema: every keyword of the
// specification's restricted elicitation schema (and pattern) is checked
// on an accepted answer.
func TestElicitFormEnforcesTheRestrictedSchema(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{
		"name":{"type":"string","minLength":2,"maxLength":5},
		"code":{"type":"string","pattern":"^[A-Z]{3}$"},
		"mail":{"type":"string","format":"email"},
		"home":{"type":"string","format":"uri"},
		"day":{"type":"string","format":"date"},
		"at":{"type":"string","format":"date-time"},
		"age":{"type":"integer","minimum":18,"maximum":130},
		"score":{"type":"number","minimum":0.5,"maximum":9.5},
		"ok":{"type":"boolean"},
		"color":{"type":"string","enum":["red","blue"]},
		"titled":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},
		"legacy":{"type":"string","enum":["x","y"],"enumNames":["X","Y"]},
		"multi":{"type":"array","items":{"type":"string","enum":["p","q","r"]},"minItems":1,"maxItems":2},
		"multiTitled":{"type":"array","items":{"anyOf":[{"const":"m","title":"M"},{"const":"n","title":"N"}]}}
	},"required":["name"]}`
	fs, err := formSchemaFromRaw(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	check := func(content string) error {
		r, _, err := decodeElicit(acceptRaw(content))
		if err != nil {
			return err
		}
		return fs.check(r)
	}
	good := `{"name":"Ann","code":"ABC","mail":"ann@example.com","home":"https://example.com/a?b=c#d","day":"2024-02-29",
		"at":"2024-02-29T12:30:00.5+01:00","age":18,"score":9.5,"ok":true,"color":"red","titled":"b","legacy":"y",
		"multi":["p","r"],"multiTitled":["m","n"]}`
	if err := check(good); err != nil {
		t.Fatalf("a valid answer was refused: %v", err)
	}
	if err := check(`{"name":"Al"}`); err != nil {
		t.Fatalf("optional fields are optional: %v", err)
	}
	bad := map[string]string{
		"required missing": `{}`,
		"too short":        `{"name":"A"}`,
		"too long":         `{"name":"Annabel"}`,
		"pattern":          `{"name":"Ann","code":"abc"}`,
		"pattern anchors":  `{"name":"Ann","code":"ABCD"}`,
		"email":            `{"name":"Ann","mail":"Ann <ann@example.com>"}`,
		"email no at":      `{"name":"Ann","mail":"ann.example.com"}`,
		"uri relative":     `{"name":"Ann","home":"/a/b"}`,
		"uri space":        `{"name":"Ann","home":"https://exa mple.com"}`,
		"uri bad escape":   `{"name":"Ann","home":"https://example.com/%zz"}`,
		"date":             `{"name":"Ann","day":"2023-02-29"}`,
		"date form":        `{"name":"Ann","day":"2024-2-9"}`,
		"date-time":        `{"name":"Ann","at":"2024-02-29 12:30:00"}`,
		"date-time zone":   `{"name":"Ann","at":"2024-02-29T12:30:00"}`,
		"integer below":    `{"name":"Ann","age":17}`,
		"integer above":    `{"name":"Ann","age":131}`,
		"integer fraction": `{"name":"Ann","age":18.5}`,
		"number below":     `{"name":"Ann","score":0.49}`,
		"number above":     `{"name":"Ann","score":9.51}`,
		"number type":      `{"name":"Ann","score":"5"}`,
		"boolean type":     `{"name":"Ann","ok":"true"}`,
		"enum":             `{"name":"Ann","color":"green"}`,
		"titled enum":      `{"name":"Ann","titled":"A"}`,
		"legacy enum":      `{"name":"Ann","legacy":"X"}`,
		"multi value":      `{"name":"Ann","multi":["p","s"]}`,
		"multi too few":    `{"name":"Ann","multi":[]}`,
		"multi too many":   `{"name":"Ann","multi":["p","q","r"]}`,
		"multi titled":     `{"name":"Ann","multiTitled":["M"]}`,
		"multi not array":  `{"name":"Ann","multi":"p"}`,
		"null value":       `{"name":"Ann","color":null}`,
		"case variant":     `{"name":"Ann","NAME":"Zed"}`,
		"folded variant":   `{"name":"Ann","ſcore":100}`,
	}
	for name, content := range bad {
		if err := check(content); err == nil {
			t.Errorf("%s: %s accepted", name, content)
		}
	}
	// Length counts code points, not bytes.
	if err := check(`{"name":"ÄÖÜßé"}`); err != nil {
		t.Errorf("five code points refused: %v", err)
	}
}

// TestElicitFormRefusesSchemasItCannotEnforce: a schema keyword the SDK
// would not check, an unknown format, a pattern RE2 cannot compile, a
// required name that is no property: the question is not asked.
func TestElicitFormRefusesSchemasItCannotEnforce(t *testing.T) {
	t.Parallel()
	for name, schema := range map[string]string{
		"lookahead pattern": `{"type":"object","properties":{"a":{"type":"string","pattern":"^(?=a)"}}}`,
		"broken pattern":    `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
		"unknown keyword":   `{"type":"object","properties":{"a":{"type":"number","multipleOf":2}}}`,
		"unknown format":    `{"type":"object","properties":{"a":{"type":"string","format":"hostname"}}}`,
		"misplaced keyword": `{"type":"object","properties":{"a":{"type":"integer","minLength":1}}}`,
		"nested object":     `{"type":"object","properties":{"a":{"type":"object"}}}`,
		"array of numbers":  `{"type":"object","properties":{"a":{"type":"array","items":{"type":"number","enum":[1]}}}}`,
		"free array":        `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
		"undeclared req":    `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
		"top keyword":       `{"type":"object","properties":{},"additionalProperties":false}`,
		"repeated property": `{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"integer"}}}`,
		"negative length":   `{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`,
		"huge bound":        `{"type":"object","properties":{"a":{"type":"number","maximum":1e999}}}`,
		"not an object":     `{"type":"array"}`,
	} {
		if _, err := formSchemaFromRaw(json.RawMessage(schema)); err == nil {
			t.Errorf("%s: %s accepted", name, schema)
		}
	}
	// Through the API: ElicitForm fails in the handler, nothing is asked.
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "t"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := ElicitForm(ctx, "?", json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","pattern":"(?<=x)"}}}`))
		if err == nil {
			return TextResult("asked"), nil
		}
		return TextResult("refused: " + err.Error()), nil
	})
	v := post(t, NewHTTPHandler(s, nil), req(1, MethodToolsCall, `"name":"t","arguments":{}`)).last(t)
	if got := text(t, v); !strings.HasPrefix(got, "refused: ") || !strings.Contains(got, "RE2") {
		t.Errorf("%q", got)
	}
}

// TestElicitFormatTagsAreEnforced: a format declared with an `mcp` tag is
// checked like a raw schema's, and an unknown one is refused.
func TestElicitFormatTagsAreEnforced(t *testing.T) {
	t.Parallel()
	type Contact struct {
		Mail string `json:"mail" mcp:"format=email"`
	}
	fs, err := formSchemaFor[Contact]()
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := decodeElicit(acceptRaw(`{"mail":"not an address"}`))
	if fs.check(r) == nil {
		t.Error("an invalid email was accepted")
	}
	type Odd struct {
		X string `json:"x" mcp:"format=ipv4"`
	}
	if _, err := buildFormSchema(reflect.TypeFor[Odd]()); err == nil {
		t.Error("format=ipv4 accepted")
	}
	// Two fields of one name (encoding/json would fill neither).
	twice := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
		{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
	})
	if _, err := buildFormSchema(twice); err == nil {
		t.Error("two fields named a accepted")
	}
	type Dash struct {
		//lint:ignore SA5008 the tag names a field "-", the case under test
		D string `json:"-,"`
	}
	fs2, err := buildFormSchema(reflect.TypeFor[Dash]())
	if err != nil || len(fs2.fields) != 1 || fs2.fields[0].name != "-" {
		t.Errorf(`json:"-," names the field "-": %+v %v`, fs2, err)
	}
}

func TestFormatValidators(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format, s string
		ok        bool
	}{
		{"email", "a@b.example", true}, {"email", "a.b+c@example.com", true}, {"email", "a@[192.0.2.1]", true},
		{"email", "a@", false}, {"email", "@b", false}, {"email", "a b@c", false}, {"email", "<a@b>", false}, {"email", "a@b (x)", false},
		{"uri", "https://example.com", true}, {"uri", "urn:isbn:0451450523", true}, {"uri", "mailto:a@b", true},
		{"uri", "example.com", false}, {"uri", "1http://x", false}, {"uri", "http://x/ä", false}, {"uri", "http://x/<", false}, {"uri", "", false},
		{"date", "2000-01-01", true}, {"date", "2000-13-01", false}, {"date", "2000-01-32", false}, {"date", "20000-01-01", false},
		{"date-time", "2000-01-01T00:00:00Z", true}, {"date-time", "2000-01-01t00:00:00z", true}, {"date-time", "2000-01-01T00:00:00.123-05:30", true},
		{"date-time", "2000-01-01T25:00:00Z", false}, {"date-time", "2000-01-01", false}, {"date-time", "2000-01-01T00:00Z", false},
	} {
		if got := validFormat(c.format, c.s); got != c.ok {
			t.Errorf("%s %q: %v, want %v", c.format, c.s, got, c.ok)
		}
	}
}

// FuzzElicitAnswer: whatever the answer, an accepted Elicit[Place] holds
// exactly the values the checks saw: the decoded T agrees with the
// checked content, and the region is in its enum.
func FuzzElicitAnswer(f *testing.F) {
	for _, c := range foldedAnswers {
		f.Add(string(acceptRaw(c)))
	}
	for _, s := range []string{
		`{"action":"accept","content":{"region":"eu","size":"m","kind":"k"}}`,
		`{"action":"accept","content":{"region":"us","extra":[1]}}`,
		`{"action":"decline","content":{"region":"mars"}}`,
		`{"action":"accept","content":{"region":"us","size":"\ud800"}}`,
		`{"action":"accept","Action":"decline","content":{"region":"us"}}`,
		`{"action":"accept","content":{"region":"u\u0073"}}`,
		"{\"action\":\"accept\",\"content\":{\"region\":\"us\",\"siz\xff\":\"x\"}}",
	} {
		f.Add(s)
	}
	fs, err := formSchemaFor[Place]()
	if err != nil {
		f.Fatal(err)
	}
	q := &question{req: &ElicitRequest{Message: "Where?"}, key: "k"}
	f.Fuzz(func(t *testing.T, answer string) {
		r, content, err := decodeElicit([]byte(answer))
		if err == nil {
			err = fs.check(r)
		}
		if err != nil {
			checkAnswerError(t, q.invalidAnswer("k", err), answer)
			return
		}
		if r.Action != ElicitAccept {
			return
		}
		var p Place
		if err := json.Unmarshal(fs.declaredContent(content), &p); err != nil {
			t.Fatalf("checked content does not decode: %v", err)
		}
		if p.Region != "us" && p.Region != "eu" {
			t.Fatalf("region %q outside the enum reached T (%s)", p.Region, answer)
		}
		for name, got := range map[string]string{"region": p.Region, "size": p.Size, "kind": p.Kind} {
			want, _ := r.Content[name].(string)
			if got != want {
				t.Fatalf("%s: T has %q, the checks saw %q (%s)", name, got, want, answer)
			}
		}
		for k := range r.Content {
			if fs.field(k) == nil {
				t.Fatalf("undeclared %q kept", k)
			}
		}
	})
}

// answerRules are the rules an InvalidAnswerError may name.
var answerRules = []string{"", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern", "format",
	"required", "type", "minItems", "maxItems", "case", "repeated"}

// checkAnswerError: what an invalid answer's error repeats of the answer
// is valid UTF-8 and bounded, and names a known rule.
func checkAnswerError(t *testing.T, e *InvalidAnswerError, answer string) {
	t.Helper()
	msg := e.Error()
	if !utf8.ValidString(msg) || !utf8.ValidString(e.Field) || utf8.RuneCountInString(e.Detail) > maxDetailRunes ||
		utf8.RuneCountInString(e.Field) > maxFieldRunes || len(msg) > 4*(maxDetailRunes+maxQuestionRunes)+64 {
		t.Fatalf("answer %q: error %q (field %q)", answer, msg, e.Field)
	}
	if !slices.Contains(answerRules, e.Rule) || (e.Rule == "" && e.Field != "") {
		t.Fatalf("answer %q: rule %q field %q", answer, e.Rule, e.Field)
	}
}

// TestAServerNeverAsksAFormItsClientsRefuse: the server's ElicitForm and
// the client's ElicitRequest.Form read a schema with one reader, so a
// form past the client's bounds (fields, options, pattern bytes) is
// refused when the server asks it, and a form the server accepts reads
// back on the client with the same fields.
func TestAServerNeverAsksAFormItsClientsRefuse(t *testing.T) {
	t.Parallel()
	var props []string
	for i := range maxFormFields + 1 {
		props = append(props, fmt.Sprintf(`"f%d":{"type":"string"}`, i))
	}
	opts := `"x"` + strings.Repeat(`,"x"`, maxFormOptions)
	for name, schema := range map[string]string{
		"fields":  `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`,
		"options": `{"type":"object","properties":{"e":{"type":"string","enum":[` + opts + `]}}}`,
		"pattern": `{"type":"object","properties":{"p":{"type":"string","pattern":"` + strings.Repeat("a", maxFormPatternBytes+1) + `"}}}`,
	} {
		if _, err := formSchemaFromRaw(json.RawMessage(schema)); err == nil {
			t.Errorf("%s: the server took a form its clients refuse", name)
		}
		if _, err := (&ElicitRequest{RequestedSchema: json.RawMessage(schema)}).Form(); err == nil {
			t.Errorf("%s: the client read a form past its bounds", name)
		}
	}
	schema := json.RawMessage(`{"type":"object","properties":{"b":{"type":"integer","minimum":1},"a":{"type":"string","enum":["x","y"]}},"required":["a"]}`)
	fs, err := formSchemaFromRaw(schema)
	if err != nil {
		t.Fatal(err)
	}
	f, err := (&ElicitRequest{RequestedSchema: schema}).Form()
	if err != nil || len(f.Fields) != len(fs.fields) {
		t.Fatalf("%+v %v", f, err)
	}
	for _, c := range fs.fields {
		v := f.Field(c.name)
		if v == nil || v.Type != c.kind || v.Required != c.required {
			t.Errorf("%s: server reads %s/%v, client %+v", c.name, c.kind, c.required, v)
		}
	}
}
