package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	ischema "github.com/roundtrip-mcp/roundtrip/internal/jsonschema"

	"github.com/google/jsonschema-go/jsonschema"
)

// AddTypedTool registers a typed tool on s: h handles a tool whose
// arguments decode into In and whose result is Out. When Out is
// *CallToolResult the handler builds the result itself; otherwise the
// SDK sends out as structuredContent and as a text block of its JSON. When t.InputSchema is nil it is
// inferred from In (a struct: exported fields, json tags, `jsonschema`
// tags for descriptions); when t.OutputSchema is nil and Out is not
// *CallToolResult it is inferred from Out. Arguments are validated
// against the input schema before the handler runs; invalid arguments
// become an isError result naming the problem, so the model can correct
// itself. Validation and decoding agree on names: arguments holding a
// member that differs from a property the schema declares only in case
// (as encoding/json folds names: "COUNT", "countſ"... for "count"), at
// any depth the schema declares properties, are invalid, since
// encoding/json would decode it into the property's field unvalidated. Options (WrapTool, WithOutputValidation) apply as for Server.AddTool. AddTypedTool
// panics when a schema cannot be inferred or resolved.
func AddTypedTool[In, Out any](s *Server, t *Tool, h func(ctx context.Context, req *CallToolRequest, in In) (Out, error), opts ...ToolOption) {
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

func newTypedTool[In, Out any](t *Tool, h func(ctx context.Context, req *CallToolRequest, in In) (Out, error)) (*typedTool, error) {
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
		// Validation reads member names exactly and encoding/json
		// folds them: a member that folds onto a declared property
		// without being it would be decoded unvalidated.
		if err := in.guard.check(args); err != nil {
			return ErrorResult("invalid arguments: " + err.Error()), nil
		}
		// Schemas inferred from Go types validate the raw arguments
		// directly; the full validator runs for other schemas, and to
		// explain a failure.
		if in.fast == nil || !in.fast.Valid(args) {
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
	fast     *ischema.Fast // nil when the schema leaves the fast subset
	guard    *foldGuard    // nil when the schema declares no property names
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
	// jsonschema-go follows a $ref cycle that does not descend into the
	// value until the stack overflows: refuse one here, at AddTypedTool,
	// rather than at a client's first call.
	if _, err := ischema.Compile(raw, nil); errors.Is(err, ischema.ErrCycle) {
		return nil, err
	}
	return &compiledSchema{raw: raw, schema: s, resolved: res, fast: ischema.CompileFast(raw), guard: newFoldGuard(s)}, nil
}

// foldGuard is the property names a schema declares, level by level:
// through properties, items, prefixItems, additionalProperties and local
// "#/$defs/..." references.
type foldGuard struct {
	props  map[string]*foldGuard // declared name → guard of its value (nil: none)
	names  []string
	items  *foldGuard
	prefix []*foldGuard
	extra  *foldGuard
}

// newFoldGuard builds the guard of root, nil when no level of it
// declares a property (nothing to fold onto).
func newFoldGuard(root *jsonschema.Schema) *foldGuard {
	memo := map[*jsonschema.Schema]*foldGuard{}
	var build func(s *jsonschema.Schema, depth int) *foldGuard
	build = func(s *jsonschema.Schema, depth int) *foldGuard {
		if s == nil || depth > 64 {
			return nil
		}
		if s.Ref != "" {
			name, ok := strings.CutPrefix(s.Ref, "#/$defs/")
			if !ok {
				return nil
			}
			return build(root.Defs[name], depth+1)
		}
		if g, ok := memo[s]; ok {
			return g // nil while being built: a cycle is guarded once round
		}
		memo[s] = nil
		g := &foldGuard{props: make(map[string]*foldGuard, len(s.Properties))}
		for n, p := range s.Properties {
			g.props[n] = build(p, depth+1)
			g.names = append(g.names, n)
		}
		sort.Strings(g.names)
		g.items = build(s.Items, depth+1)
		g.extra = build(s.AdditionalProperties, depth+1)
		guarded := len(g.names) > 0 || g.items != nil || g.extra != nil
		for _, p := range s.PrefixItems {
			pg := build(p, depth+1)
			g.prefix = append(g.prefix, pg)
			guarded = guarded || pg != nil
		}
		if !guarded {
			g = nil
		}
		memo[s] = g
		return g
	}
	return build(root, 0)
}

// check walks the arguments v (valid JSON) once, linearly, and reports
// a member that equals a declared property under encoding/json's case
// folding without being one. A nil guard accepts everything.
func (g *foldGuard) check(v []byte) error {
	if g == nil {
		return nil
	}
	type frame struct {
		g      *foldGuard
		object bool
		next   *foldGuard // object: the guard of the member being read
		index  int        // array: the element being read
	}
	var buf [16]frame
	st := buf[:0]
	expectKey := false
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case '{', '[':
			cg := g
			if n := len(st); n > 0 {
				switch f := &st[n-1]; {
				case f.object:
					cg = f.next
				case f.g == nil:
					cg = nil
				case f.index < len(f.g.prefix):
					cg = f.g.prefix[f.index]
				default:
					cg = f.g.items
				}
			}
			st = append(st, frame{g: cg, object: c == '{'})
			expectKey = c == '{'
			i++
		case '}', ']':
			if n := len(st); n > 0 {
				st = st[:n-1]
			}
			expectKey = false
			i++
		case ',':
			if n := len(st); n > 0 {
				if st[n-1].object {
					expectKey = true
				} else {
					st[n-1].index++
				}
			}
			i++
		case '"':
			end := jsonrpc.StringEnd(v, i)
			if expectKey && end-1 > i {
				expectKey = false
				f := &st[len(st)-1]
				f.next = nil
				if f.g != nil {
					k := jsonrpc.Key(v[i+1 : end-1])
					if sub, ok := f.g.props[string(k)]; ok {
						f.next = sub
					} else {
						for _, n := range f.g.names {
							if jsonrpc.EqualFold(k, n) {
								return fmt.Errorf("member %q differs from property %q only in case", jsonrpc.Clip(k), n)
							}
						}
						f.next = f.g.extra
					}
				}
			}
			i = end
		default:
			i++
		}
	}
	return nil
}

// WithOutputValidation makes the server check every result of the tool
// against its outputSchema before sending it: the structuredContent of
// a result that is not IsError must be present and match. A result that
// does not is not sent; the call fails with a -32603 error whose message
// names the JSON pointer that failed and why (a tool breaking its own
// schema is a bug of the server, not something for the model to work
// around), with data {"tool", "pointer"}. Typed tools (AddTypedTool) whose
// schema is inferred from a Go type are checked on the encoded bytes,
// without decoding them. The schema is compiled by the same bounded
// engine as the client's (docs/design/schemas.md). The option does
// nothing for a tool without an outputSchema; AddTypedTool panics when the
// schema cannot be compiled (a remote $ref, a $ref cycle that does not
// descend into the value, a keyword the engine does not check).
func WithOutputValidation() ToolOption {
	return func(t *serverTool) {
		raw, _ := t.tool.OutputSchema.(json.RawMessage)
		if raw == nil {
			return
		}
		v, err := compileOutputSchema(raw)
		if err != nil {
			panic(fmt.Sprintf("mcp: tool %q: WithOutputValidation: output schema: %v", t.tool.Name, err))
		}
		name, next := t.tool.Name, t.handler
		t.handler = func(ctx context.Context, req *CallToolRequest) (ToolResponse, error) {
			resp, err := next(ctx, req)
			r, ok := resp.(*CallToolResult)
			if err != nil || !ok || r == nil || r.IsError {
				return resp, err
			}
			if ptr, reason, ok := checkStructured(v, r.StructuredContent); !ok {
				verr := &OutputValidationError{Tool: name, Pointer: ptr, Reason: reason}
				return nil, NewError(CodeInternalError, "Internal error: "+verr.Error(), map[string]string{"tool": name, "pointer": ptr})
			}
			return resp, nil
		}
	}
}
