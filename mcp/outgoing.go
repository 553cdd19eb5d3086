package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Middleware over the requests a server sends to a client: the live
// elicitation/create, sampling/createMessage and roots/list of a session
// of an earlier revision (the 2026-07-28 era sends none: it answers with
// an InputRequiredResult instead). Tracing uses it to give each live
// request a span and to put its context into the request's _meta.

// ServerRequest is one request the server sends to a client, as
// ServerRequestMiddleware sees it.
type ServerRequest struct {
	// Method is elicitation/create, sampling/createMessage or roots/list.
	Method string
	// Params is the params object as it will be sent, without the extra
	// members of Meta (read-only).
	Params json.RawMessage
	// Meta are extra params._meta members to send; middleware may add to
	// it. Names starting with io.modelcontextprotocol/ and progressToken
	// are reserved.
	Meta Meta
	// ProtocolVersion is the session's revision, SessionID its id ("" on
	// a byte stream).
	ProtocolVersion string
	SessionID       string
}

// ServerRequestHandler sends an ServerRequest and returns the client's
// result (a JSON object), or its error (a *ClientRequestError).
type ServerRequestHandler func(ctx context.Context, req *ServerRequest) (json.RawMessage, error)

// ServerRequestMiddleware wraps an ServerRequestHandler (ServerOptions.
// ServerRequestMiddleware, the first element outermost).
type ServerRequestMiddleware func(next ServerRequestHandler) ServerRequestHandler

// reservedMetaKey reports whether an extra _meta member may not be set
// by user code: the SDK owns the io.modelcontextprotocol/ names and the
// progress token.
func reservedMetaKey(k string) bool {
	return strings.HasPrefix(k, "io.modelcontextprotocol/") || k == metaProgressToken
}

// paramsWithMeta returns params (a JSON object) with the members of
// extra added to its _meta.
func paramsWithMeta(params json.RawMessage, extra Meta) (json.RawMessage, error) {
	if len(extra) == 0 {
		return params, nil
	}
	for k := range extra {
		if reservedMetaKey(k) {
			return nil, fmt.Errorf("mcp: the _meta member %q is reserved", k)
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	for k, v := range extra {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("mcp: the _meta member %q: %w", k, err)
		}
		meta[k] = b
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = b
	return json.Marshal(obj)
}
