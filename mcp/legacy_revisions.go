package mcp

import (
	"strconv"
)

// The protocol revisions a legacy session can negotiate, as data: one
// descriptor per revision says what the revision has, and the legacy era
// consults it where the revisions differ (the initialize result, the
// encoding of results and notifications, the server-to-client requests,
// JSON-RPC batches). Nothing else in the legacy era tests a version
// string. The facts come from each revision's schema and changelog
// (docs/design/legacy.md, "Revisions").

// revision describes one earlier protocol revision. A false field is
// something the revision does not define: the server leaves it out of
// what it sends (or refuses to send it), since a client of that revision
// cannot read it.
type revision struct {
	version string

	// batches: JSON-RPC batches (added in 2025-03-26, removed in
	// 2025-06-18). 2024-11-05 did not define them either.
	batches bool

	// Added in 2025-03-26.
	completions     bool // the completions server capability
	toolAnnotations bool // Tool.annotations
	audio           bool // audio content blocks
	progressMessage bool // notifications/progress message

	// Added in 2025-06-18.
	elicitation      bool // elicitation/create (form mode)
	structuredOutput bool // Tool.outputSchema, CallToolResult.structuredContent
	titles           bool // title on tools, prompts, prompt arguments, resources, templates, resource links, serverInfo
	resourceLinks    bool // resource_link content blocks
	meta             bool // _meta on tools, prompts, resources, templates, content blocks, resource contents
	lastModified     bool // Annotations.lastModified

	// Added in 2025-11-25.
	urlElicitation bool // elicitation mode "url" (and the mode member), notifications/elicitation/complete
	samplingTools  bool // sampling with tools; several content blocks and _meta on a sampling message
	icons          bool // icons on tools, prompts, resources, templates, resource links, serverInfo
	serverDetails  bool // serverInfo description and websiteUrl
}

var (
	rev20251125 = &revision{version: "2025-11-25",
		completions: true, toolAnnotations: true, audio: true, progressMessage: true,
		elicitation: true, structuredOutput: true, titles: true, resourceLinks: true, meta: true, lastModified: true,
		urlElicitation: true, samplingTools: true, icons: true, serverDetails: true}
	rev20250618 = &revision{version: "2025-06-18",
		completions: true, toolAnnotations: true, audio: true, progressMessage: true,
		elicitation: true, structuredOutput: true, titles: true, resourceLinks: true, meta: true, lastModified: true}
	rev20250326 = &revision{version: "2025-03-26", batches: true,
		completions: true, toolAnnotations: true, audio: true, progressMessage: true}
	rev20241105 = &revision{version: "2024-11-05"}
)

// legacyRevisions are the revisions a legacy initialize may negotiate,
// newest first: an unknown requested version gets the first.
var legacyRevisions = []*revision{rev20251125, rev20250618, rev20250326, rev20241105}

// legacyVersions are their version strings, newest first.
var legacyVersions = func() []string {
	vs := make([]string, len(legacyRevisions))
	for i, r := range legacyRevisions {
		vs[i] = r.version
	}
	return vs
}()

// negotiateRevision is the answer to an initialize that requests
// version: that revision when the server has it, else the newest.
func negotiateRevision(version string) *revision {
	for _, r := range legacyRevisions {
		if r.version == version {
			return r
		}
	}
	return legacyRevisions[0]
}

// full reports whether the revision has everything the server's types
// can carry, so results are sent as the handlers made them.
func (r *revision) full() bool { return r == rev20251125 }

// since returns the oldest revision that has what has reports.
func since(has func(*revision) bool) string {
	v := ""
	for _, r := range legacyRevisions {
		if has(r) {
			v = r.version
		}
	}
	return v
}

// NotInRevisionError reports that a handler asked for something the
// session's protocol revision does not define, so the server could not
// send it: elicitation on a 2025-03-26 or 2024-11-05 session, URL-mode
// elicitation before 2025-11-25, sampling with tools (or several content
// blocks in one message) before 2025-11-25, audio in a sampling message on
// 2024-11-05. The asking API (Elicit, ElicitForm, ElicitURL, Sample)
// returns it. A tool handler that returns it produces an isError result;
// a prompt or resource handler a JSON-RPC error (-32600) with the same
// message, which Unwrap returns.
type NotInRevisionError struct {
	Revision string // the session's protocol revision
	Method   string // the server-to-client request that was not sent
	Feature  string // what the revision lacks
	Since    string // the earliest revision that has it
	wire     *Error // the JSON-RPC error, outside tools/call
}

func (e *NotInRevisionError) Error() string {
	return "cannot send " + e.Method + " to the client: protocol revision " + e.Revision + " has no " + e.Feature + " (added in " + e.Since + ")"
}

// Unwrap returns the JSON-RPC error the request is answered with, on a
// method without an isError result.
func (e *NotInRevisionError) Unwrap() error {
	if e.wire == nil {
		return nil
	}
	return e.wire
}

// notIn builds the error for a request of method (the originating
// request's method decides how it is reported).
func (r *revision) notIn(method, asked, feature string, has func(*revision) bool) error {
	e := &NotInRevisionError{Revision: r.version, Method: asked, Feature: feature, Since: since(has)}
	if method != MethodToolsCall {
		e.wire = jsonrpcError(CodeInvalidRequest, "Invalid request: "+e.Error())
	}
	return e
}

// refuses reports why the revision cannot carry the question q, asked by
// a request of method; nil when it can.
func (r *revision) refuses(method string, q *question) error {
	asked := q.req.InputMethod()
	switch v := q.req.(type) {
	case *ElicitRequest:
		if !r.elicitation {
			return r.notIn(method, asked, "elicitation", func(r *revision) bool { return r.elicitation })
		}
		if !r.urlElicitation && isURLElicitation(v) {
			return r.notIn(method, asked, "URL-mode elicitation", func(r *revision) bool { return r.urlElicitation })
		}
	case *CreateMessageRequest:
		if r.samplingTools {
			return nil
		}
		samplingTools := func(r *revision) bool { return r.samplingTools }
		if v.Tools != nil || v.ToolChoice != nil {
			return r.notIn(method, asked, "sampling with tools", samplingTools)
		}
		for _, m := range v.Messages {
			if len(m.Content) != 1 {
				return r.notIn(method, asked, "sampling message with "+strconv.Itoa(len(m.Content))+" content blocks (one block per message)", samplingTools)
			}
			switch m.Content[0].(type) {
			case *TextContent, *ImageContent:
			case *AudioContent:
				if !r.audio {
					return r.notIn(method, asked, "audio content", func(r *revision) bool { return r.audio })
				}
			default:
				return r.notIn(method, asked, m.Content[0].ContentType()+" content in a sampling message", samplingTools)
			}
		}
	}
	return nil
}

func isURLElicitation(e *ElicitRequest) bool {
	return e.Mode == ElicitModeURL || (e.Mode == "" && e.URL != "" && e.RequestedSchema == nil)
}

// samplingParams is a sampling request as a revision before 2025-11-25
// has it: one content block per message (checked by refuses), no _meta on
// messages, no tools.
func (r *revision) samplingParams(v *CreateMessageRequest) *CreateMessageRequest {
	if r.samplingTools {
		return v
	}
	cp := *v
	cp.Messages = make([]SamplingMessage, len(v.Messages))
	for i, m := range v.Messages {
		cp.Messages[i] = SamplingMessage{Role: m.Role, Content: r.contents(m.Content)}
	}
	return &cp
}

// ---- what the server sends, per revision ----

// capabilities are the server's capabilities as the revision defines
// them. Capabilities are an open set in every revision, so the
// extensions a server declares are kept (hosts of extensions such as
// MCP Apps negotiate them in initialize), but for those that serve the
// 2026-07-28 era only (Server.sessionCapabilities leaves them out).
func (r *revision) capabilities(c ServerCapabilities) ServerCapabilities {
	if len(c.Extensions) == 0 {
		c.Extensions = nil
	}
	if !r.completions {
		c.Completions = nil
	}
	return c
}

// implementation is serverInfo as the revision defines it.
func (r *revision) implementation(i Implementation) Implementation {
	if !r.titles {
		i.Title = ""
	}
	if !r.icons {
		i.Icons = nil
	}
	if !r.serverDetails {
		i.Description, i.WebsiteURL = "", ""
	}
	return i
}

// each is xs with f applied to every element, in a new slice.
func each[T any](xs []T, f func(T) T) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// result returns res as the revision defines it: a shallow copy without
// the members the revision lacks, or res itself when nothing needs to go.
func (r *revision) result(res Result) Result {
	res = r.trimmed(res)
	if v, ok := res.(*ListToolsResult); ok {
		return r.listedTools(v) // ToolOption.WithListing (extension_seam.go)
	}
	return res
}

// trimmed is res without the members the revision lacks.
func (r *revision) trimmed(res Result) Result {
	if r.full() {
		return res
	}
	switch v := res.(type) {
	case *CallToolResult:
		cp := *v
		if !r.structuredOutput {
			cp.StructuredContent = nil
		}
		cp.Content = r.contents(v.Content)
		return &cp
	case *ListToolsResult:
		cp := *v
		cp.Tools = each(v.Tools, r.tool)
		return &cp
	case *ListPromptsResult:
		cp := *v
		cp.Prompts = each(v.Prompts, r.prompt)
		return &cp
	case *GetPromptResult:
		cp := *v
		cp.Messages = each(v.Messages, func(m PromptMessage) PromptMessage {
			return PromptMessage{Role: m.Role, Content: r.content(m.Content)}
		})
		return &cp
	case *ListResourcesResult:
		cp := *v
		cp.Resources = each(v.Resources, r.resource)
		return &cp
	case *ListResourceTemplatesResult:
		cp := *v
		cp.ResourceTemplates = each(v.ResourceTemplates, r.template)
		return &cp
	case *ReadResourceResult:
		cp := *v
		cp.Contents = each(v.Contents, r.resourceContents)
		return &cp
	}
	return res
}

func (r *revision) tool(t *Tool) *Tool {
	if t == nil {
		return nil
	}
	cp := *t
	r.describe(&cp.Title, &cp.Icons, &cp.Meta)
	if !r.structuredOutput {
		cp.OutputSchema = nil
	}
	if !r.toolAnnotations {
		cp.Annotations = nil
	}
	return &cp
}

func (r *revision) prompt(p *Prompt) *Prompt {
	if p == nil {
		return nil
	}
	cp := *p
	r.describe(&cp.Title, &cp.Icons, &cp.Meta)
	if !r.titles && p.Arguments != nil {
		cp.Arguments = each(p.Arguments, func(a PromptArgument) PromptArgument {
			a.Title = ""
			return a
		})
	}
	return &cp
}

func (r *revision) resource(x *Resource) *Resource {
	if x == nil {
		return nil
	}
	cp := *x
	r.describe(&cp.Title, &cp.Icons, &cp.Meta)
	cp.Annotations = r.annotations(x.Annotations)
	return &cp
}

func (r *revision) template(x *ResourceTemplate) *ResourceTemplate {
	if x == nil {
		return nil
	}
	cp := *x
	r.describe(&cp.Title, &cp.Icons, &cp.Meta)
	cp.Annotations = r.annotations(x.Annotations)
	return &cp
}

// describe clears the descriptive members of a listed feature or a
// resource link that the revision does not define.
func (r *revision) describe(title *string, icons *[]Icon, meta *Meta) {
	if !r.titles {
		*title = ""
	}
	if !r.icons {
		*icons = nil
	}
	if !r.meta {
		*meta = nil
	}
}

func (r *revision) annotations(a *Annotations) *Annotations {
	if a == nil || r.lastModified || a.LastModified == "" {
		return a
	}
	cp := *a
	cp.LastModified = ""
	if cp.Audience == nil && cp.Priority == 0 {
		return nil
	}
	return &cp
}

func (r *revision) resourceContents(c *ResourceContents) *ResourceContents {
	if c == nil || r.meta || c.Meta == nil {
		return c
	}
	cp := *c
	cp.Meta = nil
	return &cp
}

func (r *revision) contents(cs []Content) []Content {
	if cs == nil {
		return nil
	}
	out := make([]Content, len(cs))
	for i, c := range cs {
		out[i] = r.content(c)
	}
	return out
}

// content returns one content block as the revision defines it. A block
// of a kind the revision lacks (audio before 2025-03-26, a resource link
// before 2025-06-18) becomes a text block that says what was left out,
// so that the client (and its model) still sees one block per block the
// handler made and nothing vanishes without a word.
func (r *revision) content(c Content) Content {
	switch v := c.(type) {
	case *TextContent:
		if r.meta && r.lastModified {
			return v
		}
		cp := *v
		cp.Annotations = r.annotations(v.Annotations)
		if !r.meta {
			cp.Meta = nil
		}
		return &cp
	case *ImageContent:
		if r.meta && r.lastModified {
			return v
		}
		cp := *v
		cp.Annotations = r.annotations(v.Annotations)
		if !r.meta {
			cp.Meta = nil
		}
		return &cp
	case *AudioContent:
		if !r.audio {
			return &TextContent{Text: "[audio content (" + v.MIMEType + ", " + strconv.Itoa(len(v.Data)) + " bytes) left out: protocol revision " + r.version + " has no audio content]",
				Annotations: r.annotations(v.Annotations)}
		}
		if r.meta && r.lastModified {
			return v
		}
		cp := *v
		cp.Annotations = r.annotations(v.Annotations)
		if !r.meta {
			cp.Meta = nil
		}
		return &cp
	case *ResourceLink:
		if !r.resourceLinks {
			text := "[resource link: " + v.URI
			if v.Name != "" {
				text += " (" + v.Name + ")"
			}
			if v.Description != "" {
				text += ": " + v.Description
			}
			return &TextContent{Text: text + "]", Annotations: r.annotations(v.Annotations)}
		}
		cp := *v
		r.describe(&cp.Title, &cp.Icons, &cp.Meta)
		cp.Annotations = r.annotations(v.Annotations)
		return &cp
	case *EmbeddedResource:
		if r.meta && r.lastModified {
			return v
		}
		cp := *v
		cp.Annotations = r.annotations(v.Annotations)
		cp.Resource = r.resourceContents(v.Resource)
		if !r.meta {
			cp.Meta = nil
		}
		return &cp
	}
	return c
}

// notification returns the params of a notification as the revision
// defines them.
func (r *revision) notification(method string, params any) any {
	if r == nil || r.progressMessage {
		return params
	}
	if p, ok := params.(*ProgressParams); ok && method == notificationProgress && p.Message != "" {
		cp := *p
		cp.Message = ""
		return &cp
	}
	return params
}
