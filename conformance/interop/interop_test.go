package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

func TestMain(m *testing.M) {
	if f := os.Getenv("INTEROP_RESUME_FILE"); f != "" {
		// The second process of TestResumeInAnotherProcess.
		if err := resumeFromFile(f, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "resume:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testutil.Run(m))
}

// serverBin is the everything-server binary, built once per test binary.
func serverBin(t testing.TB) string {
	t.Helper()
	return testutil.Build(t, "../everything-server")
}

// startHTTP starts the server with -http 127.0.0.1:0 and returns the URL
// its first stdout line announces. The process is killed at the end of
// the test.
func startHTTP(t testing.TB) string {
	t.Helper()
	_, url := testutil.Listen(t, serverBin(t), "-http", "127.0.0.1:0")
	return url
}

// httpClient is a client of a fresh HTTP server process.
func httpClient(t testing.TB, url string, opts *mcp.ClientOptions) *mcp.Client {
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// stdioClient starts the server with -stdio as a child process of the
// client.
func stdioClient(t testing.TB, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	tr, err := mcp.NewCommandTransport(exec.Command(serverBin(t), "-stdio"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(tr, opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// answers are the client's handlers, counting what they answer.
type answers struct {
	elicit, sample, roots atomic.Int32
}

func (a *answers) options(o *mcp.ClientOptions) *mcp.ClientOptions {
	if o == nil {
		o = &mcp.ClientOptions{}
	}
	o.Info = mcp.Implementation{Name: "interop-test", Version: "1"}
	o.Elicitation = a.elicitation
	//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
	o.Sampling = a.sampling
	//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
	o.Roots = a.listRoots
	return o
}

// formValues are the answers by field name.
var formValues = map[string]any{"name": "Ada", "color": "teal", "input": "typed", "context": "release notes", "ok": true}

func (a *answers) elicitation(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.elicit.Add(1)
	if mcp.InputRequestKey(ctx) == "" {
		return nil, errors.New("no input request key")
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	b, _ := json.Marshal(r.RequestedSchema)
	json.Unmarshal(b, &s)
	content := map[string]any{}
	for name := range s.Properties {
		v, ok := formValues[name]
		if !ok {
			return nil, fmt.Errorf("no answer for field %q of %q", name, r.Message)
		}
		content[name] = v
	}
	return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: content}, nil
}

func (a *answers) sampling(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	a.sample.Add(1)
	text := "model input"
	if t, ok := r.Messages[0].Content[0].(*mcp.TextContent); ok {
		switch {
		case strings.Contains(t.Text, "capital of France"):
			text = "Paris"
		case strings.Contains(t.Text, "greeting"):
			text = "Hi there"
		}
	}
	return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "interop", StopReason: "endTurn", Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

func (a *answers) listRoots(ctx context.Context, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	a.roots.Add(1)
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work", Name: "work"}}}, nil
}

// mrtrTools are the multi round-trip tools of the everything-server with
// the text each ends with, and how many questions of each kind the flow
// asks (elicitations, samplings, roots).
var mrtrTools = []struct {
	name, want string
	e, s, r    int32
}{
	{"test_input_required_result_elicitation", "Hello, Ada!", 1, 0, 0},
	{"test_input_required_result_sampling", "Sampling result: Paris", 0, 1, 0},
	{"test_input_required_result_list_roots", "Client roots: file:///work (work)", 0, 0, 1},
	{"test_input_required_result_request_state", "state-ok: requestState verified, ok=true", 1, 0, 0},
	{"test_input_required_result_multiple_inputs", "Received all inputs: name=Ada; greeting=Hi there; roots=file:///work (work)", 1, 1, 1},
	{"test_input_required_result_multi_round", "Hello, Ada! Your favorite color is teal.", 2, 0, 0},
	{"test_input_required_result_tampered_state", "requestState verified: integrity check passed", 1, 0, 0},
	{"test_input_required_result_capabilities", "Received input via elicitation: typed; sampling: model input", 1, 1, 0},
}

const mrtrPrompt = "test_input_required_result_prompt"

func text(t testing.TB, r *mcp.CallToolResult) string {
	t.Helper()
	if r.IsError || len(r.Content) != 1 {
		t.Fatalf("result %+v", r)
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", r.Content[0])
	}
	return tc.Text
}

// eachTransport runs fn against a server process over stdio and over
// HTTP, with a fresh client (and counters) each.
func eachTransport(t *testing.T, opts func(a *answers) *mcp.ClientOptions, fn func(t *testing.T, c *mcp.Client, a *answers)) {
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		a := &answers{}
		fn(t, stdioClient(t, opts(a)), a)
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		a := &answers{}
		fn(t, httpClient(t, startHTTP(t), opts(a)), a)
	})
}

func modern(a *answers) *mcp.ClientOptions { return a.options(nil) }

// Every multi round-trip tool and the prompt, answered automatically.
func TestEveryMultiRoundTripToolAndPrompt(t *testing.T) {
	eachTransport(t, modern, func(t *testing.T, c *mcp.Client, a *answers) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		listed := map[string]bool{}
		for tool, err := range c.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			listed[tool.Name] = true
		}
		for _, tc := range mrtrTools {
			if !listed[tc.name] {
				t.Errorf("%s is not listed", tc.name)
			}
			e, s, r := a.elicit.Load(), a.sample.Load(), a.roots.Load()
			res, err := c.CallTool(ctx, tc.name, nil, nil)
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			if got := text(t, res); got != tc.want {
				t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
			}
			if de, ds, dr := a.elicit.Load()-e, a.sample.Load()-s, a.roots.Load()-r; de != tc.e || ds != tc.s || dr != tc.r {
				t.Errorf("%s asked %d/%d/%d questions (elicitation/sampling/roots), want %d/%d/%d", tc.name, de, ds, dr, tc.e, tc.s, tc.r)
			}
		}
		p, err := c.GetPrompt(ctx, mrtrPrompt, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) != 1 || p.Messages[0].Content.(*mcp.TextContent).Text != "Prompt with user context: release notes" {
			t.Fatalf("prompt: %+v", p)
		}
		if v := c.ProtocolVersion(); v != mcp.LatestProtocolVersion {
			t.Fatalf("the probe chose %q", v)
		}
	})
}

// Manual control: each round comes back as a PendingCall, answered and
// resumed by hand; the state of each round differs.
func TestManualRoundsOfTheMultiRoundTool(t *testing.T) {
	eachTransport(t, modern, func(t *testing.T, c *mcp.Client, a *answers) {
		ctx := context.Background()
		manual := &mcp.CallOptions{Manual: true}
		_, err := c.CallTool(ctx, "test_input_required_result_multi_round", nil, manual)
		var pe *mcp.PendingCallError
		if !errors.As(err, &pe) || pe.Call.InputRequests["step1"] == nil || pe.Call.RequestState == "" {
			t.Fatalf("round 1: %v", err)
		}
		state1 := pe.Call.RequestState
		_, err = c.Resume(ctx, pe.Call, mcp.InputResponses{"step1": json.RawMessage(`{"action":"accept","content":{"name":"Bo"}}`)}, manual)
		if !errors.As(err, &pe) || pe.Call.InputRequests["step2"] == nil || pe.Call.RequestState == state1 {
			t.Fatalf("round 2: %v", err)
		}
		res, err := c.Resume(ctx, pe.Call, mcp.InputResponses{"step2": json.RawMessage(`{"action":"accept","content":{"color":"red"}}`)}, manual)
		if err != nil {
			t.Fatal(err)
		}
		if got := text(t, res.(*mcp.CallToolResult)); got != "Hello, Bo! Your favorite color is red." {
			t.Fatalf("got %q", got)
		}
		if a.elicit.Load() != 0 {
			t.Fatal("a handler ran in manual mode")
		}
	})
}

// A state modified on its way back is refused with -32602, and the
// handler never runs.
func TestTamperedStateIsRefused(t *testing.T) {
	eachTransport(t, modern, func(t *testing.T, c *mcp.Client, a *answers) {
		ctx := context.Background()
		_, err := c.CallTool(ctx, "test_input_required_result_tampered_state", nil, &mcp.CallOptions{Manual: true})
		var pe *mcp.PendingCallError
		if !errors.As(err, &pe) {
			t.Fatal(err)
		}
		pe.Call.RequestState += "-TAMPERED"
		_, err = c.Resume(ctx, pe.Call, mcp.InputResponses{"confirm": json.RawMessage(`{"action":"accept","content":{"ok":true}}`)}, nil)
		if mcp.ErrorCode(err) != mcp.CodeInvalidParams {
			t.Fatalf("got %v", err)
		}
	})
}

// The round limit: the (MaxRounds+1)-th input_required fails the call.
func TestRoundLimit(t *testing.T) {
	eachTransport(t, modern, func(t *testing.T, c *mcp.Client, a *answers) {
		ctx := context.Background()
		_, err := c.CallTool(ctx, "test_input_required_result_multi_round", nil, &mcp.CallOptions{MaxRounds: 1})
		var re *mcp.RoundsExceededError
		if !errors.As(err, &re) || !errors.As(err, new(*mcp.RoundsExceededError)) || re.MaxRounds != 1 || re.Target != "test_input_required_result_multi_round" {
			t.Fatalf("got %v", err)
		}
		// Two retries are enough.
		res, err := c.CallTool(ctx, "test_input_required_result_multi_round", nil, &mcp.CallOptions{MaxRounds: 2})
		if err != nil || text(t, res) != "Hello, Ada! Your favorite color is teal." {
			t.Fatalf("got %v %v", res, err)
		}
	})
}

// Parallel calls of every flow, and of a tool that asks nothing, on one
// client: nothing of one call reaches another.
func TestParallelCallsAreIsolated(t *testing.T) {
	eachTransport(t, modern, func(t *testing.T, c *mcp.Client, a *answers) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for i := range 5 {
			for _, tc := range mrtrTools {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := c.CallTool(ctx, tc.name, nil, nil)
					if err == nil && (res.IsError || res.Content[0].(*mcp.TextContent).Text != tc.want) {
						err = fmt.Errorf("%s #%d: %+v", tc.name, i, res.Content)
					}
					errs <- err
				}()
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				res, err := c.CallTool(ctx, "test_simple_text", nil, nil)
				if err == nil && res.Content[0].(*mcp.TextContent).Text != "This is a simple text response for testing." {
					err = fmt.Errorf("test_simple_text: %+v", res.Content)
				}
				errs <- err
			}()
			go func() {
				defer wg.Done()
				p, err := c.GetPrompt(ctx, mrtrPrompt, nil, nil)
				if err == nil && p.Messages[0].Content.(*mcp.TextContent).Text != "Prompt with user context: release notes" {
					err = fmt.Errorf("prompt: %+v", p.Messages)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}

// saved is what the first process hands to the second.
type saved struct {
	URL  string           `json:"url"`
	Call *mcp.PendingCall `json:"call"`
}

// A call stopped at its first round is saved to a file and finished by
// another OS process (this test binary, re-run), through the same
// server process.
func TestResumeInAnotherProcess(t *testing.T) {
	url := startHTTP(t)
	c := httpClient(t, url, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}})
	_, err := c.CallTool(context.Background(), "test_input_required_result_multi_round", nil, &mcp.CallOptions{Manual: true})
	var pe *mcp.PendingCallError
	if !errors.As(err, &pe) {
		t.Fatal(err)
	}
	b, err := json.Marshal(saved{URL: url, Call: pe.Call})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pending.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "INTEROP_RESUME_FILE="+file)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasSuffix(got, fmt.Sprintf("pid %d finished: Hello, Ada! Your favorite color is teal.", cmd.Process.Pid)) || cmd.Process.Pid == os.Getpid() {
		t.Fatalf("second process said %q", got)
	}
}

// resumeFromFile is the second process: it answers the saved round, and
// the next one with its handlers.
func resumeFromFile(file string, out io.Writer) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var s saved
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	a := &answers{}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(s.URL, nil), a.options(nil))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Resume(ctx, s.Call, mcp.InputResponses{"step1": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}, nil)
	if err != nil {
		return err
	}
	r := res.(*mcp.CallToolResult)
	fmt.Fprintf(out, "pid %d finished: %s\n", os.Getpid(), r.Content[0].(*mcp.TextContent).Text)
	return nil
}

// The same binary serves 2025-11-25: a legacy client's calls get the
// questions as live requests, answered by the same handlers.
func TestLegacySessionAgainstTheSameBinary(t *testing.T) {
	legacy := func(a *answers) *mcp.ClientOptions { return a.options(&mcp.ClientOptions{Mode: mcp.ModeLegacy}) }
	eachTransport(t, legacy, func(t *testing.T, c *mcp.Client, a *answers) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, tc := range mrtrTools {
			if tc.name == "test_input_required_result_elicitation" {
				continue // hand-built InputRequiredResult: modern only
			}
			e, s, r := a.elicit.Load(), a.sample.Load(), a.roots.Load()
			res, err := c.CallTool(ctx, tc.name, nil, nil)
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			if got := text(t, res); got != tc.want {
				t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
			}
			if de, ds, dr := a.elicit.Load()-e, a.sample.Load()-s, a.roots.Load()-r; de != tc.e || ds != tc.s || dr != tc.r {
				t.Errorf("%s asked %d/%d/%d live questions, want %d/%d/%d", tc.name, de, ds, dr, tc.e, tc.s, tc.r)
			}
		}
		p, err := c.GetPrompt(ctx, mrtrPrompt, nil, nil)
		if err != nil || p.Messages[0].Content.(*mcp.TextContent).Text != "Prompt with user context: release notes" {
			t.Fatalf("prompt: %+v %v", p, err)
		}
		if v := c.ProtocolVersion(); v != mcp.LegacyProtocolVersion {
			t.Fatalf("version %q", v)
		}
	})
}
