package apps_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/apps"
)

const page = `<!DOCTYPE html><html><head><title>t</title></head><body>hi</body></html>`

func yes() *bool { b := true; return &b }

// newServer serves one UI resource with every kind of metadata and two
// tools linked to it: one for everyone, one for the page alone.
func newServer(t *testing.T) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(mcp.Implementation{Name: "apps-test", Version: "1"},
		&mcp.ServerOptions{Capabilities: apps.ServerCapabilities(nil)})
	apps.AddResource(srv, &apps.Resource{
		URI: "ui://test/view.html", Name: "view", Title: "The view", Description: "renders results", HTML: page,
		Meta: apps.ResourceMeta{
			CSP:           &apps.CSP{ConnectDomains: []string{"https://api.example.com"}, ResourceDomains: []string{"https://cdn.example.com"}},
			Permissions:   &apps.Permissions{ClipboardWrite: true},
			Domain:        "view.example.com",
			PrefersBorder: yes(),
		},
	})
	mcp.AddTypedTool(srv, apps.Link(&mcp.Tool{Name: "show", Description: "shows"}, apps.ToolMeta{ResourceURI: "ui://test/view.html"}),
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			if apps.ClientSupports(req.Meta.ClientCapabilities) {
				return mcp.TextResult("rendered"), nil
			}
			return mcp.TextResult("text only"), nil
		})
	mcp.AddTypedTool(srv, apps.Link(&mcp.Tool{Name: "refresh"}, apps.ToolMeta{ResourceURI: "ui://test/view.html", Visibility: []apps.Visibility{apps.VisibleToApp}}),
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
			return mcp.TextResult("refreshed"), nil
		})
	return srv
}

// wantResourceMeta is the _meta.ui of newServer's resource, with its
// keys sorted (as js writes a decoded object).
const wantResourceMeta = `{"csp":{"connectDomains":["https://api.example.com"],"resourceDomains":["https://cdn.example.com"]},` +
	`"domain":"view.example.com","permissions":{"clipboardWrite":{}},"prefersBorder":true}`

func TestUIResourceIsListedWithTheAppMIMETypeAndItsMetadata(t *testing.T) {
	c, w := connect(t, serve(t, newServer(t)), nil)
	if _, err := c.ListResources(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	b := w.get(t, mcp.MethodResourcesList)
	validate(t, "ListResourcesResult", b)
	r := member(t, b, "resources", 0)
	if got := member(t, b, "resources", 0, "uri"); got != "ui://test/view.html" {
		t.Fatalf("uri %v in %s", got, b)
	}
	if got := member(t, b, "resources", 0, "mimeType"); got != "text/html;profile=mcp-app" {
		t.Errorf("mimeType %v", got)
	}
	if got := member(t, b, "resources", 0, "size"); got != float64(len(page)) {
		t.Errorf("size %v, want %d", got, len(page))
	}
	if got := js(t, member(t, b, "resources", 0, "_meta", "ui")); got != wantResourceMeta {
		t.Errorf("listing _meta.ui = %s\nwant %s\n(resource %v)", got, wantResourceMeta, r)
	}
}

func TestUIResourceContentCarriesTheMIMETypeAndMetadata(t *testing.T) {
	c, w := connect(t, serve(t, newServer(t)), nil)
	if _, err := c.ReadResource(ctx(t), "ui://test/view.html", nil); err != nil {
		t.Fatal(err)
	}
	b := w.get(t, mcp.MethodResourcesRead)
	validate(t, "ReadResourceResult", b)
	if got := member(t, b, "contents", 0, "mimeType"); got != apps.MIMEType {
		t.Errorf("mimeType %v", got)
	}
	if got := member(t, b, "contents", 0, "text"); got != page {
		t.Errorf("text %v", got)
	}
	if got := js(t, member(t, b, "contents", 0, "_meta", "ui")); got != wantResourceMeta {
		t.Errorf("content _meta.ui = %s\nwant %s", got, wantResourceMeta)
	}
}

func TestResourceWithoutMetadataSendsNoUIMeta(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "bare", Version: "1"}, nil)
	apps.AddResource(srv, &apps.Resource{URI: "ui://bare", Name: "bare", HTML: page})
	c, w := connect(t, serve(t, srv), nil)
	if _, err := c.ReadResource(ctx(t), "ui://bare", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListResources(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{mcp.MethodResourcesRead, mcp.MethodResourcesList} {
		if b := w.get(t, m); strings.Contains(string(b), `"_meta":{"ui"`) || strings.Contains(string(b), `"ui":`) {
			t.Errorf("%s sent _meta.ui without metadata: %s", m, b)
		}
	}
}

func TestAddResourceRejectsURIsOutsideTheUIScheme(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "x", Version: "1"}, nil)
	for _, uri := range []string{"https://example.com/view.html", "ui:/view", "ui://", "UI://view", ""} {
		mustPanic(t, uri, func() { apps.AddResource(srv, &apps.Resource{URI: uri, Name: "v", HTML: page}) })
	}
	mustPanic(t, "no name", func() { apps.AddResource(srv, &apps.Resource{URI: "ui://v", HTML: page}) })
}

func TestLinkedToolCarriesResourceURIAndVisibility(t *testing.T) {
	c, w := connect(t, serve(t, newServer(t)), nil)
	if _, err := c.ListTools(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	b := w.get(t, mcp.MethodToolsList)
	validate(t, "ListToolsResult", b)
	got := map[string]string{}
	for i := range 2 {
		got[member(t, b, "tools", i, "name").(string)] = js(t, member(t, b, "tools", i, "_meta"))
	}
	want := map[string]string{
		"show":    `{"ui":{"resourceUri":"ui://test/view.html"},"ui/resourceUri":"ui://test/view.html"}`,
		"refresh": `{"ui":{"resourceUri":"ui://test/view.html","visibility":["app"]},"ui/resourceUri":"ui://test/view.html"}`,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s _meta = %s\nwant %s", name, got[name], w)
		}
	}
}

// tools/list is the same for every client (2026-07-28 forbids lists
// that vary per connection, and caches may share them): a client that
// did not declare the extension still sees the link, and ignores it.
func TestToolUIMetaIsSentToEveryClient(t *testing.T) {
	url := serve(t, newServer(t))
	with, ww := connect(t, url, apps.ClientCapabilities(nil))
	without, wo := connect(t, url, nil)
	for _, c := range []*mcp.Client{with, without} {
		if _, err := c.ListTools(ctx(t), nil); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := ww.get(t, mcp.MethodToolsList), wo.get(t, mcp.MethodToolsList); string(a) != string(b) {
		t.Errorf("tools/list differs:\nwith the extension    %s\nwithout the extension %s", a, b)
	}
}

func TestLinkKeepsOtherMetaAndDoesNotChangeASharedMap(t *testing.T) {
	shared := mcp.Meta{"example.com/k": "v"}
	a := apps.Link(&mcp.Tool{Name: "a", Meta: shared}, apps.ToolMeta{ResourceURI: "ui://a"})
	if len(shared) != 1 {
		t.Errorf("the shared map was changed: %v", shared)
	}
	if a.Meta["example.com/k"] != "v" || a.Meta[apps.LegacyResourceURIKey] != "ui://a" {
		t.Errorf("meta %v", a.Meta)
	}
	// Linking again without a resource drops the flat key.
	apps.Link(a, apps.ToolMeta{Visibility: []apps.Visibility{apps.VisibleToApp}})
	if _, ok := a.Meta[apps.LegacyResourceURIKey]; ok {
		t.Errorf("flat key kept for a tool without a resource: %v", a.Meta)
	}
}

func TestLinkRejectsNonUIURIsAndUnknownVisibility(t *testing.T) {
	mustPanic(t, "https URI", func() { apps.Link(&mcp.Tool{Name: "a"}, apps.ToolMeta{ResourceURI: "https://example.com"}) })
	mustPanic(t, "visibility", func() {
		apps.Link(&mcp.Tool{Name: "a"}, apps.ToolMeta{ResourceURI: "ui://a", Visibility: []apps.Visibility{"user"}})
	})
}

func TestVisibilityDefaultsToModelAndApp(t *testing.T) {
	var m apps.ToolMeta
	if !m.VisibleTo(apps.VisibleToModel) || !m.VisibleTo(apps.VisibleToApp) {
		t.Error("empty visibility must mean model and app")
	}
	m.Visibility = []apps.Visibility{apps.VisibleToApp}
	if m.VisibleTo(apps.VisibleToModel) || !m.VisibleTo(apps.VisibleToApp) {
		t.Error("app-only tool")
	}
}

func TestPermissionsAreEmptyObjectsOnTheWire(t *testing.T) {
	all := apps.Permissions{Camera: true, Microphone: true, Geolocation: true, ClipboardWrite: true}
	const want = `{"camera":{},"microphone":{},"geolocation":{},"clipboardWrite":{}}`
	if got := js(t, all); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := js(t, apps.Permissions{}); got != `{}` {
		t.Errorf("none: %s", got)
	}
	var back apps.Permissions
	if err := json.Unmarshal([]byte(`{"microphone":{},"future":{"x":1}}`), &back); err != nil || back != (apps.Permissions{Microphone: true}) {
		t.Errorf("decoded %+v, %v", back, err)
	}
}

func TestPermissionsRejectNonObjectMembers(t *testing.T) {
	for _, in := range []string{`{"camera":true}`, `{"camera":null}`, `[]`, `"camera"`} {
		var p apps.Permissions
		if err := json.Unmarshal([]byte(in), &p); err == nil {
			t.Errorf("%s decoded as %+v", in, p)
		}
	}
}

func TestServerAdvertisesTheExtension(t *testing.T) {
	c, w := connect(t, serve(t, newServer(t)), nil)
	d, err := c.Discover(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "DiscoverResult", w.get(t, mcp.MethodDiscover))
	if got := string(d.Capabilities.Extensions[apps.ExtensionID]); got != `{}` {
		t.Errorf("extensions[%s] = %q in %s", apps.ExtensionID, got, w.get(t, mcp.MethodDiscover))
	}
	if d.Capabilities.Resources == nil || d.Capabilities.Tools == nil {
		t.Errorf("capabilities %+v", d.Capabilities)
	}
}

func TestCapabilityHelpersDoNotChangeTheirBase(t *testing.T) {
	base := &mcp.ServerCapabilities{Extensions: map[string]json.RawMessage{"example.com/x": json.RawMessage(`{}`)}}
	got := apps.ServerCapabilities(base)
	if len(base.Extensions) != 1 || len(got.Extensions) != 2 || string(got.Extensions["example.com/x"]) != `{}` {
		t.Errorf("base %v, got %v", base.Extensions, got.Extensions)
	}
	cbase := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, Extensions: map[string]json.RawMessage{"example.com/x": json.RawMessage(`{}`)}}
	cgot := apps.ClientCapabilities(cbase)
	if len(cbase.Extensions) != 1 || len(cgot.Extensions) != 2 || cgot.Elicitation == nil {
		t.Errorf("base %v, got %+v", cbase.Extensions, cgot)
	}
	if got := string(cgot.Extensions[apps.ExtensionID]); got != `{"mimeTypes":["text/html;profile=mcp-app"]}` {
		t.Errorf("client entry %s", got)
	}
}

// A handler reads the request's own capabilities: a host that declared
// the extension gets the result meant for its page, any other client the
// text-only one, from the same server and connection pool.
func TestHandlerSeesWhetherTheClientRendersPages(t *testing.T) {
	url := serve(t, newServer(t))
	for _, tc := range []struct {
		caps *mcp.ClientCapabilities
		want string
	}{
		{apps.ClientCapabilities(nil), "rendered"},
		{nil, "text only"},
		{&mcp.ClientCapabilities{Extensions: map[string]json.RawMessage{apps.ExtensionID: json.RawMessage(`{"mimeTypes":["text/uri-list"]}`)}}, "text only"},
	} {
		c, _ := connect(t, url, tc.caps)
		res, err := c.CallTool(ctx(t), "show", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != tc.want {
			t.Errorf("caps %+v: got %q, want %q", tc.caps, got, tc.want)
		}
	}
}

func TestClientSupportsNeedsTheAppMIMEType(t *testing.T) {
	for in, want := range map[string]bool{
		`{"mimeTypes":["text/html;profile=mcp-app"]}`:                  true,
		`{"mimeTypes":["text/uri-list","text/html;profile=mcp-app"]}`:  true,
		`{"mimeTypes":["text/html"]}`:                                  false,
		`{}`:                                                           false,
		`{"mimeTypes":"text/html;profile=mcp-app"}`:                    false,
		`{"mimeTypes":["text/html;profile=mcp-app"],"features":["x"]}`: true,
	} {
		caps := mcp.ClientCapabilities{Extensions: map[string]json.RawMessage{apps.ExtensionID: json.RawMessage(in)}}
		if got := apps.ClientSupports(caps); got != want {
			t.Errorf("%s: got %v, want %v", in, got, want)
		}
	}
	if apps.ClientSupports(mcp.ClientCapabilities{}) {
		t.Error("no extensions")
	}
	if s, ok := apps.ClientSettings(mcp.ClientCapabilities{Extensions: map[string]json.RawMessage{apps.ExtensionID: json.RawMessage(`{}`)}}); !ok || s.MIMETypes != nil {
		t.Errorf("declared without settings: %+v %v", s, ok)
	}
}
