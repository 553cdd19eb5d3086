package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Environment variables the CLI reads (documented in help and
// docs/design/cli.md).
const (
	envURL    = "ROUNDTRIP_URL"    // the server's URL when no server is given
	envServer = "ROUNDTRIP_SERVER" // a server name of the config file when no server is given
	envConfig = "ROUNDTRIP_CONFIG" // the config file (instead of the default search)
	envToken  = "ROUNDTRIP_TOKEN"  // a bearer token for HTTP servers (Authorization: Bearer ...)
	envJSON   = "ROUNDTRIP_JSON"   // "1": as --json
)

// serverEntry is one server of a config file, in the mcpServers format
// that MCP clients share. Stdio: command, args, env, cwd (and VS Code's
// envFile); remote: url (serverUrl, httpUrl in some clients) and
// headers, with type "http", "streamable-http" (or "streamableHttp") or
// "sse". Unknown members (disabled, autoApprove, ...) are ignored.
type serverEntry struct {
	Type      string         `json:"type,omitempty"`
	Transport string         `json:"transport,omitempty"`
	Command   string         `json:"command,omitempty"`
	Args      []string       `json:"args,omitempty"`
	Env       map[string]any `json:"env,omitempty"` // strings (numbers too; null unsets the variable)
	EnvFile   string         `json:"envFile,omitempty"`
	Cwd       string         `json:"cwd,omitempty"`
	URL       string         `json:"url,omitempty"`
	ServerURL string         `json:"serverUrl,omitempty"`
	HTTPURL   string         `json:"httpUrl,omitempty"`
	Headers   headerList     `json:"headers,omitempty"`
}

// headerList is "headers": an object of names and values, or (as some
// clients write it) an array of "Name: value" strings.
type headerList map[string]string

func (h *headerList) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err == nil {
		*h = m
		return nil
	}
	var lines []string
	if err := json.Unmarshal(b, &lines); err != nil {
		return errors.New(`"headers" is neither an object of strings nor an array of "Name: value" strings`)
	}
	*h = headerList{}
	for _, l := range lines {
		name, value, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("header %q is not of the form 'Name: value'", l)
		}
		(*h)[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return nil
}

// configFile is the file: "mcpServers" (Claude Desktop, Claude Code's
// .mcp.json, Cursor, Windsurf, Gemini CLI, ...), or "servers" (VS Code's
// mcp.json), or "mcp": {"servers": ...} (VS Code's settings.json).
type configFile struct {
	MCPServers map[string]serverEntry `json:"mcpServers"`
	Servers    map[string]serverEntry `json:"servers"`
	MCP        *struct {
		Servers map[string]serverEntry `json:"servers"`
	} `json:"mcp"`
}

// loadedConfig is a parsed config file.
type loadedConfig struct {
	path    string
	servers map[string]serverEntry
}

func (c *loadedConfig) names() []string {
	if c == nil {
		return nil
	}
	names := make([]string, 0, len(c.servers))
	for n := range c.servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// configCandidates are the files searched, in order, when neither
// --config nor $ROUNDTRIP_CONFIG is given: ./.mcp.json (a project's
// servers), then roundtrip/config.json in the user configuration
// directory ($XDG_CONFIG_HOME or ~/.config on Linux).
func configCandidates() []string {
	c := []string{".mcp.json"}
	if dir, err := os.UserConfigDir(); err == nil {
		c = append(c, filepath.Join(dir, "roundtrip", "config.json"))
	}
	return c
}

// loadConfig reads the config file: explicit (--config or
// $ROUNDTRIP_CONFIG; it must exist) or the first candidate that exists
// (nil, nil when none does).
func loadConfig(explicit string) (*loadedConfig, error) {
	if explicit == "" {
		explicit = os.Getenv(envConfig)
	}
	paths := []string{explicit}
	if explicit == "" {
		paths = configCandidates()
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) && explicit == "" {
			continue
		}
		if err != nil {
			return nil, usagef("config: %v", err)
		}
		c, err := parseConfig(b)
		if err != nil {
			return nil, usagef("config %s: %v", p, err)
		}
		c.path = p
		return c, nil
	}
	return nil, nil
}

func parseConfig(b []byte) (*loadedConfig, error) {
	var f configFile
	if err := json.Unmarshal(stripJSONComments(b), &f); err != nil {
		return nil, err
	}
	c := &loadedConfig{servers: map[string]serverEntry{}}
	for _, m := range []map[string]serverEntry{f.MCPServers, f.Servers} {
		for k, v := range m {
			c.servers[k] = v
		}
	}
	if f.MCP != nil {
		for k, v := range f.MCP.Servers {
			c.servers[k] = v
		}
	}
	if len(c.servers) == 0 {
		return nil, errors.New(`no servers: expected {"mcpServers": {"NAME": {...}}} (or VS Code's "servers")`)
	}
	return c, nil
}

// stripJSONComments removes // and /* */ comments outside strings and
// trailing commas (VS Code's files are JSON with comments).
func stripJSONComments(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			out = append(out, c)
			if c == '\\' && i+1 < len(b) {
				i++
				out = append(out, b[i])
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			out = append(out, c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/') {
				i++
			}
			i++
		default:
			out = append(out, c)
		}
	}
	return trailingCommas.ReplaceAll(out, []byte("$1"))
}

var trailingCommas = regexp.MustCompile(`,(\s*[}\]])`)

// varPattern matches ${NAME}, ${env:NAME} and ${NAME:-default}.
var varPattern = regexp.MustCompile(`\$\{(env:)?([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandVars replaces ${NAME}, ${env:NAME} (VS Code) and
// ${NAME:-default} with the environment's values; ${workspaceFolder}
// is the current directory. Anything else (${input:...}) is left as is.
func expandVars(s string) string {
	return varPattern.ReplaceAllStringFunc(s, func(m string) string {
		g := varPattern.FindStringSubmatch(m)
		if g[1] == "" && g[2] == "workspaceFolder" && g[3] == "" {
			if wd, err := os.Getwd(); err == nil {
				return wd
			}
		}
		v, ok := os.LookupEnv(g[2])
		if g[3] != "" && v == "" {
			return g[4]
		}
		if !ok {
			return "" // unset: empty, as in a shell
		}
		return v
	})
}

// resolved is a server entry turned into what connect needs.
type resolved struct {
	target  target
	env     []string
	unset   []string // env members set to null
	headers map[string]string
	sse     bool
}

// resolve turns the entry name into a target.
func (e serverEntry) resolve(name string) (*resolved, error) {
	kind := strings.ToLower(cmpOr(e.Type, e.Transport))
	u := expandVars(cmpOr(e.URL, e.ServerURL, e.HTTPURL))
	r := &resolved{}
	switch {
	case e.Command != "" && (kind == "" || kind == "stdio" || kind == "local"):
		r.target = target{Server: name, Command: []string{expandVars(e.Command)}, Dir: expandVars(e.Cwd)}
		for _, a := range e.Args {
			r.target.Command = append(r.target.Command, expandVars(a))
		}
		if e.EnvFile != "" {
			env, err := readEnvFile(expandVars(e.EnvFile))
			if err != nil {
				return nil, usagef("server %q: envFile: %v", name, err)
			}
			r.env = append(r.env, env...)
		}
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch v := e.Env[k].(type) {
			case nil:
				r.unset = append(r.unset, k)
			case string:
				r.env = append(r.env, k+"="+expandVars(v))
			default:
				b, _ := json.Marshal(v)
				r.env = append(r.env, k+"="+string(b))
			}
		}
	case u != "" && (kind == "" || kind == "http" || kind == "streamable-http" || kind == "streamablehttp" || kind == "sse" || kind == "remote"):
		fixed, _, ok := normalizeURL(u)
		if !ok {
			return nil, usagef("server %q: url %q is not an http(s) URL", name, u)
		}
		r.target = target{Server: name, URL: fixed}
		r.sse = kind == "sse" && e.HTTPURL == ""
		r.headers = map[string]string{}
		for k, v := range e.Headers {
			r.headers[k] = expandVars(v)
		}
	default:
		return nil, usagef("server %q: neither a command (stdio) nor a url (http, sse) of a type this client speaks (type %q)", name, e.Type)
	}
	return r, nil
}

func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// readEnvFile reads KEY=VALUE lines (# comments, optional quotes).
func readEnvFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var env []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			return nil, fmt.Errorf("line %q is not KEY=VALUE", line)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env = append(env, strings.TrimSpace(k)+"="+v)
	}
	return env, nil
}

// serverTarget resolves --server NAME from the config file.
func (o *options) serverTarget() (target, error) {
	if o.cfg == nil {
		cfg, err := loadConfig(o.config)
		if err != nil {
			return target{}, err
		}
		if cfg == nil {
			return target{}, usagef("--server %s: no config file (looked for %s; give --config FILE or $%s)", o.server, strings.Join(configCandidates(), ", "), envConfig)
		}
		o.cfg = cfg
	}
	e, ok := o.cfg.servers[o.server]
	if !ok {
		return target{}, withHint(usagef("%s has no server %q (it has: %s)", o.cfg.path, o.server, strings.Join(o.cfg.names(), ", ")),
			didYouMean(o.server, o.cfg.names()))
	}
	r, err := e.resolve(o.server)
	if err != nil {
		return target{}, err
	}
	o.resolved = r
	return r.target, nil
}

// addHeaders adds the config's headers and $ROUNDTRIP_TOKEN to the
// request headers; -H flags win over both.
func (s *session) addHeaders() {
	o := s.opts
	set := func(k, v string) {
		if o.headers.h == nil {
			o.headers.h = http.Header{}
		}
		if o.headers.h.Get(k) == "" {
			o.headers.h.Set(k, v)
		}
	}
	if o.resolved != nil {
		for k, v := range o.resolved.headers {
			set(k, v)
		}
	}
	if tok := os.Getenv(envToken); tok != "" && !o.oauth.enabled {
		set("Authorization", "Bearer "+tok)
	}
}

// lookup returns the entry name (c may be nil).
func (c *loadedConfig) lookup(name string) (serverEntry, bool) {
	if c == nil {
		return serverEntry{}, false
	}
	e, ok := c.servers[name]
	return e, ok
}
