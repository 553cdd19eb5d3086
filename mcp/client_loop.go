package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The multi round-trip loop of tools/call, prompts/get and
// resources/read. Each round the server answers input_required, the
// client answers every input request of the round concurrently with its
// handlers (the first failure cancels the others and fails the call) and
// sends the call again as a new request: same name, arguments and _meta,
// the round's inputResponses, the requestState echoed byte for byte (the
// raw JSON string as received, never re-encoded; omitted when none
// came). Nothing of a round leaks into other calls: all of it lives in
// this loop's variables.

// Back-off of requestState-only rounds: 50 ms, doubling, capped at
// 250 ms; a round with input requests resets it.
const (
	stateOnlyFirstDelay = 50 * time.Millisecond
	stateOnlyMaxDelay   = 250 * time.Millisecond
)

// maxConcurrentInputs bounds the handlers running at once for one
// round, so that a round with thousands of requests stays cheap.
const maxConcurrentInputs = 16

// defaultMaxInputRequests is ClientOptions.MaxInputRequests' default.
const defaultMaxInputRequests = 64

// CallOptions configure one call of CallTool, GetPrompt, ReadResource or
// Resume. Nil or the zero value answers input requests automatically.
type CallOptions struct {
	// Manual hands an input_required result back to the caller, as a
	// *PendingCallError, instead of answering it. Continue with Resume.
	// It applies to the 2026-07-28 era only: on a 2025-11-25 session the
	// server asks with live requests while the call is open, and those go
	// to the ClientOptions handlers whatever Manual says (a legacy round
	// cannot be saved and resumed elsewhere).
	Manual bool
	// InputResponses and RequestState seed the first request, resuming a
	// flow whose earlier rounds ran elsewhere. RequestState is sent only
	// when not empty (use Resume to echo an empty state exactly).
	InputResponses InputResponses
	RequestState   string
	// OnProgress, when set, asks for progress (a progressToken in _meta)
	// and receives the notifications. On a byte stream it runs on the
	// transport's reading goroutine: it must return quickly and must not
	// wait for another request of the same Client.
	OnProgress func(*ProgressParams)
	// MaxRounds overrides ClientOptions.MaxRounds for this call (zero:
	// the client's; negative: no bound).
	MaxRounds int
	// Meta holds extra _meta members for every leg of this call (and the
	// requests an extension sends for it, ResultCall.Request), merged over those of
	// WithMeta (Meta wins on a clash), under what middleware adds. A
	// reserved name (see ErrReservedMeta) or a value that does not
	// marshal to JSON fails the call before anything is sent. On a
	// 2025-11-25 session they go in _meta as well.
	Meta Meta
}

// PendingCall is a call stopped at an input_required round: what was
// called, what the server asks, and its opaque requestState. It
// marshals to JSON and back, so that another process can show the
// questions, collect the answers and Resume the call. The raw JSON of
// the input requests and of the state is kept, so the state is echoed
// exactly as the server sent it.
type PendingCall struct {
	// Method is tools/call, prompts/get or resources/read.
	Method string
	// Name is the tool or prompt name; URI is the resource URI.
	Name string
	URI  string
	// Arguments are the tool's arguments (a JSON object) or the prompt's
	// (an object of strings); nil when none.
	Arguments json.RawMessage
	// InputRequests are the questions of the round, by key.
	InputRequests map[string]InputRequest
	// RequestState is the server's opaque state ("" when none).
	RequestState string
	// Meta is what client middleware kept of the call (CallInfo.Carry:
	// trace context, say), saved with it and handed back to the
	// middleware of the Client that resumes it (CallInfo.Resumed). A
	// Client without middleware keeps the Meta of the call it resumes.
	Meta Meta

	rawState    []byte                     // the JSON string as received; nil when absent
	rawRequests map[string]json.RawMessage // the input requests as received
}

// PendingCallError is returned by a call made with CallOptions.Manual
// when the server answers input_required. Call holds what Resume needs.
type PendingCallError struct {
	Result *InputRequiredResult
	Call   *PendingCall
}

// Error says what needs input and how to go on.
func (e *PendingCallError) Error() string {
	target := e.Call.Name
	if e.Call.Method == MethodResourcesRead {
		target = e.Call.URI
	}
	return fmt.Sprintf("mcp: %s %q needs input (%d input requests); answer them and call Client.Resume",
		e.Call.Method, target, len(e.Call.InputRequests))
}

type inputKeyCtx struct{}

// InputRequestKey returns the inputRequests key of the input request a
// handler is answering, or on a legacy session the id of the server's
// live request (empty outside a handler).
func InputRequestKey(ctx context.Context) string {
	k, _ := ctx.Value(inputKeyCtx{}).(string)
	return k
}

// carrierCall is one logical call of a method that may need input.
type carrierCall struct {
	method  string
	target  string      // name or uri
	args    []byte      // compact JSON object, or nil
	resumed Meta        // PendingCall.Meta of the call resumed (Resume)
	custom  *customCall // a custom method (client_extension.go); nil for the specification's
	// firstLeg is set by loop when the complete result answered the
	// first leg (no input asked for: a result the cache may keep).
	firstLeg bool
}

func (cc *carrierCall) appendParams(dst, responses, state []byte) []byte {
	if cc.custom != nil {
		return cc.custom.appendParams(dst, responses, state)
	}
	if cc.method == MethodResourcesRead {
		dst = append(dst, `,"uri":`...)
	} else {
		dst = append(dst, `,"name":`...)
	}
	dst = jsonrpc.AppendString(dst, cc.target)
	if cc.args != nil {
		dst = append(dst, `,"arguments":`...)
		dst = append(dst, cc.args...)
	}
	return appendRetryMembers(dst, responses, state)
}

// appendRetryMembers writes a leg's inputResponses and requestState
// members (raw JSON, each left out when nil).
func appendRetryMembers(dst, responses, state []byte) []byte {
	if responses != nil {
		dst = append(dst, `,"inputResponses":`...)
		dst = append(dst, responses...)
	}
	if state != nil {
		dst = append(dst, `,"requestState":`...)
		dst = append(dst, state...)
	}
	return dst
}

// run drives the loop from a first request carrying responses and state
// (both raw JSON, nil when absent) and returns the raw complete result.
// With middleware, the call has a CallInfo, ended (OnEnd) on every path.
func (c *Client) run(ctx context.Context, cc *carrierCall, opts *CallOptions, responses, state []byte) (raw []byte, err error) {
	if opts == nil {
		opts = &CallOptions{}
	}
	if c.handler == nil {
		return c.loop(ctx, cc, opts, responses, state, nil)
	}
	ci := &CallInfo{Resumed: cc.resumed, Carry: maps.Clone(cc.resumed)}
	ended := false
	defer func() {
		if !ended {
			// A panic (of a handler, of middleware) goes on up; the call
			// still ends.
			ci.end(errCallPanicked)
		}
	}()
	raw, err = c.loop(ctx, cc, opts, responses, state, ci)
	ended = true
	ci.end(err)
	return raw, err
}

// errCallPanicked is the error OnEnd gets for a call cut short by a
// panic.
var errCallPanicked = errors.New("mcp: the call panicked")

// loop is run's loop; ci is the call's CallInfo (nil without
// middleware).
func (c *Client) loop(ctx context.Context, cc *carrierCall, opts *CallOptions, responses, state []byte, ci *CallInfo) ([]byte, error) {
	extra, err := callMeta(ctx, opts)
	if err != nil {
		return nil, err
	}
	if ci != nil {
		extra = &reqExtra{m: extra.m, enc: extra.enc, call: ci}
	}
	maxRounds := c.opts.MaxRounds
	if opts.MaxRounds != 0 {
		maxRounds = opts.MaxRounds
	}
	var headers []paramValue
	if cc.method == MethodToolsCall && c.mirrors() {
		var err error
		if headers, err = c.paramValues(cc.target, cc.args); err != nil {
			return nil, err
		}
	}
	var delay time.Duration
	refreshed := false
	l := &wireRequest{method: cc.method, target: cc.target, hasTarget: cc.custom == nil || cc.custom.hasTarget, onProgress: opts.OnProgress, extra: extra}
	pp := bodyPool.Get().(*[]byte)
	defer func() {
		if cap(l.params) <= 64<<10 {
			*pp = l.params[:0]
			bodyPool.Put(pp)
		}
	}()
	l.params = *pp
	var augment []byte // an extension's members of a legacy tools/call
	if cc.method == MethodToolsCall {
		augment = c.legacyParams(ctx, c.era.Load(), cc.target)
	}
	for retries := 0; ; {
		l.params = cc.appendParams(l.params[:0], responses, state)
		if augment != nil {
			l.params = append(append(l.params, ','), augment...)
		}
		l.headers = headers
		if ci != nil {
			ci.Round = retries + 1
		}
		raw, err := c.doLeg(ctx, l, state != nil || l.extra.idempotent())
		if err != nil && !refreshed && cc.method == MethodToolsCall && c.mirrors() && isParamHeaderMismatch(err) {
			// The server's inputSchema is newer than ours: re-read
			// tools/list and send the same round again.
			refreshed = true
			if c.refreshTools(ctx) == nil {
				if headers, err = c.paramValues(cc.target, cc.args); err != nil {
					return nil, err
				}
				continue
			}
		}
		if err != nil {
			return nil, stateRejected(cc, err, state != nil)
		}
		rt, err := cc.resultType(raw)
		switch {
		case err != nil:
			if h := c.resultHandler(rt, err); h != nil { // an extension's result type (client_extension_seam.go)
				return h(ctx, &ResultCall{Method: cc.method, Target: cc.target, ResultType: rt, Result: raw, Manual: opts.Manual, Client: c, extra: l.extra})
			}
			return nil, err
		case rt == ResultComplete:
			if lt := c.legacyResultType(c.era.Load(), cc.method, raw); lt != "" {
				if h := c.resultHandler(lt, ErrUnknownResultType); h != nil {
					return h(ctx, &ResultCall{Method: cc.method, Target: cc.target, ResultType: lt, Result: raw, Manual: opts.Manual, Client: c, extra: l.extra})
				}
			}
			cc.firstLeg = retries == 0 && responses == nil && state == nil
			return raw, nil
		}
		ir, err := decodeInputRequired(cc.method, raw)
		if err != nil {
			return nil, err
		}
		if n := c.opts.MaxInputRequests; n >= 0 && len(ir.keys) > n {
			return nil, &InvalidResponseError{Method: cc.method, Err: fmt.Errorf("%w: %d in one round, more than ClientOptions.MaxInputRequests (%d)", errTooManyInputRequests, len(ir.keys), n)}
		}
		if opts.Manual {
			p := ir.pending(cc)
			if ci != nil {
				p.Meta = ci.Carry
			} else {
				p.Meta = maps.Clone(cc.resumed)
			}
			return nil, &PendingCallError{Result: ir.result, Call: p}
		}
		if maxRounds >= 0 && retries >= maxRounds {
			return nil, &RoundsExceededError{Method: cc.method, Target: cc.target, MaxRounds: maxRounds}
		}
		retries++
		if len(ir.keys) == 0 {
			// requestState only: the server is not done yet. Pace it.
			if delay == 0 {
				delay = stateOnlyFirstDelay
			} else {
				delay = min(2*delay, stateOnlyMaxDelay)
			}
			if err := c.sleep(ctx, delay); err != nil {
				return nil, err
			}
			responses = nil
		} else {
			delay = 0
			if responses, err = c.fulfil(ctx, ir); err != nil {
				return nil, err
			}
		}
		state = ir.rawState
	}
}

// refreshTools re-reads every page of tools/list from the server, not
// the cache (which updates the x-mcp-header annotations the client
// knows).
func (c *Client) refreshTools(ctx context.Context) error {
	for _, err := range c.Tools(WithoutCache(ctx)) {
		if err != nil {
			return err
		}
	}
	return nil
}

// inputRequired is a decoded input_required result.
type inputRequired struct {
	result      *InputRequiredResult
	keys        []string // sorted
	rawState    []byte
	rawRequests map[string]json.RawMessage
}

func (ir *inputRequired) pending(cc *carrierCall) *PendingCall {
	p := &PendingCall{Method: cc.method, Arguments: json.RawMessage(cc.args),
		InputRequests: ir.result.InputRequests, RequestState: ir.result.RequestState,
		rawState: ir.rawState, rawRequests: ir.rawRequests}
	if cc.method == MethodResourcesRead {
		p.URI = cc.target
	} else {
		p.Name = cc.target
	}
	return p
}

// decodeInputRequired decodes an input_required result. Every input
// request must be of a known method; the requestState, when present,
// must be a string; at least one of the two must be present.
func decodeInputRequired(method string, raw []byte) (*inputRequired, error) {
	ir := &inputRequired{result: &InputRequiredResult{}}
	var rawReqs, rawMeta []byte
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		switch string(jsonrpc.Key(k)) {
		case "inputRequests":
			rawReqs = v
		case "requestState":
			ir.rawState = v
		case "_meta":
			rawMeta = v
		}
		return nil
	})
	if jsonrpc.KindOf(ir.rawState) == jsonrpc.KindNull {
		ir.rawState = nil
	}
	if ir.rawState != nil {
		s, ok := jsonString(ir.rawState)
		if !ok {
			return nil, invalidResponse(method, "requestState is not a string")
		}
		ir.result.RequestState = s
		ir.rawState = append([]byte(nil), jsonrpc.TrimSpace(ir.rawState)...)
	}
	switch jsonrpc.KindOf(rawReqs) {
	case jsonrpc.KindInvalid, jsonrpc.KindNull:
		if ir.rawState == nil {
			return nil, invalidResponse(method, "input_required result with neither inputRequests nor requestState")
		}
	case jsonrpc.KindObject:
		reqs, err := decodeInputRequests(rawReqs)
		if err != nil {
			return nil, &InvalidResponseError{Method: method, Err: err}
		}
		ir.rawRequests = reqs
		ir.result.InputRequests = make(map[string]InputRequest, len(reqs))
		for k, r := range reqs {
			d, err := decodeKnownInputRequest(r)
			if err != nil {
				return nil, &InvalidResponseError{Method: method, Err: fmt.Errorf("inputRequests[%q]: %w", k, err)}
			}
			ir.result.InputRequests[k] = d
			ir.keys = append(ir.keys, k)
		}
		sort.Strings(ir.keys)
	default:
		return nil, invalidResponse(method, "inputRequests is not an object")
	}
	if jsonrpc.KindOf(rawMeta) == jsonrpc.KindObject {
		ir.result.Meta, _ = decodeOpenMeta(rawMeta)
	}
	return ir, nil
}

func decodeInputRequests(obj []byte) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	err := jsonrpc.Fields(obj, func(k, v []byte) error {
		out[string(jsonrpc.Key(k))] = json.RawMessage(v)
		return nil
	})
	return out, err
}

// decodeKnownInputRequest decodes an input request, telling an unknown
// method (ErrUnknownInputRequest) from a malformed known one.
func decodeKnownInputRequest(raw []byte) (InputRequest, error) {
	var m string
	if jsonrpc.KindOf(raw) == jsonrpc.KindObject {
		_ = jsonrpc.Fields(raw, func(k, v []byte) error {
			if string(jsonrpc.Key(k)) == "method" {
				m, _ = jsonrpc.String(v)
			}
			return nil
		})
	}
	switch m {
	case MethodElicit:
		var params []byte
		_ = jsonrpc.Fields(raw, func(k, v []byte) error {
			if string(jsonrpc.Key(k)) == "params" {
				params = v
			}
			return nil
		})
		return decodeElicitRequest(params)
	case MethodCreateMessage, MethodListRoots:
		return decodeInputRequest(raw)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownInputRequest, m)
}

// fulfil answers every input request of a round and returns the
// inputResponses object. A kind without a handler fails before any
// handler runs; the first handler failure cancels the others.
func (c *Client) fulfil(ctx context.Context, ir *inputRequired) ([]byte, error) {
	for _, k := range ir.keys {
		if !c.canAnswer(ir.result.InputRequests[k]) {
			r := ir.result.InputRequests[k]
			return nil, &NoHandlerError{Method: r.InputMethod(), Key: k, Question: shortText(questionText(r), maxQuestionRunes)}
		}
	}
	answers := make([][]byte, len(ir.keys))
	if len(ir.keys) == 1 {
		b, err := c.answer(ctx, ir.keys[0], ir.result.InputRequests[ir.keys[0]])
		if err != nil {
			return nil, err
		}
		answers[0] = b
	} else if err := c.answerAll(ctx, ir, answers); err != nil {
		return nil, err
	}
	size := 2
	for i, k := range ir.keys {
		size += len(k) + len(answers[i]) + 4
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, k := range ir.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(b, k)
		b = append(b, ':')
		b = append(b, answers[i]...)
	}
	return append(b, '}'), nil
}

func (c *Client) canAnswer(r InputRequest) bool {
	switch r.(type) {
	case *ElicitRequest:
		return c.opts.Elicitation != nil
	case *CreateMessageRequest:
		return c.opts.Sampling != nil
	case *ListRootsRequest:
		return c.opts.Roots != nil
	}
	return false
}

// answerAll runs the handlers of a round concurrently (at most
// maxConcurrentInputs at once); the first failure cancels the rest.
func (c *Client) answerAll(ctx context.Context, ir *inputRequired, answers [][]byte) error {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range min(len(ir.keys), maxConcurrentInputs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ir.keys) || rctx.Err() != nil {
					return
				}
				k := ir.keys[i]
				b, err := c.answer(rctx, k, ir.result.InputRequests[k])
				if err != nil {
					once.Do(func() { first = err; cancel(err) })
					return
				}
				answers[i] = b
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return first
}

// answer runs the handler for one input request and encodes its result.
func (c *Client) answer(ctx context.Context, key string, r InputRequest) ([]byte, error) {
	b, err := c.answerRaw(ctx, key, r)
	if err != nil {
		return nil, fmt.Errorf("mcp: answering the server's %s: %w", labelOf(r, key), err)
	}
	return b, nil
}

// answerRaw runs the handler for an input request or a live request of
// a legacy session (key is then the request's id).
func (c *Client) answerRaw(ctx context.Context, key string, r InputRequest) (b []byte, err error) {
	ctx = context.WithValue(ctx, inputKeyCtx{}, key)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	switch r := r.(type) {
	case *ElicitRequest:
		res, err := c.opts.Elicitation(ctx, r)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, errors.New("nil result")
		}
		switch res.Action {
		case ElicitAccept, ElicitDecline, ElicitCancel:
		default:
			return nil, fmt.Errorf("invalid elicitation action %q", res.Action)
		}
		if res.Action == ElicitAccept && r.Mode != ElicitModeURL {
			if content := withSchemaDefaults(res.Content, r.RequestedSchema); content != nil {
				res = &ElicitResult{Action: res.Action, Content: content}
			}
		}
		return appendElicitResult(make([]byte, 0, 64), res)
	case *CreateMessageRequest:
		res, err := c.opts.Sampling(ctx, r)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, errors.New("nil result")
		}
		return json.Marshal(res)
	case *ListRootsRequest:
		res, err := c.opts.Roots(ctx, r)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, errors.New("nil result")
		}
		if res.Roots == nil {
			res = &ListRootsResult{Roots: []Root{}}
		}
		return json.Marshal(res)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownInputRequest, r.InputMethod())
}

// withSchemaDefaults returns content with the default of every property
// of schema (a form's requestedSchema) that content leaves out (SEP-1034:
// a field the user did not fill keeps the value the server proposed), or
// nil when there is nothing to add. content itself is not modified.
func withSchemaDefaults(content map[string]any, schema any) map[string]any {
	raw, ok := schema.(json.RawMessage)
	if !ok {
		if schema == nil {
			return nil
		}
		var err error
		if raw, err = json.Marshal(schema); err != nil {
			return nil
		}
	}
	if !bytes.Contains(raw, []byte(`"default"`)) {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	var out map[string]any
	for name, p := range s.Properties {
		if len(p.Default) == 0 || string(p.Default) == "null" {
			continue
		}
		if _, ok := content[name]; ok {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(content)+len(s.Properties))
			for k, v := range content {
				out[k] = v
			}
		}
		out[name] = p.Default
	}
	return out
}

// encodeResponses encodes caller-given input responses (keys sorted,
// values compacted). Nil or empty gives nil (omitted).
func encodeResponses(rs InputResponses) ([]byte, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := []byte{'{'}
	for i, k := range keys {
		v, err := compactJSON(rs[k])
		if err != nil {
			return nil, fmt.Errorf("mcp: input response %q: %w", k, err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(b, k)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}
