package jsonschema

import (
	"encoding/json"
	"errors"
	"math"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Fast validates raw JSON against the small subset of JSON Schema that
// inference from Go types produces (type, properties, required,
// additionalProperties, items, minimum, maximum), without decoding the
// value first. mcp's typed tools whose schema stays inside that subset
// validate their arguments with it and decode them once, into the Go
// type, and the output checks run it before the full engine; any other
// schema goes through a full validator only. A differential fuzz test
// (FuzzFastSchemaAgrees) holds it to jsonschema-go's verdicts. It shares
// the type bits of Compile's schemas. A Fast is safe for concurrent use.
type Fast struct {
	any      bool  // the schema `true`
	never    bool  // the schema `false`
	types    uint8 // bit set of the type bits (compile.go); 0 = any type
	props    map[string]*Fast
	required []string
	extra    *Fast // additionalProperties; nil = allowed
	items    *Fast
	min, max *float64
}

// CompileFast returns the fast validator of raw (a JSON Schema), or nil
// when raw uses a keyword outside the subset or is not one. It decodes
// each level of raw again: bound raw's size where it is untrusted.
func CompileFast(raw []byte) *Fast {
	switch string(jsonrpc.TrimSpace(raw)) {
	case "true", "{}":
		return &Fast{any: true}
	case "false":
		return &Fast{never: true}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	f := &Fast{}
	for k, v := range m {
		switch k {
		case "description", "title", "$schema":
		case "type":
			var one string
			var many []string
			if json.Unmarshal(v, &one) == nil {
				many = []string{one}
			} else if json.Unmarshal(v, &many) != nil {
				return nil
			}
			for _, t := range many {
				b, ok := typeBits[t]
				if !ok {
					return nil
				}
				f.types |= b
			}
		case "properties":
			var props map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
			f.props = make(map[string]*Fast, len(props))
			for name, p := range props {
				if f.props[name] = CompileFast(p); f.props[name] == nil {
					return nil
				}
			}
		case "required":
			if json.Unmarshal(v, &f.required) != nil {
				return nil
			}
		case "additionalProperties":
			if f.extra = CompileFast(v); f.extra == nil {
				return nil
			}
		case "items":
			if f.items = CompileFast(v); f.items == nil {
				return nil
			}
		case "minimum", "maximum":
			var n float64
			if json.Unmarshal(v, &n) != nil {
				return nil
			}
			if k == "minimum" {
				f.min = &n
			} else {
				f.max = &n
			}
		default:
			return nil
		}
	}
	return f
}

// Valid reports whether the JSON value v (valid JSON) satisfies f.
func (f *Fast) Valid(v []byte) bool {
	if f.any {
		return true
	}
	if f.never {
		return false
	}
	v = jsonrpc.TrimSpace(v)
	var t uint8
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindNull:
		t = tNull
	case jsonrpc.KindBool:
		t = tBool
	case jsonrpc.KindString:
		t = tString
	case jsonrpc.KindArray:
		t = tArray
	case jsonrpc.KindObject:
		t = tObject
	case jsonrpc.KindNumber:
		n, err := jsonrpc.ParseNumber(v)
		if err != nil {
			return false
		}
		t = tNumber
		if n == math.Trunc(n) && !math.IsInf(n, 0) {
			t |= tInteger
		}
		if (f.min != nil && n < *f.min) || (f.max != nil && n > *f.max) {
			return false
		}
	default:
		return false
	}
	if f.types != 0 && f.types&t == 0 {
		return false
	}
	switch t {
	case tArray:
		if f.items == nil {
			return true
		}
		ok := true
		_ = jsonrpc.Elements(v, func(e []byte) error {
			if !f.items.Valid(e) {
				ok = false
				return errStopFast
			}
			return nil
		})
		return ok
	case tObject:
		return f.validObject(v)
	}
	return true
}

// errStopFast stops a scan at the first member or element refused.
var errStopFast = errors.New("stop")

func (f *Fast) validObject(v []byte) bool {
	ok := true
	var seen map[string]bool
	if len(f.required) > 0 {
		seen = make(map[string]bool, len(f.required))
	}
	_ = jsonrpc.Fields(v, func(rk, val []byte) error {
		k := string(jsonrpc.Key(rk))
		if seen != nil {
			seen[k] = true
		}
		if p, known := f.props[k]; known {
			ok = p.Valid(val)
		} else if f.extra != nil {
			ok = f.extra.Valid(val)
		}
		if !ok {
			return errStopFast
		}
		return nil
	})
	if !ok {
		return false
	}
	for _, r := range f.required {
		if !seen[r] {
			return false
		}
	}
	return true
}
