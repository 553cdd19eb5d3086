package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// toRawJSON marshals v (a map, a struct, a json.RawMessage or []byte of
// JSON) to raw JSON.
func toRawJSON(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if !json.Valid(x) {
			return nil, errors.New("invalid JSON")
		}
		return x, nil
	case []byte:
		if !json.Valid(x) {
			return nil, errors.New("invalid JSON")
		}
		return json.RawMessage(x), nil
	case string:
		if !json.Valid([]byte(x)) {
			return nil, errors.New("invalid JSON")
		}
		return json.RawMessage(x), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// normalizeSchema returns the input schema as raw JSON, checking that it
// is an object schema. A nil schema means "no arguments".
func normalizeSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	raw, err := toRawJSON(v)
	if err != nil {
		return nil, err
	}
	var head struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, errors.New("not a JSON object")
	}
	if head.Type != "object" {
		return nil, errors.New(`root "type" must be "object"`)
	}
	return raw, nil
}

// paramHeader is one x-mcp-header annotation: the header Mcp-Param-Name
// mirrors the argument at path, of JSON type typ.
type paramHeader struct {
	name string // as declared; compared case-insensitively
	path []string
	typ  string // "string", "integer" or "boolean"
	// siblings[i] are the other properties declared beside path[i] that
	// equal it under case folding: members so named are their own
	// properties, not case variants of path[i]. Nearly always empty.
	siblings [][]string
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// paramHeaders collects and checks the x-mcp-header annotations of an
// input schema: each on a string, integer or boolean property reachable
// through "properties" chains only, a valid token, unique regardless of
// case. The same rules decide on the client which tools to drop.
func paramHeaders(schema json.RawMessage) ([]paramHeader, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, err
	}
	var out []paramHeader
	seen := map[string]bool{}
	var walk func(obj map[string]json.RawMessage, path []string, siblings [][]string) error
	walk = func(obj map[string]json.RawMessage, path []string, siblings [][]string) error {
		propsRaw, ok := obj["properties"]
		if !ok {
			return nil
		}
		var props map[string]json.RawMessage
		if json.Unmarshal(propsRaw, &props) != nil {
			return nil
		}
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			var prop map[string]json.RawMessage
			if json.Unmarshal(props[n], &prop) != nil {
				continue
			}
			p := append(append([]string(nil), path...), n)
			var folded []string
			for _, o := range names {
				if o != n && jsonrpc.EqualFold([]byte(o), n) {
					folded = append(folded, o)
				}
			}
			sib := append(append([][]string(nil), siblings...), folded)
			if h, ok := prop["x-mcp-header"]; ok {
				var name string
				if json.Unmarshal(h, &name) != nil || !isToken(name) {
					return fmt.Errorf("property %q: x-mcp-header must be a non-empty header token", strings.Join(p, "."))
				}
				var typ string
				_ = json.Unmarshal(prop["type"], &typ)
				if typ != "string" && typ != "integer" && typ != "boolean" {
					return fmt.Errorf("property %q: x-mcp-header is allowed only on string, integer or boolean properties", strings.Join(p, "."))
				}
				key := strings.ToLower(name)
				if seen[key] {
					return fmt.Errorf("x-mcp-header %q is declared twice", name)
				}
				seen[key] = true
				out = append(out, paramHeader{name: name, path: p, typ: typ, siblings: sib})
			}
			if err := walk(prop, p, sib); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, nil, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// argDefault is a top-level property of a tool's input schema with a
// default: an argument the call leaves out is given it before the
// handler runs (and before a typed tool validates its arguments).
type argDefault struct {
	name  string
	value json.RawMessage
}

// argDefaults reads the defaults of schema's top-level properties, in
// name order; nil when there are none.
func argDefaults(schema json.RawMessage) ([]argDefault, error) {
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("properties: %w", err)
	}
	var out []argDefault
	for name, p := range s.Properties {
		if len(p.Default) > 0 {
			out = append(out, argDefault{name, p.Default})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// withDefaults returns args with each default whose property args lacks
// added, and whether it added any. Arguments that are not a JSON object
// are left as they are (the handler or the validator refuses them).
func withDefaults(args json.RawMessage, defaults []argDefault) (json.RawMessage, bool) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	var present map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &present) != nil {
		return args, false
	}
	out := append([]byte(nil), trimmed[:len(trimmed)-1]...) // without the closing brace
	empty := len(present) == 0
	added := false
	for _, d := range defaults {
		if _, ok := present[d.name]; ok {
			continue
		}
		if !empty || added {
			out = append(out, ',')
		}
		name, _ := json.Marshal(d.name)
		out = append(append(append(out, name...), ':'), d.value...)
		added = true
	}
	if !added {
		return args, false
	}
	return append(out, '}'), true
}
