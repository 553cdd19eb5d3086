package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The transport-independent request path. A transport decodes one
// message's envelope (internal/jsonrpc), chooses its era (classify), has
// the era decode the params (serverEra.decode), checks its bindings
// (headers on HTTP, the version), runs execute, and writes what the era
// encodes (serverEra.appendResult) or appendFailure.

// call is one decoded, validated request.
type call struct {
	msg    jsonrpc.Message
	spec   *methodSpec
	params Params
	// era is the protocol era the request is served in (era.go).
	era serverEra
	// toolVisible: a tools/call whose tool ServerOptions.Visible let
	// through, so that its Mcp-Param-* headers are checked (visible.go).
	toolVisible bool
}

// failure is an error response with the HTTP status it maps to.
type failure struct {
	err    *Error
	status int
}

func fail(code int, status int, msg string) *failure {
	return &failure{jsonrpc.NewError(code, msg), status}
}

// encodeResult appends the response to a successful call, in its era;
// on an encoding error it appends the internal-error response instead.
func (s *Server) encodeResult(dst []byte, c *call, res Result, f *failure) ([]byte, int) {
	if f == nil {
		b, err := c.era.appendResult(s, dst, c.msg.ID, res)
		if err == nil {
			return b, http.StatusOK
		}
		s.log.Error("mcp: encoding result", "method", c.msg.Method, "err", err)
		f = &failure{errInternal, http.StatusOK}
		dst = b[:len(dst)]
	}
	return appendFailure(dst, c.msg.ID, f), f.status
}

// execute runs the middleware chain and the handler, then checks the
// result against the method's rules. The returned failure is nil on
// success.
func (s *Server) execute(ctx context.Context, c *call, out outbound) (Result, *failure) {
	if !s.drain.enter() {
		return nil, s.errorFailure(ctx, c, TemporarilyUnavailable(drainRetryAfter))
	}
	defer s.drain.leave()
	// The scope is itself the handler's context (one allocation instead
	// of a scope plus a context.WithValue).
	sc := &requestScope{Context: ctx, s: s, id: c.msg.ID, method: c.msg.Method, meta: c.params.RequestMeta(), out: out, era: c.era}
	ctx = sc
	res, err := s.safeCall(ctx, c)
	sc.endLogs() // what a LogHandler queued goes out before the response (loghandler.go)
	return s.settle(ctx, c, res, err)
}

// settle turns what the handler returned into the call's result or
// failure. (Apart from execute, whose frame a held stream keeps for its
// whole life, so that the frame is small.)
func (s *Server) settle(ctx context.Context, c *call, res Result, err error) (Result, *failure) {
	if err != nil {
		return nil, s.errorFailure(ctx, c, err)
	}
	if irr, ok := res.(*InputRequiredResult); ok {
		if f := c.era.inputRequired(s, c); f != nil {
			return nil, f
		}
		if err := irr.validate(); err != nil {
			s.log.Error("mcp: invalid InputRequiredResult (server bug)", "method", c.msg.Method, "err", err)
			return nil, &failure{jsonrpc.NewError(CodeInternalError, "Internal error: "+err.Error()), http.StatusOK}
		}
	}
	if res == nil {
		return nil, &failure{errInternal, http.StatusOK}
	}
	return res, nil
}

// safeCall runs the chain, turning a panic in user code into an error.
func (s *Server) safeCall(ctx context.Context, c *call) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("mcp: handler panicked", "method", c.msg.Method, "panic", p)
			res, err = nil, errInternal
		}
	}()
	return s.handler(ctx, c.msg.Method, c.params)
}

func (s *Server) errorFailure(ctx context.Context, c *call, err error) *failure {
	var ue *unavailableError
	if errors.As(err, &ue) {
		return &failure{ue.wire(), http.StatusServiceUnavailable}
	}
	var e *Error
	if errors.As(err, &e) {
		status := http.StatusOK
		switch e.Code {
		case CodeMissingRequiredCapability, CodeHeaderMismatch, CodeUnsupportedProtocolVersion:
			status = http.StatusBadRequest
		case CodeMethodNotFound:
			status = http.StatusNotFound
		}
		return &failure{e, status}
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return &failure{jsonrpc.NewError(CodeInternalError, "Request cancelled"), http.StatusOK}
	}
	s.log.Error("mcp: handler failed", "method", c.msg.Method, "err", err)
	return &failure{errInternal, http.StatusOK}
}

// appendResult appends the response for a successful call.
func (s *Server) appendResult(dst []byte, id jsonrpc.ID, res Result) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"result":`...)
	dst, err := s.appendResultBody(dst, res)
	if err != nil {
		return dst[:start], err
	}
	return append(dst, '}'), nil
}

// replayedResult is the encoded result of an earlier, identical leg
// (the single-use guard's record, state.go): written as it is.
type replayedResult []byte

// appendResultBody appends the result object of a successful call.
// Complete results get resultType "complete" and, unless they set their
// own _meta, the server's identity in _meta. On error dst may hold a
// partial body: the caller truncates it.
func (s *Server) appendResultBody(dst []byte, res Result) ([]byte, error) {
	switch r := res.(type) {
	case replayedResult:
		return append(dst, r...), nil
	case *InputRequiredResult:
		b, err := r.MarshalJSON()
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	case *CallToolResult:
		return s.appendCallToolResult(dst, r)
	case *ExtensionResult: // a custom method's (extension.go)
		return s.appendExtensionResult(dst, r)
	}
	body := len(dst)
	dst, err := marshalAppend(dst, res)
	if err != nil {
		return dst, err
	}
	if len(dst)-body < 2 || dst[body] != '{' {
		return dst, errors.New("result is not a JSON object")
	}
	// Splice `"resultType":"complete",` (and _meta) after the brace.
	ins := `"resultType":"complete"`
	extra := len(ins) + 1
	withMeta := !res.ownMeta()
	if withMeta {
		extra += len(s.serverInfoMeta) + 1
	}
	empty := len(dst)-body == 2
	if empty {
		extra--
	}
	dst = slices.Grow(dst, extra)
	dst = dst[:len(dst)+extra]
	copy(dst[body+1+extra:], dst[body+1:len(dst)-extra])
	w := dst[body+1:]
	n := copy(w, ins)
	if withMeta {
		w[n] = ','
		n++
		n += copy(w[n:], s.serverInfoMeta)
	}
	if !empty {
		w[n] = ','
	}
	return dst, nil
}

// appendFailure appends an error response.
func appendFailure(dst []byte, id jsonrpc.ID, f *failure) []byte {
	return jsonrpc.AppendError(dst, id, f.err)
}

// encodeNotification encodes a notification message.
func encodeNotification(dst []byte, method string, params any) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = jsonrpc.AppendString(dst, method)
	dst = append(dst, `,"params":`...)
	dst, err := marshalAppend(dst, params)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// appendCallToolResult writes the most common result by hand: content
// blocks are appended as their own encoders produce them, without the
// extra validation and compaction pass encoding/json makes over every
// Marshaler's output (a whole pass over a large text result).
func (s *Server) appendCallToolResult(dst []byte, r *CallToolResult) ([]byte, error) {
	dst = append(dst, `{"resultType":"complete",`...)
	var err error
	if r.Meta == nil {
		dst = append(dst, s.serverInfoMeta...)
	} else {
		dst = append(dst, `"_meta":`...)
		if dst, err = marshalAppend(dst, r.Meta); err != nil {
			return nil, err
		}
	}
	dst = append(dst, ',')
	dst, err = appendCallToolFields(dst, r)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// appendCallToolFields writes r's content, structuredContent and isError
// members, in the order encoding/json gives them, without the braces.
func appendCallToolFields(dst []byte, r *CallToolResult) ([]byte, error) {
	var err error
	dst = append(dst, `"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendContent(dst, c); err != nil {
			return nil, err
		}
	}
	dst = append(dst, ']')
	if r.StructuredContent != nil {
		dst = append(dst, `,"structuredContent":`...)
		if dst, err = marshalAppend(dst, r.StructuredContent); err != nil {
			return nil, err
		}
	}
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return dst, nil
}

// appendContent writes one content block. Plain text is written
// directly; other blocks use their MarshalJSON, whose output comes from
// encoding/json and is already compact.
func appendContent(dst []byte, c Content) ([]byte, error) {
	switch v := c.(type) {
	case nil:
		return nil, errors.New("nil content block")
	case *TextContent:
		if v == nil {
			return nil, errors.New("nil content block")
		}
		if v.Annotations == nil && v.Meta == nil {
			dst = append(dst, `{"type":"text","text":`...)
			dst = jsonrpc.AppendString(dst, v.Text)
			return append(dst, '}'), nil
		}
	}
	m, ok := c.(json.Marshaler)
	if !ok {
		return marshalAppend(dst, c)
	}
	b, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}
