package apps_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/apps"
)

// A host lists the tools, follows the link of each, and reads the page
// with its metadata, over a real connection.
func TestHostReadsTheLinkAndThePageItServes(t *testing.T) {
	c, _ := connect(t, serve(t, newServer(t)), apps.ClientCapabilities(nil))
	tools, err := c.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]*apps.ToolMeta{}
	for _, tool := range tools.Tools {
		m, err := apps.ToolUI(tool)
		if err != nil || m == nil {
			t.Fatalf("%s: %v %v", tool.Name, m, err)
		}
		links[tool.Name] = m
	}
	if !links["show"].VisibleTo(apps.VisibleToModel) || links["refresh"].VisibleTo(apps.VisibleToModel) || !links["refresh"].VisibleTo(apps.VisibleToApp) {
		t.Errorf("visibility: show %+v, refresh %+v", links["show"], links["refresh"])
	}
	uri := links["show"].ResourceURI
	res, err := c.ReadResource(ctx(t), uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := apps.ReadPage(res, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.HTML != page || p.Meta.Domain != "view.example.com" || p.Meta.Permissions.Allow() != "clipboard-write" ||
		p.Meta.PrefersBorder == nil || !*p.Meta.PrefersBorder || p.Meta.CSP == nil || p.Meta.CSP.ConnectDomains[0] != "https://api.example.com" {
		t.Errorf("page %+v, csp %+v", p, p.Meta.CSP)
	}
}

func TestToolUIReadsTheNestedLinkAndTheFlatOne(t *testing.T) {
	for _, tc := range []struct {
		meta string
		want *apps.ToolMeta
	}{
		{`{"ui":{"resourceUri":"ui://a","visibility":["model"]}}`, &apps.ToolMeta{ResourceURI: "ui://a", Visibility: []apps.Visibility{"model"}}},
		{`{"ui/resourceUri":"ui://flat"}`, &apps.ToolMeta{ResourceURI: "ui://flat"}},
		{`{"ui":{"resourceUri":"ui://nested"},"ui/resourceUri":"ui://flat"}`, &apps.ToolMeta{ResourceURI: "ui://nested"}},
		{`{"ui":{"visibility":["app"]},"ui/resourceUri":"ui://flat"}`, &apps.ToolMeta{ResourceURI: "ui://flat", Visibility: []apps.Visibility{"app"}}},
		{`{"ui":{"visibility":["app"]}}`, &apps.ToolMeta{Visibility: []apps.Visibility{"app"}}},
		{`{"ui":{"resourceUri":"ui://a","visibility":["model","later"]}}`, &apps.ToolMeta{ResourceURI: "ui://a", Visibility: []apps.Visibility{"model", "later"}}},
		{`{"example.com/k":1}`, nil},
		{`{}`, nil},
	} {
		var m mcp.Meta
		if err := json.Unmarshal([]byte(tc.meta), &m); err != nil {
			t.Fatal(err)
		}
		got, err := apps.ToolUI(&mcp.Tool{Name: "t", Meta: m})
		if err != nil {
			t.Errorf("%s: %v", tc.meta, err)
			continue
		}
		if js(t, got) != js(t, tc.want) {
			t.Errorf("%s: got %s, want %s", tc.meta, js(t, got), js(t, tc.want))
		}
	}
	if m, err := apps.ToolUI(nil); m != nil || err != nil {
		t.Errorf("nil tool: %v %v", m, err)
	}
}

func TestToolUIRejectsMalformedLinks(t *testing.T) {
	for _, meta := range []string{
		`{"ui":{"resourceUri":"https://example.com/page"}}`,
		`{"ui/resourceUri":"file:///etc/passwd"}`,
		`{"ui/resourceUri":7}`,
		`{"ui":"ui://a"}`,
		`{"ui":{"resourceUri":7}}`,
		`{"ui":{"visibility":"model"}}`,
	} {
		var m mcp.Meta
		if err := json.Unmarshal([]byte(meta), &m); err != nil {
			t.Fatal(err)
		}
		if got, err := apps.ToolUI(&mcp.Tool{Name: "t", Meta: m}); err == nil {
			t.Errorf("%s: accepted as %+v", meta, got)
		}
	}
}

func TestReadPagePrefersTheContentMetadataOverTheListing(t *testing.T) {
	listing := &mcp.Resource{URI: "ui://v", Name: "v", MIMEType: apps.MIMEType, Meta: mcp.Meta{"ui": map[string]any{"domain": "listed.example.com"}}}
	content := func(meta mcp.Meta) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: "ui://other", MIMEType: "text/plain", Text: "not this"},
			{URI: "ui://v", MIMEType: apps.MIMEType, Text: page, Meta: meta},
		}}
	}
	p, err := apps.ReadPage(content(mcp.Meta{"ui": map[string]any{"domain": "content.example.com"}}), "ui://v", listing)
	if err != nil || p.Meta.Domain != "content.example.com" || p.HTML != page {
		t.Errorf("content first: %+v %v", p, err)
	}
	p, err = apps.ReadPage(content(nil), "ui://v", listing)
	if err != nil || p.Meta.Domain != "listed.example.com" {
		t.Errorf("listing fallback: %+v %v", p, err)
	}
	p, err = apps.ReadPage(content(nil), "ui://v", nil)
	if err != nil || p.Meta != (apps.ResourceMeta{}) {
		t.Errorf("no metadata: %+v %v", p, err)
	}
	blob := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://v", MIMEType: apps.MIMEType, Blob: []byte(page)}}}
	if p, err := apps.ReadPage(blob, "ui://v", nil); err != nil || p.HTML != page {
		t.Errorf("blob: %+v %v", p, err)
	}
}

func TestReadPageRejectsWhatIsNotAnAppPage(t *testing.T) {
	for name, tc := range map[string]struct {
		res *mcp.ReadResourceResult
		uri string
	}{
		"another MIME type": {&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://v", MIMEType: "text/html", Text: page}}}, "ui://v"},
		"empty":             {&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://v", MIMEType: apps.MIMEType}}}, "ui://v"},
		"not there":         {&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://w", MIMEType: apps.MIMEType, Text: page}}}, "ui://v"},
		"not ui://":         {&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "https://v", MIMEType: apps.MIMEType, Text: page}}}, "https://v"},
		"bad metadata":      {&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://v", MIMEType: apps.MIMEType, Text: page, Meta: mcp.Meta{"ui": map[string]any{"permissions": map[string]any{"camera": true}}}}}}, "ui://v"},
		"no result":         {nil, "ui://v"},
	} {
		if p, err := apps.ReadPage(tc.res, tc.uri, nil); err == nil {
			t.Errorf("%s: accepted as %+v", name, p)
		}
	}
}

func TestPolicyIsTheRestrictiveDefaultWithoutCSP(t *testing.T) {
	var c *apps.CSP
	got := c.Policy()
	for _, d := range []string{"default-src 'none'", "script-src 'self' 'unsafe-inline'", "style-src 'self' 'unsafe-inline'",
		"img-src 'self' data:", "media-src 'self' data:", "connect-src 'none'", "object-src 'none'"} {
		if !strings.Contains(got, d) {
			t.Errorf("%q lacks %q", got, d)
		}
	}
}

func TestPolicyAllowsTheDeclaredDomainsAndNoMore(t *testing.T) {
	c := &apps.CSP{
		ConnectDomains:  []string{"https://api.example.com", "wss://live.example.com:8443"},
		ResourceDomains: []string{"https://*.cdn.example.com"},
	}
	want := "default-src 'none'; " +
		"script-src 'self' 'unsafe-inline' https://*.cdn.example.com; " +
		"style-src 'self' 'unsafe-inline' https://*.cdn.example.com; " +
		"connect-src 'self' https://api.example.com wss://live.example.com:8443; " +
		"img-src 'self' data: https://*.cdn.example.com; " +
		"font-src 'self' https://*.cdn.example.com; " +
		"media-src 'self' data: https://*.cdn.example.com; " +
		"frame-src 'none'; object-src 'none'; base-uri 'self'"
	if got := c.Policy(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	c = &apps.CSP{FrameDomains: []string{"https://www.youtube.com"}, BaseURIDomains: []string{"https://cdn.example.com/base/"}}
	if got := c.Policy(); !strings.Contains(got, "frame-src https://www.youtube.com;") || !strings.HasSuffix(got, "base-uri https://cdn.example.com/base/") {
		t.Errorf("frames and base: %s", got)
	}
}

// A page's metadata comes from its server, which the host does not
// trust: a value that would widen the policy or inject a directive is
// dropped, never copied.
func TestPolicyDropsSourcesThatAreNotOrigins(t *testing.T) {
	c := &apps.CSP{ConnectDomains: []string{
		"*", "https:", "'unsafe-eval'", "https://a.example.com; script-src *", "https://b.example.com https://evil.example",
		"https://c.example.com,https://d.example.com", "", "data:", "https://ok.example.com",
	}}
	got := c.Policy()
	if !strings.Contains(got, "connect-src 'self' https://ok.example.com;") {
		t.Errorf("got %s", got)
	}
	for _, bad := range []string{"evil", "unsafe-eval", "script-src *", "d.example.com", " * ", "https: "} {
		if strings.Contains(got, bad) {
			t.Errorf("%q leaked into %s", bad, got)
		}
	}
}

func TestAllowListsTheRequestedFeatures(t *testing.T) {
	p := &apps.Permissions{Camera: true, ClipboardWrite: true}
	if got := p.Allow(); got != "camera; clipboard-write" {
		t.Errorf("got %q", got)
	}
	var none *apps.Permissions
	if none.Allow() != "" || (&apps.Permissions{}).Allow() != "" {
		t.Error("no permissions must grant nothing")
	}
}

// Whatever a server sends as _meta, reading it neither panics nor
// returns a link outside the ui:// scheme.
func FuzzUIMetadata(f *testing.F) {
	for _, s := range []string{
		`{"ui":{"resourceUri":"ui://a","visibility":["model","app"]}}`,
		`{"ui/resourceUri":"ui://flat"}`,
		`{"ui":{"csp":{"connectDomains":["https://a"]},"permissions":{"camera":{}},"domain":"d","prefersBorder":false}}`,
		`{"ui":[]}`, `{"ui":null}`, `{"ui/resourceUri":null}`, `{"ui":{"permissions":{"camera":1}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var m mcp.Meta
		if json.Unmarshal([]byte(raw), &m) != nil {
			return
		}
		if link, err := apps.ToolUI(&mcp.Tool{Name: "t", Meta: m}); err == nil && link != nil &&
			link.ResourceURI != "" && !strings.HasPrefix(link.ResourceURI, apps.Scheme) {
			t.Fatalf("link %q from %s", link.ResourceURI, raw)
		}
		res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://v", MIMEType: apps.MIMEType, Text: page, Meta: m}}}
		if p, err := apps.ReadPage(res, "ui://v", &mcp.Resource{URI: "ui://v", Meta: m}); err == nil {
			checkPolicy(t, p.Meta.CSP.Policy())
			_ = p.Meta.Permissions.Allow()
		}
	})
}

// checkPolicy fails unless every directive of policy is one Policy
// writes and every source in it is a keyword Policy writes or a plain
// origin.
func checkPolicy(t *testing.T, policy string) {
	t.Helper()
	names := map[string]bool{"default-src": true, "script-src": true, "style-src": true, "connect-src": true, "img-src": true,
		"font-src": true, "media-src": true, "frame-src": true, "object-src": true, "base-uri": true}
	keywords := map[string]bool{"'self'": true, "'unsafe-inline'": true, "'none'": true, "data:": true}
	seen := map[string]bool{}
	for _, d := range strings.Split(policy, "; ") {
		f := strings.Fields(d)
		if len(f) < 2 || !names[f[0]] || seen[f[0]] {
			t.Fatalf("directive %q in %s", d, policy)
		}
		seen[f[0]] = true
		for _, src := range f[1:] {
			if !keywords[src] && (!strings.Contains(src, "://") || strings.ContainsAny(src, ";,'\"")) {
				t.Fatalf("source %q in %s", src, policy)
			}
		}
	}
}
