package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The legacy asker: on a legacy session's request, Elicit, ElicitForm,
// ElicitURL, Sample and ListRoots send the live server-to-client request,
// related to the originating call (on its SSE response stream over HTTP,
// on the connection over stdio), and block until the client answers. The
// handler runs once, straight through; see docs/design/legacy.md for why
// this is preferred to re-running it round after round.

type legacyAsker struct {
	scope  *legacyScope
	caps   *ClientCapabilities
	out    outbound
	method string // the originating request's method
}

// refuses returns why q would not be sent: the session's revision does
// not define it (whatever the client declared), the transport cannot
// carry it, or the client did not declare the capability.
func (a *legacyAsker) refuses(q *question) error {
	if err := a.scope.rev.refuses(a.method, q); err != nil {
		return err
	}
	method := q.req.InputMethod()
	rs, _ := a.out.(requestSender)
	why := "this transport cannot carry server-to-client requests"
	switch {
	case a.scope.sess == nil:
		why = "the request belongs to no session (a stateless " + a.scope.rev.version + " request has no back-channel)"
	case rs != nil:
		if ok, w := rs.backChannel(); ok {
			why = ""
		} else {
			why = w
		}
	}
	if why != "" {
		return jsonrpcError(CodeInvalidRequest, "Invalid request: cannot send "+method+" to the client: "+why)
	}
	if e := missingCapability(a.caps, q); e != nil {
		return e
	}
	return nil
}

func (a *legacyAsker) ask(ctx context.Context, q *question) (json.RawMessage, error) {
	if err := a.refuses(q); err != nil {
		return nil, err
	}
	rs, _ := a.out.(requestSender)
	method := q.req.InputMethod()
	params, err := a.legacyParams(q)
	if err != nil {
		return nil, err
	}
	raw, err := a.scope.sess.call(ctx, rs, method, params)
	if err != nil {
		if ce, ok := err.(*ClientRequestError); ok {
			ce.Question = shortText(questionText(q.req), maxQuestionRunes)
		}
		return nil, err
	}
	if err := q.validate(raw); err != nil {
		return nil, q.invalidAnswer(q.key, err)
	}
	return raw, nil
}

// legacyParams renders the params of the live request as the session's
// revision defines them. A URL-mode elicitation carries an elicitationId
// in 2025-11-25; before it, a form elicitation has no mode member and a
// sampling message one content block and no _meta.
func (a *legacyAsker) legacyParams(q *question) ([]byte, error) {
	rev := a.scope.rev
	if e, ok := q.req.(*ElicitRequest); ok && isURLElicitation(e) {
		id := q.elicitationID
		if id == "" {
			var b [16]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		if e.URL == "" || e.RequestedSchema != nil {
			return nil, errors.New("mcp: a URL-mode elicitation needs a URL and no requested schema")
		}
		a.scope.sess.rememberElicitation(id)
		return json.Marshal(&struct {
			Mode          string `json:"mode"`
			Message       string `json:"message"`
			URL           string `json:"url"`
			ElicitationID string `json:"elicitationId"`
		}{ElicitModeURL, e.Message, e.URL, id})
	}
	req := q.req
	switch v := req.(type) {
	case *CreateMessageRequest:
		req = rev.samplingParams(v)
	case *ElicitRequest:
		if !rev.urlElicitation {
			raw, err := marshalInputRequest(v)
			if err != nil {
				return nil, err
			}
			return dropMembers(nil, paramsOf(raw), "mode"), nil
		}
	}
	raw, err := marshalInputRequest(req)
	if err != nil {
		return nil, err
	}
	return paramsOf(raw), nil
}

// paramsOf returns the params of a bare {"method","params"} object.
func paramsOf(raw []byte) []byte {
	var params []byte
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		if string(k) == "params" {
			params = v
		}
		return nil
	})
	if params == nil {
		params = []byte("{}")
	}
	return params
}

// WithLegacyElicitationID sets the elicitationId a URL-mode elicitation carries
// on a 2025-11-25 session (that revision requires one; 2026-07-28 has
// none and ignores it). Pass the identifier of your out-of-band flow to
// announce its end with Server.CompleteElicitation; without it a random
// id is sent.
func WithLegacyElicitationID(id string) AskOption {
	return func(o *askOptions) { o.elicitationID = id }
}

// CloseLegacySSEStream ends the HTTP response of the current request now, while
// the handler goes on (server-initiated disconnection for polling,
// SEP-1699). It applies only to a 2025-11-25 session over Streamable HTTP,
// whose responses are resumable SSE streams: the client reconnects with
// GET and Last-Event-ID and receives every later message of the request,
// its result included, on the new connection. It reports whether a stream
// was closed, and does nothing elsewhere (2026-07-28 has no resumability;
// stdio; a JSON-only response).
func CloseLegacySSEStream(ctx context.Context) bool {
	sc := scopeFrom(ctx)
	if sc == nil {
		return false
	}
	c, ok := sc.out.(interface{ closeSSE() bool })
	return ok && c.closeSSE()
}
