package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Observing a Client: extra _meta members on its requests
// (CallOptions.Meta, WithMeta) and middleware over every request it
// sends (ClientOptions.Middleware), so that a tracer can put trace
// context (traceparent, tracestate, baggage) in params._meta, give a
// logical call one span with a child span per leg, and carry the trace
// across processes in a PendingCall (CallInfo.Carry, PendingCall.Meta,
// CallInfo.Resumed). See docs/design/client-eras.md, "Observing a
// Client".
//
// What the middleware sees: every request a Client sends for its
// caller, in both eras and on every transport: each leg of tools/call,
// prompts/get and resources/read, the tasks/get, tasks/update and
// tasks/cancel of a call that became a task, tools/list (also when a
// call re-reads it), prompts/list, resources/list,
// resources/templates/list, server/discover, completion/complete,
// subscriptions/listen and the custom methods of Client.Request. What it
// does not see: the requests that settle the era (the server/discover
// probe of ModeAuto on a byte stream or from Connect, initialize, and
// the logging/setLevel that follows it), notifications, and the answers
// to the server's own requests on a legacy session. The first request of
// ModeAuto over HTTP is the probe itself: the middleware sees it, with
// ProtocolVersion "" until it returns.
//
// Without middleware and without extra _meta the request path is as
// before: nothing is allocated for this.

// reservedMetaPrefix starts the names of the members of the _meta
// envelope (version, capabilities, identity, log level, ...).
const reservedMetaPrefix = "io.modelcontextprotocol/"

// ClientRequest is one request a Client sends (each leg of a multi
// round-trip call is one), as client middleware sees it. Middleware may
// add to Meta, and pass the request on (or a copy of it: its unexported
// fields tie it to the Client that made it); the other fields describe
// the request and changing them changes nothing that is sent.
type ClientRequest struct {
	// Method is the JSON-RPC method: tools/call, tools/list, ...
	Method string
	// Target is the tool or prompt name, the resource URI, or the task
	// id of tasks/get, tasks/update and tasks/cancel; "" otherwise.
	Target string
	// Params is the params object as sent, without _meta: read-only.
	// It holds arguments, input responses and request state, which are
	// the application's: never log it.
	Params json.RawMessage
	// Meta holds the extra _meta members to send (never the SDK's own):
	// CallOptions.Meta merged over those of WithMeta. It is this
	// request's own map (never nil), which middleware may add to; a
	// reserved name (see ErrReservedMeta) fails the request before it is
	// sent, and so does a value that does not marshal to JSON.
	Meta Meta
	// ProtocolVersion is the version of the era the request is sent in;
	// "" when the era is not known yet (the first request of ModeAuto
	// over HTTP, which settles it). Once next returns it is the version
	// the request was last sent with.
	ProtocolVersion string
	// Transport is "http" (Streamable HTTP), "http+sse" (the HTTP+SSE
	// transport of 2024-11-05), "stdio" (newline-delimited JSON-RPC on
	// any byte stream: a child process, a network connection) or
	// "memory" (the client end of NewInMemoryTransports). Like
	// ProtocolVersion it is updated when next returns (an HTTP transport
	// may fall back to HTTP+SSE while the request settles the era).
	Transport string
	// Call is the logical tools/call, prompts/get or resources/read the
	// request belongs to (a leg, or a task request of a call that became
	// a task); nil for other requests.
	Call *CallInfo

	wire   *wireRequest
	client *Client
	sent   reqExtra // what the request is sent with, after middleware
}

// ClientHandler sends a request and returns its raw result (a JSON
// object, read-only), the server's *Error, or why it could not be sent.
type ClientHandler func(ctx context.Context, req *ClientRequest) (result json.RawMessage, err error)

// ClientMiddleware wraps the ClientHandler that sends requests (see
// ClientOptions.Middleware). It runs on the goroutine that sends the
// request (the caller's, or for Listen the one Listen starts); it may
// call next more than once (each time the request is sent again, with a
// new id) but never concurrently, and must not keep req beyond its
// return.
type ClientMiddleware func(next ClientHandler) ClientHandler

// CallInfo is one logical tools/call, prompts/get or resources/read as
// client middleware sees it: every leg of it (and every task request of
// a call that became a task) carries the same *CallInfo. Its legs are
// sent one after the other, on the goroutine of the call.
type CallInfo struct {
	// Round is the leg being sent: 1 for the first, 2 for the first
	// retry after an input_required result, ... (a leg sent again after
	// a transient failure keeps its Round; the task requests of a call
	// have the Round of the leg that created the task). A call resumed
	// with Client.Resume is a new logical call: its Round starts at 1.
	Round int
	// Resumed is PendingCall.Meta of the call this one resumes
	// (Client.Resume), nil otherwise: read-only.
	Resumed Meta
	// Carry holds the members middleware wants kept in a PendingCall
	// made from this call (CallOptions.Manual): they become its Meta,
	// which Client.Resume hands back as Resumed, in this process or
	// another. It is read when the PendingCall is made, after the
	// middleware of the leg returned and before OnEnd's functions run.
	// On Client.Resume it starts as a copy of Resumed (so that a hop
	// through a Client whose middleware adds nothing loses nothing);
	// otherwise it starts nil.
	Carry Meta

	mu     sync.Mutex
	values []callValue
	onEnd  []func(rounds int, err error)
	ended  bool
	rounds int
	err    error
}

type callValue struct{ key, val any }

// Value returns what SetValue stored under key in this call, or nil.
// Keys compare like context keys: use an unexported type of your own.
func (ci *CallInfo) Value(key any) any {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	for _, v := range ci.values {
		if v.key == key {
			return v.val
		}
	}
	return nil
}

// SetValue stores val under key for the rest of the call (per-call
// storage for middleware: a span, a start time). Safe for concurrent
// use.
func (ci *CallInfo) SetValue(key, val any) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	for i, v := range ci.values {
		if v.key == key {
			ci.values[i].val = val
			return
		}
	}
	ci.values = append(ci.values, callValue{key, val})
}

// OnEnd registers f to run once when the logical call ends, on every
// path: complete, failed, handed back as a *PendingCallError or a
// an extension's (mcp/tasks' *tasks.PendingError), or given up by the caller (its context ended).
// rounds is the number of the last leg sent (its Round) and err the
// call's error (nil on success). Functions run in the reverse order of
// their registration, like deferred calls, on the call's goroutine,
// before the call returns; f registered after the end runs at once.
func (ci *CallInfo) OnEnd(f func(rounds int, err error)) {
	ci.mu.Lock()
	if ci.ended {
		rounds, err := ci.rounds, ci.err
		ci.mu.Unlock()
		f(rounds, err)
		return
	}
	ci.onEnd = append(ci.onEnd, f)
	ci.mu.Unlock()
}

// end runs the OnEnd functions, once.
func (ci *CallInfo) end(err error) {
	ci.mu.Lock()
	if ci.ended {
		ci.mu.Unlock()
		return
	}
	ci.ended, ci.rounds, ci.err = true, ci.Round, err
	fs := ci.onEnd
	ci.onEnd = nil
	ci.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i](ci.rounds, err)
	}
}

// reqExtra is what a request carries beyond what the SDK sends: extra
// _meta members, checked and encoded once (enc is `"name":value,...` in
// name order, without braces, nil when there are none; err says why
// they cannot be sent), and for middleware the logical call the request
// belongs to. One made by WithMeta is shared by every request of its
// context (call nil); the one of a call's legs is the call's.
type reqExtra struct {
	m    Meta
	enc  []byte
	err  error
	call *CallInfo
}

// noExtra stands for "no extra members" on a request whose members are
// settled already (the legs of a call).
var noExtra = &reqExtra{}

// idempotent reports whether the request carries an idempotency key
// (IdempotencyMetaKey): a first leg whose answer was lost may then be
// sent again, with the same key (client_retry.go).
func (x *reqExtra) idempotent() bool {
	if x == nil {
		return false
	}
	k, ok := x.m[IdempotencyMetaKey].(string)
	return ok && k != ""
}

func newReqExtra(m Meta) *reqExtra {
	enc, err := encodeExtraMeta(m)
	return &reqExtra{m: m, enc: enc, err: err}
}

type metaCtxKey struct{}

// WithMeta returns a context whose requests carry the extra _meta
// members of m, on every method (ListTools, CallTool, ReadResource,
// Discover, ...). They merge with those of an enclosing WithMeta (m
// wins on a clash), with CallOptions.Meta (which wins on a clash) and
// with what middleware adds. m is copied. A reserved name (see
// ErrReservedMeta) or a value that does not marshal to JSON fails every
// request made with the context, before it is sent.
func WithMeta(ctx context.Context, m Meta) context.Context {
	if len(m) == 0 {
		return ctx
	}
	var merged Meta
	if parent, _ := ctx.Value(metaCtxKey{}).(*reqExtra); parent != nil {
		merged = maps.Clone(parent.m)
		maps.Copy(merged, m)
	} else {
		merged = maps.Clone(m)
	}
	return context.WithValue(ctx, metaCtxKey{}, newReqExtra(merged))
}

// ctxMeta returns the members of WithMeta, nil when there are none.
func ctxMeta(ctx context.Context) *reqExtra {
	x, _ := ctx.Value(metaCtxKey{}).(*reqExtra)
	return x
}

// callMeta returns the extra members of a call's legs: CallOptions.Meta
// merged over those of the context.
func callMeta(ctx context.Context, opts *CallOptions) (*reqExtra, error) {
	cx := ctxMeta(ctx)
	if len(opts.Meta) == 0 {
		if cx == nil {
			return noExtra, nil
		}
		return cx, cx.err
	}
	m := opts.Meta
	if cx != nil {
		m = maps.Clone(cx.m)
		maps.Copy(m, opts.Meta)
	}
	x := newReqExtra(m)
	return x, x.err
}

// checkMetaName refuses the names of the members the SDK writes.
func checkMetaName(name string) error {
	if strings.HasPrefix(name, reservedMetaPrefix) || name == metaProgressToken {
		return fmt.Errorf("%w %q: the SDK writes %s* and %s itself", ErrReservedMeta, name, reservedMetaPrefix, metaProgressToken)
	}
	return nil
}

// encodeExtraMeta checks and encodes extra members, in name order.
func encodeExtraMeta(m Meta) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	var small [8]string
	names := small[:0]
	size := 0
	for name, v := range m {
		names = append(names, name)
		size += len(name) + 8
		if s, ok := v.(string); ok {
			size += len(s)
		} else {
			size += 32
		}
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	for i, name := range names {
		if err := checkMetaName(name); err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(b, name)
		b = append(b, ':')
		if s, ok := m[name].(string); ok {
			// Trace context is strings: no encoder needed.
			b = jsonrpc.AppendString(b, s)
			continue
		}
		var err error
		if b, err = marshalAppend(b, m[name]); err != nil {
			return nil, fmt.Errorf("mcp: _meta member %q: %w", name, err)
		}
	}
	return b, nil
}

// chainClient builds the handler the middleware wrap around send, the
// first element outermost.
func (c *Client) chainClient(mw []ClientMiddleware) ClientHandler {
	h := ClientHandler(c.sendIntercepted)
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] != nil {
			h = mw[i](h)
		}
	}
	return h
}

// intercept runs the middleware for request l, whose extra members
// (before middleware) are those of l.extra (nil: none). Unless the
// request itself is the probe that settles the era (ModeAuto over
// HTTP), the era is settled first, so that the middleware knows its
// version.
func (c *Client) intercept(ctx context.Context, l *wireRequest) ([]byte, error) {
	era := c.era.Load()
	if era == nil && (c.opts.Mode != ModeAuto || !c.headers) {
		var done bool
		var err error
		if era, _, done, err = c.connect(ctx, nil); done {
			return nil, err
		}
	}
	x := l.extra
	req := &ClientRequest{Method: l.method, Transport: c.t.kind(), wire: l, client: c}
	if x != nil {
		req.Call = x.call
	}
	if l.hasTarget {
		req.Target = l.target
	}
	if era != nil {
		req.ProtocolVersion = era.version
	}
	if len(l.params) > 0 {
		p := make([]byte, 0, len(l.params)+1)
		p = append(p, '{')
		p = append(p, l.params[1:]...)
		req.Params = append(p, '}')
	} else {
		req.Params = json.RawMessage(`{}`)
	}
	if x != nil {
		req.Meta = make(Meta, len(x.m)+2)
		maps.Copy(req.Meta, x.m)
	} else {
		req.Meta = Meta{}
	}
	return c.handler(ctx, req)
}

// sendIntercepted is the end of the middleware chain: it encodes the
// request's extra members and sends it.
func (c *Client) sendIntercepted(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
	l := req.wire
	if l == nil || req.client != c {
		return nil, errors.New("mcp: client middleware passed on a ClientRequest this Client did not make (pass on the request received, or a copy of it)")
	}
	enc, err := encodeExtraMeta(req.Meta)
	if err != nil {
		return nil, err
	}
	settled := l.extra
	req.sent = reqExtra{enc: enc}
	if settled != nil {
		req.sent.call = settled.call
	}
	l.extra = &req.sent
	res, err := c.doWire(ctx, l)
	l.extra = settled
	if era := c.era.Load(); era != nil {
		req.ProtocolVersion = era.version
	}
	req.Transport = c.t.kind()
	return res, err
}
