package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/skills"
	"github.com/roundtrip-mcp/roundtrip/otel"
)

// Test media: a 1x1 red PNG pixel and a minimal WAV file (the same bytes
// the suite's reference server uses).
var (
	testPNG = mustBase64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	testWAV = mustBase64("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// everything holds the server and the little state of the diagnostic
// hooks.
type everything struct {
	srv *mcp.Server
	log *slog.Logger

	mu             sync.Mutex
	dynamicTool    bool // test_trigger_tool_change toggles it
	dynamicPrompt  bool // test_trigger_prompt_change toggles it
	watchedVersion int  // test_update_watched_resource bumps it
}

// newServer returns the everything server with every tool, prompt and
// resource of the conformance contract registered, traced and measured
// through the OpenTelemetry globals (which main sets up from the
// environment; without it they record nothing).
func newServer(logger *slog.Logger, rs mcp.RequestStateOptions, store mcp.SessionStore) *mcp.Server {
	e := &everything{log: logger}
	e.srv = mcp.NewServer(mcp.Implementation{
		Name:    "roundtrip-everything-server",
		Title:   "Roundtrip everything server (MCP conformance)",
		Version: "0.1.0",
	}, otel.InstrumentServer(&mcp.ServerOptions{
		Instructions: "Conformance test server: every tool, prompt and resource of the MCP conformance suite's everything contract.",
		Logger:       logger,
		Completions:  e.complete,
		RequestState: rs,
		SessionStore: store,
		Middleware:   []mcp.ServerMiddleware{skills.Middleware},
	}, nil))
	e.addTools()
	e.addMRTR()
	e.addTasks()
	e.addExtension()
	e.addLegacy()
	e.addPrompts()
	e.addResources()
	e.addSkills()
	return e.srv
}

// noArgs is the input schema of tools without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

func (e *everything) addTools() {
	s := e.srv
	s.AddTool(&mcp.Tool{Name: "test_simple_text", Description: "Tests simple text content response", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return mcp.TextResult("This is a simple text response for testing."), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_image_content", Description: "Tests image content response", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: testPNG, MIMEType: "image/png"}}}, nil
		})

	s.AddTool(&mcp.Tool{Name: "test_audio_content", Description: "Tests audio content response", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: testWAV, MIMEType: "audio/wav"}}}, nil
		})

	s.AddTool(&mcp.Tool{Name: "test_embedded_resource", Description: "Tests embedded resource content response", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
			}}}}, nil
		})

	s.AddTool(&mcp.Tool{Name: "test_multiple_content_types", Description: "Tests response with multiple content types (text, image, resource)", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "Multiple content types test:"},
				&mcp.ImageContent{Data: testPNG, MIMEType: "image/png"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
				}},
			}}, nil
		})

	s.AddTool(&mcp.Tool{Name: "test_error_handling", Description: "Tests error response handling (always fails with isError)", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			// A plain (non-*mcp.Error) error becomes an isError result.
			//lint:ignore ST1005 the conformance contract's exact text
			return nil, errors.New("This tool intentionally returns an error for testing")
		})

	s.AddTool(&mcp.Tool{Name: "test_tool_with_progress", Description: "Tests tool that reports progress notifications (0, 50, 100 of 100)", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			for i, p := range []float64{0, 50, 100} {
				if i > 0 {
					if err := sleep(ctx, 50*time.Millisecond); err != nil {
						return nil, err
					}
				}
				if err := mcp.ReportProgress(ctx, p, 100, fmt.Sprintf("Completed step %g of 100", p)); err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					e.log.Warn("test_tool_with_progress: sending progress", "err", err)
				}
			}
			return mcp.TextResult("Progress test completed"), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_logging_tool", Description: "Logs three messages through notifications/message when the request asks for a log level", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					if err := sleep(ctx, 20*time.Millisecond); err != nil {
						return nil, err
					}
				}
				toClient.InfoContext(ctx, msg)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
			}
			return mcp.TextResult("Logging tool executed successfully"), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_missing_capability", Description: "Needs the client's sampling capability; without it fails with -32021", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if req.Meta.ClientCapabilities.Sampling == nil {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
					"test_missing_capability needs the sampling capability")
			}
			const key = "sample"
			if res, err := req.InputResponses.Sampling(key); err == nil {
				return mcp.TextResult("Sampling result: " + samplingText(res)), nil
			}
			return &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{
				key: samplingRequest("Say hello.", 50),
			}}, nil
		})

	s.AddTool(&mcp.Tool{Name: "test_streaming_elicitation", Description: "Asks for input through an input_required result on the response stream (never a server-to-client request)", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if req.Meta.ClientCapabilities.Elicitation == nil {
				return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
					"test_streaming_elicitation needs the elicitation capability")
			}
			const key = "user_input"
			mcp.ReportProgress(ctx, 0, 1, "asking the user")
			if res, err := req.InputResponses.Elicit(key); err == nil {
				return mcp.TextResult(fmt.Sprintf("Elicitation completed: action=%s", res.Action)), nil
			}
			return &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{
				key: &mcp.ElicitRequest{Message: "Please provide some input", RequestedSchema: stringSchema("input")},
			}}, nil
		})

	s.AddTool(&mcp.Tool{Name: "test_trigger_tool_change", Description: "Adds or removes the tool test_dynamic_tool, so listen streams get notifications/tools/list_changed", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.dynamicTool = !e.dynamicTool
			if e.dynamicTool {
				s.AddTool(&mcp.Tool{Name: "test_dynamic_tool", Description: "A tool added by test_trigger_tool_change", InputSchema: noArgs},
					func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
						return mcp.TextResult("This is a dynamically added tool."), nil
					})
				return mcp.TextResult("Added tool test_dynamic_tool"), nil
			}
			s.RemoveTools("test_dynamic_tool")
			return mcp.TextResult("Removed tool test_dynamic_tool"), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_trigger_prompt_change", Description: "Adds or removes the prompt test_dynamic_prompt, so listen streams get notifications/prompts/list_changed", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.dynamicPrompt = !e.dynamicPrompt
			if e.dynamicPrompt {
				s.AddPrompt(&mcp.Prompt{Name: "test_dynamic_prompt", Description: "A prompt added by test_trigger_prompt_change"},
					func(context.Context, *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
						return userText("This is a dynamically added prompt."), nil
					})
				return mcp.TextResult("Added prompt test_dynamic_prompt"), nil
			}
			s.RemovePrompts("test_dynamic_prompt")
			return mcp.TextResult("Removed prompt test_dynamic_prompt"), nil
		})

	s.AddTool(&mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features", InputSchema: jsonSchema202012},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			args := string(req.Arguments)
			if args == "" {
				args = "{}"
			}
			return mcp.TextResult("json_schema_2020_12_tool called with " + args), nil
		})

	s.AddTool(&mcp.Tool{Name: "test_custom_headers", Description: "Mirrors its region argument in the Mcp-Param-Region header (x-mcp-header, SEP-2243)", InputSchema: customHeaderSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			var in struct {
				Region   string `json:"region"`
				Priority *int64 `json:"priority"`
			}
			if len(req.Arguments) > 0 {
				if err := json.Unmarshal(req.Arguments, &in); err != nil {
					return mcp.ErrorResult("invalid arguments: " + err.Error()), nil
				}
			}
			return mcp.TextResult(fmt.Sprintf("region=%q", in.Region)), nil
		})
}

// jsonSchema202012 is exactly the schema of the json-schema-2020-12
// scenario; it must reach tools/list unchanged.
var jsonSchema202012 = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"}
      }
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [
    {"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}
  ],
  "if": {
    "properties": {"contactMethod": {"const": "phone"}},
    "required": ["contactMethod"]
  },
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`)

// customHeaderSchema annotates region (a string, the one the
// http-custom-header-server-validation scenario exercises) and priority
// with x-mcp-header.
var customHeaderSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "region": {"type": "string", "description": "Region, mirrored in Mcp-Param-Region", "x-mcp-header": "Region"},
    "priority": {"type": "integer", "description": "Priority, mirrored in Mcp-Param-Priority", "x-mcp-header": "Priority"},
    "query": {"type": "string", "description": "Not mirrored"}
  },
  "required": ["region"]
}`)

func (e *everything) addPrompts() {
	s := e.srv
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
			return userText("This is a simple prompt for testing."), nil
		})

	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two required arguments", Arguments: []mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true},
		{Name: "arg2", Description: "Second test argument", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
		return userText(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.Arguments["arg1"], req.Arguments["arg2"])), nil
	})

	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt embedding a resource", Arguments: []mcp.PromptArgument{
		{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
			{Role: mcp.RoleUser, Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: req.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing.",
			}}},
			{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: "Please process the embedded resource above."}},
		}}, nil
	})

	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with image content"},
		func(context.Context, *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				{Role: mcp.RoleUser, Content: &mcp.ImageContent{Data: testPNG, MIMEType: "image/png"}},
				{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: "Please analyze the image above."}},
			}}, nil
		})
}

func userText(text string) *mcp.GetPromptResult {
	return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: text}}}}
}

func (e *everything) addResources() {
	s := e.srv
	s.AddResource(&mcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource.",
			}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource (PNG image)", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: "test://static-binary", MIMEType: "image/png", Blob: testPNG,
			}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template-data", Description: "A resource template with an id parameter", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
			id := req.Var("id")
			b, err := json.Marshal(struct {
				ID           string `json:"id"`
				TemplateTest bool   `json:"templateTest"`
				Data         string `json:"data"`
			}{id, true, "Data for ID: " + id})
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}

// completions are the candidate values per (reference, argument).
var completions = map[string][]string{
	"ref/prompt test_prompt_with_arguments arg1": {"paris", "park", "party"},
	"ref/prompt test_prompt_with_arguments arg2": {"world", "word", "work"},
	"ref/resource test://template/{id}/data id":  {"123", "456", "789"},
}

func (e *everything) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Ref.Name
	if req.Ref.Type == "ref/resource" {
		ref = req.Ref.URI
	}
	var values []string
	for _, v := range completions[req.Ref.Type+" "+ref+" "+req.Argument.Name] {
		if strings.HasPrefix(v, req.Argument.Value) {
			values = append(values, v)
		}
	}
	total := len(values)
	return &mcp.CompleteResult{Completion: mcp.Completion{Values: values, Total: &total}}, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// toClient logs to the client of the request a record is logged for
// (notifications/message, at the level the request asked for).
//
//lint:ignore SA1019 logging to the client, deprecated in 2026-07-28, is still served to the revisions that have it
var toClient = slog.New(mcp.NewLogHandler(&mcp.LogHandlerOptions{Logger: "everything-server"}))
