package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The tasks extension on tools/call: the Support option wraps a tool's
// handler (mcp.WrapTool); a call of a client that declared the extension
// runs the handler on a goroutine of its own, and Start answers the
// request with the task's seed (an mcp.ExtensionResult of ResultType
// "task") while the handler goes on with a detached context
// (mcp.Detach) whose questions go to the task.

// Support returns the AddTool option that lets the tool's calls become
// tasks of rt, as mode says (Forbidden leaves the tool as it is). Use it
// for tools of the server rt was enabled on: the task's result is
// encoded, and its principal derived, by that server.
func (rt *Runtime) Support(mode Support) mcp.ToolOption {
	o := mcp.WrapTool(func(next mcp.ToolHandler) mcp.ToolHandler {
		if mode == Forbidden {
			return next
		}
		return func(ctx context.Context, p *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			return rt.call(ctx, mode, next, p)
		}
	})
	// 2025-11-25 lists the tool's support (legacy_server.go).
	switch mode {
	case Optional:
		o = o.WithListing(legacyVersion, json.RawMessage(`{"execution":{"taskSupport":"optional"}}`))
	case Required:
		o = o.WithListing(legacyVersion, json.RawMessage(`{"execution":{"taskSupport":"required"}}`))
	}
	return o
}

// taskStart lets a handler of a task-supporting tool turn its call into a
// task (Start).
type taskStart struct {
	rt *Runtime

	created chan *Task // receives the seed once, on Start
	// legacyTTL, for a 2025-11-25 task: the lifetime the request asked
	// for (0: Options.TTL), at most Options.TTL.
	legacy    bool
	legacyTTL time.Duration

	mu      sync.Mutex
	lt      *liveTask
	taskCtx context.Context
	closed  bool // the handler returned without Start
}

type taskStartKey struct{}

type inTaskKey struct{}

// Start turns the current tools/call into a task: the client is answered
// now with the task's seed state (resultType "task") and the handler
// goes on in the background. Use the returned context from then on: it
// lives as long as the task (until it is cancelled with tasks/cancel, or
// its TTL), while the context the handler was given ends with the
// request. Questions asked with the returned context (Elicit, Sample,
// ...) make the task input_required until tasks/update answers them; the
// handler waits.
//
// Questions asked before Start are ordinary MRTR rounds, resolved
// synchronously before the task exists: the handler runs again from the
// top on each round, as for any tool.
//
// When the call cannot become a task (a tool without the Support
// option, a request that did not declare the extension, a legacy
// session, another method) Start returns ctx unchanged and a nil error:
// the handler simply runs to completion. It fails with -32603 when the
// server holds Options.MaxTasks tasks already, and with an error when
// called after the handler returned (from a goroutine it left behind).
func Start(ctx context.Context) (context.Context, error) {
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
		return ctx, errors.New("mcp: tasks.Start called after the handler returned")
	}
	rt := ts.rt
	principal, err := rt.srv.Principal(ctx)
	if err != nil {
		rt.log.Error("mcp: creating a task: principal", "err", err)
		return ctx, errInternal
	}
	now := time.Now().UTC()
	life := rt.opts.TTL
	if ts.legacyTTL > 0 && ts.legacyTTL < life {
		life = ts.legacyTTL
	}
	ttl := life.Milliseconds()
	seed := &Task{
		TaskID:         newTaskID(),
		Status:         Working,
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
		if errors.Is(err, ErrLimit) {
			return ctx, errTooManyTasks
		}
		rt.log.Error("mcp: creating a task", "err", err)
		return ctx, errInternal
	}
	lt := &liveTask{rt: rt, id: seed.TaskID, principal: principal, snap: seed, pending: map[string]*pendingInput{}, used: map[string]bool{},
		changed: make(chan struct{}), legacy: ts.legacy}
	// The task's context keeps the request's values (e.g. the principal)
	// but not its cancellation; it ends at the TTL or on tasks/cancel.
	// The request can send nothing more, and the task's questions go to
	// the task.
	cctx, cancel := context.WithDeadline(mcp.Detach(ctx, &taskAsker{lt: lt}), now.Add(life))
	lt.cancel = cancel
	tctx := context.WithValue(cctx, inTaskKey{}, lt)
	if rt.shared != nil {
		rt.unreserve(lt)
	} else {
		rt.mu.Lock()
		rt.live[seed.TaskID] = lt
		rt.mu.Unlock()
	}
	ts.lt, ts.taskCtx = lt, tctx
	rt.report(EventStarted, "")
	ts.created <- seed
	return tctx, nil
}

// InTask reports whether ctx is the context of a task (see Start). It is
// for code shared by a tool's synchronous and task paths, such as a
// helper that reports progress differently once the call went on in the
// background, or middleware that must not block a task.
func InTask(ctx context.Context) bool {
	return ctx.Value(inTaskKey{}) != nil
}

// missingExtension is the -32021 error naming the extension.
func missingExtension(what string) *mcp.Error {
	return mcp.MissingCapabilityError(mcp.ClientCapabilities{Extensions: map[string]json.RawMessage{Extension: json.RawMessage(`{}`)}},
		"Missing required client capability: "+what+" needs the "+Extension+" extension")
}

type toolOutcome struct {
	resp mcp.ToolResponse
	err  error
}

// call serves tools/call for a tool with task support. Without the
// extension it is an ordinary call (or -32021 for a required one); with
// it, the handler runs on its own goroutine so that Start can answer the
// request while the handler goes on.
func (rt *Runtime) call(ctx context.Context, mode Support, next mcp.ToolHandler, p *mcp.CallToolRequest) (mcp.ToolResponse, error) {
	if legacyRequest(p.Meta.ProtocolVersion) {
		return rt.legacyCall(ctx, mode, next, p)
	}
	if !mcp.ExtensionDeclared(ctx, Extension) {
		if mode == Required {
			return nil, missingExtension("tool " + strconv.Quote(p.Name))
		}
		return next(ctx, p)
	}
	ts := &taskStart{rt: rt, created: make(chan *Task, 1)}
	actx := context.WithValue(ctx, taskStartKey{}, ts)
	done := make(chan toolOutcome, 1)
	go func() {
		resp, err := rt.safeCall(actx, next, p)
		ts.mu.Lock()
		lt := ts.lt
		ts.closed = lt == nil
		ts.mu.Unlock()
		if lt == nil {
			done <- toolOutcome{resp, err}
			return
		}
		rt.settle(lt, ts.taskCtx, p.Name, resp, err)
	}()
	select {
	case o := <-done:
		return o.resp, o.err
	case seed := <-ts.created:
		return &mcp.ExtensionResult{Value: seed, ResultType: ResultType}, nil
	}
}

// safeCall runs a handler on a goroutine of its own, turning a panic
// into an internal error.
func (rt *Runtime) safeCall(ctx context.Context, h mcp.ToolHandler, p *mcp.CallToolRequest) (resp mcp.ToolResponse, err error) {
	defer func() {
		if v := recover(); v != nil {
			rt.log.Error("mcp: tool handler panicked", "tool", p.Name, "panic", v)
			resp, err = nil, errInternal
		}
	}()
	return h(ctx, p)
}

// settle records the handler's outcome as the task's final state, with
// the same rules as a synchronous call: a JSON-RPC error fails the task,
// any other error is a completed isError result.
func (rt *Runtime) settle(lt *liveTask, ctx context.Context, name string, resp mcp.ToolResponse, err error) {
	if err != nil {
		var e *mcp.Error
		switch {
		case errors.As(err, &e):
			lt.finish(Failed, nil, e)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			lt.finish(Failed, nil, jsonrpcError(mcp.CodeInternalError, "Task expired"))
		case ctx.Err() != nil:
			lt.finish(Cancelled, nil, nil)
		case errors.Is(err, mcp.ErrInputRequired):
			rt.log.Error("mcp: task asked with the request's context, not tasks.Start's", "tool", name)
			lt.finish(Failed, nil, errInternal)
		default:
			rt.settleResult(lt, name, mcp.ErrorResult(err.Error()))
		}
		return
	}
	r, ok := resp.(*mcp.CallToolResult)
	if !ok || r == nil {
		rt.log.Error("mcp: task handler returned no tool result", "tool", name)
		lt.finish(Failed, nil, errInternal)
		return
	}
	rt.settleResult(lt, name, r)
}

func (rt *Runtime) settleResult(lt *liveTask, name string, r *mcp.CallToolResult) {
	if r.Content == nil {
		r.Content = []mcp.Content{}
	}
	var b []byte
	var err error
	if lt.legacy {
		b, err = legacyToolResult(lt.id, r)
	} else {
		b, err = rt.srv.MarshalResult(r)
	}
	switch {
	case err != nil:
		rt.log.Error("mcp: encoding a task result", "tool", name, "err", err)
		lt.finish(Failed, nil, errInternal)
	case len(b) > rt.opts.MaxResultBytes:
		rt.log.Error("mcp: task result too large", "tool", name, "bytes", len(b))
		lt.finish(Failed, nil, jsonrpcError(mcp.CodeInternalError, "Internal error: result too large"))
	default:
		lt.finish(Completed, b, nil)
	}
}
