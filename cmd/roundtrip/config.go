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
// "projectVariables", read from the user's own config only, names the
// environment variables a project file's ${VAR} may expand to.
type configFile struct {
	MCPServers map[string]serverEntry `json:"mcpServers"`
	Servers    map[string]serverEntry `json:"servers"`
	MCP        *struct {
		Servers map[string]serverEntry `json:"servers"`
	} `json:"mcp"`
	ProjectVariables []string `json:"projectVariables"`
}

// loadedConfig is the servers of the config files read: the user's own
// (--config, $ROUNDTRIP_CONFIG, or roundtrip/config.json in the user
// configuration directory) and a project's ./.mcp.json, merged with the
// user's own winning.
type loadedConfig struct {
	path    string // the files read, for messages
	servers map[string]serverEntry
	origin  map[string]origin
	// projectVars are the variables a project file may expand (the
	// user's own config's "projectVariables").
	projectVars []string
}

// origin is where a server definition came from.
type origin struct {
	path    string
	project bool // a project file (./.mcp.json): not the user's own
}

func (o origin) String() string {
	if o.project {
		return o.path + " (a project file)"
	}
	return o.path
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

// projectConfig is the project file: ./.mcp.json in the current
// directory (Claude Code's project servers). It is not the user's own:
// its servers never shadow the user's, its ${VAR}s expand only to the
// variables the user's own config names, and a command it defines runs
// only when the user agrees (consent.go).
const projectConfig = ".mcp.json"

// userConfig is the user's own config file: roundtrip/config.json in the
// user configuration directory ($XDG_CONFIG_HOME or ~/.config on Linux);
// "" when there is no such directory.
func userConfig() string {
	if dir, err := os.UserConfigDir(); err == nil {
		return filepath.Join(dir, "roundtrip", "config.json")
	}
	return ""
}

// configCandidates are the files read, merged, when neither --config nor
// $ROUNDTRIP_CONFIG is given: the user's own, then ./.mcp.json.
func configCandidates() []string {
	var c []string
	if u := userConfig(); u != "" {
		c = append(c, u)
	}
	return append(c, projectConfig)
}

// loadConfig reads the config: explicit (--config or $ROUNDTRIP_CONFIG;
// it must exist, and it is the user's own), or else the user's own file
// and the project's ./.mcp.json, merged with the user's own servers
// winning (nil, nil when neither exists).
func loadConfig(explicit string) (*loadedConfig, error) {
	if explicit == "" {
		explicit = os.Getenv(envConfig)
	}
	c := &loadedConfig{servers: map[string]serverEntry{}, origin: map[string]origin{}}
	var read []string
	add := func(p string, project, mustExist bool) error {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) && !mustExist {
			return nil
		}
		if err != nil {
			return usagef("config: %v", err)
		}
		f, err := parseConfigFile(b)
		if err != nil {
			return usagef("config %s: %v", p, err)
		}
		servers := f.servers()
		if !project {
			c.projectVars = f.ProjectVariables
		}
		if len(servers) == 0 && (project || len(f.ProjectVariables) == 0) {
			return usagef("config %s: %v", p, errNoServers)
		}
		read = append(read, p)
		for k, v := range servers {
			if _, mine := c.servers[k]; mine {
				continue // the user's own definition wins
			}
			c.servers[k], c.origin[k] = v, origin{path: p, project: project}
		}
		return nil
	}
	if explicit != "" {
		if err := add(explicit, false, true); err != nil {
			return nil, err
		}
	} else {
		if u := userConfig(); u != "" {
			if err := add(u, false, false); err != nil {
				return nil, err
			}
		}
		if err := add(projectConfig, true, false); err != nil {
			return nil, err
		}
	}
	if len(read) == 0 {
		return nil, nil
	}
	c.path = strings.Join(read, " and ")
	return c, nil
}

var errNoServers = errors.New(`no servers: expected {"mcpServers": {"NAME": {...}}} (or VS Code's "servers")`)

func parseConfigFile(b []byte) (*configFile, error) {
	var f configFile
	if err := json.Unmarshal(stripJSONComments(b), &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// servers merges the file's three server maps.
func (f *configFile) servers() map[string]serverEntry {
	if f == nil {
		return nil
	}
	m := map[string]serverEntry{}
	for _, s := range []map[string]serverEntry{f.MCPServers, f.Servers} {
		for k, v := range s {
			m[k] = v
		}
	}
	if f.MCP != nil {
		for k, v := range f.MCP.Servers {
			m[k] = v
		}
	}
	return m
}

func parseConfig(b []byte) (*loadedConfig, error) {
	f, err := parseConfigFile(b)
	if err != nil {
		return nil, err
	}
	c := &loadedConfig{servers: f.servers()}
	if len(c.servers) == 0 {
		return nil, errNoServers
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

// expander expands ${NAME}, ${env:NAME} (VS Code) and ${NAME:-default}
// with the environment's values; ${workspaceFolder} is the current
// directory. Anything else (${input:...}) is left as is. In a project
// file (project set) only the variables the user's own config names in
// "projectVariables" expand: any other is left as it is and recorded in
// refused, and resolve refuses the server.
type expander struct {
	project bool
	allowed []string
	refused []string
}

func (x *expander) expand(s string) string {
	return varPattern.ReplaceAllStringFunc(s, func(m string) string {
		g := varPattern.FindStringSubmatch(m)
		if g[1] == "" && g[2] == "workspaceFolder" && g[3] == "" {
			if wd, err := os.Getwd(); err == nil {
				return wd
			}
		}
		if x != nil && x.project && !slices.Contains(x.allowed, g[2]) {
			if !slices.Contains(x.refused, g[2]) {
				x.refused = append(x.refused, g[2])
			}
			return m
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
	origin  origin // the file that defined it
}

// resolve turns the entry name into a target, expanding every variable
// (the user's own config).
func (e serverEntry) resolve(name string) (*resolved, error) { return e.resolveWith(name, nil) }

// resolveWith is resolve with the variables x allows (nil: all).
func (e serverEntry) resolveWith(name string, x *expander) (*resolved, error) {
	expandVars := x.expand
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
		if x != nil && len(x.refused) > 0 {
			break // refused below, before the URL is looked at
		}
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
	if x != nil && len(x.refused) > 0 {
		vars := make([]string, len(x.refused))
		for i, v := range x.refused {
			vars[i] = "${" + v + "}"
		}
		return nil, usagef("server %q comes from a project file, whose variables are not expanded: it uses %s; define the server in your own config (%s), or name the variables there: {\"projectVariables\": [\"%s\"]}",
			name, strings.Join(vars, ", "), cmpOr(userConfig(), "roundtrip/config.json in the user config directory"), strings.Join(x.refused, `", "`))
	}
	return r, nil
}

// resolve resolves the server name of the config, with the variables its
// file may expand.
func (c *loadedConfig) resolve(name string) (*resolved, error) {
	e := c.servers[name]
	var x *expander
	o := c.origin[name]
	if o.project {
		x = &expander{project: true, allowed: c.projectVars}
	}
	r, err := e.resolveWith(name, x)
	if err != nil {
		return nil, err
	}
	r.origin = o
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
	if _, ok := o.cfg.servers[o.server]; !ok {
		return target{}, withHint(usagef("%s has no server %q (it has: %s)", o.cfg.path, o.server, strings.Join(o.cfg.names(), ", ")),
			didYouMean(o.server, o.cfg.names()))
	}
	r, err := o.cfg.resolve(o.server)
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
	// $ROUNDTRIP_TOKEN is the user's: it never goes to a server a project
	// file names.
	if tok := os.Getenv(envToken); tok != "" && !o.oauth.enabled && (o.resolved == nil || !o.resolved.origin.project) {
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

// commandFrom names the project file that defined the stdio server the
// flags chose, "" when the user's own config (or the command line) did.
func (o *options) commandFrom() string {
	if o.resolved == nil || !o.resolved.origin.project || len(o.resolved.target.Command) == 0 || o.url != "" || o.cmdLine != "" || len(o.command) > 0 {
		return ""
	}
	return fmt.Sprintf("server %q of the project file %s", o.server, o.resolved.origin.path)
}
