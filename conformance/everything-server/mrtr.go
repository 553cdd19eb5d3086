package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The multi round-trip (MRTR, SEP-2322) tools and prompt, written in the
// low-level form: round 1 returns an *mcp.InputRequiredResult; the retry
// reads the answers from req.InputResponses and the echoed
// req.RequestState. An answer that is missing or does not decode as what
// was asked is asked for again (never an error, never a complete result).

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

// stringSchema is a flat form schema with one required string field.
func stringSchema(field string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{field: map[string]any{"type": "string"}},
		"required":   []string{field},
	}
}

// boolSchema is a flat form schema with one required boolean field.
func boolSchema(field string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{field: map[string]any{"type": "boolean"}},
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

// elicited is the outcome of one elicitation answer.
type elicited struct {
	ok       bool   // a usable answer: accepted with the field, or declined/cancelled
	accepted bool   // the user accepted
	value    any    // the accepted field's value
	action   string // the action
}

// elicitField reads the answer under key and the field of its content.
// want is "string" or "boolean". An accept without a valid field, an
// answer that does not decode, or no answer at all is not ok.
func elicitField(r mcp.InputResponses, key, field, want string) elicited {
	res, err := r.Elicit(key)
	if err != nil {
		return elicited{}
	}
	if res.Action != mcp.ElicitAccept {
		return elicited{ok: true, action: string(res.Action)}
	}
	v := res.Content[field]
	switch x := v.(type) {
	case string:
		if want == "string" && x != "" {
			return elicited{ok: true, accepted: true, value: x, action: string(res.Action)}
		}
	case bool:
		if want == "boolean" {
			return elicited{ok: true, accepted: true, value: x, action: string(res.Action)}
		}
	}
	return elicited{}
}

func needElicitation(caps *mcp.ClientCapabilities, tool string) error {
	if caps.Elicitation.SupportsForm() {
		return nil
	}
	return mcp.MissingCapabilityError(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		tool+" needs the elicitation capability (form mode)")
}

func (e *everything) addMRTR() {
	s := e.srv

	// Round 1 asks user_name; any retry that carries a usable user_name
	// answer completes, with or without requestState (several scenarios
	// retry without one).
	const elicitTool = "test_input_required_result_elicitation"
	s.AddTool(&mcp.Tool{Name: elicitTool, Description: "MRTR: asks the user's name through elicitation, then greets", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if err := needElicitation(&req.Meta.ClientCapabilities, elicitTool); err != nil {
				return nil, err
			}
			a := elicitField(req.InputResponses, keyUserName, "name", "string")
			switch {
			case a.accepted:
				return mcp.TextResult(fmt.Sprintf("Hello, %s!", a.value)), nil
			case a.ok:
				return mcp.TextResult("No name was given (the user chose " + a.action + ")."), nil
			}
			return &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{
				keyUserName: &mcp.ElicitRequest{Message: "What is your name?", RequestedSchema: stringSchema("name")},
			}}, nil
		})

	const samplingTool = "test_input_required_result_sampling"
	s.AddTool(&mcp.Tool{Name: samplingTool, Description: "MRTR: asks the client's model a question through sampling", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if req.Meta.ClientCapabilities.Sampling == nil {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, samplingTool+" needs the sampling capability")
			}
			if res, err := req.InputResponses.Sampling(keyCapital); err == nil {
				return mcp.TextResult("Sampling result: " + samplingText(res)), nil
			}
			return &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{
				keyCapital: samplingRequest("What is the capital of France?", 100),
			}}, nil
		})

	const rootsTool = "test_input_required_result_list_roots"
	s.AddTool(&mcp.Tool{Name: rootsTool, Description: "MRTR: asks for the client's roots", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if req.Meta.ClientCapabilities.Roots == nil {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Roots: &mcp.RootsCapabilities{}}, rootsTool+" needs the roots capability")
			}
			if res, err := req.InputResponses.Roots(keyRoots); err == nil {
				return mcp.TextResult("Client roots: " + describeRoots(res)), nil
			}
			return &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{
				keyRoots: &mcp.ListRootsRequest{},
			}}, nil
		})

	// requestState round trip: the retry must echo the state of round 1.
	const stateTool = "test_input_required_result_request_state"
	s.AddTool(&mcp.Tool{Name: stateTool, Description: "MRTR: asks for a confirmation and round-trips requestState", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if err := needElicitation(&req.Meta.ClientCapabilities, stateTool); err != nil {
				return nil, err
			}
			st, err := e.state.read(req.RequestState, stateTool)
			if err != nil {
				return nil, err
			}
			if st != nil && st.Step == 1 {
				if a := elicitField(req.InputResponses, keyConfirm, "ok", "boolean"); a.ok {
					if a.accepted {
						return mcp.TextResult(fmt.Sprintf("state-ok: requestState verified, ok=%v", a.value)), nil
					}
					return mcp.TextResult("state-ok: requestState verified, the user chose " + a.action), nil
				}
			}
			return &mcp.InputRequiredResult{
				InputRequests: map[string]mcp.InputRequest{
					keyConfirm: &mcp.ElicitRequest{Message: "Please confirm", RequestedSchema: boolSchema("ok")},
				},
				RequestState: e.state.issue(flowState{Tool: stateTool, Step: 1}),
			}, nil
		})

	// Elicitation, sampling and roots in one round, each only when the
	// client declared it.
	const multiTool = "test_input_required_result_multiple_inputs"
	s.AddTool(&mcp.Tool{Name: multiTool, Description: "MRTR: asks elicitation, sampling and roots in one round", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			caps := &req.Meta.ClientCapabilities
			asks := map[string]mcp.InputRequest{}
			if caps.Elicitation.SupportsForm() {
				asks[keyUserName] = &mcp.ElicitRequest{Message: "What is your name?", RequestedSchema: stringSchema("name")}
			}
			if caps.Sampling != nil {
				asks[keyGreeting] = samplingRequest("Generate a greeting", 50)
			}
			if caps.Roots != nil {
				asks[keyRoots] = &mcp.ListRootsRequest{}
			}
			if len(asks) == 0 {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
					multiTool+" needs at least one of the elicitation, sampling and roots capabilities")
			}
			st, err := e.state.read(req.RequestState, multiTool)
			if err != nil {
				return nil, err
			}
			if st != nil && st.Step == 1 {
				var parts []string
				complete := true
				if _, ok := asks[keyUserName]; ok {
					if a := elicitField(req.InputResponses, keyUserName, "name", "string"); a.accepted {
						parts = append(parts, fmt.Sprintf("name=%s", a.value))
					} else if a.ok {
						parts = append(parts, "name=("+a.action+")")
					} else {
						complete = false
					}
				}
				if _, ok := asks[keyGreeting]; ok {
					if res, err := req.InputResponses.Sampling(keyGreeting); err == nil {
						parts = append(parts, "greeting="+samplingText(res))
					} else {
						complete = false
					}
				}
				if _, ok := asks[keyRoots]; ok {
					if res, err := req.InputResponses.Roots(keyRoots); err == nil {
						parts = append(parts, "roots="+describeRoots(res))
					} else {
						complete = false
					}
				}
				if complete {
					return mcp.TextResult("Received all inputs: " + strings.Join(parts, "; ")), nil
				}
			}
			return &mcp.InputRequiredResult{InputRequests: asks, RequestState: e.state.issue(flowState{Tool: multiTool, Step: 1})}, nil
		})

	// Three rounds: step1 (name), step2 (colour), complete. The state of
	// round 2 carries the name and differs from the state of round 1.
	const roundsTool = "test_input_required_result_multi_round"
	s.AddTool(&mcp.Tool{Name: roundsTool, Description: "MRTR: three rounds with an evolving requestState", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if err := needElicitation(&req.Meta.ClientCapabilities, roundsTool); err != nil {
				return nil, err
			}
			st, err := e.state.read(req.RequestState, roundsTool)
			if err != nil {
				return nil, err
			}
			step1 := &mcp.InputRequiredResult{
				InputRequests: map[string]mcp.InputRequest{
					keyStep1: &mcp.ElicitRequest{Message: "Step 1: What is your name?", RequestedSchema: stringSchema("name")},
				},
				RequestState: e.state.issue(flowState{Tool: roundsTool, Step: 1}),
			}
			step2 := func(name string) *mcp.InputRequiredResult {
				return &mcp.InputRequiredResult{
					InputRequests: map[string]mcp.InputRequest{
						keyStep2: &mcp.ElicitRequest{Message: "Step 2: What is your favorite color?", RequestedSchema: stringSchema("color")},
					},
					RequestState: e.state.issue(flowState{Tool: roundsTool, Step: 2, Name: name}),
				}
			}
			switch {
			case st == nil:
				return step1, nil
			case st.Step == 1:
				a := elicitField(req.InputResponses, keyStep1, "name", "string")
				if !a.accepted {
					return step1, nil
				}
				return step2(a.value.(string)), nil
			case st.Step == 2:
				a := elicitField(req.InputResponses, keyStep2, "color", "string")
				if !a.accepted {
					return step2(st.Name), nil
				}
				return mcp.TextResult(fmt.Sprintf("Hello, %s! Your favorite color is %s.", st.Name, a.value)), nil
			}
			return step1, nil
		})

	// The requestState is integrity protected; a modified one is a
	// JSON-RPC error.
	const tamperTool = "test_input_required_result_tampered_state"
	s.AddTool(&mcp.Tool{Name: tamperTool, Description: "MRTR: integrity-protected requestState; a tampered state is rejected", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if err := needElicitation(&req.Meta.ClientCapabilities, tamperTool); err != nil {
				return nil, err
			}
			st, err := e.state.read(req.RequestState, tamperTool)
			if err != nil {
				return nil, err
			}
			if st != nil && st.Step == 1 {
				if a := elicitField(req.InputResponses, keyConfirm, "ok", "boolean"); a.ok {
					return mcp.TextResult("requestState verified: integrity check passed"), nil
				}
			}
			return &mcp.InputRequiredResult{
				InputRequests: map[string]mcp.InputRequest{
					keyConfirm: &mcp.ElicitRequest{Message: "Please confirm", RequestedSchema: boolSchema("ok")},
				},
				RequestState: e.state.issue(flowState{Tool: tamperTool, Step: 1}),
			}, nil
		})

	// Asks only through what the request's clientCapabilities declare.
	const capsTool = "test_input_required_result_capabilities"
	s.AddTool(&mcp.Tool{Name: capsTool, Description: "MRTR: asks only through the capabilities the client declared", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			caps := &req.Meta.ClientCapabilities
			asks := map[string]mcp.InputRequest{}
			var got []string
			if caps.Elicitation.SupportsForm() {
				if a := elicitField(req.InputResponses, keyUserInput, "input", "string"); a.accepted {
					got = append(got, fmt.Sprintf("elicitation: %s", a.value))
				} else if a.ok {
					got = append(got, "elicitation: ("+a.action+")")
				}
				asks[keyUserInput] = &mcp.ElicitRequest{Message: "Please provide some input", RequestedSchema: stringSchema("input")}
			}
			if caps.Sampling != nil {
				if res, err := req.InputResponses.Sampling(keyModelInput); err == nil {
					got = append(got, "sampling: "+samplingText(res))
				}
				asks[keyModelInput] = samplingRequest("Please provide some input", 50)
			}
			if len(asks) == 0 {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
					capsTool+" needs the elicitation or the sampling capability")
			}
			if len(got) > 0 {
				sort.Strings(got)
				return mcp.TextResult("Received input via " + strings.Join(got, "; ")), nil
			}
			return &mcp.InputRequiredResult{InputRequests: asks}, nil
		})

	// MRTR on prompts/get.
	const promptName = "test_input_required_result_prompt"
	s.AddPrompt(&mcp.Prompt{Name: promptName, Description: "MRTR on prompts/get: asks for context through elicitation"},
		func(_ context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
			if err := needElicitation(&req.Meta.ClientCapabilities, promptName); err != nil {
				return nil, err
			}
			a := elicitField(req.InputResponses, keyUserContext, "context", "string")
			switch {
			case a.accepted:
				return &mcp.GetPromptResult{
					Description: "A prompt built from user-provided context",
					Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{
						Text: fmt.Sprintf("Prompt with user context: %s", a.value),
					}}},
				}, nil
			case a.ok:
				return userText("Prompt without user context (the user chose " + a.action + ")."), nil
			}
			return &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{
				keyUserContext: &mcp.ElicitRequest{Message: "What context should the prompt use?", RequestedSchema: stringSchema("context")},
			}}, nil
		})
}

func describeRoots(r *mcp.ListRootsResult) string {
	if len(r.Roots) == 0 {
		return "(none)"
	}
	parts := make([]string, len(r.Roots))
	for i, root := range r.Roots {
		parts[i] = root.URI
		if root.Name != "" {
			parts[i] += " (" + root.Name + ")"
		}
	}
	return strings.Join(parts, ", ")
}
