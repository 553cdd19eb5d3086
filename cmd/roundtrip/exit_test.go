package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// jsonError is the object --json prints for a failure.
type jsonError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Exit    int    `json:"exit"`
		Hint    string `json:"hint"`
		RPC     *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"rpc"`
	} `json:"error"`
}

// decodeOnlyJSONError checks that stdout holds one JSON error object
// and nothing else.
func decodeOnlyJSONError(t *testing.T, stdout string) jsonError {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var e jsonError
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	if rest, _ := io_ReadAll(dec); strings.TrimSpace(rest) != "" {
		t.Fatalf("stdout holds more than the JSON error: %q", rest)
	}
	if e.Error.Code == "" || e.Error.Message == "" || e.Error.Exit == 0 {
		t.Fatalf("JSON error lacks code, message or exit: %s", stdout)
	}
	return e
}

func io_ReadAll(dec *json.Decoder) (string, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(dec.Buffered())
	return b.String(), err
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// mcpAtPath serves testServer at /mcp only (404 elsewhere).
func mcpAtPath(t *testing.T) string {
	t.Helper()
	srv := testServer()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, nil))
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL
}

// Every class of failure has its exit status, and with --json its
// JSON error object on stdout (and nothing else there): a down server,
// a 404, a 401, a JSON-RPC error, a tool error, a rejected state, a
// usage error.
func TestExitCodesAndJSONErrors(t *testing.T) {
	url, _ := httpServer(t)
	base := mcpAtPath(t)
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "go away", http.StatusUnauthorized)
	}))
	t.Cleanup(denied.Close)
	tlsSrv := httptest.NewTLSServer(mcp.NewHTTPHandler(testServer(), nil)) // a certificate nobody trusts
	t.Cleanup(tlsSrv.Close)
	file := filepath.Join(t.TempDir(), "pending.json")
	cli(t, "", "call", "--url", url, "--save", file, "provision", "name=db").must(t, 0)
	other, _ := httpServer(t) // another per-process key: the saved state is foreign to it

	cases := []struct {
		name     string
		stdin    string
		args     []string
		exit     int
		code     string
		rpcCode  int    // 0: no rpc member
		has      string // in the message or the hint
		hintHas  string
		textHint string // in stderr without --json
	}{
		{name: "down server", args: []string{"tools", "--url", "http://" + closedPort(t) + "/mcp"}, exit: exitConnection, code: "connection", has: "connection refused"},
		{name: "404 without /mcp", args: []string{"tools", "--url", base}, exit: exitConnection, code: "connection", has: "404",
			hintHas: "did you mean " + base + "/mcp?"},
		{name: "404 elsewhere", args: []string{"tools", "--url", base + "/nope"}, exit: exitConnection, code: "connection", has: "404"},
		{name: "untrusted TLS certificate", args: []string{"tools", "--url", tlsSrv.URL}, exit: exitConnection, code: "connection", has: "certificate"},
		{name: "stdio server that does not exist", args: []string{"tools", "--", filepath.Join(t.TempDir(), "no-such-server")}, exit: exitConnection, code: "connection", has: "no-such-server"},
		{name: "401", args: []string{"tools", "--url", denied.URL}, exit: exitAuth, code: "auth", has: "401"},
		{name: "JSON-RPC error", stdin: "nope\n", args: []string{"read", "--url", url, "test://secret/door"}, exit: exitProtocol, code: "protocol",
			rpcCode: -32602, has: "wrong password"},
		{name: "tool error", args: []string{"call", "--url", url, "fail"}, exit: exitToolError, code: "tool", has: "isError"},
		{name: "rejected state", stdin: "1\n", args: []string{"resume", "--url", other, file}, exit: exitStateRejected, code: "state_rejected",
			rpcCode: -32602, has: "start the call again"},
		{name: "unknown command", args: []string{"tols", "--url", url}, exit: exitUsage, code: "usage", has: `unknown command "tols"`, hintHas: `did you mean "tools"?`},
		{name: "unknown tool", args: []string{"call", "--url", url, "eco"}, exit: exitUsage, code: "usage", has: `no tool "eco"`, hintHas: `did you mean "echo"?`},
		{name: "unknown flag", args: []string{"tools", "--url", url, "--jsno"}, exit: exitUsage, code: "usage", hintHas: "did you mean --json?"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, c.stdin, c.args...)
			if r.code != c.exit {
				t.Errorf("exit status %d, want %d", r.code, c.exit)
			}
			if c.hintHas != "" && !strings.Contains(r.stderr, c.hintHas) {
				t.Errorf("stderr lacks the hint %q", c.hintHas)
			}
			if c.exit == exitToolError {
				return // the result itself is printed as JSON: TestToolErrorIsJSONResult
			}
			r = cli(t, c.stdin, append([]string{"--json"}, c.args...)...)
			if r.code != c.exit {
				t.Errorf("--json: exit status %d, want %d", r.code, c.exit)
			}
			e := decodeOnlyJSONError(t, r.stdout)
			if e.Error.Code != c.code || e.Error.Exit != c.exit {
				t.Errorf("error code %q exit %d, want %q %d", e.Error.Code, e.Error.Exit, c.code, c.exit)
			}
			if !strings.Contains(e.Error.Message+" "+e.Error.Hint, c.has) {
				t.Errorf("message %q lacks %q", e.Error.Message, c.has)
			}
			if c.hintHas != "" && !strings.Contains(e.Error.Hint, c.hintHas) {
				t.Errorf("hint %q lacks %q", e.Error.Hint, c.hintHas)
			}
			switch {
			case c.rpcCode == 0 && e.Error.RPC != nil:
				t.Errorf("rpc member %+v on an error the server did not answer", e.Error.RPC)
			case c.rpcCode != 0 && (e.Error.RPC == nil || e.Error.RPC.Code != c.rpcCode):
				t.Errorf("rpc member %+v, want code %d", e.Error.RPC, c.rpcCode)
			}
		})
	}
}

// With --json a tool's isError result is the result object on stdout
// (the server's own answer), and the exit status is still 6.
func TestToolErrorIsJSONResult(t *testing.T) {
	url, _ := httpServer(t)
	r := cli(t, "", "call", "--url", url, "--json", "fail")
	r.must(t, exitToolError)
	var res struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || !res.IsError {
		t.Fatalf("stdout = %q (%v), want the isError result", r.stdout, err)
	}
}

// A URL without a scheme is taken as http://, and said so.
func TestMissingSchemeAssumesHTTP(t *testing.T) {
	url, _ := httpServer(t)
	bare := strings.TrimPrefix(url, "http://")
	r := cli(t, "", "tools", "--url", bare)
	r.must(t, 0, "echo")
	if !strings.Contains(r.stderr, "assuming "+url) {
		t.Errorf("stderr does not say http:// was assumed")
	}
}

// hangingServer is testServer with a tool "hang" that blocks until the
// request ends, closing started when it begins.
func hangingServer(t *testing.T) (string, chan struct{}) {
	t.Helper()
	srv := testServer()
	started := make(chan struct{}, 1)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "hang"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL, started
}

// SIGINT (Ctrl-C) cancels the call and the program exits 130; with
// --json the interruption is a JSON error on stdout.
func TestInterruptExits130(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	url, started := hangingServer(t)
	for _, jsonFlag := range []bool{false, true} {
		args := []string{"run-cli", "call", "--url", url, "--no-validate", "hang"}
		if jsonFlag {
			args = append(args, "--json")
		}
		cmd := exec.Command(self, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("the call never reached the server; stderr: %s", errb.String())
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Fatal("the program did not stop after SIGINT")
		}
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
			t.Fatalf("exit status %d, want %d; stderr: %s", code, exitInterrupted, errb.String())
		}
		if jsonFlag {
			if e := decodeOnlyJSONError(t, out.String()); e.Error.Code != "interrupted" || e.Error.Exit != exitInterrupted {
				t.Errorf("JSON error = %+v", e.Error)
			}
		} else if !strings.Contains(errb.String(), "interrupted") {
			t.Errorf("stderr = %q, want interrupted", errb.String())
		}
	}
}

// Each class of error, however wrapped, maps to its exit status and
// code.
func TestClassifyMapsEachErrorClassToItsExitStatus(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("tools/list: %w", err) }
	cases := []struct {
		err  error
		exit int
		code string
	}{
		{&net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, exitConnection, "connection"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, exitConnection, "connection"},
		{x509.UnknownAuthorityError{}, exitConnection, "connection"},
		{&mcp.HTTPStatusError{StatusCode: 404}, exitConnection, "connection"},
		{&mcp.HTTPStatusError{StatusCode: 502}, exitConnection, "connection"},
		{&errTimeout{d: time.Second}, exitConnection, "timeout"},
		{&mcp.HTTPStatusError{StatusCode: 401}, exitAuth, "auth"},
		{&mcp.HTTPStatusError{StatusCode: 403}, exitAuth, "auth"},
		{fmt.Errorf("%w: invalid_grant", auth.ErrTokenRequest), exitAuth, "auth"},
		{&auth.OAuthError{Code: "access_denied"}, exitAuth, "auth"},
		{mcp.NewError(-32601, "Method not found", nil), exitProtocol, "protocol"},
		{mcp.ErrInvalidRequestState, exitStateRejected, "state_rejected"},
		{mcp.NewError(mcp.CodeInvalidParams, "Invalid or expired requestState", nil), exitStateRejected, "state_rejected"},
		{mcp.NewError(mcp.CodeInvalidParams, "wrong password", nil), exitProtocol, "protocol"},
		{errToolError, exitToolError, "tool"},
		{usagef("bad"), exitUsage, "usage"},
		{&mcp.UnsupportedVersionError{Requested: "x"}, exitProtocol, "protocol"},
		{errors.New("something else"), exitFailure, "failure"},
	}
	for _, c := range cases {
		for _, err := range []error{c.err, wrap(c.err)} {
			if f := classify(err, false); f.Exit != c.exit || f.Code != c.code {
				t.Errorf("classify(%v) = %d %q, want %d %q", err, f.Exit, f.Code, c.exit, c.code)
			}
		}
	}
	if f := classify(wrap(context.Canceled), true); f.Exit != exitInterrupted {
		t.Errorf("a cancelled context after a signal: exit %d, want %d", f.Exit, exitInterrupted)
	}
}

// An interrupt while the CLI waits for the user's answer (line mode)
// exits 130 too, without waiting for input.
func TestInterruptWhileAskingExits130(t *testing.T) {
	url, _ := httpServer(t)
	pr, pw := io.Pipe() // never written: the question waits
	defer pw.Close()
	var out, errw testutil.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"call", "--url", url, "provision", "name=db"}, pr, &out, &errw) }()
	testutil.Eventually(t, 10*time.Second, "the question to be asked", func() bool { return strings.Contains(errw.String(), "Which region?") })
	cancel() // what SIGINT does in main
	select {
	case code := <-done:
		if code != exitInterrupted {
			t.Fatalf("exit status %d, want %d; stderr: %s", code, exitInterrupted, errw.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the CLI kept waiting for input after the interrupt")
	}
}
