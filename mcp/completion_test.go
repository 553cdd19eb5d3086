package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func completeValues(t *testing.T, s *Server, ref, arg, value, ctxArgs string) map[string]any {
	t.Helper()
	p := `"ref":` + ref + `,"argument":{"name":` + quote(arg) + `,"value":` + quote(value) + `}`
	if ctxArgs != "" {
		p += `,"context":{"arguments":` + ctxArgs + `}`
	}
	v := post(t, NewHTTPHandler(s, nil), req(1, methodComplete, p)).last(t)
	return result(t, v)["completion"].(map[string]any)
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// completion/complete goes to the completer registered for the prompt's
// argument or the template's variable, with what was typed and the
// arguments already resolved; other arguments fall back to
// ServerOptions.Completions; the capability is advertised.
func TestCompletionRoutesToTheArgumentsCompleter(t *testing.T) {
	t.Parallel()
	var fallback []string
	s := NewServer(Implementation{Name: "t", Version: "1"}, &ServerOptions{
		Completions: func(_ context.Context, r *CompleteRequest) (*CompleteResult, error) {
			fallback = append(fallback, r.Ref.Type+":"+r.Argument.Name)
			return &CompleteResult{Completion: Completion{Values: []string{"fallback"}}}, nil
		},
	})
	langs := []string{"go", "gleam", "haskell"}
	s.AddPrompt(&Prompt{Name: "review", Arguments: []PromptArgument{{Name: "language"}, {Name: "style"}}},
		func(context.Context, *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil },
		WithCompletion("language", func(_ context.Context, r *CompleteRequest) ([]string, error) {
			var out []string
			for _, l := range langs {
				if strings.HasPrefix(l, r.Argument.Value) {
					out = append(out, l)
				}
			}
			return out, nil
		}))
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "repo://{owner}/{name}", Name: "repo"},
		func(context.Context, *ReadResourceRequest) (ResourceResponse, error) { return nil, nil },
		WithCompletion("name", func(_ context.Context, r *CompleteRequest) ([]string, error) {
			return []string{r.Context.Arguments["owner"] + "/" + r.Argument.Value + "x"}, nil
		}))

	if got := strs(completeValues(t, s, `{"type":"ref/prompt","name":"review"}`, "language", "g", "")["values"]); !slices.Equal(got, []string{"go", "gleam"}) {
		t.Errorf("prompt argument: %v", got)
	}
	if got := strs(completeValues(t, s, `{"type":"ref/resource","uri":"repo://{owner}/{name}"}`, "name", "rt", `{"owner":"me"}`)["values"]); !slices.Equal(got, []string{"me/rtx"}) {
		t.Errorf("template variable: %v", got)
	}
	completeValues(t, s, `{"type":"ref/prompt","name":"review"}`, "style", "", "")
	completeValues(t, s, `{"type":"ref/resource","uri":"repo://{owner}/{name}"}`, "owner", "", "")
	if !slices.Equal(fallback, []string{"ref/prompt:style", "ref/resource:owner"}) {
		t.Errorf("fallback saw %v", fallback)
	}

	// Without ServerOptions.Completions a completer alone advertises the
	// capability.
	only := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	only.AddPrompt(&Prompt{Name: "p", Arguments: []PromptArgument{{Name: "a"}}},
		func(context.Context, *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil },
		WithCompletion("a", func(context.Context, *CompleteRequest) ([]string, error) { return nil, nil }))
	caps := result(t, post(t, NewHTTPHandler(only, nil), req(1, MethodDiscover, "")).last(t))["capabilities"].(map[string]any)
	if caps["completions"] == nil {
		t.Errorf("completions not advertised: %v", caps)
	}
	if got := completeValues(t, only, `{"type":"ref/prompt","name":"p"}`, "a", "", ""); len(got["values"].([]any)) != 0 {
		t.Errorf("nil values: %v", got)
	}
}

// A completer's values beyond 100 are cut, with hasMore and the total.
func TestCompleterValuesAreCappedAtOneHundred(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	s.AddPrompt(&Prompt{Name: "p", Arguments: []PromptArgument{{Name: "n"}}},
		func(context.Context, *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil },
		WithCompletion("n", func(context.Context, *CompleteRequest) ([]string, error) {
			out := make([]string, 250)
			for i := range out {
				out[i] = fmt.Sprint(i)
			}
			return out, nil
		}))
	c := completeValues(t, s, `{"type":"ref/prompt","name":"p"}`, "n", "", "")
	if n := len(c["values"].([]any)); n != 100 || c["hasMore"] != true || c["total"] != 250.0 {
		t.Fatalf("%d values, hasMore %v, total %v", n, c["hasMore"], c["total"])
	}
}

// A completer for an argument the prompt does not declare, or a
// variable the template does not have, is a programming error.
func TestCompleterOfAnUnknownArgumentPanics(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	c := func(context.Context, *CompleteRequest) ([]string, error) { return nil, nil }
	for name, f := range map[string]func(){
		"prompt": func() {
			s.AddPrompt(&Prompt{Name: "p", Arguments: []PromptArgument{{Name: "a"}}},
				func(context.Context, *GetPromptRequest) (PromptResponse, error) { return nil, nil }, WithCompletion("b", c))
		},
		"template": func() {
			s.AddResourceTemplate(&ResourceTemplate{URITemplate: "x://{a}", Name: "x"},
				func(context.Context, *ReadResourceRequest) (ResourceResponse, error) { return nil, nil }, WithCompletion("b", c))
		},
		"nil completer": func() { WithCompletion("a", nil)(&featureOptions{}) },
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
