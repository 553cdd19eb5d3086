package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// LogClientRequests returns client middleware that logs each request a
// Client sends, once it is answered: the method, its target (tool or
// prompt name, resource URI; a custom method's as "target", e.g. a task
// id), the leg's round within its call,
// the protocol version, the transport, the duration and the outcome —
// "ok", "input_required" (with the number of input requests),
// "tool_error" (a CallToolResult with isError), an extension's result
// type ("task": the server made the call a task), "cancelled" (the caller gave up) or "error" with the
// JSON-RPC code of the server's error, or the error itself when the
// request got no answer. Answered requests log at Info, errors at Warn.
// Put it in ClientOptions.Middleware (the mirror of the server's
// LogRequests). Params, arguments, answers, request state and _meta are
// never logged. A nil logger means slog.Default().
func LogClientRequests(logger *slog.Logger) ClientMiddleware {
	return func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
			log := logger
			if log == nil {
				log = slog.Default()
			}
			start := time.Now()
			res, err := next(ctx, req)
			attrs := make([]slog.Attr, 0, 10)
			attrs = append(attrs, slog.String("method", req.Method))
			switch req.Method {
			case MethodToolsCall:
				attrs = append(attrs, slog.String("tool", req.Target))
			case MethodPromptsGet:
				attrs = append(attrs, slog.String("prompt", req.Target))
			case MethodResourcesRead:
				attrs = append(attrs, slog.String("uri", req.Target))
			default: // a custom method's target (the tasks extension's task id)
				if req.Target != "" {
					attrs = append(attrs, slog.String("target", req.Target))
				}
			}
			if req.Call != nil {
				attrs = append(attrs, slog.Int("round", req.Call.Round))
			}
			attrs = append(attrs, slog.String("protocol", req.ProtocolVersion), slog.String("transport", req.Transport),
				slog.Duration("duration", time.Since(start)))
			level := slog.LevelInfo
			var rpc *Error
			switch {
			case err == nil:
				attrs = append(attrs, resultOutcome(res)...)
			case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
				attrs = append(attrs, slog.String("outcome", "cancelled"))
			case errors.As(err, &rpc):
				level = slog.LevelWarn
				attrs = append(attrs, slog.String("outcome", "error"), slog.Int("code", rpc.Code))
			default:
				level = slog.LevelWarn
				attrs = append(attrs, slog.String("outcome", "error"), slog.String("err", err.Error()))
			}
			log.LogAttrs(ctx, level, "mcp client request", attrs...)
			return res, err
		}
	}
}

// resultOutcome reads the outcome of a result from its top-level
// members, without decoding the rest.
func resultOutcome(res []byte) []slog.Attr {
	var rt string
	var isError bool
	var inputs int
	_ = jsonrpc.Fields(res, func(k, v []byte) error {
		switch string(jsonrpc.Key(k)) {
		case "resultType":
			rt, _ = jsonrpc.String(v)
		case "isError":
			isError = string(jsonrpc.TrimSpace(v)) == "true"
		case "inputRequests":
			if jsonrpc.KindOf(v) == jsonrpc.KindObject {
				_ = jsonrpc.Fields(v, func(_, _ []byte) error { inputs++; return nil })
			}
		}
		return nil
	})
	switch {
	case rt == string(ResultInputRequired):
		return []slog.Attr{slog.String("outcome", "input_required"), slog.Int("inputRequests", inputs)}
	case rt != "" && rt != string(ResultComplete): // an extension's, e.g. "task"
		return []slog.Attr{slog.String("outcome", rt)}
	case isError:
		return []slog.Attr{slog.String("outcome", "tool_error")}
	}
	return []slog.Attr{slog.String("outcome", "ok")}
}
