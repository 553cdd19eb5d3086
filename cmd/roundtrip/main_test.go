package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// TestMain doubles as a stdio MCP server: "serve-stdio" as the first
// argument serves testServer on stdin and stdout.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "run-cli" {
		os.Exit(mainWith(os.Args[2:])) // the program itself, signals and all
	}
	if len(os.Args) > 1 && os.Args[1] == "serve-hostile-stdio" {
		serveHostileStdio()
	}
	if len(os.Args) > 1 && os.Args[1] == "serve-stdio" {
		srv := testServer()
		// env: what a stdio server sees of its environment and directory.
		mcp.AddTypedTool(srv, &mcp.Tool{Name: "env", Description: "An environment variable and the working directory."},
			func(ctx context.Context, _ *mcp.CallToolRequest, in NameArgs) (*mcp.CallToolResult, error) {
				wd, _ := os.Getwd()
				return mcp.TextResult(fmt.Sprintf("%s=%s in %s", in.Name, os.Getenv(in.Name), wd)), nil
			})
		if err := srv.ServeStdio(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(runTests(m))
}

// runTests runs the tests with a user configuration directory of their
// own, so that what the CLI keeps there by default (tool pins, pin.go)
// never reaches the real one (on Linux).
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "roundtrip-test-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_CONFIG_HOME", dir) // os.UserConfigDir on Linux
	return m.Run()
}

type EchoArgs struct {
	Text string `json:"text" jsonschema:"what to say"`
	N    int    `json:"n,omitempty" jsonschema:"how many times"`
}

type AddArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

type Sum struct {
	Sum int `json:"sum"`
}

type NameArgs struct {
	Name string `json:"name"`
}

type Region struct {
	Region string `json:"region" mcp:"enum=eu-west-1|us-east-1|ap-south-1"`
}

type Size struct {
	GB int `json:"gb" jsonschema:"storage in GB"`
}

type Target struct {
	Region   string `json:"region" mcp:"enum=eu-west-1|us-east-1"`
	Replicas int    `json:"replicas"`
}

type Confirm struct {
	Go bool `json:"go"`
}

type Tone struct {
	Tone string `json:"tone" mcp:"enum=warm|formal"`
}

type Password struct {
	Password string `json:"password"`
}

// formSchema exercises defaults, a titled enum, ranges and booleans.
const formSchema = `{"type":"object","properties":{
 "name":{"type":"string","title":"Your name","minLength":2},
 "color":{"type":"string","oneOf":[{"const":"red","title":"Red"},{"const":"green","title":"Green"},{"const":"blue","title":"Blue"}]},
 "count":{"type":"integer","minimum":1,"maximum":10,"default":3},
 "notify":{"type":"boolean","default":true},
 "note":{"type":"string"}
},"required":["name","color","count"]}`

// testServer is a dual-era server whose tools, prompt and resource
// template ask questions.
func testServer() *mcp.Server { return testServerWith(testServerOptions()) }

func testServerOptions() *mcp.ServerOptions {
	return &mcp.ServerOptions{Instructions: "A test server.", PageSize: 2}
}

// testServerWith is testServer with opts.
func testServerWith(opts *mcp.ServerOptions) *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "testsrv", Version: "1.2.3"}, opts)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "echo", Description: "Repeat text."}, func(ctx context.Context, _ *mcp.CallToolRequest, in EchoArgs) (*mcp.CallToolResult, error) {
		n := max(in.N, 1)
		return mcp.TextResult(strings.TrimSpace(strings.Repeat(in.Text+" ", n))), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "add", Description: "Add two integers."}, func(ctx context.Context, _ *mcp.CallToolRequest, in AddArgs) (Sum, error) {
		return Sum{Sum: in.A + in.B}, nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "slow", Description: "Takes 5 s."}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		return mcp.TextResult("done"), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "fail", Description: "Always fails."}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.ErrorResult("it broke"), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision", Description: "Asks a region, then a size."}, func(ctx context.Context, _ *mcp.CallToolRequest, in NameArgs) (*mcp.CallToolResult, error) {
		region, err := mcp.Elicit[Region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		r, err := region.Value()
		if err != nil {
			return nil, err
		}
		size, err := mcp.Elicit[Size](ctx, fmt.Sprintf("How many GB for %s in %s?", in.Name, r.Region))
		if err != nil {
			return nil, err
		}
		s, err := size.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(fmt.Sprintf("Provisioned %s in %s with %d GB.", in.Name, r.Region, s.GB)), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "form", Description: "Asks a form with defaults."}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		r, err := mcp.ElicitForm(ctx, "Tell me about you.", json.RawMessage(formSchema))
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(r.Content)
		return mcp.TextResult(fmt.Sprintf("%s %s", r.Action, b)), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "login", Description: "URL elicitation."}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		a, err := mcp.ElicitURL(ctx, "Sign in, please.", "https://auth.example.test/login?x=1")
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("action: " + string(a)), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "changelog", Description: "Sampling."}, func(ctx context.Context, _ *mcp.CallToolRequest, in NameArgs) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		res, err := mcp.Sample(ctx, &mcp.CreateMessageRequest{MaxTokens: 40, SystemPrompt: "Be brief.", Messages: []mcp.SamplingMessage{{
			Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: "Write a changelog line for " + in.Name + "."}}}}})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(fmt.Sprintf("model %s said: %s", res.Model, contentText(res.Content[0]))), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "roots", Description: "Lists the client's roots."}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
		roots, err := mcp.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		var uris []string
		for _, r := range roots {
			uris = append(uris, r.URI+"|"+r.Name)
		}
		return mcp.TextResult("roots: " + strings.Join(uris, " ")), nil
	})
	// deploy asks two questions in its first round and one more in the
	// second: the save/resume flow.
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "deploy", Description: "Multi-round deployment."}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Service string `json:"service"`
	}) (*mcp.CallToolResult, error) {
		target, err1 := mcp.Elicit[Target](ctx, "Where should "+in.Service+" run?", mcp.WithKey("a_target"))
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		note, err2 := mcp.Sample(ctx, &mcp.CreateMessageRequest{MaxTokens: 40, Messages: []mcp.SamplingMessage{{
			Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: "Changelog for " + in.Service + "?"}}}}}, mcp.WithKey("b_note"))
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		t, err := target.Value()
		if err != nil {
			return nil, err
		}
		ok, err := mcp.Elicit[Confirm](ctx, fmt.Sprintf("Deploy %s to %s with %d replicas?", in.Service, t.Region, t.Replicas), mcp.WithKey("c_confirm"))
		if err != nil {
			return nil, err
		}
		if c, err := ok.Value(); err != nil || !c.Go {
			return mcp.TextResult("Deployment cancelled."), nil
		}
		return mcp.TextResult(fmt.Sprintf("Deployed %s to %s x%d. Changelog: %s", in.Service, t.Region, t.Replicas, contentText(note.Content[0]))), nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "A greeting.", Arguments: []mcp.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, r *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
			tone, err := mcp.Elicit[Tone](ctx, "Which tone?")
			if err != nil {
				return nil, err
			}
			t, err := tone.Value()
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser,
				Content: &mcp.TextContent{Text: fmt.Sprintf("Greet %s in a %s tone.", r.Arguments["name"], t.Tone)}}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "test://readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, MIMEType: "text/plain", Text: "Read me first."}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://secret/{name}", Name: "secret"},
		func(ctx context.Context, r *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
			pw, err := mcp.Elicit[Password](ctx, "Password for "+r.Var("name")+"?")
			if err != nil {
				return nil, err
			}
			p, err := pw.Value()
			if err != nil {
				return nil, err
			}
			if p.Password != "sesame" {
				return nil, mcp.NewError(-32602, "wrong password", nil)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, Text: "the secret of " + r.Var("name")}}}, nil
		})
	return srv
}

type result struct {
	stdout, stderr string
	code           int
}

// cli runs the CLI with stdin and args.
func cli(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errw testutil.Buffer
	code := run(ctx, args, strings.NewReader(stdin), &out, &errw)
	r := result{out.String(), errw.String(), code}
	t.Logf("roundtrip %s → %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, r.stdout, r.stderr)
	return r
}

func (r result) must(t *testing.T, code int, stdoutHas ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d", r.code, code)
	}
	for _, s := range stdoutHas {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q", s)
		}
	}
}

// httpServer serves testServer on loopback and returns its URL.
func httpServer(t *testing.T) (string, *mcp.Server) {
	t.Helper()
	srv := testServer()
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL, srv
}

func TestDiscover(t *testing.T) {
	url, _ := httpServer(t)
	r := cli(t, "", "discover", "--url", url)
	r.must(t, 0, "testsrv 1.2.3", "2026-07-28 (2026-07-28 era", "2026-07-28, 2025-11-25", "tools", "prompts", "resources", "A test server.")

	r = cli(t, "", "--url", url, "discover", "--json")
	r.must(t, 0)
	var d struct {
		ServerInfo        mcp.Implementation `json:"serverInfo"`
		ProtocolVersion   string             `json:"protocolVersion"`
		Era               string             `json:"era"`
		SupportedVersions []string           `json:"supportedVersions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("--json output is not JSON: %v", err)
	}
	if d.ServerInfo.Name != "testsrv" || d.ProtocolVersion != mcp.LatestProtocolVersion || d.Era != "modern" ||
		len(d.SupportedVersions) < 2 || d.SupportedVersions[0] != mcp.LatestProtocolVersion || !slices.Contains(d.SupportedVersions, mcp.LegacyProtocolVersion) {
		t.Errorf("discover --json = %+v", d)
	}
}

func TestLists(t *testing.T) {
	url, _ := httpServer(t)
	// PageSize is 2: ten tools take five pages.
	r := cli(t, "", "tools", "--url", url)
	r.must(t, 0, "add", "changelog", "deploy", "echo", "fail", "form", "login", "provision", "roots", "slow",
		"text (string, required): what to say", "n (integer)")

	r = cli(t, "", "tools", "--url", url, "--json")
	r.must(t, 0)
	var tools struct {
		Tools []*mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil {
		t.Fatalf("tools --json is not JSON: %v", err)
	}
	if len(tools.Tools) != 10 {
		t.Errorf("tools --json lists %d tools, want 10", len(tools.Tools))
	}

	cli(t, "", "prompts", "--url", url).must(t, 0, "greet", "name (string, required)")
	cli(t, "", "resources", "--url", url).must(t, 0, "test://readme  readme  text/plain")
	cli(t, "", "templates", "--url", url).must(t, 0, "test://secret/{name}  secret")
}

func TestCallArguments(t *testing.T) {
	url, _ := httpServer(t)
	// One JSON object.
	r := cli(t, "", "call", "--url", url, "add", `{"a":2,"b":40}`)
	r.must(t, 0, `"sum":42`)
	// KEY=VALUE, with a flag after the arguments.
	cli(t, "", "call", "--url", url, "echo", "text=hi", "n=3").must(t, 0, "hi hi hi")
	// The schema says text is a string: 123 stays a string.
	cli(t, "", "call", "echo", "text=123", "--url", url).must(t, 0, "123")
	// Checked against the schema before calling.
	r = cli(t, "", "call", "--url", url, "echo", "text=hi", "n=many")
	r.must(t, 2)
	if !strings.Contains(r.stderr, `argument "n" must be integer`) {
		t.Errorf("stderr lacks the type error")
	}
	r = cli(t, "", "call", "--url", url, "echo", "n=2")
	r.must(t, 2)
	if !strings.Contains(r.stderr, `missing required argument "text"`) {
		t.Errorf("stderr lacks the required error")
	}
	r = cli(t, "", "call", "--url", url, "nosuch")
	r.must(t, 2)
	if !strings.Contains(r.stderr, `no tool "nosuch"`) {
		t.Errorf("stderr lacks the unknown tool error")
	}
	// --no-validate lets the server judge: its isError result.
	r = cli(t, "", "call", "--url", url, "--no-validate", "echo", "n=many")
	r.must(t, exitToolError)
	// --json prints the result object.
	r = cli(t, "", "call", "--url", url, "--json", "echo", "text=yo")
	r.must(t, 0)
	var res struct {
		Content []struct{ Type, Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Content) != 1 || res.Content[0].Text != "yo" {
		t.Errorf("call --json = %q (%v)", r.stdout, err)
	}
}

func TestToolIsError(t *testing.T) {
	url, _ := httpServer(t)
	r := cli(t, "", "call", "--url", url, "fail")
	r.must(t, exitToolError, "it broke")
	r = cli(t, "", "call", "--url", url, "--json", "fail")
	r.must(t, exitToolError, `"isError": true`)
}

func TestFormElicitation(t *testing.T) {
	url, _ := httpServer(t)
	// name: empty (required: asked again), "A" (too short), "Ada";
	// color: "2" (Green); count: "42" (out of range), "x", then empty
	// (default 3); notify: empty (default yes); note: empty (left out).
	stdin := "\nA\nAda\n2\n42\nx\n\n\n\n"
	r := cli(t, stdin, "call", "--url", url, "form")
	r.must(t, 0, `accept {"color":"green","count":3,"name":"Ada","notify":true}`)
	for _, s := range []string{"Tell me about you.", "a value is required", "must be at least 2 characters",
		"must be 1 to 10", `"x" is not a whole number`, "2) Green (green)", "count [3]:", "notify (y/n) [yes]:"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q", s)
		}
	}
	// Choices by title, booleans typed.
	r = cli(t, "Bob\nblue\n7\nn\nhello\n", "call", "--url", url, "form")
	r.must(t, 0, `accept {"color":"blue","count":7,"name":"Bob","note":"hello","notify":false}`)
	// An invalid choice is asked again.
	r = cli(t, "Bob\npurple\n1\n\n\n\n", "call", "--url", url, "form")
	r.must(t, 0, `"color":"red"`)
	if !strings.Contains(r.stderr, `"purple" is not one of the choices`) {
		t.Errorf("stderr lacks the invalid choice")
	}
	// Cancel at any field.
	cli(t, "Bob\n!cancel\n", "call", "--url", url, "form").must(t, 0, "cancel")
}

func TestMultiRoundAndDecline(t *testing.T) {
	url, _ := httpServer(t)
	r := cli(t, "us-east-1\n20\n", "call", "--url", url, "provision", "name=orders")
	r.must(t, 0, "Provisioned orders in us-east-1 with 20 GB.")
	if !strings.Contains(r.stderr, "How many GB for orders in us-east-1?") {
		t.Errorf("the second round was not asked")
	}
	// The terminal shows each question's text, not the key mcp.Elicit
	// derived from it.
	if !strings.Contains(r.stderr, "[server asks] Which region?\n") {
		t.Errorf("the question is not shown as its text alone")
	}
	// Declining is the tool's business: here an isError result.
	r = cli(t, "!decline\n", "call", "--url", url, "provision", "name=orders")
	r.must(t, exitToolError, "declined")
	// End of input cancels.
	r = cli(t, "", "call", "--url", url, "provision", "name=orders")
	r.must(t, exitToolError, "cancelled")
}

func TestURLElicitation(t *testing.T) {
	url, _ := httpServer(t)
	r := cli(t, "maybe\ny\n", "call", "--url", url, "login")
	r.must(t, 0, "action: accept")
	if !strings.Contains(r.stderr, "https://auth.example.test/login?x=1") || !strings.Contains(r.stderr, "please answer y, n or c") {
		t.Errorf("stderr lacks the URL or the re-ask")
	}
	cli(t, "n\n", "call", "--url", url, "login").must(t, 0, "action: decline")
}

func TestSampling(t *testing.T) {
	url, _ := httpServer(t)
	r := cli(t, "Faster checkout.\n\n", "call", "--url", url, "--model", "typist", "changelog", "name=checkout")
	r.must(t, 0, "model typist said: Faster checkout.")
	for _, s := range []string{"system: Be brief.", "user: Write a changelog line for checkout.", "at most 40 tokens"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q", s)
		}
	}
	// Refusing ends the call (2026-07-28 has no error answer).
	r = cli(t, "!decline\n", "call", "--url", url, "changelog", "name=checkout")
	r.must(t, exitFailure)
	if !strings.Contains(r.stderr, "refused") {
		t.Errorf("stderr lacks the refusal")
	}
}

func TestRoots(t *testing.T) {
	url, _ := httpServer(t)
	dir := t.TempDir()
	r := cli(t, "", "call", "--url", url, "--root", dir, "--root", "file:///srv/data", "roots")
	r.must(t, 0, "roots: file://"+filepath.ToSlash(dir)+"|"+filepath.Base(dir), "file:///srv/data|data")
	// Without --root the capability is not declared: the server refuses.
	r = cli(t, "", "call", "--url", url, "roots")
	if r.code == 0 {
		t.Errorf("roots without --root succeeded")
	}
	cli(t, "", "call", "--url", url, "--root", "http://x/y", "roots").must(t, exitUsage)
}

func TestPromptAndResource(t *testing.T) {
	url, _ := httpServer(t)
	cli(t, "2\n", "get", "--url", url, "greet", "name=Ada").must(t, 0, "[user] Greet Ada in a formal tone.")
	cli(t, "", "read", "--url", url, "test://readme").must(t, 0, "Read me first.")
	cli(t, "sesame\n", "read", "--url", url, "test://secret/door").must(t, 0, "the secret of door")
	r := cli(t, "nope\n", "read", "--url", url, "test://secret/door")
	r.must(t, exitProtocol)
	if !strings.Contains(r.stderr, "wrong password") {
		t.Errorf("stderr lacks the server's error")
	}
	r = cli(t, "sesame\n", "read", "--url", url, "--json", "test://secret/door")
	r.must(t, 0)
	var res mcp.ReadResourceResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "the secret of door" {
		t.Errorf("read --json = %q (%v)", r.stdout, err)
	}
}

func TestSaveAndResume(t *testing.T) {
	url, _ := httpServer(t)
	file := filepath.Join(t.TempDir(), "pending.json")
	r := cli(t, "", "call", "--url", url, "--save", file, "deploy", "service=checkout")
	r.must(t, 0)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Format string `json:"format"`
		Target target `json:"target"`
		Call   struct {
			Method        string                     `json:"method"`
			Name          string                     `json:"name"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"call"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatalf("saved file: %v", err)
	}
	if saved.Format != savedFormat || saved.Target.URL != url || saved.Call.Method != "tools/call" || saved.Call.Name != "deploy" ||
		len(saved.Call.InputRequests) != 2 || saved.Call.RequestState == "" {
		t.Fatalf("saved = %+v", saved)
	}
	// Another invocation answers round one (form, then the sampling
	// request, in key order) and round two (the confirmation).
	stdin := "2\n3\nShip it.\n\ny\n"
	r = cli(t, stdin, "resume", file)
	r.must(t, 0, "Deployed checkout to us-east-1 x3. Changelog: Ship it.")
	if !strings.Contains(r.stderr, "Deploy checkout to us-east-1 with 3 replicas?") {
		t.Errorf("the second round was not asked")
	}
	// --save against the legacy era is refused up front.
	cli(t, "", "call", "--url", url, "--legacy", "--save", file, "deploy", "service=x").must(t, exitUsage)
	// A call that asks nothing writes nothing.
	other := filepath.Join(t.TempDir(), "none.json")
	cli(t, "", "call", "--url", url, "--save", other, "echo", "text=x").must(t, 0, "x")
	if _, err := os.Stat(other); err == nil {
		t.Errorf("--save wrote a file for a call that asked nothing")
	}
}

func TestLegacyEra(t *testing.T) {
	url, _ := httpServer(t)
	cli(t, "", "discover", "--url", url, "--legacy").must(t, 0, "2025-11-25 (2025 era", "testsrv")
	// Live elicitations of a session, answered in the terminal.
	r := cli(t, "1\n15\n", "--legacy", "call", "--url", url, "provision", "name=orders")
	r.must(t, 0, "Provisioned orders in eu-west-1 with 15 GB.")
	cli(t, "Short.\n\n", "call", "--url", url, "--protocol-version", "2025-11-25", "changelog", "name=x").must(t, 0, "model human said: Short.")
	cli(t, "", "call", "--url", url, "--legacy", "fail").must(t, exitToolError, "it broke")
	cli(t, "", "tools", "--url", url, "--legacy").must(t, 0, "provision", "roots")
	r = cli(t, "", "listen", "--url", url, "--legacy")
	r.must(t, exitFailure)
	if !strings.Contains(r.stderr, "2026-07-28 era") {
		t.Errorf("stderr does not explain listen needs the modern era")
	}
	cli(t, "", "tools", "--url", url, "--protocol-version", "1999-01-01").must(t, exitProtocol)
}

func TestStdio(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cli(t, "", "tools", "--", self, "serve-stdio").must(t, 0, "provision", "echo")
	r := cli(t, "ap-south-1\n5\n", "call", "provision", "name=logs", "--", self, "serve-stdio")
	r.must(t, 0, "Provisioned logs in ap-south-1 with 5 GB.")
	cli(t, "", "--cmd", fmt.Sprintf("'%s' serve-stdio", self), "discover").must(t, 0, "testsrv", "2026-07-28")
	cli(t, "", "--legacy", "call", "echo", "text=old", "--", self, "serve-stdio").must(t, 0, "old")
}

func TestListen(t *testing.T) {
	url, srv := httpServer(t)
	var out, errw testutil.Buffer
	done := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		done <- run(ctx, []string{"listen", "--url", url, "--max", "1"}, strings.NewReader(""), &out, &errw)
	}()
	testutil.Eventually(t, 10*time.Second, "the acknowledgement", func() bool { return strings.Contains(errw.String(), "listening") })
	srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return mcp.TextResult("late"), nil
		})
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("listen exited %d; stderr: %s", code, errw.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("listen did not stop after one notification")
	}
	if !strings.Contains(out.String(), mcp.NotificationToolListChanged) {
		t.Errorf("stdout = %q", out.String())
	}
}

func TestHeaders(t *testing.T) {
	srv := testServer()
	var mu sync.Mutex
	var seen []string
	h := mcp.NewHTTPHandler(srv, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	cli(t, "", "tools", "--url", hs.URL, "-H", "Authorization: Bearer s3cret").must(t, 0, "echo")
	r := cli(t, "", "tools", "--url", hs.URL)
	r.must(t, exitAuth)
	if !strings.Contains(r.stderr, "401") {
		t.Errorf("stderr lacks the status")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] != "Bearer s3cret" {
		t.Errorf("Authorization headers seen: %q", seen)
	}
	cli(t, "", "tools", "--url", hs.URL, "-H", "no colon").must(t, exitUsage)
}

func TestUsage(t *testing.T) {
	cli(t, "", "--help").must(t, 0, "Commands:", "resume", "listen")
	cli(t, "", "call", "--help").must(t, 0, "Usage: roundtrip [NAME] call", "-save FILE", "KEY=VALUE")
	cli(t, "", "help", "listen").must(t, 0, "-resource URI")
	cli(t, "", "tools").must(t, exitUsage)
	cli(t, "", "frobnicate").must(t, exitUsage)
	cli(t, "", "call", "--url", "http://127.0.0.1:1/mcp").must(t, exitUsage)
	cli(t, "", "tools", "--url", "ftp://x").must(t, exitUsage)
	cli(t, "", "tools", "--url", "http://127.0.0.1:1/mcp", "--cmd", "x").must(t, exitUsage)
	cli(t, "", "resume", filepath.Join(t.TempDir(), "missing.json")).must(t, exitFailure)
	// A connection failure is status 3.
	cli(t, "", "tools", "--url", "http://127.0.0.1:1/mcp", "--timeout", "2s").must(t, exitConnection)
}

func TestTimeout(t *testing.T) {
	url, _ := httpServer(t)
	r := cli(t, "", "call", "--url", url, "--timeout", "200ms", "slow")
	r.must(t, exitConnection)
	if !strings.Contains(r.stderr, "no answer from the server within 200ms") {
		t.Errorf("stderr lacks the timeout")
	}
	// On a 2025-11-25 session the questions come inside the request: the
	// time spent answering does not count against --timeout.
	pr, pw := io.Pipe()
	go func() {
		time.Sleep(600 * time.Millisecond)
		io.WriteString(pw, "2\n")
		time.Sleep(600 * time.Millisecond)
		io.WriteString(pw, "8\n")
		pw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errw testutil.Buffer
	code := run(ctx, []string{"call", "--legacy", "--url", url, "--timeout", "300ms", "provision", "name=db"}, pr, &out, &errw)
	if code != 0 || !strings.Contains(out.String(), "Provisioned db in us-east-1 with 8 GB.") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errw.String())
	}
}

// A state the server refuses (here: a server restarted with a new
// per-process key) tells the user the call must start again.
func TestRejectedStateSaysTheCallMustStartAgain(t *testing.T) {
	url, _ := httpServer(t)
	file := filepath.Join(t.TempDir(), "pending.json")
	cli(t, "", "call", "--url", url, "--save", file, "provision", "name=db").must(t, 0)
	other, _ := httpServer(t) // another process key: the saved state is foreign to it
	r := cli(t, "1\n", "resume", "--url", other, file)
	if r.code == 0 || !strings.Contains(r.stderr, "start the call again") {
		t.Fatalf("exit %d, stderr %q: want the advice to start again", r.code, r.stderr)
	}
}

// A saved call older than a server keeps a round's state is refused
// before the user is asked anything.
func TestStaleSavedCallIsRefusedBeforeAsking(t *testing.T) {
	url, _ := httpServer(t)
	file := filepath.Join(t.TempDir(), "pending.json")
	cli(t, "", "call", "--url", url, "--save", file, "provision", "name=db").must(t, 0)
	b, _ := os.ReadFile(file)
	var saved map[string]any
	json.Unmarshal(b, &saved)
	saved["savedAt"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	b, _ = json.Marshal(saved)
	os.WriteFile(file, b, 0o600)
	r := cli(t, "1\n", "resume", file)
	if r.code == 0 || !strings.Contains(r.stderr, "start the call again") || strings.Contains(r.stderr, "Which region?") {
		t.Fatalf("exit %d, stderr %q: want a refusal before the question", r.code, r.stderr)
	}
}

// sseServer serves testServer over HTTP+SSE only, at /sse (a POST to
// /sse without a session is refused, as such servers refuse it), and
// returns the stream's URL.
func sseServer(t *testing.T) string {
	t.Helper()
	srv := testServer()
	mux := http.NewServeMux()
	mux.Handle("/sse", mcp.NewSSEHandler(srv, nil))
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL + "/sse"
}

// Against a server that speaks only HTTP+SSE (2024-11-05), the CLI falls
// back from Streamable HTTP by itself, or speaks it at once with --sse:
// discover, lists, and a call whose live elicitations are answered in
// the terminal.
func TestHTTPSSEOnlyServer(t *testing.T) {
	url := sseServer(t)
	cli(t, "", "discover", "--url", url).must(t, 0, "testsrv 1.2.3", "2025-11-25 (2025 era: initialize handshake and a session)")
	cli(t, "", "discover", "--url", url, "--sse").must(t, 0, "testsrv 1.2.3")
	cli(t, "", "tools", "--url", url).must(t, 0, "provision", "roots")
	r := cli(t, "1\n15\n", "call", "--url", url, "provision", "name=orders")
	r.must(t, 0, "Provisioned orders in eu-west-1 with 15 GB.")
	cli(t, "Short.\n\n", "call", "--sse", "--url", url, "changelog", "name=x").must(t, 0, "model human said: Short.")
	cli(t, "", "call", "--url", url, "fail").must(t, exitToolError, "it broke")
	if r := cli(t, "", "call", "--url", url, "--sse", "--save", filepath.Join(t.TempDir(), "p.json"), "provision", "name=x"); r.code != exitUsage {
		t.Errorf("--save with --sse: exit %d, want %d", r.code, exitUsage)
	}
	if r := cli(t, "", "tools", "--sse", "--cmd", "true"); r.code != exitUsage {
		t.Errorf("--sse with a stdio server: exit %d, want %d", r.code, exitUsage)
	}
}

// A result of a 2025-11-25 session carries no cache hints (ttlMs and
// cacheScope are 2026-07-28's): read --json prints none, where a
// 2026-07-28 session's result prints the server's.
func TestLegacyResultsPrintNoCacheHints(t *testing.T) {
	url, _ := httpServer(t)
	r := cli(t, "", "read", "--url", url, "--legacy", "--json", "test://readme")
	r.must(t, 0, `"text": "Read me first."`)
	if strings.Contains(r.stdout, "ttlMs") || strings.Contains(r.stdout, "cacheScope") {
		t.Errorf("a 2025-11-25 result printed cache hints:\n%s", r.stdout)
	}
	cli(t, "", "read", "--url", url, "--json", "test://readme").must(t, 0, `"ttlMs": `, `"cacheScope": "private"`)
}
