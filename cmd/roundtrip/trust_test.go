package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// cliTTY is cli as if stdin and stderr were a terminal (the CLI may ask).
func cliTTY(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errw testutil.Buffer
	code := runWith(ctx, args, strings.NewReader(stdin), &out, &errw, true)
	r := result{out.String(), errw.String(), code}
	t.Logf("roundtrip %s (terminal) → %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, r.stdout, r.stderr)
	return r
}

// project makes a directory holding .mcp.json (the project file) and an
// empty user config directory, and works in it.
func project(t *testing.T, mcpJSON string) (dir string) {
	t.Helper()
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, ".mcp.json"), mcpJSON)
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(envConfig, "")
	t.Setenv(envServer, "")
	t.Setenv(envURL, "")
	t.Setenv(envToken, "")
	return dir
}

// userFile writes the user's own config (roundtrip/config.json in
// $XDG_CONFIG_HOME).
func userFile(t *testing.T, content string) string {
	t.Helper()
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "roundtrip")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, filepath.Join(dir, "config.json"), content)
}

// markerCommand is a server entry whose command leaves a file behind.
func markerCommand(marker string) string {
	return `{"command":"sh","args":["-c",` + jsonString("echo ran > "+marker) + `]}`
}

func ran(marker string) bool { _, err := os.Stat(marker); return err == nil }

// A ./.mcp.json that defines a command does not run it unasked: by name,
// by $ROUNDTRIP_SERVER, by --server; not on a terminal it is refused
// (exit 2, saying how to allow it); on a terminal the CLI shows the
// command and its file and asks; --allow-command runs it.
func TestAProjectFileDoesNotRunACommandUnasked(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	project(t, `{"mcpServers":{"work":`+markerCommand(marker)+`,"ok":{"command":`+jsonString(self)+`,"args":["serve-stdio"]}}}`)

	r := cli(t, "", "work", "tools")
	r.must(t, exitUsage)
	if ran(marker) {
		t.Fatal("the project file's command ran")
	}
	if !strings.Contains(r.stderr, "--allow-command") || !strings.Contains(r.stderr, ".mcp.json") || !strings.Contains(r.stderr, "sh -c 'echo ran > ") {
		t.Errorf("the refusal does not show the command, its file and the flag")
	}
	t.Setenv(envServer, "work")
	cli(t, "", "tools").must(t, exitUsage)
	t.Setenv(envServer, "")
	cli(t, "", "--server", "work", "tools").must(t, exitUsage)
	// On a terminal it asks; no (or no answer) refuses.
	r = cliTTY(t, "n\n", "--plain", "work", "tools")
	r.must(t, exitUsage)
	if !strings.Contains(r.stderr, "run it? [y/N]") {
		t.Errorf("the CLI did not ask")
	}
	cliTTY(t, "", "--plain", "work", "tools").must(t, exitUsage)
	if ran(marker) {
		t.Fatal("the project file's command ran after a no")
	}
	cliTTY(t, "y\n", "--plain", "work", "tools")
	if !ran(marker) {
		t.Error("yes did not run the command")
	}
	// --allow-command runs it without asking.
	cli(t, "", "ok", "tools", "--allow-command").must(t, 0, "echo")
	// The command line is the user's own: it runs unasked.
	cli(t, "", "tools", "--", self, "serve-stdio").must(t, 0, "echo")
}

// The user's own config and the project file are merged, the user's own
// definitions winning; "servers" says where each came from.
func TestTheUsersOwnConfigWins(t *testing.T) {
	remote, _ := httpServer(t)
	marker := filepath.Join(t.TempDir(), "ran")
	project(t, `{"mcpServers":{"work":`+markerCommand(marker)+`,"extra":{"url":`+jsonString(remote)+`}}}`)
	user := userFile(t, `{"mcpServers":{"work":{"url":`+jsonString(remote)+`}}}`)

	cli(t, "", "work", "tools").must(t, 0, "echo")
	if ran(marker) {
		t.Fatal("the project file's definition replaced the user's own")
	}
	cli(t, "", "extra", "tools").must(t, 0, "echo") // the project's other servers are there too
	r := cli(t, "", "servers")
	r.must(t, 0, "work  http "+remote+"  ["+user+"]", "extra  http "+remote+"  [.mcp.json, a project file")
	r = cli(t, "", "servers", "--json")
	var v struct {
		Servers []struct {
			Name, Source string
			Project      bool
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	for _, s := range v.Servers {
		if want := s.Name == "extra"; s.Project != want || (s.Name == "work" && s.Source != user) {
			t.Errorf("servers --json: %+v", s)
		}
	}
}

// A project file's ${VAR} is not expanded unless the user's own config
// names VAR in "projectVariables": the server is refused and nothing is
// sent. $ROUNDTRIP_TOKEN never goes to a server a project file names.
func TestProjectFilesExpandNoVariables(t *testing.T) {
	remote := tokenServer(t, "hunter2")
	project(t, `{"mcpServers":{
 "leak":{"url":`+jsonString(remote)+`,"headers":{"Authorization":"Bearer ${RT_SECRET}"}},
 "inurl":{"url":"http://127.0.0.1:1/${RT_SECRET}"},
 "plain":{"url":`+jsonString(remote)+`}}}`)
	t.Setenv("RT_SECRET", "hunter2")
	r := cli(t, "", "leak", "tools")
	r.must(t, exitUsage)
	if !strings.Contains(r.stderr, "${RT_SECRET}") || !strings.Contains(r.stderr, "projectVariables") {
		t.Errorf("the refusal does not name the variable and how to allow it")
	}
	r = cli(t, "", "servers")
	if strings.Contains(r.stdout+r.stderr, "hunter2") {
		t.Errorf("servers shows the variable's value")
	}
	cli(t, "", "inurl", "tools").must(t, exitUsage)
	t.Setenv(envToken, "hunter2")
	cli(t, "", "plain", "tools").must(t, exitAuth)
	cli(t, "", "--url", remote, "tools").must(t, 0, "echo") // the user's own URL gets it
	t.Setenv(envToken, "")
	// The user's own config allows the variable by name.
	userFile(t, `{"projectVariables":["RT_SECRET"]}`)
	cli(t, "", "leak", "tools").must(t, 0, "echo")
}

// "roundtrip resume FILE" does not run the command a saved call names
// unless the user agrees (--allow-command off a terminal).
func TestResumeAsksBeforeRunningTheSavedCommand(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	project(t, `{"mcpServers":{"x":{"url":"http://127.0.0.1:1/mcp"}}}`)
	file := writeFile(t, filepath.Join(t.TempDir(), "p.json"), `{"format":"`+savedFormat+`","target":{"command":["sh","-c",`+jsonString("echo ran > "+marker)+`]},
 "savedAt":`+jsonString(time.Now().UTC().Format(time.RFC3339))+`,"call":{"method":"tools/call","name":"x","requestState":"s"}}`)
	r := cli(t, "", "resume", file)
	r.must(t, exitUsage)
	if ran(marker) {
		t.Fatal("resume ran the saved command")
	}
	if !strings.Contains(r.stderr, "the saved call "+file) || !strings.Contains(r.stderr, "--allow-command") {
		t.Errorf("the refusal does not name the file and the flag")
	}
	cliTTY(t, "n\n", "resume", "--plain", file).must(t, exitUsage)
	if ran(marker) {
		t.Fatal("resume ran the saved command after a no")
	}
	cli(t, "", "resume", file, "--allow-command")
	if !ran(marker) {
		t.Error("--allow-command did not run it")
	}
}

// A server that answers -32042 (URL elicitation required, 2025-11-25)
// gets its URL shown with what to do, not a protocol error.
func TestURLElicitationShowsTheURL(t *testing.T) {
	url := serverWith(t, func(s *mcp.Server) {
		mcp.AddTypedTool(s, &mcp.Tool{Name: "needs-url"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			return nil, mcp.NewError(codeURLElicitationRequired, "URL elicitation required", map[string]any{"elicitations": []any{
				map[string]any{"mode": "url", "message": "Connect your account.", "url": "https://auth.example.test/connect?s=1", "elicitationId": "e1"}}})
		})
	})
	for _, era := range []string{"--legacy", "--protocol-version=2026-07-28"} {
		r := cli(t, "", "call", "--url", url, era, "needs-url")
		r.must(t, exitFailure)
		for _, want := range []string{"https://auth.example.test/connect?s=1", "Connect your account.", "open the URL in a browser", "run the same command again"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: stderr lacks %q", era, want)
			}
		}
		r = cli(t, "", "call", "--url", url, era, "needs-url", "--json")
		f := decodeOnlyJSONError(t, r.stdout)
		if f.Error.Code != "url_required" || f.Error.Exit != exitFailure || !strings.Contains(r.stdout, `"urls":["https://auth.example.test/connect?s=1"]`) {
			t.Errorf("%s --json: %s", era, r.stdout)
		}
	}
}

// "get" checks the prompt's required arguments against prompts/list
// before it calls: a missing one is a usage error and no prompts/get is
// sent.
func TestGetChecksRequiredArgumentsBeforeCalling(t *testing.T) {
	var calls atomic.Int64
	url := serverWith(t, func(s *mcp.Server) {
		s.AddPrompt(&mcp.Prompt{Name: "needs", Arguments: []mcp.PromptArgument{{Name: "who", Required: true}, {Name: "opt"}}},
			func(ctx context.Context, r *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
				calls.Add(1)
				return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: "hi " + r.Arguments["who"]}}}}, nil
			})
	})
	r := cli(t, "", "get", "--url", url, "needs", "opt=1")
	r.must(t, exitUsage)
	if !strings.Contains(r.stderr, `"who"`) || calls.Load() != 0 {
		t.Errorf("missing argument: stderr %q, %d calls", r.stderr, calls.Load())
	}
	cli(t, "", "get", "--url", url, "nope").must(t, exitUsage)
	cli(t, "", "get", "--url", url, "needs", "who=you").must(t, 0, "hi you")
	// --no-validate leaves the check to the server.
	cli(t, "", "get", "--url", url, "needs", "--no-validate").must(t, exitProtocol)
	if calls.Load() != 1 {
		t.Errorf("%d prompts/get calls reached the handler, want 1", calls.Load())
	}
}

// Flags may come between a server's name and the command, as the usage
// line "roundtrip [flags] [NAME] COMMAND [flags]" has it.
func TestFlagsAfterTheServerNameAreAccepted(t *testing.T) {
	t.Parallel()
	remote, _ := httpServer(t)
	cfg := writeFile(t, filepath.Join(t.TempDir(), "c.json"), `{"mcpServers":{"r":{"url":`+jsonString(remote)+`}}}`)
	r := cli(t, "", "--config", cfg, "r", "--json", "--timeout", "5s", "tools")
	r.must(t, 0, `"tools": [`)
	cli(t, "", "--config", cfg, "r", "--nosuchflag", "tools").must(t, exitUsage)
}

// A resumed call keeps the --root flags it was started with: a round
// that asks for the roots gets them without --root being given again.
func TestAResumedCallKeepsItsRoots(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "p.json")
	cli(t, "", "call", "--url", url, "--root", dir, "--save", file, "roots").must(t, 0)
	uri, _, err := rootURI(dir)
	if err != nil {
		t.Fatal(err)
	}
	cli(t, "", "resume", file).must(t, 0, "roots: "+uri+"|"+filepath.Base(dir))
}

// A connection error names the method once ("mcp: tools/list: ...", not
// "tools/list: mcp: tools/list: ..."). (read is left out: the library
// sends a refused call leg again for about 20 s, ClientOptions.LegRetries.)
func TestConnectionErrorsNameTheMethodOnce(t *testing.T) {
	t.Parallel()
	url := "http://" + closedPort(t) + "/mcp"
	for _, c := range []struct {
		method string
		args   []string
	}{
		{"server/discover", []string{"discover"}},
		{"tools/list", []string{"tools"}},
		{"prompts/list", []string{"prompts"}},
		{"resources/list", []string{"resources"}},
		{"resources/templates/list", []string{"templates"}},
		{"tools/list", []string{"call", "echo"}},
		{"prompts/list", []string{"get", "greet"}},
	} {
		r := cli(t, "", append(c.args, "--url", url)...)
		r.must(t, exitConnection)
		if n := strings.Count(r.stderr, c.method+":"); n != 1 {
			t.Errorf("%s: the error names %s %d times: %q", c.args[0], c.method, n, r.stderr)
		}
	}
}
