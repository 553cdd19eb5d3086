package mcp

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// LogRequests returns middleware that logs each request the server
// handles, once it is answered: the method, its target (tool or prompt
// name, resource URI), the request id, the protocol era, the duration and
// the outcome — "ok", "input_required" (with the number of input
// requests), "tool_error" (a CallToolResult with isError) or "error" with
// the JSON-RPC code, or an extension's result type such as "task" (a
// task was created, mcp/tasks; its end is not logged here). Answered requests log at Info, errors at Warn. Put it
// in ServerOptions.Middleware; argument values and states are never
// logged. A nil logger means slog.Default().
func LogRequests(logger *slog.Logger) ServerMiddleware {
	return func(next ServerHandler) ServerHandler {
		return func(ctx context.Context, method string, params Params) (Result, error) {
			log := logger
			if log == nil {
				log = slog.Default()
			}
			start := time.Now()
			res, err := next(ctx, method, params)
			attrs := make([]slog.Attr, 0, 8)
			attrs = append(attrs, slog.String("method", method))
			switch p := params.(type) {
			case *CallToolRequest:
				attrs = append(attrs, slog.String("tool", p.Name))
			case *GetPromptRequest:
				attrs = append(attrs, slog.String("prompt", p.Name))
			case *ReadResourceRequest:
				attrs = append(attrs, slog.String("uri", p.URI))
			}
			if sc := scopeFrom(ctx); sc != nil {
				attrs = append(attrs, slog.String("id", string(sc.id.Raw())))
				attrs = append(attrs, slog.String("protocol", sc.era.protocolVersion()))
			}
			attrs = append(attrs, slog.Duration("duration", time.Since(start)))
			level := slog.LevelInfo
			if errors.Is(err, ErrInputRequired) {
				// Questions asked with the asking API: the SDK turns them
				// into an InputRequiredResult outside this middleware.
				attrs = append(attrs, slog.String("outcome", "input_required"))
			} else if err != nil {
				level = slog.LevelWarn
				var rpc *Error
				code := CodeInternalError
				if errors.As(err, &rpc) {
					code = rpc.Code
				}
				attrs = append(attrs, slog.String("outcome", "error"), slog.Int("code", code))
			} else if ir, ok := res.(*InputRequiredResult); ok && ir != nil {
				attrs = append(attrs, slog.String("outcome", "input_required"), slog.Int("inputRequests", len(ir.InputRequests)))
			} else if er, ok := res.(*ExtensionResult); ok && er != nil && er.ResultType != "" && er.ResultType != ResultComplete {
				attrs = append(attrs, slog.String("outcome", string(er.ResultType))) // an extension's, e.g. "task"
			} else if tr, ok := res.(*CallToolResult); ok && tr != nil && tr.IsError {
				attrs = append(attrs, slog.String("outcome", "tool_error"))
			} else {
				attrs = append(attrs, slog.String("outcome", "ok"))
			}
			log.LogAttrs(ctx, level, "mcp request", attrs...)
			return res, err
		}
	}
}
