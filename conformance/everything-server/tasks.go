package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// The fixtures of the tasks extension scenarios (tasks-*, SEP-2663, not
// scored): a sync tool, task tools that sleep, fail, fail at the protocol
// level, ask one or two questions inside the task, and one that asks
// through MRTR before it becomes a task. The same tools are 2025-11-25's
// own tasks on sessions of that revision (rt.Support lists them with
// execution.taskSupport; a task-augmented tools/call becomes a task at
// once, followed with tasks/get, tasks/result, tasks/list, tasks/cancel).

var (
	greetArgs = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
	slowArgs  = json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0},"label":{"type":"string"}}}`)
	fileArgs  = json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}}}`)
)

// maxSleep bounds slow_compute.
const maxSleep = 10 * time.Minute

func (e *everything) addTasks() {
	s := e.srv
	rt := tasks.Enable(s, &tasks.Options{TTL: 10 * time.Minute, PollInterval: 200 * time.Millisecond})

	s.AddTool(&mcp.Tool{Name: "greet", Description: "Sync-only: greets name", InputSchema: greetArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			var in struct {
				Name string `json:"name"`
			}
			if len(req.Arguments) > 0 {
				if err := json.Unmarshal(req.Arguments, &in); err != nil {
					return nil, err
				}
			}
			return mcp.TextResult(fmt.Sprintf("Hello, %s!", in.Name)), nil
		})

	// seconds: 0 answers at once without a task: the server decides per
	// request.
	s.AddTool(&mcp.Tool{Name: "slow_compute", Description: "Task: sleeps `seconds` seconds, then answers; cancellable", InputSchema: slowArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			var in struct {
				Seconds float64 `json:"seconds"`
				Label   string  `json:"label"`
			}
			if len(req.Arguments) > 0 {
				if err := json.Unmarshal(req.Arguments, &in); err != nil {
					return nil, err
				}
			}
			d := min(time.Duration(in.Seconds*float64(time.Second)), maxSleep)
			if d <= 0 {
				return mcp.TextResult(fmt.Sprintf("Computed %q at once", in.Label)), nil
			}
			ctx, err := tasks.Start(ctx)
			if err != nil {
				return nil, err
			}
			if err := sleep(ctx, d); err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("Computed %q in %v", in.Label, d)), nil
		}, rt.Support(tasks.Optional))

	s.AddTool(&mcp.Tool{Name: "failing_job", Description: "Task (required): reports a tool error after about a second", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			ctx, err := tasks.Start(ctx)
			if err != nil {
				return nil, err
			}
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			return mcp.ErrorResult("failing_job failed, as it always does"), nil
		}, rt.Support(tasks.Required))

	s.AddTool(&mcp.Tool{Name: "protocol_error_job", Description: "Task: fails with a JSON-RPC error (status failed)", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			if _, err := tasks.Start(ctx); err != nil {
				return nil, err
			}
			return nil, mcp.NewError(-32603, "Internal error: protocol_error_job always fails", nil)
		}, rt.Support(tasks.Optional))

	type confirm struct {
		Confirm bool `json:"confirm"`
	}
	s.AddTool(&mcp.Tool{Name: "confirm_delete", Description: "Task: asks for a confirmation (elicitation) inside the task", InputSchema: fileArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			var in struct {
				Filename string `json:"filename"`
			}
			if len(req.Arguments) > 0 {
				if err := json.Unmarshal(req.Arguments, &in); err != nil {
					return nil, err
				}
			}
			ctx, err := tasks.Start(ctx)
			if err != nil {
				return nil, err
			}
			ans, err := mcp.Elicit[confirm](ctx, fmt.Sprintf("Delete %q?", in.Filename))
			if err != nil {
				return nil, err
			}
			if ans.Accepted() && ans.Content.Confirm {
				return mcp.TextResult(fmt.Sprintf("Deleted %q (not really).", in.Filename)), nil
			}
			return mcp.TextResult(fmt.Sprintf("Kept %q.", in.Filename)), nil
		}, rt.Support(tasks.Optional))

	type named struct {
		Name string `json:"name"`
	}
	s.AddTool(&mcp.Tool{Name: "multi_input", Description: "Task: asks two questions at once, from two goroutines", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			ctx, err := tasks.Start(ctx)
			if err != nil {
				return nil, err
			}
			var wg sync.WaitGroup
			var names [2]string
			var errs [2]error
			for i, msg := range []string{"First name?", "Second name?"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ans, err := mcp.Elicit[named](ctx, msg)
					if err == nil {
						var v named
						v, err = ans.Value()
						names[i] = v.Name
					}
					errs[i] = err
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return nil, err
				}
			}
			return mcp.TextResult(fmt.Sprintf("Got %s and %s.", names[0], names[1])), nil
		}, rt.Support(tasks.Optional))

	// MRTR first (synchronously, the handler runs again on the retry),
	// then the task, whose result carries the answer.
	s.AddTool(&mcp.Tool{Name: "test_tool_with_task", Description: "Asks user_name through MRTR, then continues as a task (required)", InputSchema: noArgs},
		func(ctx context.Context, _ *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			ans, err := mcp.Elicit[named](ctx, "What is your name?", mcp.WithKey(keyUserName))
			if err != nil {
				return nil, err
			}
			name, err := ans.Value()
			if err != nil {
				return nil, err
			}
			ctx, err = tasks.Start(ctx)
			if err != nil {
				return nil, err
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("Hello, %s, from a task!", name.Name)), nil
		}, rt.Support(tasks.Required))
}
