package apps

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ToolUI returns the link of a listed tool: its _meta.ui, with the
// resource URI taken from the deprecated flat _meta["ui/resourceUri"]
// when the nested one is absent. It returns nil and no error for a tool
// that is not linked, and an error when the metadata is malformed or
// names a resource outside the ui:// scheme (a host then treats the
// tool as a plain one). Visibility values it does not know are kept.
func ToolUI(t *mcp.Tool) (*ToolMeta, error) {
	if t == nil {
		return nil, nil
	}
	var m ToolMeta
	v, nested := t.Meta[MetaKey]
	if nested {
		if err := fromMeta(v, &m); err != nil {
			return nil, fmt.Errorf("apps: tool %q: _meta.ui: %w", t.Name, err)
		}
	}
	if m.ResourceURI == "" {
		if flat, ok := t.Meta[LegacyResourceURIKey]; ok {
			s, isString := flat.(string)
			if !isString {
				return nil, fmt.Errorf("apps: tool %q: _meta[%q] is not a string", t.Name, LegacyResourceURIKey)
			}
			m.ResourceURI = s
		} else if !nested {
			return nil, nil
		}
	}
	if m.ResourceURI != "" && !validURI(m.ResourceURI) {
		return nil, fmt.Errorf("apps: tool %q: resourceUri %q is not a ui:// URI", t.Name, m.ResourceURI)
	}
	return &m, nil
}

// Page is a UI page as a host reads it.
type Page struct {
	URI  string
	HTML string
	// Meta is the content's _meta.ui, or else the listing's; the zero
	// value when neither has one.
	Meta ResourceMeta
}

// ReadPage picks the page uri out of a resources/read result: the
// content with that URI, which must have MIMEType and hold the HTML as
// text or blob. Its metadata is the content's _meta.ui, falling back to
// listing's (the resources/list entry, or nil when the host did not list
// resources), as the extension prescribes.
func ReadPage(res *mcp.ReadResourceResult, uri string, listing *mcp.Resource) (*Page, error) {
	if !validURI(uri) {
		return nil, fmt.Errorf("apps: %q is not a ui:// URI", uri)
	}
	if res == nil {
		return nil, errors.New("apps: no resources/read result")
	}
	for _, c := range res.Contents {
		if c == nil || c.URI != uri {
			continue
		}
		if c.MIMEType != MIMEType {
			return nil, fmt.Errorf("apps: %s has MIME type %q, not %q", uri, c.MIMEType, MIMEType)
		}
		p := &Page{URI: uri, HTML: c.Text}
		if c.Text == "" && len(c.Blob) > 0 {
			p.HTML = string(c.Blob)
		}
		if p.HTML == "" {
			return nil, fmt.Errorf("apps: %s is empty", uri)
		}
		src, where := c.Meta, "content"
		if _, ok := src[MetaKey]; !ok && listing != nil && listing.URI == uri {
			src, where = listing.Meta, "listing"
		}
		if v, ok := src[MetaKey]; ok {
			if err := fromMeta(v, &p.Meta); err != nil {
				return nil, fmt.Errorf("apps: %s: _meta.ui of the %s: %w", uri, where, err)
			}
		}
		return p, nil
	}
	return nil, fmt.Errorf("apps: the result holds no content for %s", uri)
}

// fromMeta decodes a _meta.ui value (decoded JSON, or this package's
// own type on a server) into dst.
func fromMeta(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not an object")
	}
	return json.Unmarshal(b, dst)
}

// sourceRE is what Policy accepts as a declared origin: a scheme, a host
// (optionally "*." and a domain), an optional port and path, and nothing
// a policy would read as a separator, a keyword or another directive.
var sourceRE = regexp.MustCompile(`^[a-z][a-z0-9+.-]*://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:([0-9]+|\*))?(/[^\s;,'"]*)?$`)

// defaultPolicy is the extension's restrictive default, for a page that
// declares no CSP.
const defaultPolicy = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; media-src 'self' data:; connect-src 'none'; object-src 'none'"

// Policy returns the Content-Security-Policy a host enforces on a page
// that declared c, built as the extension describes: inline scripts and
// styles, the resource domains for scripts, styles, images, fonts and
// media, the connect domains for connections, the frame domains for
// nested frames (none when empty), the base URI domains for base-uri
// (the page's own when empty), and no plugins. A nil c gives the
// extension's restrictive default. Declared values that are not plain
// origins (a bare "*", a scheme alone, anything with spaces, quotes,
// commas or semicolons) are left out: a host allows no more than the
// page declared.
func (c *CSP) Policy() string {
	if c == nil {
		return defaultPolicy
	}
	res := sources(c.ResourceDomains)
	var b strings.Builder
	directive := func(name, base, declared, empty string) {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(name)
		switch {
		case base != "" && declared != "":
			b.WriteString(" " + base + " " + declared)
		case base != "":
			b.WriteString(" " + base)
		case declared != "":
			b.WriteString(" " + declared)
		default:
			b.WriteString(" " + empty)
		}
	}
	directive("default-src", "", "", "'none'")
	directive("script-src", "'self' 'unsafe-inline'", res, "")
	directive("style-src", "'self' 'unsafe-inline'", res, "")
	directive("connect-src", "'self'", sources(c.ConnectDomains), "")
	directive("img-src", "'self' data:", res, "")
	directive("font-src", "'self'", res, "")
	directive("media-src", "'self' data:", res, "")
	directive("frame-src", "", sources(c.FrameDomains), "'none'")
	directive("object-src", "", "", "'none'")
	directive("base-uri", "", sources(c.BaseURIDomains), "'self'")
	return b.String()
}

// sources joins the valid origins of list with spaces.
func sources(list []string) string {
	var ok []string
	for _, s := range list {
		if sourceRE.MatchString(s) {
			ok = append(ok, s)
		}
	}
	return strings.Join(ok, " ")
}

// Allow returns the iframe allow attribute that grants p's features, in
// Permission Policy syntax ("camera; clipboard-write"); empty for none.
// A nil p grants nothing.
func (p *Permissions) Allow() string {
	if p == nil {
		return ""
	}
	var out []string
	for i, f := range p.flags() {
		if *f {
			out = append(out, permissionNames[i].feature)
		}
	}
	return strings.Join(out, "; ")
}
