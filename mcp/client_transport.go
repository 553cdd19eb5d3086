package mcp

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// ClientTransport carries a Client's requests to one server. The
// implementations are NewHTTPClientTransport (Streamable HTTP),
// NewStreamClientTransport (newline-delimited JSON-RPC on any byte
// stream, such as the client end of NewInMemoryTransports) and
// NewCommandTransport (the stdio of a child process). A transport serves
// one Client. It carries both protocol eras: the modern one, and the
// 2025-11-25 one with its session, its notifications from the client and
// the requests its server sends back (answered with the Client's
// handlers). The interface is sealed.
type ClientTransport interface {
	// Close releases the transport. Calls in flight fail.
	Close() error

	// roundTrip sends one request and waits for its response, passing
	// the notifications that belong to it to r.notify. It returns the
	// raw result object, or the server's *Error, or a transport error.
	roundTrip(ctx context.Context, r *wireRequest) ([]byte, error)
	// notify sends a notification of a legacy session (r.body is the
	// whole message; r.era says where it goes).
	notify(ctx context.Context, r *wireRequest) error
	// endSession ends a legacy session (HTTP: DELETE); best effort.
	endSession(ctx context.Context, version, session string)
	// mirrorsHeaders reports whether the transport has a header layer
	// (HTTP), which makes the client honour x-mcp-header.
	mirrorsHeaders() bool
	// inMemory reports whether the transport is the in-memory pair,
	// where ModeAuto speaks the modern era without probing.
	inMemory() bool
	// releasesBody reports whether r.body is no longer referenced once
	// roundTrip returns.
	releasesBody() bool
	// bind sets where what the server sends outside a response goes.
	bind(h *clientHooks)
	// kind names the transport for middleware (ClientRequest.Transport):
	// "http", "http+sse", "stdio" or "memory".
	kind() string
}

// clientHooks are the Client's side of a transport.
type clientHooks struct {
	// unrouted receives notifications that belong to no request in
	// flight (and, on a legacy session, every notifications/cancelled).
	unrouted func(method string, params []byte)
	// serve answers a request the server sent: the whole response
	// message to send back, or nil to send nothing (a modern server
	// sends no requests; they are ignored).
	serve func(ctx context.Context, id jsonrpc.ID, method string, params []byte) []byte
	// legacy reports whether the session is a legacy one.
	legacy func() bool
	// log receives the transport's warnings.
	log *slog.Logger
}

// wireRequest is one request: what the client sends (method, params
// after _meta, headers to mirror) and, once sent, what the transport
// needs (id, version, body, where notifications go). One is reused for
// every round of a call, each send setting a new id.
type wireRequest struct {
	method    string
	target    string // params.name or params.uri (Mcp-Name), when hasTarget
	hasTarget bool
	status    int32 // the HTTP status of the last response (HTTP)
	// params are the members after _meta, each preceded by a comma.
	params []byte
	// headers are the Mcp-Param-* headers (HTTP only).
	headers []paramValue
	// onProgress, when set, asks for progress and receives it.
	onProgress func(*ProgressParams)
	// onNotify receives the request's other notifications (listen).
	onNotify func(method string, params []byte)
	// extra is what the request carries beyond the SDK's own: extra
	// _meta members (the body carries extra.enc) and the logical call it
	// belongs to. Nil: those of the context (see Client.do).
	extra *reqExtra

	id     int64
	era    *clientEra // the version (MCP-Protocol-Version, "" for initialize), the legacy session
	body   []byte
	notify func(method string, params []byte) // nil: drop notifications
	// hook, when set, learns more of the HTTP response (the probe of
	// ModeAuto, initialize).
	hook *wireHook
	// timeout, when positive, is the bound a boundingTransport puts on
	// the request itself (its context cannot end; see Client.send).
	timeout time.Duration
}

// boundingTransport is a transport that bounds a request whose context
// cannot end (ctx.Done() is nil) by wireRequest.timeout itself, as a
// context with that timeout would, but without one: the stream
// transport, whose sequential calls keep their allocation-free path.
type boundingTransport interface{ boundsRequests() }

// wireHook is what the HTTP transport tells about a response beyond its
// message.
type wireHook struct {
	// onStatus learns the status as soon as the response headers arrive.
	onStatus func(status int)
	// sessionID is the response's Mcp-Session-Id.
	sessionID string
}

// paramValue is one Mcp-Param-{name} header.
type paramValue struct{ name, value string }

// responseOf returns the result of a response message, or the server's
// error.
func responseOf(method string, msg *jsonrpc.Message) ([]byte, error) {
	if msg.Error != nil {
		e, err := jsonrpc.DecodeError(msg.Error)
		if err != nil {
			return nil, &InvalidResponseError{Method: method, Err: err}
		}
		return nil, e
	}
	if jsonrpc.KindOf(msg.Result) != jsonrpc.KindObject {
		return nil, invalidResponse(method, "result is not a JSON object")
	}
	return msg.Result, nil
}

// idOf returns the integer value of a response id (the client only
// sends integer ids).
func idOf(id jsonrpc.ID) (int64, bool) {
	return id.Int()
}

// leadingIDRE finds the id of a message in the first bytes of a line
// that is too long or not valid JSON, when it is written the usual way
// ({"jsonrpc":"2.0","id":N, ...}): enough to fail the one request it
// answers instead of leaving it waiting.
var leadingIDRE = regexp.MustCompile(`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?[0-9]{1,18})\s*[,}]`)

func leadingID(head []byte) (int64, bool) {
	m := leadingIDRE.FindSubmatch(head)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	return n, err == nil
}

// notificationRoute returns the request a notification belongs to on a
// byte stream: progress by its progressToken (the client uses the
// request id as token), listen notifications by their subscriptionId
// (the listen request's id), a server's notifications/cancelled by its
// requestId.
func notificationRoute(method string, params []byte) (int64, bool) {
	if jsonrpc.KindOf(params) != jsonrpc.KindObject {
		return 0, false
	}
	var raw []byte
	_ = jsonrpc.Fields(params, func(k, v []byte) error {
		switch string(jsonrpc.Key(k)) {
		case metaProgressToken:
			if method == notificationProgress {
				raw = v
			}
		case "requestId":
			if method == notificationCancelled {
				raw = v
			}
		case "_meta":
			if jsonrpc.KindOf(v) == jsonrpc.KindObject {
				_ = jsonrpc.Fields(v, func(k, v []byte) error {
					if string(jsonrpc.Key(k)) == metaSubscriptionID {
						raw = v
					}
					return nil
				})
			}
		}
		return nil
	})
	if jsonrpc.KindOf(raw) != jsonrpc.KindNumber {
		return 0, false
	}
	n, err := jsonrpc.ParseInt(jsonrpc.TrimSpace(raw), 64)
	return n, err == nil
}
