package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The client side of the tasks extension. EnableClient declares the
// extension on the modern requests of a Client and registers the
// follower of resultType "task" (mcp.ClientExtensions.Results): a
// tools/call the server answers with a task is then awaited: tasks/get is
// polled at the server's pollIntervalMs, the questions of an
// input_required status are answered with the Client's handlers
// (mcp.Client.Answer) and sent with tasks/update, and the task's inlined
// result (or error) becomes the call's. With a Detached context (or
// CallOptions.Manual) the call returns a *PendingError holding a *Handle
// instead, and the caller drives the task itself.

// ClientOptions bound what a client does for a task. Zero fields take
// the defaults.
type ClientOptions struct {
	// PollInterval is the wait between two tasks/get when the server
	// suggests none (pollIntervalMs absent or 0). Default 1 s.
	PollInterval time.Duration
	// MaxPollInterval caps the server's pollIntervalMs. Default 30 s.
	MaxPollInterval time.Duration
	// MaxInputRequests bounds the input requests answered for one
	// input_required status; the others are answered after the next
	// tasks/get. Default 64.
	MaxInputRequests int
	// TTL, when positive, is the lifetime a 2025-11-25 task-augmented
	// tools/call asks for (task.ttl); zero leaves it to the server. The
	// 2026-07-28 extension has no such request: its server decides.
	TTL time.Duration

	// sleep waits between two tasks/get; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// EnableClient enables the tasks extension on the client options o
// (before mcp.NewClient): every 2026-07-28 request declares it in
// clientCapabilities.extensions (unless o.Extensions.Declared has an
// entry for it already), so that a server may answer tools/call with a
// task, and CallTool follows such a task to its result within the bounds
// of to (nil: the defaults).
func EnableClient(o *mcp.ClientOptions, to *ClientOptions) {
	f := &follower{log: o.Logger}
	if to != nil {
		f.o = *to
	}
	f.o.defaults()
	if f.log == nil {
		f.log = slog.Default()
	}
	x := &mcp.ClientExtensions{}
	if o.Extensions != nil {
		*x = *o.Extensions
	}
	decl := make(map[string]json.RawMessage, len(x.Declared)+1)
	for k, v := range x.Declared {
		decl[k] = v
	}
	if _, ok := decl[Extension]; !ok {
		decl[Extension] = json.RawMessage(`{}`)
	}
	x.Declared = decl
	res := make(map[mcp.ResultType]mcp.ResultHandler, len(x.Results)+1)
	for k, v := range x.Results {
		res[k] = v
	}
	res[ResultType] = f.follow
	x.Results = res
	caps := make(map[string]json.RawMessage, len(x.LegacyCapabilities)+1)
	for k, v := range x.LegacyCapabilities {
		caps[k] = v
	}
	if _, ok := caps["tasks"]; !ok {
		caps["tasks"] = legacyCapability
	}
	x.LegacyCapabilities = caps
	x.LegacyParams = f.legacyParams
	x.LegacyResult = legacyResult
	o.Extensions = x
}

func (o *ClientOptions) defaults() {
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.MaxPollInterval <= 0 {
		o.MaxPollInterval = 30 * time.Second
	}
	if o.MaxInputRequests <= 0 {
		o.MaxInputRequests = 64
	}
	if o.sleep == nil {
		o.sleep = sleepCtx
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pollInterval is the wait the server suggests, within the client's
// bounds.
func (o *ClientOptions) pollInterval(ms int64) time.Duration {
	if ms <= 0 {
		return min(o.PollInterval, o.MaxPollInterval)
	}
	if ms >= o.MaxPollInterval.Milliseconds() {
		return o.MaxPollInterval
	}
	return time.Duration(ms) * time.Millisecond
}

// ErrCancelled matches the error of a call, or of Handle.Wait, whose
// task ended cancelled (by tasks/cancel, from this client or another).
var ErrCancelled = errors.New("mcp: task cancelled")

// cancelTimeout bounds the tasks/cancel sent when an automatic call
// gives its task up.
const cancelTimeout = 5 * time.Second

type detachKey struct{}

// Detached returns a context whose calls hand a task back to the caller
// as a *PendingError instead of following it to its end (as
// CallOptions.Manual does).
func Detached(ctx context.Context) context.Context {
	return context.WithValue(ctx, detachKey{}, true)
}

// Handle is a task of a server, known by its id. The id and the server's
// address are all that is needed to follow the task from elsewhere:
// persist ID and get a handle again with Get. Its methods are safe for
// concurrent use.
type Handle struct {
	// ID is the task id (taskId).
	ID string
	c  *mcp.Client
	f  *follower
	// call ties the task requests of an automatic call to it (its
	// CallOptions.Meta, its CallInfo); nil on a handle given out.
	call *mcp.ResultCall
	// tool is the tool whose call became the task, when known (a handle
	// of a *PendingError): Wait checks its result's structured content
	// as CallTool does.
	tool string
}

// Get returns a handle for the task id on c's server (a task created by
// another Client, or by this one in an earlier process). The client must
// declare the extension (EnableClient): the server rejects tasks methods
// of a request that does not. o bounds Wait (nil: the defaults).
func Get(c *mcp.Client, id string, o *ClientOptions) *Handle {
	f := &follower{log: slog.Default()}
	if o != nil {
		f.o = *o
	}
	f.o.defaults()
	return &Handle{ID: id, c: c, f: f}
}

// PendingError is returned by CallTool (and Resume) with a Detached
// context or CallOptions.Manual when the server answers with a task
// instead of a result: Task follows it, Seed is the server's answer (the
// task's seed state).
type PendingError struct {
	Tool string
	Task *Handle
	Seed *Task
}

// Error names the tool and the task.
func (e *PendingError) Error() string {
	return fmt.Sprintf("mcp: tools/call %q became task %q; follow it with its tasks.Handle", e.Tool, e.Task.ID)
}

// Get calls tasks/get: the task's current state. For a completed task,
// Result is the tool's raw CallToolResult (decode it with Wait); for a
// failed one, Error is the JSON-RPC error. An unknown or expired id is
// the server's -32602 *mcp.Error.
func (h *Handle) Get(ctx context.Context) (*Task, error) {
	raw, err := h.request(ctx, MethodGet, nil)
	if err != nil {
		return nil, err
	}
	if isLegacy(h.c) {
		return decodeLegacyTask(MethodGet, h.ID, raw, false)
	}
	return decodeState(MethodGet, h.ID, raw)
}

// Update calls tasks/update with answers to the task's input requests,
// by key (as returned by Get in InputRequests). The server acknowledges
// any answer; one to a key that is not pending is dropped.
func (h *Handle) Update(ctx context.Context, responses mcp.InputResponses) error {
	rs, err := encodeResponses(responses)
	if err != nil {
		return err
	}
	return h.update(ctx, rs)
}

// encodeResponses writes an inputResponses object, keys in order, each
// answer compacted ({} for none).
func encodeResponses(responses mcp.InputResponses) ([]byte, error) {
	keys := make([]string, 0, len(responses))
	for k := range responses {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := []byte{'{'}
	for i, k := range keys {
		var v bytes.Buffer
		if err := json.Compact(&v, responses[k]); err != nil {
			return nil, fmt.Errorf("mcp: input response %q: %w", k, err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(b, k)
		b = append(b, ':')
		b = append(b, v.Bytes()...)
	}
	return append(b, '}'), nil
}

func (h *Handle) update(ctx context.Context, responses []byte) error {
	if err := h.c.Connect(ctx); err != nil {
		return err
	}
	if isLegacy(h.c) {
		// A 2025-11-25 task asks through live requests of the session
		// while tasks/result is open (Wait), answered by the handlers.
		return fmt.Errorf("%w: %s (the task's questions arrive during tasks/result)", mcp.ErrLegacyUnsupported, MethodUpdate)
	}
	raw, err := h.request(ctx, MethodUpdate, responses)
	if err != nil {
		return err
	}
	return complete(MethodUpdate, raw)
}

// Cancel calls tasks/cancel. Cancelling a task that has ended already is
// acknowledged; an unknown or expired id is the server's -32602
// *mcp.Error.
func (h *Handle) Cancel(ctx context.Context) error {
	raw, err := h.request(ctx, MethodCancel, nil)
	if err != nil {
		return err
	}
	return complete(MethodCancel, raw)
}

// complete checks that a tasks/update or tasks/cancel was answered with
// a complete result.
func complete(method string, raw []byte) error {
	rt, err := resultTypeOf(method, raw)
	if err != nil {
		return err
	}
	if rt != mcp.ResultComplete {
		return &mcp.InvalidResponseError{Method: method, Err: fmt.Errorf("%w %q where a complete result is due", mcp.ErrUnknownResultType, string(rt))}
	}
	return nil
}

// Wait follows the task to its end as an automatic CallTool does:
// polling tasks/get, answering input_required statuses with the
// Client's handlers through tasks/update. It returns the tool's result
// when the task completes, the task's JSON-RPC error (an *mcp.Error)
// when it failed, and an error matching ErrCancelled when it was
// cancelled. When ctx ends Wait returns ctx.Err() and leaves the task
// running: call Cancel to stop it. A handler's failure is returned as
// well, the task left input_required. The result of a handle from a
// *PendingError is checked against the tool's outputSchema as CallTool
// does (a handle from Get does not know its tool, and its result is
// not).
func (h *Handle) Wait(ctx context.Context) (*mcp.CallToolResult, error) {
	raw, err := h.wait(ctx, nil)
	if te, ok := err.(*endError); ok {
		err = te.err
	}
	if err != nil {
		return nil, err
	}
	return h.c.DecodeToolResult(h.tool, raw)
}

// request sends a request about the task of h: of the tasks extension
// (Mcp-Name is the task id), or of a 2025-11-25 session's tasks.
func (h *Handle) request(ctx context.Context, method string, responses []byte) ([]byte, error) {
	if err := h.c.Connect(ctx); err != nil {
		return nil, err
	}
	// tasks/get and tasks/cancel exist in both; tasks/update in the
	// extension only, tasks/result in 2025-11-25 only.
	if legacy := isLegacy(h.c); legacy && method == MethodUpdate {
		return nil, fmt.Errorf("%w: %s", mcp.ErrLegacyUnsupported, method)
	} else if !legacy && method == methodResult {
		return nil, fmt.Errorf("mcp: %s is a method of protocol revision 2025-11-25, not of the tasks extension", method)
	}
	p := make([]byte, 0, 32+len(h.ID)+len(responses))
	p = append(p, `{"taskId":`...)
	p = jsonrpc.AppendString(p, h.ID)
	if responses != nil {
		p = append(p, `,"inputResponses":`...)
		p = append(p, responses...)
	}
	p = append(p, '}')
	call := &mcp.MethodCall{Method: method, Params: json.RawMessage(p), TargetMember: "taskId"}
	res, err := h.c.Request(ctx, call, h.call)
	if err != nil {
		return nil, err
	}
	return res.Result, nil
}

// follower follows the tasks of one client's calls.
type follower struct {
	o   ClientOptions
	log *slog.Logger // the client's (mcp.ClientOptions.Logger)
}

// follow is the mcp.ResultHandler of resultType "task": it follows the
// task to its end, or hands it back (Detached, CallOptions.Manual). A
// task on anything but a tools/call is a protocol error. Its task
// requests carry what the call's legs carry (the extra members, the
// CallInfo).
func (f *follower) follow(ctx context.Context, call *mcp.ResultCall) (json.RawMessage, error) {
	if call.Method != mcp.MethodToolsCall {
		return nil, &mcp.InvalidResponseError{Method: call.Method, Err: fmt.Errorf("%w %q", mcp.ErrUnknownResultType, string(call.ResultType))}
	}
	var seed *Task
	var err error
	if isLegacy(call.Client) {
		seed, err = decodeLegacyTask(call.Method, "", call.Result, true)
	} else {
		seed, err = decodeState(call.Method, "", call.Result)
	}
	if err != nil {
		return nil, err
	}
	c := call.Client
	if detached, _ := ctx.Value(detachKey{}).(bool); detached || call.Manual {
		return nil, &PendingError{Tool: call.Target, Task: &Handle{ID: seed.TaskID, c: c, f: f, tool: call.Target}, Seed: seed}
	}
	h := &Handle{ID: seed.TaskID, c: c, f: f, call: call}
	res, err := h.wait(ctx, seed)
	var te *endError
	if err != nil && !errors.As(err, &te) {
		// Given up (ctx ended, a handler or the network failed): the
		// caller holds no handle, so nobody else will end the task.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
		if cerr := h.Cancel(cctx); cerr != nil {
			f.log.Warn("mcp: client: cancelling an abandoned task", "task", h.ID, "err", cerr)
		}
		cancel()
	}
	if te != nil {
		return nil, te.err
	}
	return res, err
}

// endError carries the outcome of a task that ended failed or cancelled
// out of wait, telling it from a failure to follow the task.
type endError struct{ err error }

func (e *endError) Error() string { return e.err.Error() }
func (e *endError) Unwrap() error { return e.err }

// wait follows a task from state t (nil: get it first) to its end and
// returns the raw CallToolResult.
func (h *Handle) wait(ctx context.Context, t *Task) ([]byte, error) {
	if err := h.c.Connect(ctx); err != nil {
		return nil, err
	}
	if isLegacy(h.c) {
		return h.waitLegacy(ctx, t)
	}
	o := &h.f.o
	answered := map[string]bool{} // keys answered already: never twice
	for {
		if t == nil {
			var err error
			if t, err = h.Get(ctx); err != nil {
				return nil, err
			}
		}
		switch t.Status {
		case Completed:
			if _, err := resultTypeOf(MethodGet, t.Result); err != nil {
				return nil, err
			}
			return t.Result, nil
		case Failed:
			return nil, &endError{t.Error}
		case Cancelled:
			return nil, &endError{fmt.Errorf("%w: task %q", ErrCancelled, h.ID)}
		case InputRequired:
			reqs := pendingInputs(t, answered, o.MaxInputRequests)
			if len(reqs) > 0 {
				responses, err := h.c.Answer(ctx, MethodGet, reqs)
				if err != nil {
					return nil, err
				}
				if err := h.update(ctx, responses); err != nil {
					return nil, err
				}
				for k := range reqs {
					answered[k] = true
				}
				t = nil // look again at once: the next question may be there
				continue
			}
		}
		// working, or only questions answered already.
		if err := o.sleep(ctx, o.pollInterval(t.PollIntervalMs)); err != nil {
			return nil, err
		}
		t = nil
	}
}

// pendingInputs returns the input requests of t not answered yet, at
// most max of them (by key order).
func pendingInputs(t *Task, answered map[string]bool, max int) map[string]json.RawMessage {
	var keys []string
	for k := range t.InputRequests {
		if !answered[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) > max {
		keys = keys[:max]
	}
	out := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		out[k] = t.InputRequests[k]
	}
	return out
}
