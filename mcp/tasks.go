package mcp

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
)

// The tasks extension (io.modelcontextprotocol/tasks, SEP-2663): a
// tools/call may be answered with a task handle (resultType "task") that
// the client polls with tasks/get, feeds input through tasks/update and
// cancels with tasks/cancel. See docs/design/tasks.md.
//
// A server enables the extension with ServerOptions.Tasks; a tool opts in
// with WithTaskSupport; its handler turns the call into a task with
// StartTask. Everything before StartTask is an ordinary call (questions
// asked there are MRTR rounds); everything after it runs in the
// background, and its questions become the task's input_required status.

// ExtensionTasks is the identifier of the tasks extension, as declared in
// capabilities.extensions by client (per request) and server (discover).
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// Methods of the tasks extension.
const (
	MethodTasksGet    = "tasks/get"
	MethodTasksUpdate = "tasks/update"
	MethodTasksCancel = "tasks/cancel"
)

// ResultTask is the resultType of a CreateTaskResult.
const ResultTask ResultType = "task"

// TaskSupport says whether a tool's calls may become tasks.
type TaskSupport uint8

const (
	// TaskForbidden (the default): the tool always answers synchronously
	// and StartTask is a no-op.
	TaskForbidden TaskSupport = iota
	// TaskOptional: a call becomes a task when the handler calls StartTask
	// and the request declared the extension; otherwise the handler runs
	// to completion synchronously.
	TaskOptional
	// TaskRequired: a request that did not declare the extension is
	// rejected with -32021 before the handler runs.
	TaskRequired
)

// ToolOption adjusts how a tool is served (see AddTool).
type ToolOption func(*serverTool)

// WithTaskSupport lets the tool's calls become tasks. The server must have
// ServerOptions.Tasks set, or AddTool panics.
func WithTaskSupport(ts TaskSupport) ToolOption {
	return func(t *serverTool) { t.task = ts }
}

// TaskOptions enable the tasks extension and bound it. Zero fields take
// the defaults.
type TaskOptions struct {
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
	// store bounded by MaxTasks, for a single process. A SharedTaskStore
	// (mcp/redistasks) serves a fleet: tasks/get, tasks/update and
	// tasks/cancel then work on every instance, and MaxTasks bounds the
	// tasks running on each instance (the shared store holds the
	// finished ones until their TTL).
	Store TaskStore
	// StoreTimeout bounds each call the server makes to a SharedTaskStore
	// on its own behalf (writing a task's state, renewing leases).
	// Default 5 seconds. Calls made for a request also end with it.
	StoreTimeout time.Duration
}

// TaskStatus is the status of a task.
type TaskStatus string

// Task statuses.
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether the status is final.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// Task is the state of a task as tasks/get reports it. A *Task held by a
// TaskStore is a snapshot: it is replaced, never modified.
type Task struct {
	TaskID        string     `json:"taskId"`
	Status        TaskStatus `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	LastUpdatedAt time.Time  `json:"lastUpdatedAt"`
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
	Error  *Error          `json:"error,omitempty"`
	// Principal is the identity of whoever started the task, the one
	// sealed request state is bound to (RequestStateOptions.Principal,
	// by default the verified token's client, issuer and subject): only
	// requests of that principal can read, answer or cancel the task;
	// any other gets exactly the answer of an unknown task. It is kept
	// by the TaskStore and never sent. Empty on a server without
	// authentication, where the task id alone is a bearer handle.
	Principal string `json:"-"`
}

// expired reports whether the task outlived its TTL at now.
func (t *Task) expired(now time.Time) bool {
	return t.TTLMs != nil && now.Sub(t.CreatedAt) >= time.Duration(*t.TTLMs)*time.Millisecond
}

// CreateTaskResult is the answer to a tools/call that became a task:
// resultType "task" and the task's seed state (never a result, error or
// input requests).
type CreateTaskResult struct {
	Task
}

// ---- the server's task runtime ----

// taskRuntime is a server's tasks: the store and the tasks running here.
type taskRuntime struct {
	observe func(Event) // the server's (observe.go)
	opts    TaskOptions
	store   TaskStore
	shared  SharedTaskStore // store, when it is shared by a fleet (tasks_fleet.go)
	log     *slog.Logger

	// The fleet's background work (renewing leases, receiving signals),
	// started with the first task and stopped by cancelAll.
	fleetOnce sync.Once
	fleetCtx  context.Context
	fleetStop context.CancelFunc

	mu       sync.Mutex
	live     map[string]*liveTask
	reserved int // shared store: tasks being created, counted against MaxTasks
}

func newTaskRuntime(o TaskOptions, log *slog.Logger) *taskRuntime {
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
		o.Store = NewMemoryTaskStore(o.MaxTasks)
	}
	rt := &taskRuntime{opts: o, store: o.Store, log: log, live: make(map[string]*liveTask), observe: func(Event) {}}
	if sh, ok := o.Store.(SharedTaskStore); ok {
		rt.shared = sh
		rt.fleetCtx, rt.fleetStop = context.WithCancel(context.Background())
	}
	return rt
}

// local returns the task running here under id, or nil.
func (rt *taskRuntime) local(id string) *liveTask {
	rt.mu.Lock()
	lt := rt.live[id]
	rt.mu.Unlock()
	return lt
}

// liveTask is a task running in this process.
type liveTask struct {
	rt        *taskRuntime
	id        string
	principal string
	cancel    context.CancelFunc

	mu      sync.Mutex
	snap    *Task                    // the last state written to the store
	pending map[string]*pendingInput // questions not yet answered
	asked   int                      // questions asked so far
	used    map[string]bool          // every key issued (unique per task)
	done    bool
}

type pendingInput struct {
	raw    json.RawMessage // the bare input request
	answer chan json.RawMessage
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

// taskPrincipal is the principal of a request, as the request-state
// boundary derives it: RequestStateOptions.Principal, or the verified
// token's client, issuer and subject.
func (s *Server) taskPrincipal(ctx context.Context) (string, error) {
	if f := s.opts.RequestState.Principal; f != nil {
		return f(ctx)
	}
	return defaultPrincipal(ctx)
}

// storeUpdate writes a state on the task's own behalf: bounded by
// StoreTimeout on a shared store.
func (rt *taskRuntime) storeUpdate(t *Task) error {
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
	return errors.Is(err, ErrTaskEnded) || errors.Is(err, ErrTaskNotFound)
}

// publishLocked writes a new snapshot: status from the pending questions
// unless given. lt.mu is held. It returns the store's error.
func (lt *liveTask) publishLocked(status TaskStatus, result json.RawMessage, e *Error) error {
	t := *lt.snap
	t.LastUpdatedAt = time.Now().UTC()
	t.InputRequests, t.Result, t.Error = nil, nil, nil
	switch {
	case status != "":
		t.Status, t.Result, t.Error = status, result, e
	case len(lt.pending) > 0:
		t.Status = TaskInputRequired
		t.InputRequests = make(map[string]json.RawMessage, len(lt.pending))
		for k, p := range lt.pending {
			t.InputRequests[k] = p.raw
		}
	default:
		t.Status = TaskWorking
	}
	lt.snap = &t
	return lt.rt.storeUpdate(&t)
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
func (lt *liveTask) finish(status TaskStatus, result json.RawMessage, e *Error) {
	lt.mu.Lock()
	if lt.done {
		lt.mu.Unlock()
		return
	}
	lt.done = true
	lt.pending = nil
	lt.rt.observe(Event{Kind: EventTaskEnded, Status: status})
	err := lt.publishLocked(status, result, e)
	if err != nil && !endedInStore(err) {
		// The store refused the state (too large for it, unreachable):
		// leave a small failed one rather than a running task that
		// readers would see fail only when its lease lapses.
		lt.rt.log.Error("mcp: writing a task's final state", "task", lt.id, "status", status, "err", err)
		if status != TaskFailed || e != errInternal {
			if err := lt.publishLocked(TaskFailed, nil, errInternal); err != nil && !endedInStore(err) {
				lt.rt.log.Error("mcp: writing a task's final state", "task", lt.id, "status", TaskFailed, "err", err)
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
	lt.rt.observe(Event{Kind: EventTaskEnded})
	lt.end()
}

func (lt *liveTask) end() {
	lt.cancel()
	lt.rt.mu.Lock()
	delete(lt.rt.live, lt.id)
	lt.rt.mu.Unlock()
}

// cancelAll cancels every running task and stops the fleet's background
// work (Server.Close).
func (rt *taskRuntime) cancelAll() {
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
		lt.finish(TaskCancelled, nil, nil)
	}
}

// taskAsker answers the asking API inside a task: a question becomes an
// entry of the task's inputRequests and the call blocks until
// tasks/update delivers its answer or the task ends.
type taskAsker struct {
	lt   *liveTask
	caps *ClientCapabilities
}

func (a *taskAsker) ask(ctx context.Context, q *question) (json.RawMessage, error) {
	if e := missingCapability(a.caps, q); e != nil {
		return nil, e
	}
	raw, err := marshalInputRequest(q.req)
	if err != nil {
		return nil, err
	}
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
	key := q.key
	for n := 2; lt.used[key]; n++ {
		key = q.key + "_" + strconv.Itoa(n)
	}
	lt.used[key] = true
	p := &pendingInput{raw: raw, answer: make(chan json.RawMessage, 1)}
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
		if err := q.validate(ans); err != nil {
			return nil, q.invalidAnswer(key, err)
		}
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
