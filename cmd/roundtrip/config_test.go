package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// tokenServer serves testServer to requests with Authorization: Bearer
// token only (401 otherwise).
func tokenServer(t *testing.T, token string) string {
	t.Helper()
	srv := testServer()
	h := mcp.NewHTTPHandler(srv, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A config file written for another MCP client (Claude Desktop's
// mcpServers: command, args, env, cwd; a remote server with type, url
// and headers holding ${VAR}; an SSE server) works unchanged: by name
// before the command, by --server, and listed by "servers".
func TestMCPServersConfigWorksUnchanged(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	work := t.TempDir()
	remote := tokenServer(t, "s3cret")
	sse := sseServer(t)
	t.Setenv("TEST_MCP_TOKEN", "s3cret")
	cfg := writeFile(t, filepath.Join(dir, "claude_desktop_config.json"), `{
  "mcpServers": {
    "local": {
      "command": `+jsonString(self)+`,
      "args": ["serve-stdio"],
      "env": {"GREETING": "hello from config"},
      "cwd": `+jsonString(work)+`
    },
    "remote": {
      "type": "http",
      "url": `+jsonString(remote)+`,
      "headers": {"Authorization": "Bearer ${TEST_MCP_TOKEN}"}
    },
    "old": {"type": "sse", "url": `+jsonString(sse)+`},
    "cursor-style": {"url": `+jsonString(remote)+`, "headers": {"Authorization": "Bearer ${env:TEST_MCP_TOKEN}"}},
    "header-lines": {"url": `+jsonString(remote)+`, "headers": ["Authorization: Bearer s3cret"]},
    "unset": {"command": `+jsonString(self)+`, "args": ["serve-stdio"], "env": {"TEST_MCP_TOKEN": null, "N": 7}}
  }
}`)
	r := cli(t, "", "--config", cfg, "local", "call", "env", "name=GREETING")
	r.must(t, 0, "GREETING=hello from config in "+work)
	// -e overrides the config's env; --cwd its directory.
	other := t.TempDir()
	cli(t, "", "--config", cfg, "local", "call", "env", "name=GREETING", "-e", "GREETING=overridden", "--cwd", other).
		must(t, 0, "GREETING=overridden in "+other)
	cli(t, "", "--config", cfg, "--server", "remote", "tools").must(t, 0, "echo")
	cli(t, "", "--config", cfg, "cursor-style", "call", "echo", "text=hi").must(t, 0, "hi")
	cli(t, "", "--config", cfg, "old", "discover").must(t, 0, "2025-11-25")
	cli(t, "", "--config", cfg, "header-lines", "tools").must(t, 0, "echo")
	// null unsets an inherited variable; a number is its text.
	cli(t, "", "--config", cfg, "unset", "call", "env", "name=TEST_MCP_TOKEN").must(t, 0, "TEST_MCP_TOKEN= in")
	cli(t, "", "--config", cfg, "unset", "call", "env", "name=N").must(t, 0, "N=7 in")
	r = cli(t, "", "--config", cfg, "servers")
	r.must(t, 0, "local  stdio "+self+" serve-stdio", "remote  http "+remote, "old  sse "+sse)
	// $ROUNDTRIP_CONFIG names the file.
	t.Setenv(envConfig, cfg)
	cli(t, "", "remote", "call", "add", "a=1", "b=2").must(t, 0, `"sum":3`)
	// A mistyped name is a usage error with a suggestion.
	r = cli(t, "", "--server", "remot", "tools")
	r.must(t, exitUsage)
	if !strings.Contains(r.stderr, `did you mean "remote"?`) {
		t.Errorf("stderr lacks the suggestion")
	}
	r = cli(t, "", "remot", "tools")
	r.must(t, exitUsage)
	if !strings.Contains(r.stderr, `did you mean "remote"?`) {
		t.Errorf("stderr lacks the suggestion for a positional name")
	}
}

// VS Code's mcp.json ("servers", JSON with comments and trailing
// commas, ${env:VAR}) is read as it is.
func TestVSCodeServersConfigWorksUnchanged(t *testing.T) {
	remote := tokenServer(t, "vs")
	t.Setenv("TEST_VS_TOKEN", "vs")
	cfg := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), `{
  // VS Code's format
  "inputs": [],
  "servers": {
    "api": {
      "type": "http",
      "url": `+jsonString(remote)+`, /* the endpoint */
      "headers": {"Authorization": "Bearer ${env:TEST_VS_TOKEN}"},
    },
  },
}`)
	cli(t, "", "--config", cfg, "api", "tools").must(t, 0, "echo")
}

// Without --config the CLI reads ./.mcp.json; $ROUNDTRIP_URL and
// $ROUNDTRIP_TOKEN stand in for --url and -H 'Authorization: Bearer'.
func TestDefaultConfigAndEnvironment(t *testing.T) {
	remote := tokenServer(t, "tok")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"here":{"type":"streamable-http","url":`+jsonString(remote)+`,"headers":{"Authorization":"Bearer tok"}}}}`)
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cli(t, "", "here", "tools").must(t, 0, "echo")
	t.Setenv(envServer, "here")
	cli(t, "", "tools").must(t, 0, "echo")
	t.Setenv(envServer, "")

	t.Setenv(envURL, remote)
	cli(t, "", "tools").must(t, exitAuth)
	t.Setenv(envToken, "tok")
	cli(t, "", "tools").must(t, 0, "echo")
	// -H wins over $ROUNDTRIP_TOKEN.
	cli(t, "", "tools", "-H", "Authorization: Bearer wrong").must(t, exitAuth)
	// -e and --cwd are for stdio servers.
	cli(t, "", "tools", "-e", "A=1").must(t, exitUsage)
}

// A call saved against a named server is resumed against it by name:
// its headers come from the config again (they are never saved).
func TestResumeOfANamedServerReadsTheConfigAgain(t *testing.T) {
	remote := tokenServer(t, "tok")
	cfg := writeFile(t, filepath.Join(t.TempDir(), "c.json"), `{"mcpServers":{"r":{"url":`+jsonString(remote)+`,"headers":{"Authorization":"Bearer tok"}}}}`)
	file := filepath.Join(t.TempDir(), "p.json")
	cli(t, "", "--config", cfg, "r", "call", "--save", file, "provision", "name=db").must(t, 0)
	b, _ := os.ReadFile(file)
	if strings.Contains(string(b), "tok") {
		t.Errorf("the saved file holds the header: %s", b)
	}
	cli(t, "1\n7\n", "--config", cfg, "resume", file).must(t, 0, "Provisioned db in eu-west-1 with 7 GB.")
}

// Reading a config file never panics, whatever it holds; what it
// accepts has at least one server.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers":{"a":{"command":"x","args":["y"],"env":{"K":"V","N":1,"U":null},"cwd":"/"}}}`,
		`{"servers":{"b":{"type":"http","url":"http://h/mcp","headers":{"A":"b"}}},"inputs":[]}`,
		`{"mcp":{"servers":{"c":{"type":"sse","url":"h:1/sse","headers":["A: b"]}}}}`,
		"{\n // c\n \"servers\": {\"d\": {\"url\": \"http://x\", /* y */},},\n}",
		`{"mcpServers":{"e":{"url":"${A:-http://x}"}}}`,
		`"/*`, `{"a":"\"//"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig(b)
		if err != nil {
			return
		}
		if len(c.servers) == 0 {
			t.Fatalf("accepted a file with no servers: %q", b)
		}
		for name, e := range c.servers {
			e.resolve(name) // an error is fine; a panic is not
		}
	})
}
