package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The methods of the tasks extension: tasks/get, tasks/update,
// tasks/cancel.

// TaskRequest holds the params of tasks/get, tasks/update and
// tasks/cancel.
type TaskRequest struct {
	Meta   RequestMeta `json:"_meta"`
	TaskID string      `json:"taskId"`
	// InputResponses are the answers of tasks/update.
	InputResponses InputResponses `json:"inputResponses,omitempty"`
}

func (p *TaskRequest) RequestMeta() *RequestMeta { return &p.Meta }

var (
	taskNames       = []string{"_meta", "taskId"}
	taskUpdateNames = []string{"_meta", "taskId", "inputResponses"}
)

func decodeTaskGet(raw []byte, p *metaPresence) (Params, *Error) {
	return decodeTask(raw, p, taskNames)
}

func decodeTaskUpdate(raw []byte, p *metaPresence) (Params, *Error) {
	return decodeTask(raw, p, taskUpdateNames)
}

// decodeTask decodes the params of a tasks method; a requestState (not
// used by this server) and other unknown members are ignored.
func decodeTask(raw []byte, p *metaPresence, names []string) (Params, *Error) {
	r := new(TaskRequest)
	var hasID, hasResponses bool
	err := scanObject(raw, "params", names, func(i int, v []byte) *Error {
		var e *Error
		switch i {
		case 0:
			e = decodeMeta(v, &r.Meta, p)
		case 1:
			r.TaskID, e = decodeString(v, "taskId")
			hasID = true
		case 2:
			if jsonrpc.KindOf(v) != jsonrpc.KindObject {
				return paramsError("inputResponses must be an object")
			}
			r.InputResponses, e = decodeInputResponses(v)
			hasResponses = true
		}
		return e
	})
	switch {
	case err != nil || !p.meta:
	case !hasID:
		err = paramsError("missing taskId")
	case len(names) == len(taskUpdateNames) && !hasResponses:
		err = paramsError("missing inputResponses")
	}
	return r, err
}

func taskNotFound() *Error {
	return jsonrpcError(CodeInvalidParams, "Invalid params: task not found (unknown or expired taskId)")
}

var errTooManyTasks = jsonrpcError(CodeInternalError, "Internal error: too many tasks, try again later")

// taskMethod serves tasks/get, tasks/update and tasks/cancel. A task of
// another principal is answered exactly as an unknown one.
func (s *Server) taskMethod(ctx context.Context, method string, p *TaskRequest) (Result, error) {
	if s.tasks == nil {
		return nil, methodNotFound(method)
	}
	if !hasTasksExtension(&p.Meta.ClientCapabilities) {
		return nil, missingTasksExtension(method)
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
