package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The methods of the tasks extension: tasks/get, tasks/update,
// tasks/cancel. They are custom methods of mcp's extension seam
// (Server.AddExtension, Server.AddMethod), registered by Enable: the seam
// advertises the extension, decodes _meta and the taskId (the target:
// Mcp-Name on HTTP), answers -32021 to a request that did not declare the
// extension, -32601 to a session of an earlier revision, and runs them
// through the middleware like any method; handlers see an
// *mcp.ExtensionRequest whose Target is the task id.

// addMethods registers the three methods.
func (rt *Runtime) addMethods() {
	rt.srv.AddExtension(Extension, nil)
	// tasks/get and tasks/cancel are also 2025-11-25's own methods
	// (legacy_server.go), as are tasks/result and tasks/list.
	for _, name := range []string{MethodGet, MethodUpdate, MethodCancel, methodResult} {
		core := legacyVersion
		if name == MethodUpdate {
			core = ""
		}
		// tasks/result asks the task's questions live (a carrier, so
		// that it may ask).
		rt.srv.AddMethod(&mcp.MethodSpec{Name: name, Extension: Extension, TargetMember: "taskId", Core: core, Carrier: name == methodResult}, rt.method)
	}
	// The tasks capability of 2025-11-25's initialize comes with tasks/list.
	rt.srv.AddMethod(&mcp.MethodSpec{Name: methodList, Extension: Extension, Core: legacyVersion, Capabilities: legacyCapabilities}, rt.method)
}

// taskParams holds the params of a tasks method.
type taskParams struct {
	TaskID string
	// InputResponses are the answers of tasks/update.
	InputResponses mcp.InputResponses
}

func paramsError(msg string) *mcp.Error {
	return jsonrpc.NewError(mcp.CodeInvalidParams, "Invalid params: "+msg)
}

// decodeUpdate reads the answers of a tasks/update from its params
// (without _meta) with exact member names, as mcp's decoders read them;
// a requestState (not used by this server) and other unknown members
// are ignored. The seam refused params that repeat a member.
func decodeUpdate(params []byte) (mcp.InputResponses, *mcp.Error) {
	var out mcp.InputResponses
	var has bool
	var bad *mcp.Error
	err := jsonrpc.Fields(params, func(rawKey, v []byte) error {
		key := jsonrpc.Key(rawKey)
		switch {
		case string(key) == "inputResponses":
			if jsonrpc.KindOf(v) != jsonrpc.KindObject {
				bad = paramsError("inputResponses must be an object")
				return errStop
			}
			out, bad = decodeInputResponses(v)
			has = true
			if bad != nil {
				return errStop
			}
		case jsonrpc.EqualFold(key, "inputResponses"):
			bad = paramsError("member \"" + jsonrpc.Clip(key) + "\" in params differs from \"inputResponses\" only in case")
			return errStop
		}
		return nil
	})
	switch {
	case bad != nil:
		return nil, bad
	case err != nil:
		return nil, paramsError("params must be an object")
	case !has:
		return nil, paramsError("missing inputResponses")
	}
	return out, nil
}

var errStop = errors.New("stop")

// decodeInputResponses reads an inputResponses object (null: none),
// refusing a repeated key.
func decodeInputResponses(v []byte) (mcp.InputResponses, *mcp.Error) {
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindNull:
		return nil, nil
	case jsonrpc.KindObject:
	default:
		return nil, paramsError("inputResponses must be an object")
	}
	out := make(mcp.InputResponses)
	var bad *mcp.Error
	_ = jsonrpc.Fields(v, func(k, val []byte) error {
		key := string(jsonrpc.Key(k))
		if _, dup := out[key]; dup {
			bad = paramsError("duplicate key \"" + key + "\" in inputResponses")
			return errStop
		}
		out[key] = json.RawMessage(val)
		return nil
	})
	return out, bad
}

func taskNotFound() *mcp.Error {
	return jsonrpcError(mcp.CodeInvalidParams, "Invalid params: task not found (unknown or expired taskId)")
}

var errTooManyTasks = jsonrpcError(mcp.CodeInternalError, "Internal error: too many tasks, try again later")

// method serves tasks/get, tasks/update and tasks/cancel (the seam
// checked the extension). A task of another principal is answered
// exactly as an unknown one.
func (rt *Runtime) method(ctx context.Context, req *mcp.ExtensionRequest) (mcp.Result, error) {
	method := req.Method
	if legacyRequest(req.Meta.ProtocolVersion) {
		return rt.legacyMethod(ctx, req)
	}
	if method == methodResult || method == methodList {
		return nil, jsonrpcError(mcp.CodeMethodNotFound, "Method not found: "+method+" is a method of protocol revision "+legacyVersion+" (use "+MethodGet+")")
	}
	p := &taskParams{TaskID: req.Target}
	if method == MethodUpdate {
		var e *mcp.Error
		if p.InputResponses, e = decodeUpdate(req.Params); e != nil {
			return nil, e
		}
	}
	principal, err := rt.srv.Principal(ctx)
	if err != nil {
		rt.log.Error("mcp: "+method+": principal", "err", err)
		return nil, errInternal
	}
	switch method {
	case MethodGet:
		t, err := rt.get(ctx, p.TaskID, principal)
		if err != nil {
			return nil, err
		}
		return &mcp.ExtensionResult{Value: t}, nil
	case MethodUpdate:
		// Acknowledged whatever the id (SEP-2663); answers to keys not
		// pending are ignored.
		if lt := rt.local(p.TaskID); lt != nil {
			if samePrincipal(lt.principal, principal) {
				lt.deliver(p.InputResponses)
			}
			return mcp.EmptyResult{}, nil
		}
		if rt.shared != nil && len(p.InputResponses) > 0 {
			if err := rt.forward(ctx, p, principal); err != nil {
				return nil, err
			}
		}
		return mcp.EmptyResult{}, nil
	case MethodCancel:
		if lt := rt.local(p.TaskID); lt != nil && samePrincipal(lt.principal, principal) {
			lt.finish(Cancelled, nil, nil)
			return mcp.EmptyResult{}, nil
		}
		t, err := rt.get(ctx, p.TaskID, principal)
		if err != nil {
			return nil, err
		}
		if t.Status.Terminal() || rt.shared == nil {
			return mcp.EmptyResult{}, nil // already terminal: idempotent
		}
		// Running on another instance: the store records the
		// cancellation (unless the task ended meanwhile) and tells it.
		c := *t
		c.Status, c.LastUpdatedAt = Cancelled, time.Now().UTC()
		c.InputRequests, c.Result, c.Error = nil, nil, nil
		switch err := rt.shared.Cancel(ctx, &c); {
		case err == nil, errors.Is(err, ErrEnded):
			return mcp.EmptyResult{}, nil
		case errors.Is(err, ErrNotFound):
			return nil, taskNotFound()
		default:
			rt.log.Error("mcp: cancelling a task", "task", p.TaskID, "err", err)
			return nil, errInternal
		}
	}
	return nil, jsonrpcError(mcp.CodeMethodNotFound, "Method not found: "+method)
}

// get reads a task for principal: -32602 when it is unknown, expired or
// another principal's.
func (rt *Runtime) get(ctx context.Context, id, principal string) (*Task, error) {
	t, err := rt.store.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
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
func (lt *liveTask) deliver(responses mcp.InputResponses) {
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
