package main

import (
	"context"
	"net"
	"strings"
	"testing"
)

// The quickstart as its page tells it: the server listens, the client
// calls the tool, answers the question and prints the result.
func TestQuickstartServerAndClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var served strings.Builder
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, &served) }()

	var out strings.Builder
	if err := call(t.Context(), "http://"+ln.Addr().String()+"/mcp", "orders", &out); err != nil {
		t.Fatal(err)
	}
	want := "server asks: Which region should orders live in?\nProvisioned orders in eu-west-1\n"
	if out.String() != want {
		t.Errorf("client printed %q, want %q", out.String(), want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if !strings.HasPrefix(served.String(), "listening on http://127.0.0.1:") {
		t.Errorf("server printed %q", served.String())
	}
}
