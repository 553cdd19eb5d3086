package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The client side of extensions: declaring them
// (ClientOptions.Extensions), calling a server's custom methods
// (Client.CallMethod, CallMethodAs) and receiving the extensions'
// notifications. A carrier method runs the same loop as CallTool
// (client_loop.go): its input requests are answered with the client's
// handlers and the call sent again with inputResponses and the
// requestState echoed. See docs/design/extensions.md.

// ClientExtensions declares the extensions a client supports and
// receives their notifications.
type ClientExtensions struct {
	// Declared are the extensions declared in
	// clientCapabilities.extensions of every 2026-07-28 request, by
	// identifier, with their settings (nil means {}; otherwise a JSON
	// object; anything else is declared as {}, with a warning). A server answers a method of an extension the request did
	// not declare with -32021. Sessions of earlier revisions have no
	// extensions: nothing is declared there.
	Declared map[string]json.RawMessage
	// Results follow the result types extensions define: a call of the
	// client's loop (CallTool, GetPrompt, ReadResource, Resume) answered
	// with a resultType that is neither complete nor input_required is
	// handed to Results[type] (mcp/tasks follows "task" this way); a type
	// without an entry is an invalid response (ErrUnknownResultType).
	Results map[ResultType]ResultHandler
	// OnNotification, when set, receives the notifications of methods
	// the specification does not define that the server sends in
	// relation to a request (an extension's notification sent with
	// Notify from a handler): on Streamable HTTP those of any request of
	// the client but a Listen, on a byte stream (where such a
	// notification names no request) every one. Notifications on a
	// Listen stream (Server.NotifyListeners) go to Listen's callback.
	// It runs on the transport's reading goroutine: it must return
	// quickly and must not wait for another request of the same Client.
	// params is the notification's params object ({} when it had none),
	// valid only during the call.
	OnNotification func(method string, params json.RawMessage)

	// Sessions of earlier revisions (2025-11-25 and before) have no
	// extensions; an extension that rides there on members the revision
	// defines (mcp/tasks: the task-augmented tools/call of 2025-11-25)
	// adapts the session with these.
	//
	// LegacyCapabilities are members added to the capabilities of
	// initialize (each value a JSON object, e.g. "tasks": {}); one the
	// client declares itself is not replaced.
	LegacyCapabilities map[string]json.RawMessage
	// LegacyParams, when set, returns members to add to the params of a
	// tools/call on such a session (a JSON object, {"task":{}}; nil adds
	// none), given the tool's entry as the last tools/list listed it
	// (nil when it was not listed) and the result of initialize.
	LegacyParams func(ctx context.Context, tool, initialize json.RawMessage) json.RawMessage
	// LegacyResult, when set, names the result type (a key of Results)
	// of an answer to a tools/call on such a session that is not a
	// CallToolResult (2025-11-25's CreateTaskResult), "" for one that is;
	// Results[type] then follows the call as for a 2026-07-28 answer
	// of that resultType.
	LegacyResult func(result json.RawMessage) ResultType
}

// legacyParams returns the members an extension adds to a tools/call of
// tool on the legacy era era (without the braces), or nil.
func (c *Client) legacyParams(ctx context.Context, era *clientEra, tool string) []byte {
	x := c.opts.Extensions
	if x == nil || x.LegacyParams == nil || era == nil || !era.servesRequests() {
		return nil
	}
	c.mu.Lock()
	entry := c.listed[tool]
	c.mu.Unlock()
	obj := x.LegacyParams(ctx, entry, era.helloRaw)
	if jsonrpc.KindOf(obj) != jsonrpc.KindObject || !jsonrpc.Valid(obj) {
		return nil
	}
	obj, err := compactJSON(obj)
	if err != nil {
		return nil
	}
	inner := jsonrpc.TrimSpace(obj)
	inner = jsonrpc.TrimSpace(inner[1 : len(inner)-1])
	if len(inner) == 0 {
		return nil
	}
	return inner
}

// legacyResultType is the result type an extension gives a complete
// legacy answer to tools/call ("" for a CallToolResult).
func (c *Client) legacyResultType(era *clientEra, method string, raw []byte) ResultType {
	x := c.opts.Extensions
	if x == nil || x.LegacyResult == nil || method != MethodToolsCall || era == nil || !era.servesRequests() {
		return ""
	}
	return x.LegacyResult(json.RawMessage(raw))
}

// learnListed keeps a tool's entry of tools/list for LegacyParams (only
// when an extension asks for it).
func (c *Client) learnListed(name string, raw []byte) {
	if x := c.opts.Extensions; x == nil || x.LegacyParams == nil {
		return
	}
	c.mu.Lock()
	if c.listed == nil {
		c.listed = map[string]json.RawMessage{}
	}
	if _, ok := c.listed[name]; ok || len(c.listed) < maxListedTools {
		c.listed[name] = bytes.Clone(raw)
	}
	c.mu.Unlock()
}

// maxListedTools bounds the tools/list entries kept for LegacyParams (a
// server whose tools churn cannot grow the map without end).
const maxListedTools = 4096

// appendLegacyCapabilities adds ClientExtensions.LegacyCapabilities to
// the encoded capabilities caps (a JSON object).
func (c *Client) appendLegacyCapabilities(caps []byte) []byte {
	x := c.opts.Extensions
	if x == nil || len(x.LegacyCapabilities) == 0 {
		return caps
	}
	have := map[string]bool{}
	_ = jsonrpc.Fields(caps, func(k, _ []byte) error { have[string(jsonrpc.Key(k))] = true; return nil })
	names := make([]string, 0, len(x.LegacyCapabilities))
	for k := range x.LegacyCapabilities {
		names = append(names, k)
	}
	slices.Sort(names)
	out := append([]byte(nil), caps[:len(caps)-1]...)
	for _, k := range names {
		v, err := compactJSON(x.LegacyCapabilities[k])
		if have[k] || err != nil || jsonrpc.KindOf(v) != jsonrpc.KindObject {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = jsonrpc.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}')
}

// MethodCall is one call of a custom method: a method of an extension
// the server advertises (capabilities.extensions of server/discover),
// outside the specification.
type MethodCall struct {
	// Method is the JSON-RPC method. It may not be a method of the
	// specification (of any revision), nor begin with "notifications/"
	// or "rpc.".
	Method string
	// Params are the call's params: nil, or a value that marshals to a
	// JSON object (json.RawMessage is sent as it is, compacted). They
	// may not hold _meta (the SDK writes it; extra members go in
	// CallOptions.Meta), nor, for a carrier call, inputResponses or
	// requestState (the loop writes them).
	Params any
	// TargetMember names the params member (a string) that says what
	// the request acts on, as the server's MethodSpec.TargetMember does:
	// on Streamable HTTP its value is sent as the Mcp-Name header, which
	// a 2026-07-28 server requires for such a method. Empty: none.
	TargetMember string
	// Carrier says the method may answer input_required (the server's
	// MethodSpec.Carrier): its input requests are answered like those of
	// CallTool (the ClientOptions handlers, MaxRounds, requestState-only
	// rounds paced), or handed back with CallOptions.Manual as a
	// *PendingCallError, whose PendingCall names the method, the target
	// (Name) and the params (Arguments). Continue such a call with
	// CallMethod again, passing the answers and the state in
	// CallOptions.InputResponses and RequestState (Resume and a
	// PendingCall's JSON form are for the specification's methods). An
	// input_required answer to a call that is not a carrier is an
	// invalid response.
	Carrier bool
}

// MethodResult is the complete answer to a custom method.
type MethodResult struct {
	// ResultType is the result's resultType: "complete" (also when the
	// server sent none, as a session of an earlier revision does), or a
	// type the extension defines.
	ResultType ResultType
	// Result is the result object as the server sent it (with
	// resultType and _meta).
	Result json.RawMessage
}

// errCustomMethod is returned by CallMethod for a call it does not send:
// a reserved or invalid method name, params that are not an object, or
// params holding a member the SDK writes.
var errCustomMethod = errors.New("mcp: invalid custom method call")

// CallMethod calls a custom method and returns its complete answer. Like
// every request it carries the _meta envelope on 2026-07-28 (with the
// extensions of ClientOptions.Extensions declared), runs through the
// client's middleware (ClientRequest.Method is the method, Target the
// TargetMember's value) and its leg retries, and on a session of an
// earlier revision it is sent as a plain request of the session. A
// server's JSON-RPC error is an *Error (-32021 when the extension was
// not declared, -32601 when the server has no such method).
func (c *Client) CallMethod(ctx context.Context, call *MethodCall, opts *CallOptions) (*MethodResult, error) {
	if call == nil {
		return nil, fmt.Errorf("%w: nil MethodCall", errCustomMethod)
	}
	cc, err := newCustomCarrier(call)
	if err != nil {
		return nil, err
	}
	raw, err := c.start(ctx, cc, opts)
	if err != nil {
		return nil, err
	}
	rt, err := cc.custom.resultType(cc.method, raw)
	if err != nil {
		return nil, err
	}
	return &MethodResult{ResultType: rt, Result: json.RawMessage(raw)}, nil
}

// CallMethodAs calls a custom method (see Client.CallMethod) and decodes
// its result object into a new Out. An answer whose resultType is not
// "complete" (a type the extension defines) is an *InvalidResponseError
// wrapping ErrUnknownResultType: use Client.CallMethod to read those.
func CallMethodAs[Out any](ctx context.Context, c *Client, call *MethodCall, opts *CallOptions) (*Out, error) {
	res, err := c.CallMethod(ctx, call, opts)
	if err != nil {
		return nil, err
	}
	if res.ResultType != ResultComplete {
		return nil, &InvalidResponseError{Method: call.Method, Err: fmt.Errorf("%w %q where a complete result is due", ErrUnknownResultType, string(res.ResultType))}
	}
	out := new(Out)
	if err := json.Unmarshal(res.Result, out); err != nil {
		return nil, &InvalidResponseError{Method: call.Method, Err: err}
	}
	return out, nil
}

// customCall is what a carrierCall of a custom method holds beyond the
// method and target: the params' members and whether it may ask.
type customCall struct {
	members   []byte // the params' members, each preceded by a comma
	hasTarget bool
	carrier   bool
}

// newCustomCarrier checks a MethodCall and builds its carrierCall.
func newCustomCarrier(call *MethodCall) (*carrierCall, error) {
	if !methodNameRE.MatchString(call.Method) || reservedMethod(call.Method) {
		return nil, fmt.Errorf("%w: %q is not a custom method name (1 to 256 visible ASCII characters, not a method of the specification, not notifications/* or rpc.*)", errCustomMethod, call.Method)
	}
	obj, err := encodeArgs(call.Params)
	if err != nil {
		return nil, fmt.Errorf("%w: params: %v", errCustomMethod, err)
	}
	if obj == nil {
		obj = []byte(`{}`)
	}
	cu := &customCall{carrier: call.Carrier}
	cc := &carrierCall{method: call.Method, args: obj, custom: cu}
	var bad string
	found := false
	err = jsonrpc.Fields(obj, func(k, v []byte) error {
		name := string(jsonrpc.Key(k))
		switch {
		case name == "_meta":
			bad = "_meta (extra members go in CallOptions.Meta)"
		case call.Carrier && (name == "inputResponses" || name == "requestState"):
			bad = name + " (the loop writes it)"
		case call.TargetMember != "" && name == call.TargetMember:
			s, ok := jsonString(v)
			if !ok {
				bad = fmt.Sprintf("%s (the target member) is not a string", name)
				return nil
			}
			cc.target, found = s, true
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: params: %v", errCustomMethod, err)
	case bad != "":
		return nil, fmt.Errorf("%w: params hold %s", errCustomMethod, bad)
	case call.TargetMember != "" && !found:
		return nil, fmt.Errorf("%w: params have no %q (the target member)", errCustomMethod, call.TargetMember)
	}
	cu.hasTarget = call.TargetMember != ""
	if len(obj) > 2 {
		cu.members = append([]byte{','}, obj[1:len(obj)-1]...)
	}
	return cc, nil
}

// appendParams writes the members of one leg: the params, then the
// round's answers and state.
func (cu *customCall) appendParams(dst, responses, state []byte) []byte {
	return appendRetryMembers(append(dst, cu.members...), responses, state)
}

// resultType reads the resultType of an answer to a custom method:
// input_required (a carrier only) continues the loop; any other is the
// call's answer, complete or a type of the extension's.
func (cu *customCall) resultType(method string, raw []byte) (ResultType, error) {
	if jsonrpc.KindOf(raw) != jsonrpc.KindObject {
		return "", invalidResponse(method, "the result is not an object")
	}
	rt := ResultComplete
	var bad error
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) != "resultType" {
			return nil
		}
		s, ok := jsonString(v)
		if !ok || s == "" {
			bad = invalidResponse(method, "resultType is not a non-empty string")
			return errStopScan
		}
		rt = ResultType(s)
		return nil
	})
	if bad != nil {
		return "", bad
	}
	if rt == ResultInputRequired && !cu.carrier {
		return "", &InvalidResponseError{Method: method, Err: ErrInputRequiredNotAllowed}
	}
	return rt, nil
}

// resultType is the loop's reading of an answer's resultType.
func (cc *carrierCall) resultType(raw []byte) (ResultType, error) {
	if cc.custom == nil {
		return resultTypeOf(cc.method, raw)
	}
	rt, err := cc.custom.resultType(cc.method, raw)
	if err == nil && rt != ResultInputRequired {
		rt = ResultComplete // the call's answer, whatever its type
	}
	return rt, err
}

// declareExtensions adds the declared extensions to caps (a copy of its
// map).
func (c *Client) declareExtensions(caps *ClientCapabilities) {
	x := c.opts.Extensions
	if x == nil || len(x.Declared) == 0 {
		return
	}
	ext := make(map[string]json.RawMessage, len(caps.Extensions)+len(x.Declared))
	maps.Copy(ext, caps.Extensions)
	for name, settings := range x.Declared {
		if len(settings) == 0 {
			settings = json.RawMessage(`{}`)
		} else if jsonrpc.KindOf(settings) != jsonrpc.KindObject || !jsonrpc.Valid(settings) {
			c.log.Warn("mcp: client: extension settings are not a JSON object; declared as {}", "extension", name)
			settings = json.RawMessage(`{}`)
		}
		ext[name] = settings
	}
	caps.Extensions = ext
}

// extensionNotes reports whether the client takes extensions'
// notifications (so that every request routes its notifications).
func (c *Client) extensionNotes() bool {
	return c.opts.Extensions != nil && c.opts.Extensions.OnNotification != nil
}

// extensionNotification hands a notification the specification does not
// define to ClientExtensions.OnNotification.
func (c *Client) extensionNotification(method string, params []byte) {
	if !c.extensionNotes() || specNotifications[method] {
		return
	}
	if jsonrpc.KindOf(params) != jsonrpc.KindObject {
		params = []byte(`{}`)
	}
	c.opts.Extensions.OnNotification(method, json.RawMessage(params))
}
