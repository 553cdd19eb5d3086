package tasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// seenRequest is what a recording middleware saw of one request.
type seenRequest struct {
	method, target, transport string
	before, after             string // ProtocolVersion before next and once it returned
	round                     int
	call                      *CallInfo
	params                    string
	err                       error
}

// recorder is client middleware that records every request and adds
// the member "x-mw" (the method) to each.
type recorder struct {
	mu   sync.Mutex
	seen []seenRequest
}

func (rc *recorder) middleware(next ClientHandler) ClientHandler {
	return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
		sr := seenRequest{method: req.Method, target: req.Target, before: req.ProtocolVersion, call: req.Call, params: string(req.Params)}
		if req.Call != nil {
			sr.round = req.Call.Round
		}
		req.Meta["x-mw"] = req.Method
		res, err := next(ctx, req)
		sr.after, sr.transport, sr.err = req.ProtocolVersion, req.Transport, err
		rc.mu.Lock()
		rc.seen = append(rc.seen, sr)
		rc.mu.Unlock()
		return res, err
	}
}

func (rc *recorder) all() []seenRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.seen)
}

// onEndCounter is middleware that registers an OnEnd on each call and
// counts how often it ran, with the error it got.
type onEndCounter struct {
	mu   sync.Mutex
	runs int
	errs []error
	vals []any
}

type valKey struct{}

func (oc *onEndCounter) middleware(next ClientHandler) ClientHandler {
	return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
		if ci := req.Call; ci != nil && ci.Value(valKey{}) == nil {
			ci.SetValue(valKey{}, "v")
			ci.OnEnd(func(rounds int, err error) {
				oc.mu.Lock()
				oc.runs++
				oc.errs = append(oc.errs, err)
				oc.vals = append(oc.vals, ci.Value(valKey{}))
				oc.mu.Unlock()
			})
		}
		return next(ctx, req)
	}
}

func (oc *onEndCounter) check(t *testing.T, want func(error) bool) {
	t.Helper()
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.runs != 1 || !want(oc.errs[0]) || oc.vals[0] != "v" {
		t.Fatalf("OnEnd ran %d times with %v (value %v)", oc.runs, oc.errs, oc.vals)
	}
	oc.runs, oc.errs, oc.vals = 0, nil, nil
}

// The task requests of a call that became a task (tasks/get, and
// tasks/cancel when the caller gives up) carry the call's CallInfo and
// its CallOptions.Meta; OnEnd runs once the task ends, or once it is
// detached.
func TestClientMiddlewareSeesTheTaskRequestsOfACall(t *testing.T) {
	t.Parallel()
	s, release, _ := newTaskServer(t, fastTasks)
	var mu sync.Mutex
	var bodies []string
	h := NewHTTPHandler(s, nil)
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			mu.Lock()
			bodies = append(bodies, string(b))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
	var rc recorder
	oc := &onEndCounter{}
	c := rawHTTPClient(t, wrapped, nil, withTasks(&ClientOptions{Middleware: []ClientMiddleware{oc.middleware, rc.middleware}}, &tasks.ClientOptions{PollInterval: 5 * time.Millisecond}))
	release <- "x"
	res, err := c.CallTool(context.Background(), "job", nil, &CallOptions{Meta: Meta{"traceparent": "tp"}})
	if err != nil || resultText(t, res) != "done x" {
		t.Fatalf("%v %v", res, err)
	}
	oc.check(t, func(e error) bool { return e == nil })
	seen := rc.all()
	if len(seen) < 2 || seen[0].method != MethodToolsCall || seen[1].method != tasks.MethodGet {
		t.Fatalf("saw %+v", seen)
	}
	for _, s := range seen {
		if s.call != seen[0].call || s.round != 1 {
			t.Errorf("%s: call %p round %d", s.method, s.call, s.round)
		}
		if s.method == tasks.MethodGet && s.target == "" {
			t.Errorf("tasks/get without the task id as Target")
		}
	}
	mu.Lock()
	for _, b := range bodies {
		if !strings.Contains(b, `"traceparent":"tp"`) {
			t.Errorf("a request of the call without its Meta: %s", b)
		}
	}
	mu.Unlock()
	// Detached: the call ends when the task is handed back, and the
	// handle given out carries neither the call nor its Meta.
	rc.seen = nil
	_, err = c.CallTool(tasks.Detached(context.Background()), "job", nil, &CallOptions{Meta: Meta{"traceparent": "tp"}})
	var tpe *tasks.PendingError
	if !errors.As(err, &tpe) {
		t.Fatal(err)
	}
	oc.check(t, func(e error) bool { return errors.As(e, &tpe) })
	release <- "y"
	if _, err := tpe.Task.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range rc.all()[1:] {
		if s.call != nil {
			t.Errorf("%s of a handle given out has a CallInfo", s.method)
		}
	}
}

// The tasks extension is built on the seam: its methods reach
// middleware as *ExtensionRequest with the task id as the target, and a
// session of an earlier revision does not have them.
func TestTaskMethodsAreCustomMethodsOfTheSeam(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var targets []string
	mw := func(next ServerHandler) ServerHandler {
		return func(ctx context.Context, method string, p Params) (Result, error) {
			if r, ok := p.(*ExtensionRequest); ok && r.Extension() == tasks.Extension {
				mu.Lock()
				targets = append(targets, method+"="+r.Target)
				mu.Unlock()
			}
			return next(ctx, method, p)
		}
	}
	s := NewServer(Implementation{Name: "t", Version: "1"}, &ServerOptions{Middleware: []ServerMiddleware{mw}})
	tasks.Enable(s, nil)
	c := newTaskClient(t, s, tasksCaps)
	if v := c.call(tasks.MethodGet, `"taskId":"abc"`); errorCode(t, v) != CodeInvalidParams {
		t.Fatalf("tasks/get of an unknown id: %v", v)
	}
	mu.Lock()
	if len(targets) != 1 || targets[0] != "tasks/get=abc" {
		t.Fatalf("middleware saw %v", targets)
	}
	mu.Unlock()
	lc := NewClient(NewHTTPClientTransport(c.url, nil), &ClientOptions{Mode: ModeLegacy})
	t.Cleanup(func() { lc.Close() })
	_, err := lc.Request(context.Background(), &MethodCall{Method: tasks.MethodGet, Params: map[string]string{"taskId": "abc"}, TargetMember: "taskId"}, nil)
	// tasks/get is 2025-11-25's own method too, served there
	// (legacy_server.go): an unknown id is not found.
	if ErrorCode(err) != CodeInvalidParams {
		t.Fatalf("tasks/get on a session: %v", err)
	}
}
