package requeststate

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"unicode/utf8"

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
//
// An object that repeats a member name is refused (ErrDuplicateMember),
// names compared as encoding/json decodes them ("a" and "\u0061" are one
// name, as are two texts that differ only in invalid UTF-8 bytes): its
// meaning depends on which of the two a decoder keeps, while reordering
// its members would not change its canonical form, so one digest would
// stand for two meanings.

// AppendCanonical appends the canonical form of the JSON value v. It
// returns an error, and dst unchanged, when v is not valid JSON (exactly
// what json.Valid rejects, including nesting deeper than encoding/json
// allows) or when an object in v repeats a member (ErrDuplicateMember).
func AppendCanonical(dst, v []byte) ([]byte, error) {
	c := canonizer{src: v}
	c.space()
	out, ok := c.value(dst, 0)
	c.space()
	if c.dup {
		return dst, ErrDuplicateMember
	}
	if !ok || c.i != len(v) {
		return dst, errInvalidJSON
	}
	return out, nil
}

var errInvalidJSON = errors.New("requeststate: invalid JSON")

// ErrDuplicateMember reports JSON with an object that repeats a member
// name (after resolving escapes); it has no canonical form.
var ErrDuplicateMember = errors.New("requeststate: JSON object with a repeated member")

// maxDepth is encoding/json's nesting limit, so that both accept the
// same texts.
const maxDepth = 10000

// canonizer validates and canonicalises in one pass: white space is
// dropped while copying, and an object's members are reordered in place
// only when their keys are not already sorted.
type canonizer struct {
	src []byte
	i   int
	dup bool // an object repeated a member: the value has no canonical form
}

func (c *canonizer) space() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *canonizer) value(dst []byte, depth int) ([]byte, bool) {
	if c.i >= len(c.src) {
		return dst, false
	}
	switch b := c.src[c.i]; {
	case b == '{':
		if depth >= maxDepth {
			return dst, false
		}
		return c.object(dst, depth+1)
	case b == '[':
		if depth >= maxDepth {
			return dst, false
		}
		return c.array(dst, depth+1)
	case b == '"':
		start := c.i
		if !c.str() {
			return dst, false
		}
		return append(dst, c.src[start:c.i]...), true
	case b == '-' || b >= '0' && b <= '9':
		start := c.i
		if !c.number() {
			return dst, false
		}
		return append(dst, c.src[start:c.i]...), true
	case b == 't':
		return c.literal(dst, "true")
	case b == 'f':
		return c.literal(dst, "false")
	case b == 'n':
		return c.literal(dst, "null")
	}
	return dst, false
}

func (c *canonizer) literal(dst []byte, lit string) ([]byte, bool) {
	if len(c.src)-c.i < len(lit) || string(c.src[c.i:c.i+len(lit)]) != lit {
		return dst, false
	}
	c.i += len(lit)
	return append(dst, lit...), true
}

// str skips a string token starting at '"', checking its escapes and
// that it holds no control character (what json.Valid checks).
func (c *canonizer) str() bool {
	s, i := c.src, c.i+1
	for i < len(s) {
		switch b := s[i]; {
		case b == '"':
			c.i = i + 1
			return true
		case b < 0x20:
			return false
		case b == '\\':
			if i+1 >= len(s) {
				return false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) {
					return false
				}
				for _, h := range s[i+2 : i+6] {
					if !isHex(h) {
						return false
					}
				}
				i += 6
			default:
				return false
			}
		default:
			i++
		}
	}
	return false
}

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

// number skips -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *canonizer) number() bool {
	s, i := c.src, c.i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	c.i = i
	return true
}

func digits(s []byte, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func (c *canonizer) array(dst []byte, depth int) ([]byte, bool) {
	c.i++ // [
	dst = append(dst, '[')
	c.space()
	if c.i < len(c.src) && c.src[c.i] == ']' {
		c.i++
		return append(dst, ']'), true
	}
	for {
		var ok bool
		if dst, ok = c.value(dst, depth); !ok {
			return dst, false
		}
		c.space()
		if c.i >= len(c.src) {
			return dst, false
		}
		switch c.src[c.i] {
		case ',':
			c.i++
			dst = append(dst, ',')
			c.space()
		case ']':
			c.i++
			return append(dst, ']'), true
		default:
			return dst, false
		}
	}
}

// member locates one member of an object being written to dst: its key
// (without quotes) and the whole member, as offsets into dst.
type member struct{ k0, k1, m0, m1 int }

func (c *canonizer) object(dst []byte, depth int) ([]byte, bool) {
	c.i++ // {
	dst = append(dst, '{')
	c.space()
	if c.i < len(c.src) && c.src[c.i] == '}' {
		c.i++
		return append(dst, '}'), true
	}
	var small [8]member
	ms := small[:0]
	sorted := true
	plain := true // no key with escapes or invalid UTF-8: raw bytes are the names
	for {
		if c.i >= len(c.src) || c.src[c.i] != '"' {
			return dst, false
		}
		m := member{m0: len(dst), k0: len(dst) + 1}
		start := c.i
		if !c.str() {
			return dst, false
		}
		dst = append(dst, c.src[start:c.i]...)
		m.k1 = len(dst) - 1
		if k := dst[m.k0:m.k1]; plain && (bytes.IndexByte(k, '\\') >= 0 || !utf8.Valid(k)) {
			plain = false
		}
		c.space()
		if c.i >= len(c.src) || c.src[c.i] != ':' {
			return dst, false
		}
		c.i++
		dst = append(dst, ':')
		c.space()
		var ok bool
		if dst, ok = c.value(dst, depth); !ok {
			return dst, false
		}
		m.m1 = len(dst)
		if n := len(ms); n > 0 {
			switch bytes.Compare(dst[ms[n-1].k0:ms[n-1].k1], dst[m.k0:m.k1]) {
			case 1:
				sorted = false
			case 0:
				c.dup = true
				return dst, false
			}
		}
		ms = append(ms, m)
		c.space()
		if c.i >= len(c.src) {
			return dst, false
		}
		switch c.src[c.i] {
		case ',':
			c.i++
			dst = append(dst, ',')
			c.space()
			continue
		case '}':
			c.i++
		default:
			return dst, false
		}
		break
	}
	if !plain && len(ms) > 1 && resolvedDuplicate(dst, ms) {
		c.dup = true
		return dst, false
	}
	if !sorted {
		var dup bool
		if dst, dup = reorder(dst, ms); dup {
			c.dup = true
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// resolvedDuplicate reports whether two of the members ms (written in
// dst) have names that decode alike although their raw texts differ:
// escapes, or invalid UTF-8 that decodes to U+FFFD. Only objects with
// such a key get here.
func resolvedDuplicate(dst []byte, ms []member) bool {
	seen := make(map[string]struct{}, len(ms))
	for _, m := range ms {
		k := string(jsonrpc.Key(dst[m.k0:m.k1]))
		if _, dup := seen[k]; dup {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// reorder rewrites the members ms (the tail of dst, separated by commas)
// sorted by raw key. dup reports two equal raw keys (then dst is left
// unfinished).
func reorder(dst []byte, ms []member) (_ []byte, dup bool) {
	base := ms[0].m0
	region := slices.Clone(dst[base:])
	key := func(m member) []byte { return region[m.k0-base : m.k1-base] }
	slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(key(a), key(b)) })
	for i := 1; i < len(ms); i++ {
		if bytes.Equal(key(ms[i-1]), key(ms[i])) {
			return dst, true
		}
	}
	dst = dst[:base]
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, region[m.m0-base:m.m1-base]...)
	}
	return dst, false
}

// ArgumentsDigest is the digest that binds a state to its request's
// arguments: the first 16 bytes of SHA-256 of the canonical arguments,
// base64url without padding. Absent (nil), null and {} arguments digest
// alike. Arguments that are not valid JSON, or repeat a member in some
// object (ErrDuplicateMember), have no digest: the error says so.
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
	// The canonical form is never longer than the text (a scratch buffer:
	// the recursive canonicalizer defeats escape analysis).
	buf := getBuf(len(args))
	c, err := AppendCanonical((*buf)[:0], args)
	if err == nil {
		sum := sha256.Sum256(c)
		copy(d[:], sum[:16])
	}
	// Arguments may be sensitive: nothing of them stays pooled, not even
	// the part written before an error.
	clear(c[:min(len(args), cap(c))])
	putBuf(buf, c)
	return d, err
}

// Digest returns the first 16 bytes of SHA-256(b), base64url without
// padding.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}
