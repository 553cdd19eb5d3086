package mcp

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// AddTypedPrompt registers a typed prompt on s. In is a struct whose string
// fields are the prompt's arguments: the name is the json tag's (or the
// field's), an argument is required unless its tag says omitempty or
// omitzero, and a `jsonschema` tag is its description; embedded structs
// contribute their fields. When p.Arguments is nil the prompt's
// arguments are inferred so; otherwise each declared argument must name
// a field. prompts/get then checks the required arguments, rejects with
// -32602 an argument that differs from a declared one only in case (as
// encoding/json would fold it onto the field), ignores others, and hands
// the handler In filled in (it may ask with the asking API, as any
// prompt handler). Options apply as for Server.AddPrompt. It
// panics when In is not such a struct, or an argument names no field.
func AddTypedPrompt[In any](s *Server, p *Prompt, h func(ctx context.Context, req *GetPromptRequest, in In) (*GetPromptResult, error), opts ...FeatureOption) {
	if p == nil || h == nil || p.Name == "" {
		panic("mcp: AddPrompt needs a named prompt and a handler")
	}
	args, fields, err := promptArguments(reflect.TypeFor[In]())
	if err != nil {
		panic(fmt.Sprintf("mcp: prompt %q: %v", p.Name, err))
	}
	cp := *p
	if cp.Arguments == nil {
		cp.Arguments = args
	} else {
		for _, a := range cp.Arguments {
			if _, ok := fields[a.Name]; !ok {
				panic(fmt.Sprintf("mcp: prompt %q: argument %q is no field of %T", p.Name, a.Name, *new(In)))
			}
		}
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	s.AddPrompt(&cp, func(ctx context.Context, req *GetPromptRequest) (PromptResponse, error) {
		var in In
		v := reflect.ValueOf(&in).Elem()
		for name, val := range req.Arguments {
			idx, ok := fields[name]
			if !ok {
				for _, n := range names {
					if jsonrpc.EqualFold([]byte(name), n) {
						return nil, jsonrpcError(CodeInvalidParams, "Invalid params: argument "+strconv.Quote(jsonrpc.Clip([]byte(name)))+
							" of prompt "+strconv.Quote(req.Name)+" differs from "+strconv.Quote(n)+" only in case")
					}
				}
				continue
			}
			v.FieldByIndex(idx).SetString(val)
		}
		res, err := h(ctx, req, in)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, fmt.Errorf("prompt %q returned a nil result", req.Name)
		}
		return res, nil
	}, opts...)
}

// promptArguments infers a prompt's arguments from a struct type: its
// string fields, through embedded structs, as encoding/json names them.
func promptArguments(t reflect.Type) ([]PromptArgument, map[string][]int, error) {
	if t.Kind() != reflect.Struct {
		return nil, nil, fmt.Errorf("argument type %v must be a struct", t)
	}
	var args []PromptArgument
	fields := map[string][]int{}
	var walk func(t reflect.Type, prefix []int, depth int) error
	walk = func(t reflect.Type, prefix []int, depth int) error {
		if depth > 8 {
			return fmt.Errorf("argument type %v: embedding too deep", t)
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), prefix...), i)
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				if err := walk(f.Type, idx, depth+1); err != nil {
					return err
				}
				continue
			}
			if !f.IsExported() {
				continue
			}
			if f.Type.Kind() != reflect.String {
				return fmt.Errorf("field %s of %v is a %v: prompt arguments are strings", f.Name, t, f.Type)
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := fields[name]; dup {
				return fmt.Errorf("argument %q is named twice in %v", name, t)
			}
			fields[name] = idx
			optional := false
			for _, o := range strings.Split(opts, ",") {
				optional = optional || o == "omitempty" || o == "omitzero"
			}
			args = append(args, PromptArgument{Name: name, Description: f.Tag.Get("jsonschema"), Required: !optional})
		}
		return nil
	}
	if err := walk(t, nil, 0); err != nil {
		return nil, nil, err
	}
	return args, fields, nil
}
