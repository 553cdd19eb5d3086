package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Messages a person can act on: errors about a question name it by its
// text, and an answer that fails its form says which field broke which
// rule, in the message and in structured data.

const deployQuestion = "Which region should we deploy to?"

// deploySchema exercises every rule of the restricted schema.
var deploySchema = json.RawMessage(`{"type":"object","properties":{
	"region":{"type":"string","enum":["eu","us"]},
	"count":{"type":"integer","minimum":1,"maximum":10},
	"ratio":{"type":"number","minimum":0.5},
	"code":{"type":"string","pattern":"^[A-Z]{3}$"},
	"name":{"type":"string","minLength":2,"maxLength":5},
	"email":{"type":"string","format":"email"},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"minItems":1,"maxItems":2},
	"agree":{"type":"boolean"}
},"required":["region"]}`)

// answerFixture is a server whose tool "deploy" and prompt "brief" ask
// deployQuestion (with a derived key), and a client over loopback HTTP
// that answers with content.
type answerFixture struct {
	c       *Client
	mu      sync.Mutex
	content map[string]any
}

func newAnswerFixture(t *testing.T, mode ClientMode) *answerFixture {
	t.Helper()
	s := NewServer(Implementation{Name: "deployer", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "deploy"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		res, err := ElicitForm(ctx, deployQuestion, deploySchema)
		if err != nil {
			return nil, err
		}
		return TextResult("deploying to " + res.Content["region"].(string)), nil
	})
	s.AddPrompt(&Prompt{Name: "brief"}, func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
		e, err := Elicit[Region](ctx, deployQuestion)
		if err != nil {
			return nil, err
		}
		return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: e.Content.Region}}}}, nil
	})
	f := &answerFixture{}
	f.c = httpClient(t, s, nil, &ClientOptions{Mode: mode, Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return &ElicitResult{Action: ElicitAccept, Content: f.content}, nil
	}})
	return f
}

// fail calls deploy answering content and returns the isError result's
// text and structured data.
func (f *answerFixture) fail(t *testing.T, content map[string]any) (string, map[string]any) {
	t.Helper()
	f.mu.Lock()
	f.content = content
	f.mu.Unlock()
	res, err := f.c.CallTool(context.Background(), "deploy", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("answer %v: not an isError result: %+v", content, res)
	}
	data, _ := res.Meta[InvalidAnswerMetaKey].(map[string]any)
	return res.Content[0].(*TextContent).Text, data
}

// checkFaults runs cases of (content, field, rule, detail) against the
// deploy tool: the message names the question by its text and ends with
// the detail; the data carries field, rule, detail and the key.
func checkFaults(t *testing.T, cases []faultCase) {
	t.Helper()
	f := newAnswerFixture(t, ModeAuto)
	for _, c := range cases {
		msg, data := f.fail(t, c.content)
		want := `The answer to question "` + deployQuestion + `" is not valid: ` + c.detail + "."
		if msg != want {
			t.Errorf("answer %v:\n got %s\nwant %s", c.content, msg, want)
		}
		if data["field"] != c.field || data["rule"] != c.rule || data["detail"] != c.detail || data["reason"] != "invalid_answer" {
			t.Errorf("answer %v: data %v, want field %q rule %q", c.content, data, c.field, c.rule)
		}
		if k, _ := data["key"].(string); !strings.HasPrefix(k, "elicit_") {
			t.Errorf("answer %v: data without the question's key: %v", c.content, data)
		}
	}
}

type faultCase = struct {
	content             map[string]any
	field, rule, detail string
}

func TestAnswerErrorsSayWhichEnumFailed(t *testing.T) {
	t.Parallel()
	checkFaults(t, []faultCase{
		{map[string]any{"region": "asia"}, "region", "enum", `region must be one of "eu", "us" (got "asia")`},
		{map[string]any{"region": "eu", "tags": []string{"a", "c"}}, "tags", "enum", `tags may hold only "a", "b" (got "c")`},
	})
}

func TestAnswerErrorsSayWhichBoundFailed(t *testing.T) {
	t.Parallel()
	checkFaults(t, []faultCase{
		{map[string]any{"region": "eu", "count": 0}, "count", "minimum", "count must be at least 1 (got 0)"},
		{map[string]any{"region": "eu", "count": 11}, "count", "maximum", "count must be at most 10 (got 11)"},
		{map[string]any{"region": "eu", "ratio": 0.25}, "ratio", "minimum", "ratio must be at least 0.5 (got 0.25)"},
		{map[string]any{"region": "eu", "name": "a"}, "name", "minLength", "name must be at least 2 characters long (got 1)"},
		{map[string]any{"region": "eu", "name": "abcdef"}, "name", "maxLength", "name must be at most 5 characters long (got 6)"},
		{map[string]any{"region": "eu", "tags": []string{}}, "tags", "minItems", "tags must hold at least 1 item (got 0)"},
		{map[string]any{"region": "eu", "tags": []string{"a", "b", "a"}}, "tags", "maxItems", "tags must hold at most 2 items (got 3)"},
	})
}

func TestAnswerErrorsSayWhichPatternFailed(t *testing.T) {
	t.Parallel()
	checkFaults(t, []faultCase{
		{map[string]any{"region": "eu", "code": "ab"}, "code", "pattern", `code must match the pattern ^[A-Z]{3}$ (got "ab")`},
	})
}

func TestAnswerErrorsSayWhichRequiredFieldIsMissing(t *testing.T) {
	t.Parallel()
	checkFaults(t, []faultCase{
		{map[string]any{"count": 3}, "region", "required", "region is required"},
	})
}

func TestAnswerErrorsSayWhichTypeFailed(t *testing.T) {
	t.Parallel()
	checkFaults(t, []faultCase{
		{map[string]any{"region": "eu", "count": "3"}, "count", "type", `count must be an integer (got the string "3")`},
		{map[string]any{"region": "eu", "count": 1.5}, "count", "type", "count must be an integer (got 1.5)"},
		{map[string]any{"region": "eu", "agree": "yes"}, "agree", "type", `agree must be true or false (got the string "yes")`},
		{map[string]any{"region": 7}, "region", "type", "region must be a string (got the number 7)"},
	})
}

func TestAnswerErrorsSayWhichFormatFailed(t *testing.T) {
	t.Parallel()
	checkFaults(t, []faultCase{
		{map[string]any{"region": "eu", "email": "nope"}, "email", "format", `email must be an email address (got "nope")`},
	})
}

// The question is named by its text in both eras and for prompts, never
// by its derived (hash) key, which stays in the data.
func TestAnswerErrorsNameTheQuestionByItsText(t *testing.T) {
	t.Parallel()
	want := `The answer to question "` + deployQuestion + `" is not valid: region must be one of "eu", "us" (got "asia").`
	for _, mode := range []ClientMode{ModeAuto, ModeLegacy} {
		f := newAnswerFixture(t, mode)
		msg, _ := f.fail(t, map[string]any{"region": "asia"})
		if msg != want || strings.Contains(msg, "elicit_") {
			t.Errorf("mode %d: tool result %q, want %q", mode, msg, want)
		}
		if mode == ModeLegacy {
			continue // a prompt's live request fails the same way; the data is the modern one's
		}
		f.mu.Lock()
		f.content = map[string]any{"region": 12}
		f.mu.Unlock()
		_, err := f.c.GetPrompt(context.Background(), "brief", nil, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidParams {
			t.Fatalf("prompt: %v", err)
		}
		if wantP := `The answer to question "` + deployQuestion + `" is not valid: region must be a string (got the number 12).`; e.Message != wantP {
			t.Errorf("prompt: message %q, want %q", e.Message, wantP)
		}
		var d InvalidAnswerData
		if err := json.Unmarshal(e.Data, &d); err != nil || d.Reason != "invalid_answer" || d.Question != deployQuestion ||
			d.Field != "region" || d.Rule != "type" || !strings.HasPrefix(d.Key, "elicit_") {
			t.Errorf("prompt: data %s (%v)", e.Data, err)
		}
	}
}

// A long question is folded to one line and cut to 80 runes in messages.
func TestLongQuestionsAreCutInMessages(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Which region, of all the regions we could pick,\n", 5) + "should we use?"
	e := &InvalidAnswerError{Key: "k", Question: shortText(long, maxQuestionRunes), Detail: "x is required"}
	msg := e.Error()
	q := msg[len(`The answer to question "`):strings.Index(msg, `" is not valid`)]
	if n := utf8.RuneCountInString(q); n != maxQuestionRunes || !strings.HasSuffix(q, "…") || strings.Contains(msg, `\n`) {
		t.Errorf("question shown as %q (%d runes)", q, n)
	}
	if got := (&InvalidAnswerError{Key: "roots_x"}).Error(); got != `The answer to question "roots_x" is not valid.` {
		t.Errorf("a question without text: %q", got)
	}
}

// The client's own errors about a question name it by its text too.
func TestClientErrorsNameTheQuestionByItsText(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "deployer", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "deploy"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := Elicit[Region](ctx, deployQuestion)
		return nil, err
	})
	// Declared but not handled: the client cannot answer.
	c := httpClient(t, s, nil, &ClientOptions{Capabilities: &ClientCapabilities{Elicitation: &ElicitationCapabilities{}}})
	_, err := c.CallTool(context.Background(), "deploy", nil, nil)
	var nh *NoHandlerError
	if !errors.As(err, &nh) || !strings.HasPrefix(nh.Key, "elicit_") || nh.Question != deployQuestion {
		t.Fatalf("err %v", err)
	}
	if want := `mcp: Elicitation not supported: no elicitation/create handler for the server's question "` + deployQuestion + `"`; err.Error() != want {
		t.Errorf("no handler: %q, want %q", err, want)
	}
	c = httpClient(t, s, nil, &ClientOptions{Elicitation: func(context.Context, *ElicitRequest) (*ElicitResult, error) {
		return nil, errors.New("no terminal")
	}})
	_, err = c.CallTool(context.Background(), "deploy", nil, nil)
	if want := `mcp: answering the server's question "` + deployQuestion + `": no terminal`; err == nil || err.Error() != want {
		t.Errorf("handler error: %v, want %q", err, want)
	}
	// Resume without an answer to one of the questions.
	_, err = c.CallTool(context.Background(), "deploy", nil, &CallOptions{Manual: true})
	var pe *PendingCallError
	if !errors.As(err, &pe) {
		t.Fatalf("manual call: %v", err)
	}
	_, err = c.Resume(context.Background(), pe.Call, InputResponses{}, nil)
	if want := `mcp: Resume: no answer to the server's question "` + deployQuestion + `" (key "` + nh.Key + `")`; err == nil || err.Error() != want {
		t.Errorf("resume: %v, want %q", err, want)
	}
}

// A declined elicitation names the question by its text too, with the
// action in the data.
func TestDeclinedQuestionsAreNamedByTheirText(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "deployer", Version: "1"}, nil)
	s.AddPrompt(&Prompt{Name: "brief"}, func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
		e, err := Elicit[Region](ctx, deployQuestion)
		if err != nil {
			return nil, err
		}
		if _, err := e.Value(); err != nil {
			return nil, err
		}
		return &GetPromptResult{}, nil
	})
	c := httpClient(t, s, nil, &ClientOptions{Elicitation: func(context.Context, *ElicitRequest) (*ElicitResult, error) {
		return &ElicitResult{Action: ElicitDecline}, nil
	}})
	_, err := c.GetPrompt(context.Background(), "brief", nil, nil)
	var e *Error
	if !errors.As(err, &e) || e.Message != `Question "`+deployQuestion+`" could not be answered: the elicitation was declined.` {
		t.Fatalf("err %v", err)
	}
	var d InvalidAnswerData
	if json.Unmarshal(e.Data, &d) != nil || d.Reason != "not_accepted" || d.Action != ElicitDecline || d.Question != deployQuestion {
		t.Errorf("data %s", e.Data)
	}
}

// What an error repeats of the answer is bounded: a member name of the
// client's own is cut in the message and in the data.
func TestAnswerErrorsCutWhatTheyRepeatOfTheAnswer(t *testing.T) {
	t.Parallel()
	f := newAnswerFixture(t, ModeAuto)
	long := strings.Repeat("x", 5000)
	msg, data := f.fail(t, map[string]any{"region": "eu", long: map[string]any{}})
	want := `The answer to question "` + deployQuestion + `" is not valid: "` + strings.Repeat("x", maxNameRunes-1) +
		`…" must be a string, a number, a boolean or a list of strings (got an object).`
	if msg != want {
		t.Errorf("message %q\nwant    %q", msg, want)
	}
	if field, _ := data["field"].(string); utf8.RuneCountInString(field) != maxFieldRunes || data["rule"] != "type" {
		t.Errorf("data: field of %d runes, rule %v", utf8.RuneCountInString(field), data["rule"])
	}
}

// On a 2025-11-25 session a client that answers the live request with an
// error gets an isError result naming the question by its text.
func TestLegacyClientRefusalNamesTheQuestionByItsText(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "deployer", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "deploy"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		_, err := Elicit[Region](ctx, deployQuestion)
		return nil, err
	})
	c := httpClient(t, s, nil, &ClientOptions{Mode: ModeLegacy, Elicitation: func(context.Context, *ElicitRequest) (*ElicitResult, error) {
		return nil, errors.New("no terminal")
	}})
	res, err := c.CallTool(context.Background(), "deploy", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := res.Content[0].(*TextContent).Text
	if want := `The client could not answer question "` + deployQuestion + `" (elicitation/create): `; !res.IsError || !strings.HasPrefix(msg, want) {
		t.Errorf("result %q, want the prefix %q", msg, want)
	}
}
