package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ToolHandler handles tools/call for one tool. It returns a
// *CallToolResult, or an *InputRequiredResult when it needs answers from
// the client first. An *Error is sent as a JSON-RPC error; any other
// error becomes an isError result carrying the error's text, so that the
// model can see what went wrong.
type ToolHandler func(ctx context.Context, req *CallToolRequest) (ToolResponse, error)

// The handlers of prompts and resources (the exported signatures spell
// them out, so that go doc shows them where they are used).
type (
	promptHandler           = func(ctx context.Context, req *GetPromptRequest) (PromptResponse, error)
	resourceHandler         = func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error)
	resourceTemplateHandler = func(ctx context.Context, req *ReadResourceRequest) (ResourceResponse, error)
)

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
	// SessionStore keeps the 2025-era sessions (Streamable HTTP and
	// HTTP+SSE) where every instance of a fleet finds them (see
	// SessionStore). Nil means each session lives in this process.
	SessionStore SessionStore
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
	Middleware []ServerMiddleware
	// Completions handles completion/complete; when nil the completions
	// capability is not advertised and the method answers with no values.
	Completions func(ctx context.Context, req *CompleteRequest) (*CompleteResult, error)
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
	// RefuseLegacyInputRequired answers a low-level handler's own
	// InputRequiredResult on a session of an earlier revision with the
	// -32603 error those revisions prescribe, instead of the default: the
	// server sends its input requests to the client as live requests and
	// calls the handler again with the answers as InputResponses and its
	// plaintext state as RequestState, as a 2026-07-28 client would retry
	// (up to LegacyInputRounds rounds; see docs/design/legacy.md).
	RefuseLegacyInputRequired bool
	// LegacyInputRounds bounds those rounds; zero means 10.
	LegacyInputRounds int
	// LegacyQuestionTimeout bounds how long a live question of a session
	// of an earlier revision (Elicit, Sample, ListRoots, and the bridge's
	// live requests) waits for the client's answer. Past it the client
	// is sent notifications/cancelled for the question and the asking
	// call returns a *ClientRequestError (code -32001, "no answer
	// within ...") that matches context.DeadlineExceeded; the handler
	// goes on with that error. Zero means 5 minutes: time for a person
	// to fill a form or approve a sampling request, while a client that
	// never answers holds its request (and its slot of
	// LegacyHTTPOptions.MaxRequestsPerSession) no longer than that.
	LegacyQuestionTimeout time.Duration
	// OutgoingMiddleware wraps the requests the server sends to clients
	// (the live elicitation/create, sampling/createMessage and
	// roots/list of sessions of earlier revisions); the first element is
	// outermost.
	OutgoingMiddleware []ServerRequestMiddleware
	// Observer, when set, is told of sessions, streams, rejected states,
	// single-use store outages and what extensions report (see Event),
	// synchronously: it must return quickly. Requests are seen by
	// Middleware instead.
	Observer func(Event)
	// Visible, when set, decides per request which tools, prompts,
	// resources and resource templates exist for it (by the principal,
	// a tenant header read with RequestHeader, anything on ctx): kind
	// says what name is (a tool or prompt name, a resource URI, a
	// template's URI template). A hidden feature is left out of its list
	// (pages stay consistent: cursors name keys), and calling, getting,
	// reading or completing it is answered exactly as for one that does
	// not exist. With Visible set every list is cacheScope "private", as
	// is a resources/read result that sets no scope of its own, and a
	// notification of a change (a list change, a resource update) is sent
	// only when the changed feature is visible to the request that opened
	// the listen stream, or, on a session of an earlier revision, to its
	// initialize request, whose context (values, RequestHeader) is kept
	// for that (see docs/design/extensions.md for what a stream can and
	// cannot be spared). It is called on request goroutines, and for
	// notifications on the goroutine that made the change, so it must be
	// quick and safe for concurrent use; a panic hides the feature.
	Visible func(ctx context.Context, kind FeatureKind, name string) bool
}

// Server serves MCP requests to any number of clients over any number of
// transports. A modern (2026-07-28) server keeps no per-client state.
// Its methods are safe for concurrent use.
type Server struct {
	impl Implementation
	opts ServerOptions
	log  *slog.Logger

	handler ServerHandler

	// What is registered (registry.go): tools and prompts by name,
	// resources by URI, templates by URI template in registration order.
	tools     *registry[*serverTool, *Tool]
	prompts   *registry[*serverPrompt, *Prompt]
	resources *registry[*serverResource, *Resource]
	templates *registry[*serverTemplate, *ResourceTemplate]

	serverInfoMeta []byte // `"_meta":{"io.modelcontextprotocol/serverInfo":{...}}`
	canAsk         bool   // the asking API needs the request-state boundary
	hub            hub
	legacy         legacyState   // 2025-11-25 sessions (legacy.go)
	fanout         *fanoutState  // nil without ServerOptions.Fanout (fanout.go)
	drain          drainState    // readiness and graceful stop (drain.go)
	fleet          *sessionFleet // nil without ServerOptions.SessionStore (session_fleet.go)
	exch           exchanges     // HTTP exchanges Close cuts short (http.go)

	// Extensions and custom methods (extension.go): a copy-on-write
	// table, read without a lock.
	extMu   sync.Mutex
	onClose []func() // Server.OnClose (extension_seam.go), under extMu
	ext     atomic.Pointer[extensionTable]
	// completers is set once a prompt or template registers a completer
	// (completion.go): the completions capability is advertised.
	completers atomic.Bool
	// idempotent is set once a tool that takes an idempotency key is
	// registered (idempotency.go): until then calls skip the check.
	idempotent atomic.Bool

	hooks atomic.Pointer[testHooks] // set by tests only (era.go)
}

type serverTool struct {
	tool    *Tool
	handler ToolHandler
	headers []paramHeader // x-mcp-header annotations of the input schema
	// defaults are the input schema's top-level property defaults,
	// applied to the arguments the call leaves out (schema.go).
	defaults []argDefault
	wraps    []func(ToolHandler) ToolHandler // WrapTool, applied after the other options (extension_seam.go)
	// idempotent: the tool's Meta declares IdempotencyMetaKey
	// (idempotency.go).
	idempotent bool
}

type serverPrompt struct {
	prompt   *Prompt
	handler  promptHandler
	complete map[string]argumentCompleter // by argument (completion.go)
}

type serverResource struct {
	resource *Resource
	handler  resourceHandler
}

type serverTemplate struct {
	template *ResourceTemplate
	match    *uriTemplate
	handler  resourceTemplateHandler
	complete map[string]argumentCompleter // by variable (completion.go)
}

func (t *serverTool) key() string                   { return t.tool.Name }
func (t *serverTool) listed() *Tool                 { return t.tool }
func (p *serverPrompt) key() string                 { return p.prompt.Name }
func (p *serverPrompt) listed() *Prompt             { return p.prompt }
func (r *serverResource) key() string               { return r.resource.URI }
func (r *serverResource) listed() *Resource         { return r.resource }
func (t *serverTemplate) key() string               { return t.template.URITemplate }
func (t *serverTemplate) listed() *ResourceTemplate { return t.template }

// NewServer returns a server that identifies itself as impl. It panics
// when opts.RequestState is invalid (bad keys, both keys and a codec, a
// negative TTL, shared keys on a server without a name or audience): a
// configuration error caught at start-up.
func NewServer(impl Implementation, opts *ServerOptions) *Server {
	s := &Server{impl: impl}
	s.tools = newRegistry[*serverTool](false, func(k []string) { s.changed(change{kind: changeTools, feature: FeatureTool, names: k}) })
	s.prompts = newRegistry[*serverPrompt](false, func(k []string) { s.changed(change{kind: changePrompts, feature: FeaturePrompt, names: k}) })
	s.resources = newRegistry[*serverResource](false, func(k []string) {
		s.changed(change{kind: changeResources, feature: FeatureResource, names: k})
	})
	s.templates = newRegistry[*serverTemplate](true, func(k []string) {
		s.changed(change{kind: changeResources, feature: FeatureResourceTemplate, names: k})
	})
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
	if s.opts.Fanout != nil {
		s.startFanout(s.opts.Fanout)
	}
	if s.opts.SessionStore != nil {
		s.startFleet(s.opts.SessionStore)
	}
	var h ServerHandler = s.route
	for _, m := range slices.Backward(s.opts.Middleware) {
		h = m(h)
	}
	// The asking API sits just inside the request-state boundary, which
	// sits outside everything else, so that middleware and handlers see
	// plaintext only.
	h = s.askMiddleware(h)
	idem, err := newIdempotency(s, s.opts.RequestState)
	if err != nil {
		panic(err)
	}
	h = idem.middleware(h)
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
// type "object" or has an invalid x-mcp-header annotation: those are
// programming errors.
func (s *Server) AddTool(t *Tool, h ToolHandler, opts ...ToolOption) {
	st, err := newServerTool(t, h)
	if err != nil {
		panic(err)
	}
	for _, o := range opts {
		o(st)
	}
	st.applyWraps()
	if st.idempotent {
		s.idempotent.Store(true)
	}
	s.tools.add(st)
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
	defaults, err := argDefaults(schema)
	if err != nil {
		return nil, fmt.Errorf("mcp: tool %q: input schema: %w", t.Name, err)
	}
	return &serverTool{tool: &cp, handler: h, headers: headers, defaults: defaults, idempotent: cp.Meta[IdempotencyMetaKey] == true}, nil
}

// RemoveTools removes the named tools and, when any of them was
// registered, notifies listening clients (once for the call).
func (s *Server) RemoveTools(names ...string) { s.tools.remove(names...) }

// AddPrompt registers a prompt with the handler of its prompts/get,
// replacing any of the same name, and notifies listening clients. Options add completers of its arguments
// (WithCompletion); it panics when one names an argument the prompt
// does not declare.
func (s *Server) AddPrompt(p *Prompt, h func(ctx context.Context, req *GetPromptRequest) (PromptResponse, error), opts ...FeatureOption) {
	if p == nil || h == nil || p.Name == "" {
		panic("mcp: AddPrompt needs a named prompt and a handler")
	}
	cp := *p
	sp := &serverPrompt{prompt: &cp, handler: h}
	if c := s.completersFor(opts, "prompt "+p.Name, func(name string) bool {
		return slices.ContainsFunc(cp.Arguments, func(a PromptArgument) bool { return a.Name == name })
	}); c != nil {
		sp.complete = c
	}
	s.prompts.add(sp)
}

// RemovePrompts removes the named prompts and, when any of them was
// registered, notifies listening clients (once for the call).
func (s *Server) RemovePrompts(names ...string) { s.prompts.remove(names...) }

// AddResource registers a static resource with the handler that reads
// it, replacing any with the same URI, and notifies listening clients. A
// static resource cannot ask for input: its handler returns a complete
// result only.
func (s *Server) AddResource(r *Resource, h func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error)) {
	if r == nil || h == nil || r.URI == "" || r.Name == "" {
		panic("mcp: AddResource needs a resource with a URI and a name, and a handler")
	}
	cp := *r
	s.resources.add(&serverResource{resource: &cp, handler: h})
}

// RemoveResources removes static resources by URI and, when any of them
// was registered, notifies listening clients (once for the call).
func (s *Server) RemoveResources(uris ...string) { s.resources.remove(uris...) }

// AddResourceTemplate registers a resource template (RFC 6570, levels 1
// to 3 for matching), replacing any with the same URI template, and
// notifies listening clients. Templates are tried, and listed, in
// registration order after the static resources; a replacement counts
// as a new registration and comes last. Options add completers of its
// variables (WithCompletion). The handler reads the resources of the
// template: req.Var gives the variables matched from the URI; it may ask
// for input. It panics on an invalid template, or an option naming a
// variable the template does not have.
func (s *Server) AddResourceTemplate(t *ResourceTemplate, h func(ctx context.Context, req *ReadResourceRequest) (ResourceResponse, error), opts ...FeatureOption) {
	if t == nil || h == nil || t.Name == "" {
		panic("mcp: AddResourceTemplate needs a named template and a handler")
	}
	m, err := parseURITemplate(t.URITemplate)
	if err != nil {
		panic(fmt.Sprintf("mcp: resource template %q: %v", t.URITemplate, err))
	}
	cp := *t
	st := &serverTemplate{template: &cp, match: m, handler: h}
	st.complete = s.completersFor(opts, "resource template "+t.URITemplate, m.hasVar)
	s.templates.add(st)
}

// RemoveResourceTemplates removes resource templates by URI template
// and, when any of them was registered, notifies listening clients
// (once for the call).
func (s *Server) RemoveResourceTemplates(uriTemplates ...string) { s.templates.remove(uriTemplates...) }

// ResourceUpdated tells clients listening for uri that it changed.
func (s *Server) ResourceUpdated(uri string) {
	s.changed(change{kind: changeResource, uri: uri, feature: FeatureResource, names: []string{uri}})
}

// capabilities returns what server/discover advertises.
func (s *Server) capabilities() ServerCapabilities {
	var c ServerCapabilities
	if s.opts.Capabilities != nil {
		c = *s.opts.Capabilities
	}
	// Advertise what is registered (at the time of asking), or what the
	// options force, e.g. for a server that adds its tools later.
	hasTools, hasPrompts := s.tools.len() > 0, s.prompts.len() > 0
	hasResources := s.resources.len() > 0 || s.templates.len() > 0
	if c.Tools == nil && hasTools {
		c.Tools = &ListChangedCapability{ListChanged: true}
	}
	if c.Prompts == nil && hasPrompts {
		c.Prompts = &ListChangedCapability{ListChanged: true}
	}
	if c.Resources == nil && hasResources {
		c.Resources = &ResourcesCapability{Subscribe: true, ListChanged: true}
	}
	if s.opts.Completions != nil || s.completers.Load() {
		c.Completions = &struct{}{}
	}
	c.Logging = &struct{}{}
	if reg := s.extensions(); reg != nil { // AddExtension, AddMethod (extension.go); copy, never write opts' map
		ext := make(map[string]json.RawMessage, len(c.Extensions)+len(reg))
		for k, v := range c.Extensions {
			ext[k] = v
		}
		for k, v := range reg {
			ext[k] = v
		}
		c.Extensions = ext
	}
	return c
}
