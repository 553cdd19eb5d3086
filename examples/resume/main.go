// Command resume shows a multi round-trip call that outlives the process
// that started it. One process calls a tool with manual control, gets the
// server's questions as a PendingCall and saves it to a file as JSON; it
// exits. Another process, later, loads the file, answers the questions and
// resumes the call to completion. The server never waits: everything it
// needs comes back with each leg (the sealed requestState).
//
//	go run ./examples/resume                       # all three roles, each its own OS process
//
// or by hand, in three terminals:
//
//	go run ./examples/resume serve                 # prints "listening on http://127.0.0.1:PORT/mcp"
//	go run ./examples/resume ask URL state.json    # starts the call, saves what the server asks
//	go run ./examples/resume answer state.json     # answers it and finishes the call
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("resume: ")
	if err := run(os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run dispatches on the role.
func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		return demo(self, out)
	}
	switch {
	case args[0] == "serve" && len(args) == 1:
		return serve(out)
	case args[0] == "ask" && len(args) == 3:
		return ask(args[1], args[2], out)
	case args[0] == "answer" && len(args) == 2:
		return answer(args[1], out)
	}
	return errors.New("usage: resume [serve | ask URL STATEFILE | answer STATEFILE]")
}

// ---- the server ----

// DeployArgs are the arguments of the deploy tool.
type DeployArgs struct {
	Service string `json:"service" jsonschema:"the service to deploy"`
}

// Target is the first form; Confirm the second, asked once the target is
// known.
type Target struct {
	Region   string `json:"region" mcp:"enum=eu-west-1|us-east-1|ap-south-1"`
	Replicas int    `json:"replicas" jsonschema:"how many instances"`
}

type Confirm struct {
	Go bool `json:"go" jsonschema:"deploy now"`
}

// deploy asks, in its first round, where to deploy and for a changelog
// line (two independent questions leave together), then, knowing the
// target, for a confirmation. The body runs again on every round and does
// nothing but ask until every answer is in.
func deploy(ctx context.Context, req *mcp.CallToolRequest, in DeployArgs) (*mcp.CallToolResult, error) {
	target, err1 := mcp.Elicit[Target](ctx, fmt.Sprintf("Where should %s run?", in.Service))
	//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
	note, err2 := mcp.Sample(ctx, &mcp.CreateMessageRequest{MaxTokens: 40, Messages: []mcp.SamplingMessage{{
		Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: "Write a one-line changelog entry for deploying " + in.Service + "."}}}}})
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	t, err := target.Value()
	if err != nil {
		return nil, err
	}
	ok, err := mcp.Elicit[Confirm](ctx, fmt.Sprintf("Deploy %s to %s with %d replicas?", in.Service, t.Region, t.Replicas))
	if err != nil {
		return nil, err
	}
	if c, err := ok.Value(); err != nil || !c.Go {
		return mcp.TextResult("Deployment of " + in.Service + " cancelled."), nil
	}
	text := "?"
	if len(note.Content) > 0 {
		if tc, ok := note.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return mcp.TextResult(fmt.Sprintf("Deployed %s to %s with %d replicas. Changelog: %s", in.Service, t.Region, t.Replicas, text)), nil
}

// serve runs the server on a loopback port until interrupted; the first
// line on out is "listening on URL".
func serve(out io.Writer) error {
	srv := mcp.NewServer(mcp.Implementation{Name: "deployer", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "deploy", Description: "Deploy a service. Asks where, for a changelog line, then for a go-ahead."}, deploy)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mcp.NewHTTPHandler(srv, nil),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(out, "listening on http://%s/mcp\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); hs.Close() }()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ---- the two client processes ----

// saved is what the first process leaves for the second.
type saved struct {
	URL     string           `json:"url"`
	AskedBy int              `json:"askedBy"` // the pid of the process that started the call
	Call    *mcp.PendingCall `json:"call"`
}

// ask starts the call with manual control and saves the pending call.
func ask(url, stateFile string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// This process answers nothing itself, yet declares what the answering
	// process will handle: the server asks only what the client can answer.
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)},
		Sampling:    &mcp.SamplingCapabilities{},
	}})
	defer c.Close()
	_, err := c.CallTool(ctx, "deploy", DeployArgs{Service: "checkout"}, &mcp.CallOptions{Manual: true})
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		return fmt.Errorf("expected the server to ask for input, got %v", err)
	}
	b, err := json.MarshalIndent(saved{URL: url, AskedBy: os.Getpid(), Call: pending.Call}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(stateFile, b, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "[ask pid %d] %s %q needs %d answers; saved to %s\n",
		os.Getpid(), pending.Call.Method, pending.Call.Name, len(pending.Call.InputRequests), stateFile)
	return nil
}

// answer loads the pending call, answers its questions and resumes it.
// Rounds after the first are answered by the same functions, as handlers.
func answer(stateFile string, out io.Writer) error {
	b, err := os.ReadFile(stateFile)
	if err != nil {
		return err
	}
	var s saved
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: %w", stateFile, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Fprintf(out, "[answer pid %d] resuming the call started by pid %d\n", os.Getpid(), s.AskedBy)

	u := &user{out: out}
	//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
	c := mcp.NewClient(mcp.NewHTTPClientTransport(s.URL, nil), &mcp.ClientOptions{Elicitation: u.elicit, Sampling: u.sample})
	defer c.Close()
	responses := mcp.InputResponses{}
	keys := make([]string, 0, len(s.Call.InputRequests))
	for k := range s.Call.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		var v any
		switch r := s.Call.InputRequests[key].(type) {
		case *mcp.ElicitRequest:
			v, err = u.elicit(ctx, r)
		case *mcp.CreateMessageRequest:
			v, err = u.sample(ctx, r)
		default:
			err = fmt.Errorf("cannot answer a %s request", r.InputMethod())
		}
		if err != nil {
			return err
		}
		if responses[key], err = json.Marshal(v); err != nil {
			return err
		}
	}
	res, err := c.Resume(ctx, s.Call, responses, nil)
	if err != nil {
		return err
	}
	for _, content := range res.(*mcp.CallToolResult).Content {
		if t, ok := content.(*mcp.TextContent); ok {
			fmt.Fprintf(out, "[answer pid %d] result: %s\n", os.Getpid(), t.Text)
		}
	}
	return nil
}

// user stands for the person (and the model) answering: it prints each
// question and picks an answer.
type user struct{ out io.Writer }

func (u *user) elicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	fmt.Fprintf(u.out, "  Q: %s\n", r.Message)
	var content map[string]any
	switch {
	case strings.HasPrefix(r.Message, "Where"):
		content = map[string]any{"region": "eu-west-1", "replicas": 3}
	case strings.HasPrefix(r.Message, "Deploy"):
		content = map[string]any{"go": true}
	default:
		return &mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
	}
	b, _ := json.Marshal(content)
	fmt.Fprintf(u.out, "  A: %s\n", b)
	return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: content}, nil
}

func (u *user) sample(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if len(r.Messages) > 0 && len(r.Messages[0].Content) > 0 {
		if t, ok := r.Messages[0].Content[0].(*mcp.TextContent); ok {
			fmt.Fprintf(u.out, "  Q (model): %s\n", t.Text)
		}
	}
	text := "Faster checkout, fewer retries."
	fmt.Fprintf(u.out, "  A (model): %s\n", text)
	return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "example-model", StopReason: "endTurn",
		Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

// ---- all three, as separate processes ----

// demo starts self as the server, then as the asking process, then as
// the answering process, each its own OS process, and stops the server.
func demo(self string, out io.Writer) error {
	srv := exec.Command(self, "serve")
	srv.Stderr = os.Stderr
	stdout, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			srv.Process.Kill()
			<-done
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		return fmt.Errorf("the server did not say where it listens: %q %v", line, err)
	}
	fmt.Fprintf(out, "[server pid %d] listening on %s\n", srv.Process.Pid, url)

	dir, err := os.MkdirTemp("", "resume-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "state.json")
	for _, args := range [][]string{{"ask", url, state}, {"answer", state}} {
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		if args[0] == "ask" {
			b, _ := os.ReadFile(state)
			fmt.Fprintf(out, "--- %s ---\n%s\n---\n", filepath.Base(state), b)
		}
	}
	return nil
}
