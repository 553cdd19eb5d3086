package mcp

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The legacy era (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05) as a
// serverEra: a request that belongs to a session (or, on a stateless
// handler, names a legacy version) is decoded with the revision's method
// table, its RequestMeta comes from the session, headers are optional, a
// handler's questions become live requests, and results are encoded
// without resultType, server identity or cache hints, and without what
// the session's revision lacks (its descriptor, legacy_revisions.go).

// legacyScope is the legacy era of one request: its session (nil for a
// stateless request) and revision.
type legacyScope struct {
	sess *legacySession
	rev  *revision
}

var _ serverEra = (*legacyScope)(nil)

// checkHeaders checks the header bindings a legacy client may send:
// absent is fine, present must agree (the session's version is checked
// by the HTTP handler).
func (ls *legacyScope) checkHeaders(s *Server, c *call, h http.Header) *Error {
	return checkBindings(s, c, h, false)
}

// checkVersion: the session negotiated the version.
func (ls *legacyScope) checkVersion(*Server, *call) *failure { return nil }

// installAsker makes questions live requests on the session
// (legacy_ask.go); the handler blocks for each answer.
func (ls *legacyScope) installAsker(sc *requestScope, caps *ClientCapabilities, _ *retryParams) *askScope {
	sc.asker = &legacyAsker{scope: ls, caps: caps, out: sc.out, method: sc.method}
	return nil
}

// inputRequired: the revision cannot express a handler's own
// InputRequiredResult.
func (ls *legacyScope) inputRequired(s *Server, c *call) *failure { return s.legacyIRRFailure(c) }

// appendResult encodes the result as the session's revision defines it.
func (ls *legacyScope) appendResult(s *Server, dst []byte, id jsonrpc.ID, res Result) ([]byte, error) {
	return s.appendLegacyResult(dst, id, ls.rev.result(res))
}

// appendNotification encodes the notification as the session's revision
// defines it (legacy_revisions.go).
func (ls *legacyScope) appendNotification(dst []byte, method string, params any) ([]byte, error) {
	return encodeNotification(dst, method, ls.rev.notification(method, params))
}

func (ls *legacyScope) protocolVersion() string { return ls.rev.version }

func (ls *legacyScope) sessionID() string {
	if ls.sess == nil {
		return ""
	}
	return ls.sess.id
}

// extensions: capabilities.extensions is a 2026-07-28 member.
func (ls *legacyScope) extensions() bool { return false }

// replays: a recorded outcome is in the modern encoding, which the
// session's revision may not speak; idempotency keys are ignored.
func (ls *legacyScope) replays() bool { return false }

// ---- decoding a legacy request ----

var legacyMethods = func() map[string]*methodSpec {
	m := map[string]*methodSpec{
		methodPing:        {decode: decodePing},
		methodSetLevel:    {decode: decodeSetLevel},
		methodSubscribe:   {decode: decodeSubscribe},
		methodUnsubscribe: {decode: decodeSubscribe},
	}
	for name, spec := range methods {
		switch name {
		case MethodDiscover, methodSubscriptionsListen:
			// 2026-07-28 only
		default:
			m[name] = spec
		}
	}
	return m
}()

func decodePing(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(pingRequest)
	return r, scanObject(raw, "params", metaOnlyNames, func(_ int, v []byte) *Error {
		return decodeMeta(v, &r.Meta, p)
	})
}

func decodeSetLevel(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(SetLevelRequest)
	var has bool
	err := scanObject(raw, "params", []string{"_meta", "level"}, func(i int, v []byte) *Error {
		if i == 0 {
			return decodeMeta(v, &r.Meta, p)
		}
		s, e := decodeString(v, "level")
		if e != nil {
			return e
		}
		if !LoggingLevel(s).valid() {
			return paramsError("level: unknown logging level \"%s\"", s)
		}
		r.Level, has = LoggingLevel(s), true
		return nil
	})
	if err == nil && !has {
		err = paramsError("missing level")
	}
	return r, err
}

func decodeSubscribe(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(SubscribeRequest)
	var has bool
	err := scanObject(raw, "params", []string{"_meta", "uri"}, func(i int, v []byte) *Error {
		if i == 0 {
			return decodeMeta(v, &r.Meta, p)
		}
		s, e := decodeString(v, "uri")
		r.URI, has = s, true
		return e
	})
	if err == nil && !has {
		err = paramsError("missing uri")
	}
	return r, err
}

// decode decodes a legacy request. Errors are in-band (HTTP 200): the
// transport accepted the request.
func (ls *legacyScope) decode(s *Server, c *call) *failure {
	s.countDecode(true)
	msg := c.msg
	spec := legacyMethods[msg.Method]
	if spec == nil {
		spec = s.customSpec(msg.Method, false) // AddMethod (extension.go)
		if c := s.coreOf(msg.Method); spec != nil && c != "" && c != ls.rev.version {
			spec = nil // another revision's own method (MethodSpec.Core)
		}
	}
	if spec == nil {
		e := jsonrpcError(CodeMethodNotFound, "Method not found: "+msg.Method)
		if methods[msg.Method] != nil || s.customSpec(msg.Method, true) != nil {
			e = jsonrpcError(CodeMethodNotFound, "Method not found: "+msg.Method+" is not part of protocol revision "+ls.rev.version)
		}
		return &failure{e, http.StatusOK}
	}
	c.spec = spec
	raw := msg.Params
	if raw == nil {
		raw = []byte("{}")
	}
	// _meta is optional in 2025-11-25; required members are checked as if
	// it were there.
	pres := metaPresence{meta: true}
	params, perr := spec.decode(raw, &pres)
	c.params = params
	if perr != nil {
		return &failure{perr, http.StatusOK}
	}
	m := params.RequestMeta()
	if ls.sess != nil {
		ls.sess.fillMeta(m)
	} else {
		m.ProtocolVersion, m.ClientCapabilities, m.LogLevel, m.ClientInfo = ls.rev.version, ClientCapabilities{}, "", nil
	}
	// inputResponses and requestState do not exist in 2025-11-25.
	if rp, _ := binding(msg.Method, params); rp != nil {
		*rp = retryParams{}
	}
	return nil
}

// hasModernMeta reports whether params carry the 2026-07-28 _meta
// envelope (a protocolVersion member in _meta): such a request is modern
// whatever else it carries.
func hasModernMeta(params []byte) bool {
	if jsonrpc.KindOf(params) != jsonrpc.KindObject {
		return false
	}
	found := false
	_ = jsonrpc.Fields(params, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) != "_meta" || jsonrpc.KindOf(v) != jsonrpc.KindObject {
			return nil
		}
		_ = jsonrpc.Fields(v, func(k, _ []byte) error {
			if string(jsonrpc.Key(k)) == metaProtocolVersion {
				found = true
				return errStopScan
			}
			return nil
		})
		return errStopScan
	})
	return found
}

// ---- the legacy-only methods ----

// extra answers ping, logging/setLevel and resources/(un)subscribe.
func (scope *legacyScope) extra(ctx context.Context, method string, params Params) (Result, error) {
	ls := scope.sess // nil for a stateless request
	switch p := params.(type) {
	case *pingRequest:
		return EmptyResult{}, nil
	case *SetLevelRequest:
		if ls != nil {
			if e := ls.setLevel(p.Level); e != nil {
				return nil, e
			}
		}
		return EmptyResult{}, nil
	case *SubscribeRequest:
		if ls == nil {
			return nil, jsonrpcError(CodeInvalidRequest, "Invalid request: "+method+" needs a session (this "+scope.rev.version+" request has none)")
		}
		if len(p.URI) > maxLegacySubscriptionURI {
			return nil, jsonrpcError(CodeInvalidParams, "Invalid params: uri is too long")
		}
		if e := ls.subscribe(p.URI, method == methodSubscribe); e != nil {
			return nil, e
		}
		return EmptyResult{}, nil
	}
	return nil, jsonrpcError(CodeMethodNotFound, "Method not found: "+method)
}

// ---- the handler's answer ----

// legacyIRRFailure is the answer to a legacy request whose handler built
// its own InputRequiredResult: 2025-11-25 cannot express it.
func (s *Server) legacyIRRFailure(c *call) *failure {
	s.log.Error("mcp: handler returned an input_required result on a 2025-11-25 request", "method", c.msg.Method)
	return &failure{jsonrpcError(CodeInternalError, "Internal error: the "+c.msg.Method+" handler returned an input_required result, but this request is served on protocol revision "+
		c.era.protocolVersion()+", which has no input_required vocabulary (ask with mcp.Elicit, mcp.Sample or mcp.ListRoots instead: on a 2025-11-25 session they send live requests)"), http.StatusOK}
}

// appendLegacyResult appends the response of a legacy request: the result
// as its handler made it, without resultType, server identity or cache
// hints (2025-11-25 has none of them).
func (s *Server) appendLegacyResult(dst []byte, id jsonrpc.ID, res Result) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"result":`...)
	body := len(dst)
	if r, ok := res.(*CallToolResult); ok && r.Content != nil {
		// The most common result by hand, in the bytes encoding/json
		// gives (_meta last); anything it does not write (a nil block)
		// goes the general way below.
		out, err := appendCallToolFields(append(dst, '{'), r)
		if err == nil && len(r.Meta) > 0 {
			out = append(out, `,"_meta":`...)
			out, err = marshalAppend(out, r.Meta)
		}
		if err == nil {
			return append(out, '}', '}'), nil
		}
		// dst still ends at body: what was appended is past it.
	}
	dst, err := marshalAppend(dst, res)
	if err != nil {
		return dst[:start], err
	}
	if len(dst)-body < 2 || dst[body] != '{' {
		return dst[:start], errors.New("result is not a JSON object")
	}
	if _, ok := res.(cacheable); ok {
		obj := append([]byte(nil), dst[body:]...)
		dst = dropMembers(dst[:body], obj, "ttlMs", "cacheScope")
	}
	return append(dst, '}'), nil
}

// dropMembers appends obj without the named top-level members.
func dropMembers(dst, obj []byte, names ...string) []byte {
	dst = append(dst, '{')
	first := true
	_ = jsonrpc.Fields(obj, func(k, v []byte) error {
		if slices.Contains(names, string(k)) {
			return nil
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, `":`...)
		dst = append(dst, v...)
		return nil
	})
	return append(dst, '}')
}
