package jsonrpc

import "strconv"

// The one reader of JSON numbers: every package of the module that
// reads a number out of JSON text (the _meta decoder, the fast schema
// validator, form schemas, cache hints, request ids) goes through
// NumberEnd or ParseNumber, which accept the JSON grammar and nothing
// more (strconv alone takes "Inf", "0x1p3", "1_000", "+1", "01").

// NumberEnd returns the index just past the JSON number that starts at
// b[i], and whether one does: -? (0 | [1-9][0-9]*) (. [0-9]+)?
// ([eE] [+-]? [0-9]+)?. On false the index is where the grammar failed.
func NumberEnd(b []byte, i int) (int, bool) { return numberEnd(b, i) }

func numberEnd[T ~string | ~[]byte](b T, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	if b[i] == '-' {
		i++
		if i >= len(b) {
			return i, false
		}
	}
	switch {
	case b[i] == '0':
		i++
	case isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}

// ParseNumber parses b, exactly one JSON number (no space around it), as
// the nearest float64. b that is not one gets an error matching
// strconv.ErrSyntax; a number beyond float64's range gets ±Inf and an
// error matching strconv.ErrRange (what strconv.ParseFloat returns).
func ParseNumber[T ~string | ~[]byte](b T) (float64, error) {
	if end, ok := numberEnd(b, 0); !ok || end != len(b) {
		return 0, &strconv.NumError{Func: "ParseFloat", Num: string(b), Err: strconv.ErrSyntax}
	}
	return strconv.ParseFloat(string(b), 64)
}

// ParseUint parses b, exactly one JSON number that is a non-negative
// integer written without fraction or exponent, as an unsigned integer
// of at most bitSize bits. Anything else gets an error matching
// strconv.ErrSyntax; a value beyond bitSize bits one matching
// strconv.ErrRange.
func ParseUint[T ~string | ~[]byte](b T, bitSize int) (uint64, error) {
	if len(b) == 0 || !isDigit(b[0]) || (b[0] == '0' && len(b) > 1) {
		return 0, &strconv.NumError{Func: "ParseUint", Num: string(b), Err: strconv.ErrSyntax}
	}
	return strconv.ParseUint(string(b), 10, bitSize)
}

// ParseInt parses b, exactly one JSON number that is an integer written
// without fraction or exponent, as a signed integer of at most bitSize
// bits. Anything else gets an error matching strconv.ErrSyntax; a value
// beyond bitSize bits one matching strconv.ErrRange.
func ParseInt[T ~string | ~[]byte](b T, bitSize int) (int64, error) {
	digits := b
	if len(b) > 0 && b[0] == '-' {
		digits = b[1:]
	}
	if len(digits) == 0 || !isDigit(digits[0]) || (digits[0] == '0' && len(digits) > 1) {
		return 0, &strconv.NumError{Func: "ParseInt", Num: string(b), Err: strconv.ErrSyntax}
	}
	return strconv.ParseInt(string(b), 10, bitSize)
}
