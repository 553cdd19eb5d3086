package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// TypedToolHandler handles a tool whose arguments decode into In and whose
// result is Out. When Out is *CallToolResult the handler builds the
// result itself; otherwise the SDK sends out as structuredContent and as
// a text block of its JSON.
type TypedToolHandler[In, Out any] func(ctx context.Context, req *CallToolRequest, in In) (Out, error)

// AddTool registers a typed tool on s. When t.InputSchema is nil it is
// inferred from In (a struct: exported fields, json tags, `jsonschema`
// tags for descriptions); when t.OutputSchema is nil and Out is not
// *CallToolResult it is inferred from Out. Arguments are validated
// against the input schema before the handler runs; invalid arguments
// become an isError result naming the problem, so the model can correct
// itself. Options (WithTaskSupport) apply as for Server.AddTool. AddTool
// panics when a schema cannot be inferred or resolved.
func AddTool[In, Out any](s *Server, t *Tool, h TypedToolHandler[In, Out], opts ...ToolOption) {
	st, err := newTypedTool(t, h)
	if err != nil {
		panic(err)
	}
	s.AddTool(st.tool, st.handler, opts...)
}

type typedTool struct {
	tool    *Tool
	handler ToolHandler
}

var callToolResultType = reflect.TypeFor[*CallToolResult]()

func newTypedTool[In, Out any](t *Tool, h TypedToolHandler[In, Out]) (*typedTool, error) {
	if t == nil || h == nil {
		return nil, fmt.Errorf("mcp: AddTool needs a tool and a handler")
	}
	cp := *t
	in, err := schemaFor[In](cp.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: tool %q: input schema: %w", t.Name, err)
	}
	if in.schema.Type != "object" {
		return nil, fmt.Errorf("mcp: tool %q: input type %T must be a struct or map (schema type object)", t.Name, *new(In))
	}
	cp.InputSchema = in.raw
	structured := reflect.TypeFor[Out]() != callToolResultType
	if structured && cp.OutputSchema == nil {
		out, err := schemaFor[Out](nil)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %q: output schema: %w", t.Name, err)
		}
		cp.OutputSchema = out.raw
	}
	handler := func(ctx context.Context, req *CallToolRequest) (ToolResponse, error) {
		args := []byte(req.Arguments)
		if len(args) == 0 {
			args = []byte("{}")
		}
		// Schemas inferred from Go types validate the raw arguments
		// directly; the full validator runs for other schemas, and to
		// explain a failure.
		if in.fast == nil || !in.fast.valid(args) {
			var generic any
			if err := json.Unmarshal(args, &generic); err != nil {
				return ErrorResult("invalid arguments: " + err.Error()), nil
			}
			if err := in.resolved.Validate(generic); err != nil {
				return ErrorResult("invalid arguments: " + err.Error()), nil
			}
		}
		var v In
		if err := json.Unmarshal(args, &v); err != nil {
			return ErrorResult("invalid arguments: " + err.Error()), nil
		}
		out, err := h(ctx, req, v)
		if err != nil {
			return nil, err
		}
		if !structured {
			r, _ := any(out).(*CallToolResult)
			if r == nil {
				return nil, fmt.Errorf("tool %q returned a nil result", req.Name)
			}
			return r, nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("tool %q: encoding its result: %w", req.Name, err)
		}
		return &CallToolResult{
			Content:           []Content{&TextContent{Text: string(b)}},
			StructuredContent: json.RawMessage(b),
		}, nil
	}
	return &typedTool{tool: &cp, handler: handler}, nil
}

type compiledSchema struct {
	raw      json.RawMessage
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	fast     *fastSchema // nil when the schema leaves the fast subset
}

// schemaFor infers (when given is nil) or parses the schema, and
// resolves it for validation. Remote $refs are never loaded.
func schemaFor[T any](given any) (*compiledSchema, error) {
	var s *jsonschema.Schema
	if given == nil {
		var err error
		if s, err = jsonschema.For[T](nil); err != nil {
			return nil, err
		}
	} else {
		raw, err := toRawJSON(given)
		if err != nil {
			return nil, err
		}
		s = new(jsonschema.Schema)
		if err := json.Unmarshal(raw, s); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return &compiledSchema{raw: raw, schema: s, resolved: res, fast: compileFast(raw)}, nil
}
