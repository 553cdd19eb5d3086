package jsonrpc

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// DecodeError decodes the error object of a response, which must have an
// integer code (a JSON number, not a string) and a string message; data is kept when present and not
// null.
func DecodeError(raw []byte) (*Error, error) {
	var w struct {
		Code    json.RawMessage `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if KindOf(raw) != KindObject || json.Unmarshal(raw, &w) != nil || w.Code == nil || w.Message == nil {
		return nil, errors.New("malformed error object")
	}
	code, err := ParseInt(TrimSpace(w.Code), 64)
	if err != nil || code != int64(int(code)) {
		return nil, errors.New("error code is not an integer")
	}
	e := &Error{Code: int(code), Message: *w.Message}
	if len(w.Data) > 0 && string(w.Data) != "null" {
		e.Data = w.Data
	}
	return e, nil
}

// Clip returns a member name for an error message, shortened to at most
// 64 bytes at a rune boundary (with an ellipsis when it was cut).
func Clip(name []byte) string {
	const max = 64
	if len(name) <= max {
		return string(name)
	}
	i := max
	for i > 0 && !utf8.RuneStart(name[i]) {
		i--
	}
	return string(name[:i]) + "…"
}
