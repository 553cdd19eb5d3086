package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/apps"
)

// The demo host: what an MCP Apps host does for one tool call, with the
// MCP side in Go (an mcp.Client that declares the extension) and the
// browser side in two small pages (the host page and its sandbox
// proxy, served from another origin).

//go:embed host.html
var hostHTML string

//go:embed sandbox.html
var sandboxHTML []byte

var hostPage = template.Must(template.New("host").Parse(hostHTML))

// host serves the host page and proxies the page's tool calls.
type host struct {
	client  *mcp.Client
	sandbox string // origin of the sandbox proxy, e.g. http://127.0.0.1:8081
}

// newHost returns a host of the MCP server at mcpURL whose pages run
// in the sandbox proxy served at sandboxOrigin.
func newHost(mcpURL, sandboxOrigin string) *host {
	return &host{
		client:  mcp.NewClient(mcp.NewHTTPClientTransport(mcpURL, nil), &mcp.ClientOptions{Capabilities: apps.ClientCapabilities(nil)}),
		sandbox: sandboxOrigin,
	}
}

func (h *host) Close() error { return h.client.Close() }

// handler serves the host page at / (?city=&days=) and the page's tool
// calls at POST /call.
func (h *host) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.page)
	mux.HandleFunc("POST /call", h.call)
	return mux
}

// sandboxHandler serves the sandbox proxy page.
func sandboxHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sandbox", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(sandboxHTML)
	})
	return mux
}

// hostConfig is what the host page's script gets.
type hostConfig struct {
	SandboxURL      string              `json:"sandboxURL"`
	ProtocolVersion string              `json:"protocolVersion"`
	HTML            string              `json:"html"`
	CSP             *apps.CSP           `json:"csp,omitempty"`
	Permissions     *apps.Permissions   `json:"permissions,omitempty"`
	Allow           string              `json:"allow,omitempty"`
	PrefersBorder   bool                `json:"prefersBorder"`
	Tool            *mcp.Tool           `json:"tool"`
	Arguments       map[string]any      `json:"arguments"`
	Result          *mcp.CallToolResult `json:"result"`
}

// linked returns the tool name of the server and its link to a page
// (nil for a plain tool).
func (h *host) linked(ctx context.Context, name string) (*mcp.Tool, *apps.ToolMeta, error) {
	for t, err := range h.client.Tools(ctx) {
		if err != nil {
			return nil, nil, err
		}
		if t.Name != name {
			continue
		}
		link, err := apps.ToolUI(t)
		if err != nil {
			return nil, nil, err
		}
		return t, link, nil
	}
	return nil, nil, fmt.Errorf("no tool %q", name)
}

// page plays the model's call of the forecast tool: it follows the
// tool's link, reads the page, calls the tool and serves the host page
// that renders the page with the tool's input and result.
func (h *host) page(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	city := r.URL.Query().Get("city")
	if city == "" {
		city = "Lisbon"
	}
	args := map[string]any{"city": city}
	if d := r.URL.Query().Get("days"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil {
			http.Error(w, "days must be a number", http.StatusBadRequest)
			return
		}
		args["days"] = n
	}
	tool, link, err := h.linked(ctx, "forecast")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if link == nil || link.ResourceURI == "" || !link.VisibleTo(apps.VisibleToModel) {
		http.Error(w, "the forecast tool renders no page, or is not the model's to call", http.StatusBadGateway)
		return
	}
	res, err := h.client.ReadResource(ctx, link.ResourceURI, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	var listing *mcp.Resource
	for rs, err := range h.client.Resources(ctx) {
		if err == nil && rs.URI == link.ResourceURI {
			listing = rs
			break
		}
	}
	pg, err := apps.ReadPage(res, link.ResourceURI, listing)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	result, err := h.client.CallTool(ctx, tool.Name, args, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	cfg := hostConfig{
		SandboxURL:      h.sandbox + "/sandbox?host=" + "http://" + r.Host,
		ProtocolVersion: apps.ProtocolVersion,
		HTML:            withPolicy(pg.HTML, pg.Meta.CSP.Policy()),
		CSP:             pg.Meta.CSP,
		Permissions:     pg.Meta.Permissions,
		Allow:           pg.Meta.Permissions.Allow(),
		PrefersBorder:   pg.Meta.PrefersBorder != nil && *pg.Meta.PrefersBorder,
		Tool:            tool,
		Arguments:       args,
		Result:          result,
	}
	b, err := json.Marshal(cfg) // escapes <, > and &: safe inside a script element
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	hostPage.Execute(w, map[string]any{
		"Title":  tool.Title,
		"Tool":   tool.Name,
		"URI":    link.ResourceURI,
		"Config": template.JS(b),
	})
}

// withPolicy puts a Content-Security-Policy meta element first in the
// page's head (first in the document when it has none): the page cannot
// loosen it, as policies only add up.
func withPolicy(page, policy string) string {
	meta := `<meta http-equiv="Content-Security-Policy" content="` + html.EscapeString(policy) + `">`
	if i := strings.Index(strings.ToLower(page), "<head>"); i >= 0 {
		i += len("<head>")
		return page[:i] + meta + page[i:]
	}
	return meta + page
}

// callError is the JSON-RPC error the host page relays to the page.
type callError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// call proxies a tools/call of the page to the server, for tools whose
// link lets the app call them (the extension has hosts refuse the
// others).
func (h *host) call(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&p); err != nil || p.Name == "" {
		reply(map[string]any{"error": callError{mcp.CodeInvalidParams, "tools/call needs a tool name"}})
		return
	}
	_, link, err := h.linked(ctx, p.Name)
	if err == nil && link != nil && !link.VisibleTo(apps.VisibleToApp) {
		err = errors.New("tool " + strconv.Quote(p.Name) + " is not visible to the app")
	}
	if err != nil {
		reply(map[string]any{"error": callError{-32000, err.Error()}})
		return
	}
	res, err := h.client.CallTool(ctx, p.Name, p.Arguments, nil)
	if err != nil {
		reply(map[string]any{"error": callError{-32000, err.Error()}})
		return
	}
	reply(map[string]any{"result": res})
}
