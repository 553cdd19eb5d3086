package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The test binary plays the child: run with EXAMPLE_STDIO_SERVE=1, it is
// the stdio server.
func TestMain(m *testing.M) {
	if os.Getenv("EXAMPLE_STDIO_SERVE") == "1" {
		if err := serveStdio(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A client starts its server as a child process and speaks MCP over the
// child's standard input and output.
func TestStdioClientStartsItsServer(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	// A -race child sleeps 1 s at exit otherwise, past the client's ExitWait.
	cmd.Env = append(os.Environ(), "EXAMPLE_STDIO_SERVE=1", "GORACE=atexit_sleep_ms=0")
	var out strings.Builder
	if err := callChild(t.Context(), cmd, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "OVER STDIO (protocol 2026-07-28)\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Errorf("the child has not exited after Close: %v", cmd.ProcessState)
	}
}
