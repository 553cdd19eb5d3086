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

// ElicitAnswer returns the answer to an elicitation: action is
// ElicitAccept, ElicitDecline or ElicitCancel. An accepted answer's
// content is content encoded (a struct with json tags, or a map; nil for
// none): it must encode to a JSON object whose members are strings,
// booleans, numbers or lists of strings, read back as an answer is
// (integers as int64). A declined or cancelled answer carries no
// content; content must be nil.
func ElicitAnswer(action ElicitAction, content any) (*ElicitResult, error) {
	switch action {
	case ElicitDecline, ElicitCancel:
		if content != nil {
			return nil, fmt.Errorf("mcp: ElicitAnswer: a %s answer carries no content", action)
		}
		return &ElicitResult{Action: action}, nil
	case ElicitAccept:
	default:
		return nil, fmt.Errorf("mcp: ElicitAnswer: invalid action %q", action)
	}
	if content == nil {
		return &ElicitResult{Action: ElicitAccept}, nil
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("mcp: ElicitAnswer: %w", err)
	}
	if jsonrpc.KindOf(b) != jsonrpc.KindObject {
		return nil, fmt.Errorf("mcp: ElicitAnswer: %T does not encode to a JSON object", content)
	}
	r, err := decodeElicitResult(append(append([]byte(`{"action":"accept","content":`), b...), '}'))
	if err != nil {
		return nil, fmt.Errorf("mcp: ElicitAnswer: %w", err)
	}
	return r, nil
}

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
