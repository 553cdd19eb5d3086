package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// The client's seams for an extension package (mcp/tasks is built on
// them): following a result type the extension defines
// (ClientExtensions.Results), sending the extension's requests on behalf
// of the call or of none (Client.Request), answering input requests with the client's handlers, and
// decoding a tool result as CallTool does. See docs/design/extensions.md.

// ResultHandler follows an answer whose resultType an extension defines
// (ClientExtensions.Results). It returns the call's complete result as
// the server would have sent it (a tools/call's CallToolResult object),
// which the call then decodes and checks as any, or the call's error.
type ResultHandler func(ctx context.Context, call *ResultCall) (json.RawMessage, error)

// ResultCall is a call of the client's loop answered with a result type
// an extension defines.
type ResultCall struct {
	// Method is the call's method (tools/call, prompts/get,
	// resources/read) and Target its tool or prompt name or resource URI.
	Method, Target string
	// ResultType is the answer's resultType; Result the answer as
	// received.
	ResultType ResultType
	Result     json.RawMessage
	// Manual is the call's CallOptions.Manual: the caller asked to drive
	// the call itself.
	Manual bool
	// Client is the client making the call; Client.Request sends the
	// extension's requests for it.
	Client *Client

	extra *reqExtra
}

// Request sends one request of a custom method (not a carrier: no
// input_required loop, no leg retries) and returns its complete answer.
// With on set (an extension's follow-up of a call, from its
// ResultHandler) it carries that call's CallOptions.Meta and middleware
// sees the call's CallInfo on it; without, it belongs to no call
// (ClientRequest.Call is nil). It is sent in either era, like
// CallMethod.
func (c *Client) Request(ctx context.Context, call *MethodCall, on *ResultCall) (*MethodResult, error) {
	if call == nil || call.Carrier {
		return nil, fmt.Errorf("%w: Request sends one request, not a carrier call", errCustomMethod)
	}
	cc, err := newCustomCarrier(call)
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	var extra *reqExtra
	if on != nil {
		extra = on.extra
	}
	raw, err := c.do(ctx, &wireRequest{method: cc.method, target: cc.target, hasTarget: cc.custom.hasTarget, params: cc.custom.members, extra: extra})
	if err != nil {
		return nil, err
	}
	rt, err := cc.custom.resultType(cc.method, raw)
	if err != nil {
		return nil, err
	}
	return &MethodResult{ResultType: rt, Result: json.RawMessage(raw)}, nil
}

// resultHandler returns the extension's handler for a result type the
// loop does not know (err from resultTypeOf), or nil.
func (c *Client) resultHandler(rt ResultType, err error) ResultHandler {
	x := c.opts.Extensions
	if x == nil || rt == "" || !errors.Is(err, ErrUnknownResultType) {
		return nil
	}
	return x.Results[rt]
}

// Answer answers input requests (bare {"method","params"} objects, by
// key) with the client's handlers as a round of the call loop does, and
// returns the inputResponses object (keys in order). A request that does
// not decode is an *InvalidResponseError of method (the request whose
// answer carried them); a kind without a handler fails before any
// handler runs (*NoHandlerError), and the first handler failure cancels
// the others.
func (c *Client) Answer(ctx context.Context, method string, requests map[string]json.RawMessage) (json.RawMessage, error) {
	ir := &inputRequired{result: &InputRequiredResult{InputRequests: make(map[string]InputRequest, len(requests))}, rawRequests: requests}
	for k := range requests {
		ir.keys = append(ir.keys, k)
	}
	slices.Sort(ir.keys)
	for _, k := range ir.keys {
		d, err := decodeKnownInputRequest(requests[k])
		if err != nil {
			return nil, &InvalidResponseError{Method: method, Err: fmt.Errorf("inputRequests[%q]: %w", k, err)}
		}
		ir.result.InputRequests[k] = d
	}
	b, err := c.fulfil(ctx, ir)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// DecodeToolResult decodes a complete tools/call result and, when tool
// is not empty, checks its structured content against the tool's
// outputSchema as CallTool does: for a result that arrives outside the
// call (a task's).
func (c *Client) DecodeToolResult(tool string, raw json.RawMessage) (*CallToolResult, error) {
	return c.toolResult(tool, raw)
}

// modernCapabilities are the capabilities of a modern request: those of
// Capabilities plus ClientExtensions.Declared (a legacy session's
// initialize never declares them).
func (c *Client) modernCapabilities() ClientCapabilities {
	caps := c.Capabilities()
	c.declareExtensions(&caps) // client_extension.go
	return caps
}
