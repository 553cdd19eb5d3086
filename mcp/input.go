package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Methods of the three kinds of input request.
const (
	MethodElicit        = "elicitation/create"
	MethodCreateMessage = "sampling/createMessage"
	MethodListRoots     = "roots/list"
)

// InputRequest is one question a server asks inside an
// InputRequiredResult: *ElicitRequest, *CreateMessageRequest or
// *ListRootsRequest. On the wire it is a bare {"method", "params"} object.
type InputRequest interface {
	// InputMethod returns the request's method name.
	InputMethod() string
	isInputRequest()
}

// Elicitation modes.
const (
	ElicitModeForm = "form"
	ElicitModeURL  = "url"
)

// ElicitRequest asks the user for structured input (form mode) or to
// visit a URL (URL mode).
type ElicitRequest struct {
	// Mode is "form" (the default when empty) or "url".
	Mode    string `json:"mode,omitempty"`
	Message string `json:"message"`
	// RequestedSchema is the flat JSON Schema of the form (form mode):
	// any value that marshals to a JSON object, such as a
	// map[string]any or a json.RawMessage.
	RequestedSchema any `json:"requestedSchema,omitempty"`
	// URL is the page to open (URL mode).
	URL string `json:"url,omitempty"`
	// ElicitationID names a URL-mode elicitation of a 2025-11-25
	// session, as notifications/elicitation/complete does later. The
	// modern era has none.
	ElicitationID string `json:"elicitationId,omitempty"`
}

// ModelPreferences guide the client's choice of model.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// ModelHint names a model or model family.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// ToolChoice controls tool use in sampling.
type ToolChoice struct {
	Mode string `json:"mode,omitempty"` // "auto", "required" or "none"
}

// SamplingMessage is one message of a sampling conversation. Content
// holds one block or several; one block is sent as an object, several as
// an array.
type SamplingMessage struct {
	Role    Role      `json:"role"`
	Content []Content `json:"content"`
	Meta    Meta      `json:"_meta,omitempty"`
}

// MarshalJSON writes a single block as an object.
func (m SamplingMessage) MarshalJSON() ([]byte, error) {
	var content any = m.Content
	if len(m.Content) == 1 {
		content = m.Content[0]
	} else if m.Content == nil {
		content = []Content{}
	}
	return json.Marshal(struct {
		Role    Role `json:"role"`
		Content any  `json:"content"`
		Meta    Meta `json:"_meta,omitempty"`
	}{m.Role, content, m.Meta})
}

// UnmarshalJSON accepts one block or an array.
func (m *SamplingMessage) UnmarshalJSON(b []byte) error {
	var w struct {
		Role    Role            `json:"role"`
		Content json.RawMessage `json:"content"`
		Meta    Meta            `json:"_meta"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	cs, _, err := decodeContentOneOrMany(w.Content)
	if err != nil {
		return err
	}
	m.Role, m.Content, m.Meta = w.Role, cs, w.Meta
	return nil
}

// CreateMessageRequest asks the client to sample its LLM.
type CreateMessageRequest struct {
	Messages         []SamplingMessage `json:"messages"`
	MaxTokens        int               `json:"maxTokens"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	IncludeContext   string            `json:"includeContext,omitempty"`
	Temperature      *float64          `json:"temperature,omitempty"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	Metadata         any               `json:"metadata,omitempty"`
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitempty"`
	Tools            []*Tool           `json:"tools,omitempty"`
	ToolChoice       *ToolChoice       `json:"toolChoice,omitempty"`
}

// ListRootsRequest asks for the client's roots.
type ListRootsRequest struct{}

func (*ElicitRequest) InputMethod() string        { return MethodElicit }
func (*CreateMessageRequest) InputMethod() string { return MethodCreateMessage }
func (*ListRootsRequest) InputMethod() string     { return MethodListRoots }

func (*ElicitRequest) isInputRequest()        {}
func (*CreateMessageRequest) isInputRequest() {}
func (*ListRootsRequest) isInputRequest()     {}

// marshalInputRequest writes the bare {"method","params"} form.
func marshalInputRequest(r InputRequest) ([]byte, error) {
	var params any = r
	switch v := r.(type) {
	case *ListRootsRequest:
		params = struct{}{}
	case *ElicitRequest:
		cp := *v
		switch {
		case cp.Mode == "" && cp.URL != "" && cp.RequestedSchema == nil:
			cp.Mode = ElicitModeURL
		case cp.Mode == "":
			cp.Mode = ElicitModeForm
		}
		switch cp.Mode {
		case ElicitModeURL:
			if cp.URL == "" || cp.RequestedSchema != nil {
				return nil, errors.New("a URL-mode elicitation needs a URL and no requested schema")
			}
		case ElicitModeForm:
			if cp.URL != "" {
				return nil, errors.New("a form-mode elicitation has no URL")
			}
			if cp.RequestedSchema == nil {
				cp.RequestedSchema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
		default:
			return nil, fmt.Errorf("unknown elicitation mode %q", cp.Mode)
		}
		params = &cp
	case nil:
		return nil, errors.New("nil input request")
	}
	return json.Marshal(struct {
		Method string `json:"method"`
		Params any    `json:"params"`
	}{r.InputMethod(), params})
}

// decodeInputRequest decodes a bare input request by its method. An
// unknown or missing method is an error.
func decodeInputRequest(raw []byte) (InputRequest, error) {
	var w struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	var r InputRequest
	switch w.Method {
	case MethodElicit:
		var p struct {
			Mode            string          `json:"mode"`
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
			URL             string          `json:"url"`
		}
		if err := json.Unmarshal(w.Params, &p); err != nil {
			return nil, fmt.Errorf("elicitation/create params: %w", err)
		}
		// The schema stays the server's exact JSON (no float rounding,
		// no reordering).
		e := &ElicitRequest{Mode: p.Mode, Message: p.Message, URL: p.URL}
		if p.RequestedSchema != nil {
			e.RequestedSchema = p.RequestedSchema
		}
		if e.Mode != "" && e.Mode != ElicitModeForm && e.Mode != ElicitModeURL {
			return nil, fmt.Errorf("unknown elicitation mode %q", e.Mode)
		}
		r = e
	case MethodCreateMessage:
		c := new(CreateMessageRequest)
		if err := json.Unmarshal(w.Params, c); err != nil {
			return nil, fmt.Errorf("sampling/createMessage params: %w", err)
		}
		r = c
	case MethodListRoots:
		r = new(ListRootsRequest)
	case "":
		return nil, errors.New("input request without method")
	default:
		return nil, fmt.Errorf("unknown input request method %q", w.Method)
	}
	return r, nil
}

// ElicitAction is the user's response to an elicitation.
type ElicitAction string

// Elicitation actions.
const (
	ElicitAccept  ElicitAction = "accept"
	ElicitDecline ElicitAction = "decline"
	ElicitCancel  ElicitAction = "cancel"
)

// ElicitResult answers an ElicitRequest. Content is present only for an
// accepted form; its values are strings, numbers, booleans or string
// arrays.
type ElicitResult struct {
	Action  ElicitAction   `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// CreateMessageResult answers a CreateMessageRequest.
type CreateMessageResult struct {
	Role       Role      `json:"role"`
	Content    []Content `json:"content"`
	Model      string    `json:"model"`
	StopReason string    `json:"stopReason,omitempty"`
	Meta       Meta      `json:"_meta,omitempty"`
}

// MarshalJSON writes a single block as an object.
func (r *CreateMessageResult) MarshalJSON() ([]byte, error) {
	var content any = r.Content
	if len(r.Content) == 1 {
		content = r.Content[0]
	} else if r.Content == nil {
		content = []Content{}
	}
	return json.Marshal(struct {
		Role       Role   `json:"role"`
		Content    any    `json:"content"`
		Model      string `json:"model"`
		StopReason string `json:"stopReason,omitempty"`
		Meta       Meta   `json:"_meta,omitempty"`
	}{r.Role, content, r.Model, r.StopReason, r.Meta})
}

// UnmarshalJSON accepts one block or an array.
func (r *CreateMessageResult) UnmarshalJSON(b []byte) error {
	var w struct {
		Role       Role            `json:"role"`
		Content    json.RawMessage `json:"content"`
		Model      *string         `json:"model"`
		StopReason string          `json:"stopReason"`
		Meta       Meta            `json:"_meta"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Model == nil {
		return errors.New("sampling result without model")
	}
	if w.Role != RoleUser && w.Role != RoleAssistant {
		return fmt.Errorf("sampling result with invalid role %q", w.Role)
	}
	cs, _, err := decodeContentOneOrMany(w.Content)
	if err != nil {
		return err
	}
	r.Role, r.Content, r.Model, r.StopReason, r.Meta = w.Role, cs, *w.Model, w.StopReason, w.Meta
	return nil
}

// Root is a directory or file the client exposes.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
	Meta Meta   `json:"_meta,omitempty"`
}

// ListRootsResult answers a ListRootsRequest.
type ListRootsResult struct {
	Roots []Root `json:"roots"`
}

// ErrNoInputResponse reports that the client sent no answer under a key.
var ErrNoInputResponse = errors.New("mcp: no input response under this key")

// InputResponses are the client's answers on a retry, keyed like the
// inputRequests of the previous round. Each entry stays raw until the
// handler decodes it as the kind of request it sent under that key: an
// answer is never interpreted by guessing from its shape.
//
// A low-level handler (one that builds its own InputRequiredResult)
// reads these as the client sent them: nothing ties an entry to a
// question the handler asked, under that key or at all, and nothing has
// checked it against the question's schema. The decoders below check the
// shape of one kind of answer only (Elicit: an action and primitive
// content members, no repeated member); they do not know the form, so
// Content may hold fields the form never declared, values outside its
// enums or bounds, or names differing from a field's only in case. Such a
// handler must validate every value it reads, and treat a key it did not
// ask for as absent. The asking API (Elicit, ElicitForm, ElicitURL,
// Sample, ListRoots) does all of that itself: it takes an answer only for
// the exact question the sealed state says was asked, and only once it
// passes that question's checks.
type InputResponses map[string]json.RawMessage

// Elicit decodes the answer under key as an elicitation result. It
// returns ErrNoInputResponse when there is none, and an error when the
// entry is not a valid ElicitResult: not an object, an action missing or
// unknown, a member differing from action or content only in case, a
// repeated member, or content that is not an object of primitive values
// and string lists. The content is not checked against any form (see
// InputResponses).
func (r InputResponses) Elicit(key string) (*ElicitResult, error) {
	raw, ok := r[key]
	if !ok || jsonrpc.KindOf(raw) == jsonrpc.KindNull {
		return nil, ErrNoInputResponse
	}
	return decodeElicitResult(raw)
}

func decodeElicitResult(raw []byte) (*ElicitResult, error) {
	r, _, err := decodeElicit(raw)
	return r, err
}

// decodeElicit decodes an elicitation answer with the exact-key scanner
// and also returns the raw "content" member (nil when absent).
func decodeElicit(raw []byte) (*ElicitResult, json.RawMessage, error) {
	raw = jsonrpc.TrimSpace(raw)
	if jsonrpc.KindOf(raw) != jsonrpc.KindObject || !jsonrpc.Valid(raw) {
		return nil, nil, errors.New("elicitation answer is not an object")
	}
	res := &ElicitResult{}
	var content json.RawMessage
	var hasAction bool
	var bad error
	_ = jsonrpc.Fields(raw, func(rk, v []byte) error {
		k := jsonrpc.Key(rk)
		switch string(k) {
		case "action":
			a, ok := jsonrpc.String(v)
			if !ok || hasAction {
				bad = errors.New("elicitation answer: action must be one string")
				return bad
			}
			res.Action, hasAction = ElicitAction(a), true
		case "content":
			if content != nil {
				bad = errors.New("elicitation answer: repeated content")
				return bad
			}
			content = json.RawMessage(jsonrpc.TrimSpace(v))
		default:
			if jsonrpc.EqualFold(k, "action") || jsonrpc.EqualFold(k, "content") {
				bad = errors.New("elicitation answer: a member differs from action or content only in case")
				return bad
			}
		}
		return nil
	})
	if bad != nil {
		return nil, nil, bad
	}
	if !hasAction {
		return nil, nil, errors.New("elicitation answer without action")
	}
	switch res.Action {
	case ElicitAccept, ElicitDecline, ElicitCancel:
	default:
		return nil, nil, fmt.Errorf("elicitation answer with unknown action %q", res.Action)
	}
	switch jsonrpc.KindOf(content) {
	case jsonrpc.KindInvalid:
		return res, nil, nil
	case jsonrpc.KindNull:
		return res, nil, nil
	case jsonrpc.KindObject:
	default:
		return nil, nil, errors.New("elicitation answer: content must be an object")
	}
	res.Content = map[string]any{}
	err := jsonrpc.Fields(content, func(rk, v []byte) error {
		k := string(jsonrpc.Key(rk))
		if _, dup := res.Content[k]; dup {
			return fault(k, "repeated", fmt.Sprintf("the answer holds the field %s twice", fieldName(k)))
		}
		switch jsonrpc.KindOf(v) {
		case jsonrpc.KindString:
			s, _ := jsonrpc.String(v)
			res.Content[k] = s
		case jsonrpc.KindBool:
			res.Content[k] = string(jsonrpc.TrimSpace(v)) == "true"
		case jsonrpc.KindNumber:
			n := jsonrpc.TrimSpace(v)
			if i, err := jsonrpc.ParseInt(n, 64); err == nil {
				res.Content[k] = i
			} else if f, err := jsonrpc.ParseNumber(n); err == nil {
				res.Content[k] = f
			} else {
				return fault(k, "type", fieldName(k)+" holds a number out of range")
			}
		case jsonrpc.KindArray:
			var ss []string
			if err := json.Unmarshal(v, &ss); err != nil {
				return fault(k, "type", fieldName(k)+" must be a string, a number, a boolean or a list of strings (got a list of other values)")
			}
			res.Content[k] = ss
		default:
			return fault(k, "type", fieldName(k)+" must be a string, a number, a boolean or a list of strings (got "+jsonKindName(v)+")")
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return res, content, nil
}

// Sampling decodes the answer under key as a sampling result.
func (r InputResponses) Sampling(key string) (*CreateMessageResult, error) {
	raw, ok := r[key]
	if !ok || jsonrpc.KindOf(raw) == jsonrpc.KindNull {
		return nil, ErrNoInputResponse
	}
	if jsonrpc.KindOf(raw) != jsonrpc.KindObject {
		return nil, errors.New("sampling answer is not an object")
	}
	res := new(CreateMessageResult)
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, fmt.Errorf("sampling answer: %w", err)
	}
	return res, nil
}

// Roots decodes the answer under key as a roots/list result.
func (r InputResponses) Roots(key string) (*ListRootsResult, error) {
	raw, ok := r[key]
	if !ok || jsonrpc.KindOf(raw) == jsonrpc.KindNull {
		return nil, ErrNoInputResponse
	}
	if jsonrpc.KindOf(raw) != jsonrpc.KindObject {
		return nil, errors.New("roots answer is not an object")
	}
	var w struct {
		Roots *[]Root `json:"roots"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("roots answer: %w", err)
	}
	if w.Roots == nil {
		return nil, errors.New("roots answer without roots")
	}
	for i, root := range *w.Roots {
		if root.URI == "" {
			return nil, fmt.Errorf("roots answer: root %d without uri", i)
		}
	}
	return &ListRootsResult{Roots: *w.Roots}, nil
}

// InputRequiredResult is the interim answer to tools/call, prompts/get or
// resources/read: the server needs the answers to InputRequests (keyed by
// names it chose) and/or wants RequestState echoed on the retry. At least
// one of the two must be set. On the server, RequestState is plaintext:
// the request-state boundary seals it on the way out.
type InputRequiredResult struct {
	InputRequests map[string]InputRequest
	RequestState  string
	Meta          Meta
	// askState is the asking API's state (answers so far, questions
	// pending); the boundary seals it in place of RequestState.
	askState []byte
}

// MarshalJSON writes resultType "input_required", the bare input requests
// in key order, and requestState when set.
func (r *InputRequiredResult) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"resultType":"input_required"`...)
	if r.InputRequests != nil {
		b = append(b, `,"inputRequests":`...)
		var err error
		b, err = appendSortedObject(b, r.InputRequests, func(dst []byte, k string, ir InputRequest) ([]byte, error) {
			rb, err := marshalInputRequest(ir)
			if err != nil {
				return nil, fmt.Errorf("input request %q: %w", k, err)
			}
			return append(dst, rb...), nil
		})
		if err != nil {
			return nil, err
		}
	}
	if r.RequestState != "" {
		b = append(b, `,"requestState":`...)
		b = jsonrpc.AppendString(b, r.RequestState)
	}
	if r.Meta != nil {
		mb, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"_meta":`...)
		b = append(b, mb...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes each input request by its method.
func (r *InputRequiredResult) UnmarshalJSON(b []byte) error {
	var w struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  *string                    `json:"requestState"`
		Meta          Meta                       `json:"_meta"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.ResultType != string(ResultInputRequired) {
		return fmt.Errorf("resultType %q is not input_required", w.ResultType)
	}
	if w.InputRequests == nil && w.RequestState == nil {
		return errors.New("input_required result with neither inputRequests nor requestState")
	}
	r.InputRequests = nil
	if w.InputRequests != nil {
		r.InputRequests = make(map[string]InputRequest, len(w.InputRequests))
		for k, raw := range w.InputRequests {
			ir, err := decodeInputRequest(raw)
			if err != nil {
				return fmt.Errorf("inputRequests[%q]: %w", k, err)
			}
			r.InputRequests[k] = ir
		}
	}
	r.RequestState = ""
	if w.RequestState != nil {
		r.RequestState = *w.RequestState
	}
	r.Meta = w.Meta
	return nil
}

func (r *InputRequiredResult) validate() error {
	if len(r.InputRequests) == 0 && r.RequestState == "" && r.askState == nil {
		return errors.New("InputRequiredResult with neither inputRequests nor requestState")
	}
	for k, ir := range r.InputRequests {
		if ir == nil {
			return fmt.Errorf("InputRequiredResult: nil input request under %q", k)
		}
	}
	return nil
}

// ToolResponse is what a low-level tool handler returns: *CallToolResult
// or *InputRequiredResult. The two cannot be mixed in one response.
type ToolResponse interface{ isToolResponse() }

// PromptResponse is *GetPromptResult or *InputRequiredResult.
type PromptResponse interface{ isPromptResponse() }

// ResourceResponse is *ReadResourceResult or *InputRequiredResult.
type ResourceResponse interface{ isResourceResponse() }

func (*InputRequiredResult) isToolResponse()     {}
func (*InputRequiredResult) isPromptResponse()   {}
func (*InputRequiredResult) isResourceResponse() {}

// appendSortedObject writes m as a JSON object with its keys in order,
// each value written by value.
func appendSortedObject[V any](dst []byte, m map[string]V, value func(dst []byte, k string, v V) ([]byte, error)) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonrpc.AppendString(dst, k)
		dst = append(dst, ':')
		var err error
		if dst, err = value(dst, k, m[k]); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}
