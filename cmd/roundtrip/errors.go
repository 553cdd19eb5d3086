package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/pin"
)

// Exit statuses: each class of failure has its own, so that a script can
// tell "the server is down" from "the tool said no". They are listed in
// help and in docs/design/cli.md.
const (
	exitOK            = 0
	exitFailure       = 1   // anything not classified below (a refused sampling request, a file that cannot be read, ...)
	exitUsage         = 2   // the command line is wrong (including arguments the tool's schema rejects)
	exitConnection    = 3   // the server cannot be reached: refused, DNS, TLS, an HTTP error status (404 on the endpoint), a stdio server that will not start, a timeout
	exitAuth          = 4   // 401/403, or the OAuth flow failed
	exitProtocol      = 5   // the server answered a JSON-RPC error, or something that is not MCP
	exitToolError     = 6   // the tool's result has isError set
	exitStateRejected = 7   // the server rejected the call's requestState: start the call again
	exitToolChanged   = 8   // a pinned tool's definition changed and the change was not accepted (pin.go)
	exitInterrupted   = 130 // SIGINT (Ctrl-C) or SIGTERM
)

// exitTable is the table printed by help (and kept in docs/design/cli.md).
const exitTable = `Exit status:
  0    success
  1    other failure (a refused sampling request, an unreadable file, ...)
  2    usage error (bad flags or arguments, unknown command or tool)
  3    connection: refused, DNS, TLS, HTTP error status (404 on the endpoint), timeout
  4    auth: 401/403 from the server, or the OAuth flow failed
  5    protocol: the server answered a JSON-RPC error (or something not MCP)
  6    tool error: the tool's result has isError set
  7    request state rejected (expired, used, or the server's keys changed):
       start the call again
  8    a tool's definition changed since it was pinned and the change was not
       accepted (asked in a terminal; refused elsewhere)
  130  interrupted (Ctrl-C)
With --json, every failure is one JSON object on stdout:
  {"error":{"code":"connection","message":"...","exit":3,"rpc":{...}}}
`

// usageError is an error in the command line: it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: sprintf(format, args...)}
}

// errToolError reports a tool result with isError set (the result is printed
// already).
var errToolError = errors.New("the tool reported an error (isError)")

// stateRejectedError is a call whose requestState the server (or the
// saved file's age) rules out: the call must start again.
type stateRejectedError struct {
	msg string
	err error // the server's error, if it answered one
}

func (e *stateRejectedError) Error() string { return e.msg }
func (e *stateRejectedError) Unwrap() error { return e.err }

// startError is a stdio server that could not be started: a connection
// failure.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// codeURLElicitationRequired is the URLElicitationRequired error of
// 2025-11-25 (retired in 2026-07-28, which asks with a url input request
// instead): the server needs the user to visit URLs before the request
// can succeed; data.elicitations lists them.
const codeURLElicitationRequired = -32042

// urlRequiredError is a -32042 answer: the URLs to open, then the same
// command again. Exit status 1 (code "url_required" with --json).
type urlRequiredError struct {
	urls []string
	msg  string
	err  *mcp.Error
}

func (e *urlRequiredError) Error() string { return e.msg }
func (e *urlRequiredError) Unwrap() error { return e.err }

// urlRequired turns a -32042 error into a urlRequiredError (err as it is
// otherwise).
func urlRequired(err error) error {
	var rpc *mcp.Error
	if !errors.As(err, &rpc) || rpc.Code != codeURLElicitationRequired {
		return err
	}
	var data struct {
		Elicitations []struct {
			Message string `json:"message"`
			URL     string `json:"url"`
		} `json:"elicitations"`
	}
	_ = json.Unmarshal(rpc.Data, &data)
	e := &urlRequiredError{err: rpc}
	var b strings.Builder
	b.WriteString("the server needs you to open a URL first (URL elicitation, -32042)")
	for _, el := range data.Elicitations {
		if el.URL == "" {
			continue
		}
		e.urls = append(e.urls, el.URL)
		b.WriteString("\n  ")
		if el.Message != "" {
			b.WriteString(indentRest(el.Message, "  ") + "\n  ")
		}
		b.WriteString(el.URL)
	}
	if len(e.urls) == 0 {
		b.WriteString(", but it named none: " + rpc.Message)
	}
	e.msg = b.String()
	return withHint(e, "open the URL in a browser and finish there, then run the same command again")
}

// failure is an error classified for the exit status and --json.
type failure struct {
	Code    string     `json:"code"`
	Message string     `json:"message"`
	Exit    int        `json:"exit"`
	RPC     *mcp.Error `json:"rpc,omitempty"`
	Hint    string     `json:"hint,omitempty"`
	URLs    []string   `json:"urls,omitempty"` // code "url_required": the URLs to open
}

// isRejectedState reports a JSON-RPC error that is the server's fixed
// invalid-requestState error: mcp.ErrInvalidRequestState matches by
// code (-32602) and message, whatever its data.
func isRejectedState(err error) bool {
	if errors.Is(err, mcp.ErrInvalidRequestState) {
		return true
	}
	var e *mcp.Error
	return errors.As(err, &e) && e.Code == mcp.CodeInvalidParams && strings.EqualFold(e.Message, mcp.ErrInvalidRequestState.Message)
}

// authSentinels are the auth package's errors of a failed OAuth flow.
var authSentinels = []error{auth.ErrNoAuthorizer, auth.ErrMetadataNotFound, auth.ErrInvalidMetadata, auth.ErrResourceMismatch,
	auth.ErrIssuerMismatch, auth.ErrIssuerMissing, auth.ErrStateMismatch, auth.ErrPKCEUnsupported, auth.ErrNoClient,
	auth.ErrAuthorizationDenied, auth.ErrTokenRequest, auth.ErrGrantUnsupported, auth.ErrAuthMethodUnsupported,
	auth.ErrDPoPUnsupported, auth.ErrRedirect, auth.ErrMalformedChallenge, auth.ErrRedirectMismatch}

// classify maps an error to its exit status and code. interrupted
// reports that the program's context was cancelled (a signal).
func classify(err error, interrupted bool) failure {
	f := failure{Message: err.Error()}
	var rpc *mcp.Error
	if errors.As(err, &rpc) {
		f.RPC = rpc
	}
	var ue *usageError
	var se *stateRejectedError
	var hs *mcp.HTTPStatusError
	var oe *auth.OAuthError
	var to *errTimeout
	var he *hintedError
	var ur *urlRequiredError
	var ce *pin.ChangeError
	if errors.As(err, &he) {
		f.Hint = he.hint
	}
	switch {
	case interrupted && errors.Is(err, context.Canceled), errors.Is(err, errInterruptedKey):
		f.Code, f.Exit, f.Message = "interrupted", exitInterrupted, "interrupted"
	case errors.As(err, &ue), errors.Is(err, pin.ErrNotListed):
		f.Code, f.Exit = "usage", exitUsage
	case errors.As(err, &ce):
		f.Code, f.Exit = "tool_changed", exitToolChanged
		f.Message, f.Hint = pinRefusal(ce)
	case errors.Is(err, errToolError):
		f.Code, f.Exit = "tool", exitToolError
	case errors.As(err, &se) || isRejectedState(err):
		f.Code, f.Exit = "state_rejected", exitStateRejected
		if se == nil && errors.As(err, new(*mcp.StateRejectedError)) {
			f.Message = err.Error() // the library's error says to start again
		} else if se == nil {
			f.Message = "the server no longer accepts this call's state (it expired, was already used, or the server's keys changed): start the call again (" + err.Error() + ")"
		}
	case errors.As(err, &hs) && (hs.StatusCode == http.StatusUnauthorized || hs.StatusCode == http.StatusForbidden):
		f.Code, f.Exit = "auth", exitAuth
	case errors.As(err, &oe) || isAny(err, authSentinels):
		f.Code, f.Exit = "auth", exitAuth
	case errors.As(err, &ur):
		f.Code, f.Exit, f.URLs = "url_required", exitFailure, ur.urls
	case rpc != nil:
		f.Code, f.Exit = "protocol", exitProtocol
	case errors.As(err, &to):
		f.Code, f.Exit = "timeout", exitConnection
	case hs != nil || isConnection(err):
		f.Code, f.Exit = "connection", exitConnection
	case isProtocol(err):
		f.Code, f.Exit = "protocol", exitProtocol
	default:
		f.Code, f.Exit = "failure", exitFailure
	}
	return f
}

func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// isConnection reports an error of reaching the server: the network,
// DNS, TLS, a stdio server that cannot start or went away.
func isConnection(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var ee *exec.Error
	var se *startError
	return errors.As(err, &se) || errors.As(err, &op) || errors.As(err, &dns) || errors.As(err, &cv) || errors.As(err, &rh) ||
		errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &ee) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, mcp.ErrTransportClosed) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.DeadlineExceeded)
}

// isProtocol reports an answer that is not the MCP the client expects.
func isProtocol(err error) bool {
	var ir *mcp.InvalidResponseError
	var uv *mcp.UnsupportedVersionError
	return errors.As(err, &ir) || errors.As(err, &uv) || errors.Is(err, mcp.ErrInvalidResponse) ||
		errors.As(err, new(*mcp.UnsupportedVersionError)) || errors.Is(err, mcp.ErrUnknownResultType) ||
		errors.Is(err, mcp.ErrUnknownInputRequest) || errors.Is(err, mcp.ErrInputRequiredNotAllowed) ||
		errors.Is(err, mcp.ErrMessageTooLarge)
}

// writeJSONError writes f as {"error": f} on one line.
func writeJSONError(w io.Writer, f failure) {
	b, err := json.Marshal(struct {
		Error failure `json:"error"`
	}{f})
	if err != nil { // an rpc member whose data does not encode
		f.RPC = nil
		b, _ = json.Marshal(struct {
			Error failure `json:"error"`
		}{f})
	}
	w.Write(append(jsonText(b), '\n'))
}
