package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// ServerHandler handles one decoded request. params is the method's
// params type (*CallToolRequest, *ListRequest, ..., *ExtensionRequest for
// a custom method). The result is the method's result type, or
// *InputRequiredResult for tools/call, prompts/get, resources/read and
// carrier custom methods, or an *ExtensionResult of an extension's
// result type (mcp/tasks: a tools/call that became a task; see Result).
type ServerHandler func(ctx context.Context, method string, params Params) (Result, error)

// ServerMiddleware wraps a ServerHandler. The request-state boundary, the
// asking API and logging are middleware; ServerOptions.ServerMiddleware adds
// the user's, inside those two.
type ServerMiddleware func(next ServerHandler) ServerHandler

// methodSpec describes a method the server answers.
type methodSpec struct {
	decode paramsDecoder
	// carrier methods may answer with an InputRequiredResult.
	carrier bool
}

var methods = map[string]*methodSpec{
	MethodDiscover:              {decode: decodeDiscover},
	MethodToolsList:             {decode: decodeList},
	MethodToolsCall:             {decode: decodeCallTool, carrier: true},
	methodPromptsList:           {decode: decodeList},
	MethodPromptsGet:            {decode: decodeGetPrompt, carrier: true},
	MethodResourcesList:         {decode: decodeList},
	methodResourceTemplatesList: {decode: decodeList},
	MethodResourcesRead:         {decode: decodeReadResource, carrier: true},
	methodComplete:              {decode: decodeCompleteParams},
	methodSubscriptionsListen:   {decode: decodeListen},
	// Methods outside the specification (mcp/tasks' among
	// them) are the server's own: AddMethod (extension.go).
}

// requestScope is what a handler's context knows about its request.
type requestScope struct {
	context.Context // the request's context; Value(scopeKey{}) is the scope
	s               *Server
	id              jsonrpc.ID
	method          string
	meta            *RequestMeta
	out             outbound
	era             serverEra // the protocol era of the request (era.go)
	round           int       // the leg of a multi round-trip call (state.go); 0 for other methods
	// asker answers the asking API for this request's handler; modern is
	// the 2026-07-28 asker, kept here to save an allocation per call.
	asker  asker
	modern askScope
	// logs queues what a LogHandler sends for this request, once one
	// did (loghandler.go); the request's end drains it.
	logs atomic.Pointer[logQueue]
}

type scopeKey struct{}

// Value makes the scope findable from any context derived from it.
func (sc *requestScope) Value(key any) any {
	if key == (scopeKey{}) {
		return sc
	}
	return sc.Context.Value(key)
}

func scopeFrom(ctx context.Context) *requestScope {
	sc, _ := ctx.Value(scopeKey{}).(*requestScope)
	return sc
}

// outbound carries the messages a request sends before its response:
// notifications related to it (progress, logging) or, for
// subscriptions/listen, the stream's notifications.
type outbound interface {
	notify(method string, params any) error
}

// route is the innermost handler: it calls the registered handler.
func (s *Server) route(ctx context.Context, method string, params Params) (Result, error) {
	switch p := params.(type) {
	case *CallToolRequest:
		return s.callTool(ctx, p)
	case *GetPromptRequest:
		return s.getPrompt(ctx, p)
	case *ReadResourceRequest:
		return s.readResource(ctx, p)
	case *ListRequest:
		return s.list(ctx, method, p)
	case *discoverRequest:
		return s.discover(), nil
	case *CompleteRequest:
		return s.complete(ctx, p)
	case *ListenRequest:
		return s.listen(ctx, p)
	case *ExtensionRequest: // custom methods, mcp/tasks' tasks/* among them (extension.go)
		return s.callMethod(ctx, p)
	default:
		if sc := scopeFrom(ctx); sc != nil {
			return sc.era.extra(ctx, method, params) // methods of one era only
		}
	}
	return nil, jsonrpc.NewError(CodeMethodNotFound, "Method not found: "+method)
}

func (s *Server) callTool(ctx context.Context, p *CallToolRequest) (Result, error) {
	t, _ := s.tools.get(p.Name)
	if t == nil || !s.visible(ctx, FeatureTool, p.Name) {
		return nil, jsonrpc.NewErrorData(CodeInvalidParams, "Unknown tool: "+p.Name, map[string]string{"name": p.Name})
	}
	if s.opts.Visible != nil { // the Mcp-Param-* checks wait for the visibility (visible.go)
		if e := s.checkToolHeaders(ctx, p); e != nil {
			return nil, e
		}
	}
	return s.runTool(ctx, t, p)
}

// runTool runs a tool's handler on the request's goroutine, with the
// input schema's defaults applied to the arguments left out.
func (s *Server) runTool(ctx context.Context, t *serverTool, p *CallToolRequest) (Result, error) {
	if len(t.defaults) > 0 {
		if args, ok := withDefaults(p.Arguments, t.defaults); ok {
			cp := *p
			cp.Arguments = args
			p = &cp
		}
	}
	resp, err := t.handler(ctx, p)
	return s.toolResult(ctx, p.Name, resp, err)
}

// toolResult maps a tool handler's outcome to the response.
func (s *Server) toolResult(ctx context.Context, name string, res ToolResponse, err error) (Result, error) {
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrInputRequired) {
			return nil, err
		}
		r := ErrorResult(err.Error())
		if d := answerData(err); d != nil {
			r.Meta = Meta{InvalidAnswerMetaKey: d}
		}
		return r, nil
	}
	switch r := res.(type) {
	case *CallToolResult:
		if r == nil {
			break
		}
		if r.Content == nil {
			r.Content = []Content{}
		}
		return r, nil
	case *InputRequiredResult:
		if r == nil {
			break
		}
		return r, nil
	case *ExtensionResult: // an extension's result type (WrapTool, extension_seam.go)
		if r == nil {
			break
		}
		return r, nil
	}
	return nil, fmt.Errorf("tool %q handler returned no result", name)
}

func (s *Server) getPrompt(ctx context.Context, p *GetPromptRequest) (Result, error) {
	pr, _ := s.prompts.get(p.Name)
	if pr == nil || !s.visible(ctx, FeaturePrompt, p.Name) {
		return nil, jsonrpc.NewErrorData(CodeInvalidParams, "Unknown prompt: "+p.Name, map[string]string{"name": p.Name})
	}
	for _, a := range pr.prompt.Arguments {
		if a.Required {
			if _, ok := p.Arguments[a.Name]; !ok {
				return nil, jsonrpc.NewError(CodeInvalidParams, "Invalid params: missing required argument \""+a.Name+"\" of prompt "+p.Name)
			}
		}
	}
	res, err := pr.handler(ctx, p)
	if err != nil {
		return nil, askOutcomeError(err)
	}
	switch r := res.(type) {
	case *GetPromptResult:
		if r == nil {
			break
		}
		if r.Messages == nil {
			r.Messages = []PromptMessage{}
		}
		return r, nil
	case *InputRequiredResult:
		if r == nil {
			break
		}
		return r, nil
	}
	return nil, fmt.Errorf("prompt %q handler returned no result", p.Name)
}

// ResourceNotFoundError is the -32602 error for an unknown resource URI,
// with the URI in data as SEP-2164 asks.
func ResourceNotFoundError(uri string) *Error {
	return jsonrpc.NewErrorData(CodeInvalidParams, "Resource not found: "+uri, map[string]string{"uri": uri})
}

func (s *Server) readResource(ctx context.Context, p *ReadResourceRequest) (Result, error) {
	r, _ := s.resources.get(p.URI)
	if r != nil && !s.visible(ctx, FeatureResource, p.URI) {
		r = nil // hidden: as if it did not exist, templates included
	}
	var tmpl *serverTemplate
	if r == nil {
		for _, t := range s.templates.inOrder() {
			if vars, ok := t.match.match(p.URI); ok && s.visible(ctx, FeatureResourceTemplate, t.template.URITemplate) {
				tmpl, p.vars = t, vars
				break
			}
		}
	}
	var resp ResourceResponse
	var err error
	switch {
	case r != nil:
		var res *ReadResourceResult
		res, err = r.handler(ctx, p)
		if res != nil {
			resp = res
		}
	case tmpl != nil:
		resp, err = tmpl.handler(ctx, p)
	default:
		return nil, ResourceNotFoundError(p.URI)
	}
	if err != nil {
		return nil, askOutcomeError(err)
	}
	switch res := resp.(type) {
	case *ReadResourceResult:
		if res == nil {
			break
		}
		if len(res.Contents) == 0 {
			// SEP-2164: never an empty contents array.
			return nil, ResourceNotFoundError(p.URI)
		}
		if res.CacheScope == "" {
			res.CacheScope = s.defaultScope()
		}
		return res, nil
	case *InputRequiredResult:
		if res == nil {
			break
		}
		return res, nil
	}
	return nil, fmt.Errorf("resource %q handler returned no result", p.URI)
}

func (s *Server) discover() *DiscoverResult {
	return &DiscoverResult{
		SupportedVersions: s.SupportedVersions(),
		Capabilities:      s.capabilities(),
		Instructions:      s.opts.Instructions,
		Cache:             Cache{TTLMs: s.opts.ListTTL.Milliseconds(), CacheScope: s.opts.CacheScope},
	}
}

// SupportedVersions lists the protocol versions the server accepts: the
// modern revision (per-request _meta) first, then the legacy ones served
// through initialize and sessions (2025-11-25, 2025-06-18), unless
// ServerOptions.DisableLegacy.
func (s *Server) SupportedVersions() []string {
	if s.opts.DisableLegacy {
		return []string{LatestProtocolVersion}
	}
	return append([]string{LatestProtocolVersion}, legacyVersions...)
}

func (s *Server) complete(ctx context.Context, p *CompleteRequest) (Result, error) {
	var own argumentCompleter // the prompt's or template's (completion.go)
	switch p.Ref.Type {
	case "ref/prompt":
		pr, ok := s.prompts.get(p.Ref.Name)
		if !ok || !s.visible(ctx, FeaturePrompt, p.Ref.Name) {
			return nil, jsonrpc.NewError(CodeInvalidParams, "Unknown prompt: "+p.Ref.Name)
		}
		own = pr.complete[p.Argument.Name]
	case "ref/resource":
		if t, ok := s.templates.get(p.Ref.URI); ok && s.visible(ctx, FeatureResourceTemplate, p.Ref.URI) {
			own = t.complete[p.Argument.Name]
		}
	}
	if own != nil {
		return runCompleter(ctx, own, p)
	}
	if s.opts.Completions == nil {
		return &CompleteResult{Completion: Completion{Values: []string{}}}, nil
	}
	res, err := s.opts.Completions(ctx, p)
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &CompleteResult{}
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	if len(res.Completion.Values) > 100 {
		res.Completion.Values = res.Completion.Values[:100]
		res.Completion.HasMore = true
	}
	return res, nil
}

// ReportProgress sends notifications/progress for the request ctx
// belongs to, if its client asked for progress (a progressToken in
// _meta). total <= 0 means unknown. It is a no-op outside a request.
func ReportProgress(ctx context.Context, progress, total float64, message string) error {
	sc := scopeFrom(ctx)
	if sc == nil || sc.meta == nil || sc.meta.ProgressToken == nil || sc.out == nil {
		return nil
	}
	p := &ProgressParams{ProgressToken: sc.meta.ProgressToken, Progress: progress, Message: message}
	if total > 0 {
		p.Total = &total
	}
	return sc.out.notify(notificationProgress, p)
}

// logMessage sends notifications/message for the request ctx belongs
// to, when the client asked for logs at level or below (_meta logLevel).
// Without a requested level nothing is sent. Users log to the client
// with NewLogHandler, the one way (tests send fixed lines with this).
func logMessage(ctx context.Context, level LoggingLevel, logger string, data any) error {
	sc := scopeFrom(ctx)
	if sc == nil || sc.meta == nil || sc.meta.LogLevel == "" || sc.out == nil {
		return nil
	}
	if level.rank() < sc.meta.LogLevel.rank() {
		return nil
	}
	return sc.out.notify(notificationMessage, &LoggingMessageParams{Level: level, Logger: logger, Data: data})
}

// removedMethods were part of 2025-11-25 and are gone from 2026-07-28.
var removedMethods = map[string]bool{
	"initialize":                true,
	"ping":                      true,
	"logging/setLevel":          true,
	"resources/subscribe":       true,
	"resources/unsubscribe":     true,
	"tasks/get":                 true,
	"tasks/list":                true,
	"tasks/result":              true,
	"tasks/cancel":              true,
	"notifications/initialized": true,
}

func methodNotFound(method string) *Error {
	if removedMethods[method] {
		return jsonrpc.NewError(CodeMethodNotFound, "Method not found: "+method+" was removed in protocol revision "+LatestProtocolVersion)
	}
	if strings.TrimSpace(method) == "" {
		return jsonrpc.NewError(CodeMethodNotFound, "Method not found")
	}
	return jsonrpc.NewError(CodeMethodNotFound, "Method not found: "+method)
}
