package mcp

import (
	"encoding/json"
)

// Method names of 2026-07-28 client requests and server notifications.
const (
	MethodDiscover              = "server/discover"
	MethodToolsList             = "tools/list"
	MethodToolsCall             = "tools/call"
	methodPromptsList           = "prompts/list"
	MethodPromptsGet            = "prompts/get"
	MethodResourcesList         = "resources/list"
	methodResourceTemplatesList = "resources/templates/list"
	MethodResourcesRead         = "resources/read"
	methodComplete              = "completion/complete"
	methodSubscriptionsListen   = "subscriptions/listen"

	notificationCancelled           = "notifications/cancelled"
	notificationProgress            = "notifications/progress"
	notificationMessage             = "notifications/message"
	NotificationResourceUpdated     = "notifications/resources/updated"
	notificationResourceListChanged = "notifications/resources/list_changed"
	NotificationToolListChanged     = "notifications/tools/list_changed"
	notificationPromptListChanged   = "notifications/prompts/list_changed"
	NotificationSubscriptionsAck    = "notifications/subscriptions/acknowledged"
)

// Params is implemented by every request-params type (*CallToolRequest,
// *ListRequest, ...). It gives middleware the shared _meta envelope.
type Params interface {
	RequestMeta() *RequestMeta
}

// stateKind records what the requestState member held on the wire.
type stateKind uint8

const (
	stateAbsent stateKind = iota // absent or null
	stateString
	stateInvalid // present but not a string
)

// retryParams is embedded by the three request types that may carry
// answers to an InputRequiredResult.
type retryParams struct {
	// InputResponses are the client's answers on a retry.
	InputResponses InputResponses `json:"inputResponses,omitempty"`
	// RequestState is the state from the previous round. On the server
	// it is the plaintext the handler wrote (the boundary unseals it);
	// on the client it is the opaque string the server sent.
	RequestState string `json:"requestState,omitempty"`
	state        stateKind
	// askState is the asking API's part of the unsealed state.
	askState []byte
}

// HasRequestState reports whether the request carried a requestState.
func (p *retryParams) HasRequestState() bool { return p.state == stateString }

// SetRequestState replaces the request state (used by the request-state
// boundary after unsealing).
func (p *retryParams) SetRequestState(s string) { p.RequestState, p.state = s, stateString }

// CallToolRequest holds the params of tools/call.
type CallToolRequest struct {
	Meta RequestMeta `json:"_meta"`
	Name string      `json:"name"`
	// Arguments is the raw JSON object of arguments (nil when absent).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Params is the params object as received, members this package
	// does not define included (an extension reads its own there). It is
	// not sent.
	Params json.RawMessage `json:"-"`
	retryParams
}

// GetPromptRequest holds the params of prompts/get.
type GetPromptRequest struct {
	Meta      RequestMeta       `json:"_meta"`
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	retryParams
	argsRaw json.RawMessage
}

// ReadResourceRequest holds the params of resources/read.
type ReadResourceRequest struct {
	Meta RequestMeta `json:"_meta"`
	URI  string      `json:"uri"`
	retryParams
	vars map[string]string
}

// Var returns the value of a template variable matched from the URI
// (empty for static resources and unknown names).
func (p *ReadResourceRequest) Var(name string) string { return p.vars[name] }

// ListRequest holds the params of the paginated list methods. A nil
// Cursor asks for the first page; an empty cursor is a valid cursor.
type ListRequest struct {
	Meta   RequestMeta `json:"_meta"`
	Cursor *string     `json:"cursor,omitempty"`
}

// discoverRequest holds the params of server/discover.
type discoverRequest struct {
	Meta RequestMeta `json:"_meta"`
}

// CompleteReference names what is being completed: a prompt
// (Type "ref/prompt", Name) or a resource template (Type "ref/resource", URI).
type CompleteReference struct {
	Type  string `json:"type"`
	Name  string `json:"name,omitempty"`
	Title string `json:"title,omitempty"`
	URI   string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext carries already-resolved arguments.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteRequest holds the params of completion/complete.
type CompleteRequest struct {
	Meta     RequestMeta       `json:"_meta"`
	Ref      CompleteReference `json:"ref"`
	Argument CompleteArgument  `json:"argument"`
	Context  *CompleteContext  `json:"context,omitempty"`
}

// SubscriptionFilter says which notifications a listen stream wants.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// ListenRequest holds the params of subscriptions/listen.
type ListenRequest struct {
	Meta          RequestMeta        `json:"_meta"`
	Notifications SubscriptionFilter `json:"notifications"`
}

func (p *CallToolRequest) RequestMeta() *RequestMeta     { return &p.Meta }
func (p *GetPromptRequest) RequestMeta() *RequestMeta    { return &p.Meta }
func (p *ReadResourceRequest) RequestMeta() *RequestMeta { return &p.Meta }
func (p *ListRequest) RequestMeta() *RequestMeta         { return &p.Meta }
func (p *discoverRequest) RequestMeta() *RequestMeta     { return &p.Meta }
func (p *CompleteRequest) RequestMeta() *RequestMeta     { return &p.Meta }
func (p *ListenRequest) RequestMeta() *RequestMeta       { return &p.Meta }

// Tool describes a tool the client can call.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments (root type
	// "object"): any value that marshals to a JSON object. Properties may
	// carry "x-mcp-header" to be mirrored in an Mcp-Param-* header.
	InputSchema any `json:"inputSchema"`
	// OutputSchema, when set, is the JSON Schema of structuredContent.
	OutputSchema any              `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	Meta         Meta             `json:"_meta,omitempty"`

	// listing holds members added to the tool's tools/list entry on
	// sessions, by negotiated version (ToolOption.WithListing).
	listing map[string]json.RawMessage
}

// ToolAnnotations are hints about a tool's behaviour. Nil means unknown.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// CallToolResult is the complete result of tools/call.
type CallToolResult struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	// IsError marks a tool-level failure the model should see (as opposed
	// to a protocol error).
	IsError bool `json:"isError,omitempty"`
	Meta    Meta `json:"_meta,omitempty"`
}

func (*CallToolResult) isToolResponse() {}

// UnmarshalJSON decodes the content blocks.
func (r *CallToolResult) UnmarshalJSON(b []byte) error {
	var w struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
		Meta              Meta              `json:"_meta"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	cs, err := decodeContentList(w.Content)
	if err != nil {
		return err
	}
	if cs == nil {
		cs = []Content{}
	}
	r.Content, r.IsError, r.Meta = cs, w.IsError, w.Meta
	r.StructuredContent = nil
	if w.StructuredContent != nil {
		r.StructuredContent = w.StructuredContent
	}
	return nil
}

// TextResult returns a CallToolResult holding one text block.
func TextResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{&TextContent{Text: text}}}
}

// ErrorResult returns an isError CallToolResult holding one text block.
func ErrorResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{&TextContent{Text: text}}, IsError: true}
}

// Prompt describes a prompt template.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Meta        Meta             `json:"_meta,omitempty"`
}

// PromptArgument describes one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    Role    `json:"role"`
	Content Content `json:"content"`
}

// UnmarshalJSON decodes the content block by its type.
func (m *PromptMessage) UnmarshalJSON(b []byte) error {
	var w struct {
		Role    Role            `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	c, err := decodeContent(w.Content)
	if err != nil {
		return err
	}
	m.Role, m.Content = w.Role, c
	return nil
}

// GetPromptResult is the complete result of prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        Meta            `json:"_meta,omitempty"`
}

func (*GetPromptResult) isPromptResponse() {}

// Resource describes a directly readable resource.
type Resource struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI
// template.
type ResourceTemplate struct {
	URITemplate string       `json:"uriTemplate"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// Cache hints of a cacheable result. A zero CacheScope is sent as the
// server's default. Revisions before 2026-07-28 have no cache hints: a
// server sends none on their sessions, and a result a client receives on
// one has zero hints.
type Cache struct {
	TTLMs      int64      `json:"ttlMs"`
	CacheScope CacheScope `json:"cacheScope"`
}

// ReadResourceResult is the complete result of resources/read.
type ReadResourceResult struct {
	Contents []*ResourceContents `json:"contents"`
	Cache
	Meta Meta `json:"_meta,omitempty"`
}

func (*ReadResourceResult) isResourceResponse() {}

// ListToolsResult is one page of tools/list.
type ListToolsResult struct {
	Tools      []*Tool `json:"tools"`
	NextCursor *string `json:"nextCursor,omitempty"`
	Cache
	Meta Meta `json:"_meta,omitempty"`
}

// ListPromptsResult is one page of prompts/list.
type ListPromptsResult struct {
	Prompts    []*Prompt `json:"prompts"`
	NextCursor *string   `json:"nextCursor,omitempty"`
	Cache
	Meta Meta `json:"_meta,omitempty"`
}

// ListResourcesResult is one page of resources/list.
type ListResourcesResult struct {
	Resources  []*Resource `json:"resources"`
	NextCursor *string     `json:"nextCursor,omitempty"`
	Cache
	Meta Meta `json:"_meta,omitempty"`
}

// ListResourceTemplatesResult is one page of resources/templates/list.
type ListResourceTemplatesResult struct {
	ResourceTemplates []*ResourceTemplate `json:"resourceTemplates"`
	NextCursor        *string             `json:"nextCursor,omitempty"`
	Cache
	Meta Meta `json:"_meta,omitempty"`
}

// Completion holds completion values.
type Completion struct {
	Values  []string `json:"values"`
	Total   *int     `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// CompleteResult is the result of completion/complete.
type CompleteResult struct {
	Completion Completion `json:"completion"`
	Meta       Meta       `json:"_meta,omitempty"`
}

// DiscoverResult is the result of server/discover.
type DiscoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	Cache
	Meta Meta `json:"_meta,omitempty"`
}

// ProgressParams are the params of notifications/progress.
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         *float64        `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// LoggingMessageParams are the params of notifications/message.
type LoggingMessageParams struct {
	Level  LoggingLevel `json:"level"`
	Logger string       `json:"logger,omitempty"`
	Data   any          `json:"data"`
}

func (l LoggingLevel) valid() bool { return l.rank() >= 0 }

// Methods and notifications of 2025-11-25 that 2026-07-28 removed.
const (
	methodInitialize  = "initialize"
	methodPing        = "ping"
	methodSetLevel    = "logging/setLevel"
	methodSubscribe   = "resources/subscribe"
	methodUnsubscribe = "resources/unsubscribe"

	notificationInitialized         = "notifications/initialized"
	notificationRootsListChanged    = "notifications/roots/list_changed"
	notificationElicitationComplete = "notifications/elicitation/complete"
)

// Result is what a ServerHandler (and so every middleware) returns: one
// of this package's result types. The set is closed, so that the SDK can
// encode every result in the era its request was served in (resultType,
// the server's identity and cache hints on 2026-07-28; none of those on
// an earlier revision) without a type switch at each step:
//
//   - *CallToolResult, *GetPromptResult, *ReadResourceResult: the complete
//     result of a call;
//   - *InputRequiredResult: the call needs input (tools/call, prompts/get
//     and resources/read, and carrier custom methods, only);
//   - *ExtensionResult: the value of a custom method (AddMethod), or a
//     tools/call answered with an extension's result type (WrapTool);
//   - *ListToolsResult, *ListPromptsResult, *ListResourcesResult,
//     *ListResourceTemplatesResult, *CompleteResult, *DiscoverResult;
//   - EmptyResult, for methods whose result has no members.
//
// A middleware passes a Result on, or returns one of its own of these
// types; it cannot invent others.
type Result interface {
	// ownMeta reports whether the result sets its own _meta; the server's
	// identity goes into _meta otherwise.
	ownMeta() bool
}
