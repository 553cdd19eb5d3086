package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Errors of a Store.
var (
	ErrNotFound = errors.New("mcp: task not found")
	ErrLimit    = errors.New("mcp: task limit reached")
	// ErrEnded is returned by Store.Update (and
	// SharedStore.Cancel) when the stored task is already terminal:
	// its final state is kept, the new one is not applied.
	ErrEnded = errors.New("mcp: task already ended")
)

// ErrInstanceStopped is the error of a task reported failed because
// the server instance running it stopped renewing its lease (see
// SharedStore). It is a JSON-RPC internal error (-32603).
var ErrInstanceStopped = jsonrpcError(mcp.CodeInternalError, "Internal error: the server instance running the task stopped")

// Store keeps the observable state of tasks, keyed by task id: what
// tasks/get returns, and the principal each task belongs to
// (Task.Principal). The running part of a task (its goroutine,
// cancellation and pending questions) stays in the process that created
// it; a store shared by the instances of a fleet also implements
// SharedStore. Its methods are called concurrently.
type Store interface {
	// Create stores a new task; ErrLimit when the store is full.
	Create(ctx context.Context, t *Task) error
	// Get returns a task; ErrNotFound when unknown or expired. The
	// caller does not modify the result.
	Get(ctx context.Context, id string) (*Task, error)
	// Update replaces a task's state; ErrNotFound when it is gone,
	// ErrEnded (and no change) when the stored state is terminal: the
	// first terminal state written is final.
	Update(ctx context.Context, t *Task) error
}

// SharedStore is a Store shared by the instances of a fleet (see
// redis/redistasks), which share nothing else: any instance can then serve
// tasks/get, tasks/update and tasks/cancel of any task. The instance
// whose goroutine runs a task (its owner) is the one whose store created
// it: use one SharedStore value per Server.
//
// What the store adds to a Store:
//
//   - Delivery: Signal and Cancel carry what another instance receives
//     for a task (answers, a cancellation) to its owner, which Receive
//     hands them to.
//   - Leases: Create gives a task a lease of Lease(); the owner renews
//     the leases of its running tasks every Lease()/3. Get reports a
//     non-terminal task whose lease lapsed as failed with
//     ErrInstanceStopped, storing that state atomically: if the
//     owner renewed or finished in between, its state stands instead, and
//     once the failed state is stored the owner's Update gets ErrEnded
//     and Renew reports the task ended. A task whose owner died is so
//     reported failed within Lease() of its last renewal, never polled
//     until its TTL.
type SharedStore interface {
	Store
	// Lease is how long a task stays live in the store without a Renew.
	// It must be positive.
	Lease() time.Duration
	// Renew extends the leases of tasks this instance runs. It returns
	// those of ids that the store no longer holds as running (terminal,
	// e.g. cancelled through another instance or failed after a lapsed
	// lease, or gone): the server stops them.
	Renew(ctx context.Context, ids []string) (ended []string, err error)
	// Cancel stores t, a task's cancelled state, unless the stored state
	// is terminal already (ErrEnded), atomically, and then signals the
	// owner to stop it (a Signal with Cancel). ErrNotFound when
	// the task is unknown.
	Cancel(ctx context.Context, t *Task) error
	// Signal sends s to the owner of task s.TaskID; ErrNotFound when
	// the task is unknown. Delivery must survive a brief disconnection of
	// the owner from the store. A store that bounds what waits for the
	// owner refuses past its bound with an error that wraps an *Error
	// or mcp.ErrTemporarilyUnavailable: a forwarded tasks/update is answered with that
	// (any other error answers Internal error).
	Signal(ctx context.Context, s Signal) error
	// Receive calls deliver, one signal at a time and in order, for the
	// signals sent to tasks this instance owns, until ctx ends (then it
	// returns nil). The server calls it on a goroutine of its own once it
	// runs a task, and again (after a growing delay) whenever it returns
	// early; a later call resumes after the last signal delivered.
	Receive(ctx context.Context, deliver func(Signal)) error
}

// Signal is a message for the owner of a task, sent through a
// SharedStore by the instance that received a request for it. The
// sender has checked the principal; the owner decodes and validates the
// answers exactly as if it had received the tasks/update itself.
type Signal struct {
	TaskID string `json:"taskId"`
	// Cancel tells the owner that the task was cancelled: the store holds
	// the cancelled state already, the owner ends the handler's context.
	Cancel bool `json:"cancel,omitempty"`
	// InputResponses is the inputResponses object of a tasks/update.
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// NewMemoryStore returns an in-memory Store holding at most max
// tasks (1000 when max <= 0), for a single process. Expired tasks are
// dropped when read and when room is needed.
func NewMemoryStore(max int) Store {
	if max <= 0 {
		max = 1000
	}
	return &memoryStore{max: max, tasks: make(map[string]*Task)}
}

type memoryStore struct {
	max   int
	mu    sync.Mutex
	tasks map[string]*Task
}

func (m *memoryStore) Create(_ context.Context, t *Task) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.tasks) >= m.max {
		now := time.Now()
		for id, x := range m.tasks {
			if x.expired(now) {
				delete(m.tasks, id)
			}
		}
		if len(m.tasks) >= m.max {
			return ErrLimit
		}
	}
	m.tasks[t.TaskID] = t
	return nil
}

func (m *memoryStore) Get(_ context.Context, id string) (*Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tasks[id]
	if t == nil {
		return nil, ErrNotFound
	}
	if t.expired(time.Now()) {
		delete(m.tasks, id)
		return nil, ErrNotFound
	}
	return t, nil
}

func (m *memoryStore) Update(_ context.Context, t *Task) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.tasks[t.TaskID]
	switch {
	case old == nil:
		return ErrNotFound
	case old.Status.Terminal():
		return ErrEnded
	}
	m.tasks[t.TaskID] = t
	return nil
}

// list returns the unexpired tasks of principal, oldest first (ties by
// id): tasks/list of 2025-11-25 sessions on the in-memory store.
func (m *memoryStore) list(principal string) []*Task {
	m.mu.Lock()
	now := time.Now()
	out := make([]*Task, 0)
	for _, t := range m.tasks {
		if !t.expired(now) && samePrincipal(t.Principal, principal) {
			out = append(out, t)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Task) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.TaskID, b.TaskID)
	})
	return out
}
