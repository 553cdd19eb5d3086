package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	otelapi "go.opentelemetry.io/otel"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/pin"
	"github.com/roundtrip-mcp/roundtrip/otel"
)

// version is reported as the client's version.
const version = "0.1.0"

// errHelp ends the program with status 0 after help was printed.
var errHelp = errors.New("help requested")

// command is one subcommand.
type command struct {
	name    string
	args    string // synopsis of the positional arguments
	summary string
	help    string               // longer description
	run     func(*session) error // runs with the positional arguments in s.args
	minArgs int
	maxArgs int // -1: any
}

// options are the flags every command accepts.
type options struct {
	url       string
	cmdLine   string
	command   []string // after --
	headers   headerFlag
	legacy    bool
	sse       bool
	pinned    string
	timeout   time.Duration
	json      bool
	plain     bool
	roots     listFlag
	logLevel  string
	model     string
	quiet     bool
	maxRounds int
	oauth     oauthFlags
	pin       pinFlags // pin.go
	// allowCommand runs a stdio server command from a project file or a
	// saved call without asking (consent.go).
	allowCommand bool

	// per command
	save       string
	noValidate bool
	listen     listenFlags
	logoutAll  bool

	notes []string // said on stderr before the command runs

	// servers of a config file, and stdio settings
	config   string
	server   string
	env      listFlag // -e KEY=VAL
	cwd      string
	resolved *resolved // the config's settings for --server
	cfg      *loadedConfig
}

type listenFlags struct {
	tools, prompts, resources bool
	subscribe                 listFlag
	max                       int
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// headerFlag collects repeated -H 'Name: value' flags.
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string {
	if f == nil || f.h == nil {
		return ""
	}
	return fmt.Sprint(len(f.h), " headers")
}

func (f *headerFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("header %q is not of the form 'Name: value'", v)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(name, strings.TrimSpace(value))
	return nil
}

// register adds the common flags to fs, each defaulting to its current
// value (so that flags given before the command carry over).
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.url, "url", o.url, "the Streamable HTTP `URL` of the server (a server that refuses it is tried over HTTP+SSE, 2024-11-05, at the same URL)")
	fs.StringVar(&o.cmdLine, "cmd", o.cmdLine, "run the server `COMMAND` over stdio (split like a shell; or give it after --)")
	fs.Var(&o.headers, "H", "HTTP header `'Name: value'` sent with every request (repeatable), e.g. -H 'Authorization: Bearer TOKEN'")
	fs.Var(&o.headers, "header", "same as -H")
	fs.BoolVar(&o.legacy, "legacy", o.legacy, "speak 2025-11-25 (initialize handshake and a session) instead of finding the era out")
	fs.BoolVar(&o.sse, "sse", o.sse, "speak the HTTP+SSE transport of 2024-11-05 from the start: --url is the server's event stream (its sessions are initialize sessions)")
	fs.StringVar(&o.pinned, "protocol-version", o.pinned, "speak exactly this protocol `VERSION` (2026-07-28, 2025-11-25 or 2025-06-18)")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "bound each request (each round of a call separately, not the time spent answering); 0: none")
	fs.BoolVar(&o.json, "json", o.json, "print results as JSON, and failures as one JSON object on stdout")
	fs.BoolVar(&o.plain, "plain", o.plain, "ask questions line by line even in a terminal (no arrow-key choices or masked input)")
	fs.Var(&o.roots, "root", "expose a root: a file:// `URI` or a path (repeatable); declares the roots capability (roots are deprecated in 2026-07-28, SEP-2577, and still served)")
	fs.StringVar(&o.logLevel, "log-level", o.logLevel, "ask the server for log messages at this `LEVEL` and above (debug, info, notice, warning, error, ...), printed on stderr (logging is deprecated in 2026-07-28, SEP-2577, and still served)")
	fs.StringVar(&o.model, "model", o.model, "the model `NAME` reported in sampling replies typed by the user (sampling is deprecated in 2026-07-28, SEP-2577, and still served)")
	fs.BoolVar(&o.quiet, "quiet", o.quiet, "discard the stderr of a stdio server")
	fs.IntVar(&o.maxRounds, "max-rounds", o.maxRounds, "give up after this many input rounds of one call")
	fs.StringVar(&o.config, "config", o.config, "read named servers from `FILE` (mcpServers format; default: $"+envConfig+", else roundtrip/config.json in the user config directory merged with ./.mcp.json)")
	fs.StringVar(&o.server, "server", o.server, "talk to the server `NAME` of the config file (or give NAME before the command: roundtrip NAME tools)")
	fs.Var(&o.env, "e", "set `KEY=VALUE` in the environment of a stdio server (repeatable)")
	fs.Var(&o.env, "env", "same as -e")
	fs.StringVar(&o.cwd, "cwd", o.cwd, "run a stdio server in `DIR`")
	fs.BoolVar(&o.allowCommand, "allow-command", o.allowCommand, "run a stdio server's command that comes from a project file (./.mcp.json) or a saved call (resume) without asking; without it the CLI asks in a terminal and refuses elsewhere")
	o.oauth.register(fs)
	o.pin.register(fs)
}

func defaultOptions() *options {
	return &options{timeout: 60 * time.Second, model: "human", maxRounds: 10, oauth: oauthFlags{redirect: defaultRedirectURL},
		json: os.Getenv(envJSON) == "1"}
}

// session is what a command runs with.
type session struct {
	ctx    context.Context
	opts   *options
	args   []string
	stdin  io.Reader
	out    io.Writer // results
	errw   io.Writer // prompts and diagnostics
	ui     *asker
	client *mcp.Client // nil until connect
	guard  *pin.Guard  // the tool pins' check, when pinning is on (pin.go)
	target target
	// perRound: the command bounds each round itself (roundContext), so
	// that the time spent answering does not count; the client gets no
	// RequestTimeout.
	perRound bool
	// onComplete, when set, sees the result of a call that completed
	// (resume marks its file finished).
	onComplete func(res any)
	// commandFrom names the file a stdio server's command comes from when
	// the user did not write it (a project file, a saved call): it runs
	// only when allowed (consent.go).
	commandFrom string
	tty         bool // stdin and stderr are terminals: the CLI can ask
}

// target is the server a session talks to; it is saved with a pending
// call.
type target struct {
	Server  string   `json:"server,omitempty"` // the name in the config file, if named
	URL     string   `json:"url,omitempty"`
	Command []string `json:"command,omitempty"`
	Dir     string   `json:"cwd,omitempty"` // of a stdio server
}

func (t target) String() string {
	if t.URL != "" {
		return t.URL
	}
	return strings.Join(t.Command, " ")
}

var commands []*command

func init() {
	commands = []*command{
		{name: "discover", summary: "show the server's info, protocol version and era, capabilities and instructions",
			run: cmdDiscover, maxArgs: 0},
		{name: "tools", summary: "list the server's tools (every page)", run: cmdTools, maxArgs: 0},
		{name: "prompts", summary: "list the server's prompts", run: cmdPrompts, maxArgs: 0},
		{name: "resources", summary: "list the server's resources", run: cmdResources, maxArgs: 0},
		{name: "templates", summary: "list the server's resource templates", run: cmdTemplates, maxArgs: 0},
		{name: "call", args: "TOOL [JSON-OBJECT | KEY=VALUE...]", summary: "call a tool, answering the server's questions",
			help: callHelp, run: cmdCall, minArgs: 1, maxArgs: -1},
		{name: "get", args: "PROMPT [KEY=VALUE...]", summary: "get a prompt, answering the server's questions",
			help: "Prompt arguments are strings: KEY=VALUE is sent as is. Before the call the prompt's\narguments are read from prompts/list and a missing required one is a usage error\n(exit 2; --no-validate skips the check).", run: cmdGet, minArgs: 1, maxArgs: -1},
		{name: "read", args: "URI", summary: "read a resource, answering the server's questions", run: cmdRead, minArgs: 1, maxArgs: 1},
		{name: "resume", args: "FILE", summary: "finish a call saved with --save, asking its questions here",
			help: resumeHelp, run: cmdResume, minArgs: 1, maxArgs: 1},
		{name: "listen", summary: "print the server's notifications until interrupted",
			help: listenHelp, run: cmdListen, maxArgs: 0},
		{name: "logout", summary: "forget the OAuth token stored for the server (--all: the whole token file)",
			help: logoutHelp, run: cmdLogout, maxArgs: 0},
		{name: "servers", summary: "list the named servers of the config file (mcpServers format)",
			help: serversHelp, run: cmdServers, maxArgs: 0},
		{name: "gateway", args: "-c CONFIG (--http ADDR | --stdio)", summary: "serve every server of CONFIG as one MCP server (roundtrip gateway -h)",
			run: func(*session) error {
				return usagef("gateway takes none of the common flags and comes first: roundtrip gateway -c CONFIG (--http ADDR | --stdio)")
			}, maxArgs: -1},
		{name: "help", args: "[COMMAND]", summary: "show help for a command", minArgs: 0, maxArgs: 1},
	}
}

const callHelp = `Arguments are one JSON object ('{"name":"x","n":2}') or KEY=VALUE pairs.
A value is taken as JSON when it parses (n=2, ok=true, tags='["a"]') and as a
string otherwise (name=x); when the tool's input schema says a property is a
string, the value is always a string (zip=01234). Before the call the tool's
input schema is read from tools/list and the arguments are checked against its
types, enums and required list (--no-validate skips both).

While the call runs, the server's questions are asked on stderr and answered on
stdin, one line at a time: form fields one by one (an empty line takes the
default; !decline or !cancel refuses the form), URL requests with y/n/c, sampling
requests by typing the reply (finish with an empty line; !decline refuses).

With --save FILE the call stops at the server's first question and is written
to FILE (JSON) instead; "roundtrip resume FILE" finishes it later, possibly on
another machine.`

const resumeHelp = `Loads a call saved by call/get/read --save, asks its questions here, and
sends the answers; later rounds are asked interactively too. The server is the
one recorded in FILE unless --url, --cmd or -- is given; a command recorded in
FILE runs only when you agree (asked in a terminal; elsewhere --allow-command).
The call's --root flags are saved and sent again. HTTP headers are not
saved: give -H again. A stdio server is started anew, so its request-state keys
must survive a restart for the saved state to be accepted.`

const serversHelp = `Named servers come from a config file in the mcpServers format other MCP
clients use, unchanged: {"mcpServers": {"NAME": {"command": ..., "args": [...],
"env": {...}, "cwd": ...}}} for stdio servers and {"url": ..., "headers": {...}}
with "type" "http", "streamable-http" or "sse" for remote ones (VS Code's
"servers" key is read too; ${VAR}, ${env:VAR} and ${VAR:-default} are expanded).
The file is --config FILE, else $ROUNDTRIP_CONFIG, else roundtrip/config.json in
the user config directory ($XDG_CONFIG_HOME) merged with the project's
./.mcp.json, your own definitions winning; the list shows where each comes from.
Use a server with "roundtrip NAME COMMAND ..." or --server NAME.

A project file (./.mcp.json) is not yours: a command it defines runs only when
you agree (asked in a terminal; elsewhere refused unless --allow-command), and
its ${VAR} expands only for variables your own config lists:
  {"projectVariables": ["GITHUB_TOKEN"], "mcpServers": {...}}`

const listenHelp = `Opens a subscriptions/listen stream (2026-07-28 only) and prints each
notification as it arrives until interrupted (Ctrl-C) or --max notifications.
With no filter flag it listens to the three list-changed notifications.`

// dispatch parses the command line and runs the command.
// tty reports that stdin and stderr are terminals (terminal input is
// possible).
func dispatch(ctx context.Context, args []string, stdin io.Reader, out, errw io.Writer, tty bool) error {
	o := defaultOptions()
	if i := slices.Index(args, "--"); i >= 0 {
		o.command = slices.Clone(args[i+1:])
		args = args[:i]
	}
	global := flag.NewFlagSet("roundtrip", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	o.register(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(out)
			return errHelp
		}
		return withHint(usagef("%v", err), flagHint(err, global))
	}
	args = global.Args()
	if len(args) == 0 {
		printUsage(errw)
		return usagef("no command given")
	}
	if args[0] == "gateway" {
		// roundtrip --json gateway ...: the gateway is a server and takes
		// none of the client's common flags.
		return usagef("gateway takes none of the common flags and comes first: roundtrip gateway -c CONFIG (--http ADDR | --stdio)")
	}
	cmd := lookup(args[0])
	candidates := commandNames()
	if cmd == nil && o.server == "" && o.url == "" && o.cmdLine == "" && len(o.command) == 0 {
		// roundtrip NAME COMMAND: a server of the config file.
		cfg, err := loadConfig(o.config)
		if err != nil {
			return err
		}
		candidates = append(candidates, cfg.names()...)
		if _, ok := cfg.lookup(args[0]); ok {
			o.server, o.cfg = args[0], cfg
			// Flags may follow the name too: roundtrip NAME --json tools.
			if err := global.Parse(args[1:]); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					printUsage(out)
					return errHelp
				}
				return withHint(usagef("%v", err), flagHint(err, global))
			}
			if args = global.Args(); len(args) == 0 {
				return usagef("no command given for server %q (roundtrip %s tools, roundtrip %s call TOOL ...)", o.server, o.server, o.server)
			}
			cmd = lookup(args[0])
		}
	}
	if cmd == nil {
		return withHint(usagef("unknown command %q", args[0]), didYouMean(args[0], candidates))
	}
	fs := flag.NewFlagSet("roundtrip "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.register(fs)
	registerCommandFlags(cmd.name, fs, o)
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(out, cmd)
			return errHelp
		}
		return withHint(usagef("%s: %v", cmd.name, err), flagHint(err, fs))
	}
	if cmd.name == "help" {
		if len(pos) == 0 {
			printUsage(out)
			return nil
		}
		if topic, ok := helpTopics[pos[0]]; ok {
			topic(out)
			return nil
		}
		if pos[0] == "gateway" {
			fmt.Fprintln(out, gatewayHelp)
			return nil
		}
		c := lookup(pos[0])
		if c == nil {
			return withHint(usagef("no help for %q (commands, or: flags, exit-codes, environment)", pos[0]),
				didYouMean(pos[0], append(commandNames(), "flags", "exit-codes", "environment")))
		}
		printCommandHelp(out, c)
		return nil
	}
	if len(pos) < cmd.minArgs || (cmd.maxArgs >= 0 && len(pos) > cmd.maxArgs) {
		return usagef("usage: roundtrip %s [flags] %s", cmd.name, cmd.args)
	}
	s := &session{ctx: ctx, opts: o, args: pos, stdin: stdin, out: out, errw: errw, tty: tty}
	s.ui = newAsker(stdin, errw, o.model, !isTerminal(stdin))
	s.ui.tui = tty && !o.plain
	if sw, ok := errw.(*syncWriter); ok && s.ui.tui {
		s.ui.tuiOut = sw.raw // the terminal itself: huh reads its size and colours (and gets sanitized strings)
	}
	if err := s.setRoots(); err != nil {
		return err
	}
	if cmd.name != "resume" && cmd.name != "logout" && cmd.name != "servers" && cmd.name != "gateway" {
		t, err := o.target()
		if err != nil {
			return err
		}
		s.target = t
		s.commandFrom = o.commandFrom()
	}
	for _, n := range o.notes {
		fmt.Fprintln(errw, "roundtrip:", n)
	}
	if o.save != "" && (o.legacy || o.sse || (o.pinned != "" && eraOf(o.pinned) == "legacy")) {
		return usagef("--save needs the 2026-07-28 era: a 2025-11-25 server asks with live requests, which cannot be saved")
	}
	defer s.close()
	ctx, span := otelapi.Tracer(tracerName).Start(ctx, "roundtrip "+cmd.name)
	defer span.End()
	// Ctrl-C typed in a terminal field cancels the whole command, as
	// SIGINT does (on a 2025-11-25 session the field runs inside the
	// library's handler, whose error would otherwise go to the server).
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.ui.onInterrupt = func() { cancel(errInterruptedKey) }
	s.ctx = ctx
	err = urlRequired(cmd.run(s))
	if errors.Is(context.Cause(ctx), errInterruptedKey) {
		return errInterruptedKey
	}
	if ctx.Err() == nil {
		err = withHint(err, s.missingMCPHint(err))
	}
	return err
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// tracerName is the instrumentation scope of the command's own span.
const tracerName = "github.com/roundtrip-mcp/roundtrip/cmd/roundtrip"

// registerCommandFlags adds the flags of one command.
func registerCommandFlags(name string, fs *flag.FlagSet, o *options) {
	switch name {
	case "call", "get", "read":
		fs.StringVar(&o.save, "save", "", "stop at the server's first question and save the pending call to `FILE` (see resume)")
	}
	switch name {
	case "call":
		fs.BoolVar(&o.noValidate, "no-validate", false, "do not read the tool's input schema to check and type the arguments")
	case "get":
		fs.BoolVar(&o.noValidate, "no-validate", false, "do not read prompts/list to check the prompt's required arguments")
	case "listen":
		fs.BoolVar(&o.listen.tools, "tools", false, "listen to notifications/tools/list_changed")
		fs.BoolVar(&o.listen.prompts, "prompts", false, "listen to notifications/prompts/list_changed")
		fs.BoolVar(&o.listen.resources, "resources", false, "listen to notifications/resources/list_changed")
		fs.Var(&o.listen.subscribe, "resource", "subscribe to updates of the resource `URI` (repeatable)")
		fs.IntVar(&o.listen.max, "max", 0, "stop after `N` notifications (0: until interrupted)")
	case "logout":
		fs.BoolVar(&o.logoutAll, "all", false, "remove the whole token file: every token and client registration")
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// parseInterspersed parses flags that may come after positional
// arguments ("call TOOL --json a=1").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `roundtrip: a command-line MCP client

Usage:
  roundtrip [flags] COMMAND [flags] [ARGS] [-- SERVER-COMMAND [ARG...]]

The server is --url URL (Streamable HTTP, or the HTTP+SSE transport of
2024-11-05: tried at the same URL when the server refuses Streamable HTTP, or
at once with --sse), or a command run over stdio: given after --
(roundtrip tools -- go run ./server) or as --cmd "./server -v".

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Named servers: "roundtrip NAME COMMAND" or --server NAME, from a config file
in the mcpServers format other MCP clients use (roundtrip help servers).

Common flags (accepted by every command, before or after it; help flags):
  --url URL  --cmd COMMAND  --server NAME  --config FILE  -e KEY=VAL  --cwd DIR
  -H 'Name: value'  --legacy  --sse  --protocol-version V  --timeout D  --json
  --root PATH|URI  --log-level L  --model NAME  --quiet  --max-rounds N
  --allow-command (run a project file's or saved call's command without asking)
  --pin FILE  --no-pin (tool pinning: on for config servers; ask before calling
  a tool whose definition changed)
  (--root, --log-level and the sampling replies serve roots, logging and
  sampling, deprecated in 2026-07-28 by SEP-2577 and still served)
  --oauth  --oauth-redirect URL  --oauth-token-file FILE  --oauth-browser
  --oauth-issuer ISSUER --oauth-client-id ID [--oauth-client-secret SECRET]

OAuth (HTTP servers): with --oauth, a server that answers 401 is authorized in
a browser: the URL is printed on stderr and the browser comes back to a
loopback listener (--oauth-redirect, default
`+defaultRedirectURL+`). Tokens are kept in --oauth-token-file
for the next runs; "roundtrip logout" forgets them.

`+exitTable+`
`+envHelp+`
Run "roundtrip help COMMAND" for a command, "roundtrip help flags" for every
common flag.
`)
}

// printCommandHelp prints a command's synopsis, its description and its
// own flags; the common flags are one pointer away (help flags).
func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: roundtrip [NAME] %s [flags] %s [-- SERVER-COMMAND...]\n\n%s.\n", c.name, c.args, strings.ToUpper(c.summary[:1])+c.summary[1:])
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", c.help)
	}
	fs := flag.NewFlagSet("roundtrip "+c.name, flag.ContinueOnError)
	registerCommandFlags(c.name, fs, defaultOptions())
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nFlags of "+c.name+":")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fmt.Fprintln(w, "\nThe server and the common flags (--url, --json, --timeout, ...): roundtrip help flags")
}

// helpTopics are the help pages that are not commands.
var helpTopics = map[string]func(io.Writer){
	"flags": func(w io.Writer) {
		fmt.Fprintln(w, "Common flags, accepted by every command, before or after it:")
		fs := flag.NewFlagSet("roundtrip", flag.ContinueOnError)
		defaultOptions().register(fs)
		fs.SetOutput(w)
		fs.PrintDefaults()
	},
	"exit-codes":  func(w io.Writer) { fmt.Fprint(w, exitTable) },
	"environment": func(w io.Writer) { fmt.Fprint(w, envHelp) },
}

const envHelp = `Environment:
  ROUNDTRIP_URL     the server's URL when no server is given
  ROUNDTRIP_SERVER  a server NAME of the config file when no server is given
  ROUNDTRIP_CONFIG  the config file (default: roundtrip/config.json in the user
                    config directory, merged with ./.mcp.json)
  ROUNDTRIP_TOKEN   a bearer token for HTTP servers (no -H Authorization, no --oauth;
                    never sent to a server of a project file)
  ROUNDTRIP_JSON    1: as --json
  ROUNDTRIP_OAUTH_CLIENT_SECRET  the secret of --oauth-client-id
  OTEL_*            OpenTelemetry export (traces of each run)
`

// target returns the server the flags name.
func (o *options) target() (target, error) {
	n := 0
	for _, set := range []bool{o.url != "", o.cmdLine != "", len(o.command) > 0, o.server != ""} {
		if set {
			n++
		}
	}
	if n == 0 {
		if v := os.Getenv(envServer); v != "" {
			o.server, n = v, 1
		} else if v := os.Getenv(envURL); v != "" {
			o.url, n = v, 1
		}
	}
	t, err := o.pickTarget(n)
	if err != nil {
		return t, err
	}
	if t.URL != "" && (len(o.env) > 0 || o.cwd != "") {
		return target{}, usagef("-e and --cwd apply to stdio servers only")
	}
	for _, kv := range o.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return target{}, usagef("-e %q is not KEY=VALUE", kv)
		}
	}
	if o.cwd != "" {
		t.Dir = o.cwd
	}
	return t, nil
}

func (o *options) pickTarget(n int) (target, error) {
	switch {
	case n == 0:
		return target{}, usagef("no server: give --url URL, --cmd COMMAND, -- COMMAND [ARG...], or a server NAME of the config file (also $%s, $%s)", envURL, envServer)
	case n > 1:
		return target{}, usagef("give only one of --url, --cmd, --server and -- COMMAND")
	case o.server != "":
		return o.serverTarget()
	case o.url != "":
		fixed, assumed, ok := normalizeURL(o.url)
		if !ok {
			return target{}, usagef("--url %q is not an http(s) URL (for example http://127.0.0.1:8080/mcp)", o.url)
		}
		if assumed {
			o.notes = append(o.notes, fmt.Sprintf("--url %s has no scheme: assuming %s", o.url, fixed))
		}
		return target{URL: fixed}, nil
	case o.cmdLine != "":
		words, err := splitCommand(o.cmdLine)
		if err != nil {
			return target{}, usagef("--cmd: %v", err)
		}
		if len(words) == 0 {
			return target{}, usagef("--cmd is empty")
		}
		return target{Command: words}, nil
	}
	return target{Command: o.command}, nil
}

// connect builds the client for s.target.
func (s *session) connect() (*mcp.Client, error) {
	if s.client != nil {
		return s.client, nil
	}
	o := s.opts
	copts := &mcp.ClientOptions{
		Info:        mcp.Implementation{Name: "roundtrip-cli", Version: version},
		Elicitation: s.ui.elicit,
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		Sampling:  s.ui.sample,
		MaxRounds: o.maxRounds,
		Logger:    slog.New(slog.NewTextHandler(s.errw, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if !s.perRound {
		copts.RequestTimeout = o.timeout
	}
	if len(s.ui.roots) > 0 {
		//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
		copts.Roots = s.ui.listRoots
	}
	switch {
	case o.legacy && o.pinned != "":
		return nil, usagef("give --legacy or --protocol-version, not both")
	case o.legacy:
		copts.Mode = mcp.ModeLegacy
	case o.pinned != "":
		copts.Mode = mcp.ModePinned
		copts.ProtocolVersion = o.pinned
	}
	if o.logLevel != "" {
		copts.LogLevel = mcp.LoggingLevel(o.logLevel)
		copts.OnLog = func(m *mcp.LoggingMessageParams) {
			logger := ""
			if m.Logger != "" {
				logger = " " + m.Logger
			}
			fmt.Fprintf(s.errw, "[server %s%s] %s\n", m.Level, logger, compactValue(m.Data))
		}
	}
	var t mcp.ClientTransport
	if s.target.URL != "" {
		s.addHeaders()
		hopts := &mcp.HTTPClientOptions{Header: o.headers.h, SSE: o.sse || (o.resolved != nil && o.resolved.sse)}
		if err := o.oauth.check(o.headers.h); err != nil {
			return nil, err
		}
		if o.oauth.enabled {
			hc, err := s.oauthClient()
			if err != nil {
				return nil, err
			}
			hopts.HTTPClient = hc
		}
		t = mcp.NewHTTPClientTransport(s.target.URL, hopts)
	} else {
		if o.headers.h != nil {
			return nil, usagef("-H applies to HTTP servers only")
		}
		if o.sse {
			return nil, usagef("--sse applies to HTTP servers only")
		}
		if o.oauth.enabled {
			return nil, usagef("--oauth applies to HTTP servers only")
		}
		if err := s.allowCommand(); err != nil {
			return nil, err
		}
		cmd := exec.Command(s.target.Command[0], s.target.Command[1:]...)
		cmd.Dir = s.target.Dir
		var env []string
		if o.resolved != nil {
			env = append(env, o.resolved.env...)
		}
		env = append(env, o.env...)
		if len(env) > 0 || (o.resolved != nil && len(o.resolved.unset) > 0) {
			cmd.Env = os.Environ()
			if o.resolved != nil {
				cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
					k, _, _ := strings.Cut(kv, "=")
					return slices.Contains(o.resolved.unset, k)
				})
			}
			cmd.Env = append(cmd.Env, env...)
		}
		if !o.quiet {
			cmd.Stderr = s.errw
		}
		var err error
		if t, err = mcp.NewCommandTransport(cmd, nil); err != nil {
			return nil, &startError{err}
		}
	}
	bind, err := s.enablePinning(copts)
	if err != nil {
		return nil, err
	}
	s.client = mcp.NewClient(t, otel.InstrumentClient(copts, nil))
	bind(s.client)
	return s.client, nil
}

func (s *session) close() {
	if s.client != nil {
		s.client.Close()
	}
}

// isTerminal reports whether r (a reader or a writer) is a terminal (a
// character device).
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// syncWriter serialises writes: results, prompts, progress and log
// messages may come from several goroutines.
type syncWriter struct {
	mu  sync.Mutex
	w   io.Writer
	raw io.Writer // the stream under w's sanitizing, for the terminal forms
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
