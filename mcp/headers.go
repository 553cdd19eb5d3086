package mcp

import (
	"encoding/base64"
	"math/big"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// HTTP header bindings of 2026-07-28: the body is the source of truth and
// the headers must agree with it, so that intermediaries routing on
// headers see what the server executes.

// Header names.
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
)

const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

func headerMismatch(msg string) *Error {
	return jsonrpc.NewError(CodeHeaderMismatch, "Header mismatch: "+msg)
}

// EncodeHeaderValue returns v as it must be sent in an Mcp-Name or
// Mcp-Param-* header: as is when it is plain printable ASCII without
// surrounding white space, otherwise in the =?base64?...?= form.
func EncodeHeaderValue(v string) string {
	plain := !strings.HasPrefix(v, b64Prefix) && strings.TrimSpace(v) == v
	for i := 0; plain && i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			plain = false
		}
	}
	if plain {
		return v
	}
	return b64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + b64Suffix
}

// decodeHeaderValue reverses EncodeHeaderValue after trimming optional
// white space. ok is false for invalid characters or invalid base64.
func decodeHeaderValue(v string) (string, bool) {
	v = strings.Trim(v, " \t")
	if strings.HasPrefix(v, b64Prefix) && strings.HasSuffix(v, b64Suffix) && len(v) >= len(b64Prefix)+len(b64Suffix) {
		b, err := base64.StdEncoding.Strict().DecodeString(v[len(b64Prefix) : len(v)-len(b64Suffix)])
		if err != nil || !utf8.Valid(b) {
			return "", false
		}
		return string(b), true
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", false
		}
	}
	return v, true
}

// single returns the one value of header name; more than one is invalid.
func single(h http.Header, name string) (string, bool, *Error) {
	vs := h.Values(name)
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	}
	return "", false, headerMismatch(name + " appears more than once")
}

// checkHeaders validates the standard and custom MCP headers against the
// decoded body.
func checkHeaders(s *Server, c *call, h http.Header) *Error {
	meta := c.params.RequestMeta()
	v, ok, e := single(h, HeaderProtocolVersion)
	if e != nil {
		return e
	}
	if !ok {
		return headerMismatch("missing " + HeaderProtocolVersion + " header")
	}
	if strings.Trim(v, " \t") != meta.ProtocolVersion {
		return headerMismatch(HeaderProtocolVersion + " header does not match _meta." + MetaProtocolVersion)
	}
	m, ok, e := single(h, HeaderMethod)
	if e != nil {
		return e
	}
	if !ok {
		return headerMismatch("missing " + HeaderMethod + " header")
	}
	if strings.Trim(m, " \t") != c.msg.Method {
		return headerMismatch(HeaderMethod + " header does not match the request method")
	}
	var name string
	switch p := c.params.(type) {
	case *CallToolRequest:
		name = p.Name
	case *GetPromptRequest:
		name = p.Name
	case *ReadResourceRequest:
		name = p.URI
	case *TaskRequest: // tasks extension: Mcp-Name is params.taskId
		name = p.TaskID
	default:
		return nil
	}
	n, ok, e := single(h, HeaderName)
	if e != nil {
		return e
	}
	if !ok {
		return headerMismatch("missing " + HeaderName + " header")
	}
	dn, valid := decodeHeaderValue(n)
	if !valid {
		return headerMismatch(HeaderName + " header has invalid characters or invalid base64")
	}
	if dn != name {
		return headerMismatch(HeaderName + " header does not match the request")
	}
	if p, ok := c.params.(*CallToolRequest); ok {
		s.mu.RLock()
		t := s.tools[p.Name]
		s.mu.RUnlock()
		if t != nil {
			for i := range t.headers {
				if e := checkParamHeader(&t.headers[i], p.Arguments, h); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

func checkParamHeader(ph *paramHeader, args []byte, h http.Header) *Error {
	hname := HeaderParamPrefix + ph.name
	hv, present, e := single(h, hname)
	if e != nil {
		return e
	}
	body := valueAt(args, ph.path)
	if body == nil || jsonrpc.KindOf(body) == jsonrpc.KindNull {
		if present {
			return headerMismatch(hname + " header is set but the argument is absent")
		}
		return nil
	}
	if !present {
		return headerMismatch("missing " + hname + " header for argument " + strings.Join(ph.path, "."))
	}
	dv, valid := decodeHeaderValue(hv)
	if !valid {
		return headerMismatch(hname + " header has invalid characters or invalid base64")
	}
	body = jsonrpc.TrimSpace(body)
	switch jsonrpc.KindOf(body) {
	case jsonrpc.KindString:
		s, _ := jsonrpc.String(body)
		if s == dv {
			return nil
		}
	case jsonrpc.KindNumber:
		a, ok1 := new(big.Float).SetString(string(body))
		b, ok2 := new(big.Float).SetString(dv)
		if ok1 && ok2 && a.Cmp(b) == 0 && ph.typ == "integer" {
			return nil
		}
	case jsonrpc.KindBool:
		if dv == string(body) {
			return nil
		}
	}
	return headerMismatch(hname + " header does not match argument " + strings.Join(ph.path, "."))
}

// valueAt returns the raw value at a path of object members, or nil.
func valueAt(obj []byte, path []string) []byte {
	cur := obj
	for _, key := range path {
		if jsonrpc.KindOf(cur) != jsonrpc.KindObject {
			return nil
		}
		var next []byte
		_ = jsonrpc.Fields(cur, func(k, v []byte) error {
			if string(jsonrpc.Key(k)) == key {
				next = v
			}
			return nil
		})
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}
