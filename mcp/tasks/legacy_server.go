package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The server side of the tasks of 2025-11-25 (experimental there, part of
// the core revision), served by the same Runtime and Store as the
// extension. On a 2025-11-25 session whose client declared the tasks
// capability, a tools/call with a "task" member for a tool of Support
// Optional or Required is answered at once with a CreateTaskResult and
// runs in the background (its handler's context is the task's from the
// start); tasks/get, tasks/result, tasks/list and tasks/cancel answer
// the revision's shapes. A question the task asks makes it
// input_required and is sent as a live request of a tasks/result
// waiting for the task, whose answer goes to the task. Seams of mcp:
// mcp.MethodSpec.Core (the methods, served on 2025-11-25 sessions only,
// without declaring the extension there) and MethodSpec.Capabilities
// (tasks in initialize), mcp.ToolOption.WithListing
// (execution.taskSupport in tools/list), mcp.CallToolRequest.Params (the
// task member), mcp.ClientCapabilities.Raw (the client's tasks
// capability). Earlier revisions have no tasks: the task member is
// ignored there.

const (
	legacyVersion = "2025-11-25"
	methodList    = "tasks/list"
	methodStatus  = "notifications/tasks/status"
	// relatedTask is the _meta key tying a message to its task.
	relatedTask = "io.modelcontextprotocol/related-task"
	// legacyListPage is the page size of tasks/list.
	legacyListPage = 50
)

// legacyRequest reports whether a request belongs to a 2025-11-25
// session (RequestMeta.ProtocolVersion).
func legacyRequest(version string) bool { return version == legacyVersion }

// legacyCapabilities declare the server's tasks to 2025-11-25 sessions.
var legacyCapabilities = json.RawMessage(`{"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}`)

// legacyTaskParam reads the task member of a tools/call's params: ok
// when it is an object; ttl is its ttl (0 when absent or not a positive
// integer).
func legacyTaskParam(params []byte) (ttl time.Duration, ok bool) {
	_ = jsonrpc.Fields(params, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) != "task" || jsonrpc.KindOf(v) != jsonrpc.KindObject {
			return nil
		}
		ok = true
		var w struct {
			TTL *int64 `json:"ttl"`
		}
		if json.Unmarshal(v, &w) == nil && w.TTL != nil && *w.TTL > 0 && *w.TTL < int64(24*365*time.Hour/time.Millisecond) {
			ttl = time.Duration(*w.TTL) * time.Millisecond
		}
		return errStop
	})
	return ttl, ok
}

// clientDeclaresTasks reports whether the session's initialize declared
// the tasks capability (an object).
func clientDeclaresTasks(caps *mcp.ClientCapabilities) bool {
	found := false
	_ = jsonrpc.Fields(caps.Raw, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) == "tasks" {
			found = jsonrpc.KindOf(v) == jsonrpc.KindObject
			return errStop
		}
		return nil
	})
	return found
}

// legacyCall serves a 2025-11-25 session's tools/call of a task tool: a
// task-augmented call of a client that declared tasks becomes a task at
// once; any other is an ordinary call, but that of a Required tool,
// which the revision answers -32601.
func (rt *Runtime) legacyCall(ctx context.Context, mode Support, next mcp.ToolHandler, p *mcp.CallToolRequest) (mcp.ToolResponse, error) {
	ttl, augmented := legacyTaskParam(p.Params)
	if !augmented || !clientDeclaresTasks(&p.Meta.ClientCapabilities) {
		if mode == Required {
			return nil, jsonrpcError(mcp.CodeMethodNotFound, "Method not found: tool "+strconv.Quote(p.Name)+" must be called as a task (taskSupport \"required\")")
		}
		return next(ctx, p)
	}
	ts := &taskStart{rt: rt, created: make(chan *Task, 1), legacy: true, legacyTTL: ttl}
	tctx, err := Start(context.WithValue(ctx, taskStartKey{}, ts))
	if err != nil {
		return nil, err
	}
	seed := <-ts.created
	lt := ts.lt
	go func() {
		resp, err := rt.safeCall(tctx, next, p)
		rt.settle(lt, tctx, p.Name, resp, err)
	}()
	return &mcp.ExtensionResult{Value: struct {
		Task *legacyTask `json:"task"`
	}{toLegacy(seed)}}, nil
}

// legacyTask is a Task as 2025-11-25 encodes it.
type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

func toLegacy(t *Task) *legacyTask {
	return &legacyTask{
		TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.LastUpdatedAt.UTC().Format(time.RFC3339Nano),
		TTL: t.TTLMs, PollInterval: t.PollIntervalMs,
	}
}

// legacyToolResult encodes a task's CallToolResult as 2025-11-25 sends
// it from tasks/result: with the related-task _meta.
func legacyToolResult(id string, r *mcp.CallToolResult) ([]byte, error) {
	cp := *r
	cp.Meta = make(mcp.Meta, len(r.Meta)+1)
	for k, v := range r.Meta {
		cp.Meta[k] = v
	}
	cp.Meta[relatedTask] = map[string]string{"taskId": id}
	return json.Marshal(&cp)
}

// legacyMethod serves tasks/get, tasks/result, tasks/list and
// tasks/cancel on a 2025-11-25 session. A task of another principal is
// answered exactly as an unknown one.
func (rt *Runtime) legacyMethod(ctx context.Context, req *mcp.ExtensionRequest) (mcp.Result, error) {
	principal, err := rt.srv.Principal(ctx)
	if err != nil {
		rt.log.Error("mcp: "+req.Method+": principal", "err", err)
		return nil, errInternal
	}
	id := req.Target
	switch req.Method {
	case MethodGet:
		t, err := rt.get(ctx, id, principal)
		if err != nil {
			return nil, err
		}
		return &mcp.ExtensionResult{Value: toLegacy(t)}, nil
	case MethodCancel:
		t, err := rt.get(ctx, id, principal)
		if err != nil {
			return nil, err
		}
		if t.Status.Terminal() {
			return nil, jsonrpcError(mcp.CodeInvalidParams, "Invalid params: cannot cancel task: already in terminal status "+strconv.Quote(string(t.Status)))
		}
		if _, err := rt.method(ctx, &mcp.ExtensionRequest{Method: MethodCancel, Target: id}); err != nil {
			return nil, err
		}
		if t, err = rt.get(ctx, id, principal); err != nil {
			return nil, err
		}
		return &mcp.ExtensionResult{Value: toLegacy(t)}, nil
	case methodResult:
		return rt.legacyResult(ctx, id, principal)
	case methodList:
		return rt.legacyList(req.Params, principal)
	}
	return nil, jsonrpcError(mcp.CodeMethodNotFound, "Method not found: "+req.Method+" is not part of protocol revision "+legacyVersion)
}

// legacyResult is tasks/result: it waits for the task to end, asking its
// questions live on this request meanwhile, and answers what the
// tools/call would have: the CallToolResult, the task's JSON-RPC error,
// or an error for a cancelled task. A change of the task's status seen
// while it waits is sent as notifications/tasks/status on its stream.
func (rt *Runtime) legacyResult(ctx context.Context, id, principal string) (mcp.Result, error) {
	var last Status
	for {
		t, err := rt.get(ctx, id, principal)
		if err != nil {
			return nil, err
		}
		if last != "" && t.Status != last {
			// The revision's optional status notification, on this
			// request's stream (best effort: a client gone away fails the
			// request below anyway).
			_ = mcp.Notify(ctx, methodStatus, toLegacy(t))
		}
		last = t.Status
		switch t.Status {
		case Completed:
			return &mcp.ExtensionResult{Value: t.Result}, nil
		case Failed:
			if t.Error != nil {
				return nil, t.Error
			}
			return nil, errInternal
		case Cancelled:
			return nil, jsonrpcError(mcp.CodeInternalError, "Internal error: task "+strconv.Quote(id)+" was cancelled")
		}
		var changed chan struct{}
		if lt := rt.local(id); lt != nil && samePrincipal(lt.principal, principal) {
			asked, err := lt.askOne(ctx)
			if err != nil {
				return nil, err
			}
			if asked {
				continue
			}
			lt.mu.Lock()
			if !lt.done {
				changed = lt.changed
			}
			lt.mu.Unlock()
		}
		timer := time.NewTimer(rt.opts.PollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-changed: // nil: only the timer (a task of another instance)
		case <-timer.C:
		}
		timer.Stop()
	}
}

// askOne asks one of the task's pending questions that no tasks/result
// is asking yet, live on the request ctx belongs to, and delivers the
// answer; asked is false when there was none.
func (lt *liveTask) askOne(ctx context.Context) (asked bool, err error) {
	lt.mu.Lock()
	var key string
	var p *pendingInput
	for k, q := range lt.pending {
		if !q.asking {
			key, p = k, q
			break
		}
	}
	if p == nil {
		lt.mu.Unlock()
		return false, nil
	}
	p.asking = true
	lt.mu.Unlock()
	ans, err := askLive(ctx, lt.id, p.raw)
	if err != nil {
		lt.mu.Lock()
		p.asking = false
		lt.mu.Unlock()
		return false, err
	}
	lt.deliver(mcp.InputResponses{key: ans})
	return true, nil
}

// askLive sends a task's question (a bare input request) as a live
// request of the session, through the asking API of the request ctx
// belongs to, and returns the answer as the task's asker expects it.
func askLive(ctx context.Context, id string, raw json.RawMessage) (json.RawMessage, error) {
	var q struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return nil, errInternal
	}
	switch q.Method {
	case "elicitation/create":
		var p struct {
			Mode            string          `json:"mode"`
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
			URL             string          `json:"url"`
		}
		if err := json.Unmarshal(q.Params, &p); err != nil {
			return nil, errInternal
		}
		if p.Mode == "url" {
			action, err := mcp.ElicitURL(ctx, p.Message, p.URL)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"action": action})
		}
		res, err := mcp.ElicitForm(ctx, p.Message, p.RequestedSchema)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	case "sampling/createMessage":
		var p mcp.CreateMessageRequest
		if err := json.Unmarshal(q.Params, &p); err != nil {
			return nil, errInternal
		}
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		res, err := mcp.Sample(ctx, &p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	case "roots/list":
		//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
		roots, err := mcp.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		if roots == nil {
			roots = []mcp.Root{}
		}
		return json.Marshal(map[string]any{"roots": roots})
	}
	return nil, errors.New("mcp: a task's question " + strconv.Quote(q.Method) + " cannot be asked on a " + legacyVersion + " session")
}

// legacyList is tasks/list: the principal's tasks, oldest first, a page
// at a time; the cursor is the last task id of the previous page. Only
// the in-memory store can list; a shared store answers an empty list.
func (rt *Runtime) legacyList(params []byte, principal string) (mcp.Result, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, paramsError("cursor must be a string")
	}
	var all []*Task
	if m, ok := rt.store.(*memoryStore); ok {
		all = m.list(principal)
	}
	start := 0
	if p.Cursor != nil {
		start = -1
		for i, t := range all {
			if t.TaskID == *p.Cursor {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, paramsError("invalid cursor")
		}
	}
	end := min(start+legacyListPage, len(all))
	out := struct {
		Tasks      []*legacyTask `json:"tasks"`
		NextCursor string        `json:"nextCursor,omitempty"`
	}{Tasks: make([]*legacyTask, 0, end-start)}
	for _, t := range all[start:end] {
		out.Tasks = append(out.Tasks, toLegacy(t))
	}
	if end < len(all) {
		out.NextCursor = all[end-1].TaskID
	}
	return &mcp.ExtensionResult{Value: &out}, nil
}
