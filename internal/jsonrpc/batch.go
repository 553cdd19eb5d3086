package jsonrpc

import (
	"strconv"
)

// A JSON-RPC batch is a JSON array of messages. Only protocol revision
// 2025-03-26 has them; Decode keeps refusing arrays, and a transport that
// finds one (IsBatch) decodes it with DecodeBatch where a session accepts
// batches, and refuses it otherwise.

// IsBatch reports whether data is a JSON array (leading whitespace
// allowed): a batch, which Decode refuses.
func IsBatch(data []byte) bool { return KindOf(data) == KindArray }

// BatchEntry is one element of a batch: the message as Decode decodes it,
// and Decode's error for it (nil when the element is a well-formed
// message). As with Decode, Msg.ID is set even with an error when the id
// could be read.
type BatchEntry struct {
	Msg Message
	Err *Error
}

// DecodeBatch parses a JSON-RPC batch of at most max elements (max <= 0:
// no bound). Malformed JSON is -32700; anything but an array, an empty
// array, or one of more than max elements is -32600 for the whole batch.
// Otherwise each element is decoded as Decode decodes a message, and an
// element that is not a well-formed message gets its error in its entry
// (JSON-RPC answers each such element with an error response). The
// messages alias data.
func DecodeBatch(data []byte, max int) ([]BatchEntry, *Error) {
	if !Valid(data) {
		return nil, NewError(CodeParseError, "Parse error")
	}
	if !IsBatch(data) {
		return nil, NewError(CodeInvalidRequest, "Invalid request: a batch must be a JSON array")
	}
	n := 0
	_ = Elements(data, func([]byte) error { n++; return nil })
	switch {
	case n == 0:
		return nil, NewError(CodeInvalidRequest, "Invalid request: an empty batch")
	case max > 0 && n > max:
		return nil, NewError(CodeInvalidRequest, "Invalid request: a batch of "+strconv.Itoa(n)+" messages is over the limit of "+strconv.Itoa(max))
	}
	out := make([]BatchEntry, 0, n)
	_ = Elements(data, func(v []byte) error {
		m, e := Decode(v)
		out = append(out, BatchEntry{Msg: m, Err: e})
		return nil
	})
	return out, nil
}
