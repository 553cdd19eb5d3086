package mcp

import (
	"context"
	"fmt"
	"slices"
)

// Completion per prompt argument and per template variable: a completer
// registered with the prompt (AddPrompt) or the template
// (AddResourceTemplate) answers completion/complete for that argument;
// ServerOptions.Completions answers everything else.

// argumentCompleter suggests values for one prompt argument or template
// variable (see WithCompletion).
type argumentCompleter = func(ctx context.Context, req *CompleteRequest) ([]string, error)

// FeatureOption adjusts a prompt or a resource template as it is
// registered (AddPrompt, AddResourceTemplate).
type FeatureOption func(*featureOptions)

type featureOptions struct {
	complete map[string]argumentCompleter
}

// WithCompletion completes the prompt argument, or the template
// variable, called name with c; it replaces ServerOptions.Completions
// for that argument. c suggests values: req.Argument.Value is what the
// user typed so far and req.Context the arguments already resolved. The
// values are sent in order; beyond 100 the first 100 are sent with
// hasMore and the total. An *Error is sent as it is; any other error is
// -32603 (and logged). The registration panics when the prompt declares
// no such argument, or the template has no such variable.
func WithCompletion(name string, c func(ctx context.Context, req *CompleteRequest) ([]string, error)) FeatureOption {
	return func(o *featureOptions) {
		if c == nil {
			panic("mcp: WithCompletion needs a completer")
		}
		if o.complete == nil {
			o.complete = map[string]argumentCompleter{}
		}
		o.complete[name] = c
	}
}

// completersFor applies the options and checks their names with has;
// what names the feature (for the panic).
func (s *Server) completersFor(opts []FeatureOption, what string, has func(string) bool) map[string]argumentCompleter {
	var o featureOptions
	for _, f := range opts {
		f(&o)
	}
	for name := range o.complete {
		if !has(name) {
			panic(fmt.Sprintf("mcp: %s: WithCompletion(%q): no such argument", what, name))
		}
	}
	if len(o.complete) > 0 {
		s.completers.Store(true)
	}
	return o.complete
}

// hasVar reports whether the template has a variable called name.
func (u *uriTemplate) hasVar(name string) bool { return slices.Contains(u.t.Varnames(), name) }

// maxCompletionValues is what one completion result carries at most.
const maxCompletionValues = 100

// runCompleter answers completion/complete with a feature's completer.
func runCompleter(ctx context.Context, c argumentCompleter, p *CompleteRequest) (Result, error) {
	values, err := c(ctx, p)
	if err != nil {
		return nil, err
	}
	res := &CompleteResult{Completion: Completion{Values: values}}
	if values == nil {
		res.Completion.Values = []string{}
	}
	if n := len(values); n > maxCompletionValues {
		res.Completion.Values = values[:maxCompletionValues:maxCompletionValues]
		res.Completion.HasMore = true
		res.Completion.Total = &n
	}
	return res, nil
}
