package otel

import (
	"maps"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// Trace context travels in params._meta, as the MCP conventions say:
// the propagators' own names (traceparent, tracestate, baggage for the
// W3C ones), unprefixed, with string values.

// rawMetaCarrier reads trace context from a request's raw _meta object
// (mcp.RequestMeta.Raw), top-level string members only, without
// decoding the rest of it.
type rawMetaCarrier []byte

// Get returns the string member key of the object, "" when it is
// absent or not a string.
func (c rawMetaCarrier) Get(key string) string {
	if len(c) == 0 {
		return ""
	}
	var out string
	_ = jsonrpc.Fields(c, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) != key {
			return nil
		}
		if s, ok := jsonrpc.String(v); ok {
			out = s
		}
		return errStop
	})
	return out
}

// Set does nothing: an incoming request is read-only.
func (rawMetaCarrier) Set(string, string) {}

// Keys returns the names of the top-level members.
func (c rawMetaCarrier) Keys() []string {
	var keys []string
	_ = jsonrpc.Fields(c, func(k, _ []byte) error {
		keys = append(keys, string(jsonrpc.Key(k)))
		return nil
	})
	return keys
}

type stop struct{}

func (stop) Error() string { return "stop" }

var errStop error = stop{}

// metaCarrier reads and writes trace context in an mcp.Meta: what a
// request will carry (ClientRequest.Meta, ServerRequest.Meta) or what
// a PendingCall keeps (CallInfo.Carry, CallInfo.Resumed).
type metaCarrier struct{ m *mcp.Meta }

// Get returns the member key when it is a string.
func (c metaCarrier) Get(key string) string {
	s, _ := (*c.m)[key].(string)
	return s
}

// Set writes the member key, making the map when it is nil.
func (c metaCarrier) Set(key, value string) {
	if *c.m == nil {
		*c.m = mcp.Meta{}
	}
	(*c.m)[key] = value
}

// Keys returns the names of the members, sorted.
func (c metaCarrier) Keys() []string {
	return slices.Sorted(maps.Keys(*c.m))
}

// resultMembers reads what the telemetry needs from a raw result object
// (a client's view of an answer): its resultType and isError members,
// without decoding the rest.
func resultMembers(res []byte) (inputRequired, isError, task bool) {
	_ = jsonrpc.Fields(res, func(k, v []byte) error {
		switch string(jsonrpc.Key(k)) {
		case "resultType":
			rt, _ := jsonrpc.String(v)
			inputRequired = rt == string(mcp.ResultInputRequired)
			task = rt == string(tasks.ResultType)
		case "isError":
			isError = string(jsonrpc.TrimSpace(v)) == "true"
		}
		return nil
	})
	return
}
