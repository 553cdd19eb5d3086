//go:build unix

package mcp

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// TestStdioShutdownClosesThenTermsThenKills runs this test binary as
// three stdio servers that stay up when their standard input closes: one
// that cleans up and exits on SIGTERM, one that ignores SIGTERM, one that
// exits at end of input. Close follows the specification's order (close
// stdin, wait, SIGTERM, wait, SIGKILL) with the configured waits.
func TestStdioShutdownClosesThenTermsThenKills(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	const wait = 300 * time.Millisecond
	start := func(t *testing.T, mode string) (*exec.Cmd, ClientTransport, string) {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestStdioShutdownHelper$")
		cmd.Env = append(os.Environ(), "MCP_STDIO_SHUTDOWN_HELPER="+mode, "MCP_STDIO_SHUTDOWN_DIR="+dir,
			"GORACE=atexit_sleep_ms=0") // a -race binary sleeps 1 s at exit otherwise
		tr, err := NewCommandTransport(cmd, &StreamClientOptions{ExitWait: wait, TermWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 20*time.Second, "the helper to be ready", func() bool {
			_, err := os.Stat(filepath.Join(dir, "ready"))
			return err == nil
		})
		return cmd, tr, dir
	}
	t.Run("cleans up on SIGTERM", func(t *testing.T) {
		t.Parallel()
		cmd, tr, dir := start(t, "term")
		began := time.Now()
		tr.Close()
		d := time.Since(began)
		if _, err := os.Stat(filepath.Join(dir, "terminated")); err != nil {
			t.Fatalf("the server got no SIGTERM before it was stopped: %v", err)
		}
		if !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("the server did not exit by itself after SIGTERM: %v", cmd.ProcessState)
		}
		if d < wait || d > wait+5*time.Second {
			t.Fatalf("Close took %v, want the exit wait (%v) and then SIGTERM's effect", d, wait)
		}
	})
	t.Run("ignores SIGTERM", func(t *testing.T) {
		t.Parallel()
		cmd, tr, _ := start(t, "ignore")
		began := time.Now()
		tr.Close()
		d := time.Since(began)
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the server was not killed: %v", cmd.ProcessState)
		}
		if d < 2*wait || d > 2*wait+5*time.Second {
			t.Fatalf("Close took %v, want both waits (%v)", d, 2*wait)
		}
	})
	t.Run("exits at end of input", func(t *testing.T) {
		t.Parallel()
		cmd, tr, dir := start(t, "exit")
		began := time.Now()
		tr.Close()
		if d := time.Since(began); d >= wait {
			t.Fatalf("Close took %v for a server that exits at once", d)
		}
		if _, err := os.Stat(filepath.Join(dir, "terminated")); err == nil || cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("a server that exits at end of input was signalled: %v", cmd.ProcessState)
		}
	})
}

// TestStdioShutdownHelper is the child process of
// TestStdioShutdownClosesThenTermsThenKills; it skips itself in normal
// runs.
func TestStdioShutdownHelper(t *testing.T) {
	mode := os.Getenv("MCP_STDIO_SHUTDOWN_HELPER")
	if mode == "" {
		t.Skip("helper process for TestStdioShutdownClosesThenTermsThenKills")
	}
	dir := os.Getenv("MCP_STDIO_SHUTDOWN_DIR")
	term := make(chan os.Signal, 1)
	switch mode {
	case "term", "exit":
		signal.Notify(term, syscall.SIGTERM)
	case "ignore":
		signal.Ignore(syscall.SIGTERM)
	}
	os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600)
	io.Copy(io.Discard, os.Stdin)
	if mode == "exit" {
		os.Exit(0)
	}
	<-term // "ignore" waits here for ever
	os.WriteFile(filepath.Join(dir, "terminated"), nil, 0o600)
	os.Exit(0)
}
