package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The tools and the resource of the 2025-11-25 "everything" contract
// (conformance scenarios tools-call-sampling, tools-call-elicitation,
// elicitation-sep1034-defaults, elicitation-sep1330-enums,
// tools-call-with-logging, resources-subscribe/unsubscribe,
// server-sse-polling). The SDK serves 2025-11-25 sessions next to
// 2026-07-28 on the same endpoint; these handlers use the same asking API
// as the MRTR tools: on a 2025-11-25 session a question is a live
// server-to-client request and the call blocks until the answer, on a
// 2026-07-28 request it is an input_required round.

// watchedURI is the resource the subscribe scenarios watch.
const watchedURI = "test://watched-resource"

// elicitationForm is the form of test_elicitation (the scenario's
// description gives it: username and email, both required).
type elicitationForm struct {
	Username string `json:"username" jsonschema:"User's response"`
	Email    string `json:"email" jsonschema:"User's email address"`
}

// sep1034Schema has a default for every primitive type (SEP-1034): the
// typed form has no place for defaults, so it goes as raw JSON Schema.
var sep1034Schema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": true}
  },
  "required": []
}`)

// sep1330Schema has the five enum variants of SEP-1330.
var sep1330Schema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
      {"const": "value1", "title": "First Option"},
      {"const": "value2", "title": "Second Option"},
      {"const": "value3", "title": "Third Option"}
    ]},
    "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
      {"const": "value1", "title": "First Choice"},
      {"const": "value2", "title": "Second Choice"},
      {"const": "value3", "title": "Third Choice"}
    ]}}
  },
  "required": []
}`)

var (
	promptArgs  = json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`)
	messageArgs = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`)
)

// elicitationSummary is the text every elicitation tool answers with.
func elicitationSummary(r *mcp.ElicitResult) string {
	content := r.Content
	if content == nil {
		content = map[string]any{}
	}
	b, _ := json.Marshal(content)
	return fmt.Sprintf("Elicitation completed: action=%s, content=%s", r.Action, b)
}

func (e *everything) addLegacy() {
	s := e.srv

	s.AddTool(&mcp.Tool{Name: "test_sampling", Description: "Asks the client's LLM to answer a prompt (sampling)", InputSchema: promptArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			var in struct {
				Prompt string `json:"prompt"`
			}
			if err := json.Unmarshal(orEmpty(req.Arguments), &in); err != nil || in.Prompt == "" {
				return mcp.ErrorResult("test_sampling needs a prompt argument"), nil
			}
			//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
			res, err := mcp.Sample(ctx, samplingRequest(in.Prompt, 100))
			if err != nil {
				return nil, err
			}
			return mcp.TextResult("LLM response: " + samplingText(res)), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username and an email (form elicitation)", InputSchema: messageArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			var in struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(orEmpty(req.Arguments), &in); err != nil || in.Message == "" {
				return mcp.ErrorResult("test_elicitation needs a message argument"), nil
			}
			form, err := mcp.Elicit[elicitationForm](ctx, in.Message)
			if err != nil {
				return nil, err
			}
			content := "{}"
			if form.Accepted() {
				b, _ := json.Marshal(form.Content)
				content = string(b)
			}
			return mcp.TextResult(fmt.Sprintf("User response: action=%s, content=%s", form.Action, content)), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicitation whose schema has a default for every primitive type (SEP-1034)", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			r, err := mcp.ElicitForm(ctx, "Please review and update the form fields with defaults", sep1034Schema)
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(elicitationSummary(r)), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicitation with the five enum schema variants (SEP-1330)", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			r, err := mcp.ElicitForm(ctx, "Please select options from the enum fields", sep1330Schema)
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(elicitationSummary(r)), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_tool_with_logging", Description: "Sends three log messages (info) while it runs", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					if err := sleep(ctx, 50*time.Millisecond); err != nil {
						return nil, err
					}
				}
				toClient.InfoContext(ctx, msg)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
			}
			return mcp.TextResult("Tool with logging executed successfully"), nil
		})

	// SEP-1699: closes the response stream mid-call; the client comes
	// back with GET and Last-Event-ID and gets the result there.
	s.AddTool(&mcp.Tool{Name: "test_reconnection", Description: "Closes the SSE response stream mid-call, then answers (SEP-1699: the client reconnects with Last-Event-ID)", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			mcp.CloseLegacySSEStream(ctx)
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
			return mcp.TextResult("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."), nil
		})

	s.AddResource(&mcp.Resource{URI: watchedURI, Name: "watched-resource", Title: "Watched Resource", Description: "A resource clients can subscribe to (test_update_watched_resource changes it)", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			e.mu.Lock()
			n := e.watchedVersion
			e.mu.Unlock()
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: watchedURI, MIMEType: "text/plain", Text: fmt.Sprintf("Watched resource content (version %d)", n),
			}}}, nil
		})

	s.AddTool(&mcp.Tool{Name: "test_update_watched_resource", Description: "Changes test://watched-resource, so subscribers get notifications/resources/updated", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			e.mu.Lock()
			e.watchedVersion++
			n := e.watchedVersion
			e.mu.Unlock()
			s.ResourceUpdated(watchedURI)
			return mcp.TextResult(fmt.Sprintf("test://watched-resource is now at version %d", n)), nil
		})
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}
