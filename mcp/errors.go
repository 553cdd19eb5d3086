package mcp

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Error is a JSON-RPC error. A handler that returns an *Error (or an
// error wrapping one) sends it to the client as is; match it with
// errors.As.
type Error = jsonrpc.Error

// Error codes.
const (
	CodeParseError                 = jsonrpc.CodeParseError
	CodeInvalidRequest             = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound             = jsonrpc.CodeMethodNotFound
	CodeInvalidParams              = jsonrpc.CodeInvalidParams
	CodeInternalError              = jsonrpc.CodeInternalError
	CodeHeaderMismatch             = jsonrpc.CodeHeaderMismatch
	CodeMissingRequiredCapability  = jsonrpc.CodeMissingRequiredCapability
	CodeUnsupportedProtocolVersion = jsonrpc.CodeUnsupportedProtocolVersion
)

// NewError returns a JSON-RPC error with the given code and message and,
// when data is not nil, data encoded as JSON.
func NewError(code int, message string, data any) *Error {
	return jsonrpc.NewErrorData(code, message, data)
}

// MissingCapabilityError is the -32021 error a server returns when it
// cannot proceed without a client capability the request did not declare.
// required names exactly what is missing.
func MissingCapabilityError(required ClientCapabilities, message string) *Error {
	if message == "" {
		message = "Missing required client capability"
	}
	return jsonrpc.NewErrorData(CodeMissingRequiredCapability, message,
		struct {
			RequiredCapabilities ClientCapabilities `json:"requiredCapabilities"`
		}{required})
}

// ErrorCode returns the JSON-RPC code of err, or 0 when err carries none.
func ErrorCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

var errInternal = jsonrpc.NewError(CodeInternalError, "Internal error")

func jsonrpcError(code int, msg string) *Error { return jsonrpc.NewError(code, msg) }

// codeTemporarilyUnavailable is the code of ErrTemporarilyUnavailable,
// in the range JSON-RPC leaves to implementations.
const codeTemporarilyUnavailable = -32000

// ErrTemporarilyUnavailable matches (with errors.Is) the error a server
// answers when it cannot serve a request now but the same request may
// succeed later: its single-use store is unreachable, or an identical
// request is still running. Its Code (-32000) and Message are the wire
// error's. Over HTTP it comes with status 503 and Retry-After, and the
// data says the delay (retryAfterMs) on any transport; a Client retries
// such a leg itself (ClientOptions.LegRetries). Retry the same request;
// do not start the call again. TemporarilyUnavailable makes one with a
// delay: the one name for the condition.
var ErrTemporarilyUnavailable = jsonrpc.NewErrorData(codeTemporarilyUnavailable, "Temporarily unavailable: retry the same request",
	map[string]string{"reason": reasonUnavailable})

const reasonUnavailable = "temporarily_unavailable"

// TemporarilyUnavailable returns an error that a handler (or middleware)
// may return to have the client retry the same request after d:
// ErrTemporarilyUnavailable with the delay in its data (retryAfterMs)
// and, over HTTP, status 503 with a Retry-After header.
func TemporarilyUnavailable(d time.Duration) error {
	if d < 0 {
		d = 0
	}
	return &unavailableError{d}
}

type unavailableError struct{ after time.Duration }

func (e *unavailableError) Error() string {
	return "mcp: temporarily unavailable, retry after " + e.after.String()
}

func (e *unavailableError) Is(target error) bool { return target == ErrTemporarilyUnavailable }

// wire is the JSON-RPC error sent for e.
func (e *unavailableError) wire() *Error {
	return jsonrpc.NewErrorData(codeTemporarilyUnavailable, ErrTemporarilyUnavailable.Message, struct {
		Reason       string `json:"reason"`
		RetryAfterMs int64  `json:"retryAfterMs"`
	}{reasonUnavailable, e.after.Milliseconds()})
}

// retryAfter reports whether err is ErrTemporarilyUnavailable and how
// long the server asked to wait (zero when it did not say).
func retryAfter(err error) (time.Duration, bool) {
	var ue *unavailableError
	if errors.As(err, &ue) {
		return ue.after, true
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != codeTemporarilyUnavailable || len(e.Data) == 0 {
		return 0, false
	}
	var d struct {
		Reason       string `json:"reason"`
		RetryAfterMs int64  `json:"retryAfterMs"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.Reason != reasonUnavailable {
		return 0, false
	}
	return time.Duration(max(d.RetryAfterMs, 0)) * time.Millisecond, true
}

// ErrInvalidRequestState is the one error every rejected requestState
// gets, whatever the reason (which goes to the server log only: paced,
// with the fix where there is one). A Client that gets it for a leg
// carrying a state returns a *StateRejectedError, which wraps it.
var ErrInvalidRequestState = jsonrpc.NewErrorData(CodeInvalidParams, "Invalid or expired requestState",
	map[string]string{"reason": "invalid_request_state"})
