// Package apps serves and reads the MCP Apps extension
// (io.modelcontextprotocol/ui, SEP-1865, stable revision 2026-01-26):
// a tool linked to an HTML page, its UI resource, that a host renders in
// a sandboxed iframe and feeds the tool's input and result over a
// postMessage JSON-RPC bridge.
//
//	srv := mcp.NewServer(impl, &mcp.ServerOptions{Capabilities: apps.ServerCapabilities(nil)})
//	apps.AddResource(srv, &apps.Resource{URI: "ui://weather/forecast.html", Name: "forecast", HTML: page})
//	mcp.AddTypedTool(srv, apps.Link(&mcp.Tool{Name: "forecast"}, apps.ToolMeta{ResourceURI: "ui://weather/forecast.html"}), handler)
//
// # What the server sends
//
// A UI resource is an ordinary resource whose URI has the ui:// scheme
// and whose content has the MIME type text/html;profile=mcp-app
// (MIMEType). Its ResourceMeta (the Content Security Policy domains the
// page needs, the browser permissions it asks for, a dedicated origin,
// the border preference) travels as _meta.ui both on the resources/list
// entry, where a host can review it before anything runs, and on the
// resources/read content, which takes precedence.
//
// A tool is linked to its page by _meta.ui (ToolMeta): resourceUri, and
// visibility, which says whether the model, the app, or both may call
// it. A host that does not implement the extension ignores _meta and
// uses the tool as any other, so its result must stand on its own as
// text (structuredContent carries the data the page renders).
//
// # Negotiation
//
// The server advertises the extension in capabilities.extensions
// (ServerCapabilities); a host declares it in its client capabilities
// with the MIME types it renders (ClientCapabilities). On 2026-07-28 the
// client's capabilities come with every request, and tools/list must not
// vary from one client to the next (it is cacheable, possibly across
// clients), so _meta.ui is sent to every client: a handler that wants to
// shape its result for a host that renders the page asks ClientSupports
// with the request's capabilities.
//
// # What a host reads
//
// ToolUI reads a listed tool's link (also the deprecated flat
// _meta["ui/resourceUri"] of older servers), ResourceUI the metadata of
// a read resource, falling back to its listing; CSP.Policy builds the
// Content-Security-Policy the host enforces on the page and
// Permissions.Allow the iframe's allow attribute.
//
// The bridge between the page and its host (ui/initialize,
// ui/notifications/tool-input, ui/notifications/tool-result, ...) runs in
// the browser, not in Go; ProtocolVersion is the version both ends of it
// speak.
package apps
