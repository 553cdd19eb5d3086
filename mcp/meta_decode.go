package mcp

import (
	"encoding/json"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// decodeOpenMeta decodes a _meta object as encoding/json would into a Meta
// (objects as map[string]any, arrays as []any, numbers as float64, the
// last of repeated members), without its reflection: a result's _meta is
// decoded on every call the client makes (the server's serverInfo rides
// in it), and encoding/json spent a dozen allocations on that. Anything
// the fast path does not take as it is (an escape or a byte above ASCII
// in a string, a deep nesting, bad JSON) goes to encoding/json, which
// then decides, so the two never disagree (FuzzDecodeOpenMeta).
func decodeOpenMeta(v []byte) (Meta, error) {
	p := metaParser{b: v}
	p.space()
	if m, ok := p.object(0); ok {
		if p.space(); p.i == len(p.b) {
			return m, nil
		}
	}
	var m Meta
	err := json.Unmarshal(v, &m)
	return m, err
}

// metaParser is the fast path of decodeOpenMeta; every method reports false
// for what it does not take.
type metaParser struct {
	b []byte
	i int
}

const metaMaxDepth = 32

func (p *metaParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *metaParser) object(depth int) (map[string]any, bool) {
	if depth > metaMaxDepth || p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	p.i++
	m := make(map[string]any)
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		p.space()
		k, ok := p.str(true)
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (p *metaParser) array(depth int) ([]any, bool) {
	if depth > metaMaxDepth {
		return nil, false
	}
	p.i++ // '['
	a := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, true
		default:
			return nil, false
		}
	}
}

func (p *metaParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str(false)
	case c == 't':
		return true, p.word("true")
	case c == 'f':
		return false, p.word("false")
	case c == 'n':
		return nil, p.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *metaParser) word(w string) bool {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return false
	}
	p.i += len(w)
	return true
}

// str reads a string of printable ASCII without escapes; the names a
// _meta object uses most are not copied (key).
func (p *metaParser) str(key bool) (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			raw := p.b[start:j]
			if key {
				switch string(raw) {
				case MetaServerInfo:
					return MetaServerInfo, true
				case "name":
					return "name", true
				case "version":
					return "version", true
				case "title":
					return "title", true
				}
			}
			return string(raw), true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false
		}
	}
	return "", false
}

// number reads a number of the JSON grammar that fits a float64.
func (p *metaParser) number() (any, bool) {
	j, ok := jsonrpc.NumberEnd(p.b, p.i)
	if !ok {
		return nil, false
	}
	f, err := jsonrpc.ParseNumber(p.b[p.i:j])
	if err != nil {
		return nil, false // out of range: encoding/json's error
	}
	p.i = j
	return f, true
}
