package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

type Confirm struct {
	Ok bool `json:"ok"`
}

// connect serves srv on an in-memory pair and returns a client for it.
func connect(srv *mcp.Server, o *mcp.ClientOptions) *mcp.Client {
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), serverEnd, serverEnd, nil)
	return mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), o)
}

// reporter serves a tool that becomes a task, and goes on asking inside
// it.
func reporter() *mcp.Server {
	// #region task-server
	srv := mcp.NewServer(mcp.Implementation{Name: "reports", Version: "1.0.0"}, nil)
	rt := tasks.Enable(srv, &tasks.Options{PollInterval: 10 * time.Millisecond}) // enables the extension
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "quarterly"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		// From here on the client holds a task; this handler runs on in
		// the background with the task's context.
		ctx, err := tasks.Start(ctx)
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
	}, rt.Support(tasks.Optional))
	// #endregion task-server
	return srv
}

// A tool call that becomes a task: a client that declares the extension
// follows it to its result, answering its questions on the way.
func ExampleStart() {
	// #region task-client
	opts := &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", r.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		},
	}
	tasks.EnableClient(opts, nil) // declares the extension, follows tasks
	client := connect(reporter(), opts)
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
func ExampleHandle() {
	srv := reporter()
	ctx := context.Background()
	// #region task-detach
	// The call declares what the task may ask for later.
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)}}
	o := &mcp.ClientOptions{Capabilities: caps}
	tasks.EnableClient(o, nil)
	first := connect(srv, o)
	_, err := first.CallTool(tasks.Detached(ctx), "quarterly", nil, nil)
	first.Close()
	var started *tasks.PendingError
	if !errors.As(err, &started) {
		fmt.Println(err)
		return
	}
	id := started.Task.ID // store it anywhere

	// Later, elsewhere: a handle from the id, and the task's result.
	lo := &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": false}}, nil
		},
	}
	tasks.EnableClient(lo, nil)
	later := connect(srv, lo)
	defer later.Close()
	res, err := tasks.Get(later, id, nil).Wait(ctx)
	// #endregion task-detach
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// report kept
}
