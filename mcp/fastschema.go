package mcp

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// fastSchema validates raw JSON against the small subset of JSON Schema
// that inference from Go types produces (type, properties, required,
// additionalProperties, items, minimum, maximum), without decoding the
// value first. Typed tools whose schema stays inside that subset validate
// their arguments with it and decode them once, into the Go type; any
// other schema goes through the full validator. A differential fuzz test
// (FuzzFastSchemaAgrees) holds it to the full validator's verdicts.
type fastSchema struct {
	any      bool  // the schema `true`
	never    bool  // the schema `false`
	types    uint8 // bit set of jsonTypes; 0 = any type
	props    map[string]*fastSchema
	required []string
	extra    *fastSchema // additionalProperties; nil = allowed
	items    *fastSchema
	min, max *float64
}

const (
	tNull uint8 = 1 << iota
	tBool
	tInteger
	tNumber
	tString
	tArray
	tObject
)

var typeBits = map[string]uint8{"null": tNull, "boolean": tBool, "integer": tInteger, "number": tNumber, "string": tString, "array": tArray, "object": tObject}

// compileFast returns the fast validator of raw, or nil when raw uses a
// keyword outside the subset.
func compileFast(raw json.RawMessage) *fastSchema {
	switch string(jsonrpc.TrimSpace(raw)) {
	case "true", "{}":
		return &fastSchema{any: true}
	case "false":
		return &fastSchema{never: true}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	f := &fastSchema{}
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
			f.props = make(map[string]*fastSchema, len(props))
			for name, p := range props {
				if f.props[name] = compileFast(p); f.props[name] == nil {
					return nil
				}
			}
		case "required":
			if json.Unmarshal(v, &f.required) != nil {
				return nil
			}
		case "additionalProperties":
			if f.extra = compileFast(v); f.extra == nil {
				return nil
			}
		case "items":
			if f.items = compileFast(v); f.items == nil {
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

// valid reports whether the JSON value v (valid JSON) satisfies f.
func (f *fastSchema) valid(v []byte) bool {
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
		n, err := strconv.ParseFloat(string(v), 64)
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
			if !f.items.valid(e) {
				ok = false
				return errStopScan
			}
			return nil
		})
		return ok
	case tObject:
		return f.validObject(v)
	}
	return true
}

func (f *fastSchema) validObject(v []byte) bool {
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
			ok = p.valid(val)
		} else if f.extra != nil {
			ok = f.extra.valid(val)
		}
		if !ok {
			return errStopScan
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
