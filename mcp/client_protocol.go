package mcp

import (
	"context"
	"strconv"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// clientProtocol is what differs between the eras a Client speaks, asked
// of the era in use instead of tested: how a request is written and sent,
// whether the server may send requests of its own, what the HTTP
// transport does with headers and cut streams, and how a session ends.
// modernProtocol is 2026-07-28; legacyProtocol an initialize session.
type clientProtocol interface {
	// appendBody appends the JSON-RPC request of l with id.
	appendBody(dst []byte, era *clientEra, id int64, l *wireRequest) []byte
	// do sends l and returns the raw result.
	do(ctx context.Context, c *Client, era *clientEra, l *wireRequest) ([]byte, error)
	// servesRequests reports whether the server may send requests
	// (elicitation/create, ping, ...) and notifications/cancelled of
	// its own requests.
	servesRequests() bool
	// mirrorsHeaders reports whether an HTTP request carries Mcp-Method,
	// Mcp-Name and Mcp-Param-* headers.
	mirrorsHeaders() bool
	// resumes reports whether an SSE response cut short is resumed with
	// GET and Last-Event-ID.
	resumes() bool
	// end ends the era's session, if it has one (Close).
	end(ctx context.Context, t ClientTransport, era *clientEra)
	// notify sends a client notification the era defines; false when it
	// has none of that name.
	notify(ctx context.Context, t ClientTransport, era *clientEra, method string) (bool, error)
}

// modernProtocol is 2026-07-28: every request carries the _meta envelope
// and stands alone.
type modernProtocol struct{}

func (modernProtocol) appendBody(dst []byte, era *clientEra, id int64, l *wireRequest) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":`...)
	dst = jsonrpc.AppendString(dst, l.method)
	dst = append(dst, `,"params":{"_meta":`...)
	dst = append(dst, era.meta...)
	if l.onProgress != nil {
		dst = append(dst, `,"progressToken":`...)
		dst = strconv.AppendInt(dst, id, 10)
	}
	if x := l.extra; x != nil && len(x.enc) > 0 {
		dst = append(dst, ',')
		dst = append(dst, x.enc...)
	}
	dst = append(dst, '}')
	dst = append(dst, l.params...)
	return append(dst, "}}"...)
}

func (modernProtocol) do(ctx context.Context, c *Client, era *clientEra, l *wireRequest) ([]byte, error) {
	return c.doModern(ctx, era, l)
}

func (modernProtocol) servesRequests() bool { return false }
func (modernProtocol) mirrorsHeaders() bool { return true }
func (modernProtocol) resumes() bool        { return false }

func (modernProtocol) end(context.Context, ClientTransport, *clientEra) {}

func (modernProtocol) notify(context.Context, ClientTransport, *clientEra, string) (bool, error) {
	return false, nil
}

// legacyProtocol is a session opened with initialize (2025-11-25,
// 2025-06-18).
type legacyProtocol struct{}

// appendBody writes params without the modern envelope, _meta only for
// a progress token and the extra members (optional in 2025-11-25, and
// allowed).
func (legacyProtocol) appendBody(dst []byte, _ *clientEra, id int64, l *wireRequest) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":`...)
	dst = jsonrpc.AppendString(dst, l.method)
	dst = append(dst, `,"params":{`...)
	var extra []byte
	if l.extra != nil {
		extra = l.extra.enc
	}
	switch {
	case l.onProgress != nil || len(extra) > 0:
		dst = append(dst, `"_meta":{`...)
		if l.onProgress != nil {
			dst = append(dst, `"progressToken":`...)
			dst = strconv.AppendInt(dst, id, 10)
			if len(extra) > 0 {
				dst = append(dst, ',')
			}
		}
		dst = append(dst, extra...)
		dst = append(dst, '}')
		dst = append(dst, l.params...)
	case len(l.params) > 0:
		dst = append(dst, l.params[1:]...)
	}
	return append(dst, "}}"...)
}

func (legacyProtocol) do(ctx context.Context, c *Client, era *clientEra, l *wireRequest) ([]byte, error) {
	return c.doLegacy(ctx, era, l)
}

func (legacyProtocol) servesRequests() bool { return true }
func (legacyProtocol) mirrorsHeaders() bool { return false }
func (legacyProtocol) resumes() bool        { return true }

func (legacyProtocol) end(ctx context.Context, t ClientTransport, era *clientEra) {
	t.endSession(ctx, era.version, era.session)
}

func (legacyProtocol) notify(ctx context.Context, t ClientTransport, era *clientEra, method string) (bool, error) {
	return true, t.notify(ctx, &wireRequest{method: method, era: era,
		body: []byte(`{"jsonrpc":"2.0","method":` + strconv.Quote(method) + `}`)})
}
