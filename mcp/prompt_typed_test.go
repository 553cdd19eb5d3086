package mcp

import (
	"context"
	"encoding/json"
	"testing"
)

type reviewArgs struct {
	Language string `json:"language" jsonschema:"the language of the code"`
	Style    string `json:"style,omitempty"`
	Common
	//lint:ignore U1000 an unexported field, which the prompt's arguments leave out
	hidden string
	Skip   string `json:"-"`
}

type Common struct {
	Tone string `json:"tone,omitzero"`
}

func newTypedPromptServer(t testing.TB) *Server {
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	AddTypedPrompt(s, &Prompt{Name: "review", Description: "reviews code"},
		func(ctx context.Context, r *GetPromptRequest, in reviewArgs) (*GetPromptResult, error) {
			b, _ := json.Marshal(in)
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: string(b)}}}}, nil
		}, WithCompletion("language", func(context.Context, *CompleteRequest) ([]string, error) { return []string{"go"}, nil }))
	return s
}

// A typed prompt's arguments are its struct's string fields, named by
// their json tags, required unless omitempty or omitzero, described by
// their jsonschema tags, embedded structs included.
func TestTypedPromptArgumentsAreInferredFromTheStruct(t *testing.T) {
	t.Parallel()
	s := newTypedPromptServer(t)
	r := result(t, post(t, NewHTTPHandler(s, nil), req(1, methodPromptsList, "")).last(t))
	got, _ := json.Marshal(r["prompts"].([]any)[0].(map[string]any)["arguments"])
	want := `[{"description":"the language of the code","name":"language","required":true},{"name":"style"},{"name":"tone"}]`
	if string(got) != want {
		t.Fatalf("arguments %s, want %s", got, want)
	}
}

// prompts/get of a typed prompt checks the required arguments, rejects
// one that differs from a declared argument only in case, ignores
// others, and hands the handler the struct filled in.
func TestTypedPromptArgumentsAreCheckedAndDecoded(t *testing.T) {
	t.Parallel()
	s := newTypedPromptServer(t)
	h := NewHTTPHandler(s, nil)
	get := func(args string) map[string]any {
		return post(t, h, req(1, MethodPromptsGet, `"name":"review","arguments":`+args)).last(t)
	}
	if got := text(t, get(`{"language":"go","tone":"kind","other":"x"}`)); got != `{"language":"go","tone":"kind"}` {
		t.Fatalf("decoded %s", got)
	}
	for _, args := range []string{`{"style":"terse"}`, `{"language":"go","Style":"terse"}`, `{"LANGUAGE":"go"}`} {
		if code := errorCode(t, get(args)); code != CodeInvalidParams {
			t.Fatalf("arguments %s: code %d", args, code)
		}
	}
}

// A typed prompt needs a struct of string fields, and declared
// arguments must name its fields.
func TestTypedPromptRegistrationRejectsWhatCannotBeArguments(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	h := func(context.Context, *GetPromptRequest, struct{ N int }) (*GetPromptResult, error) { return nil, nil }
	for name, f := range map[string]func(){
		"int field": func() { AddTypedPrompt(s, &Prompt{Name: "p"}, h) },
		"not a struct": func() {
			AddTypedPrompt(s, &Prompt{Name: "p"}, func(context.Context, *GetPromptRequest, string) (*GetPromptResult, error) { return nil, nil })
		},
		"unknown declared argument": func() {
			AddTypedPrompt(s, &Prompt{Name: "p", Arguments: []PromptArgument{{Name: "nope"}}},
				func(context.Context, *GetPromptRequest, reviewArgs) (*GetPromptResult, error) { return nil, nil })
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// A typed prompt may ask, as any prompt: the call answers input_required
// and the retry gets the prompt.
func TestTypedPromptCanAsk(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	AddTypedPrompt(s, &Prompt{Name: "ask"}, func(ctx context.Context, r *GetPromptRequest, in struct {
		Topic string `json:"topic"`
	}) (*GetPromptResult, error) {
		e, err := Elicit[Region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		v, err := e.Value()
		if err != nil {
			return nil, err
		}
		return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: in.Topic + "@" + v.Region}}}}, nil
	})
	d := &driver{t: t, h: NewHTTPHandler(s, nil), method: MethodPromptsGet, params: `"name":"ask","arguments":{"topic":"db"}`}
	if got := text(t, d.run(standardAnswers)); got != "db@eu-west-1" || len(d.rounds) != 2 {
		t.Fatalf("%q after %d rounds", got, len(d.rounds))
	}
}
