package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Typed helpers of the client: structured results decoded into Go
// types, elicitation forms read as field descriptions, and answers to
// input requests built without hand-written JSON.

// ErrNoStructuredContent is returned by StructuredContent (and
// CallToolAs) for a result without structuredContent.
var ErrNoStructuredContent = errors.New("mcp: the result has no structuredContent")

// ToolError is returned by StructuredContent and CallToolAs for a result
// with IsError set: the tool failed, and Result says how (its text is
// the error's message).
type ToolError struct {
	// Tool is the tool's name ("" when StructuredContent was given the
	// result alone).
	Tool   string
	Result *CallToolResult
}

// Error gives the text of the result's text blocks, clipped.
func (e *ToolError) Error() string {
	var b strings.Builder
	for _, c := range e.Result.Content {
		if t, ok := c.(*TextContent); ok {
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(t.Text)
		}
	}
	msg := b.String()
	if len(msg) > 256 {
		msg = msg[:253] + "..."
	}
	if e.Tool == "" {
		return "mcp: the tool failed: " + msg
	}
	return fmt.Sprintf("mcp: tool %q failed: %s", e.Tool, msg)
}

// StructuredContent decodes the structuredContent of res into a new T
// (with encoding/json). A nil result is an error; a result with IsError
// set is a *ToolError; one without structuredContent is
// ErrNoStructuredContent (the text blocks are not parsed instead).
func StructuredContent[T any](res *CallToolResult) (T, error) {
	var v T
	if res == nil {
		return v, errors.New("mcp: StructuredContent: nil result")
	}
	if res.IsError {
		return v, &ToolError{Result: res}
	}
	var raw []byte
	switch sc := res.StructuredContent.(type) {
	case nil:
		return v, ErrNoStructuredContent
	case json.RawMessage:
		raw = sc
	case []byte:
		raw = sc
	default:
		b, err := json.Marshal(sc)
		if err != nil {
			return v, fmt.Errorf("mcp: StructuredContent: %w", err)
		}
		raw = b
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("mcp: decoding structuredContent into %T: %w", v, err)
	}
	return v, nil
}

// CallToolAs calls a tool as Client.CallTool does (the structured
// content checked against the tool's outputSchema as there) and decodes
// its structuredContent into a T. A result with IsError set is a
// *ToolError naming the tool, one without structuredContent
// ErrNoStructuredContent.
func CallToolAs[T any](ctx context.Context, c *Client, name string, args any, opts *CallOptions) (T, error) {
	res, err := c.CallTool(ctx, name, args, opts)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := StructuredContent[T](res)
	if te, ok := err.(*ToolError); ok {
		te.Tool = name
	}
	return v, err
}

// errNotAForm is returned by ElicitRequest.Form for a URL-mode request.
var errNotAForm = errors.New("mcp: a URL-mode elicitation has no form")

// Form reads the request's requestedSchema as a form. A request without
// a schema is a form without fields; a URL-mode one is an error (a URL
// question has no form: check Mode first).
// Keywords the form description has no place for are ignored; a schema
// that is not an object of properties, or a property that is not a
// string, number, integer, boolean or multi-select, is an error naming
// the property.
func (r *ElicitRequest) Form() (*Form, error) {
	if r.Mode == ElicitModeURL {
		return nil, errNotAForm
	}
	if r.RequestedSchema == nil {
		return &Form{}, nil
	}
	raw, err := toRawJSON(r.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: elicitation form: the schema: %w", err)
	}
	fs, err := readFormSchema(raw, false)
	if err != nil {
		return nil, err
	}
	return &fs.form, nil
}

// AcceptElicit returns an accepted answer with content (the form's
// values by field name: strings, booleans, numbers, string lists).
func AcceptElicit(content map[string]any) *ElicitResult {
	return &ElicitResult{Action: ElicitAccept, Content: content}
}

// AcceptElicitAs returns an accepted answer whose content is v encoded
// (a struct with json tags, or a map): v must encode to a JSON object
// whose members are strings, booleans, numbers or lists of strings.
func AcceptElicitAs(v any) (*ElicitResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("mcp: AcceptElicitAs: %w", err)
	}
	if jsonrpc.KindOf(b) != jsonrpc.KindObject {
		return nil, fmt.Errorf("mcp: AcceptElicitAs: %T does not encode to a JSON object", v)
	}
	r, err := decodeElicitResult(append(append([]byte(`{"action":"accept","content":`), b...), '}'))
	if err != nil {
		return nil, fmt.Errorf("mcp: AcceptElicitAs: %w", err)
	}
	return r, nil
}

// DeclineElicit returns the answer of a user who declined.
func DeclineElicit() *ElicitResult { return &ElicitResult{Action: ElicitDecline} }

// CancelElicit returns the answer of a user who dismissed the request.
func CancelElicit() *ElicitResult { return &ElicitResult{Action: ElicitCancel} }

// SetElicit puts the answer to the elicitation under key (making the map
// when it is nil), as the automatic path would send it. An unknown
// action, or content that does not encode, is an error and sets
// nothing. Form defaults are not filled in: that is the caller's.
func (r *InputResponses) SetElicit(key string, res *ElicitResult) error {
	if res == nil {
		return errors.New("mcp: SetElicit: nil result")
	}
	switch res.Action {
	case ElicitAccept, ElicitDecline, ElicitCancel:
	default:
		return fmt.Errorf("mcp: SetElicit: invalid action %q", res.Action)
	}
	b, err := appendElicitResult(make([]byte, 0, 64), res)
	if err != nil {
		return fmt.Errorf("mcp: SetElicit: %w", err)
	}
	r.set(key, b)
	return nil
}

// SetSampling puts the answer to the sampling request under key (making
// the map when it is nil).
func (r *InputResponses) SetSampling(key string, res *CreateMessageResult) error {
	if res == nil {
		return errors.New("mcp: SetSampling: nil result")
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("mcp: SetSampling: %w", err)
	}
	r.set(key, b)
	return nil
}

// SetRoots puts the answer to the roots request under key (making the
// map when it is nil); nil Roots are sent as an empty list.
func (r *InputResponses) SetRoots(key string, res *ListRootsResult) error {
	if res == nil {
		return errors.New("mcp: SetRoots: nil result")
	}
	if res.Roots == nil {
		res = &ListRootsResult{Roots: []Root{}}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("mcp: SetRoots: %w", err)
	}
	r.set(key, b)
	return nil
}

func (r *InputResponses) set(key string, b []byte) {
	if *r == nil {
		*r = InputResponses{}
	}
	(*r)[key] = b
}
