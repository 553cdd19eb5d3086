package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Tasks in a fleet (Options.Store is a SharedStore): the state
// lives in the shared store, so any instance answers tasks/get; what only
// the owner (the instance running the handler) can act on, answers and
// cancellations, travels to it through the store as Signals; and the
// owner renews the leases of its running tasks so that the fleet learns
// when it is gone. See docs/design/tasks.md.

// reserve counts a task being created against MaxTasks.
func (rt *Runtime) reserve() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.live)+rt.reserved >= rt.opts.MaxTasks {
		return false
	}
	rt.reserved++
	return true
}

// unreserve ends a reservation, making lt (when not nil) live.
func (rt *Runtime) unreserve(lt *liveTask) {
	rt.mu.Lock()
	rt.reserved--
	if lt != nil {
		rt.live[lt.id] = lt
	}
	rt.mu.Unlock()
}

// startFleet starts renewing leases and receiving signals, once.
func (rt *Runtime) startFleet() {
	rt.fleetOnce.Do(func() {
		go rt.renewLoop(rt.fleetCtx)
		go rt.receiveLoop(rt.fleetCtx)
	})
}

// renewLoop renews the leases of the tasks running here every third of
// the lease, and stops those the store says ended elsewhere.
func (rt *Runtime) renewLoop(ctx context.Context) {
	every := rt.shared.Lease() / 3
	if every <= 0 {
		every = time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rt.renew(ctx, min(every, rt.opts.StoreTimeout))
	}
}

func (rt *Runtime) renew(ctx context.Context, timeout time.Duration) {
	rt.mu.Lock()
	ids := make([]string, 0, len(rt.live))
	for id := range rt.live {
		ids = append(ids, id)
	}
	rt.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	ended, err := rt.shared.Renew(rctx, ids)
	cancel()
	if err != nil && ctx.Err() == nil {
		rt.log.Warn("mcp: renewing task leases", "tasks", len(ids), "err", err)
	}
	for _, id := range ended {
		if lt := rt.local(id); lt != nil {
			lt.drop()
		}
	}
}

// receiveLoop receives the signals for the tasks running here, and
// receives again (after a growing delay, up to 5 s) whenever the store's
// Receive ends early.
func (rt *Runtime) receiveLoop(ctx context.Context) {
	const first, most = 100 * time.Millisecond, 5 * time.Second
	wait := first
	for {
		start := time.Now()
		err := rt.shared.Receive(ctx, rt.receive)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > 30*time.Second {
			wait = first
		}
		rt.log.Warn("mcp: receiving task signals ended; receiving again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, most)
	}
}

// receive acts on a signal for a task running here: answers are decoded
// and delivered as those of a tasks/update received here; a cancellation
// stops the handler (the store holds the cancelled state already).
func (rt *Runtime) receive(sig Signal) {
	lt := rt.local(sig.TaskID)
	if lt == nil {
		return // ended, or never ours
	}
	if sig.Cancel {
		lt.drop()
		return
	}
	if len(sig.InputResponses) == 0 {
		return
	}
	// The request path validates a whole message before it decodes
	// params; a signal gets the same check before the same decoder.
	if !json.Valid(sig.InputResponses) {
		rt.log.Warn("mcp: a task signal with malformed answers", "task", sig.TaskID)
		return
	}
	responses, e := decodeInputResponses(sig.InputResponses)
	if e != nil {
		rt.log.Warn("mcp: a task signal with malformed answers", "task", sig.TaskID, "err", e.Message)
		return
	}
	lt.deliver(responses)
}

// forward sends the answers of a tasks/update to the owner of a task
// running on another instance, when the task is principal's and still
// running; otherwise they are dropped, as for an unknown id.
func (rt *Runtime) forward(ctx context.Context, p *taskParams, principal string) error {
	t, err := rt.shared.Get(ctx, p.TaskID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		rt.log.Error("mcp: reading a task", "task", p.TaskID, "err", err)
		return errInternal
	case !samePrincipal(t.Principal, principal) || t.Status.Terminal():
		return nil
	}
	raw, err := json.Marshal(p.InputResponses)
	if err != nil {
		return errInternal
	}
	err = rt.shared.Signal(ctx, Signal{TaskID: p.TaskID, InputResponses: raw})
	if err != nil && !errors.Is(err, ErrNotFound) {
		var e *mcp.Error
		if errors.As(err, &e) || errors.Is(err, mcp.ErrTemporarilyUnavailable) {
			// The store's own answer (a bound): the sender gets it.
			rt.log.Warn("mcp: a task's answers not forwarded", "task", p.TaskID, "err", err)
			return err
		}
		rt.log.Error("mcp: forwarding a task's answers", "task", p.TaskID, "err", err)
		return errInternal
	}
	return nil
}
