package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Discover calls server/discover: the versions, capabilities and
// instructions of the server. A fresh cached result is returned without
// a request (see ClientOptions.Cache).
func (c *Client) Discover(ctx context.Context) (*DiscoverResult, error) {
	raw, err := c.cached(ctx, groupDiscover, MethodDiscover, nil, func(ctx context.Context) ([]byte, bool, error) {
		raw, err := c.do(ctx, &wireRequest{method: MethodDiscover})
		return raw, true, err
	})
	if err != nil {
		return nil, err
	}
	return decodeComplete[DiscoverResult](MethodDiscover, raw)
}

// listPage requests one page of a list method, or takes it from the
// cache while fresh (each page is cached on its own, by its cursor). A
// nil cursor asks for the first page; an empty cursor is a valid cursor.
func (c *Client) listPage(ctx context.Context, group int, method string, cursor *string) ([]byte, error) {
	l := wireRequest{method: method}
	var key []byte
	if cursor != nil {
		l.params = jsonrpc.AppendString([]byte(`,"cursor":`), *cursor)
		key = l.params[len(`,"cursor":`):]
	}
	return c.cached(ctx, group, method, key, func(ctx context.Context) ([]byte, bool, error) {
		raw, err := c.do(ctx, &l)
		return raw, true, err
	})
}

// ListTools returns one page of tools/list (cursor nil: the first page).
// Over HTTP, tools with invalid x-mcp-header annotations are left out
// (and logged), and the annotations of the others are remembered so that
// CallTool can mirror those arguments in Mcp-Param-* headers. Input
// schemas are kept as the exact JSON received (json.RawMessage); no $ref
// is ever followed. Output schemas are remembered so that CallTool can
// check structured results (see OutputValidationError). A fresh cached
// page is returned without a request (see ClientOptions.Cache).
func (c *Client) ListTools(ctx context.Context, cursor *string) (*ListToolsResult, error) {
	raw, err := c.listPage(ctx, groupTools, MethodToolsList, cursor)
	if err != nil {
		return nil, err
	}
	return c.decodeToolsPage(raw)
}

// Tools iterates over every tool, page by page. Iteration stops at the
// first error, which is yielded.
func (c *Client) Tools(ctx context.Context) iter.Seq2[*Tool, error] {
	return paginate(ctx, MethodToolsList, func(ctx context.Context, cursor *string) ([]*Tool, *string, error) {
		r, err := c.ListTools(ctx, cursor)
		if err != nil {
			return nil, nil, err
		}
		return r.Tools, r.NextCursor, nil
	})
}

// ListPrompts returns one page of prompts/list.
func (c *Client) ListPrompts(ctx context.Context, cursor *string) (*ListPromptsResult, error) {
	raw, err := c.listPage(ctx, groupPrompts, methodPromptsList, cursor)
	if err != nil {
		return nil, err
	}
	return decodeComplete[ListPromptsResult](methodPromptsList, raw)
}

// Prompts iterates over every prompt, page by page.
func (c *Client) Prompts(ctx context.Context) iter.Seq2[*Prompt, error] {
	return paginate(ctx, methodPromptsList, func(ctx context.Context, cursor *string) ([]*Prompt, *string, error) {
		r, err := c.ListPrompts(ctx, cursor)
		if err != nil {
			return nil, nil, err
		}
		return r.Prompts, r.NextCursor, nil
	})
}

// ListResources returns one page of resources/list.
func (c *Client) ListResources(ctx context.Context, cursor *string) (*ListResourcesResult, error) {
	raw, err := c.listPage(ctx, groupResources, MethodResourcesList, cursor)
	if err != nil {
		return nil, err
	}
	return decodeComplete[ListResourcesResult](MethodResourcesList, raw)
}

// Resources iterates over every resource, page by page.
func (c *Client) Resources(ctx context.Context) iter.Seq2[*Resource, error] {
	return paginate(ctx, MethodResourcesList, func(ctx context.Context, cursor *string) ([]*Resource, *string, error) {
		r, err := c.ListResources(ctx, cursor)
		if err != nil {
			return nil, nil, err
		}
		return r.Resources, r.NextCursor, nil
	})
}

// ListResourceTemplates returns one page of resources/templates/list.
func (c *Client) ListResourceTemplates(ctx context.Context, cursor *string) (*ListResourceTemplatesResult, error) {
	raw, err := c.listPage(ctx, groupResources, methodResourceTemplatesList, cursor)
	if err != nil {
		return nil, err
	}
	return decodeComplete[ListResourceTemplatesResult](methodResourceTemplatesList, raw)
}

// ResourceTemplates iterates over every resource template, page by page.
func (c *Client) ResourceTemplates(ctx context.Context) iter.Seq2[*ResourceTemplate, error] {
	return paginate(ctx, methodResourceTemplatesList, func(ctx context.Context, cursor *string) ([]*ResourceTemplate, *string, error) {
		r, err := c.ListResourceTemplates(ctx, cursor)
		if err != nil {
			return nil, nil, err
		}
		return r.ResourceTemplates, r.NextCursor, nil
	})
}

// paginate turns a page function into an iterator. A server that hands
// back the cursor it was given is an error, not an endless loop.
func paginate[T any](ctx context.Context, method string, page func(context.Context, *string) ([]T, *string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		var cursor *string
		for {
			items, next, err := page(ctx, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == nil {
				return
			}
			if cursor != nil && *next == *cursor {
				yield(zero, invalidResponse(method, "nextCursor repeats the cursor of the request"))
				return
			}
			cursor = next
		}
	}
}

// CallTool calls a tool with args (nil, a json.RawMessage object, or any
// value that marshals to a JSON object) and returns its complete result.
// Input requests are answered automatically with the client's handlers
// (up to MaxRounds retries) unless opts.Manual is set, in which case an
// input_required answer is returned as a *PendingCallError. A tool-level
// failure is a result with IsError set, not an error. Unless
// ClientOptions.SkipOutputValidation, the structuredContent of a result
// that is not IsError is checked against the outputSchema of the tool
// as the client last saw it in tools/list; a mismatch is an
// *OutputValidationError (which holds the result). A tool the client has
// not seen listed, or listed without an outputSchema, is not checked:
// no tools/list is sent for the check.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts *CallOptions) (*CallToolResult, error) {
	a, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	raw, err := c.start(ctx, &carrierCall{method: MethodToolsCall, target: name, args: a}, opts)
	if err != nil {
		return nil, err
	}
	return c.toolResult(name, raw)
}

// toolResult decodes a complete tools/call result and checks its
// structured content.
func (c *Client) toolResult(name string, raw []byte) (*CallToolResult, error) {
	res, err := decodeCallToolResult(raw)
	if err != nil {
		return nil, err
	}
	if err := c.checkOutput(name, res); err != nil {
		return nil, err
	}
	return res, nil
}

// GetPrompt gets a prompt with its arguments, answering input requests
// like CallTool.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string, opts *CallOptions) (*GetPromptResult, error) {
	var a []byte
	if args != nil {
		var err error
		if a, err = marshalAppend(nil, args); err != nil {
			return nil, fmt.Errorf("mcp: prompt arguments: %w", err)
		}
	}
	raw, err := c.start(ctx, &carrierCall{method: MethodPromptsGet, target: name, args: a}, opts)
	if err != nil {
		return nil, err
	}
	return decodeInto[GetPromptResult](MethodPromptsGet, raw)
}

// ReadResource reads a resource, answering input requests like CallTool.
// A fresh cached result is returned without a request (see
// ClientOptions.Cache), unless opts seeds the call with input responses
// or a request state; only a result the server gave on the first leg,
// without asking for input, is cached (results of retries never are).
func (c *Client) ReadResource(ctx context.Context, uri string, opts *CallOptions) (*ReadResourceResult, error) {
	cc := &carrierCall{method: MethodResourcesRead, target: uri}
	var raw []byte
	var err error
	if opts != nil && (len(opts.InputResponses) > 0 || opts.RequestState != "") {
		raw, err = c.start(ctx, cc, opts)
	} else {
		raw, err = c.cached(ctx, groupReads, MethodResourcesRead, jsonrpc.AppendString(nil, uri), func(ctx context.Context) ([]byte, bool, error) {
			raw, err := c.start(ctx, cc, opts)
			return raw, cc.firstLeg, err
		})
	}
	if err != nil {
		return nil, err
	}
	return decodeInto[ReadResourceResult](MethodResourcesRead, raw)
}

// Resume continues a PendingCall with the answers to its input requests
// (one under each key of p.InputRequests) and its request state, and
// returns the complete result: a *CallToolResult, *GetPromptResult or
// *ReadResourceResult by p.Method. Later rounds follow opts like any
// call (automatic, or Manual again). p may come from another process.
func (c *Client) Resume(ctx context.Context, p *PendingCall, responses InputResponses, opts *CallOptions) (Result, error) {
	if p == nil {
		return nil, errors.New("mcp: Resume: nil PendingCall")
	}
	for _, k := range slices.Sorted(maps.Keys(p.InputRequests)) {
		if _, ok := responses[k]; !ok {
			return nil, fmt.Errorf("mcp: Resume: no answer to the server's %s (key %q)", labelOf(p.InputRequests[k], k), k)
		}
	}
	cc := &carrierCall{method: p.Method, target: p.Name, resumed: p.Meta}
	switch p.Method {
	case MethodToolsCall, MethodPromptsGet:
		a, err := encodeArgs(p.Arguments)
		if err != nil {
			return nil, err
		}
		cc.args = a
	case MethodResourcesRead:
		cc.target = p.URI
	default:
		return nil, fmt.Errorf("mcp: Resume: %q cannot need input", p.Method)
	}
	rs, err := encodeResponses(responses)
	if err != nil {
		return nil, err
	}
	raw, err := c.run(ctx, cc, opts, rs, p.stateToken())
	if err != nil {
		return nil, err
	}
	switch p.Method {
	case MethodToolsCall:
		return c.toolResult(p.Name, raw)
	case MethodPromptsGet:
		return decodeInto[GetPromptResult](p.Method, raw)
	}
	return decodeInto[ReadResourceResult](p.Method, raw)
}

// start runs a carrier call seeded from opts.
func (c *Client) start(ctx context.Context, cc *carrierCall, opts *CallOptions) ([]byte, error) {
	var responses, state []byte
	if opts != nil {
		var err error
		if responses, err = encodeResponses(opts.InputResponses); err != nil {
			return nil, err
		}
		if opts.RequestState != "" {
			state = jsonrpc.AppendString(nil, opts.RequestState)
		}
	}
	return c.run(ctx, cc, opts, responses, state)
}

// decodeInto decodes a result already known to be complete.
func decodeInto[T any](method string, raw []byte) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, &InvalidResponseError{Method: method, Err: err}
	}
	return v, nil
}

// Complete calls completion/complete with req's Ref, Argument and
// Context (req.Meta is ignored: the client writes _meta).
func (c *Client) Complete(ctx context.Context, req *CompleteRequest) (*CompleteResult, error) {
	w := struct {
		Ref      CompleteReference `json:"ref"`
		Argument CompleteArgument  `json:"argument"`
		Context  *CompleteContext  `json:"context,omitempty"`
	}{req.Ref, req.Argument, req.Context}
	b, err := marshalAppend(nil, &w)
	if err != nil {
		return nil, err
	}
	raw, err := c.do(ctx, &wireRequest{method: methodComplete, params: append([]byte{','}, b[1:len(b)-1]...)})
	if err != nil {
		return nil, err
	}
	return decodeComplete[CompleteResult](methodComplete, raw)
}

// ListenNotification is one notification of a subscriptions/listen
// stream: the acknowledgement, a list-changed notification or
// resources/updated.
type ListenNotification struct {
	Method string
	// URI is the resource of notifications/resources/updated.
	URI string
	// Params are the notification's raw params.
	Params json.RawMessage
}

// newListenNotification copies a notification's params (which belong to
// the transport's buffer) and reads the URI of resources/updated.
func newListenNotification(method string, params []byte) *ListenNotification {
	n := &ListenNotification{Method: method, Params: bytes.Clone(params)}
	if method == NotificationResourceUpdated {
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(params, &p)
		n.URI = p.URI
	}
	return n
}

// listenQueue bounds the notifications waiting for a slow Listen
// callback; beyond it they are dropped (list-changed and updated
// notifications only say "look again", so a burst loses nothing).
const listenQueue = 64

// Listen opens a subscriptions/listen stream for the notifications
// filter asks for and calls fn for each, on the goroutine that called
// Listen (fn may call the client). It returns ctx.Err() when ctx ends
// (which closes the stream), nil when the server ends the subscription
// gracefully, or the error that broke the stream.
func (c *Client) Listen(ctx context.Context, filter SubscriptionFilter, fn func(*ListenNotification)) error {
	f, err := marshalAppend([]byte(`,"notifications":`), &filter)
	if err != nil {
		return err
	}
	q := make(chan *ListenNotification, listenQueue)
	l := &wireRequest{method: methodSubscriptionsListen, params: f, onNotify: func(method string, params []byte) {
		n := newListenNotification(method, params)
		select {
		case q <- n:
		default:
			c.log.Warn("mcp: client: Listen callback is behind; notification dropped", "method", method)
		}
	}}
	done := make(chan error, 1)
	go func() {
		raw, err := c.do(ctx, l)
		if err == nil {
			_, err = decodeComplete[struct{}](methodSubscriptionsListen, raw)
		}
		done <- err
	}()
	for {
		select {
		case n := <-q:
			fn(n)
		case err := <-done:
			for {
				select {
				case n := <-q:
					fn(n)
					continue
				default:
				}
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, errServerCancelled) {
				return nil
			}
			return err
		}
	}
}

// encodeArgs turns tool arguments into a compact JSON object (nil for
// none).
func encodeArgs(args any) ([]byte, error) {
	var b []byte
	switch a := args.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if a == nil {
			return nil, nil
		}
		b = a
	case []byte:
		b = a
	default:
		// encoding/json's output is valid and compact already.
		var err error
		if b, err = marshalAppend(nil, args); err != nil {
			return nil, fmt.Errorf("mcp: arguments: %w", err)
		}
	}
	if _, ours := args.(json.RawMessage); ours || isBytes(args) {
		var err error
		if b, err = compactJSON(b); err != nil {
			return nil, fmt.Errorf("mcp: arguments: %w", err)
		}
	}
	switch jsonrpc.KindOf(b) {
	case jsonrpc.KindObject:
		return b, nil
	case jsonrpc.KindNull:
		return nil, nil
	}
	return nil, errors.New("mcp: arguments must be a JSON object")
}

// compactJSON checks raw and removes insignificant white space, so that
// it fits on one line of the stdio framing.
func compactJSON(raw []byte) ([]byte, error) {
	if !jsonrpc.Valid(raw) {
		return nil, errors.New("invalid JSON")
	}
	if bytes.ContainsAny(raw, "\r\n") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return raw, nil
}

func isBytes(v any) bool { _, ok := v.([]byte); return ok }

// Subscribe asks the server of a 2025 session (2025-11-25 down to
// 2024-11-05) for notifications/resources/updated of uri
// (resources/subscribe); they arrive on the session's GET stream (or
// the byte stream) and go to ClientOptions.OnSessionNotification. The
// server must advertise resources.subscribe. 2026-07-28 has no
// resources/subscribe: there Subscribe fails with an error wrapping
// errors.ErrUnsupported, without a request, and the same updates come
// from Client.Listen with SubscriptionFilter.ResourceSubscriptions
// (subscriptions/listen), for as long as Listen runs.
func (c *Client) Subscribe(ctx context.Context, uri string) error {
	return c.legacyOnly(ctx, methodSubscribe, jsonrpc.AppendString([]byte(`,"uri":`), uri),
		"subscribe with Client.Listen (subscriptions/listen, SubscriptionFilter.ResourceSubscriptions)")
}

// Unsubscribe ends a subscription of Subscribe (resources/unsubscribe)
// on a 2025 session. On 2026-07-28 it fails like Subscribe: a Listen
// subscription ends with Listen's context.
func (c *Client) Unsubscribe(ctx context.Context, uri string) error {
	return c.legacyOnly(ctx, methodUnsubscribe, jsonrpc.AppendString([]byte(`,"uri":`), uri),
		"end the Client.Listen call (subscriptions/listen) instead")
}

// Ping sends ping on a 2025 session and waits for the server's empty
// answer: a check that the session is alive (a 404 opens a new session
// first, as for every request of a session). 2026-07-28 removed ping
// (its requests stand alone, there is no session to keep alive): there
// Ping fails with an error wrapping errors.ErrUnsupported, without a
// request; Discover with WithoutCache asks a modern server for a fresh
// answer.
func (c *Client) Ping(ctx context.Context) error {
	return c.legacyOnly(ctx, methodPing, nil, "use Client.Discover to reach a modern server")
}

// legacyOnly sends a request of a method only 2025 sessions have, after
// settling the era, and checks that its result is an object.
func (c *Client) legacyOnly(ctx context.Context, method string, params []byte, instead string) error {
	if err := c.Connect(ctx); err != nil {
		return err
	}
	if era := c.era.Load(); era == nil || !era.servesRequests() {
		return fmt.Errorf("%w: %s does not exist in protocol revision %s (%s)", errors.ErrUnsupported, method, c.ProtocolVersion(), instead)
	}
	raw, err := c.do(ctx, &wireRequest{method: method, params: params})
	if err != nil {
		return err
	}
	_, err = decodeComplete[struct{}](method, raw)
	return err
}
