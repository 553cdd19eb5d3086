package mcp

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestClientOverCommandTransport runs the fixture server as a child
// process (this test binary, in helper mode) and talks stdio to it.
func TestClientOverCommandTransport(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns a process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClientHelperStdioServer$")
	// A -race binary sleeps 1 s at exit, as long as Close's ExitWait.
	cmd.Env = append(os.Environ(), "MCP_CLIENT_HELPER_SERVER=1", "GORACE=atexit_sleep_ms=0")
	tr, err := NewCommandTransport(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(tr, fixtureHandlers(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "three_rounds", map[string]string{"nonce": "stdio"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "Hello Ada, capital Paris, 2 roots, nonce stdio" {
		t.Fatalf("got %q", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Fatal("the server process did not exit on Close")
	}
	if _, err := c.Discover(ctx); !errors.Is(err, ErrTransportClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestClientHelperStdioServer is the child process of
// TestClientOverCommandTransport; it skips itself in normal runs.
func TestClientHelperStdioServer(t *testing.T) {
	if os.Getenv("MCP_CLIENT_HELPER_SERVER") != "1" {
		t.Skip("helper process for TestClientOverCommandTransport")
	}
	f := newClientFixture(t)
	f.s.ServeStdio(context.Background())
	os.Exit(0)
}

func TestCommandTransportReportsAMissingBinary(t *testing.T) {
	t.Parallel()
	if _, err := NewCommandTransport(exec.Command("/nonexistent/mcp-server"), nil); err == nil {
		t.Fatal("no error")
	}
}
