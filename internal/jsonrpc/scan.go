package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds a small scanner over JSON text that has already been
// checked with Valid (valid.go). It walks the members of one object and hands
// out the raw bytes of each value, without allocating and without
// decoding values the caller does not ask for. Keys are compared exactly
// (JSON is case-sensitive), unlike encoding/json's case-insensitive field
// matching; see docs/design/decoding.md.

// ErrNotObject reports that a value expected to be a JSON object was not.
var ErrNotObject = errors.New("not a JSON object")

// Kind classifies the first byte of a JSON value.
type Kind uint8

// JSON value kinds.
const (
	KindInvalid Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// KindOf reports the kind of the JSON value v (leading whitespace allowed).
func KindOf(v []byte) Kind {
	v = trimLeft(v)
	if len(v) == 0 {
		return KindInvalid
	}
	switch v[0] {
	case 'n':
		return KindNull
	case 't', 'f':
		return KindBool
	case '"':
		return KindString
	case '[':
		return KindArray
	case '{':
		return KindObject
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return KindNumber
	}
	return KindInvalid
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimLeft(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	return b
}

// TrimSpace removes insignificant JSON white space around v.
func TrimSpace(b []byte) []byte {
	b = trimLeft(b)
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	i++
	for i < len(b) {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		i += q
		// The quote ends the string unless an odd number of
		// backslashes escapes it.
		n := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
		i++
	}
	return len(b)
}

// StringEnd returns the index just past the JSON string that starts at
// b[i] == '"' (len(b) when it is not terminated).
func StringEnd(b []byte, i int) int { return skipString(b, i) }

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	default:
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// Fields calls fn for each member of the JSON object obj, in order, with
// the member's raw key (without quotes, escapes not resolved) and its raw
// value. obj must be valid JSON (checked by the caller, once, for the
// whole message). Iteration stops at the first error fn returns.
func Fields(obj []byte, fn func(key, value []byte) error) error {
	obj = trimLeft(obj)
	if len(obj) == 0 || obj[0] != '{' {
		return ErrNotObject
	}
	i := 1
	for {
		for i < len(obj) && (isSpace(obj[i]) || obj[i] == ',') {
			i++
		}
		if i >= len(obj) || obj[i] == '}' {
			return nil
		}
		if obj[i] != '"' {
			return ErrNotObject
		}
		end := skipString(obj, i)
		if end <= i+1 || obj[end-1] != '"' {
			return ErrNotObject
		}
		key := obj[i+1 : end-1]
		i = end
		for i < len(obj) && (isSpace(obj[i]) || obj[i] == ':') {
			i++
		}
		vend := skipValue(obj, i)
		if vend <= i {
			return ErrNotObject
		}
		if err := fn(key, obj[i:vend]); err != nil {
			return err
		}
		i = vend
	}
}

// Elements calls fn for each element of the JSON array arr.
func Elements(arr []byte, fn func(value []byte) error) error {
	arr = trimLeft(arr)
	if len(arr) == 0 || arr[0] != '[' {
		return errors.New("not a JSON array")
	}
	i := 1
	for {
		for i < len(arr) && (isSpace(arr[i]) || arr[i] == ',') {
			i++
		}
		if i >= len(arr) || arr[i] == ']' {
			return nil
		}
		end := skipValue(arr, i)
		if end <= i {
			return errors.New("not a JSON array")
		}
		if err := fn(arr[i:end]); err != nil {
			return err
		}
		i = end
	}
}

// Key resolves a raw object key to the name encoding/json decodes it
// to: escapes resolved, invalid UTF-8 replaced by U+FFFD. Plain ASCII
// keys (nearly all) are returned as they are, without allocating.
func Key(raw []byte) []byte {
	if plainKey(raw) {
		return raw
	}
	return resolveKey(raw)
}

// plainKey reports whether raw is ASCII without a backslash, eight bytes
// at a time.
func plainKey(raw []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	b := raw
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		y := x ^ (lo * '\\') // a zero byte where x has a backslash
		if (x|((y-lo)&^y))&hi != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func resolveKey(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return raw
	}
	s, ok := unquote(raw)
	if !ok {
		return raw
	}
	return []byte(s)
}

// String decodes a raw JSON string value. ok is false when v is not a
// string. Strings without escapes are converted directly.
func String(v []byte) (s string, ok bool) {
	v = TrimSpace(v)
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	// Fast path only for clean UTF-8: otherwise decode like encoding/json
	// (invalid bytes become U+FFFD), so one text always gives one string.
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	return unquote(inner)
}

// unquote decodes the inside of a JSON string exactly as encoding/json
// does (invalid UTF-8 and lone surrogates become U+FFFD) in one pass,
// copying the runs between escapes whole.
func unquote(in []byte) (string, bool) {
	out := make([]byte, 0, len(in))
	for len(in) > 0 {
		i := bytes.IndexByte(in, '\\')
		run := in
		if i >= 0 {
			run = in[:i]
		}
		if utf8.Valid(run) {
			out = append(out, run...)
		} else {
			for len(run) > 0 {
				r, size := utf8.DecodeRune(run)
				out = utf8.AppendRune(out, r) // RuneError for invalid bytes
				run = run[size:]
			}
		}
		if i < 0 {
			break
		}
		in = in[i:]
		if len(in) < 2 {
			return "", false
		}
		switch c := in[1]; c {
		case '"', '\\', '/':
			out = append(out, c)
			in = in[2:]
		case 'b':
			out, in = append(out, '\b'), in[2:]
		case 'f':
			out, in = append(out, '\f'), in[2:]
		case 'n':
			out, in = append(out, '\n'), in[2:]
		case 'r':
			out, in = append(out, '\r'), in[2:]
		case 't':
			out, in = append(out, '\t'), in[2:]
		case 'u':
			r, ok := hex4(in[2:])
			if !ok {
				return "", false
			}
			in = in[6:]
			if utf16.IsSurrogate(r) {
				if len(in) >= 6 && in[0] == '\\' && in[1] == 'u' {
					if r2, ok := hex4(in[2:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
							out = utf8.AppendRune(out, dec)
							in = in[6:]
							continue
						}
					}
				}
				r = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return string(out), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// EqualFold reports whether the member name a and the name b are equal
// under Unicode simple case folding, the relation bytes.EqualFold
// computes and encoding/json uses to match a member to a struct field:
// "paramſ" (U+017F) is "params" to it, and "\u212Aind" (KELVIN SIGN) is
// "kind". a should be a resolved name (Key). ASCII text is compared
// byte by byte; folding proper starts at the first non-ASCII byte.
func EqualFold(a []byte, b string) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	// Names sharing a long prefix ("io.modelcontextprotocol/...") mostly
	// differ at the end: two ASCII last bytes must fold alike.
	if x, y := a[len(a)-1], b[len(b)-1]; x|y < utf8.RuneSelf && x != y && lowerASCII(x) != lowerASCII(y) {
		return false
	}
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x|y >= utf8.RuneSelf {
			return equalFoldRunes(a[i:], b[i:])
		}
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	// Equal ASCII prefixes: what is left of the longer side cannot fold
	// to nothing.
	return len(a) == len(b)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func equalFoldRunes(a []byte, b string) bool {
	for len(a) > 0 && len(b) > 0 {
		r, n := utf8.DecodeRune(a)
		s, m := utf8.DecodeRuneInString(b)
		a, b = a[n:], b[m:]
		if r != s && foldClass(r) != foldClass(s) {
			return false
		}
	}
	return len(a) == 0 && len(b) == 0
}

// foldClass names the simple case folding orbit of r by its smallest
// member, so that two runes fold together exactly when their classes are
// equal.
func foldClass(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// DuplicateMember reports the first member name that occurs twice in one
// object anywhere inside the JSON value v (valid JSON, checked by the
// caller), comparing names as encoding/json decodes them: "region" and
// "\u0072egion" are the same name. It makes one pass over v, linear in
// its length, and allocates only for names with escapes or invalid
// UTF-8 and for objects of more than 16 members.
func DuplicateMember(v []byte) (name []byte, found bool) {
	const small = 16 // members compared pairwise; beyond, a set
	type frame struct {
		object bool
		start  int                 // this object's first name in names
		set    map[string]struct{} // the names, once there are many
	}
	var nameBuf [small][]byte
	var frameBuf [16]frame
	names, frames := nameBuf[:0], frameBuf[:0]
	expectKey := false
	for i := 0; i < len(v); {
		switch v[i] {
		case '{', '[':
			frames = append(frames, frame{object: v[i] == '{', start: len(names)})
			expectKey = v[i] == '{'
			i++
		case '}', ']':
			if n := len(frames); n > 0 {
				names = names[:frames[n-1].start]
				frames = frames[:n-1]
			}
			expectKey = false
			i++
		case ',':
			expectKey = len(frames) > 0 && frames[len(frames)-1].object
			i++
		case '"':
			// Strings are short: a byte loop beats a call per string.
			j, plain := i+1, true
			for j < len(v) && v[j] != '"' {
				if v[j] == '\\' {
					j++
					plain = false
				} else if v[j] >= utf8.RuneSelf {
					plain = false
				}
				j++
			}
			end := min(j+1, len(v))
			if expectKey && end-1 > i {
				expectKey = false
				key := v[i+1 : end-1]
				if !plain {
					key = resolveKey(key)
				}
				f := &frames[len(frames)-1]
				if f.set != nil {
					if _, dup := f.set[string(key)]; dup {
						return key, true
					}
					f.set[string(key)] = struct{}{}
				} else {
					for _, k := range names[f.start:] {
						if bytes.Equal(k, key) {
							return key, true
						}
					}
					names = append(names, key)
					if len(names)-f.start > small {
						f.set = make(map[string]struct{}, 2*small)
						for _, k := range names[f.start:] {
							f.set[string(k)] = struct{}{}
						}
						names = names[:f.start]
					}
				}
			}
			i = end
		default:
			i++
		}
	}
	return nil, false
}
