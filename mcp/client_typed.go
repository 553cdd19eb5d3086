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

// Form is a form-mode elicitation's requestedSchema as a description of
// the fields to show: what a client needs to render the form, with the
// fields in the order the server wrote them.
type Form struct {
	// Title and Description are the schema's own, when it has them.
	Title       string
	Description string
	Fields      []FormField
}

// Field returns the field named name, or nil.
func (f *Form) Field(name string) *FormField {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// FormField is one field of a Form: a property of the requestedSchema.
type FormField struct {
	// Name is the property name: the key of the field's value in the
	// answer's content.
	Name        string
	Title       string
	Description string
	// Type is "string", "number", "integer", "boolean", or "array" for a
	// multi-select (a list of strings, each one of Options).
	Type     string
	Required bool
	// Default is the value the server proposes (string, bool, int64 or
	// float64, or []string for a multi-select); nil when none.
	Default any
	// Options are the values a single-select (Type "string") or a
	// multi-select (Type "array") allows, with their display titles
	// (enum, with the legacy enumNames; oneOf or anyOf of {const,
	// title}; for an array the same under items). Nil for a free field.
	Options []FormOption
	// Format is the string format: email, uri, date or date-time ("" for
	// none). Pattern is a regular expression the string must match.
	Format  string
	Pattern string
	// Bounds, nil when not set: the length of a string (in characters),
	// the value of a number, the number of selected options.
	MinLength, MaxLength *int
	Minimum, Maximum     *float64
	MinItems, MaxItems   *int
}

// Multiple reports whether the field is a multi-select.
func (f *FormField) Multiple() bool { return f.Type == "array" }

// FormOption is one allowed value of a select field.
type FormOption struct {
	// Value is what the answer carries; Title what to show ("" when the
	// server gave none: show Value).
	Value string
	Title string
}

// ErrNotAForm is returned by ElicitRequest.Form for a URL-mode request.
var ErrNotAForm = errors.New("mcp: a URL-mode elicitation has no form")

// Form reads the request's requestedSchema as a form. A request without
// a schema is a form without fields; a URL-mode one is ErrNotAForm.
// Keywords the form description has no place for are ignored; a schema
// that is not an object of properties, or a property that is not a
// string, number, integer, boolean or multi-select, is an error naming
// the property.
func (r *ElicitRequest) Form() (*Form, error) {
	if r.Mode == ElicitModeURL {
		return nil, ErrNotAForm
	}
	if r.RequestedSchema == nil {
		return &Form{}, nil
	}
	raw, err := toRawJSON(r.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: elicitation form: the schema: %w", err)
	}
	return parseForm(raw)
}

func formError(format string, args ...any) error {
	return fmt.Errorf("mcp: elicitation form: "+format, args...)
}

// Bounds on a requestedSchema a server sends, so that reading and
// rendering one costs no more than a form a person can fill: fields,
// options of one field, and the source of a pattern (which a client may
// compile).
const (
	maxFormFields       = 256
	maxFormOptions      = 1024
	maxFormPatternBytes = 4096
)

// parseForm reads a requestedSchema (valid JSON), within maxFormFields,
// maxFormOptions and maxFormPatternBytes.
func parseForm(raw []byte) (*Form, error) {
	if jsonrpc.KindOf(raw) != jsonrpc.KindObject {
		return nil, formError("the schema is not a JSON object")
	}
	f := &Form{}
	var props []byte
	var required []string
	var bad error
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		switch string(jsonrpc.Key(k)) {
		case "title":
			f.Title, _ = jsonString(v)
		case "description":
			f.Description, _ = jsonString(v)
		case "type":
			if t, _ := jsonString(v); t != "object" {
				bad = formError(`the schema's type is not "object"`)
			}
		case "properties":
			props = v
		case "required":
			if json.Unmarshal(v, &required) != nil {
				bad = formError(`"required" is not a list of names`)
			}
		}
		if bad != nil {
			return errStopScan
		}
		return nil
	})
	if bad != nil {
		return nil, bad
	}
	switch jsonrpc.KindOf(props) {
	case jsonrpc.KindInvalid, jsonrpc.KindNull:
		return f, nil
	case jsonrpc.KindObject:
	default:
		return nil, formError(`"properties" is not an object`)
	}
	seen := map[string]bool{}
	isRequired := make(map[string]bool, len(required))
	for _, r := range required {
		isRequired[r] = true
	}
	err := jsonrpc.Fields(props, func(k, v []byte) error {
		name := string(jsonrpc.Key(k))
		if seen[name] {
			return formError("property %q is declared twice", name)
		}
		if len(seen) == maxFormFields {
			return formError("more than %d fields", maxFormFields)
		}
		seen[name] = true
		field, err := parseFormProperty(name, v)
		if err != nil {
			return formError("property %q: %v", name, err)
		}
		field.Required = isRequired[name]
		f.Fields = append(f.Fields, field)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func parseFormProperty(name string, raw []byte) (FormField, error) {
	fd := FormField{Name: name}
	if jsonrpc.KindOf(raw) != jsonrpc.KindObject {
		return fd, errors.New("not a JSON object")
	}
	var enum, enumNames []string
	var titled []FormOption
	var items, def []byte
	var bad error
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		key := string(jsonrpc.Key(k))
		switch key {
		case "type":
			fd.Type, _ = jsonString(v)
		case "title":
			fd.Title, _ = jsonString(v)
		case "description":
			fd.Description, _ = jsonString(v)
		case "format":
			fd.Format, _ = jsonString(v)
		case "pattern":
			fd.Pattern, _ = jsonString(v)
			if len(fd.Pattern) > maxFormPatternBytes {
				bad = fmt.Errorf(`"pattern" is longer than %d bytes`, maxFormPatternBytes)
			}
		case "default":
			def = v
		case "enum":
			if json.Unmarshal(v, &enum) != nil {
				bad = errors.New(`"enum" is not a list of strings`)
			}
		case "enumNames":
			_ = json.Unmarshal(v, &enumNames)
		case "oneOf", "anyOf":
			if titled, bad = parseTitledOptions(v); bad != nil {
				bad = fmt.Errorf("%q: %v", key, bad)
			}
		case "items":
			items = v
		case "minLength":
			fd.MinLength, bad = formCount(key, v)
		case "maxLength":
			fd.MaxLength, bad = formCount(key, v)
		case "minItems":
			fd.MinItems, bad = formCount(key, v)
		case "maxItems":
			fd.MaxItems, bad = formCount(key, v)
		case "minimum", "maximum":
			n, err := jsonrpc.ParseNumber(jsonrpc.TrimSpace(v))
			if err != nil || jsonrpc.KindOf(v) != jsonrpc.KindNumber {
				bad = fmt.Errorf("%q is not a number", key)
			} else if key == "minimum" {
				fd.Minimum = &n
			} else {
				fd.Maximum = &n
			}
		}
		if bad != nil {
			return errStopScan
		}
		return nil
	})
	if bad != nil {
		return fd, bad
	}
	if fd.Type == "" && (enum != nil || titled != nil) {
		fd.Type = "string"
	}
	switch fd.Type {
	case "string", "number", "integer", "boolean":
		fd.Options = selectOptions(enum, enumNames, titled)
		if fd.Options != nil && len(fd.Options) == 0 {
			return fd, errors.New("an empty list of options")
		}
	case "array":
		opts, err := itemOptions(items)
		if err != nil {
			return fd, err
		}
		fd.Options = opts
	case "":
		return fd, errors.New("no type")
	default:
		return fd, fmt.Errorf("type %q is not a form field type (string, number, integer, boolean, or array for a multi-select)", fd.Type)
	}
	if len(fd.Options) > maxFormOptions {
		return fd, fmt.Errorf("more than %d options", maxFormOptions)
	}
	if def != nil && jsonrpc.KindOf(def) != jsonrpc.KindNull {
		d, err := formDefault(def)
		if err != nil {
			return fd, err
		}
		fd.Default = d
	}
	return fd, nil
}

// itemOptions reads the options of a multi-select's items.
func itemOptions(items []byte) ([]FormOption, error) {
	if jsonrpc.KindOf(items) != jsonrpc.KindObject {
		return nil, errors.New(`a multi-select needs "items" with its options`)
	}
	var enum []string
	var titled []FormOption
	var bad error
	_ = jsonrpc.Fields(items, func(k, v []byte) error {
		switch key := string(jsonrpc.Key(k)); key {
		case "type":
			if t, _ := jsonString(v); t != "string" {
				bad = errors.New(`the items of a multi-select are strings`)
			}
		case "enum":
			if json.Unmarshal(v, &enum) != nil {
				bad = errors.New(`"items": "enum" is not a list of strings`)
			}
		case "anyOf", "oneOf":
			if titled, bad = parseTitledOptions(v); bad != nil {
				bad = fmt.Errorf(`"items": %q: %v`, key, bad)
			}
		}
		if bad != nil {
			return errStopScan
		}
		return nil
	})
	if bad != nil {
		return nil, bad
	}
	opts := selectOptions(enum, nil, titled)
	if len(opts) == 0 {
		return nil, errors.New(`a multi-select needs options (items with enum, anyOf or oneOf)`)
	}
	return opts, nil
}

// selectOptions joins the ways a schema lists options: titled consts
// first, else enum with the legacy enumNames as titles.
func selectOptions(enum, names []string, titled []FormOption) []FormOption {
	if titled != nil {
		return titled
	}
	if enum == nil {
		return nil
	}
	opts := make([]FormOption, len(enum))
	for i, e := range enum {
		opts[i].Value = e
		if i < len(names) {
			opts[i].Title = names[i]
		}
	}
	return opts
}

// parseTitledOptions reads [{"const": "...", "title": "..."}, ...].
func parseTitledOptions(v []byte) ([]FormOption, error) {
	if jsonrpc.KindOf(v) != jsonrpc.KindArray {
		return nil, errors.New("not a list of {const, title} options")
	}
	opts := []FormOption{}
	err := jsonrpc.Elements(v, func(e []byte) error {
		if jsonrpc.KindOf(e) != jsonrpc.KindObject {
			return errors.New("an option is not an object")
		}
		var o FormOption
		has := false
		_ = jsonrpc.Fields(e, func(k, v []byte) error {
			switch string(jsonrpc.Key(k)) {
			case "const":
				o.Value, has = jsonString(v)
			case "title":
				o.Title, _ = jsonString(v)
			}
			return nil
		})
		if !has {
			return errors.New("an option has no string const")
		}
		opts = append(opts, o)
		return nil
	})
	return opts, err
}

func formCount(key string, v []byte) (*int, error) {
	n, err := jsonrpc.ParseUint(jsonrpc.TrimSpace(v), 31)
	if err != nil {
		return nil, fmt.Errorf("%q is not a non-negative integer", key)
	}
	i := int(n)
	return &i, nil
}

// formDefault decodes a default as answers carry values.
func formDefault(v []byte) (any, error) {
	r, err := decodeElicitResult(append(append([]byte(`{"action":"accept","content":{"d":`), v...), "}}"...))
	if err != nil {
		return nil, errors.New(`"default" is not a string, number, boolean or list of strings`)
	}
	return r.Content["d"], nil
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
