package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type Confirm struct {
	Ok bool `json:"ok"`
}

// reporter serves a tool that becomes a task, and goes on asking inside
// it.
func reporter() *mcp.Server {
	// #region task-server
	srv := mcp.NewServer(mcp.Implementation{Name: "reports", Version: "1.0.0"}, &mcp.ServerOptions{
		Tasks: &mcp.TaskOptions{PollInterval: 10 * time.Millisecond}, // enables the extension
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "quarterly"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		// From here on the client holds a task; this handler runs on in
		// the background with the task's context.
		ctx, err := mcp.StartTask(ctx)
		if err != nil {
			return nil, err
		}
		// ... the long part ...
		// A question inside a task makes it input_required; the handler
		// waits for the answer (no re-run, unlike an ordinary round).
		ok, err := mcp.Elicit[Confirm](ctx, "Send the report to the board?")
		if err != nil {
			return nil, err
		}
		if !ok.Content.Ok {
			return mcp.TextResult("report kept"), nil
		}
		return mcp.TextResult("report sent"), nil
	}, mcp.WithTaskSupport(mcp.TaskOptional))
	// #endregion task-server
	return srv
}

// A tool call that becomes a task: a client that declares the extension
// follows it to its result, answering its questions on the way.
func ExampleStartTask() {
	// #region task-client
	client := connect(reporter(), &mcp.ClientOptions{
		Tasks: &mcp.ClientTaskOptions{}, // declares the extension
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", r.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		},
	})
	defer client.Close()
	res, err := client.CallTool(context.Background(), "quarterly", nil, nil)
	// #endregion task-client
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// asked: Send the report to the board?
	// report sent
}

// Detaching from a task: the call returns the task's handle at once; its
// id is all another process needs to follow it, answer it and wait for
// its result.
func ExampleTaskHandle() {
	srv := reporter()
	ctx := context.Background()
	// #region task-detach
	// The call declares what the task may ask for later.
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)}}
	first := connect(srv, &mcp.ClientOptions{Tasks: &mcp.ClientTaskOptions{}, Capabilities: caps})
	_, err := first.CallTool(ctx, "quarterly", nil, &mcp.CallOptions{DetachTask: true})
	first.Close()
	var started *mcp.TaskPendingError
	if !errors.As(err, &started) {
		fmt.Println(err)
		return
	}
	id := started.Task.ID // store it anywhere

	// Later, elsewhere: a handle from the id, and the task's result.
	later := connect(srv, &mcp.ClientOptions{
		Tasks: &mcp.ClientTaskOptions{},
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": false}}, nil
		},
	})
	defer later.Close()
	res, err := later.Task(id).Wait(ctx)
	// #endregion task-detach
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// report kept
}
