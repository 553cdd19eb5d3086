package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// TestUpKeepsAFleetUpUntilItsInputEnds checks the mode the fleet load
// script uses: the first line is nginx's endpoint, the echo tool answers
// through it, and the fleet stops when its input ends.
func TestUpKeepsAFleetUpUntilItsInputEnds(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- up([]string{"-instances", "2"}, inR, outW); outW.Close() }()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		inW.Close()
		t.Fatalf("no endpoint line: %v (%v)", err, <-done)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("endpoint %q", url)
	}
	go io.Copy(io.Discard, outR)
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "through nginx"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "through nginx" {
		t.Fatalf("echo: %+v", res.Content)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fleet did not stop when its input ended")
	}
}
