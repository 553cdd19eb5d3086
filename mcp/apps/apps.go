package apps

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

const (
	// ExtensionID is the extension's key in capabilities.extensions, on
	// both sides.
	ExtensionID = "io.modelcontextprotocol/ui"
	// MIMEType is the MIME type of a UI resource's HTML content, and the
	// one a host lists in its capability to say it renders such pages.
	MIMEType = "text/html;profile=mcp-app"
	// Scheme starts the URI of every UI resource.
	Scheme = "ui://"
	// MetaKey is the _meta member under which tools, resources and
	// resource contents carry the extension's metadata.
	MetaKey = "ui"
	// LegacyResourceURIKey is the flat _meta member that named a tool's
	// UI resource before _meta.ui.resourceUri (deprecated by the
	// extension; Link still writes it for hosts that predate the nested
	// form, ToolUI still reads it).
	LegacyResourceURIKey = "ui/resourceUri"
	// ProtocolVersion is the revision of the extension this package
	// follows; it is also the protocolVersion of the postMessage bridge
	// between a page and its host (ui/initialize and its result).
	ProtocolVersion = "2026-01-26"
)

// Visibility says who may call a linked tool.
type Visibility string

const (
	// VisibleToModel: the tool is in the model's tool list and the model
	// may call it.
	VisibleToModel Visibility = "model"
	// VisibleToApp: the page of this server may call it (through its
	// host's tools/call).
	VisibleToApp Visibility = "app"
)

// ToolMeta is a tool's _meta.ui: the page that renders its results, and
// who may call it.
type ToolMeta struct {
	// ResourceURI is the ui:// URI of the UI resource that renders the
	// tool's results; empty for a tool meant for the page alone that
	// renders nothing itself.
	ResourceURI string `json:"resourceUri,omitempty"`
	// Visibility lists who may call the tool; empty means both, the
	// model and the app. A host leaves a tool without VisibleToModel out
	// of the model's tool list, and refuses the page's calls to a tool
	// without VisibleToApp.
	Visibility []Visibility `json:"visibility,omitempty"`
}

// VisibleTo reports whether v may call the tool (an empty Visibility
// means everyone may).
func (m ToolMeta) VisibleTo(v Visibility) bool {
	return len(m.Visibility) == 0 || slices.Contains(m.Visibility, v)
}

// validate reports what the extension does not allow in m.
func (m ToolMeta) validate() error {
	if m.ResourceURI != "" && !strings.HasPrefix(m.ResourceURI, Scheme) {
		return fmt.Errorf("apps: resourceUri %q does not start with %s", m.ResourceURI, Scheme)
	}
	for _, v := range m.Visibility {
		if v != VisibleToModel && v != VisibleToApp {
			return fmt.Errorf("apps: unknown visibility %q", v)
		}
	}
	return nil
}

// ResourceMeta is the _meta.ui of a UI resource: what the host's
// sandbox lets the page do, and how it frames it.
type ResourceMeta struct {
	// CSP lists the origins the page may reach; nil means none beyond
	// the page itself (the extension's restrictive default).
	CSP *CSP `json:"csp,omitempty"`
	// Permissions are the browser features the page asks for; a host may
	// grant them (iframe allow attribute) or not, so a page detects them.
	Permissions *Permissions `json:"permissions,omitempty"`
	// Domain asks for a dedicated origin for the page's sandbox, in a
	// format each host defines (for OAuth callbacks or CORS allowlists);
	// empty lets the host choose.
	Domain string `json:"domain,omitempty"`
	// PrefersBorder asks for a visible border and background (true) or
	// none (false); nil leaves it to the host.
	PrefersBorder *bool `json:"prefersBorder,omitempty"`
}

// CSP is the Content Security Policy a page declares: the origins (with
// scheme, optionally a "*." subdomain wildcard) it needs, by use. A host
// allows these and nothing more.
type CSP struct {
	// ConnectDomains may be reached by fetch, XHR and WebSocket
	// (connect-src).
	ConnectDomains []string `json:"connectDomains,omitempty"`
	// ResourceDomains may serve scripts, styles, images, fonts and media
	// (script-src, style-src, img-src, font-src, media-src).
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	// FrameDomains may be embedded in nested iframes (frame-src); none
	// means no nested iframe.
	FrameDomains []string `json:"frameDomains,omitempty"`
	// BaseURIDomains may be the document's base URI (base-uri); none
	// means the page's own origin only.
	BaseURIDomains []string `json:"baseUriDomains,omitempty"`
}

// Permissions are the browser features a page asks its host for. On the
// wire each granted feature is an empty object: {"camera":{}}.
type Permissions struct {
	Camera         bool // Permission Policy "camera"
	Microphone     bool // "microphone"
	Geolocation    bool // "geolocation"
	ClipboardWrite bool // "clipboard-write"
}

// permissionNames pairs each member with its wire name and its
// Permission Policy feature, in the order Allow lists them.
var permissionNames = [...]struct{ wire, feature string }{
	{"camera", "camera"},
	{"microphone", "microphone"},
	{"geolocation", "geolocation"},
	{"clipboardWrite", "clipboard-write"},
}

func (p *Permissions) flags() [4]*bool {
	return [4]*bool{&p.Camera, &p.Microphone, &p.Geolocation, &p.ClipboardWrite}
}

// MarshalJSON writes each requested feature as an empty object.
func (p Permissions) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range p.flags() {
		if *f {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, permissionNames[i].wire...)
			b = append(b, `":{}`...)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the features present as objects; members this
// package does not know are ignored, and a member that is not an object
// is an error.
func (p *Permissions) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("apps: permissions must be an object: %w", err)
	}
	*p = Permissions{}
	flags := p.flags()
	for i, n := range permissionNames {
		v, ok := m[n.wire]
		if !ok {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil || obj == nil {
			return fmt.Errorf("apps: permissions.%s must be an object", n.wire)
		}
		*flags[i] = true
	}
	return nil
}

// ClientCapability is what a host declares under
// capabilities.extensions["io.modelcontextprotocol/ui"].
type ClientCapability struct {
	// MIMETypes are the UI resource types the host renders; MIMEType
	// for HTML pages. The extension requires the member.
	MIMETypes []string `json:"mimeTypes"`
}
