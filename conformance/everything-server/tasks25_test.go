package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// TestTaskToolsServe20251125Sessions calls the everything-server's task
// tools on a 2025-11-25 session with roundtrip's client: they are listed
// with execution.taskSupport and run as that revision's tasks, a
// question inside the task answered through tasks/result, a protocol
// error failing the call.
func TestTaskToolsServe20251125Sessions(t *testing.T) {
	srv := newServer(slog.New(slog.NewTextHandler(io.Discard, nil)), mcp.RequestStateOptions{}, nil)
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ts.Close()
	o := &mcp.ClientOptions{Mode: mcp.ModeLegacy, Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"confirm": true}}, nil
	}}
	tasks.EnableClient(o, &tasks.ClientOptions{PollInterval: 10 * time.Millisecond})
	c := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != "2025-11-25" {
		t.Fatalf("negotiated %q", v)
	}
	_, err := c.CallTool(tasks.Detached(ctx), "slow_compute", map[string]any{"seconds": 0.05, "label": "x"}, nil)
	var pe *tasks.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("slow_compute detached: %v", err)
	}
	res, err := pe.Task.Wait(ctx)
	if err != nil || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, `Computed "x" in`) {
		t.Fatalf("slow_compute: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx, "confirm_delete", map[string]any{"filename": "a.txt"}, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != `Deleted "a.txt" (not really).` {
		t.Fatalf("confirm_delete: %v %+v", err, res)
	}
	_, err = c.CallTool(ctx, "protocol_error_job", nil, nil)
	var e *mcp.Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "protocol_error_job always fails") {
		t.Fatalf("protocol_error_job: %v", err)
	}
}
