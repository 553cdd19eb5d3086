package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// tenantKey is the tenant of a byte stream's requests (their context's
// value: a stream has no headers).
type tenantKey struct{}

// tenantVisible shows a tenant (the X-Tenant header, or the context's
// tenantKey) the features whose name starts with its id and "_"
// (resources: test://<id>/...), and everyone the shared ones.
func tenantVisible(ctx context.Context, kind FeatureKind, name string) bool {
	tenant := RequestHeader(ctx).Get("X-Tenant")
	if tenant == "" {
		tenant, _ = ctx.Value(tenantKey{}).(string)
	}
	if strings.HasPrefix(name, "shared") || strings.HasPrefix(name, "test://shared/") {
		return true
	}
	return tenant != "" && (strings.HasPrefix(name, tenant+"_") || strings.HasPrefix(name, "test://"+tenant+"/"))
}

// newTenantServer has tools, prompts, resources and templates of two
// tenants, a and b, and shared ones.
func newTenantServer(t testing.TB, opts *ServerOptions) *Server {
	if opts == nil {
		opts = &ServerOptions{}
	}
	opts.Visible = tenantVisible
	s := NewServer(Implementation{Name: "tenants", Version: "1"}, opts)
	tool := func(name string, schema string) {
		var in any
		if schema != "" {
			in = json.RawMessage(schema)
		}
		s.AddTool(&Tool{Name: name, InputSchema: in}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(name), nil })
	}
	for _, n := range []string{"a_deploy", "a_logs", "b_deploy", "b_secret", "shared_echo"} {
		tool(n, "")
	}
	tool("b_region", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	tool("a_region", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	for _, n := range []string{"a_brief", "b_brief"} {
		s.AddPrompt(&Prompt{Name: n, Arguments: []PromptArgument{{Name: "topic"}}}, func(context.Context, *GetPromptRequest) (PromptResponse, error) {
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: n}}}}, nil
		}, WithCompletion("topic", func(context.Context, *CompleteRequest) ([]string, error) { return []string{n + "-topic"}, nil }))
	}
	for _, u := range []string{"test://a/notes", "test://b/notes"} {
		s.AddResource(&Resource{URI: u, Name: u}, func(_ context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: u}}}, nil
		})
	}
	for _, u := range []string{"test://a/items/{id}", "test://b/items/{id}"} {
		s.AddResourceTemplate(&ResourceTemplate{URITemplate: u, Name: u}, func(_ context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: u}}}, nil
		}, WithCompletion("id", func(context.Context, *CompleteRequest) ([]string, error) { return []string{u}, nil }))
	}
	return s
}

// asTenant serves h with X-Tenant set to tenant, whatever the client
// sent.
func asTenant(t testing.TB, tenant string, h http.Handler) string {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("X-Tenant", tenant)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// modernNames lists a kind on 2026-07-28, page by page, and returns the
// names (or URIs) in order and the cacheScope of every page.
func modernNames(t testing.TB, url, method, member, key string) ([]string, []string) {
	t.Helper()
	var names, scopes []string
	cursor := ""
	for i := 0; i < 50; i++ {
		p := ""
		if cursor != "" {
			p = `"cursor":` + quote(cursor)
		}
		body := req(i+1, method, p)
		_, msgs := postTo(t, url, body, headersFor(t, body))
		wiretest.CheckWire(t, method, msgs[0])
		r := result(t, lastMsg(t, msgs))
		scopes = append(scopes, r["cacheScope"].(string))
		items := r[member].([]any)
		if len(items) == 0 && r["nextCursor"] != nil {
			t.Fatalf("%s: an empty page with a cursor", method)
		}
		for _, it := range items {
			names = append(names, it.(map[string]any)[key].(string))
		}
		next, _ := r["nextCursor"].(string)
		if next == "" {
			return names, scopes
		}
		cursor = next
	}
	t.Fatalf("%s: too many pages", method)
	return nil, nil
}

// Two principals see different tools, prompts, resources and templates
// on 2026-07-28, page after page, and every filtered list is private.
func TestTwoPrincipalsSeeDifferentFeatures(t *testing.T) {
	t.Parallel()
	s := newTenantServer(t, &ServerOptions{PageSize: 2, CacheScope: CachePublic})
	h := NewHTTPHandler(s, nil)
	a, b := asTenant(t, "a", h), asTenant(t, "b", h)
	cases := []struct{ method, member, key string }{
		{MethodToolsList, "tools", "name"},
		{methodPromptsList, "prompts", "name"},
		{MethodResourcesList, "resources", "uri"},
		{methodResourceTemplatesList, "resourceTemplates", "uriTemplate"},
	}
	want := map[string][][]string{
		MethodToolsList:             {{"a_deploy", "a_logs", "a_region", "shared_echo"}, {"b_deploy", "b_region", "b_secret", "shared_echo"}},
		methodPromptsList:           {{"a_brief"}, {"b_brief"}},
		MethodResourcesList:         {{"test://a/notes"}, {"test://b/notes"}},
		methodResourceTemplatesList: {{"test://a/items/{id}"}, {"test://b/items/{id}"}},
	}
	for _, c := range cases {
		for i, url := range []string{a, b} {
			names, scopes := modernNames(t, url, c.method, c.member, c.key)
			if !slices.Equal(names, want[c.method][i]) {
				t.Errorf("%s as %s: %v, want %v", c.method, "ab"[i:i+1], names, want[c.method][i])
			}
			for _, sc := range scopes {
				if sc != string(CachePrivate) {
					t.Errorf("%s: a filtered list is cacheScope %q", c.method, sc)
				}
			}
		}
	}
	// Without the hook the server's scope applies, as before.
	plain := newTestServer(t, &ServerOptions{CacheScope: CachePublic})
	r := result(t, post(t, NewHTTPHandler(plain, nil), req(1, MethodToolsList, "")).last(t))
	if r["cacheScope"] != string(CachePublic) {
		t.Fatalf("unfiltered list: cacheScope %v", r["cacheScope"])
	}
}

// hiddenAndAbsent calls the same request for a feature hidden from the
// caller and, after it was removed, for the absent one: the answers must
// be the same bytes with the same status.
func hiddenAndAbsent(t *testing.T, url string, body string, hdr http.Header, remove func()) {
	t.Helper()
	st1, hidden := postTo(t, url, body, hdr)
	remove()
	st2, absent := postTo(t, url, body, hdr)
	if st1 != st2 || len(hidden) != 1 || len(absent) != 1 || !bytes.Equal(hidden[0], absent[0]) {
		t.Fatalf("hidden: %d %s\nabsent: %d %s", st1, hidden, st2, absent)
	}
	if v := decodeMsg(t, hidden[0]); v["error"] == nil {
		t.Fatalf("a hidden feature answered %s", hidden[0])
	}
}

// A principal cannot call, get, read or complete another's features:
// the answer is byte for byte the one for a feature that does not
// exist, on 2026-07-28.
func TestHiddenFeaturesAreAnsweredAsUnknown(t *testing.T) {
	t.Parallel()
	s := newTenantServer(t, nil)
	a := asTenant(t, "a", NewHTTPHandler(s, nil))
	call := req(1, MethodToolsCall, `"name":"b_secret","arguments":{}`)
	hiddenAndAbsent(t, a, call, headersFor(t, call), func() { s.RemoveTools("b_secret") })

	// A hidden tool's Mcp-Param-* headers are not checked: a missing one
	// tells nothing.
	region := req(2, MethodToolsCall, `"name":"b_region","arguments":{"region":"eu"}`)
	hiddenAndAbsent(t, a, region, headersFor(t, region), func() { s.RemoveTools("b_region") })
	// A visible tool's still are.
	own := req(3, MethodToolsCall, `"name":"a_region","arguments":{"region":"eu"}`)
	status, msgs := postTo(t, a, own, headersFor(t, own))
	if v := lastMsg(t, msgs); status != http.StatusBadRequest || errorCode(t, v) != CodeHeaderMismatch {
		t.Fatalf("visible tool without its Mcp-Param-Region: %d %v", status, v)
	}
	h := headersFor(t, own)
	h.Set("Mcp-Param-Region", "eu")
	if _, msgs := postTo(t, a, own, h); text(t, lastMsg(t, msgs)) != "a_region" {
		t.Fatalf("visible tool with its header: %s", msgs)
	}

	get := req(4, MethodPromptsGet, `"name":"b_brief"`)
	complete := req(5, methodComplete, `"ref":{"type":"ref/prompt","name":"b_brief"},"argument":{"name":"topic","value":""}`)
	st, before := postTo(t, a, complete, headersFor(t, complete))
	hiddenAndAbsent(t, a, get, headersFor(t, get), func() { s.RemovePrompts("b_brief") })
	st2, after := postTo(t, a, complete, headersFor(t, complete))
	if st != st2 || !bytes.Equal(before[0], after[0]) {
		t.Fatalf("completion of a hidden prompt %s, of an absent one %s", before, after)
	}

	read := req(6, MethodResourcesRead, `"uri":"test://b/notes"`)
	hiddenAndAbsent(t, a, read, headersFor(t, read), func() { s.RemoveResources("test://b/notes") })
	// A hidden template does not match: the read is not found.
	item := req(7, MethodResourcesRead, `"uri":"test://b/items/1"`)
	if _, msgs := postTo(t, a, item, headersFor(t, item)); errorCode(t, lastMsg(t, msgs)) != CodeInvalidParams {
		t.Fatalf("read through a hidden template: %s", msgs)
	}
	// Its completer is not used; the (absent) fallback answers nothing.
	tc := req(8, methodComplete, `"ref":{"type":"ref/resource","uri":"test://b/items/{id}"},"argument":{"name":"id","value":""}`)
	if _, msgs := postTo(t, a, tc, headersFor(t, tc)); len(result(t, lastMsg(t, msgs))["completion"].(map[string]any)["values"].([]any)) != 0 {
		t.Fatalf("completion through a hidden template: %s", msgs)
	}
	// The tenant's own are served, with a private read.
	mine := req(9, MethodResourcesRead, `"uri":"test://a/notes"`)
	if _, msgs := postTo(t, a, mine, headersFor(t, mine)); result(t, lastMsg(t, msgs))["cacheScope"] != string(CachePrivate) {
		t.Fatalf("own resource: %s", msgs)
	}
}

// On a 2025-11-25 session too, two principals see different tools and
// cannot call each other's.
func TestTwoPrincipalsSeeDifferentToolsOnALegacySession(t *testing.T) {
	t.Parallel()
	s := newTenantServer(t, nil)
	h := NewHTTPHandler(s, nil)
	a := newLegacyClient(t, asTenant(t, "a", h), `{}`)
	b := newLegacyClient(t, asTenant(t, "b", h), `{}`)
	names := func(c *legacyClient) []string {
		var out []string
		for _, it := range result(t, c.request(MethodToolsList, ""))["tools"].([]any) {
			out = append(out, it.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := names(a); !slices.Equal(got, []string{"a_deploy", "a_logs", "a_region", "shared_echo"}) {
		t.Fatalf("a's session lists %v", got)
	}
	if got := names(b); !slices.Equal(got, []string{"b_deploy", "b_region", "b_secret", "shared_echo"}) {
		t.Fatalf("b's session lists %v", got)
	}
	hidden := a.request(MethodToolsCall, `{"name":"b_secret","arguments":{}}`)
	s.RemoveTools("b_secret")
	absent := a.request(MethodToolsCall, `{"name":"b_secret","arguments":{}}`)
	delete(hidden, "id")
	delete(absent, "id")
	hb, _ := json.Marshal(hidden)
	ab, _ := json.Marshal(absent)
	if !bytes.Equal(hb, ab) || hidden["error"] == nil {
		t.Fatalf("hidden %s, absent %s", hb, ab)
	}
	if legacyText(t, b.request(MethodToolsCall, `{"name":"b_deploy","arguments":{}}`)) != "b_deploy" {
		t.Fatal("b cannot call its own tool")
	}
}

// A listen stream is told of a change only when a feature it changed is
// visible to the request that opened the stream; no change names a
// feature in any case.
func TestListenStreamsAreToldOnlyOfChangesTheyCanSee(t *testing.T) {
	t.Parallel()
	s := newTenantServer(t, nil)
	h := NewHTTPHandler(s, nil)
	url := asTenant(t, "a", h)
	body := req(1, methodSubscriptionsListen, `"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["test://a/marker"]}`)
	r, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = headersFor(t, body)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := sseEvents(t, resp.Body)
	if m := nextEvent(t, events); m["method"] != NotificationSubscriptionsAck {
		t.Fatalf("first event %v", m)
	}
	noop := func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil }
	s.AddTool(&Tool{Name: "b_new"}, noop)                                                                                             // b's: not told
	s.RemoveTools("b_deploy")                                                                                                         // b's: not told
	s.ResourceUpdated("test://b/marker")                                                                                              // not subscribed, b's
	s.AddPrompt(&Prompt{Name: "shared_prompt"}, func(context.Context, *GetPromptRequest) (PromptResponse, error) { return nil, nil }) // told
	s.RemoveTools("b_region", "a_logs")                                                                                               // one of a's: told
	s.ResourceUpdated("test://a/marker")                                                                                              // the end
	var got []string
	for len(got) < 10 {
		m := nextEvent(t, events)
		got = append(got, m["method"].(string))
		if m["method"] == NotificationResourceUpdated {
			break
		}
	}
	want := []string{notificationPromptListChanged, NotificationToolListChanged, NotificationResourceUpdated}
	if !slices.Equal(got, want) {
		t.Fatalf("stream was told %v, want %v", got, want)
	}
}

// sseEvents decodes the data events of an SSE body as they come.
func sseEvents(t testing.TB, body io.Reader) <-chan map[string]any {
	ch := make(chan map[string]any, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var v map[string]any
				if json.Unmarshal([]byte(d), &v) == nil {
					ch <- v
				}
			}
		}
	}()
	return ch
}

// nextEvent returns the next event, failing after a while.
func nextEvent(t testing.TB, events <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for an event")
	}
	return nil
}
