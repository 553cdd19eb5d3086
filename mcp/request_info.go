package mcp

import "net/http"

// TransportKind names the transport a request arrived on
// (RequestInfo.Transport).
type TransportKind string

// Transports a request can arrive on.
const (
	TransportHTTP    TransportKind = "http"     // Streamable HTTP (NewHTTPHandler)
	TransportHTTPSSE TransportKind = "http+sse" // the HTTP+SSE transport of 2024-11-05 (NewSSEHandler)
	TransportStream  TransportKind = "stream"   // stdio, or any byte stream (ServeStream, NewInMemoryTransports)
)

// RequestInfo describes the request a handler or middleware serves.
type RequestInfo struct {
	// ID is the JSON-RPC id as it came on the wire (its JSON text).
	ID string
	// Method is the request's method.
	Method string
	// ProtocolVersion is the revision the request is served in.
	ProtocolVersion string
	// SessionID is the session the request belongs to: Mcp-Session-Id
	// (or the HTTP+SSE session id) of a session of an earlier revision;
	// empty for a 2026-07-28 request and on a byte stream.
	SessionID string
	// Transport is TransportHTTP, TransportHTTPSSE or TransportStream;
	// empty for a context of Detach (a task's after tasks.Start).
	Transport TransportKind
	// Round is the leg of a multi round-trip call this request is (1 for
	// the first, 2 for the first retry, ...), known from the sealed
	// requestState; 0 for methods that cannot need input, and for a
	// server without the request-state boundary.
	Round int
	// HTTP is the HTTP request that carried the MCP request (its headers,
	// remote address, TLS state, URL), nil on a byte stream. On a session
	// of an earlier revision it is the POST of this request, whose body
	// was already read; its context has ended by the time a long handler
	// runs, so use the handler's ctx, not HTTP.Context().
	HTTP *http.Request
}

// RequestInfoFrom returns what is known of the request ctx belongs to,
// and false outside a request. It costs no allocation.
func RequestInfoFrom(ctx interface{ Value(any) any }) (RequestInfo, bool) {
	sc, _ := ctx.Value(scopeKey{}).(*requestScope)
	if sc == nil {
		return RequestInfo{}, false
	}
	info := RequestInfo{ID: string(sc.id.Raw()), Method: sc.method, Round: sc.round}
	if sc.meta != nil {
		info.ProtocolVersion = sc.meta.ProtocolVersion
	}
	if sc.era != nil {
		info.SessionID = sc.era.sessionID()
	}
	if x, ok := sc.out.(interface {
		exchange() (TransportKind, *http.Request)
	}); ok {
		info.Transport, info.HTTP = x.exchange()
	}
	return info, true
}

// RequestHeader returns the HTTP headers of the request ctx belongs to
// (nil on a byte stream or outside a request): a tenant header, a
// forwarded address, a custom token.
func RequestHeader(ctx interface{ Value(any) any }) http.Header {
	if info, ok := RequestInfoFrom(ctx); ok && info.HTTP != nil {
		return info.HTTP.Header
	}
	return nil
}
