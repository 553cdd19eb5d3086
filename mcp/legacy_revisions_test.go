package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The earlier revisions a session negotiates: 2025-11-25, 2025-06-18,
// 2025-03-26 and 2024-11-05, each with what it defines and nothing more.

// ---- what each revision's schema defines ----

// revisionShapes lists, per revision, the members each type of the
// revision's schema defines (the "properties" of its definition, inline
// objects named after their place). They were read from
// schema/<revision>/schema.json of the specification repository,
// modelcontextprotocol/modelcontextprotocol: schema/2024-11-05,
// schema/2025-03-26, schema/2025-06-18 and schema/2025-11-25. A type
// missing from a revision (AudioContent in 2024-11-05) does not exist in
// it. ProgressParams and the other *Params are the params objects of the
// notifications and requests of those names.
var revisionShapes = map[string]map[string]string{
	"2024-11-05": {
		"InitializeResult":            "_meta capabilities instructions protocolVersion serverInfo",
		"ServerCapabilities":          "experimental logging prompts resources tools",
		"ListChangedCap":              "listChanged",
		"ResourcesCap":                "listChanged subscribe",
		"Implementation":              "name version",
		"ListToolsResult":             "_meta nextCursor tools",
		"Tool":                        "description inputSchema name",
		"CallToolResult":              "_meta content isError",
		"TextContent":                 "annotations text type",
		"ImageContent":                "annotations data mimeType type",
		"EmbeddedResource":            "annotations resource type",
		"TextResourceContents":        "mimeType text uri",
		"BlobResourceContents":        "blob mimeType uri",
		"Annotations":                 "audience priority",
		"ListPromptsResult":           "_meta nextCursor prompts",
		"Prompt":                      "arguments description name",
		"PromptArgument":              "description name required",
		"GetPromptResult":             "_meta description messages",
		"PromptMessage":               "content role",
		"ListResourcesResult":         "_meta nextCursor resources",
		"Resource":                    "annotations description mimeType name size uri",
		"ListResourceTemplatesResult": "_meta nextCursor resourceTemplates",
		"ResourceTemplate":            "annotations description mimeType name uriTemplate",
		"ReadResourceResult":          "_meta contents",
		"CompleteResult":              "_meta completion",
		"Completion":                  "hasMore total values",
		"EmptyResult":                 "_meta",
		"ProgressParams":              "progress progressToken total",
		"LoggingParams":               "data level logger",
		"CreateMessageParams":         "includeContext maxTokens messages metadata modelPreferences stopSequences systemPrompt temperature",
		"SamplingMessage":             "content role",
		"ModelPreferences":            "costPriority hints intelligencePriority speedPriority",
		"ModelHint":                   "name",
		"ListRootsParams":             "_meta",
		"SamplingContent":             "TextContent ImageContent", // the union: what a sampling message may hold
	},
	"2025-03-26": {
		"InitializeResult":            "_meta capabilities instructions protocolVersion serverInfo",
		"ServerCapabilities":          "completions experimental logging prompts resources tools",
		"ListChangedCap":              "listChanged",
		"ResourcesCap":                "listChanged subscribe",
		"Implementation":              "name version",
		"ListToolsResult":             "_meta nextCursor tools",
		"Tool":                        "annotations description inputSchema name",
		"ToolAnnotations":             "destructiveHint idempotentHint openWorldHint readOnlyHint title",
		"CallToolResult":              "_meta content isError",
		"TextContent":                 "annotations text type",
		"ImageContent":                "annotations data mimeType type",
		"AudioContent":                "annotations data mimeType type",
		"EmbeddedResource":            "annotations resource type",
		"TextResourceContents":        "mimeType text uri",
		"BlobResourceContents":        "blob mimeType uri",
		"Annotations":                 "audience priority",
		"ListPromptsResult":           "_meta nextCursor prompts",
		"Prompt":                      "arguments description name",
		"PromptArgument":              "description name required",
		"GetPromptResult":             "_meta description messages",
		"PromptMessage":               "content role",
		"ListResourcesResult":         "_meta nextCursor resources",
		"Resource":                    "annotations description mimeType name size uri",
		"ListResourceTemplatesResult": "_meta nextCursor resourceTemplates",
		"ResourceTemplate":            "annotations description mimeType name uriTemplate",
		"ReadResourceResult":          "_meta contents",
		"CompleteResult":              "_meta completion",
		"Completion":                  "hasMore total values",
		"EmptyResult":                 "_meta",
		"ProgressParams":              "message progress progressToken total",
		"LoggingParams":               "data level logger",
		"CreateMessageParams":         "includeContext maxTokens messages metadata modelPreferences stopSequences systemPrompt temperature",
		"SamplingMessage":             "content role",
		"ModelPreferences":            "costPriority hints intelligencePriority speedPriority",
		"ModelHint":                   "name",
		"ListRootsParams":             "_meta",
		"SamplingContent":             "TextContent ImageContent AudioContent",
	},
	"2025-06-18": {
		"InitializeResult":            "_meta capabilities instructions protocolVersion serverInfo",
		"ServerCapabilities":          "completions experimental logging prompts resources tools",
		"ListChangedCap":              "listChanged",
		"ResourcesCap":                "listChanged subscribe",
		"Implementation":              "name title version",
		"ListToolsResult":             "_meta nextCursor tools",
		"Tool":                        "_meta annotations description inputSchema name outputSchema title",
		"ToolAnnotations":             "destructiveHint idempotentHint openWorldHint readOnlyHint title",
		"CallToolResult":              "_meta content isError structuredContent",
		"TextContent":                 "_meta annotations text type",
		"ImageContent":                "_meta annotations data mimeType type",
		"AudioContent":                "_meta annotations data mimeType type",
		"ResourceLink":                "_meta annotations description mimeType name size title type uri",
		"EmbeddedResource":            "_meta annotations resource type",
		"TextResourceContents":        "_meta mimeType text uri",
		"BlobResourceContents":        "_meta blob mimeType uri",
		"Annotations":                 "audience lastModified priority",
		"ListPromptsResult":           "_meta nextCursor prompts",
		"Prompt":                      "_meta arguments description name title",
		"PromptArgument":              "description name required title",
		"GetPromptResult":             "_meta description messages",
		"PromptMessage":               "content role",
		"ListResourcesResult":         "_meta nextCursor resources",
		"Resource":                    "_meta annotations description mimeType name size title uri",
		"ListResourceTemplatesResult": "_meta nextCursor resourceTemplates",
		"ResourceTemplate":            "_meta annotations description mimeType name title uriTemplate",
		"ReadResourceResult":          "_meta contents",
		"CompleteResult":              "_meta completion",
		"Completion":                  "hasMore total values",
		"EmptyResult":                 "_meta",
		"ProgressParams":              "message progress progressToken total",
		"LoggingParams":               "data level logger",
		"CreateMessageParams":         "includeContext maxTokens messages metadata modelPreferences stopSequences systemPrompt temperature",
		"SamplingMessage":             "content role",
		"ModelPreferences":            "costPriority hints intelligencePriority speedPriority",
		"ModelHint":                   "name",
		"ListRootsParams":             "_meta",
		"ElicitParams":                "message requestedSchema",
		"SamplingContent":             "TextContent ImageContent AudioContent",
	},
	"2025-11-25": {
		"InitializeResult":            "_meta capabilities instructions protocolVersion serverInfo",
		"ServerCapabilities":          "completions experimental logging prompts resources tasks tools",
		"ListChangedCap":              "listChanged",
		"ResourcesCap":                "listChanged subscribe",
		"Implementation":              "description icons name title version websiteUrl",
		"Icon":                        "mimeType sizes src theme",
		"ListToolsResult":             "_meta nextCursor tools",
		"Tool":                        "_meta annotations description execution icons inputSchema name outputSchema title",
		"ToolAnnotations":             "destructiveHint idempotentHint openWorldHint readOnlyHint title",
		"CallToolResult":              "_meta content isError structuredContent",
		"TextContent":                 "_meta annotations text type",
		"ImageContent":                "_meta annotations data mimeType type",
		"AudioContent":                "_meta annotations data mimeType type",
		"ResourceLink":                "_meta annotations description icons mimeType name size title type uri",
		"EmbeddedResource":            "_meta annotations resource type",
		"TextResourceContents":        "_meta mimeType text uri",
		"BlobResourceContents":        "_meta blob mimeType uri",
		"Annotations":                 "audience lastModified priority",
		"ListPromptsResult":           "_meta nextCursor prompts",
		"Prompt":                      "_meta arguments description icons name title",
		"PromptArgument":              "description name required title",
		"GetPromptResult":             "_meta description messages",
		"PromptMessage":               "content role",
		"ListResourcesResult":         "_meta nextCursor resources",
		"Resource":                    "_meta annotations description icons mimeType name size title uri",
		"ListResourceTemplatesResult": "_meta nextCursor resourceTemplates",
		"ResourceTemplate":            "_meta annotations description icons mimeType name title uriTemplate",
		"ReadResourceResult":          "_meta contents",
		"CompleteResult":              "_meta completion",
		"Completion":                  "hasMore total values",
		"EmptyResult":                 "_meta",
		"ProgressParams":              "_meta message progress progressToken total",
		"LoggingParams":               "_meta data level logger",
		"CreateMessageParams":         "_meta includeContext maxTokens messages metadata modelPreferences stopSequences systemPrompt task temperature toolChoice tools",
		"SamplingMessage":             "_meta content role",
		"ModelPreferences":            "costPriority hints intelligencePriority speedPriority",
		"ModelHint":                   "name",
		"ListRootsParams":             "_meta",
		"ElicitFormParams":            "_meta message mode requestedSchema task",
		"ElicitURLParams":             "_meta elicitationId message mode task url",
		"SamplingContent":             "TextContent ImageContent AudioContent ToolUseContent ToolResultContent",
	},
}

// memberShapes is the type of a member's value where the checker walks
// into it ("[]T": an array of T). Members not listed are leaves or open
// objects (inputSchema, outputSchema, _meta, experimental, arguments...).
// Content, SamplingContent, ResourceContents and Elicit are unions,
// resolved from the value (shapeOf).
var memberShapes = map[string]string{
	"InitializeResult.capabilities": "ServerCapabilities",
	"InitializeResult.serverInfo":   "Implementation",
	"ServerCapabilities.prompts":    "ListChangedCap",
	"ServerCapabilities.tools":      "ListChangedCap",
	"ServerCapabilities.resources":  "ResourcesCap",
	"Implementation.icons":          "[]Icon",

	"ListToolsResult.tools":  "[]Tool",
	"Tool.annotations":       "ToolAnnotations",
	"Tool.icons":             "[]Icon",
	"CallToolResult.content": "[]Content",

	"TextContent.annotations":      "Annotations",
	"ImageContent.annotations":     "Annotations",
	"AudioContent.annotations":     "Annotations",
	"ResourceLink.annotations":     "Annotations",
	"ResourceLink.icons":           "[]Icon",
	"EmbeddedResource.annotations": "Annotations",
	"EmbeddedResource.resource":    "ResourceContents",

	"ListPromptsResult.prompts": "[]Prompt",
	"Prompt.arguments":          "[]PromptArgument",
	"Prompt.icons":              "[]Icon",
	"GetPromptResult.messages":  "[]PromptMessage",
	"PromptMessage.content":     "Content",

	"ListResourcesResult.resources":                 "[]Resource",
	"Resource.annotations":                          "Annotations",
	"Resource.icons":                                "[]Icon",
	"ListResourceTemplatesResult.resourceTemplates": "[]ResourceTemplate",
	"ResourceTemplate.annotations":                  "Annotations",
	"ResourceTemplate.icons":                        "[]Icon",
	"ReadResourceResult.contents":                   "[]ResourceContents",
	"CompleteResult.completion":                     "Completion",

	"CreateMessageParams.messages":         "[]SamplingMessage",
	"CreateMessageParams.modelPreferences": "ModelPreferences",
	"ModelPreferences.hints":               "[]ModelHint",
	"SamplingMessage.content":              "SamplingContent",
}

// openMembers are members every revision allows though its schema does
// not name them: capabilities are an open set ("any server can define
// its own, additional capabilities"), and a server's extensions go to
// the clients of every revision, whose hosts negotiate them there.
var openMembers = map[string]bool{"ServerCapabilities.extensions": true}

var contentTypes = map[string]string{"text": "TextContent", "image": "ImageContent", "audio": "AudioContent",
	"resource_link": "ResourceLink", "resource": "EmbeddedResource", "tool_use": "ToolUseContent", "tool_result": "ToolResultContent"}

// checkShape fails t on every member of v (a value of type typ) that the
// revision's schema does not define, at any depth.
func checkShape(t testing.TB, rev, typ string, v any, path string) {
	t.Helper()
	shapes := revisionShapes[rev]
	if elem, ok := strings.CutPrefix(typ, "[]"); ok {
		arr, isArr := v.([]any)
		if !isArr {
			t.Errorf("%s %s: %s is not an array", rev, path, typ)
			return
		}
		for i, e := range arr {
			checkShape(t, rev, elem, e, fmt.Sprintf("%s[%d]", path, i))
		}
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s %s: a %s must be an object, got %T", rev, path, typ, v)
		return
	}
	switch typ {
	case "Content", "SamplingContent":
		kind, _ := obj["type"].(string)
		union := typ
		typ = contentTypes[kind]
		_, defined := shapes[typ]
		if union == "SamplingContent" {
			defined = slices.Contains(strings.Fields(shapes["SamplingContent"]), typ)
		}
		if !defined {
			t.Errorf("%s %s: content of type %q is not defined by revision %s", rev, path, kind, rev)
			return
		}
	case "ResourceContents":
		typ = "TextResourceContents"
		if _, blob := obj["blob"]; blob {
			typ = "BlobResourceContents"
		}
	case "ElicitParams":
		if _, single := shapes["ElicitParams"]; !single {
			typ = "ElicitFormParams"
			if obj["mode"] == "url" {
				typ = "ElicitURLParams"
			}
		}
	}
	members, defined := shapes[typ]
	if !defined {
		t.Errorf("%s %s: type %s is not defined by revision %s", rev, path, typ, rev)
		return
	}
	names := strings.Fields(members)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(names, k) && !openMembers[typ+"."+k] {
			t.Errorf("%s %s: %s has no member %q in revision %s (it defines: %s)", rev, path, typ, k, rev, members)
			continue
		}
		if child := memberShapes[typ+"."+k]; child != "" {
			checkShape(t, rev, child, obj[k], path+"."+k)
		}
	}
}

// ---- a server that uses every field the types have ----

func refTo[T any](v T) *T { return &v }

func richServer(t testing.TB) *Server {
	t.Helper()
	icons := []Icon{{Src: "https://example.com/i.png", MIMEType: "image/png", Sizes: []string{"48x48"}}}
	ann := &Annotations{Audience: []Role{RoleUser}, LastModified: "2025-01-01T00:00:00Z", Priority: 0.5}
	meta := Meta{"example.com/k": "v"}
	s := NewServer(Implementation{Name: "rich", Version: "1", Title: "Rich", Description: "every field", WebsiteURL: "https://example.com", Icons: icons},
		&ServerOptions{
			Instructions: "be rich",
			Completions: func(context.Context, *CompleteRequest) (*CompleteResult, error) {
				return &CompleteResult{Completion: Completion{Values: []string{"a"}, Total: refTo(1)}}, nil
			},
			Capabilities: &ServerCapabilities{Extensions: map[string]json.RawMessage{"example.com/ext": json.RawMessage(`{}`)}},
		})
	blocks := func() []Content {
		return []Content{
			&TextContent{Text: "hello", Annotations: ann, Meta: meta},
			&ImageContent{Data: []byte("png"), MIMEType: "image/png", Annotations: ann, Meta: meta},
			&AudioContent{Data: []byte("wav"), MIMEType: "audio/wav", Annotations: ann, Meta: meta},
			&ResourceLink{URI: "test://linked", Name: "linked", Title: "Linked", Description: "a link", MIMEType: "text/plain", Size: refTo[int64](3), Icons: icons, Annotations: ann, Meta: meta},
			&EmbeddedResource{Resource: &ResourceContents{URI: "test://embedded", MIMEType: "text/plain", Text: "inline", Meta: meta}, Annotations: ann, Meta: meta},
		}
	}
	s.AddTool(&Tool{Name: "rich", Title: "Rich tool", Description: "returns every kind of content",
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Annotations:  &ToolAnnotations{Title: "Rich", ReadOnlyHint: refTo(true)}, Icons: icons, Meta: meta},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			if err := ReportProgress(ctx, 1, 2, "halfway"); err != nil {
				return nil, err
			}
			if err := logMessage(ctx, LevelInfo, "rich", "a log line"); err != nil {
				return nil, err
			}
			return &CallToolResult{Content: blocks(), StructuredContent: map[string]any{"n": 1}, Meta: meta}, nil
		})
	s.AddTool(&Tool{Name: "ask-sampling", Description: "samples, then lists roots", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			m, err := Sample(ctx, &CreateMessageRequest{MaxTokens: 10, ModelPreferences: &ModelPreferences{Hints: []ModelHint{{Name: "m"}}},
				Messages: []SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: "hi", Meta: meta}}, Meta: meta}}})
			if err != nil {
				return nil, err
			}
			roots, err := ListRoots(ctx)
			if err != nil {
				return nil, err
			}
			return TextResult(m.Content[0].(*TextContent).Text + " | " + roots[0].URI), nil
		})
	s.AddTool(&Tool{Name: "ask-elicit", Description: "elicits a region", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			e, err := Elicit[Region](ctx, "Which region should the database live in?")
			if err != nil {
				return nil, err
			}
			v, err := e.Value()
			if err != nil {
				return nil, err
			}
			return TextResult(v.Region), nil
		})
	s.AddTool(&Tool{Name: "ask-url", Description: "asks the user to visit a page", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			if _, err := ElicitURL(ctx, "Sign in", "https://example.com/login"); err != nil {
				return nil, err
			}
			return TextResult("signed in"), nil
		})
	s.AddPrompt(&Prompt{Name: "rich", Title: "Rich prompt", Description: "every field", Icons: icons, Meta: meta,
		Arguments: []PromptArgument{{Name: "who", Title: "Who", Description: "whom", Required: true}}},
		func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
			var msgs []PromptMessage
			for _, b := range blocks() {
				msgs = append(msgs, PromptMessage{Role: RoleUser, Content: b})
			}
			return &GetPromptResult{Description: "rich", Messages: msgs, Meta: meta}, nil
		})
	s.AddPrompt(&Prompt{Name: "ask", Description: "elicits"},
		func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
			if _, err := Elicit[Region](ctx, "Which region?"); err != nil {
				return nil, err
			}
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: "ok"}}}}, nil
		})
	s.AddResource(&Resource{URI: "test://rich", Name: "rich", Title: "Rich resource", Description: "every field", MIMEType: "text/plain",
		Size: refTo[int64](5), Annotations: ann, Icons: icons, Meta: meta},
		func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []*ResourceContents{
				{URI: r.URI, MIMEType: "text/plain", Text: "rich", Meta: meta},
				{URI: r.URI, MIMEType: "application/octet-stream", Blob: []byte{1, 2}, Meta: meta},
			}, Meta: meta}, nil
		})
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://rich/{id}", Name: "rich-item", Title: "Rich item", Description: "every field",
		MIMEType: "text/plain", Annotations: ann, Icons: icons, Meta: meta},
		func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
			if _, err := Elicit[Region](ctx, "Which region?"); err != nil {
				return nil, err
			}
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "item"}}}, nil
		})
	return s
}

// ---- one client of a revision, on either transport ----

// revClient speaks one revision to the server over HTTP or stdio,
// answering the server's requests with legacyAnswers and recording them.
type revClient interface {
	// initResult is the result of the client's initialize.
	initResult() map[string]any
	// call sends a request and returns its response, with the
	// notifications and the server's requests seen before it.
	call(method, params string) (res map[string]any, notes, asked []map[string]any)
}

type httpRevClient struct {
	c     *legacyClient
	mu    sync.Mutex
	asked []map[string]any
}

func newHTTPRevClient(t testing.TB, s *Server, version, caps string) *httpRevClient {
	ts, _ := legacyServer(t, s, nil)
	h := &httpRevClient{}
	h.c = newLegacyClientAt(t, ts.URL, version, caps)
	h.c.answer = func(method string, params map[string]any) any {
		h.mu.Lock()
		h.asked = append(h.asked, map[string]any{"method": method, "params": params})
		h.mu.Unlock()
		return legacyAnswers(method, params)
	}
	return h
}

func (h *httpRevClient) initResult() map[string]any { return h.c.lastInit }

func (h *httpRevClient) call(method, params string) (map[string]any, []map[string]any, []map[string]any) {
	h.c.mu.Lock()
	h.c.notes = nil
	h.c.mu.Unlock()
	h.mu.Lock()
	h.asked = nil
	h.mu.Unlock()
	res := h.c.request(method, params)
	h.c.mu.Lock()
	notes := h.c.notes
	h.c.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	return res, notes, h.asked
}

type stdioRevClient struct {
	t    testing.TB
	c    *streamClient
	init map[string]any
	id   int
}

func newStdioRevClient(t testing.TB, s *Server, version, caps string) *stdioRevClient {
	c := &stdioRevClient{t: t, c: newStreamClient(t, s)}
	c.c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"stdio-rev","version":"1"}}}`)
	c.init = result(t, c.c.next())
	c.c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *stdioRevClient) initResult() map[string]any { return c.init }

func (c *stdioRevClient) call(method, params string) (map[string]any, []map[string]any, []map[string]any) {
	c.t.Helper()
	c.id++
	if params == "" {
		params = "{}"
	}
	c.c.send(`{"jsonrpc":"2.0","id":` + itoa(c.id) + `,"method":"` + method + `","params":` + params + `}`)
	var notes, asked []map[string]any
	for {
		m := c.c.next()
		switch {
		case m["method"] != nil && m["id"] != nil:
			asked = append(asked, m)
			p, _ := m["params"].(map[string]any)
			res, _ := json.Marshal(legacyAnswers(m["method"].(string), p))
			rid, _ := json.Marshal(m["id"])
			c.c.send(`{"jsonrpc":"2.0","id":` + string(rid) + `,"result":` + string(res) + `}`)
		case m["method"] != nil:
			notes = append(notes, m)
		case m["id"] == float64(c.id):
			return m, notes, asked
		}
	}
}

var olderRevisions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// eachRevisionAndTransport runs f for a client of every earlier revision
// on both transports.
func eachRevisionAndTransport(t *testing.T, caps string, f func(t *testing.T, rev string, c revClient)) {
	for _, rev := range olderRevisions {
		t.Run(rev+"/http", func(t *testing.T) { f(t, rev, newHTTPRevClient(t, richServer(t), rev, caps)) })
		t.Run(rev+"/stdio", func(t *testing.T) { f(t, rev, newStdioRevClient(t, richServer(t), rev, caps)) })
	}
}

// ---- the rules ----

func TestInitializeAtAnEarlierRevisionIsAnsweredWithThatRevision(t *testing.T) {
	t.Parallel()
	eachRevisionAndTransport(t, `{}`, func(t *testing.T, rev string, c revClient) {
		init := c.initResult()
		if init["protocolVersion"] != rev {
			t.Fatalf("asked for %s, the server answered %v", rev, init["protocolVersion"])
		}
		checkShape(t, rev, "InitializeResult", init, "initialize")
		caps := init["capabilities"].(map[string]any)
		if _, has := caps["completions"]; has != (rev != "2024-11-05") {
			t.Errorf("%s: completions capability present = %v", rev, has)
		}
		if ext, _ := caps["extensions"].(map[string]any); ext["example.com/ext"] == nil {
			t.Errorf("%s: the declared extension is not in initialize: %v", rev, caps)
		}
		// The session serves the revision's own methods.
		for _, m := range []string{methodPing, methodSetLevel} {
			params := map[string]string{methodPing: `{}`, methodSetLevel: `{"level":"debug"}`}[m]
			if res, _, _ := c.call(m, params); res["result"] == nil {
				t.Errorf("%s: %v", m, res)
			}
		}
	})
}

// An extension whose methods serve 2026-07-28 only (none with
// MethodSpec.Legacy, as the tasks extension's) is useless to a session:
// its initialize does not declare it; the others are declared.
func TestLegacyInitializeDeclaresTheServersExtensionsButModernOnlyOnes(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "ext", Version: "1"}, &ServerOptions{
		Capabilities: &ServerCapabilities{Extensions: map[string]json.RawMessage{"example.com/ui": json.RawMessage(`{"mimeTypes":["text/html"]}`)}},
	})
	nop := func(context.Context, *ExtensionRequest) (Result, error) { return EmptyResult{}, nil }
	s.AddMethod(&MethodSpec{Name: "example.com/modern/get", Extension: "example.com/modern"}, nop)
	s.AddMethod(&MethodSpec{Name: "example.com/both/get", Extension: "example.com/both"}, nop)
	s.AddMethod(&MethodSpec{Name: "example.com/both/say", Extension: "example.com/both", Legacy: true}, nop)
	for _, rev := range olderRevisions {
		caps := newStdioRevClient(t, s, rev, `{}`).initResult()["capabilities"].(map[string]any)
		ext, _ := caps["extensions"].(map[string]any)
		if ext["example.com/ui"] == nil || ext["example.com/both"] == nil || ext["example.com/modern"] != nil {
			t.Errorf("%s: initialize declares extensions %v, want example.com/ui and example.com/both, not example.com/modern (a 2026-07-28 extension)", rev, ext)
		}
	}
}

func TestResultsCarryOnlyWhatTheRevisionDefines(t *testing.T) {
	t.Parallel()
	eachRevisionAndTransport(t, legacyCaps, func(t *testing.T, rev string, c revClient) {
		checkShape(t, rev, "InitializeResult", c.initResult(), "initialize")
		c.call(methodSetLevel, `{"level":"debug"}`)
		for _, x := range []struct{ method, params, typ string }{
			{MethodToolsList, `{}`, "ListToolsResult"},
			{MethodToolsCall, `{"name":"rich","arguments":{},"_meta":{"progressToken":"p1"}}`, "CallToolResult"},
			{methodPromptsList, `{}`, "ListPromptsResult"},
			{MethodPromptsGet, `{"name":"rich","arguments":{"who":"you"}}`, "GetPromptResult"},
			{MethodResourcesList, `{}`, "ListResourcesResult"},
			{methodResourceTemplatesList, `{}`, "ListResourceTemplatesResult"},
			{MethodResourcesRead, `{"uri":"test://rich"}`, "ReadResourceResult"},
			{methodComplete, `{"ref":{"type":"ref/prompt","name":"rich"},"argument":{"name":"who","value":"y"}}`, "CompleteResult"},
			{methodPing, `{}`, "EmptyResult"},
			{MethodToolsCall, `{"name":"ask-sampling","arguments":{}}`, "CallToolResult"},
		} {
			res, notes, asked := c.call(x.method, x.params)
			r, ok := res["result"]
			if !ok {
				t.Errorf("%s: %v", x.method, res)
				continue
			}
			checkShape(t, rev, x.typ, r, x.method)
			for _, n := range notes {
				switch n["method"] {
				case notificationProgress:
					checkShape(t, rev, "ProgressParams", n["params"], "notifications/progress")
				case notificationMessage:
					checkShape(t, rev, "LoggingParams", n["params"], "notifications/message")
				}
			}
			for _, q := range asked {
				switch q["method"] {
				case MethodCreateMessage:
					checkShape(t, rev, "CreateMessageParams", q["params"], "sampling/createMessage")
				case MethodListRoots:
					if q["params"] != nil {
						checkShape(t, rev, "ListRootsParams", q["params"], "roots/list")
					}
				}
			}
			if x.typ == "CallToolResult" && strings.Contains(x.params, `"rich"`) {
				if len(notes) < 2 {
					t.Errorf("tools/call: notifications %v, want progress and a log line", notes)
				}
				// One block for every block the handler made.
				if n := len(r.(map[string]any)["content"].([]any)); n != 5 {
					t.Errorf("tools/call: %d content blocks, want 5", n)
				}
			}
		}
	})
}

func TestContentAnOlderRevisionLacksBecomesText(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{"2025-03-26", "2024-11-05"} {
		t.Run(rev, func(t *testing.T) {
			c := newHTTPRevClient(t, richServer(t), rev, `{}`)
			res, _, _ := c.call(MethodToolsCall, `{"name":"rich","arguments":{}}`)
			content := result(t, res)["content"].([]any)
			kinds := make([]string, len(content))
			for i, b := range content {
				kinds[i] = b.(map[string]any)["type"].(string)
			}
			want := "text image audio text resource"
			if rev == "2024-11-05" {
				want = "text image text text resource"
			}
			if got := strings.Join(kinds, " "); got != want {
				t.Fatalf("content kinds %q, want %q", got, want)
			}
			link := content[3].(map[string]any)["text"].(string)
			if !strings.Contains(link, "test://linked") {
				t.Errorf("a resource link became %q", link)
			}
			if rev == "2024-11-05" && !strings.Contains(content[2].(map[string]any)["text"].(string), "audio/wav") {
				t.Errorf("audio became %v", content[2])
			}
		})
	}
}

func TestProgressCarriesNoMessageOn20241105(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{"2025-03-26", "2024-11-05"} {
		for name, c := range map[string]revClient{"http": newHTTPRevClient(t, richServer(t), rev, `{}`), "stdio": newStdioRevClient(t, richServer(t), rev, `{}`)} {
			_, notes, _ := c.call(MethodToolsCall, `{"name":"rich","arguments":{},"_meta":{"progressToken":7}}`)
			var p map[string]any
			for _, n := range notes {
				if n["method"] == notificationProgress {
					p = n["params"].(map[string]any)
				}
			}
			if p == nil {
				t.Fatalf("%s %s: no progress notification in %v", rev, name, notes)
			}
			if _, has := p["message"]; has != (rev == "2025-03-26") {
				t.Errorf("%s %s: progress %v", rev, name, p)
			}
		}
	}
}

func TestElicitationIsRefusedOnRevisionsWithoutIt(t *testing.T) {
	t.Parallel()
	// The client declares elicitation anyway: its revision has none, so
	// nothing is sent.
	const caps = `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`
	for _, rev := range []string{"2025-03-26", "2024-11-05"} {
		for _, transport := range []string{"http", "stdio"} {
			t.Run(rev+"/"+transport, func(t *testing.T) {
				var c revClient
				if transport == "http" {
					c = newHTTPRevClient(t, richServer(t), rev, caps)
				} else {
					c = newStdioRevClient(t, richServer(t), rev, caps)
				}
				for _, tool := range []string{"ask-elicit", "ask-url"} {
					res, _, asked := c.call(MethodToolsCall, `{"name":"`+tool+`","arguments":{}}`)
					r := result(t, res)
					msg := r["content"].([]any)[0].(map[string]any)["text"].(string)
					if r["isError"] != true || !strings.Contains(msg, "protocol revision "+rev+" has no elicitation") || !strings.Contains(msg, "2025-06-18") {
						t.Errorf("%s: %v", tool, r)
					}
					if len(asked) != 0 {
						t.Errorf("%s: the server sent %v", tool, asked)
					}
				}
				for _, x := range []struct{ method, params string }{
					{MethodPromptsGet, `{"name":"ask"}`},
					{MethodResourcesRead, `{"uri":"test://rich/1"}`},
				} {
					res, _, asked := c.call(x.method, x.params)
					e, _ := res["error"].(map[string]any)
					if errorCode(t, res) != CodeInvalidRequest || !strings.Contains(e["message"].(string), "protocol revision "+rev+" has no elicitation") || len(asked) != 0 {
						t.Errorf("%s: %v (asked %v)", x.method, res, asked)
					}
				}
			})
		}
	}
}

func TestURLElicitationIsRefusedBefore20251125(t *testing.T) {
	t.Parallel()
	c := newHTTPRevClient(t, richServer(t), "2025-06-18", `{"elicitation":{"form":{},"url":{}}}`)
	res, _, asked := c.call(MethodToolsCall, `{"name":"ask-url","arguments":{}}`)
	r := result(t, res)
	if r["isError"] != true || !strings.Contains(r["content"].([]any)[0].(map[string]any)["text"].(string), "URL-mode elicitation (added in 2025-11-25)") || len(asked) != 0 {
		t.Errorf("URL elicitation on 2025-06-18: %v (asked %v)", r, asked)
	}
	// Form elicitation goes out as 2025-06-18 defines it: no mode member.
	res, _, asked = c.call(MethodToolsCall, `{"name":"ask-elicit","arguments":{}}`)
	if text(t, res) != "eu-west-1" || len(asked) != 1 {
		t.Fatalf("form elicitation: %v (asked %v)", res, asked)
	}
	checkShape(t, "2025-06-18", "ElicitParams", asked[0]["params"], "elicitation/create")
}

func TestSamplingAndRootsCompleteLiveOnOlderRevisions(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{"2025-03-26", "2024-11-05"} {
		for name, c := range map[string]revClient{"http": newHTTPRevClient(t, richServer(t), rev, legacyCaps), "stdio": newStdioRevClient(t, richServer(t), rev, legacyCaps)} {
			res, _, asked := c.call(MethodToolsCall, `{"name":"ask-sampling","arguments":{}}`)
			if got := text(t, res); got != "a haiku | file:///work" {
				t.Errorf("%s %s: result %q", rev, name, got)
			}
			var methods []string
			for _, q := range asked {
				methods = append(methods, q["method"].(string))
			}
			if strings.Join(methods, ",") != "sampling/createMessage,roots/list" {
				t.Errorf("%s %s: asked %v", rev, name, methods)
			}
		}
	}
}
