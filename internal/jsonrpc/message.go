// Package jsonrpc frames JSON-RPC 2.0 messages for MCP: it decodes one
// message into its envelope (id, method, raw params, raw result or
// error) and encodes responses and notifications. It knows nothing of MCP
// methods.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Standard and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeHeaderMismatch             = -32020
	CodeMissingRequiredCapability  = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// ID is a JSON-RPC request id kept as its JSON text: a string literal
// with its quotes, or an integer. The zero ID means "no id" (a
// notification, or an error response to an unidentifiable request).
type ID struct{ raw string }

// StringID returns the id for the string s.
func StringID(s string) ID {
	b, _ := json.Marshal(s)
	return ID{raw: string(b)}
}

// IntID returns the id for the integer n.
func IntID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// Raw returns the id's JSON text ("null" for the zero id).
func (id ID) Raw() string {
	if id.raw == "" {
		return "null"
	}
	return id.raw
}

// String returns the JSON text of the id.
func (id ID) String() string { return id.Raw() }

// Int returns the integer of an integer id; false for a string id, the
// zero id, or an integer beyond int64.
func (id ID) Int() (int64, bool) {
	n, err := ParseInt(id.raw, 64)
	return n, err == nil
}

// MarshalJSON implements json.Marshaler.
func (id ID) MarshalJSON() ([]byte, error) { return []byte(id.Raw()), nil }

// UnmarshalJSON implements json.Unmarshaler, accepting strings and integers.
func (id *ID) UnmarshalJSON(b []byte) error {
	v, err := ParseID(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseID validates raw as an MCP request id: a string or an integer
// (never null, never a fraction). A string holding invalid UTF-8 is kept
// as encoding/json decodes it, each invalid byte replaced by U+FFFD, so
// that every response echoing the id is valid JSON in valid UTF-8.
func ParseID(raw []byte) (ID, *Error) {
	raw = TrimSpace(raw)
	switch KindOf(raw) {
	case KindString:
		if !utf8.Valid(raw) {
			s, ok := String(raw)
			if !ok {
				return ID{}, NewError(CodeInvalidRequest, "Invalid request: id must be a string or an integer")
			}
			return StringID(s), nil
		}
		return ID{raw: string(raw)}, nil
	case KindNumber:
		if bytes.ContainsAny(raw, ".eE") {
			if f, err := ParseNumber(raw); err == nil && f == float64(int64(f)) {
				return ID{raw: strconv.FormatInt(int64(f), 10)}, nil
			}
			return ID{}, NewError(CodeInvalidRequest, "Invalid request: id must be a string or an integer")
		}
		return ID{raw: string(raw)}, nil
	}
	return ID{}, NewError(CodeInvalidRequest, "Invalid request: id must be a string or an integer")
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// NewError returns an error with no data.
func NewError(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// NewErrorData returns an error whose data is data encoded as JSON.
func NewErrorData(code int, msg string, data any) *Error {
	e := &Error{Code: code, Message: msg}
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	return e
}

func (e *Error) Error() string {
	return "jsonrpc error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// Message is one decoded JSON-RPC message. Params, Result and Error alias
// the input buffer.
type Message struct {
	ID     ID
	Method string
	Params []byte
	Result []byte
	Error  []byte
	hasID  bool
}

// IsRequest reports whether the message is a request (method and id).
func (m *Message) IsRequest() bool { return m.Method != "" && m.hasID }

// IsNotification reports whether the message is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && !m.hasID }

// IsResponse reports whether the message is a response.
func (m *Message) IsResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

var topKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// Decode parses one JSON-RPC message. Malformed JSON is -32700; anything
// that is not a well-formed request, notification or response is -32600.
// When the id could be read, it is returned even with an error, so that the
// error response can carry it. Member names are matched exactly (after
// resolving escapes); a repeated member, or one that equals a member name
// under the case folding encoding/json applies (EqualFold: "Method",
// "paramſ") without being it, is rejected.
func Decode(data []byte) (Message, *Error) {
	var m Message
	if !Valid(data) {
		return m, NewError(CodeParseError, "Parse error")
	}
	if KindOf(data) != KindObject {
		return m, NewError(CodeInvalidRequest, "Invalid request: a message must be a JSON object")
	}
	var seen [len(topKeys)]bool
	var version []byte
	var bad *Error
	var methodRaw []byte
	err := Fields(data, func(key, value []byte) error {
		key = Key(key)
		for i, k := range topKeys {
			if string(key) == k {
				if seen[i] {
					bad = NewError(CodeInvalidRequest, "Invalid request: duplicate member \""+k+"\"")
					return errStop
				}
				seen[i] = true
				switch i {
				case 0:
					version = value
				case 1:
					if KindOf(value) == KindNull {
						m.hasID = true // a null id: answered as invalid below
						return nil
					}
					id, e := ParseID(value)
					if e != nil {
						bad = e
						return nil
					}
					m.ID, m.hasID = id, true
				case 2:
					methodRaw = value
				case 3:
					m.Params = value
				case 4:
					m.Result = value
				case 5:
					m.Error = value
				}
				return nil
			}
			if EqualFold(key, k) {
				bad = NewError(CodeInvalidRequest, "Invalid request: member \""+string(key)+"\" differs from \""+k+"\" only in case")
				return errStop
			}
		}
		return nil
	})
	if err != nil && err != errStop {
		return m, NewError(CodeInvalidRequest, "Invalid request")
	}
	if bad != nil {
		return m, bad
	}
	if string(TrimSpace(version)) != `"2.0"` { // fast path; escapes are rare
		if v, ok := String(version); !ok || v != "2.0" {
			return m, NewError(CodeInvalidRequest, "Invalid request: jsonrpc must be \"2.0\"")
		}
	}
	if methodRaw != nil {
		s, ok := String(methodRaw)
		if !ok || s == "" {
			return m, NewError(CodeInvalidRequest, "Invalid request: method must be a non-empty string")
		}
		m.Method = s
		if m.hasID && m.ID.IsZero() {
			return m, NewError(CodeInvalidRequest, "Invalid request: id must not be null")
		}
		if m.Params != nil {
			if k := KindOf(m.Params); k != KindObject && k != KindNull {
				return m, NewError(CodeInvalidRequest, "Invalid request: params must be an object")
			}
			if KindOf(m.Params) == KindNull {
				m.Params = nil
			}
		}
		if m.Result != nil || m.Error != nil {
			return m, NewError(CodeInvalidRequest, "Invalid request: a request has no result or error")
		}
		return m, nil
	}
	if m.Result == nil && m.Error == nil {
		return m, NewError(CodeInvalidRequest, "Invalid request: missing method")
	}
	if m.Result != nil && m.Error != nil {
		return m, NewError(CodeInvalidRequest, "Invalid response: both result and error")
	}
	return m, nil
}

// plainASCII marks the ASCII bytes a JSON string holds unescaped.
var plainASCII = func() (t [128]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}

// AppendResponse appends a success response with the given raw result.
func AppendResponse(dst []byte, id ID, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendError appends an error response.
// An error to a request whose id could not be read carries no id (the
// MCP schema does not allow a null id).
func AppendError(dst []byte, id ID, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if !id.IsZero() {
		dst = append(dst, `"id":`...)
		dst = append(dst, id.raw...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = AppendString(dst, e.Message)
	if len(e.Data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, `}}`...)
}

// AppendString appends s as a JSON string, escaping as encoding/json
// does but leaving <, > and & alone.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if plainASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == 0xFFFD && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func decodeRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }
