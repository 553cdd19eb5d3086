// Command roundtrip is a command-line MCP client built on the public API of
// package github.com/roundtrip-mcp/roundtrip/mcp. It lists what a server
// offers, calls tools, gets prompts and reads resources, and answers the
// server's questions (elicitation, sampling, roots) in the terminal.
//
// Usage:
//
//	roundtrip [flags] COMMAND [flags] [ARGS] [-- SERVER-COMMAND [ARG...]]
//
// The server is one of:
//
//	--url http://127.0.0.1:8080/mcp      a Streamable HTTP endpoint (or an HTTP+SSE one: see below)
//	-- go run ./examples/server          a command run over stdio (everything after --)
//	--cmd "./server --flag"              the same, as one string (split like a shell, no shell)
//
// Commands:
//
//	discover             server info, protocol version and era, capabilities
//	tools                list tools (all pages)
//	prompts              list prompts
//	resources            list resources
//	templates            list resource templates
//	call TOOL [ARGS]     call a tool; ARGS is one JSON object or key=value pairs
//	get PROMPT [k=v...]  get a prompt
//	read URI             read a resource
//	resume FILE          finish a call saved with --save
//	listen               print notifications until interrupted
//	logout               forget the OAuth token stored for --url (--all: every token)
//	help [COMMAND]       show help
//
// A server that refuses Streamable HTTP (a 4xx to the POST of
// initialize) is tried over the HTTP+SSE transport of 2024-11-05 at the
// same URL, such as http://127.0.0.1:8080/sse; --sse speaks that
// transport from the start.
//
// With --oauth, an HTTP server that requires authorization is authorized
// in a browser: the authorization URL is printed on stderr (--oauth-browser
// also opens it) and the browser comes back to a loopback listener
// (--oauth-redirect). Tokens and client registrations are kept in
// --oauth-token-file (by default under the user's configuration
// directory), so later runs need no login.
//
// Exit status: 0 on success, 1 when the operation failed (connection,
// protocol or JSON-RPC error, a refused sampling request), 2 on a usage
// error, 3 when a tool answered with isError set.
//
// Run "roundtrip help COMMAND" for the flags of each command.
//
// Tracing: with the standard OpenTelemetry variables set (for example
// OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318), each run is a
// span ("roundtrip call", ...) holding the spans of the requests it
// sends, whose trace context goes to the server in params._meta; a call
// saved with --save keeps its trace, which "resume" continues. Nothing
// is exported when none is set.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/roundtrip-mcp/roundtrip/otel"
)

// Exit statuses.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitToolError = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// A second interrupt kills the process the default way.
		<-ctx.Done()
		stop()
	}()
	shutdown, err := otel.Setup(ctx, &otel.SetupOptions{ServiceName: "roundtrip-cli", ServiceVersion: version})
	if err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip: telemetry off:", err)
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := shutdown(sctx); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip: exporting telemetry:", err)
	}
	cancel()
	os.Exit(code)
}

// usageError is an error in the command line: it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errToolError reports a tool result with isError set (the result is printed
// already): it exits with status 3.
var errToolError = errors.New("the tool reported an error (isError)")

// run is the whole program: it parses args, talks to the server, reads the
// user's answers from stdin, prints results on stdout and prompts and
// diagnostics on stderr, and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &syncWriter{w: stdout}
	errw := &syncWriter{w: stderr}
	err := dispatch(ctx, args, stdin, out, errw)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.Is(err, errToolError):
		fmt.Fprintln(errw, "roundtrip:", err)
		return exitToolError
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(errw, "roundtrip:", err)
		fmt.Fprintln(errw, `Run "roundtrip help" for usage.`)
		return exitUsage
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		fmt.Fprintln(errw, "roundtrip: interrupted")
		return exitFailure
	}
	fmt.Fprintln(errw, "roundtrip:", err)
	return exitFailure
}
