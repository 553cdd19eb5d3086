package mcp

import (
	"errors"

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
