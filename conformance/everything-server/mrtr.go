package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The multi round-trip (MRTR, SEP-2322) tools and prompt.
//
// Most are written with the asking API (mcp.Elicit, mcp.Sample,
// mcp.ListRoots): the handler asks in straight-line code, returns the
// error of an unanswered question (mcp.ErrInputRequired), and the SDK
// answers with an InputRequiredResult whose sealed requestState carries
// the answers so far. The handler body runs again on every round, so
// nothing here has side effects before its last question. An answer is
// taken only together with the state of the round that asked for it;
// anything else is asked again.
//
// test_input_required_result_elicitation stays in the low-level form
// (a hand-built *mcp.InputRequiredResult, answers read from
// req.InputResponses): see the comment there.
//
// Every question carries an explicit key (mcp.WithKey). The suite
// requires user_name for the elicitation tool and answers the others
// under whatever key the server sent; the fixed keys keep the wire equal
// to the scenario descriptions (capital_question, client_roots, confirm,
// step1/step2, user_context) and to this repository's tests.

// Input request keys.
const (
	keyUserName    = "user_name"
	keyCapital     = "capital_question"
	keyRoots       = "client_roots"
	keyConfirm     = "confirm"
	keyGreeting    = "greeting"
	keyStep1       = "step1"
	keyStep2       = "step2"
	keyUserInput   = "user_input"
	keyModelInput  = "model_input"
	keyUserContext = "user_context"
)

// The forms the MRTR tools ask for (flat schemas derived by mcp.Elicit;
// every field is required).
type (
	nameForm struct {
		Name string `json:"name"`
	}
	colorForm struct {
		Color string `json:"color"`
	}
	confirmForm struct {
		OK bool `json:"ok"`
	}
	inputForm struct {
		Input string `json:"input"`
	}
	contextForm struct {
		Context string `json:"context"`
	}
)

// stringSchema is a flat form schema with one required string field, for
// the low-level tools.
func stringSchema(field string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{field: map[string]any{"type": "string"}},
		"required":   []string{field},
	}
}

func samplingRequest(text string, maxTokens int) *mcp.CreateMessageRequest {
	return &mcp.CreateMessageRequest{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: text}}}},
		MaxTokens: maxTokens,
	}
}

// samplingText returns the text of a sampling answer.
func samplingText(r *mcp.CreateMessageResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "(no text)"
	}
	return strings.Join(parts, " ")
}

func describeRoots(roots []mcp.Root) string {
	if len(roots) == 0 {
		return "(none)"
	}
	parts := make([]string, len(roots))
	for i, root := range roots {
		parts[i] = root.URI
		if root.Name != "" {
			parts[i] += " (" + root.Name + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// ---- the low-level elicitation tool ----

// userName reads the user_name answer of the low-level elicitation tool:
// ok when it is a usable answer (accepted with a non-empty string name,
// or declined/cancelled); an answer that does not decode as an
// elicitation result, an accept without a valid name, or no answer at
// all is not ok and gets asked again.
func userName(r mcp.InputResponses) (name string, action mcp.ElicitAction, ok bool) {
	res, err := r.Elicit(keyUserName)
	if err != nil {
		return "", "", false
	}
	if res.Action != mcp.ElicitAccept {
		return "", res.Action, true
	}
	if s, isStr := res.Content["name"].(string); isStr && s != "" {
		return s, res.Action, true
	}
	return "", "", false
}

func (e *everything) addMRTR() {
	s := e.srv

	// LOW-LEVEL ON PURPOSE. The suite calls this tool with a user_name
	// answer and NO requestState (ignore-extra-params expects a complete
	// result; missing-input-response sends a wrong key and expects a
	// re-request; validate-input sends user_name = 12345 and then
	// inputResponses = null and expects no complete result). The asking
	// API deliberately takes an answer only with the state of the round
	// that asked for it, so it would re-ask in ignore-extra-params
	// (a WARNING). Round 1 carries no requestState, and any retry with a
	// usable user_name answer completes, with or without state.
	const elicitTool = "test_input_required_result_elicitation"
	s.AddTool(&mcp.Tool{Name: elicitTool, Description: "MRTR: asks the user's name through elicitation, then greets", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if !mcp.CanAsk(ctx, &mcp.ElicitRequest{}) {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
					elicitTool+" needs the elicitation capability (form mode)")
			}
			name, action, ok := userName(req.InputResponses)
			switch {
			case ok && action == mcp.ElicitAccept:
				return mcp.TextResult(fmt.Sprintf("Hello, %s!", name)), nil
			case ok:
				return mcp.TextResult("No name was given (the user chose " + string(action) + ")."), nil
			}
			return &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{
				keyUserName: &mcp.ElicitRequest{Message: "What is your name?", RequestedSchema: stringSchema("name")},
			}}, nil
		})

	// The asking API from here on. A question the request's
	// clientCapabilities do not allow fails with -32021 from the SDK.

	s.AddTool(&mcp.Tool{Name: "test_input_required_result_sampling", Description: "MRTR: asks the client's model a question through sampling", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
			res, err := mcp.Sample(ctx, samplingRequest("What is the capital of France?", 100), mcp.WithKey(keyCapital))
			if err != nil {
				return nil, err
			}
			return mcp.TextResult("Sampling result: " + samplingText(res)), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_input_required_result_list_roots", Description: "MRTR: asks for the client's roots", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
			roots, err := mcp.ListRoots(ctx, mcp.WithKey(keyRoots))
			if err != nil {
				return nil, err
			}
			return mcp.TextResult("Client roots: " + describeRoots(roots)), nil
		})

	// requestState round trip: the answer counts only with the state of
	// the round that asked (the SDK checks that), so completing proves
	// the state came back intact.
	s.AddTool(&mcp.Tool{Name: "test_input_required_result_request_state", Description: "MRTR: asks for a confirmation and round-trips requestState", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			c, err := mcp.Elicit[confirmForm](ctx, "Please confirm", mcp.WithKey(keyConfirm))
			if err != nil {
				return nil, err
			}
			if !c.Accepted() {
				return mcp.TextResult("state-ok: requestState verified, the user chose " + string(c.Action)), nil
			}
			return mcp.TextResult(fmt.Sprintf("state-ok: requestState verified, ok=%v", c.Content.OK)), nil
		})

	// Elicitation, sampling and roots in one round (independent
	// questions, errors joined), each only when the client declared it.
	const multiTool = "test_input_required_result_multiple_inputs"
	s.AddTool(&mcp.Tool{Name: multiTool, Description: "MRTR: asks elicitation, sampling and roots in one round", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			canElicit, canSample, canRoots := mcp.CanAsk(ctx, &mcp.ElicitRequest{}), mcp.CanAsk(ctx, &mcp.CreateMessageRequest{}), mcp.CanAsk(ctx, &mcp.ListRootsRequest{})
			if !canElicit && !canSample && !canRoots {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
					multiTool+" needs at least one of the elicitation, sampling and roots capabilities")
			}
			var parts []string
			var errs []error
			if canElicit {
				n, err := mcp.Elicit[nameForm](ctx, "What is your name?", mcp.WithKey(keyUserName))
				switch {
				case err != nil:
					errs = append(errs, err)
				case n.Accepted():
					parts = append(parts, "name="+n.Content.Name)
				default:
					parts = append(parts, "name=("+string(n.Action)+")")
				}
			}
			if canSample {
				//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
				g, err := mcp.Sample(ctx, samplingRequest("Generate a greeting", 50), mcp.WithKey(keyGreeting))
				if err != nil {
					errs = append(errs, err)
				} else {
					parts = append(parts, "greeting="+samplingText(g))
				}
			}
			if canRoots {
				//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
				roots, err := mcp.ListRoots(ctx, mcp.WithKey(keyRoots))
				if err != nil {
					errs = append(errs, err)
				} else {
					parts = append(parts, "roots="+describeRoots(roots))
				}
			}
			if err := errors.Join(errs...); err != nil {
				return nil, err
			}
			return mcp.TextResult("Received all inputs: " + strings.Join(parts, "; ")), nil
		})

	// Three rounds: step1 (name), step2 (colour, asked only once the name
	// is known), complete. The state of round 2 carries the name, so it
	// differs from the state of round 1.
	s.AddTool(&mcp.Tool{Name: "test_input_required_result_multi_round", Description: "MRTR: three rounds with an evolving requestState", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			first, err := mcp.Elicit[nameForm](ctx, "Step 1: What is your name?", mcp.WithKey(keyStep1))
			if err != nil {
				return nil, err
			}
			name, err := first.Value() // a decline ends the call with an isError result
			if err != nil {
				return nil, err
			}
			second, err := mcp.Elicit[colorForm](ctx, "Step 2: What is your favorite color?", mcp.WithKey(keyStep2))
			if err != nil {
				return nil, err
			}
			color, err := second.Value()
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("Hello, %s! Your favorite color is %s.", name.Name, color.Color)), nil
		})

	// The requestState is sealed by the SDK (AES-256-GCM); a modified one
	// never reaches the handler: the SDK answers -32602.
	s.AddTool(&mcp.Tool{Name: "test_input_required_result_tampered_state", Description: "MRTR: integrity-protected requestState; a tampered state is rejected", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if _, err := mcp.Elicit[confirmForm](ctx, "Please confirm", mcp.WithKey(keyConfirm)); err != nil {
				return nil, err
			}
			return mcp.TextResult("requestState verified: integrity check passed"), nil
		})

	// Asks only through what the request's clientCapabilities declare:
	// the capability-check scenario declares sampling alone and fails on
	// any elicitation/create entry.
	const capsTool = "test_input_required_result_capabilities"
	s.AddTool(&mcp.Tool{Name: capsTool, Description: "MRTR: asks only through the capabilities the client declared", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			canElicit, canSample := mcp.CanAsk(ctx, &mcp.ElicitRequest{}), mcp.CanAsk(ctx, &mcp.CreateMessageRequest{})
			if !canElicit && !canSample {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
					capsTool+" needs the elicitation or the sampling capability")
			}
			var got []string
			var errs []error
			if canElicit {
				in, err := mcp.Elicit[inputForm](ctx, "Please provide some input", mcp.WithKey(keyUserInput))
				switch {
				case err != nil:
					errs = append(errs, err)
				case in.Accepted():
					got = append(got, "elicitation: "+in.Content.Input)
				default:
					got = append(got, "elicitation: ("+string(in.Action)+")")
				}
			}
			if canSample {
				//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
				res, err := mcp.Sample(ctx, samplingRequest("Please provide some input", 50), mcp.WithKey(keyModelInput))
				if err != nil {
					errs = append(errs, err)
				} else {
					got = append(got, "sampling: "+samplingText(res))
				}
			}
			if err := errors.Join(errs...); err != nil {
				return nil, err
			}
			return mcp.TextResult("Received input via " + strings.Join(got, "; ")), nil
		})

	// MRTR on prompts/get.
	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "MRTR on prompts/get: asks for context through elicitation"},
		func(ctx context.Context, _ *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
			c, err := mcp.Elicit[contextForm](ctx, "What context should the prompt use?", mcp.WithKey(keyUserContext))
			if err != nil {
				return nil, err
			}
			if !c.Accepted() {
				return userText("Prompt without user context (the user chose " + string(c.Action) + ")."), nil
			}
			return &mcp.GetPromptResult{
				Description: "A prompt built from user-provided context",
				Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{
					Text: "Prompt with user context: " + c.Content.Context,
				}}},
			}, nil
		})
}
