package apps

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Resource is a UI resource: one self-contained HTML page.
type Resource struct {
	// URI identifies the page; it must start with ui://.
	URI string
	// Name, Title and Description describe it in resources/list.
	Name        string
	Title       string
	Description string
	Icons       []mcp.Icon
	// HTML is the page, a complete HTML5 document, served as text with
	// MIMEType.
	HTML string
	// Meta is sent as _meta.ui of the listing and of the content; the
	// zero value sends none (the host's restrictive defaults apply).
	Meta ResourceMeta
}

// AddResource registers r on s as a static resource: listed with
// MIMEType, its size and r.Meta, and read as r.HTML with the same
// metadata on the content. It replaces a resource of the same URI, as
// Server.AddResource does, and panics when r has no name or its URI is
// not a ui:// URI: a programming error caught at start-up.
func AddResource(s *mcp.Server, r *Resource) {
	if r == nil || r.Name == "" {
		panic("apps: AddResource needs a resource with a name")
	}
	if !validURI(r.URI) {
		panic(fmt.Sprintf("apps: resource URI %q is not a ui:// URI", r.URI))
	}
	size := int64(len(r.HTML))
	uri, html, meta := r.URI, r.HTML, r.Meta
	s.AddResource(&mcp.Resource{
		URI: uri, Name: r.Name, Title: r.Title, Description: r.Description,
		MIMEType: MIMEType, Size: &size, Icons: r.Icons, Meta: meta.asMeta(),
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{Contents(uri, html, meta)}}, nil
	})
}

// Contents returns the resources/read content of a UI page: html as text
// with MIMEType and meta as _meta.ui (none when meta is the zero value).
// A handler that builds its page per request returns it in its
// ReadResourceResult.
func Contents(uri, html string, meta ResourceMeta) *mcp.ResourceContents {
	return &mcp.ResourceContents{URI: uri, MIMEType: MIMEType, Text: html, Meta: meta.asMeta()}
}

// asMeta is m as a _meta object, nil for the zero value.
func (m ResourceMeta) asMeta() mcp.Meta {
	if m.CSP == nil && m.Permissions == nil && m.Domain == "" && m.PrefersBorder == nil {
		return nil
	}
	return mcp.Meta{MetaKey: m}
}

// validURI reports whether uri is a ui:// URI with something after the
// scheme.
func validURI(uri string) bool {
	return strings.HasPrefix(uri, Scheme) && len(uri) > len(Scheme)
}

// Link sets t's _meta.ui to m, linking the tool to its page, and returns
// t (for mcp.AddTool or Server.AddTool). Other _meta members of t are
// kept; t.Meta is copied first, so a map shared with other tools is not
// changed. When m names a resource, the deprecated flat
// _meta["ui/resourceUri"] is written too, for hosts that predate the
// nested form. It panics when m.ResourceURI is set but is not a ui://
// URI, or when m.Visibility holds an unknown value.
func Link(t *mcp.Tool, m ToolMeta) *mcp.Tool {
	if err := m.validate(); err != nil {
		panic(fmt.Sprintf("%v (tool %q)", err, t.Name))
	}
	meta := make(mcp.Meta, len(t.Meta)+2)
	maps.Copy(meta, t.Meta)
	m.Visibility = slices.Clone(m.Visibility)
	meta[MetaKey] = m
	if m.ResourceURI != "" {
		meta[LegacyResourceURIKey] = m.ResourceURI
	} else {
		delete(meta, LegacyResourceURIKey)
	}
	t.Meta = meta
	return t
}

// serverSettings is the server's entry under capabilities.extensions:
// the extension defines no server settings.
var serverSettings = json.RawMessage(`{}`)

// ServerCapabilities returns a copy of base (nil: none) that also
// advertises the extension, for ServerOptions.Capabilities. base and its
// maps are not changed.
func ServerCapabilities(base *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	var c mcp.ServerCapabilities
	if base != nil {
		c = *base
	}
	c.Extensions = withEntry(c.Extensions, serverSettings)
	return &c
}

// ClientCapabilities returns a copy of base (nil: none) that also
// declares the extension with MIMEType, for a host's
// ClientOptions.Capabilities. base and its maps are not changed.
func ClientCapabilities(base *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	var c mcp.ClientCapabilities
	if base != nil {
		c = *base
	}
	b, _ := json.Marshal(ClientCapability{MIMETypes: []string{MIMEType}})
	c.Extensions = withEntry(c.Extensions, b)
	return &c
}

// withEntry returns a copy of ext with the extension's entry set to v.
func withEntry(ext map[string]json.RawMessage, v json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(ext)+1)
	maps.Copy(out, ext)
	out[ExtensionID] = v
	return out
}

// ClientSettings returns what the client declared for the extension in
// caps (a request's Meta.ClientCapabilities), and whether it declared
// it. An entry that is not an object of the extension's shape counts as
// not declared.
func ClientSettings(caps mcp.ClientCapabilities) (ClientCapability, bool) {
	raw, ok := caps.Extensions[ExtensionID]
	if !ok {
		return ClientCapability{}, false
	}
	var c ClientCapability
	if json.Unmarshal(raw, &c) != nil {
		return ClientCapability{}, false
	}
	return c, true
}

// ClientSupports reports whether the client that sent caps renders UI
// pages: it declared the extension with MIMEType among its mimeTypes.
// A tool handler may use it to shape its result; the text content must
// still make sense on its own.
func ClientSupports(caps mcp.ClientCapabilities) bool {
	c, ok := ClientSettings(caps)
	return ok && slices.Contains(c.MIMETypes, MIMEType)
}
