package requeststate

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Canonical JSON for digests (version 1). It works on the raw JSON text,
// never on decoded values, so that two inputs digest alike only when
// their text is alike up to:
//
//   - insignificant white space (removed),
//   - the order of object members (sorted by their raw key bytes;
//     members with equal keys keep their order).
//
// String and number tokens are kept byte for byte: "\ud800" and "\udfff"
// stay distinct (Go's encoding/json would map both to U+FFFD), 1 and 1.0
// stay distinct, large integers are never rounded.

// AppendCanonical appends the canonical form of the JSON value v.
func AppendCanonical(dst, v []byte) ([]byte, error) {
	if !json.Valid(v) {
		return dst, errors.New("requeststate: invalid JSON")
	}
	return appendCanon(dst, jsonrpc.TrimSpace(v)), nil
}

type member struct{ k, v []byte }

func appendCanon(dst, v []byte) []byte {
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindObject:
		var small [8]member
		ms := small[:0]
		_ = jsonrpc.Fields(v, func(k, val []byte) error {
			ms = append(ms, member{k, val})
			return nil
		})
		slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.k, b.k) })
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, m.k...)
			dst = append(dst, '"', ':')
			dst = appendCanon(dst, jsonrpc.TrimSpace(m.v))
		}
		return append(dst, '}')
	case jsonrpc.KindArray:
		dst = append(dst, '[')
		first := true
		_ = jsonrpc.Elements(v, func(e []byte) error {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendCanon(dst, jsonrpc.TrimSpace(e))
			return nil
		})
		return append(dst, ']')
	}
	return append(dst, v...)
}

// ArgumentsDigest is the digest that binds a state to its request's
// arguments: the first 16 bytes of SHA-256 of the canonical arguments,
// base64url without padding. Absent (nil), null and {} arguments digest
// alike.
func ArgumentsDigest(args []byte) (string, error) {
	d, err := argumentsDigest(args)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(d[:]), nil
}

func argumentsDigest(args []byte) (d [16]byte, err error) {
	args = jsonrpc.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	var buf [256]byte
	c, err := AppendCanonical(buf[:0], args)
	if err != nil {
		return d, err
	}
	sum := sha256.Sum256(c)
	copy(d[:], sum[:16])
	return d, nil
}

// Digest returns the first 16 bytes of SHA-256(b), base64url without
// padding.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}
