// Command roundtrip is a command-line MCP client built on the public API of
// package github.com/roundtrip-mcp/roundtrip/mcp. It lists what a server
// offers, calls tools, gets prompts and reads resources, and answers the
// server's questions (elicitation, sampling, roots) in the terminal.
//
// Usage:
//
//	roundtrip [flags] [NAME] COMMAND [flags] [ARGS] [-- SERVER-COMMAND [ARG...]]
//
// The server is one of:
//
//	--url http://127.0.0.1:8080/mcp      a Streamable HTTP endpoint (or an HTTP+SSE one: see below)
//	-- go run ./examples/server          a command run over stdio (everything after --)
//	--cmd "./server --flag"              the same, as one string (split like a shell, no shell)
//	NAME, or --server NAME               a server of the config file (mcpServers format)
//
// Named servers come from a config file in the mcpServers format other
// MCP clients use (Claude Desktop, .mcp.json, Cursor, VS Code's
// "servers"), read unchanged: --config FILE, else $ROUNDTRIP_CONFIG,
// else roundtrip/config.json in the user configuration directory merged
// with the project's ./.mcp.json, the user's own definitions winning. A
// stdio command from a project file, or from a saved call (resume), runs
// only when the user agrees: asked in a terminal, refused elsewhere
// unless --allow-command is given; a project file's ${VAR} expands only
// for the variables the user's own config lists in "projectVariables".
// -e KEY=VALUE and --cwd DIR set a stdio server's environment and
// directory. $ROUNDTRIP_URL and $ROUNDTRIP_SERVER name the server when no
// flag does; $ROUNDTRIP_TOKEN is sent as a bearer token (not to a server
// a project file names).
//
// The tools called on a server of the config file are pinned (in
// roundtrip/pins.json in the user configuration directory; --pin FILE
// for any server, --no-pin for none): a tool whose description, schemas
// or annotations changed since is shown and asked about in a terminal,
// refused elsewhere (exit 8).
//
// What the server sends reaches the terminal with its control characters
// shown visibly (\x1b, \u009b, \u202e), never raw; --json output is
// exact JSON, those characters as \u escapes.
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
//	servers              list the named servers of the config file
//	gateway -c CONFIG    serve every server of CONFIG as one MCP server
//	                     (--http ADDR or --stdio; see "roundtrip help gateway")
//	help [COMMAND]       show help (also: help flags, help exit-codes, help environment)
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
// Exit status: 0 success, 1 other failure, 2 usage error, 3 connection
// (refused, DNS, TLS, an HTTP error status such as 404, timeout), 4 auth
// (401/403, OAuth), 5 protocol (a JSON-RPC error from the server), 6 the
// tool's result has isError, 7 the server rejected the call's
// requestState (start the call again), 130 interrupted. With --json a
// failure is one JSON object on stdout:
// {"error":{"code":"connection","message":...,"exit":3,"rpc":{...}}}.
//
// In a terminal, enums are picked with the arrow keys and secret fields
// are masked (charmbracelet/huh); pipes and --plain keep the line mode.
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

func main() { os.Exit(mainWith(os.Args[1:])) }

// mainWith is main without the exit: SIGINT and SIGTERM cancel the
// context (exit status 130), telemetry is set up from OTEL_* and flushed.
func mainWith(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// A second interrupt kills the process the default way.
		<-ctx.Done()
		stop()
	}()
	shutdown, err := otel.Setup(ctx, &otel.SetupOptions{ServiceName: serviceName(args), ServiceVersion: version})
	if err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip: telemetry off:", err)
	}
	code := run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := shutdown(sctx); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip: exporting telemetry:", err)
	}
	cancel()
	return code
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// run is the whole program: it parses args, talks to the server, reads the
// user's answers from stdin, prints results on stdout and prompts and
// diagnostics on stderr, and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWith(ctx, args, stdin, stdout, stderr, isTerminal(stdin) && isTerminal(stderr))
}

// runWith is run with tty, whether stdin and stderr are terminals (the
// CLI can ask the user), given.
func runWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, tty bool) int {
	if len(args) > 0 && args[0] == "gateway" {
		// A server, not a client: its stdout is the protocol (--stdio) or
		// the listening line, its stderr JSON logs; neither is a terminal's.
		return runGateway(ctx, args[1:], stdin, stdout, stderr)
	}
	// Nothing reaches the terminal raw (sanitize.go): both streams go
	// through a termWriter; the terminal forms draw on the raw stderr.
	tout, terr := &termWriter{w: stdout}, &termWriter{w: stderr}
	defer tout.Flush()
	defer terr.Flush()
	out := &syncWriter{w: tout, raw: stdout}
	errw := &syncWriter{w: terr, raw: stderr}
	err := dispatch(ctx, args, stdin, out, errw, tty)
	if err == nil || errors.Is(err, errHelp) {
		return exitOK
	}
	// After Ctrl-C whatever failed failed because of it (a stdio server
	// gets the same SIGINT and goes away).
	f := classify(err, ctx.Err() != nil)
	if ctx.Err() != nil {
		f.Code, f.Exit, f.Message, f.RPC = "interrupted", exitInterrupted, "interrupted", nil
	}
	if jsonRequested(args) {
		if f.Exit != exitToolError { // the isError result is on stdout already: one JSON value
			writeJSONError(out, f)
		}
		return f.Exit
	}
	fmt.Fprintln(errw, "roundtrip:", f.Message)
	if f.Hint != "" {
		fmt.Fprintln(errw, "roundtrip:", f.Hint)
	}
	if f.Exit == exitUsage {
		fmt.Fprintln(errw, `Run "roundtrip help" for usage.`)
	}
	return f.Exit
}

// jsonRequested reports whether --json is among the flags (before any
// "--"): known before the flags are parsed, so that a usage error too
// comes out as JSON.
func jsonRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true", "--json=1", "-json=1":
			return true
		case "--json=false", "-json=false", "--json=0", "-json=0":
			return false
		}
	}
	return os.Getenv("ROUNDTRIP_JSON") == "1"
}
