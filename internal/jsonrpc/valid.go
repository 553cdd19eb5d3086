package jsonrpc

// Valid reports whether data is one JSON value, with white space around
// it allowed: exactly what encoding/json.Valid reports (the same grammar,
// no UTF-8 check, the same nesting limit of 10 000), in one pass over the
// bytes instead of encoding/json's byte-at-a-time state machine. Every
// message is checked with it before the scanner of this package reads
// it; on a large message it was the largest single item of a call
// (docs/performance.md). FuzzValid holds it to encoding/json.Valid.
func Valid(data []byte) bool {
	var small [32]byte
	stack := small[:0] // the open containers, '{' or '['
	b := data
	i := skipWS(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		var ok bool
		open := false
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxNestingDepth {
				return false
			}
			stack = append(stack, c)
			i = skipWS(b, i+1)
			switch {
			case i < len(b) && b[i] == c+2: // '}' and ']' are '{'+2 and '['+2
				stack = stack[:len(stack)-1]
				i++
			case c == '{':
				if i, ok = validKey(b, i); !ok {
					return false
				}
				open = true
			default:
				open = true
			}
		case c == '"':
			if i, ok = validString(b, i); !ok {
				return false
			}
		case c == 't':
			if !hasLiteral(b, i, "true") {
				return false
			}
			i += 4
		case c == 'f':
			if !hasLiteral(b, i, "false") {
				return false
			}
			i += 5
		case c == 'n':
			if !hasLiteral(b, i, "null") {
				return false
			}
			i += 4
		case c == '-' || isDigit(c):
			if i, ok = numberEnd(b, i); !ok {
				return false
			}
		default:
			return false
		}
		if open {
			continue // the first value of the container just opened
		}
		// A value ended at i: close containers, or go on to the next
		// value of the innermost one.
		for {
			i = skipWS(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipWS(b, i+1)
			if top == '{' {
				if i, ok = validKey(b, i); !ok {
					return false
				}
			}
			break
		}
	}
}

// maxNestingDepth is encoding/json's limit on nested arrays and objects.
const maxNestingDepth = 10000

func skipWS(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// validKey checks a member name and its colon at b[i:]; it returns where
// the member's value starts.
func validKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := validString(b, i)
	if !ok {
		return i, false
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipWS(b, i+1), true
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString checks the string at b[i] == '"' and returns the index
// just past it.
func validString(b []byte, i int) (int, bool) {
	i++
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 5
			default:
				return i, false
			}
		default: // a control character
			return i, false
		}
	}
}
