package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// A tool call through the gateway, whatever the eras (the same handler
// serves all four pairs):
//
//   - The upstream call runs on a goroutine of its own, in manual mode.
//   - A 2026-07-28 upstream's input_required round ends it: the round
//     becomes the downstream's (its questions, by the upstream's keys),
//     with the upstream's PendingCall (and so its requestState) inside the
//     gateway's state, which the aggregate server seals. The next leg
//     resumes upstream with the answers: nothing is held in memory.
//   - A 2025 upstream's live question (elicitation/create,
//     sampling/createMessage, roots/list) reaches relay, which hands it to
//     the call's downstream leg: the leg answers input_required with that
//     one question and a state naming the held call; the next leg delivers
//     the answer and waits for the next question or the end.
//
// On a 2025 downstream session the aggregate server's bridge asks the
// downstream client live and calls the handler again with the answers, so
// the same rounds serve it.

type ctxKey struct{}

// question is one live question of a 2025 upstream, waiting for the
// downstream's answer.
type question struct {
	req    mcp.InputRequest
	answer chan answer
}

type answer struct {
	raw json.RawMessage
	err error
}

// heldCall is one upstream call in progress.
type heldCall struct {
	g         *Gateway
	upstream  string
	tg        *target
	principal string
	caps      mcp.ClientCapabilities
	ctx       context.Context
	cancel    context.CancelCauseFunc
	timer     *time.Timer
	questions chan *question
	done      chan outcome

	mu      sync.Mutex
	leg     context.Context // the downstream leg being served (progress goes there)
	id      [idLen]byte
	held    bool
	busy    bool
	round   uint64
	pending *question
}

type outcome struct {
	res mcp.Result
	err error
}

// target is what a downstream request calls upstream.
type target struct {
	method   string // mcp.MethodToolsCall, prompts/get or resources/read
	upstream string
	name     string            // the upstream's tool or prompt name, or the resource URI
	args     json.RawMessage   // a tool's arguments
	pargs    map[string]string // a prompt's arguments
}

func (tg *target) what() string {
	switch tg.method {
	case mcp.MethodToolsCall:
		return fmt.Sprintf("tool %q", tg.name)
	case methodPromptsGet:
		return fmt.Sprintf("prompt %q", tg.name)
	}
	return fmt.Sprintf("resource %q", tg.name)
}

const (
	methodPromptsGet    = "prompts/get"
	methodResourcesRead = "resources/read"
)

// call makes tg's request upstream.
func (g *Gateway) call(ctx context.Context, tg *target, opts *mcp.CallOptions) (mcp.Result, error) {
	switch tg.method {
	case mcp.MethodToolsCall:
		r, err := g.pool.CallTool(ctx, tg.upstream, tg.name, tg.args, opts)
		if err != nil {
			return nil, err
		}
		return r, nil
	case methodPromptsGet:
		r, err := g.pool.GetPrompt(ctx, tg.upstream, tg.name, tg.pargs, opts)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	r, err := g.pool.ReadResource(ctx, tg.upstream, tg.name, opts)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// noQuestions marks the context of an upstream request that cannot carry
// questions (a static resource, a completion): relay declines theirs.
func noQuestions(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, (*heldCall)(nil))
}

// leg is what the handler knows of one downstream leg.
type leg struct {
	hasState  bool
	state     string
	responses mcp.InputResponses
	caps      mcp.ClientCapabilities
	progress  bool // the downstream asked for progress
}

// callOptions are the options of an upstream call of hc: manual rounds,
// and progress when the downstream asked for it.
func (hc *heldCall) callOptions(l *leg) *mcp.CallOptions {
	o := &mcp.CallOptions{Manual: true}
	if l.progress {
		o.OnProgress = hc.progress
	}
	return o
}

var (
	errRoundTimeout = errors.New("gateway: the downstream client did not answer the upstream's question in time")
	errLegGone      = errors.New("gateway: the downstream client went away")
	errClosed       = errors.New("gateway: closed")
)

func (g *Gateway) toolHandler(upstream, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		tg := &target{method: mcp.MethodToolsCall, upstream: upstream, name: tool, args: req.Arguments}
		r, ir, err := g.serve(ctx, tg, &leg{req.HasRequestState(), req.RequestState, req.InputResponses, req.Meta.ClientCapabilities, req.Meta.ProgressToken != nil})
		switch {
		case ir != nil:
			return ir, nil
		case err != nil:
			return nil, err
		}
		return r.(*mcp.CallToolResult), nil
	}
}

func (g *Gateway) promptHandler(upstream, prompt string) func(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
		tg := &target{method: methodPromptsGet, upstream: upstream, name: prompt, pargs: req.Arguments}
		r, ir, err := g.serve(ctx, tg, &leg{req.HasRequestState(), req.RequestState, req.InputResponses, req.Meta.ClientCapabilities, req.Meta.ProgressToken != nil})
		switch {
		case ir != nil:
			return ir, nil
		case err != nil:
			return nil, err
		}
		res, ok := r.(*mcp.GetPromptResult)
		if !ok {
			return nil, mcp.NewError(mcp.CodeInternalError, "upstream "+upstream+": not a prompt result", nil)
		}
		return res, nil
	}
}

func (g *Gateway) templateHandler(upstream string) func(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
		tg := &target{method: methodResourcesRead, upstream: upstream, name: req.URI}
		r, ir, err := g.serve(ctx, tg, &leg{req.HasRequestState(), req.RequestState, req.InputResponses, req.Meta.ClientCapabilities, req.Meta.ProgressToken != nil})
		switch {
		case ir != nil:
			return ir, nil
		case err != nil:
			return nil, err
		}
		res, ok := r.(*mcp.ReadResourceResult)
		if !ok {
			return nil, mcp.NewError(mcp.CodeInternalError, "upstream "+upstream+": not a resource result", nil)
		}
		return res, nil
	}
}

// serve serves one leg of a call through the gateway: the first (no
// state) starts the upstream call, a later one continues it.
func (g *Gateway) serve(ctx context.Context, tg *target, l *leg) (mcp.Result, *mcp.InputRequiredResult, error) {
	if l.hasState {
		return g.continueCall(ctx, tg, l)
	}
	return g.startCall(ctx, tg, l)
}

func (g *Gateway) startCall(ctx context.Context, tg *target, l *leg) (mcp.Result, *mcp.InputRequiredResult, error) {
	principal, err := g.srv.Principal(ctx)
	if err != nil {
		return nil, nil, err
	}
	if g.pool.modern(tg.upstream) {
		// A 2026-07-28 upstream asks nothing live: no call to hold, the
		// leg makes the call itself (and its cancellation is the call's).
		hc := &heldCall{g: g, upstream: tg.upstream, tg: tg, principal: principal, caps: l.caps, leg: ctx}
		r, err := g.call(noQuestions(ctx), tg, hc.callOptions(l))
		return g.finish(ctx, hc, r, err)
	}
	u := g.byName[tg.upstream]
	hc := &heldCall{
		g: g, upstream: tg.upstream, tg: tg, principal: principal, caps: l.caps,
		questions: make(chan *question), done: make(chan outcome, 1), leg: ctx,
	}
	// The upstream call outlives this leg (it may be held across
	// rounds) but keeps its values (trace context, the token).
	hctx, cancel := context.WithCancelCause(context.WithValue(context.WithoutCancel(ctx), ctxKey{}, hc))
	hc.ctx, hc.cancel = hctx, cancel
	hc.timer = time.AfterFunc(u.timeout(), hc.expire)
	g.track(hc, true)
	go func() {
		res, err := g.call(hctx, tg, hc.callOptions(l))
		hc.done <- outcome{res, err}
	}()
	return g.await(ctx, hc)
}

// await serves one downstream leg of hc: it returns the call's end, or
// the next question as an input_required round.
func (g *Gateway) await(leg context.Context, hc *heldCall) (mcp.Result, *mcp.InputRequiredResult, error) {
	hc.mu.Lock()
	hc.leg = leg
	hc.mu.Unlock()
	select {
	case o := <-hc.done:
		hc.end(nil)
		return g.finish(leg, hc, o.res, o.err)
	case q := <-hc.questions:
		if !g.held.hold(hc) {
			// Past the bounds: the upstream hears "declined" and goes on.
			raw, err := refusal(q.req)
			q.answer <- answer{raw, err}
			return g.await(leg, hc)
		}
		hc.mu.Lock()
		hc.pending, hc.busy = q, false
		hc.round++
		st := encodeState(&gwState{kind: kindHeld, upstream: hc.upstream, id: hc.id, round: hc.round})
		key := "gw_" + strconv.FormatUint(hc.round, 10)
		hc.mu.Unlock()
		hc.timer.Reset(g.timeout)
		return nil, &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{key: q.req}, RequestState: st}, nil
	case <-leg.Done():
		hc.end(errLegGone)
		return nil, nil, leg.Err()
	case <-hc.ctx.Done():
		hc.end(nil)
		o := <-hc.done // the upstream call ends with its context
		return g.finish(leg, hc, o.res, o.err)
	}
}

// end forgets hc: no longer held or in flight; cause, when set, cancels
// the upstream call.
func (hc *heldCall) end(cause error) {
	hc.timer.Stop()
	hc.g.held.release(hc)
	hc.g.track(hc, false)
	if cause != nil {
		hc.cancel(cause)
	}
}

// expire cuts hc at its timer. A call waiting between legs has no leg to
// end it: it is forgotten here, and its next leg finds no call.
func (hc *heldCall) expire() {
	hc.mu.Lock()
	waiting := hc.pending != nil && !hc.busy
	hc.mu.Unlock()
	hc.cancel(hc.timeoutErr())
	if waiting {
		hc.end(nil)
	}
}

// timeoutErr is the cause of a held call cut by its timer: the
// upstream's timeout while the upstream works, the round timeout while
// the downstream is asked.
func (hc *heldCall) timeoutErr() error {
	hc.mu.Lock()
	waiting := hc.pending != nil && !hc.busy
	hc.mu.Unlock()
	if waiting {
		return fmt.Errorf("%w (%v)", errRoundTimeout, hc.g.timeout)
	}
	return fmt.Errorf("the upstream did not answer within %v: %w", hc.g.byName[hc.upstream].timeout(), context.DeadlineExceeded)
}

func (hc *heldCall) progress(p *mcp.ProgressParams) {
	hc.mu.Lock()
	leg := hc.leg
	hc.mu.Unlock()
	total := 0.0
	if p.Total != nil {
		total = *p.Total
	}
	mcp.ReportProgress(leg, p.Progress, total, p.Message)
}

// continueCall serves a leg that carries the gateway's (already
// unsealed and checked) state.
func (g *Gateway) continueCall(ctx context.Context, tg *target, l *leg) (mcp.Result, *mcp.InputRequiredResult, error) {
	st, err := decodeState(l.state)
	if err != nil || st.upstream != tg.upstream {
		return nil, nil, mcp.ErrInvalidRequestState
	}
	principal, err := g.srv.Principal(ctx)
	if err != nil {
		return nil, nil, err
	}
	switch st.kind {
	case kindHeld:
		hc := g.held.take(st.id, st.round, principal, tg)
		if hc == nil {
			return nil, nil, mcp.ErrInvalidRequestState
		}
		hc.mu.Lock()
		q := hc.pending
		key := "gw_" + strconv.FormatUint(hc.round, 10)
		hc.mu.Unlock()
		raw, ok := l.responses[key]
		if !ok {
			// No answer: ask the same question again.
			hc.mu.Lock()
			hc.busy = false
			hc.mu.Unlock()
			return nil, &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{key: q.req}, RequestState: l.state}, nil
		}
		hc.timer.Reset(g.byName[tg.upstream].timeout())
		q.answer <- answer{raw: raw}
		return g.await(ctx, hc)
	case kindPending:
		var call mcp.PendingCall
		if err := json.Unmarshal(st.call, &call); err != nil || call.Method != tg.method || (call.Name != tg.name && call.URI != tg.name) {
			return nil, nil, mcp.ErrInvalidRequestState
		}
		responses := mcp.InputResponses{}
		if len(st.preset) > 0 {
			if err := json.Unmarshal(st.preset, &responses); err != nil {
				return nil, nil, mcp.ErrInvalidRequestState
			}
		}
		for k := range call.InputRequests {
			if raw, ok := l.responses[k]; ok {
				if _, preset := responses[k]; !preset {
					responses[k] = raw
				}
			}
		}
		hc := &heldCall{g: g, upstream: tg.upstream, tg: tg, principal: principal, caps: l.caps, leg: ctx}
		r, err := g.pool.Resume(noQuestions(ctx), tg.upstream, &call, responses, hc.callOptions(l))
		return g.finish(ctx, hc, r, err)
	}
	return nil, nil, mcp.ErrInvalidRequestState
}

// finish turns the upstream call's end into the downstream leg's answer:
// its result; a 2026-07-28 upstream's round as the downstream's; a
// JSON-RPC error as it is; any other failure as an isError result that
// says what happened to the upstream.
func (g *Gateway) finish(ctx context.Context, hc *heldCall, res mcp.Result, err error) (mcp.Result, *mcp.InputRequiredResult, error) {
	if err == nil {
		if res == nil {
			return nil, nil, mcp.NewError(mcp.CodeInternalError, "upstream "+hc.upstream+": no result", nil)
		}
		return res, nil, nil
	}
	var pe *mcp.PendingCallError
	if errors.As(err, &pe) {
		return g.pendingRound(ctx, hc, pe.Call)
	}
	var e *mcp.Error
	if errors.As(err, &e) {
		return nil, nil, e
	}
	if c := context.Cause(hc.ctxOrNil()); c != nil && !errors.Is(c, context.Canceled) {
		err = c
	}
	return hc.failed(fmt.Sprintf("upstream %s: %s failed: %v", hc.upstream, hc.tg.what(), err))
}

// failed is a call's failure as its downstream sees it: an isError
// result for a tool (so that the model reads it), an internal error
// otherwise.
func (hc *heldCall) failed(msg string) (mcp.Result, *mcp.InputRequiredResult, error) {
	if hc.tg.method == mcp.MethodToolsCall {
		return mcp.ErrorResult(msg), nil, nil
	}
	return nil, nil, mcp.NewError(mcp.CodeInternalError, msg, nil)
}

func (hc *heldCall) ctxOrNil() context.Context {
	if hc.ctx == nil {
		return context.Background()
	}
	return hc.ctx
}

// pendingRound passes a 2026-07-28 upstream's input_required round on:
// the questions the policy or the downstream's capabilities refuse are
// answered by the gateway (declined), the others go to the downstream
// under the upstream's keys; the upstream's call, its state included, is
// kept in the gateway's state.
func (g *Gateway) pendingRound(ctx context.Context, hc *heldCall, call *mcp.PendingCall) (mcp.Result, *mcp.InputRequiredResult, error) {
	pol := g.byName[hc.upstream].askPolicy()
	preset := mcp.InputResponses{}
	ask := map[string]mcp.InputRequest{}
	for k, r := range call.InputRequests {
		if askAllowed(pol, &hc.caps, r) {
			ask[k] = r
			continue
		}
		raw, err := refusal(r)
		if err != nil {
			return hc.failed(fmt.Sprintf("upstream %s: %s asked for something the gateway refuses (%s)", hc.upstream, hc.tg.what(), r.InputMethod()))
		}
		preset[k] = raw
	}
	if len(ask) == 0 {
		// Nothing to ask the downstream: resume at once.
		r, err := g.pool.Resume(noQuestions(ctx), hc.upstream, call, preset, &mcp.CallOptions{Manual: true, OnProgress: hc.progress})
		return g.finish(ctx, hc, r, err)
	}
	cj, err := json.Marshal(call)
	if err != nil {
		return nil, nil, err
	}
	var pj []byte
	if len(preset) > 0 {
		pj, _ = json.Marshal(preset)
	}
	st := encodeState(&gwState{kind: kindPending, upstream: hc.upstream, call: cj, preset: pj})
	return nil, &mcp.InputRequiredResult{InputRequests: ask, RequestState: st}, nil
}

// relay is where a 2025 upstream's live question arrives: it finds the
// call it belongs to, applies the policy and the downstream's
// capabilities, and hands it to the call's downstream leg.
func (g *Gateway) relay(ctx context.Context, upstream string, r mcp.InputRequest) (json.RawMessage, error) {
	hc, tagged := ctx.Value(ctxKey{}).(*heldCall)
	if !tagged {
		hc = g.soleCall(upstream)
	}
	if hc != nil && hc.upstream != upstream {
		hc = nil
	}
	if hc == nil || !askAllowed(g.byName[upstream].askPolicy(), &hc.caps, r) {
		if hc == nil {
			g.log.Warn("gateway: an upstream's question belongs to no single call; declined", "upstream", upstream, "method", r.InputMethod())
		}
		return refusal(r)
	}
	q := &question{req: r, answer: make(chan answer, 1)}
	select {
	case hc.questions <- q:
	case <-hc.ctx.Done():
		return nil, context.Cause(hc.ctx)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-q.answer:
		return a.raw, a.err
	case <-hc.ctx.Done():
		return nil, context.Cause(hc.ctx)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// track adds (or removes) hc from its upstream's calls in flight.
func (g *Gateway) track(hc *heldCall, add bool) {
	g.inflightMu.Lock()
	defer g.inflightMu.Unlock()
	set := g.inflight[hc.upstream]
	if add {
		if set == nil {
			set = map[*heldCall]struct{}{}
			g.inflight[hc.upstream] = set
		}
		set[hc] = struct{}{}
		return
	}
	delete(set, hc)
}

// soleCall is the one call in flight on upstream, nil when there are
// none or several: over stdio and HTTP+SSE a 2025 upstream's question
// does not say which call it belongs to, and guessing could show one
// user's question to another.
func (g *Gateway) soleCall(upstream string) *heldCall {
	if u := g.pool.ups[upstream]; u == nil || u.snapshotInFlight() != 1 {
		return nil // calls of other kinds (a prompt, a read) count too
	}
	g.inflightMu.Lock()
	defer g.inflightMu.Unlock()
	set := g.inflight[upstream]
	if len(set) != 1 {
		return nil
	}
	for hc := range set {
		return hc
	}
	return nil
}

// heldTable holds the calls waiting for a downstream answer, by id,
// within bounds in all and per principal.
type heldTable struct {
	mu       sync.Mutex
	max, per int
	calls    map[[idLen]byte]*heldCall
	count    map[string]int
}

func newHeldTable(max, per int) *heldTable {
	if max <= 0 {
		max = 1024
	}
	if per <= 0 {
		per = 16
	}
	return &heldTable{max: max, per: per, calls: map[[idLen]byte]*heldCall{}, count: map[string]int{}}
}

// hold registers hc (once; later rounds keep their place); false when a
// bound is reached.
func (t *heldTable) hold(hc *heldCall) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if hc.held {
		return true
	}
	if t.calls == nil || len(t.calls) >= t.max || t.count[hc.principal] >= t.per {
		return false
	}
	rand.Read(hc.id[:])
	hc.held = true
	t.calls[hc.id] = hc
	t.count[hc.principal]++
	return true
}

func (t *heldTable) release(hc *heldCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !hc.held {
		return
	}
	hc.held = false
	delete(t.calls, hc.id)
	if t.count[hc.principal]--; t.count[hc.principal] <= 0 {
		delete(t.count, hc.principal)
	}
}

// take returns the held call a leg continues, when it is this round's,
// of this principal, upstream and tool, and no other leg is serving it;
// nil otherwise.
func (t *heldTable) take(id [idLen]byte, round uint64, principal string, tg *target) *heldCall {
	t.mu.Lock()
	hc := t.calls[id]
	t.mu.Unlock()
	if hc == nil || hc.principal != principal || hc.upstream != tg.upstream || hc.tg.method != tg.method || hc.tg.name != tg.name {
		return nil
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.busy || hc.round != round || hc.pending == nil {
		return nil
	}
	hc.busy = true
	return hc
}

// closeAll ends every held call (the gateway closes).
func (t *heldTable) closeAll() {
	t.mu.Lock()
	calls := t.calls
	t.calls = nil
	t.mu.Unlock()
	for _, hc := range calls {
		hc.cancel(errClosed)
	}
}
