package mcp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors a Client returns. A JSON-RPC error from the server is returned
// as an *Error (match it with errors.As or ErrorCode); everything the
// client itself rejects is one of the types or sentinels below.
var (
	// ErrInvalidResponse matches an *InvalidResponseError: the server
	// answered with something the protocol does not allow.
	ErrInvalidResponse = errors.New("mcp: invalid response from the server")
	// ErrLegacyUnsupported is returned on a 2025-11-25 session for what
	// only the modern era has (Listen: subscriptions/listen).
	ErrLegacyUnsupported = errors.New("mcp: not available on a 2025-11-25 session")
	// ErrTransportClosed is returned for calls on a closed transport, or
	// in flight when the connection ended.
	ErrTransportClosed = errors.New("mcp: transport closed")

	// The reasons an *InvalidResponseError may wrap (match with errors.Is).

	// ErrUnknownResultType: a resultType the client does not know.
	ErrUnknownResultType = errors.New("mcp: unknown resultType")
	// ErrInputRequiredNotAllowed: an input_required result on a method
	// other than tools/call, prompts/get and resources/read.
	ErrInputRequiredNotAllowed = errors.New("mcp: input_required result on a method that cannot carry one")
	// ErrUnknownInputRequest: an input request of a method the protocol
	// does not define.
	ErrUnknownInputRequest = errors.New("mcp: input request of unknown method")
	// ErrMessageTooLarge: a message, body or SSE event over the
	// transport's MaxMessageBytes.
	ErrMessageTooLarge = errors.New("mcp: message exceeds the size limit")

	// ErrReservedMeta matches the error of a request whose extra _meta
	// (CallOptions.Meta, WithMeta, or what middleware added) names a
	// member the SDK writes itself: any name starting with
	// io.modelcontextprotocol/ and progressToken. Nothing is sent then.
	ErrReservedMeta = errors.New("mcp: reserved _meta member")
	// ErrRedirect matches the error of a request the server answered
	// with a redirect the client did not follow: every request of the
	// HTTP client transports (the POSTs, the GET streams, DELETE, the
	// HTTP+SSE stream and the POSTs to its endpoint) refuses redirects
	// unless HTTPClientOptions.FollowRedirects is set.
	ErrRedirect = errors.New("mcp: the server answered with a redirect, which the client does not follow")
	// ErrNoStructuredContent is returned by StructuredContent (and
	// CallToolAs) for a result without structuredContent.
	ErrNoStructuredContent = errors.New("mcp: the result has no structuredContent")
)

// Reasons an *InvalidResponseError may wrap that a caller need not tell
// apart (ErrInvalidResponse matches them).
var (
	// errTooManyInputRequests: an input_required result asking more
	// input requests in one round than ClientOptions.MaxInputRequests;
	// no handler ran and no retry was sent.
	errTooManyInputRequests = errors.New("mcp: too many input requests in one round")
	// errInvalidTool: CallTool (over HTTP) for a tool that tools/list
	// showed with invalid x-mcp-header annotations: the client dropped it
	// from its view and will not call it.
	errInvalidTool = errors.New("mcp: tool has invalid x-mcp-header annotations")
)

// RoundsExceededError reports that a server kept answering
// input_required after MaxRounds retries (match it with errors.As).
type RoundsExceededError struct {
	Method    string // tools/call, prompts/get or resources/read
	Target    string // the tool or prompt name, or the resource URI
	MaxRounds int
}

// Error names the call and the bound.
func (e *RoundsExceededError) Error() string {
	return fmt.Sprintf("mcp: %s %q still needs input after %d rounds", e.Method, e.Target, e.MaxRounds)
}

// NoHandlerError reports an input request of a kind the client has no
// handler for (match it with errors.As). The call fails without a retry.
type NoHandlerError struct {
	Method string // elicitation/create, sampling/createMessage or roots/list
	Key    string // the inputRequests key
	// Question is the request's text (an elicitation's message, the last
	// text of a sampling request), folded to one line and cut to 80
	// runes; "" when it has none.
	Question string
}

// Error names the missing handler and the question, by its text (by its
// key when it has none).
func (e *NoHandlerError) Error() string {
	what := map[string]string{MethodElicit: "Elicitation", MethodCreateMessage: "Sampling", MethodListRoots: "List roots"}[e.Method]
	return fmt.Sprintf("mcp: %s not supported: no %s handler for the server's %s", what, e.Method, questionLabel(e.Method, e.Question, e.Key))
}

// InvalidResponseError reports a response the client rejects: malformed
// JSON, an answer to another request, an unknown resultType, an
// input_required result where none may be, an oversized message, an
// undecodable result. Err says which (see the ErrUnknownResultType
// family).
type InvalidResponseError struct {
	Method string // the request's method
	Err    error
}

// Error names the method and the reason.
func (e *InvalidResponseError) Error() string {
	return "mcp: invalid response to " + e.Method + ": " + strings.TrimPrefix(e.Err.Error(), "mcp: ")
}

// Is matches ErrInvalidResponse.
func (e *InvalidResponseError) Is(target error) bool { return target == ErrInvalidResponse }

// Unwrap returns the reason.
func (e *InvalidResponseError) Unwrap() error { return e.Err }

func invalidResponse(method string, format string, args ...any) *InvalidResponseError {
	return &InvalidResponseError{Method: method, Err: fmt.Errorf(format, args...)}
}

// UnsupportedVersionError reports that the server speaks none of the
// versions the client does (after a -32022 error), or that a pinned
// version is not one this client implements (match it with errors.As).
type UnsupportedVersionError struct {
	Requested string   // the version the client asked for
	Supported []string // the versions the server (or the client) supports
	Err       *Error   // the server's -32022 error, nil for a bad pin
}

// Error lists the versions on offer.
func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("mcp: protocol version %q is not supported (supported: %s)", e.Requested, strings.Join(e.Supported, ", "))
}

// Unwrap returns the server's error, if any.
func (e *UnsupportedVersionError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// HTTPStatusError reports an HTTP response that carries no JSON-RPC
// message (a proxy's error page, 401 without a body, ...).
type HTTPStatusError struct {
	StatusCode int
	// Body is the start of the response body (at most 512 bytes).
	Body []byte
}

// Error gives the status and the start of the body.
func (e *HTTPStatusError) Error() string {
	s := "mcp: HTTP status " + strconv.Itoa(e.StatusCode)
	if len(e.Body) > 0 {
		s += ": " + strings.TrimSpace(string(e.Body))
	}
	return s
}

// StateRejectedError reports that the server answered a leg carrying a
// requestState (a retry round, a Resume, CallOptions.RequestState) with
// ErrInvalidRequestState. The server does not say why (that goes to its
// log): its keys changed (a restart without configured keys, a key
// rotated out too early), the round expired, a single-use state was used
// already. None of these heal by sending the leg again: the call must
// start again from its first request, asking its questions anew. Match
// it with errors.As; through Unwrap it matches ErrInvalidRequestState.
type StateRejectedError struct {
	Method string // tools/call, prompts/get or resources/read
	Target string // the tool or prompt name, or the resource URI
	Err    *Error // the server's error
}

// Error names the call and says what to do.
func (e *StateRejectedError) Error() string {
	return fmt.Sprintf("mcp: %s %q: the server rejected the request state (its keys may have changed, or the round expired or was used already): start the call again",
		e.Method, e.Target)
}

// Unwrap returns the server's error.
func (e *StateRejectedError) Unwrap() error { return e.Err }

// stateRejected turns the server's rejection of a leg that carried a
// state into a *StateRejectedError; other errors pass as they are.
func stateRejected(cc *carrierCall, err error, withState bool) error {
	var e *Error
	if !withState || !errors.As(err, &e) || !errors.Is(e, ErrInvalidRequestState) {
		return err
	}
	return &StateRejectedError{Method: cc.method, Target: cc.target, Err: e}
}
