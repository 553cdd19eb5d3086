package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The client side of the tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663; the server side is tasks.go). A Client with
// ClientOptions.Tasks declares the extension on its modern requests; a
// tools/call the server answers with a CreateTaskResult (resultType
// "task") is then awaited: tasks/get is polled at the server's
// pollIntervalMs, the questions of an input_required status are answered
// with the Client's handlers and sent with tasks/update, and the task's
// inlined result (or error) becomes the call's. With
// CallOptions.DetachTask (or Manual) the call returns a *TaskPendingError
// holding a *TaskHandle instead, and the caller drives the task itself.
// See docs/design/tasks.md.

// ClientTaskOptions enable the tasks extension on a Client and bound
// what it does for a task. Zero fields take the defaults.
type ClientTaskOptions struct {
	// PollInterval is the wait between two tasks/get when the server
	// suggests none (pollIntervalMs absent or 0). Default 1 s.
	PollInterval time.Duration
	// MaxPollInterval caps the server's pollIntervalMs. Default 30 s.
	MaxPollInterval time.Duration
	// MaxInputRequests bounds the input requests answered for one
	// input_required status; the others are answered after the next
	// tasks/get. Default 64.
	MaxInputRequests int
}

// ErrTaskCancelled matches the error of a call, or of TaskHandle.Wait,
// whose task ended cancelled (by tasks/cancel, from this client or
// another).
var ErrTaskCancelled = errors.New("mcp: task cancelled")

// taskCancelTimeout bounds the tasks/cancel sent when an automatic call
// gives its task up.
const taskCancelTimeout = 5 * time.Second

// TaskHandle is a task of a server, known by its id. The id and the
// server's address are all that is needed to follow the task from
// elsewhere: persist ID and get a handle again with Client.Task. Its
// methods are safe for concurrent use.
type TaskHandle struct {
	// ID is the task id (taskId).
	ID string
	c  *Client
	// extra ties the task requests of an automatic call to it (its
	// CallOptions.Meta, its CallInfo); nil on a handle given out.
	extra *reqExtra
	// tool is the tool whose call became the task, when known (a handle
	// of a *TaskPendingError): Wait checks its result's structured
	// content as CallTool does.
	tool string
}

// Task returns a handle for the task id on the client's server (a task
// created by another Client, or by this one in an earlier process). The
// client must declare the tasks extension (ClientOptions.Tasks): the
// server rejects tasks methods of a request that does not.
func (c *Client) Task(id string) *TaskHandle {
	return &TaskHandle{ID: id, c: c}
}

// TaskPendingError is returned by CallTool (and Resume) with
// CallOptions.DetachTask or Manual when the server answers with a task
// instead of a result: Task follows it, Result is the server's
// CreateTaskResult (its seed state).
type TaskPendingError struct {
	Tool   string
	Task   *TaskHandle
	Result *CreateTaskResult
}

// Error names the tool and the task.
func (e *TaskPendingError) Error() string {
	return fmt.Sprintf("mcp: tools/call %q became task %q; follow it with its TaskHandle", e.Tool, e.Task.ID)
}

// Get calls tasks/get: the task's current state. For a completed task,
// Result is the tool's raw CallToolResult (decode it with Wait); for a
// failed one, Error is the JSON-RPC error. An unknown or expired id is
// the server's -32602 *Error.
func (h *TaskHandle) Get(ctx context.Context) (*Task, error) {
	raw, err := h.c.taskRequest(ctx, h, MethodTasksGet, nil)
	if err != nil {
		return nil, err
	}
	return decodeTaskState(MethodTasksGet, h.ID, raw)
}

// Update calls tasks/update with answers to the task's input requests,
// by key (as returned by Get in InputRequests). The server acknowledges
// any answer; one to a key that is not pending is dropped.
func (h *TaskHandle) Update(ctx context.Context, responses InputResponses) error {
	rs, err := encodeResponses(responses)
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []byte("{}")
	}
	return h.update(ctx, rs)
}

func (h *TaskHandle) update(ctx context.Context, responses []byte) error {
	raw, err := h.c.taskRequest(ctx, h, MethodTasksUpdate, responses)
	if err != nil {
		return err
	}
	_, err = decodeComplete[struct{}](MethodTasksUpdate, raw)
	return err
}

// Cancel calls tasks/cancel. Cancelling a task that has ended already is
// acknowledged; an unknown or expired id is the server's -32602 *Error.
func (h *TaskHandle) Cancel(ctx context.Context) error {
	raw, err := h.c.taskRequest(ctx, h, MethodTasksCancel, nil)
	if err != nil {
		return err
	}
	_, err = decodeComplete[struct{}](MethodTasksCancel, raw)
	return err
}

// Wait follows the task to its end as an automatic CallTool does:
// polling tasks/get, answering input_required statuses with the
// Client's handlers through tasks/update. It returns the tool's result
// when the task completes, the task's JSON-RPC error (an *Error) when it
// failed, and an error matching ErrTaskCancelled when it was cancelled.
// When ctx ends Wait returns ctx.Err() and leaves the task running: call
// Cancel to stop it. A handler's failure is returned as well, the task
// left input_required. The result of a handle from a *TaskPendingError
// is checked against the tool's outputSchema as CallTool does (a handle
// from Client.Task does not know its tool, and its result is not).
func (h *TaskHandle) Wait(ctx context.Context) (*CallToolResult, error) {
	raw, err := h.wait(ctx, nil)
	if te, ok := err.(*taskEndError); ok {
		err = te.err
	}
	if err != nil {
		return nil, err
	}
	return h.c.toolResult(h.tool, raw)
}

// taskOptions returns the client's task options with defaults.
func (c *Client) taskOptions() ClientTaskOptions {
	var o ClientTaskOptions
	if c.opts.Tasks != nil {
		o = *c.opts.Tasks
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.MaxPollInterval <= 0 {
		o.MaxPollInterval = 30 * time.Second
	}
	if o.MaxInputRequests <= 0 {
		o.MaxInputRequests = 64
	}
	return o
}

// pollInterval is the wait the server suggests, within the client's
// bounds.
func (o *ClientTaskOptions) pollInterval(ms int64) time.Duration {
	if ms <= 0 {
		return min(o.PollInterval, o.MaxPollInterval)
	}
	if ms >= o.MaxPollInterval.Milliseconds() {
		return o.MaxPollInterval
	}
	return time.Duration(ms) * time.Millisecond
}

// modernCapabilities are the capabilities of a modern request: those of
// Capabilities, plus the tasks extension when ClientOptions.Tasks is set
// (a legacy session's initialize never declares it).
func (c *Client) modernCapabilities() ClientCapabilities {
	caps := c.Capabilities()
	if c.opts.Tasks != nil {
		ext := make(map[string]json.RawMessage, len(caps.Extensions)+1)
		maps.Copy(ext, caps.Extensions)
		if _, ok := ext[ExtensionTasks]; !ok {
			ext[ExtensionTasks] = json.RawMessage(`{}`)
		}
		caps.Extensions = ext
	}
	c.declareExtensions(&caps) // client_extension.go
	return caps
}

// tasksDeclared reports whether the client's requests declare the
// extension (ClientOptions.Tasks, or given Capabilities naming it).
func (c *Client) tasksDeclared() bool {
	_, ok := c.modernCapabilities().Extensions[ExtensionTasks]
	return ok
}

// taskRequest sends a request of the tasks extension about the task of
// h (Mcp-Name is the task id). They exist in the modern era only.
func (c *Client) taskRequest(ctx context.Context, h *TaskHandle, method string, responses []byte) ([]byte, error) {
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	id := h.ID
	p := make([]byte, 0, 32+len(id)+len(responses))
	p = append(p, `,"taskId":`...)
	p = jsonrpc.AppendString(p, id)
	if responses != nil {
		p = append(p, `,"inputResponses":`...)
		p = append(p, responses...)
	}
	return c.do(ctx, &wireRequest{method: method, target: id, hasTarget: true, params: p, extra: h.extra})
}

// followTask is run's case for a tools/call answered with a task
// (resultType "task"): it follows the task to its end, or hands it back
// (CallOptions.DetachTask, Manual). A task the client did not ask for by
// declaring the extension is a protocol error. Its task requests carry
// what the call's legs carry (leg: the extra members, the CallInfo).
func (c *Client) followTask(ctx context.Context, cc *carrierCall, opts *CallOptions, raw []byte, leg *wireRequest) ([]byte, error) {
	if !c.tasksDeclared() {
		return nil, &InvalidResponseError{Method: cc.method, Err: fmt.Errorf("%w %q: the client did not declare the %s extension", ErrUnknownResultType, ResultTask, ExtensionTasks)}
	}
	seed, err := decodeTaskState(cc.method, "", raw)
	if err != nil {
		return nil, err
	}
	if opts.Manual || opts.DetachTask {
		return nil, &TaskPendingError{Tool: cc.target, Task: &TaskHandle{ID: seed.TaskID, c: c, tool: cc.target}, Result: &CreateTaskResult{Task: *seed}}
	}
	h := &TaskHandle{ID: seed.TaskID, c: c, extra: leg.extra}
	res, err := h.wait(ctx, seed)
	var te *taskEndError
	if err != nil && !errors.As(err, &te) {
		// Given up (ctx ended, a handler or the network failed): the
		// caller holds no handle, so nobody else will end the task.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelTimeout)
		if cerr := h.Cancel(cctx); cerr != nil {
			c.log.Warn("mcp: client: cancelling an abandoned task", "task", h.ID, "err", cerr)
		}
		cancel()
	}
	if te != nil {
		return nil, te.err
	}
	return res, err
}

// taskEndError carries the outcome of a task that ended failed or
// cancelled out of wait, telling it from a failure to follow the task.
type taskEndError struct{ err error }

func (e *taskEndError) Error() string { return e.err.Error() }
func (e *taskEndError) Unwrap() error { return e.err }

// wait follows a task from state t (nil: get it first) to its end and
// returns the raw CallToolResult.
func (h *TaskHandle) wait(ctx context.Context, t *Task) ([]byte, error) {
	c := h.c
	o := c.taskOptions()
	answered := map[string]bool{} // keys answered already: never twice
	for {
		if t == nil {
			var err error
			if t, err = h.Get(ctx); err != nil {
				return nil, err
			}
		}
		switch t.Status {
		case TaskCompleted:
			if _, err := resultTypeOf(MethodTasksGet, t.Result); err != nil {
				return nil, err
			}
			return t.Result, nil
		case TaskFailed:
			return nil, &taskEndError{t.Error}
		case TaskCancelled:
			return nil, &taskEndError{fmt.Errorf("%w: task %q", ErrTaskCancelled, h.ID)}
		case TaskInputRequired:
			ir, err := taskInputs(t, answered, o.MaxInputRequests)
			if err != nil {
				return nil, err
			}
			if len(ir.keys) > 0 {
				responses, err := c.fulfil(ctx, ir)
				if err != nil {
					return nil, err
				}
				if err := h.update(ctx, responses); err != nil {
					return nil, err
				}
				for _, k := range ir.keys {
					answered[k] = true
				}
				t = nil // look again at once: the next question may be there
				continue
			}
		}
		// working, or only questions answered already.
		if err := c.sleep(ctx, o.pollInterval(t.PollIntervalMs)); err != nil {
			return nil, err
		}
		t = nil
	}
}

// taskInputs returns the input requests of t not answered yet, at most
// max of them (by key order), decoded as a round of the MRTR loop.
func taskInputs(t *Task, answered map[string]bool, max int) (*inputRequired, error) {
	ir := &inputRequired{result: &InputRequiredResult{InputRequests: map[string]InputRequest{}}, rawRequests: t.InputRequests}
	for k := range t.InputRequests {
		if !answered[k] {
			ir.keys = append(ir.keys, k)
		}
	}
	slices.Sort(ir.keys)
	if len(ir.keys) > max {
		ir.keys = ir.keys[:max]
	}
	for _, k := range ir.keys {
		d, err := decodeKnownInputRequest(t.InputRequests[k])
		if err != nil {
			return nil, &InvalidResponseError{Method: MethodTasksGet, Err: fmt.Errorf("inputRequests[%q]: %w", k, err)}
		}
		ir.result.InputRequests[k] = d
	}
	return ir, nil
}

// decodeTaskState decodes a CreateTaskResult (method tools/call) or a
// tasks/get result into a Task, checking what the client relies on: a
// taskId (equal to id when id is given), a known status, a result object
// when completed, an error object when failed, inputRequests an object.
// Timestamps that do not parse are left zero; a negative
// pollIntervalMs counts as none.
func decodeTaskState(method, id string, raw []byte) (*Task, error) {
	var w struct {
		TaskID         *string         `json:"taskId"`
		Status         string          `json:"status"`
		StatusMessage  json.RawMessage `json:"statusMessage"`
		CreatedAt      json.RawMessage `json:"createdAt"`
		LastUpdatedAt  json.RawMessage `json:"lastUpdatedAt"`
		TTLMs          json.RawMessage `json:"ttlMs"`
		PollIntervalMs json.RawMessage `json:"pollIntervalMs"`
		InputRequests  json.RawMessage `json:"inputRequests"`
		Result         json.RawMessage `json:"result"`
		Error          json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, &InvalidResponseError{Method: method, Err: err}
	}
	if w.TaskID == nil || *w.TaskID == "" {
		return nil, invalidResponse(method, "task without a taskId")
	}
	if id != "" && *w.TaskID != id {
		return nil, invalidResponse(method, "taskId %q is not the task asked for", *w.TaskID)
	}
	t := &Task{TaskID: *w.TaskID, Status: TaskStatus(w.Status)}
	t.StatusMessage, _ = jsonString(w.StatusMessage)
	t.CreatedAt = parseTaskTime(w.CreatedAt)
	t.LastUpdatedAt = parseTaskTime(w.LastUpdatedAt)
	if n, ok := jsonInt(w.TTLMs); ok {
		t.TTLMs = &n
	}
	if n, ok := jsonInt(w.PollIntervalMs); ok && n > 0 {
		t.PollIntervalMs = n
	}
	switch t.Status {
	case TaskWorking, TaskCancelled:
	case TaskInputRequired:
		switch jsonrpc.KindOf(w.InputRequests) {
		case jsonrpc.KindInvalid, jsonrpc.KindNull:
		case jsonrpc.KindObject:
			reqs, err := decodeInputRequests(w.InputRequests)
			if err != nil {
				return nil, &InvalidResponseError{Method: method, Err: err}
			}
			t.InputRequests = reqs
		default:
			return nil, invalidResponse(method, "inputRequests is not an object")
		}
	case TaskCompleted:
		if jsonrpc.KindOf(w.Result) != jsonrpc.KindObject {
			return nil, invalidResponse(method, "completed task without a result object")
		}
		t.Result = w.Result
	case TaskFailed:
		e, err := decodeErrorObject(w.Error)
		if err != nil {
			return nil, invalidResponse(method, "failed task: %v", err)
		}
		t.Error = e
	default:
		return nil, invalidResponse(method, "unknown task status %q", w.Status)
	}
	return t, nil
}

func parseTaskTime(raw []byte) time.Time {
	s, ok := jsonString(raw)
	if !ok {
		return time.Time{}
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return tm
}

// jsonInt reads an integer that fits in an int64.
func jsonInt(raw []byte) (int64, bool) {
	if jsonrpc.KindOf(raw) != jsonrpc.KindNumber {
		return 0, false
	}
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}
