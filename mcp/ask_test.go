package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"net/http"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

type Region struct {
	Region string `json:"region" jsonschema:"cloud region"`
}

type Size struct {
	GB int `json:"gb"`
}

// driver runs the client side of a multi round-trip call over HTTP,
// answering with answer(key, request) and recording each round.
type driver struct {
	t      *testing.T
	h      http.Handler
	method string
	params string // name/uri and arguments members
	caps   string
	rounds []map[string]any
	states []string
}

func (d *driver) run(answer func(key string, ir map[string]any) any) map[string]any {
	d.t.Helper()
	var responses map[string]any
	var state *string
	for i := 0; i < 8; i++ {
		p := d.params
		if responses != nil {
			b, _ := json.Marshal(responses)
			p += `,"inputResponses":` + string(b)
		}
		if state != nil {
			b, _ := json.Marshal(*state)
			p += `,"requestState":` + string(b)
		}
		body := req(i+1, d.method, p)
		if d.caps != "" {
			body = strings.Replace(body, testCaps, d.caps, 1)
		}
		v := post(d.t, d.h, body).last(d.t)
		d.rounds = append(d.rounds, v)
		r, ok := v["result"].(map[string]any)
		if !ok || r["resultType"] != "input_required" {
			return v
		}
		responses = map[string]any{}
		for k, ir := range r["inputRequests"].(map[string]any) {
			responses[k] = answer(k, ir.(map[string]any))
		}
		state = nil
		if s, ok := r["requestState"].(string); ok {
			state = &s
			d.states = append(d.states, s)
		}
	}
	d.t.Fatal("too many rounds")
	return nil
}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

func standardAnswers(key string, ir map[string]any) any {
	switch ir["method"] {
	case MethodElicit:
		msg := ir["params"].(map[string]any)["message"].(string)
		switch {
		case strings.Contains(msg, "region"):
			return accept(map[string]any{"region": "eu-west-1"})
		case strings.Contains(msg, "size"):
			return accept(map[string]any{"gb": 20})
		}
		return accept(map[string]any{})
	case MethodCreateMessage:
		return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "a haiku"}, "model": "m"}
	case MethodListRoots:
		return map[string]any{"roots": []any{map[string]any{"uri": "file:///work", "name": "work"}}}
	}
	return nil
}

func text(t *testing.T, v map[string]any) string {
	t.Helper()
	r := result(t, v)
	if c, ok := r["content"].([]any); ok && len(c) > 0 {
		return c[0].(map[string]any)["text"].(string)
	}
	if m, ok := r["messages"].([]any); ok && len(m) > 0 {
		return m[0].(map[string]any)["content"].(map[string]any)["text"].(string)
	}
	if c, ok := r["contents"].([]any); ok && len(c) > 0 {
		return c[0].(map[string]any)["text"].(string)
	}
	t.Fatalf("no text in %v", r)
	return ""
}

func askServer(t *testing.T, opts *ServerOptions) *Server {
	s := NewServer(Implementation{Name: "asker", Version: "1"}, opts)
	return s
}

func TestIndependentQuestionsLeaveInOneRound(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	runs := 0
	s.AddTool(&Tool{Name: "plan"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		runs++
		region, err1 := Elicit[Region](ctx, "Which region should the database live in?")
		poem, err2 := Sample(ctx, &CreateMessageRequest{MaxTokens: 50, Messages: []SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: "haiku"}}}}})
		roots, err3 := ListRoots(ctx)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		return TextResult(region.Content.Region + " | " + poem.Content[0].(*TextContent).Text + " | " + roots[0].URI), nil
	})
	d := &driver{t: t, h: NewHTTPHandler(s, nil), method: MethodToolsCall, params: `"name":"plan","arguments":{}`}
	v := d.run(standardAnswers)
	if got := text(t, v); got != "eu-west-1 | a haiku | file:///work" {
		t.Errorf("result %q", got)
	}
	if len(d.rounds) != 2 {
		t.Fatalf("want 1 input round + completion, got %d rounds", len(d.rounds))
	}
	irs := result(t, d.rounds[0])["inputRequests"].(map[string]any)
	if len(irs) != 3 {
		t.Errorf("round 1 asked %d questions", len(irs))
	}
	for k := range irs {
		if !strings.HasPrefix(k, "elicit_") && !strings.HasPrefix(k, "sample_") && !strings.HasPrefix(k, "roots_") {
			t.Errorf("unexpected key %q", k)
		}
	}
	if runs != 2 {
		t.Errorf("handler ran %d times, want 2", runs)
	}
}

func TestDependentQuestionsTakeOneRoundEach(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "provision"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		region, err := Elicit[Region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		reg, err := region.Value()
		if err != nil {
			return nil, err
		}
		size, err := Elicit[Size](ctx, "What size in "+reg.Region+"?")
		if err != nil {
			return nil, err
		}
		return TextResult(reg.Region + ":" + itoa(size.Content.GB)), nil
	})
	d := &driver{t: t, h: NewHTTPHandler(s, nil), method: MethodToolsCall, params: `"name":"provision","arguments":{}`}
	v := d.run(standardAnswers)
	if text(t, v) != "eu-west-1:20" || len(d.rounds) != 3 {
		t.Fatalf("got %v in %d rounds", v, len(d.rounds))
	}
	second := result(t, d.rounds[1])["inputRequests"].(map[string]any)
	for _, ir := range second {
		if msg := ir.(map[string]any)["params"].(map[string]any)["message"]; msg != "What size in eu-west-1?" {
			t.Errorf("round 2 asked %v", msg)
		}
	}
}

func TestDeclineAndCancelAreValues(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "branch"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		e, err := Elicit[Region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		if !e.Accepted() {
			return TextResult("user said " + string(e.Action)), nil
		}
		return TextResult("accepted"), nil
	})
	s.AddTool(&Tool{Name: "strict"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		e, err := Elicit[Region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		if _, err := e.Value(); err != nil {
			return nil, err
		}
		return TextResult("accepted"), nil
	})
	h := NewHTTPHandler(s, nil)
	for _, action := range []string{"decline", "cancel"} {
		d := &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"branch","arguments":{}`}
		if got := text(t, d.run(func(string, map[string]any) any { return map[string]any{"action": action} })); got != "user said "+action {
			t.Errorf("%s: %q", action, got)
		}
		d = &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"strict","arguments":{}`}
		v := d.run(func(string, map[string]any) any { return map[string]any{"action": action} })
		r := result(t, v)
		past := map[string]string{"decline": "declined", "cancel": "cancelled"}[action]
		if want := `Question "Which region?" could not be answered: the elicitation was ` + past + "."; r["isError"] != true || text(t, v) != want {
			t.Errorf("%s with Value(): %v", action, r)
		}
	}
}

func TestRewordedQuestionIsAskedAgain(t *testing.T) {
	t.Parallel()
	k := requeststate.GenerateKey()
	deploy := func(message string) http.Handler {
		s := askServer(t, &ServerOptions{RequestState: RequestStateOptions{Keys: [][]byte{k}}})
		s.AddTool(&Tool{Name: "t"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			e, err := Elicit[Region](ctx, message, WithKey("region"))
			if err != nil {
				return nil, err
			}
			return TextResult(e.Content.Region), nil
		})
		return NewHTTPHandler(s, nil)
	}
	v1, v2 := deploy("Which region?"), deploy("Which region, please?")
	round1 := result(t, post(t, v1, req(1, MethodToolsCall, `"name":"t","arguments":{}`)).last(t))
	st, _ := json.Marshal(round1["requestState"])
	retry := req(2, MethodToolsCall, `"name":"t","arguments":{},"requestState":`+string(st)+`,"inputResponses":{"region":{"action":"accept","content":{"region":"us"}}}`)
	if got := text(t, post(t, v1, retry).last(t)); got != "us" {
		t.Fatalf("same deploy: %q", got)
	}
	r := result(t, post(t, v2, retry).last(t))
	if r["resultType"] != "input_required" {
		t.Fatalf("reworded question answered with a stale answer: %v", r)
	}
	msg := r["inputRequests"].(map[string]any)["region"].(map[string]any)["params"].(map[string]any)["message"]
	if msg != "Which region, please?" {
		t.Errorf("re-asked %v", msg)
	}
}

func TestAnswerWithoutStateIsAskedAgain(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "t"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		e, err := Elicit[Region](ctx, "Which region?", WithKey("region"))
		if err != nil {
			return nil, err
		}
		return TextResult(e.Content.Region), nil
	})
	v := post(t, NewHTTPHandler(s, nil), req(1, MethodToolsCall, `"name":"t","arguments":{},"inputResponses":{"region":{"action":"accept","content":{"region":"us"}}}`)).last(t)
	if r := result(t, v); r["resultType"] != "input_required" {
		t.Errorf("an answer without state was taken: %v", r)
	}
}

func TestForgedStateEntriesAreIgnored(t *testing.T) {
	t.Parallel()
	// A correctly sealed state whose plaintext a test-only codec lets us
	// craft: answers with a wrong question digest, for an unknown key, or
	// failing the schema must not be honoured.
	s := askServer(t, &ServerOptions{RequestState: RequestStateOptions{Codec: plainStateCodec{}}})
	s.AddTool(&Tool{Name: "t"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		e, err := Elicit[Region](ctx, "Which region?", WithKey("region"))
		if err != nil {
			return nil, err
		}
		return TextResult(e.Content.Region), nil
	})
	h := NewHTTPHandler(s, nil)
	real := result(t, post(t, h, req(1, MethodToolsCall, `"name":"t","arguments":{}`)).last(t))
	q, _ := newQuestion(&ElicitRequest{Mode: ElicitModeForm, Message: "Which region?", RequestedSchema: mustForm[Region](t).raw}, []AskOption{WithKey("region")}, nil)
	if !strings.HasPrefix(real["requestState"].(string), "plain.") {
		t.Fatal("test codec not in use")
	}
	sealer := requeststate.Sealer{Codec: plainStateCodec{}, TTL: DefaultStateTTL, Audience: "asker"}
	craft := func(answers []storedAnswer) string {
		tok, err := sealer.Seal(requeststate.Binding{Method: MethodToolsCall, Target: "t"}, "a"+string(encodeAskState(answers, nil)))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	wrongDigest := q.digest
	wrongDigest[0] ^= 1
	id := questionID("region", q.digest)
	cases := map[string]string{
		"wrong digest":   craft([]storedAnswer{{questionID("region", wrongDigest), json.RawMessage(`{"action":"accept","content":{"region":"forged"}}`)}}),
		"unknown key":    craft([]storedAnswer{{questionID("other", q.digest), json.RawMessage(`{"action":"accept","content":{"region":"forged"}}`)}}),
		"schema failing": craft([]storedAnswer{{id, json.RawMessage(`{"action":"accept","content":{"region":5}}`)}}),
		"wrong kind":     craft([]storedAnswer{{id, json.RawMessage(`{"roots":[]}`)}}),
	}
	for name, tok := range cases {
		b, _ := json.Marshal(tok)
		r := result(t, post(t, h, req(2, MethodToolsCall, `"name":"t","arguments":{},"requestState":`+string(b))).last(t))
		if r["resultType"] != "input_required" {
			t.Errorf("%s: honoured: %v", name, r)
		}
	}
	// The same crafting with the right digest is a valid state.
	good := craft([]storedAnswer{{id, json.RawMessage(`{"action":"accept","content":{"region":"ok"}}`)}})
	b, _ := json.Marshal(good)
	if got := text(t, post(t, h, req(3, MethodToolsCall, `"name":"t","arguments":{},"requestState":`+string(b))).last(t)); got != "ok" {
		t.Errorf("valid crafted state: %q", got)
	}
}

func mustForm[T any](t *testing.T) *formSchema {
	fs, err := formSchemaFor[T]()
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// An invalid answer is an isError result that names the question by its
// text and says what is wrong; the key (here an explicit one) stays in
// the result's _meta.
func TestInvalidAnswerBecomesIsErrorNamingTheQuestion(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "t"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		e, err := Elicit[Size](ctx, "What size?", WithKey("size"))
		if err != nil {
			return nil, err
		}
		return TextResult(itoa(e.Content.GB)), nil
	})
	h := NewHTTPHandler(s, nil)
	for name, c := range map[string]struct {
		answer any
		detail string
	}{
		"wrong type": {accept(map[string]any{"gb": "twenty"}), `gb must be an integer (got the string "twenty")`},
		"missing":    {accept(map[string]any{}), "gb is required"},
		"wrong kind": {map[string]any{"roots": []any{}}, "elicitation answer without action"},
		"not object": {12345, "elicitation answer is not an object"},
	} {
		d := &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"t","arguments":{}`}
		v := d.run(func(string, map[string]any) any { return c.answer })
		r := result(t, v)
		want := `The answer to question "What size?" is not valid: ` + c.detail + "."
		if msg := text(t, v); r["isError"] != true || msg != want {
			t.Errorf("%s: %q, want %q", name, msg, want)
		}
		meta, _ := r["_meta"].(map[string]any)
		data, _ := meta[InvalidAnswerMetaKey].(map[string]any)
		if data["key"] != "size" || data["question"] != "What size?" || data["detail"] != c.detail || data["reason"] != "invalid_answer" {
			t.Errorf("%s: _meta %v", name, meta)
		}
	}
}

func TestAskingNeedsTheDeclaredCapability(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "form"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := Elicit[Region](ctx, "Which region?", WithKey("q1"))
		return nil, err
	})
	s.AddTool(&Tool{Name: "url"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := ElicitURL(ctx, "Log in", "https://example.com/login", WithKey("q2"))
		return nil, err
	})
	s.AddTool(&Tool{Name: "sample"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := Sample(ctx, &CreateMessageRequest{MaxTokens: 5, Messages: []SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: "x"}}}}}, WithKey("q3"))
		return nil, err
	})
	s.AddTool(&Tool{Name: "sample_tools"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := Sample(ctx, &CreateMessageRequest{MaxTokens: 5, ToolChoice: &ToolChoice{Mode: "auto"}, Messages: []SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: "x"}}}}}, WithKey("q4"))
		return nil, err
	})
	s.AddTool(&Tool{Name: "roots"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := ListRoots(ctx, WithKey("q5"))
		return nil, err
	})
	h := NewHTTPHandler(s, nil)
	// The message names the question by its text; a question without
	// text (roots) by its key.
	cases := []struct{ tool, caps, want, question string }{
		{"form", `{"elicitation":{"url":{}}}`, `{"elicitation":{}}`, `question "Which region?"`},
		{"url", `{"elicitation":{}}`, `{"elicitation":{"url":{}}}`, `question "Log in"`},
		{"sample", `{"elicitation":{}}`, `{"sampling":{}}`, `sampling request "x"`},
		{"sample_tools", `{"sampling":{}}`, `{"sampling":{"tools":{}}}`, `sampling request "x"`},
		{"roots", `{"sampling":{}}`, `{"roots":{}}`, `roots request "q5"`},
	}
	for _, c := range cases {
		body := strings.Replace(req(1, MethodToolsCall, `"name":"`+c.tool+`","arguments":{}`), testCaps, c.caps, 1)
		res := post(t, h, body)
		v := res.last(t)
		if res.status != 400 || errorCode(t, v) != CodeMissingRequiredCapability {
			t.Errorf("%s: %d %v", c.tool, res.status, v)
			continue
		}
		e := v["error"].(map[string]any)
		got, _ := json.Marshal(e["data"].(map[string]any)["requiredCapabilities"])
		if string(got) != c.want {
			t.Errorf("%s: requiredCapabilities %s, want %s", c.tool, got, c.want)
		}
		if !strings.HasSuffix(e["message"].(string), " required by "+c.question) {
			t.Errorf("%s: message does not name the question: %v", c.tool, e["message"])
		}
	}
}

func TestPromptsAndResourceTemplatesAsk(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	s.AddPrompt(&Prompt{Name: "briefing"}, func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
		type Audience struct {
			Audience string `json:"audience"`
		}
		a, err := Elicit[Audience](ctx, "Who is the briefing for?")
		if err != nil {
			return nil, err
		}
		return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: "Write a briefing for " + a.Content.Audience + "."}}}}, nil
	})
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "vault://{name}", Name: "secret"}, func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
		ok, err := Elicit[struct {
			OK bool `json:"ok"`
		}](ctx, "Reveal "+r.Var("name")+"?")
		if err != nil {
			return nil, err
		}
		if !ok.Content.OK {
			return nil, errors.New("refused")
		}
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "s3cr3t"}}}, nil
	})
	s.AddResource(&Resource{URI: "static://x", Name: "x"}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		if _, err := ListRoots(ctx); err != nil {
			return nil, err
		}
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "x"}}}, nil
	})
	h := NewHTTPHandler(s, nil)
	d := &driver{t: t, h: h, method: MethodPromptsGet, params: `"name":"briefing"`}
	if got := text(t, d.run(func(string, map[string]any) any { return accept(map[string]any{"audience": "the board"}) })); got != "Write a briefing for the board." {
		t.Errorf("prompt: %q", got)
	}
	d = &driver{t: t, h: h, method: MethodResourcesRead, params: `"uri":"vault://db"`}
	if got := text(t, d.run(func(string, map[string]any) any { return accept(map[string]any{"ok": true}) })); got != "s3cr3t" {
		t.Errorf("template: %q", got)
	}
	v := post(t, h, req(1, MethodResourcesRead, `"uri":"static://x"`)).last(t)
	if v["error"] == nil {
		t.Errorf("a static resource asked: %v", v)
	}
}

func TestMixingTheTwoFormsIsAnError(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "mixed"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		Elicit[Region](ctx, "Which region?")
		return &InputRequiredResult{RequestState: "mine"}, nil
	})
	v := post(t, NewHTTPHandler(s, nil), req(1, MethodToolsCall, `"name":"mixed","arguments":{}`)).last(t)
	if errorCode(t, v) != CodeInternalError || !strings.Contains(v["error"].(map[string]any)["message"].(string), "one form") {
		t.Errorf("%v", v)
	}
}

func TestFormFieldsMustBePrimitive(t *testing.T) {
	t.Parallel()
	type Bad struct {
		Name  string
		Inner struct{ X int }
	}
	_, err := formSchemaFor[Bad]()
	if err == nil || !strings.Contains(err.Error(), "Inner") {
		t.Errorf("%v", err)
	}
	type Good struct {
		Name  string   `json:"name" mcp:"title=Name,format=email"`
		Age   int      `json:"age,omitempty"`
		Ratio float64  `json:"ratio"`
		Ok    bool     `json:"ok"`
		Tags  []string `json:"tags" mcp:"enum=a|b"`
		Color string   `json:"color" mcp:"enum=red|green"`
	}
	fs, err := formSchemaFor[Good]()
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	json.Unmarshal(fs.raw, &schema)
	elicit := map[string]any{"method": MethodElicit, "params": map[string]any{"message": "m", "requestedSchema": schema}}
	if err := wiretest.Schema(t, "ElicitRequest").Validate(elicit); err != nil {
		t.Errorf("derived schema is not a valid elicitation schema: %v\n%s", err, fs.raw)
	}
	if req := schema["required"].([]any); len(req) != 5 {
		t.Errorf("required %v (age has omitempty)", req)
	}
}

func TestKeysAreDeterministicAcrossInstances(t *testing.T) {
	t.Parallel()
	mk := func() http.Handler {
		s := askServer(t, nil)
		s.AddTool(&Tool{Name: "t"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			_, err1 := Elicit[Region](ctx, "Which region?")
			_, err2 := Elicit[Region](ctx, "Which region?") // asked twice: its own key
			return nil, errors.Join(err1, err2)
		})
		return NewHTTPHandler(s, nil)
	}
	keys := func(h http.Handler) []string {
		r := result(t, post(t, h, req(1, MethodToolsCall, `"name":"t","arguments":{}`)).last(t))
		var ks []string
		for k := range r["inputRequests"].(map[string]any) {
			ks = append(ks, k)
		}
		if len(ks) != 2 {
			t.Fatalf("keys %v", ks)
		}
		if ks[0] > ks[1] {
			ks[0], ks[1] = ks[1], ks[0]
		}
		return ks
	}
	a, b := keys(mk()), keys(mk())
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("instances disagree: %v vs %v", a, b)
	}
}

func TestOnlyAskedAnswersAreCarriedForward(t *testing.T) {
	t.Parallel()
	// Round 1 asks A and B; round 2's body asks only A and a new C (B's
	// answer is not needed any more) and must not carry B.
	s := askServer(t, &ServerOptions{RequestState: RequestStateOptions{Codec: plainStateCodec{}}})
	s.AddTool(&Tool{Name: "t"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		a, err := Elicit[Region](ctx, "region A?", WithKey("A"))
		if err != nil {
			_, errB := Elicit[Region](ctx, "region B?", WithKey("B"))
			return nil, errors.Join(err, errB)
		}
		if _, err := Elicit[Size](ctx, "size C?", WithKey("C")); err != nil {
			return nil, err
		}
		return TextResult(a.Content.Region), nil
	})
	d := &driver{t: t, h: NewHTTPHandler(s, nil), method: MethodToolsCall, params: `"name":"t","arguments":{}`}
	d.run(func(k string, ir map[string]any) any {
		if k == "C" {
			return accept(map[string]any{"gb": 1})
		}
		return accept(map[string]any{"region": k})
	})
	inner, _ := plainStateCodec{}.Unseal(d.states[1])
	var c requeststate.Claims
	sealer := requeststate.Sealer{Codec: plainStateCodec{}, TTL: DefaultStateTTL, Audience: "asker"}
	c, err := sealer.Open(d.states[1], requeststate.Binding{Method: MethodToolsCall, Target: "t"})
	if err != nil {
		t.Fatalf("%v (%q)", err, inner)
	}
	_, _, plain, _ := openPlain(c.State)
	prior, asked := decodeAskState([]byte(plain))
	qA, _ := newQuestion(&ElicitRequest{Mode: ElicitModeForm, Message: "region A?", RequestedSchema: mustForm[Region](t).raw}, []AskOption{WithKey("A")}, nil)
	qC, _ := newQuestion(&ElicitRequest{Mode: ElicitModeForm, Message: "size C?", RequestedSchema: mustForm[Size](t).raw}, []AskOption{WithKey("C")}, nil)
	if _, ok := prior[questionID("A", qA.digest)]; !ok || len(prior) != 1 {
		t.Errorf("carried %v, want only A", prior)
	}
	if !asked[questionID("C", qC.digest)] || len(asked) != 1 {
		t.Errorf("pending %v, want only C", asked)
	}
}
