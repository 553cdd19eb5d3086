package mcp

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The HTTP header names and value encoding of 2026-07-28 (shared layer):
// the server checks them (headers.go), the client writes them
// (client_http.go, client_decode.go).

// Header names.
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	headerParamPrefix     = "Mcp-Param-"
)

const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

// encodeHeaderValue returns v as it must be sent in an Mcp-Name or
// Mcp-Param-* header: as is when it is plain printable ASCII without
// surrounding white space, otherwise in the =?base64?...?= form.
func encodeHeaderValue(v string) string {
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

// decodeHeaderValue reverses encodeHeaderValue after trimming optional
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

// ctJSON is the Content-Type of a JSON body.
var ctJSON = []string{"application/json"}
