package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"
)

// ToolHandler handles tools/call for one tool. It returns a
// *CallToolResult, or an *InputRequiredResult when it needs answers from
// the client first. An *Error is sent as a JSON-RPC error; any other
// error becomes an isError result carrying the error's text, so that the
// model can see what went wrong.
type ToolHandler func(ctx context.Context, req *CallToolRequest) (ToolResponse, error)

// PromptHandler handles prompts/get for one prompt.
type PromptHandler func(ctx context.Context, req *GetPromptRequest) (PromptResponse, error)

// ResourceHandler reads one static resource. A static resource cannot
// ask for input: its handler returns a complete result only.
type ResourceHandler func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error)

// ResourceTemplateHandler reads the resources of a template. req.Var
// gives the template variables matched from the URI. It may ask for
// input.
type ResourceTemplateHandler func(ctx context.Context, req *ReadResourceRequest) (ResourceResponse, error)

// CompletionHandler answers completion/complete.
type CompletionHandler func(ctx context.Context, req *CompleteRequest) (*CompleteResult, error)

// ServerOptions configure a Server. The zero value is valid.
type ServerOptions struct {
	// Instructions are returned by server/discover.
	Instructions string
	// Logger receives the server's own logs. Nil means slog.Default().
	Logger *slog.Logger
	// Fanout shares list-changed and resource-updated notifications with
	// the other instances of a fleet (see Fanout; mcp/redisfanout). Nil
	// means this instance's changes reach only its own streams.
	Fanout Fanout
	// PageSize is the number of items per page of the list methods.
	// Zero means 100.
	PageSize int
	// ListTTL is the ttlMs hint of list results and server/discover.
	ListTTL time.Duration
	// CacheScope is the cacheScope of cacheable results that do not set
	// their own. Empty means "private", which is always safe.
	CacheScope CacheScope
	// Middleware wraps every method handler; the first element is the
	// outermost.
	Middleware []Middleware
	// Completions handles completion/complete; when nil the completions
	// capability is not advertised and the method answers with no values.
	Completions CompletionHandler
	// Capabilities, when set, is merged into what server/discover (and a
	// 2025 initialize) advertises: experimental and extensions entries,
	// and tools, prompts or resources to advertise before anything of
	// that kind is registered (otherwise each is advertised once one is).
	Capabilities *ServerCapabilities
	// RequestState configures the sealing of requestState, which is on
	// by default (see RequestStateOptions).
	RequestState RequestStateOptions
	// DisableLegacy serves 2026-07-28 only: initialize and the other
	// 2025-11-25 methods answer -32601, and SupportedVersions lists the
	// modern revision alone. By default a server is dual-era: a client
	// that opens with initialize gets a 2025-11-25 session (see
	// docs/design/legacy.md and HTTPOptions.Legacy).
	DisableLegacy bool
	// Tasks enables the tasks extension (io.modelcontextprotocol/tasks,
	// see StartTask and WithTaskSupport) with these bounds; nil leaves it
	// off: not advertised, and tasks/* answer -32601.
	Tasks *TaskOptions
}

// Server serves MCP requests to any number of clients over any number of
// transports. A modern (2026-07-28) server keeps no per-client state.
// Its methods are safe for concurrent use.
type Server struct {
	impl Implementation
	opts ServerOptions
	log  *slog.Logger

	handler MethodHandler

	mu        sync.RWMutex
	tools     map[string]*serverTool
	prompts   map[string]*serverPrompt
	resources map[string]*serverResource
	templates []*serverTemplate
	// sorted views, rebuilt on change; list pages are cut from them
	toolList     []*Tool
	promptList   []*Prompt
	resourceList []*Resource
	templateList []*ResourceTemplate

	serverInfoMeta []byte // `"_meta":{"io.modelcontextprotocol/serverInfo":{...}}`
	canAsk         bool   // the asking API needs the request-state boundary
	hub            hub
	legacy         legacyState  // 2025-11-25 sessions (legacy.go)
	fanout         *fanoutState // nil without ServerOptions.Fanout (fanout.go)
	tasks          *taskRuntime // nil without ServerOptions.Tasks (tasks.go)
	drain          drainState   // readiness and graceful stop (drain.go)
	exch           exchanges    // HTTP exchanges Close cuts short (http.go)
}

type serverTool struct {
	tool    *Tool
	handler ToolHandler
	headers []paramHeader // x-mcp-header annotations of the input schema
	task    TaskSupport   // WithTaskSupport (tasks.go)
}

type serverPrompt struct {
	prompt  *Prompt
	handler PromptHandler
}

type serverResource struct {
	resource *Resource
	handler  ResourceHandler
}

type serverTemplate struct {
	template *ResourceTemplate
	match    *uriTemplate
	handler  ResourceTemplateHandler
}

// NewServer returns a server that identifies itself as impl. It panics
// when opts.RequestState is invalid (bad keys, both keys and a codec, a
// negative TTL, shared keys on a server without a name or audience): a
// configuration error caught at start-up.
func NewServer(impl Implementation, opts *ServerOptions) *Server {
	s := &Server{
		impl:      impl,
		tools:     make(map[string]*serverTool),
		prompts:   make(map[string]*serverPrompt),
		resources: make(map[string]*serverResource),
	}
	if opts != nil {
		s.opts = *opts
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.opts.PageSize <= 0 {
		s.opts.PageSize = 100
	}
	if s.opts.CacheScope == "" {
		s.opts.CacheScope = CachePrivate
	}
	info, _ := json.Marshal(impl)
	s.serverInfoMeta = fmt.Appendf(nil, `"_meta":{%q:%s}`, MetaServerInfo, info)
	s.hub.init()
	if s.opts.Tasks != nil {
		s.tasks = newTaskRuntime(*s.opts.Tasks, s.log)
	}
	if s.opts.Fanout != nil {
		s.startFanout(s.opts.Fanout)
	}
	var h MethodHandler = s.route
	for _, m := range slices.Backward(s.opts.Middleware) {
		h = m(h)
	}
	// The asking API sits just inside the request-state boundary, which
	// sits outside everything else, so that middleware and handlers see
	// plaintext only.
	h = s.askMiddleware(h)
	b, err := newStateBoundary(s, s.opts.RequestState)
	if err != nil {
		panic(err)
	}
	if b != nil {
		h = b.middleware(h)
		s.canAsk = true
	}
	s.handler = h
	return s
}

// Implementation returns the server's name and version.
func (s *Server) Implementation() Implementation { return s.impl }

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// AddTool registers a tool with a low-level handler, replacing any tool
// of the same name, and notifies listening clients. It panics when the
// tool's name is invalid or its input schema is not a JSON object with
// type "object" or has an invalid x-mcp-header annotation, or when an
// option asks for task support on a server without ServerOptions.Tasks:
// those are programming errors.
func (s *Server) AddTool(t *Tool, h ToolHandler, opts ...ToolOption) {
	st, err := newServerTool(t, h)
	if err != nil {
		panic(err)
	}
	for _, o := range opts {
		o(st)
	}
	if st.task != TaskForbidden && s.tasks == nil {
		panic(fmt.Sprintf("mcp: tool %q: WithTaskSupport needs ServerOptions.Tasks", t.Name))
	}
	s.mu.Lock()
	s.tools[t.Name] = st
	s.toolList = rebuild(s.tools, func(v *serverTool) *Tool { return v.tool }, func(a, b *Tool) int { return cmpStr(a.Name, b.Name) })
	s.mu.Unlock()
	s.changed(changeTools, "")
}

func newServerTool(t *Tool, h ToolHandler) (*serverTool, error) {
	if t == nil || h == nil {
		return nil, fmt.Errorf("mcp: AddTool needs a tool and a handler")
	}
	if !toolNameRE.MatchString(t.Name) {
		return nil, fmt.Errorf("mcp: invalid tool name %q: 1 to 128 characters of [A-Za-z0-9_.-]", t.Name)
	}
	cp := *t
	schema, err := normalizeSchema(cp.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: tool %q: input schema: %w", t.Name, err)
	}
	cp.InputSchema = schema
	if cp.OutputSchema != nil {
		out, err := toRawJSON(cp.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %q: output schema: %w", t.Name, err)
		}
		cp.OutputSchema = out
	}
	headers, err := paramHeaders(schema)
	if err != nil {
		return nil, fmt.Errorf("mcp: tool %q: %w", t.Name, err)
	}
	return &serverTool{tool: &cp, handler: h, headers: headers}, nil
}

// RemoveTools removes the named tools and notifies listening clients.
func (s *Server) RemoveTools(names ...string) {
	s.mu.Lock()
	for _, n := range names {
		delete(s.tools, n)
	}
	s.toolList = rebuild(s.tools, func(v *serverTool) *Tool { return v.tool }, func(a, b *Tool) int { return cmpStr(a.Name, b.Name) })
	s.mu.Unlock()
	s.changed(changeTools, "")
}

// AddPrompt registers a prompt, replacing any of the same name, and
// notifies listening clients.
func (s *Server) AddPrompt(p *Prompt, h PromptHandler) {
	if p == nil || h == nil || p.Name == "" {
		panic("mcp: AddPrompt needs a named prompt and a handler")
	}
	cp := *p
	s.mu.Lock()
	s.prompts[p.Name] = &serverPrompt{prompt: &cp, handler: h}
	s.promptList = rebuild(s.prompts, func(v *serverPrompt) *Prompt { return v.prompt }, func(a, b *Prompt) int { return cmpStr(a.Name, b.Name) })
	s.mu.Unlock()
	s.changed(changePrompts, "")
}

// RemovePrompts removes the named prompts and notifies listening clients.
func (s *Server) RemovePrompts(names ...string) {
	s.mu.Lock()
	for _, n := range names {
		delete(s.prompts, n)
	}
	s.promptList = rebuild(s.prompts, func(v *serverPrompt) *Prompt { return v.prompt }, func(a, b *Prompt) int { return cmpStr(a.Name, b.Name) })
	s.mu.Unlock()
	s.changed(changePrompts, "")
}

// AddResource registers a static resource, replacing any with the same
// URI, and notifies listening clients.
func (s *Server) AddResource(r *Resource, h ResourceHandler) {
	if r == nil || h == nil || r.URI == "" || r.Name == "" {
		panic("mcp: AddResource needs a resource with a URI and a name, and a handler")
	}
	cp := *r
	s.mu.Lock()
	s.resources[r.URI] = &serverResource{resource: &cp, handler: h}
	s.resourceList = rebuild(s.resources, func(v *serverResource) *Resource { return v.resource }, func(a, b *Resource) int { return cmpStr(a.URI, b.URI) })
	s.mu.Unlock()
	s.changed(changeResources, "")
}

// RemoveResources removes static resources by URI.
func (s *Server) RemoveResources(uris ...string) {
	s.mu.Lock()
	for _, u := range uris {
		delete(s.resources, u)
	}
	s.resourceList = rebuild(s.resources, func(v *serverResource) *Resource { return v.resource }, func(a, b *Resource) int { return cmpStr(a.URI, b.URI) })
	s.mu.Unlock()
	s.changed(changeResources, "")
}

// AddResourceTemplate registers a resource template (RFC 6570, levels 1
// to 3 for matching). Templates are tried in registration order after
// the static resources. It panics on an invalid template.
func (s *Server) AddResourceTemplate(t *ResourceTemplate, h ResourceTemplateHandler) {
	if t == nil || h == nil || t.Name == "" {
		panic("mcp: AddResourceTemplate needs a named template and a handler")
	}
	m, err := parseURITemplate(t.URITemplate)
	if err != nil {
		panic(fmt.Sprintf("mcp: resource template %q: %v", t.URITemplate, err))
	}
	cp := *t
	s.mu.Lock()
	s.templates = slices.DeleteFunc(s.templates, func(x *serverTemplate) bool { return x.template.URITemplate == t.URITemplate })
	s.templates = append(s.templates, &serverTemplate{template: &cp, match: m, handler: h})
	s.templateList = make([]*ResourceTemplate, len(s.templates))
	for i, x := range s.templates {
		s.templateList[i] = x.template
	}
	s.mu.Unlock()
	s.changed(changeResources, "")
}

// ResourceUpdated tells clients listening for uri that it changed.
func (s *Server) ResourceUpdated(uri string) { s.changed(changeResource, uri) }

func rebuild[K comparable, V any, T any](m map[K]V, get func(V) T, cmp func(a, b T) int) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, get(v))
	}
	slices.SortFunc(out, cmp)
	return out
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// capabilities returns what server/discover advertises.
func (s *Server) capabilities() ServerCapabilities {
	var c ServerCapabilities
	if s.opts.Capabilities != nil {
		c = *s.opts.Capabilities
	}
	// Advertise what is registered (at the time of asking), or what the
	// options force, e.g. for a server that adds its tools later.
	s.mu.RLock()
	hasTools, hasPrompts := len(s.tools) > 0, len(s.prompts) > 0
	hasResources := len(s.resources) > 0 || len(s.templates) > 0
	s.mu.RUnlock()
	if c.Tools == nil && hasTools {
		c.Tools = &ListChangedCapability{ListChanged: true}
	}
	if c.Prompts == nil && hasPrompts {
		c.Prompts = &ListChangedCapability{ListChanged: true}
	}
	if c.Resources == nil && hasResources {
		c.Resources = &ResourcesCapability{Subscribe: true, ListChanged: true}
	}
	if s.opts.Completions != nil {
		c.Completions = &struct{}{}
	}
	c.Logging = &struct{}{}
	if s.tasks != nil { // tasks extension (tasks.go); copy, never write opts' map
		ext := make(map[string]json.RawMessage, len(c.Extensions)+1)
		for k, v := range c.Extensions {
			ext[k] = v
		}
		ext[ExtensionTasks] = json.RawMessage(`{}`)
		c.Extensions = ext
	}
	return c
}
