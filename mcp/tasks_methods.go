package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The methods of the tasks extension: tasks/get, tasks/update,
// tasks/cancel. They are custom methods of the extension seam
// (extension.go), registered when ServerOptions.Tasks is set: the seam
// advertises the extension, decodes _meta and the taskId (the target:
// Mcp-Name on HTTP), answers -32021 to a request that did not declare the
// extension, -32601 to a session of an earlier revision, and runs them
// through the middleware like any method; handlers see an
// *ExtensionRequest whose Target is the task id.

// addTaskMethods registers the three methods.
func (s *Server) addTaskMethods() {
	s.AddExtension(ExtensionTasks, nil)
	for _, name := range []string{MethodTasksGet, MethodTasksUpdate, MethodTasksCancel} {
		s.AddMethod(&MethodSpec{Name: name, Extension: ExtensionTasks, TargetMember: "taskId"}, s.taskMethod)
	}
}

// taskParams holds the params of a tasks method.
type taskParams struct {
	TaskID string
	// InputResponses are the answers of tasks/update.
	InputResponses InputResponses
}

var taskUpdateNames = []string{"inputResponses"}

// decodeTaskUpdate reads the answers of a tasks/update from its params
// (without _meta) with the exact-key scanner; a requestState (not used by
// this server) and other unknown members are ignored.
func decodeTaskUpdate(params []byte) (InputResponses, *Error) {
	var out InputResponses
	var has bool
	err := scanObject(params, "params", taskUpdateNames, func(_ int, v []byte) *Error {
		if jsonrpc.KindOf(v) != jsonrpc.KindObject {
			return paramsError("inputResponses must be an object")
		}
		var e *Error
		out, e = decodeInputResponses(v)
		has = true
		return e
	})
	if err == nil && !has {
		err = paramsError("missing inputResponses")
	}
	return out, err
}

func taskNotFound() *Error {
	return jsonrpcError(CodeInvalidParams, "Invalid params: task not found (unknown or expired taskId)")
}

var errTooManyTasks = jsonrpcError(CodeInternalError, "Internal error: too many tasks, try again later")

// taskMethod serves tasks/get, tasks/update and tasks/cancel (the seam
// checked the extension). A task of another principal is answered
// exactly as an unknown one.
func (s *Server) taskMethod(ctx context.Context, req *ExtensionRequest) (Result, error) {
	method := req.Method
	p := &taskParams{TaskID: req.Target}
	if method == MethodTasksUpdate {
		var e *Error
		if p.InputResponses, e = decodeTaskUpdate(req.Params); e != nil {
			return nil, e
		}
	}
	principal, err := s.taskPrincipal(ctx)
	if err != nil {
		s.log.Error("mcp: "+method+": principal", "err", err)
		return nil, errInternal
	}
	rt := s.tasks
	switch method {
	case MethodTasksGet:
		return rt.get(ctx, p.TaskID, principal)
	case MethodTasksUpdate:
		// Acknowledged whatever the id (SEP-2663); answers to keys not
		// pending are ignored.
		if lt := rt.local(p.TaskID); lt != nil {
			if samePrincipal(lt.principal, principal) {
				lt.deliver(p.InputResponses)
			}
			return EmptyResult{}, nil
		}
		if rt.shared != nil && len(p.InputResponses) > 0 {
			if err := rt.forward(ctx, p, principal); err != nil {
				return nil, err
			}
		}
		return EmptyResult{}, nil
	case MethodTasksCancel:
		if lt := rt.local(p.TaskID); lt != nil && samePrincipal(lt.principal, principal) {
			lt.finish(TaskCancelled, nil, nil)
			return EmptyResult{}, nil
		}
		t, err := rt.get(ctx, p.TaskID, principal)
		if err != nil {
			return nil, err
		}
		if t.Status.Terminal() || rt.shared == nil {
			return EmptyResult{}, nil // already terminal: idempotent
		}
		// Running on another instance: the store records the
		// cancellation (unless the task ended meanwhile) and tells it.
		c := *t
		c.Status, c.LastUpdatedAt = TaskCancelled, time.Now().UTC()
		c.InputRequests, c.Result, c.Error = nil, nil, nil
		switch err := rt.shared.Cancel(ctx, &c); {
		case err == nil, errors.Is(err, ErrTaskEnded):
			return EmptyResult{}, nil
		case errors.Is(err, ErrTaskNotFound):
			return nil, taskNotFound()
		default:
			s.log.Error("mcp: cancelling a task", "task", p.TaskID, "err", err)
			return nil, errInternal
		}
	}
	return nil, methodNotFound(method)
}

// get reads a task for principal: -32602 when it is unknown, expired or
// another principal's.
func (rt *taskRuntime) get(ctx context.Context, id, principal string) (*Task, error) {
	t, err := rt.store.Get(ctx, id)
	switch {
	case errors.Is(err, ErrTaskNotFound):
		return nil, taskNotFound()
	case err != nil:
		rt.log.Error("mcp: reading a task", "task", id, "err", err)
		return nil, errInternal
	case !samePrincipal(t.Principal, principal):
		return nil, taskNotFound()
	}
	return t, nil
}

// deliver hands answers to the questions waiting for them.
func (lt *liveTask) deliver(responses InputResponses) {
	lt.mu.Lock()
	if lt.done {
		lt.mu.Unlock()
		return
	}
	n := 0
	for k, raw := range responses {
		p := lt.pending[k]
		if p == nil || string(jsonrpc.TrimSpace(raw)) == "null" {
			continue
		}
		delete(lt.pending, k)
		p.answer <- raw // buffered, and each question is answered once
		n++
	}
	ended := n > 0 && lt.republishLocked()
	lt.mu.Unlock()
	if ended {
		lt.drop()
	}
}
