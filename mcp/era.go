package mcp

import (
	"context"
	"net/http"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// A protocol era is the revision a request is served in: 2026-07-28
// (modern: per-request _meta, multi round-trip requests, no session) or
// an earlier one served through initialize and a session (legacy.go). A
// transport chooses the era once per message, from what it carries, before
// its params are decoded (classify, in http.go and stream.go); below that,
// the request path asks the era what to do and never tests which one it
// is in. Adding a revision is adding an implementation of serverEra.
type serverEra interface {
	// decode decodes c.msg's params as the era defines them (the method
	// table, which _meta members are required, what the session
	// supplies) into c.spec and c.params.
	decode(s *Server, c *call) *failure
	// checkHeaders checks the HTTP header bindings of a decoded request.
	checkHeaders(s *Server, c *call, h http.Header) *Error
	// checkVersion accepts the protocol version the request names.
	checkVersion(s *Server, c *call) *failure
	// installAsker sets up the asking API for a handler that may ask
	// (Elicit, Sample, ListRoots). It returns the scope whose finish turns
	// unanswered questions into an InputRequiredResult, or nil when the
	// era answers questions otherwise (live requests).
	installAsker(sc *requestScope, caps *ClientCapabilities, rp *retryParams) *askScope
	// resolveInput is given a handler's own InputRequiredResult (the
	// low-level form) before it leaves: the modern era returns it as it
	// is; a session era may answer its input requests itself and run
	// the handler again (run) with the answers.
	resolveInput(ctx context.Context, sc *requestScope, irr *InputRequiredResult, rp *retryParams, run func() (Result, error)) (Result, error)
	// inputRequired answers a handler's own InputRequiredResult: nil to
	// send it, else the failure to send instead.
	inputRequired(s *Server, c *call) *failure
	// appendNotification appends a notification of the request as the
	// era defines it (a session era leaves out what its revision lacks).
	appendNotification(dst []byte, method string, params any) ([]byte, error)
	// appendResult appends the response to a successful request.
	appendResult(s *Server, dst []byte, id jsonrpc.ID, res Result) ([]byte, error)
	// extra serves the methods that only this era has.
	extra(ctx context.Context, method string, params Params) (Result, error)
	// protocolVersion is the era's revision, for logs.
	protocolVersion() string
	// sessionID is the session the request belongs to, "" when none.
	sessionID() string
	// extensions reports whether capabilities.extensions exist in the
	// era, and with them the extensions' checks (extension.go,
	// ExtensionDeclared).
	extensions() bool
	// replays reports whether a recorded outcome (the modern encoding of
	// a result, state_guard.go) may answer a request of the era: an
	// idempotency key is honoured only then (idempotency.go).
	replays() bool
}

// prepare is the one prelude of every transport between a decoded
// message and execute: the call's params are decoded as its era defines
// them, its HTTP header bindings checked (h; nil where the transport has
// no headers) and its protocol version accepted. It returns the failure
// to answer instead, or nil. Its status is what an HTTP transport
// answers with; http.StatusOK marks an in-band failure (a session era's
// JSON-RPC error, sent as a result would be), for which the Mcp-Method
// header, which an intermediary may have routed on, must still agree
// (else 400).
func (s *Server) prepare(c *call, h http.Header) *failure {
	if f := c.era.decode(s, c); f != nil {
		if h != nil && f.status == http.StatusOK {
			if e := checkMethodHeader(c.msg.Method, h, false); e != nil {
				return &failure{e, http.StatusBadRequest}
			}
		}
		return f
	}
	if h != nil {
		if e := c.era.checkHeaders(s, c, h); e != nil {
			return &failure{e, http.StatusBadRequest}
		}
	}
	return c.era.checkVersion(s, c)
}

// modernEra is 2026-07-28. It holds nothing, so choosing it costs
// nothing.
type modernEra struct{}

var modern serverEra = modernEra{}

// decode decodes the params and requires the _meta envelope.
func (modernEra) decode(s *Server, c *call) *failure {
	s.countDecode(true)
	spec := methods[c.msg.Method]
	if spec == nil {
		spec = s.customSpec(c.msg.Method, true) // AddMethod (extension.go)
	}
	if spec == nil {
		return &failure{methodNotFound(c.msg.Method), http.StatusNotFound}
	}
	c.spec = spec
	var pres metaPresence
	raw := c.msg.Params
	if raw == nil {
		raw = emptyObject
	}
	params, perr := spec.decode(raw, &pres)
	c.params = params
	switch {
	case !pres.meta:
		return fail(CodeInvalidParams, http.StatusBadRequest, "Invalid params: missing _meta (protocol revision "+LatestProtocolVersion+" requires it on every request)")
	case perr != nil && (!pres.version || !pres.caps):
		// A malformed _meta member is reported as such.
		return &failure{perr, http.StatusBadRequest}
	case !pres.version:
		return fail(CodeInvalidParams, http.StatusBadRequest, "Invalid params: missing _meta."+metaProtocolVersion)
	case !pres.caps:
		return fail(CodeInvalidParams, http.StatusBadRequest, "Invalid params: missing _meta."+MetaClientCapabilities)
	case perr != nil:
		return &failure{perr, http.StatusBadRequest}
	}
	return nil
}

var emptyObject = []byte("{}")

// checkHeaders requires every standard header and checks them and the
// custom ones against the body (headers.go).
func (modernEra) checkHeaders(s *Server, c *call, h http.Header) *Error {
	return checkHeaders(s, c, h)
}

// checkVersion accepts the modern revision only: an earlier one is
// served through initialize and a session, never in a _meta envelope.
func (modernEra) checkVersion(s *Server, c *call) *failure {
	v := c.params.RequestMeta().ProtocolVersion
	if v == LatestProtocolVersion {
		return nil
	}
	return s.unsupportedVersion(v)
}

// installAsker installs the multi round-trip asker, unless the server
// cannot seal state (then asking fails with ErrCannotAsk).
func (modernEra) installAsker(sc *requestScope, caps *ClientCapabilities, rp *retryParams) *askScope {
	if !sc.s.canAsk {
		return nil
	}
	sc.modern.init(caps, rp.InputResponses, rp.askState)
	sc.asker = &sc.modern
	return &sc.modern
}

// resolveInput sends the result to the client, which answers and
// retries.
func (modernEra) resolveInput(_ context.Context, _ *requestScope, irr *InputRequiredResult, _ *retryParams, _ func() (Result, error)) (Result, error) {
	return irr, nil
}

// inputRequired sends a handler's InputRequiredResult where the method
// can carry one.
func (modernEra) inputRequired(s *Server, c *call) *failure {
	if !c.spec.carrier {
		s.log.Error("mcp: handler returned an input_required result on a method that cannot carry one", "method", c.msg.Method)
		return &failure{errInternal, http.StatusOK}
	}
	return nil
}

func (modernEra) appendNotification(dst []byte, method string, params any) ([]byte, error) {
	return encodeNotification(dst, method, params)
}

func (modernEra) appendResult(s *Server, dst []byte, id jsonrpc.ID, res Result) ([]byte, error) {
	return s.appendResult(dst, id, res)
}

func (modernEra) extra(ctx context.Context, method string, params Params) (Result, error) {
	return nil, methodNotFound(method)
}

func (modernEra) protocolVersion() string { return LatestProtocolVersion }

func (modernEra) sessionID() string { return "" }

func (modernEra) extensions() bool { return true }

func (modernEra) replays() bool { return true }

// unsupportedVersion is the -32022 error.
func (s *Server) unsupportedVersion(requested string) *failure {
	return &failure{jsonrpc.NewErrorData(CodeUnsupportedProtocolVersion, "Unsupported protocol version",
		struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}{s.SupportedVersions(), requested}), http.StatusBadRequest}
}

// testHooks are what a test of this package installs on one Server
// (Server.hooks) to watch it work; nil outside tests. They are per
// server, not globals, so the tests that use them run in parallel.
type testHooks struct {
	envelopeDecoded func() // each message a server transport decodes
	paramsDecoded   func() // each request's params an era decodes
}

// countDecode calls the installed hook for an envelope (params false)
// or a request's params decode.
func (s *Server) countDecode(params bool) {
	h := s.hooks.Load()
	switch {
	case h == nil:
	case params && h.paramsDecoded != nil:
		h.paramsDecoded()
	case !params && h.envelopeDecoded != nil:
		h.envelopeDecoded()
	}
}
