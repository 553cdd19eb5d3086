package mcp

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"
)

// The tasks extension on tools/call: a task-supporting tool becomes a
// task when its handler calls StartTask.

// taskStart lets a handler of a task-supporting tool turn its call into a
// task (StartTask).
type taskStart struct {
	srv  *Server
	req  *CallToolRequest
	caps *ClientCapabilities

	created chan *CreateTaskResult // receives the seed once, on StartTask

	mu      sync.Mutex
	lt      *liveTask
	taskCtx context.Context
	closed  bool // the handler returned without StartTask
}

type taskStartKey struct{}

// StartTask turns the current tools/call into a task: the client is
// answered now with a CreateTaskResult and the handler goes on in the
// background. Use the returned context from then on: it lives as long as
// the task (until it is cancelled with tasks/cancel, or its TTL), while
// the context the handler was given ends with the request. Questions
// asked with the returned context (Elicit, Sample, ...) make the task
// input_required until tasks/update answers them; the handler waits.
//
// Questions asked before StartTask are ordinary MRTR rounds, resolved
// synchronously before the task exists: the handler runs again from the
// top on each round, as for any tool.
//
// When the call cannot become a task (a tool without WithTaskSupport, a
// request that did not declare the extension, a legacy session, another
// method) StartTask returns ctx unchanged and a nil error: the handler
// simply runs to completion. It fails with -32603 when the server holds
// TaskOptions.MaxTasks tasks already, and with an error when called
// after the handler returned (from a goroutine it left behind).
func StartTask(ctx context.Context) (context.Context, error) {
	ts, _ := ctx.Value(taskStartKey{}).(*taskStart)
	if ts == nil {
		return ctx, nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.lt != nil {
		return ts.taskCtx, nil
	}
	if ts.closed {
		return ctx, errors.New("mcp: StartTask called after the handler returned")
	}
	rt := ts.srv.tasks
	principal, err := ts.srv.taskPrincipal(ctx)
	if err != nil {
		ts.srv.log.Error("mcp: creating a task: principal", "err", err)
		return ctx, errInternal
	}
	now := time.Now().UTC()
	ttl := rt.opts.TTL.Milliseconds()
	seed := &Task{
		TaskID:         newTaskID(),
		Status:         TaskWorking,
		CreatedAt:      now,
		LastUpdatedAt:  now,
		TTLMs:          &ttl,
		PollIntervalMs: rt.opts.PollInterval.Milliseconds(),
		Principal:      principal,
	}
	if rt.shared != nil {
		// The shared store holds the whole fleet's tasks: MaxTasks bounds
		// those running here.
		if !rt.reserve() {
			return ctx, errTooManyTasks
		}
		rt.startFleet()
	}
	if err := rt.store.Create(ctx, seed); err != nil {
		if rt.shared != nil {
			rt.unreserve(nil)
		}
		if errors.Is(err, ErrTaskLimit) {
			return ctx, errTooManyTasks
		}
		ts.srv.log.Error("mcp: creating a task", "err", err)
		return ctx, errInternal
	}
	// The task's context keeps the request's values (e.g. the principal)
	// but not its cancellation; it ends at the TTL or on tasks/cancel.
	cctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), now.Add(rt.opts.TTL))
	lt := &liveTask{rt: rt, id: seed.TaskID, principal: principal, cancel: cancel, snap: seed, pending: map[string]*pendingInput{}, used: map[string]bool{}}
	tsc := &requestScope{Context: cctx, s: ts.srv, method: MethodToolsCall, era: modern}
	if sc := scopeFrom(ctx); sc != nil {
		tsc.id, tsc.meta = sc.id, sc.meta
		// The request's response is being written: nothing more goes to
		// its stream, and its MRTR asker is done.
		sc.out, sc.asker = nil, nil
	}
	tsc.asker = &taskAsker{lt: lt, caps: ts.caps}
	if rt.shared != nil {
		rt.unreserve(lt)
	} else {
		rt.mu.Lock()
		rt.live[seed.TaskID] = lt
		rt.mu.Unlock()
	}
	ts.lt, ts.taskCtx = lt, tsc
	rt.observe(Event{Kind: EventTaskStarted})
	ts.created <- &CreateTaskResult{Task: *seed}
	return tsc, nil
}

// InTask reports whether ctx is the context of a task (see StartTask).
// It is for code shared by a tool's synchronous and task paths, such as
// a helper that reports progress differently once the call went on in
// the background, or middleware that must not block a task.
func InTask(ctx context.Context) bool {
	sc := scopeFrom(ctx)
	if sc == nil {
		return false
	}
	_, ok := sc.asker.(*taskAsker)
	return ok
}

// hasTasksExtension reports whether a request declared the extension.
func hasTasksExtension(caps *ClientCapabilities) bool {
	_, ok := caps.Extensions[ExtensionTasks]
	return ok
}

// missingTasksExtension is the -32021 error naming the extension.
func missingTasksExtension(what string) *Error { return missingExtension(what, ExtensionTasks) }

type toolOutcome struct {
	resp ToolResponse
	err  error
}

// callTaskTool serves tools/call for a tool with task support. Without
// the extension it is an ordinary call (or -32021 for a required one);
// with it, the handler runs on its own goroutine so that StartTask can
// answer the request while the handler goes on.
func (s *Server) callTaskTool(ctx context.Context, t *serverTool, p *CallToolRequest) (Result, error) {
	sc := scopeFrom(ctx)
	negotiated := s.tasks != nil && (sc == nil || sc.era.extensions()) && hasTasksExtension(&p.Meta.ClientCapabilities)
	if !negotiated {
		if t.task == TaskRequired {
			return nil, missingTasksExtension("tool " + strconv.Quote(p.Name))
		}
		return s.runTool(ctx, t, p)
	}
	ts := &taskStart{srv: s, req: p, caps: &p.Meta.ClientCapabilities, created: make(chan *CreateTaskResult, 1)}
	actx := context.WithValue(ctx, taskStartKey{}, ts)
	done := make(chan toolOutcome, 1)
	go func() {
		resp, err := s.safeToolCall(actx, t, p)
		ts.mu.Lock()
		lt := ts.lt
		ts.closed = lt == nil
		ts.mu.Unlock()
		if lt == nil {
			done <- toolOutcome{resp, err}
			return
		}
		s.settleTask(lt, ts.taskCtx, p.Name, resp, err)
	}()
	select {
	case o := <-done:
		return s.toolResult(ctx, p.Name, o.resp, o.err)
	case ct := <-ts.created:
		return ct, nil
	}
}

// safeToolCall runs a handler on a goroutine of its own, turning a panic
// into an internal error.
func (s *Server) safeToolCall(ctx context.Context, t *serverTool, p *CallToolRequest) (resp ToolResponse, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("mcp: tool handler panicked", "tool", p.Name, "panic", v)
			resp, err = nil, errInternal
		}
	}()
	return t.handler(ctx, p)
}

// settleTask records the handler's outcome as the task's final state,
// with the same rules as a synchronous call: a JSON-RPC error fails the
// task, any other error is a completed isError result.
func (s *Server) settleTask(lt *liveTask, ctx context.Context, name string, resp ToolResponse, err error) {
	if err != nil {
		var e *Error
		switch {
		case errors.As(err, &e):
			lt.finish(TaskFailed, nil, e)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			lt.finish(TaskFailed, nil, jsonrpcError(CodeInternalError, "Task expired"))
		case ctx.Err() != nil:
			lt.finish(TaskCancelled, nil, nil)
		case errors.Is(err, ErrInputRequired):
			s.log.Error("mcp: task asked with the request's context, not StartTask's", "tool", name)
			lt.finish(TaskFailed, nil, errInternal)
		default:
			s.settleResult(lt, name, ErrorResult(err.Error()))
		}
		return
	}
	r, ok := resp.(*CallToolResult)
	if !ok || r == nil {
		s.log.Error("mcp: task handler returned no tool result", "tool", name)
		lt.finish(TaskFailed, nil, errInternal)
		return
	}
	s.settleResult(lt, name, r)
}

func (s *Server) settleResult(lt *liveTask, name string, r *CallToolResult) {
	if r.Content == nil {
		r.Content = []Content{}
	}
	b, err := s.appendCallToolResult(nil, r)
	switch {
	case err != nil:
		s.log.Error("mcp: encoding a task result", "tool", name, "err", err)
		lt.finish(TaskFailed, nil, errInternal)
	case len(b) > lt.rt.opts.MaxResultBytes:
		s.log.Error("mcp: task result too large", "tool", name, "bytes", len(b))
		lt.finish(TaskFailed, nil, jsonrpcError(CodeInternalError, "Internal error: result too large"))
	default:
		lt.finish(TaskCompleted, b, nil)
	}
}

// appendCreateTaskResult writes a CreateTaskResult: resultType "task",
// the server's identity and the task's seed state.
func (s *Server) appendCreateTaskResult(dst []byte, r *CreateTaskResult) ([]byte, error) {
	dst = append(dst, `{"resultType":"task",`...)
	dst = append(dst, s.serverInfoMeta...)
	start := len(dst)
	dst, err := marshalAppend(dst, &r.Task)
	if err != nil {
		return nil, err
	}
	dst[start] = ',' // the task's members follow ours
	return dst, nil
}
