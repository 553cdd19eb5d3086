package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The client side of the tasks of 2025-11-25 (experimental there, part of
// the core revision; 2026-07-28 moved them to this extension). On a
// 2025-11-25 session EnableClient declares the tasks capability in
// initialize (mcp.ClientExtensions.LegacyCapabilities), augments a
// tools/call with "task" when the server declared
// tasks.requests.tools.call and tools/list listed the tool with
// execution.taskSupport "optional" or "required" (LegacyParams), and
// follows the CreateTaskResult the server answers (LegacyResult, then
// the same follower as resultType "task"): tasks/get is polled at the
// server's pollInterval until the task is terminal or input_required,
// then tasks/result fetches the tool's result (blocking while the task
// runs; a question the task asks arrives as a live request of the
// session, answered by the Client's handlers). Detached contexts and
// CallOptions.Manual hand back a *PendingError as in the modern era.

// methodResult is the method of 2025-11-25 tasks that the extension
// does not have.
const methodResult = "tasks/result"

// legacyCapability is the client's tasks capability of initialize: it
// can make task-augmented requests (it receives none of its own).
var legacyCapability = json.RawMessage(`{}`)

// isLegacy reports whether c runs a session of an earlier revision (its
// era settled).
func isLegacy(c *mcp.Client) bool {
	v := c.ProtocolVersion()
	return v != "" && v != mcp.LatestProtocolVersion
}

// legacyParams is mcp.ClientExtensions.LegacyParams: {"task":{...}} for
// a tool the server runs as a task.
func (f *follower) legacyParams(ctx context.Context, tool, initialize json.RawMessage) json.RawMessage {
	if tool == nil || !serverTasksToolCalls(initialize) {
		return nil
	}
	var t struct {
		Execution struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	}
	if json.Unmarshal(tool, &t) != nil {
		return nil
	}
	switch t.Execution.TaskSupport {
	case "optional", "required":
	default:
		return nil
	}
	if ms := f.o.TTL.Milliseconds(); ms > 0 {
		return json.RawMessage(`{"task":{"ttl":` + strconv.FormatInt(ms, 10) + `}}`)
	}
	return json.RawMessage(`{"task":{}}`)
}

// serverTasksToolCalls reports whether an initialize result declares
// capabilities.tasks.requests.tools.call.
func serverTasksToolCalls(initialize json.RawMessage) bool {
	var h struct {
		Capabilities struct {
			Tasks *struct {
				Requests *struct {
					Tools *struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(initialize, &h) != nil {
		return false
	}
	t := h.Capabilities.Tasks
	return t != nil && t.Requests != nil && t.Requests.Tools != nil && jsonrpc.KindOf(t.Requests.Tools.Call) == jsonrpc.KindObject
}

// legacyResult is mcp.ClientExtensions.LegacyResult: an answer with a
// task object and no content is a CreateTaskResult.
func legacyResult(result json.RawMessage) mcp.ResultType {
	var task, content bool
	_ = jsonrpc.Fields(result, func(k, v []byte) error {
		switch string(jsonrpc.Key(k)) {
		case "task":
			task = jsonrpc.KindOf(v) == jsonrpc.KindObject
		case "content":
			content = true
		}
		return nil
	})
	if task && !content {
		return ResultType
	}
	return ""
}

// decodeLegacyTask decodes a 2025-11-25 Task: the task member of a
// CreateTaskResult (wrapped), or a tasks/get or tasks/cancel result. id,
// when given, must be its taskId.
func decodeLegacyTask(method, id string, raw []byte, wrapped bool) (*Task, error) {
	if wrapped {
		var w struct {
			Task json.RawMessage `json:"task"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, &mcp.InvalidResponseError{Method: method, Err: err}
		}
		if jsonrpc.KindOf(w.Task) != jsonrpc.KindObject {
			return nil, invalidResponse(method, "CreateTaskResult without a task object")
		}
		raw = w.Task
	}
	var w struct {
		TaskID        *string         `json:"taskId"`
		Status        string          `json:"status"`
		StatusMessage json.RawMessage `json:"statusMessage"`
		CreatedAt     json.RawMessage `json:"createdAt"`
		LastUpdatedAt json.RawMessage `json:"lastUpdatedAt"`
		TTL           json.RawMessage `json:"ttl"`
		PollInterval  json.RawMessage `json:"pollInterval"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, &mcp.InvalidResponseError{Method: method, Err: err}
	}
	if w.TaskID == nil || *w.TaskID == "" {
		return nil, invalidResponse(method, "task without a taskId")
	}
	if id != "" && *w.TaskID != id {
		return nil, invalidResponse(method, "taskId %q is not the task asked for", *w.TaskID)
	}
	t := &Task{TaskID: *w.TaskID, Status: Status(w.Status)}
	t.StatusMessage, _ = jsonString(w.StatusMessage)
	t.CreatedAt = parseTime(w.CreatedAt)
	t.LastUpdatedAt = parseTime(w.LastUpdatedAt)
	if n, ok := jsonInt(w.TTL); ok {
		t.TTLMs = &n
	}
	if n, ok := jsonInt(w.PollInterval); ok && n > 0 {
		t.PollIntervalMs = n
	}
	switch t.Status {
	case Working, InputRequired, Completed, Failed, Cancelled:
	default:
		return nil, invalidResponse(method, "unknown task status %q", w.Status)
	}
	return t, nil
}

// waitLegacy follows a task of a 2025-11-25 session from state t (nil:
// get it first) to its end and returns the raw CallToolResult.
func (h *Handle) waitLegacy(ctx context.Context, t *Task) ([]byte, error) {
	o := &h.f.o
	for {
		if t == nil {
			var err error
			if t, err = h.Get(ctx); err != nil {
				return nil, err
			}
		}
		switch t.Status {
		case Cancelled:
			return nil, &endError{fmt.Errorf("%w: task %q", ErrCancelled, h.ID)}
		case Completed, Failed, InputRequired:
			// tasks/result answers what tools/call would have (a failed
			// task: its JSON-RPC error, or an isError result), and for
			// input_required carries the task's questions as live
			// requests until it ends.
			raw, err := h.request(ctx, methodResult, nil)
			var e *mcp.Error
			if errors.As(err, &e) && t.Status == Failed {
				return nil, &endError{e}
			}
			if err != nil {
				return nil, err
			}
			if _, err := resultTypeOf(methodResult, raw); err != nil {
				return nil, err
			}
			return raw, nil
		}
		if err := o.sleep(ctx, o.pollInterval(t.PollIntervalMs)); err != nil {
			return nil, err
		}
		t = nil
	}
}
