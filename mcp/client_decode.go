package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Decoding of results on the client. A result's resultType decides what
// it is: absent (a server of an earlier revision) or "complete" is the
// method's result; "input_required" is allowed only on tools/call,
// prompts/get and resources/read; anything else is invalid.

// resultTypeOf reads the resultType member of a result object.
func resultTypeOf(method string, raw []byte) (ResultType, error) {
	var rt ResultType = ResultComplete
	var bad error
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) != "resultType" {
			return nil
		}
		switch v = jsonrpc.TrimSpace(v); string(v) { // no allocation
		case `"complete"`:
			rt = ResultComplete
		case `"input_required"`:
			rt = ResultInputRequired
		default:
			s, ok := jsonString(v)
			if !ok {
				bad = invalidResponse(method, "resultType is not a string")
				return errStopScan
			}
			rt = ResultType(s)
		}
		return nil
	})
	if bad != nil {
		return "", bad
	}
	switch rt {
	case ResultComplete:
	case ResultInputRequired:
		if !isInputRequiredMethod(method) {
			return "", &InvalidResponseError{Method: method, Err: ErrInputRequiredNotAllowed}
		}
	default:
		// rt goes with the error: the call loop hands a type an
		// extension follows to it (ClientExtensions.Results).
		return rt, &InvalidResponseError{Method: method, Err: fmt.Errorf("%w %q", ErrUnknownResultType, string(rt))}
	}
	return rt, nil
}

// decodeComplete decodes a complete result of method into a new T.
func decodeComplete[T any](method string, raw []byte) (*T, error) {
	rt, err := resultTypeOf(method, raw)
	if err != nil {
		return nil, err
	}
	if rt != ResultComplete {
		return nil, &InvalidResponseError{Method: method, Err: fmt.Errorf("%w %q where a complete result is due", ErrUnknownResultType, string(rt))}
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, &InvalidResponseError{Method: method, Err: err}
	}
	return v, nil
}

// decodeTool decodes a tool keeping its schemas as the exact JSON the
// server sent (json.RawMessage), so that nothing is lost or reordered
// and no $ref is ever followed.
func decodeTool(raw []byte) (*Tool, error) {
	type alias Tool
	t := new(Tool)
	w := struct {
		*alias
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}{alias: (*alias)(t)}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if w.InputSchema != nil {
		t.InputSchema = w.InputSchema
	}
	if w.OutputSchema != nil {
		t.OutputSchema = w.OutputSchema
	}
	return t, nil
}

// decodeToolsPage decodes one page of tools/list. Over HTTP, a tool
// whose x-mcp-header annotations break the rules (the server's own
// paramHeaders rules) is dropped with a warning; the others' annotations
// are remembered for tools/call, and so are the output schemas of all
// (client_validate.go).
func (c *Client) decodeToolsPage(raw []byte) (*ListToolsResult, error) {
	const method = MethodToolsList
	if _, err := resultTypeOf(method, raw); err != nil {
		return nil, err
	}
	var w struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor *string           `json:"nextCursor"`
		Cache
		Meta Meta `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, &InvalidResponseError{Method: method, Err: err}
	}
	res := &ListToolsResult{Tools: make([]*Tool, 0, len(w.Tools)), NextCursor: w.NextCursor, Cache: w.Cache, Meta: w.Meta}
	for i, tr := range w.Tools {
		t, err := decodeTool(tr)
		if err != nil {
			return nil, invalidResponse(method, "tools[%d]: %v", i, err)
		}
		if c.mirrors() {
			if herr := c.learnTool(t); herr != nil {
				c.log.Warn("mcp: client: dropping a tool with invalid x-mcp-header annotations", "tool", t.Name, "err", herr)
				continue
			}
		}
		c.learnOutput(t)
		c.learnListed(t.Name, tr)
		res.Tools = append(res.Tools, t)
	}
	return res, nil
}

// learnTool records a tool's x-mcp-header annotations, or the reason
// they are invalid.
func (c *Client) learnTool(t *Tool) error {
	var hs []paramHeader
	var err error
	if schema, _ := t.InputSchema.(json.RawMessage); jsonrpc.KindOf(schema) == jsonrpc.KindObject {
		hs, err = paramHeaders(schema)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.tools, t.Name)
		c.badTools[t.Name] = err.Error()
		return err
	}
	delete(c.badTools, t.Name)
	if len(hs) == 0 {
		delete(c.tools, t.Name)
	} else {
		c.tools[t.Name] = hs
	}
	return nil
}

// mirrors reports whether the client mirrors tools/call arguments into
// Mcp-Param-* headers: over HTTP, in the modern era.
func (c *Client) mirrors() bool {
	era := c.era.Load()
	return c.headers && (era == nil || era.mirrorsHeaders())
}

// paramValues returns the Mcp-Param-* headers of a tools/call with
// arguments args (a JSON object): one per annotated argument that is
// present and not null, formatted by its JSON type.
func (c *Client) paramValues(tool string, args []byte) ([]paramValue, error) {
	c.mu.RLock()
	hs := c.tools[tool]
	bad, isBad := c.badTools[tool]
	c.mu.RUnlock()
	if isBad {
		return nil, &InvalidResponseError{Method: MethodToolsCall, Err: fmt.Errorf("%w: tool %q: %s", errInvalidTool, tool, bad)}
	}
	if len(hs) == 0 || args == nil {
		return nil, nil
	}
	out := make([]paramValue, 0, len(hs))
	for i := range hs {
		v := jsonrpc.TrimSpace(valueAt(args, hs[i].path))
		var s string
		switch jsonrpc.KindOf(v) {
		case jsonrpc.KindString:
			str, _ := jsonrpc.String(v)
			s = encodeHeaderValue(str)
		case jsonrpc.KindBool:
			s = string(v)
		case jsonrpc.KindNumber:
			s = headerNumber(v)
		default: // absent, null, or not a primitive: no header
			continue
		}
		out = append(out, paramValue{name: hs[i].name, value: s})
	}
	return out, nil
}

// headerNumber writes a JSON number as a header value: integers in
// decimal (1e3 and 1000.0 become 1000), anything else as written.
func headerNumber(v []byte) string {
	s := string(v)
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, ok := new(big.Float).SetString(s)
	if ok && f.IsInt() {
		i, _ := f.Int(nil)
		return i.String()
	}
	return s
}

// isParamHeaderMismatch reports whether err is a -32020 error about an
// Mcp-Param-* header: the server knows a newer inputSchema than the
// client, which should re-read tools/list and retry.
func isParamHeaderMismatch(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeHeaderMismatch &&
		strings.Contains(strings.ToLower(e.Message), strings.ToLower(headerParamPrefix))
}

// decodeCallToolResult decodes a complete tools/call result with the
// exact-key scanner (as the server decodes params), plain text blocks
// without encoding/json: the common result costs a few allocations.
func decodeCallToolResult(raw []byte) (*CallToolResult, error) {
	r := new(CallToolResult)
	var bad error
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		switch string(jsonrpc.Key(k)) {
		case "content":
			r.Content, bad = decodeContentArray(v)
		case "structuredContent":
			if jsonrpc.KindOf(v) != jsonrpc.KindNull {
				r.StructuredContent = json.RawMessage(bytes.Clone(v))
			}
		case "isError":
			switch string(jsonrpc.TrimSpace(v)) {
			case "true":
				r.IsError = true
			case "false", "null":
			default:
				bad = errors.New("isError is not a boolean")
			}
		case "_meta":
			if jsonrpc.KindOf(v) == jsonrpc.KindObject {
				r.Meta, bad = decodeOpenMeta(v)
			}
		}
		if bad != nil {
			return errStopScan
		}
		return nil
	})
	if bad != nil {
		return nil, &InvalidResponseError{Method: MethodToolsCall, Err: bad}
	}
	if r.Content == nil {
		r.Content = []Content{}
	}
	return r, nil
}

func decodeContentArray(v []byte) ([]Content, error) {
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindNull:
		return nil, nil
	case jsonrpc.KindArray:
	default:
		return nil, errors.New("content is not an array")
	}
	n := 0
	_ = jsonrpc.Elements(v, func([]byte) error { n++; return nil })
	out := make([]Content, 0, n)
	err := jsonrpc.Elements(v, func(e []byte) error {
		c, err := decodeContentFast(e)
		if err != nil {
			return fmt.Errorf("content[%d]: %w", len(out), err)
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// decodeContentFast decodes {"type":"text","text":...} directly and any
// other block with decodeContent.
func decodeContentFast(e []byte) (Content, error) {
	if jsonrpc.KindOf(e) != jsonrpc.KindObject {
		return nil, errors.New("content block is not an object")
	}
	var text []byte
	plain, isText := true, false
	_ = jsonrpc.Fields(e, func(k, v []byte) error {
		switch string(k) {
		case "type":
			isText = string(jsonrpc.TrimSpace(v)) == `"text"`
		case "text":
			text = v
		default:
			plain = false
		}
		return nil
	})
	if plain && isText {
		if s, ok := jsonString(text); ok {
			return &TextContent{Text: s}, nil
		}
	}
	return decodeContent(e)
}

// decodeElicitRequest decodes the params of elicitation/create with the
// exact-key scanner, keeping requestedSchema as the raw JSON received.
func decodeElicitRequest(params []byte) (*ElicitRequest, error) {
	if jsonrpc.KindOf(params) != jsonrpc.KindObject {
		return nil, errors.New("elicitation/create params is not an object")
	}
	e := new(ElicitRequest)
	var bad error
	_ = jsonrpc.Fields(params, func(k, v []byte) error {
		var ok bool
		switch string(jsonrpc.Key(k)) {
		case "mode":
			e.Mode, ok = jsonString(v)
		case "message":
			e.Message, ok = jsonString(v)
		case "url":
			e.URL, ok = jsonString(v)
		case "elicitationId":
			e.ElicitationID, ok = jsonString(v)
		case "requestedSchema":
			switch jsonrpc.KindOf(v) {
			case jsonrpc.KindObject:
				e.RequestedSchema, ok = json.RawMessage(bytes.Clone(v)), true
			case jsonrpc.KindNull:
				ok = true
			}
		default:
			return nil
		}
		if !ok {
			bad = fmt.Errorf("elicitation/create params: bad %s", jsonrpc.Key(k))
			return errStopScan
		}
		return nil
	})
	if bad != nil {
		return nil, bad
	}
	if e.Mode != "" && e.Mode != ElicitModeForm && e.Mode != ElicitModeURL {
		return nil, fmt.Errorf("unknown elicitation mode %q", e.Mode)
	}
	return e, nil
}

// appendElicitResult encodes an elicitation answer: action, and content
// in key order (strings, booleans, numbers and string arrays directly,
// anything else through encoding/json).
func appendElicitResult(dst []byte, r *ElicitResult) ([]byte, error) {
	dst = append(dst, `{"action":`...)
	dst = jsonrpc.AppendString(dst, string(r.Action))
	if r.Content != nil {
		dst = append(dst, `,"content":`...)
		var err error
		dst, err = appendSortedObject(dst, r.Content, func(dst []byte, k string, v any) ([]byte, error) {
			switch v := v.(type) {
			case string:
				return jsonrpc.AppendString(dst, v), nil
			case bool:
				return strconv.AppendBool(dst, v), nil
			case int:
				return strconv.AppendInt(dst, int64(v), 10), nil
			case int64:
				return strconv.AppendInt(dst, v, 10), nil
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("content %q: %w", k, err)
			}
			return append(dst, b...), nil
		})
		if err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}
