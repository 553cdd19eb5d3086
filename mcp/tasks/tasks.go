package tasks

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Extension is the identifier of the tasks extension, as declared in
// capabilities.extensions by client (per request) and server (discover).
const Extension = "io.modelcontextprotocol/tasks"

// Methods of the tasks extension.
const (
	MethodGet    = "tasks/get"
	MethodUpdate = "tasks/update"
	MethodCancel = "tasks/cancel"
)

// ResultType is the resultType of the answer to a tools/call that became
// a task (its seed state).
const ResultType mcp.ResultType = "task"

// What a Runtime reports to ServerOptions.Observer: an mcp.Event of
// Kind EventExtension, Extension Extension, and one of these Names
// (EventEnded with the terminal Status, "" when the task ended through
// another instance of a fleet).
const (
	EventStarted = "task.started"
	EventEnded   = "task.ended"
)

// Support says whether a tool's calls may become tasks.
type Support uint8

const (
	// Forbidden: the tool always answers synchronously and Start is a
	// no-op (the default of a tool without the Support option).
	Forbidden Support = iota
	// Optional: a call becomes a task when the handler calls Start and
	// the request declared the extension; otherwise the handler runs to
	// completion synchronously.
	Optional
	// Required: a request that did not declare the extension is rejected
	// with -32021 before the handler runs.
	Required
)

// Options enable the tasks extension and bound it. Zero fields take the
// defaults.
type Options struct {
	// MaxTasks bounds the tasks the server holds, running or finished and
	// not yet expired. A tools/call that would create one more fails with
	// -32603. Default 1000.
	MaxTasks int
	// TTL is how long a task lives from its creation, reported as ttlMs: a
	// task still running at its TTL is cancelled (its context ends), and
	// after it tasks/get answers "not found". Default 1 hour.
	TTL time.Duration
	// PollInterval is the suggested polling interval (pollIntervalMs).
	// Default 1 second.
	PollInterval time.Duration
	// MaxResultBytes bounds a task's encoded result; a larger result fails
	// the task with -32603. Default 4 MiB.
	MaxResultBytes int
	// MaxInputRequests bounds the questions one task may ask over its
	// lifetime. Default 1000.
	MaxInputRequests int
	// Store keeps the observable state of tasks. Nil means an in-memory
	// store bounded by MaxTasks, for a single process. A SharedStore
	// (redis/redistasks) serves a fleet: tasks/get, tasks/update and
	// tasks/cancel then work on every instance, and MaxTasks bounds the
	// tasks running on each instance (the shared store holds the
	// finished ones until their TTL).
	Store Store
	// StoreTimeout bounds each call the server makes to a SharedStore on
	// its own behalf (writing a task's state, renewing leases). Default
	// 5 seconds. Calls made for a request also end with it.
	StoreTimeout time.Duration
}

// Status is the status of a task.
type Status string

// Task statuses.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether the status is final.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// Task is the state of a task as tasks/get reports it. A *Task held by a
// Store is a snapshot: it is replaced, never modified.
type Task struct {
	TaskID        string    `json:"taskId"`
	Status        Status    `json:"status"`
	StatusMessage string    `json:"statusMessage,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	LastUpdatedAt time.Time `json:"lastUpdatedAt"`
	// TTLMs is the lifetime from creation in milliseconds; nil (null on
	// the wire) means unlimited.
	TTLMs          *int64 `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
	// InputRequests are the questions still unanswered (input_required):
	// each value is a bare {"method","params"} input request.
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	// Result is the tool's result (completed), Error the JSON-RPC error
	// (failed).
	Result json.RawMessage `json:"result,omitempty"`
	Error  *mcp.Error      `json:"error,omitempty"`
	// Principal is the identity of whoever started the task, the one
	// sealed request state is bound to (mcp.Server.Principal: by default
	// the verified token's client, issuer and subject): only requests of
	// that principal can read, answer or cancel the task; any other gets
	// exactly the answer of an unknown task. It is kept by the Store and
	// never sent. Empty on a server without authentication, where the
	// task id alone is a bearer handle.
	Principal string `json:"-"`
}

// expired reports whether the task outlived its TTL at now.
func (t *Task) expired(now time.Time) bool {
	return t.TTLMs != nil && now.Sub(t.CreatedAt) >= time.Duration(*t.TTLMs)*time.Millisecond
}

var errInternal = jsonrpc.NewError(mcp.CodeInternalError, "Internal error")

func jsonrpcError(code int, msg string) *mcp.Error { return jsonrpc.NewError(code, msg) }

// ---- the server's task runtime ----

// Runtime is the tasks extension of one server: its store and the tasks
// running in this process. Enable makes one.
type Runtime struct {
	srv    *mcp.Server
	opts   Options
	store  Store
	shared SharedStore // store, when it is shared by a fleet (fleet.go)
	log    *slog.Logger

	// The fleet's background work (renewing leases, receiving signals),
	// started with the first task and stopped by cancelAll.
	fleetOnce sync.Once
	fleetCtx  context.Context
	fleetStop context.CancelFunc

	mu       sync.Mutex
	live     map[string]*liveTask
	reserved int // shared store: tasks being created, counted against MaxTasks
}

// Enable turns the tasks extension on for s with the bounds of o (nil:
// the defaults): server/discover advertises it, tasks/get, tasks/update
// and tasks/cancel are served (custom methods of the extension, for
// 2026-07-28 requests that declare it), and s.Close cancels the tasks
// running here. Call it once per server, before serving. Tools opt in
// with the Runtime's Support option.
func Enable(s *mcp.Server, o *Options) *Runtime {
	var opts Options
	if o != nil {
		opts = *o
	}
	rt := newRuntime(s, opts)
	rt.addMethods()
	s.OnClose(rt.cancelAll)
	return rt
}

func newRuntime(s *mcp.Server, o Options) *Runtime {
	if o.MaxTasks <= 0 {
		o.MaxTasks = 1000
	}
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 4 << 20
	}
	if o.MaxInputRequests <= 0 {
		o.MaxInputRequests = 1000
	}
	if o.StoreTimeout <= 0 {
		o.StoreTimeout = 5 * time.Second
	}
	if o.Store == nil {
		o.Store = NewMemoryStore(o.MaxTasks)
	}
	rt := &Runtime{srv: s, opts: o, store: o.Store, log: s.Logger(), live: make(map[string]*liveTask)}
	if sh, ok := o.Store.(SharedStore); ok {
		rt.shared = sh
		rt.fleetCtx, rt.fleetStop = context.WithCancel(context.Background())
	}
	return rt
}

// report tells the server's observer of a task starting or ending.
func (rt *Runtime) report(name string, status Status) {
	rt.srv.Report(mcp.Event{Kind: mcp.EventExtension, Extension: Extension, Name: name, Status: string(status)})
}

// local returns the task running here under id, or nil.
func (rt *Runtime) local(id string) *liveTask {
	rt.mu.Lock()
	lt := rt.live[id]
	rt.mu.Unlock()
	return lt
}

// liveTask is a task running in this process.
type liveTask struct {
	rt        *Runtime
	id        string
	principal string
	cancel    context.CancelFunc

	mu      sync.Mutex
	snap    *Task                    // the last state written to the store
	pending map[string]*pendingInput // questions not yet answered
	asked   int                      // questions asked so far
	used    map[string]bool          // every key issued (unique per task)
	done    bool
	// changed is closed (and replaced) on every new snapshot: a
	// 2025-11-25 tasks/result waits on it (legacy_server.go).
	changed chan struct{}
	// legacy: created by a 2025-11-25 session's tools/call; its result
	// is stored as that revision encodes it.
	legacy bool
}

type pendingInput struct {
	raw    json.RawMessage // the bare input request
	answer chan json.RawMessage
	asking bool // a 2025-11-25 tasks/result is asking it live
}

// newTaskID returns 128 bits from crypto/rand, base64url-encoded: an id
// nobody can guess, which is all that protects a task on a server
// without authentication (there the id is a bearer handle).
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// samePrincipal compares two principals in constant time (for equal
// lengths).
func samePrincipal(a, b string) bool {
	return subtle.ConstantTimeCompare(unsafe.Slice(unsafe.StringData(a), len(a)), unsafe.Slice(unsafe.StringData(b), len(b))) == 1
}

// storeUpdate writes a state on the task's own behalf: bounded by
// StoreTimeout on a shared store.
func (rt *Runtime) storeUpdate(t *Task) error {
	if rt.shared == nil {
		return rt.store.Update(context.Background(), t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), rt.opts.StoreTimeout)
	defer cancel()
	return rt.store.Update(ctx, t)
}

// endedInStore reports whether a store error says the stored task is
// over (terminal, or gone): the task must stop here.
func endedInStore(err error) bool {
	return errors.Is(err, ErrEnded) || errors.Is(err, ErrNotFound)
}

// publishLocked writes a new snapshot: status from the pending questions
// unless given. lt.mu is held. It returns the store's error.
func (lt *liveTask) publishLocked(status Status, result json.RawMessage, e *mcp.Error) error {
	t := *lt.snap
	t.LastUpdatedAt = time.Now().UTC()
	t.InputRequests, t.Result, t.Error = nil, nil, nil
	switch {
	case status != "":
		t.Status, t.Result, t.Error = status, result, e
	case len(lt.pending) > 0:
		t.Status = InputRequired
		t.InputRequests = make(map[string]json.RawMessage, len(lt.pending))
		for k, p := range lt.pending {
			t.InputRequests[k] = p.raw
		}
	default:
		t.Status = Working
	}
	lt.snap = &t
	err := lt.rt.storeUpdate(&t)
	if lt.changed != nil {
		close(lt.changed)
	}
	lt.changed = make(chan struct{})
	return err
}

// republishLocked writes the state after the pending questions changed;
// it reports whether the task ended in the store meanwhile (the caller
// then calls drop, after unlocking). lt.mu is held.
func (lt *liveTask) republishLocked() (ended bool) {
	err := lt.publishLocked("", nil, nil)
	if err != nil && !endedInStore(err) {
		lt.rt.log.Warn("mcp: writing a task's state", "task", lt.id, "err", err)
	}
	return endedInStore(err)
}

// finish records a terminal state once; later outcomes are ignored (a
// cancelled task stays cancelled).
func (lt *liveTask) finish(status Status, result json.RawMessage, e *mcp.Error) {
	lt.mu.Lock()
	if lt.done {
		lt.mu.Unlock()
		return
	}
	lt.done = true
	lt.pending = nil
	lt.rt.report(EventEnded, status)
	err := lt.publishLocked(status, result, e)
	if err != nil && !endedInStore(err) {
		// The store refused the state (too large for it, unreachable):
		// leave a small failed one rather than a running task that
		// readers would see fail only when its lease lapses.
		lt.rt.log.Error("mcp: writing a task's final state", "task", lt.id, "status", status, "err", err)
		if status != Failed || e != errInternal {
			if err := lt.publishLocked(Failed, nil, errInternal); err != nil && !endedInStore(err) {
				lt.rt.log.Error("mcp: writing a task's final state", "task", lt.id, "status", Failed, "err", err)
			}
		}
	}
	lt.mu.Unlock()
	lt.end()
}

// drop stops a task that ended in the store without this process
// (cancelled or failed through another instance, expired): nothing more
// is written.
func (lt *liveTask) drop() {
	lt.mu.Lock()
	if lt.done {
		lt.mu.Unlock()
		return
	}
	lt.done = true
	lt.pending = nil
	lt.mu.Unlock()
	// Ended through another instance: its status is the store's.
	lt.rt.report(EventEnded, "")
	lt.end()
}

func (lt *liveTask) end() {
	lt.cancel()
	lt.rt.mu.Lock()
	delete(lt.rt.live, lt.id)
	lt.rt.mu.Unlock()
}

// cancelAll cancels every running task and stops the fleet's background
// work (Server.Close, through Server.OnClose).
func (rt *Runtime) cancelAll() {
	if rt.fleetStop != nil {
		rt.fleetStop()
	}
	rt.mu.Lock()
	live := make([]*liveTask, 0, len(rt.live))
	for _, lt := range rt.live {
		live = append(live, lt)
	}
	rt.mu.Unlock()
	for _, lt := range live {
		lt.finish(Cancelled, nil, nil)
	}
}

// taskAsker answers the asking API inside a task (an mcp.Asker of the
// task's detached context): a question becomes an entry of the task's
// inputRequests and the call blocks until tasks/update delivers its
// answer or the task ends. The server checked the capability before and
// checks the answer after.
type taskAsker struct {
	lt *liveTask
}

func (a *taskAsker) Ask(ctx context.Context, q *mcp.Question) (json.RawMessage, error) {
	lt := a.lt
	lt.mu.Lock()
	if lt.done {
		lt.mu.Unlock()
		return nil, context.Canceled
	}
	if lt.asked >= lt.rt.opts.MaxInputRequests {
		lt.mu.Unlock()
		return nil, errors.New("mcp: task asked too many questions")
	}
	lt.asked++
	// A key is never reused within a task (SEP-2663).
	key := q.Key
	for n := 2; lt.used[key]; n++ {
		key = q.Key + "_" + strconv.Itoa(n)
	}
	q.Key = key
	lt.used[key] = true
	p := &pendingInput{raw: q.Request, answer: make(chan json.RawMessage, 1)}
	lt.pending[key] = p
	if err := lt.publishLocked("", nil, nil); err != nil {
		// Nobody can see the question, so nobody will answer it.
		delete(lt.pending, key)
		lt.mu.Unlock()
		if endedInStore(err) {
			lt.drop()
			return nil, context.Canceled
		}
		return nil, fmt.Errorf("mcp: recording the task's question: %w", err)
	}
	lt.mu.Unlock()

	select {
	case ans := <-p.answer:
		return ans, nil
	case <-ctx.Done():
		lt.mu.Lock()
		ended := false
		if !lt.done && lt.pending[key] == p {
			delete(lt.pending, key)
			ended = lt.republishLocked()
		}
		lt.mu.Unlock()
		if ended {
			lt.drop()
		}
		return nil, ctx.Err()
	}
}
