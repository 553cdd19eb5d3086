package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds a small scanner over JSON text that has already been
// checked with json.Valid. It walks the members of one object and hands
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

// Key resolves a raw object key to its text. Keys without escapes are
// returned as they are (no allocation beyond the string conversion the
// caller chooses to make); escaped keys are decoded.
func Key(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	q = append(q, raw...)
	q = append(q, '"')
	var s string
	if json.Unmarshal(q, &s) != nil {
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

// EqualFoldASCII reports whether a and b are equal under ASCII case folding.
func EqualFoldASCII(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
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
	return true
}
