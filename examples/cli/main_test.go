package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary plays the server: run with EXAMPLE_CLI_SERVE=1, it is
// the stdio server the command-line client starts.
func TestMain(m *testing.M) {
	if os.Getenv("EXAMPLE_CLI_SERVE") == "1" {
		if err := newServer().ServeStdio(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The command-line client (cmd/roundtrip, built here from its module)
// lists this server's tools, calls the tool and asks its two questions
// on the terminal, one round each, and gets the prompt: the commands the
// documentation shows.
func TestTheCommandLineClientDrivesTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/roundtrip")
	}
	bin := filepath.Join(t.TempDir(), "roundtrip")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "cmd", "roundtrip")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/roundtrip: %v\n%s", err, out)
	}
	run := func(stdin string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, append(args, "--", os.Args[0])...)
		cmd.Env = append(os.Environ(), "EXAMPLE_CLI_SERVE=1")
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("roundtrip %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}

	out, _ := run("", "tools")
	if !strings.Contains(out, "provision") {
		t.Errorf("tools printed %q, want the provision tool", out)
	}
	out, asked := run("2\n20\n", "call", "provision", "name=orders")
	if want := "Provisioned orders in us-east-1 with 20 GB."; !strings.Contains(out, want) {
		t.Errorf("call printed %q, want %q", out, want)
	}
	for _, q := range []string{"Which region for orders?", "How many GB for orders in us-east-1?"} {
		if !strings.Contains(asked, q) {
			t.Errorf("the client did not ask %q; stderr: %s", q, asked)
		}
	}
	out, _ = run("", "get", "greet", "name=Ada")
	if !strings.Contains(out, "Say hello to Ada.") {
		t.Errorf("get printed %q", out)
	}

	// A named server from a config file in the mcpServers format.
	config := filepath.Join(t.TempDir(), "mcp.json")
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"provision": map[string]any{"command": os.Args[0], "env": map[string]string{"EXAMPLE_CLI_SERVE": "1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "--config", config, "provision", "tools")
	named, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(named), "provision") {
		t.Errorf("roundtrip --config FILE provision tools: %v\n%s", err, named)
	}
}
