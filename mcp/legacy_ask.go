package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The legacy asker: on a 2025-11-25 request, Elicit, ElicitForm,
// ElicitURL, Sample and ListRoots send the live server-to-client request,
// related to the originating call (on its SSE response stream over HTTP,
// on the connection over stdio), and block until the client answers. The
// handler runs once, straight through; see docs/design/legacy.md for why
// this is preferred to re-running it round after round.

type legacyAsker struct {
	scope *legacyScope
	caps  *ClientCapabilities
	out   outbound
}

func (a *legacyAsker) ask(ctx context.Context, q *question) (json.RawMessage, error) {
	method := q.req.InputMethod()
	rs, _ := a.out.(requestSender)
	why := "this transport cannot carry server-to-client requests"
	switch {
	case a.scope.sess == nil:
		why = "the request belongs to no session (a stateless " + a.scope.version + " request has no back-channel)"
	case rs != nil:
		if ok, w := rs.backChannel(); ok {
			why = ""
		} else {
			why = w
		}
	}
	if why != "" {
		return nil, jsonrpcError(CodeInvalidRequest, "Invalid request: cannot send "+method+" to the client: "+why)
	}
	if e := missingCapability(a.caps, q); e != nil {
		return nil, e
	}
	params, err := a.legacyParams(q)
	if err != nil {
		return nil, err
	}
	raw, err := a.scope.sess.call(ctx, rs, method, params)
	if err != nil {
		return nil, err
	}
	if q.validate(raw) != nil {
		return nil, &InvalidAnswerError{Key: q.key}
	}
	return raw, nil
}

// legacyParams renders the params of the live request. A URL-mode
// elicitation carries an elicitationId in 2025-11-25.
func (a *legacyAsker) legacyParams(q *question) ([]byte, error) {
	if e, ok := q.req.(*ElicitRequest); ok && (e.Mode == ElicitModeURL || (e.Mode == "" && e.URL != "" && e.RequestedSchema == nil)) {
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
	raw, err := marshalInputRequest(q.req)
	if err != nil {
		return nil, err
	}
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
	return params, nil
}

// WithElicitationID sets the elicitationId a URL-mode elicitation carries
// on a 2025-11-25 session (that revision requires one; 2026-07-28 has
// none and ignores it). Pass the identifier of your out-of-band flow to
// announce its end with Server.CompleteElicitation; without it a random
// id is sent.
func WithElicitationID(id string) AskOption {
	return func(o *askOptions) { o.elicitationID = id }
}

// ElicitForm asks the user to fill a form described by schema, a flat JSON
// Schema object ({"type":"object","properties":{...},"required":[...]})
// passed to the client as is: use it when Elicit[T] cannot express the
// form, for default values (SEP-1034), titled enums (oneOf/anyOf with
// const and title, SEP-1330), legacy enumNames, length or range limits.
// Both eras: an InputRequiredResult round on 2026-07-28, a live request on
// a 2025-11-25 session.
//
// An accepted answer is checked against the schema's property types,
// enums and required list (a failing one is an *InvalidAnswerError);
// decline and cancel are values in the result's Action.
func ElicitForm(ctx context.Context, message string, schema json.RawMessage, opts ...AskOption) (*ElicitResult, error) {
	fs, err := formSchemaFromRaw(schema)
	if err != nil {
		return nil, err
	}
	req := &ElicitRequest{Mode: ElicitModeForm, Message: message, RequestedSchema: schema}
	// The answer validated last is the one returned: keep its decoding.
	var r *ElicitResult
	_, _, err = askRaw(ctx, req, opts, func(raw json.RawMessage) error {
		var err error
		if r, _, err = decodeElicit(raw); err != nil {
			return err
		}
		return fs.check(r)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// formSchemaFromRaw reads the checkable part of a flat elicitation schema:
// each property's type, its allowed values (enum, or the consts of
// oneOf/anyOf), and the required list.
func formSchemaFromRaw(raw json.RawMessage) (*formSchema, error) {
	type consts []struct {
		Const *string `json:"const"`
	}
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Type != "object" {
		return nil, errors.New(`mcp: ElicitForm: the schema must be a JSON object with "type":"object"`)
	}
	values := func(enum []string, one, any consts) []string {
		if enum != nil {
			return enum
		}
		var out []string
		for _, c := range append(one, any...) {
			if c.Const != nil {
				out = append(out, *c.Const)
			}
		}
		return out
	}
	fs := &formSchema{raw: raw}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		var p struct {
			Type  string   `json:"type"`
			Enum  []string `json:"enum"`
			OneOf consts   `json:"oneOf"`
			AnyOf consts   `json:"anyOf"`
			Items *struct {
				Type  string   `json:"type"`
				Enum  []string `json:"enum"`
				OneOf consts   `json:"oneOf"`
				AnyOf consts   `json:"anyOf"`
			} `json:"items"`
		}
		if err := json.Unmarshal(s.Properties[name], &p); err != nil {
			return nil, fmt.Errorf("mcp: ElicitForm: property %q is not a flat primitive schema: %v", name, err)
		}
		f := formField{name: name, kind: p.Type, required: slices.Contains(s.Required, name)}
		switch p.Type {
		case "string":
			f.enum = values(p.Enum, p.OneOf, p.AnyOf)
		case "number", "integer", "boolean":
		case "array":
			if p.Items == nil {
				return nil, fmt.Errorf("mcp: ElicitForm: array property %q needs items", name)
			}
			f.enum = values(p.Items.Enum, p.Items.OneOf, p.Items.AnyOf)
			if f.enum == nil {
				return nil, fmt.Errorf("mcp: ElicitForm: array property %q must be a multi-select (items with enum, oneOf or anyOf)", name)
			}
		default:
			return nil, fmt.Errorf("mcp: ElicitForm: property %q has type %q; form fields are string, number, integer, boolean or a multi-select array", name, p.Type)
		}
		fs.fields = append(fs.fields, f)
	}
	return fs, nil
}

// CloseSSEStream ends the HTTP response of the current request now, while
// the handler goes on (server-initiated disconnection for polling,
// SEP-1699). It applies only to a 2025-11-25 session over Streamable HTTP,
// whose responses are resumable SSE streams: the client reconnects with
// GET and Last-Event-ID and receives every later message of the request,
// its result included, on the new connection. It reports whether a stream
// was closed, and does nothing elsewhere (2026-07-28 has no resumability;
// stdio; a JSON-only response).
func CloseSSEStream(ctx context.Context) bool {
	sc := scopeFrom(ctx)
	if sc == nil || sc.legacy == nil {
		return false
	}
	c, ok := sc.out.(interface{ closeSSE() bool })
	return ok && c.closeSSE()
}
