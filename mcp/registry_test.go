package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// item is a registry entry for the tests of the registry itself.
type item struct {
	name string
	n    int
}

func (i *item) key() string   { return i.name }
func (i *item) listed() *item { return i }

func countedRegistry(ordered bool) (*registry[*item, *item], *atomic.Int64) {
	var n atomic.Int64
	return newRegistry[*item](ordered, func([]string) { n.Add(1) }), &n
}

func keysOf(l *listing[*item, *item]) string { return strings.Join(l.keys, ",") }

// Every add is one change; a remove of several keys is one change, and
// reports how many it removed.
func TestRegistryNotifiesOncePerChange(t *testing.T) {
	t.Parallel()
	r, n := countedRegistry(false)
	for _, k := range []string{"a", "b", "c"} {
		r.add(&item{name: k})
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("3 adds announced %d changes", got)
	}
	r.add(&item{name: "a", n: 1}) // a replacement is a change
	if got := n.Load(); got != 4 {
		t.Fatalf("a replacement announced %d changes in all, want 4", got)
	}
	if removed := r.remove("a", "b", "missing", "a"); removed != 2 {
		t.Errorf("remove reported %d removed, want 2", removed)
	}
	if got := n.Load(); got != 5 {
		t.Errorf("one remove of two keys announced %d changes in all, want 5", got)
	}
	if e, ok := r.get("c"); !ok || e.name != "c" {
		t.Errorf("c is gone: %v %v", e, ok)
	}
}

// A remove that found none of its keys changed nothing, so it tells no
// one and keeps the listing it had.
func TestRegistryRemoveOfUnknownKeysAnnouncesNothing(t *testing.T) {
	t.Parallel()
	r, n := countedRegistry(false)
	r.add(&item{name: "a"})
	before := r.list()
	if removed := r.remove("x", "y"); removed != 0 {
		t.Errorf("removed %d", removed)
	}
	if removed := r.remove(); removed != 0 {
		t.Errorf("removed %d", removed)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d changes announced, want the add's only", got)
	}
	if r.list() != before {
		t.Error("the listing was rebuilt although nothing changed")
	}
}

// The change is announced after the registry's lock is released: the
// callback may read the registry (and reaches the hub and the fleet,
// which have locks of their own).
func TestRegistryNotifiesWithoutHoldingItsLock(t *testing.T) {
	t.Parallel()
	var r *registry[*item, *item]
	calls := 0
	r = newRegistry[*item](false, func([]string) {
		calls++
		if !r.mu.TryLock() {
			t.Error("the change was announced under the registry's lock")
			return
		}
		r.mu.Unlock()
		_ = r.list() // reading from the callback works
	})
	r.add(&item{name: "a"})
	r.remove("a")
	if calls != 2 {
		t.Errorf("%d calls", calls)
	}
}

// The listing is built on the first read after a change and shared by
// every read until the next one: a read never sorts again.
func TestRegistryListIsBuiltOncePerChange(t *testing.T) {
	t.Parallel()
	r, _ := countedRegistry(false)
	for _, k := range []string{"d", "b", "a", "c"} {
		r.add(&item{name: k})
	}
	if r.snap.Load() != nil {
		t.Fatal("a listing was built before anything read it")
	}
	l := r.list()
	if keysOf(l) != "a,b,c,d" {
		t.Fatalf("listing %s", keysOf(l))
	}
	if r.list() != l || r.snap.Load() != l {
		t.Error("a second read built a second listing")
	}
	r.add(&item{name: "e"})
	l2 := r.list()
	if l2 == l || keysOf(l2) != "a,b,c,d,e" {
		t.Errorf("after a change: %s (same listing: %v)", keysOf(l2), l2 == l)
	}
	if keysOf(l) != "a,b,c,d" {
		t.Errorf("an old listing changed under its reader: %s", keysOf(l))
	}
}

// Readers racing with registrations always see a sorted list without
// duplicates whose keys, entries and views agree, and once registration
// stops every read sees the same final list.
func TestRegistryListIsSortedAndStableUnderConcurrentRegistration(t *testing.T) {
	t.Parallel()
	r, _ := countedRegistry(false)
	const writers, readers, ops = 4, 4, 300
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range ops {
				k := string(rune('a'+w)) + itoa(i%17)
				if i%3 == 2 {
					r.remove(k)
				} else {
					r.add(&item{name: k, n: i})
				}
			}
		})
	}
	var bad atomic.Int64
	stop := make(chan struct{})
	var rg sync.WaitGroup
	for range readers {
		rg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				l := r.list()
				if len(l.keys) != len(l.entries) || len(l.keys) != len(l.views) ||
					!slices.IsSorted(l.keys) || len(slices.Compact(slices.Clone(l.keys))) != len(l.keys) {
					bad.Add(1)
					continue
				}
				for i, k := range l.keys {
					if l.entries[i].name != k || l.views[i] != l.entries[i] {
						bad.Add(1)
					}
				}
				if e, ok := r.get("a0"); ok && e.name != "a0" {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d inconsistent reads", n)
	}
	l := r.list()
	if r.list() != l {
		t.Error("reads after the last change do not share one listing")
	}
	var want []string
	r.mu.RLock()
	for k := range r.items {
		want = append(want, k)
	}
	r.mu.RUnlock()
	slices.Sort(want)
	if !slices.Equal(l.keys, want) {
		t.Errorf("final listing %v, registered %v", l.keys, want)
	}
}

// An ordered registry lists (and iterates) in registration order, and a
// replacement is a new registration: it comes last.
func TestRegistryOrderedKeepsRegistrationOrderAndAReplacementComesLast(t *testing.T) {
	t.Parallel()
	r, n := countedRegistry(true)
	for _, k := range []string{"c", "a", "b"} {
		r.add(&item{name: k})
	}
	if got := keysOf(r.list()); got != "c,a,b" {
		t.Errorf("listing %s, want registration order", got)
	}
	r.add(&item{name: "c", n: 1})
	if got := keysOf(r.list()); got != "a,b,c" {
		t.Errorf("after replacing c: %s", got)
	}
	if e := r.inOrder()[2]; e.name != "c" || e.n != 1 {
		t.Errorf("the replacement is not the one kept: %+v", e)
	}
	if r.len() != 3 || n.Load() != 4 {
		t.Errorf("len %d, changes %d", r.len(), n.Load())
	}
}

// The lookup of tools/call, and the walk of the templates by
// resources/read, take no allocation.
func TestAllocsRegistryLookupTakesNone(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	s := benchServer()
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := s.tools.get("echo"); !ok {
			t.Fatal("echo is not registered")
		}
	}); n != 0 {
		t.Errorf("tools lookup: %.0f allocations", n)
	}
	_ = s.templates.inOrder()
	if n := testing.AllocsPerRun(100, func() { _ = s.templates.inOrder() }); n != 0 {
		t.Errorf("template iteration: %.0f allocations", n)
	}
}

// ---- through the Server ----

// recordingFanout hands out what the server publishes to the fleet.
type recordingFanout struct{ published chan Change }

func (f *recordingFanout) Publish(_ context.Context, c Change) error {
	f.published <- c
	return nil
}

func (f *recordingFanout) Subscribe(ctx context.Context, _ func(Change)) error {
	<-ctx.Done()
	return nil
}

// Removing several tools at once is one list-changed notification, to
// the server's own streams and to the fleet; removing none that are
// registered is none.
func TestServerRemovalNotifiesStreamsAndFleetOncePerCall(t *testing.T) {
	t.Parallel()
	f := &recordingFanout{published: make(chan Change, 64)}
	s := NewServer(Implementation{Name: "t", Version: "1"}, &ServerOptions{Fanout: f})
	defer s.Close()
	noop := func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil }
	s.AddTool(&Tool{Name: "a"}, noop)
	s.AddTool(&Tool{Name: "b"}, noop)
	l := s.hub.add(SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"marker"}})
	defer s.hub.remove(l)

	s.RemoveTools("a", "b")
	s.RemoveTools("a", "nope")
	s.ResourceUpdated("marker") // everything before it has been queued

	type seen struct {
		kind changeKind
		uri  string
	}
	var local []seen
	for _, c := range l.take() {
		local = append(local, seen{c.kind, c.uri})
	}
	if want := []seen{{kind: changeTools}, {kind: changeResource, uri: "marker"}}; !slices.Equal(local, want) {
		t.Errorf("streams got %+v, want %+v", local, want)
	}
	var fleet []Change
	for c := range f.published {
		fleet = append(fleet, c)
		if c.URI == "marker" {
			break
		}
	}
	want := []Change{{Kind: ChangeTools}, {Kind: ChangeTools}, {Kind: ChangeTools}, {Kind: ChangeResource, URI: "marker"}}
	if !slices.Equal(fleet, want) { // two adds, one removal, the marker
		t.Errorf("fleet got %+v, want %+v", fleet, want)
	}
}

// resources/read tries the templates in registration order, and
// resources/templates/list pages through them in that same order; a
// replaced template is tried (and listed) after the others.
func TestTemplatesAreTriedAndListedInRegistrationOrder(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, &ServerOptions{PageSize: 2})
	tmpl := func(uri, text string) {
		s.AddResourceTemplate(&ResourceTemplate{URITemplate: uri, Name: text},
			func(_ context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
				return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: text}}}, nil
			})
	}
	tmpl("x://{a}", "first")
	tmpl("x://{b}", "second")
	tmpl("z://{c}", "z")
	tmpl("y://{d}", "y")
	tmpl("w://{e}", "w")
	h := NewHTTPHandler(s, nil)
	read := func() string {
		r := result(t, post(t, h, req(1, MethodResourcesRead, `"uri":"x://v"`)).last(t))
		return r["contents"].([]any)[0].(map[string]any)["text"].(string)
	}
	listAll := func() string {
		var names []string
		p := ""
		for i := 0; i < 10; i++ {
			r := result(t, post(t, h, req(i, methodResourceTemplatesList, p)).last(t))
			for _, x := range r["resourceTemplates"].([]any) {
				names = append(names, x.(map[string]any)["name"].(string))
			}
			nc, ok := r["nextCursor"].(string)
			if !ok {
				break
			}
			c, _ := json.Marshal(nc)
			p = `"cursor":` + string(c)
		}
		return strings.Join(names, ",")
	}
	if got := read(); got != "first" {
		t.Errorf("read matched %q, want the first registered", got)
	}
	if got := listAll(); got != "first,second,z,y,w" {
		t.Errorf("templates listed %s", got)
	}
	tmpl("x://{a}", "first again")
	if got := read(); got != "second" {
		t.Errorf("after the replacement read matched %q", got)
	}
	if got := listAll(); got != "second,z,y,w,first again" {
		t.Errorf("after the replacement templates listed %s", got)
	}
}

// A cursor names the last item of its page: removing that item does not
// move the next page.
func TestListCursorSurvivesRemovalOfItsItem(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, &ServerOptions{PageSize: 2})
	for _, u := range []string{"r://d", "r://b", "r://a", "r://c", "r://e"} {
		s.AddResource(&Resource{URI: u, Name: u}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{}, nil
		})
	}
	h := NewHTTPHandler(s, nil)
	uris := func(r map[string]any) string {
		var out []string
		for _, x := range r["resources"].([]any) {
			out = append(out, x.(map[string]any)["uri"].(string))
		}
		return strings.Join(out, ",")
	}
	first := result(t, post(t, h, req(1, MethodResourcesList, "")).last(t))
	if got := uris(first); got != "r://a,r://b" {
		t.Fatalf("first page %s", got)
	}
	s.RemoveResources("r://b")
	c, _ := json.Marshal(first["nextCursor"])
	second := result(t, post(t, h, req(2, MethodResourcesList, `"cursor":`+string(c))).last(t))
	if got := uris(second); got != "r://c,r://d" {
		t.Errorf("second page %s, want r://c,r://d", got)
	}
}

// A kind stops being advertised when its last registration is removed
// (unless the options force it).
func TestCapabilitiesFollowRemovals(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "t"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	s.AddPrompt(&Prompt{Name: "p"}, func(context.Context, *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil })
	s.AddResource(&Resource{URI: "r://x", Name: "x"}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{}, nil
	})
	if c := s.capabilities(); c.Tools == nil || c.Prompts == nil || c.Resources == nil {
		t.Fatalf("registered, advertised %+v", c)
	}
	s.RemoveTools("t")
	s.RemovePrompts("p")
	s.RemoveResources("r://x")
	if c := s.capabilities(); c.Tools != nil || c.Prompts != nil || c.Resources != nil {
		t.Errorf("all removed, still advertised %+v", c)
	}
}

// Tools come and go while clients call and list them over a real
// connection: every call of a tool that stays registered succeeds, every
// page is sorted, and the race detector finds nothing.
func TestRegistrationWhileServingIsRaceFree(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	srv := httptest.NewServer(NewHTTPHandler(s, nil))
	defer srv.Close()
	noop := func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil }
	do := func(body string) (map[string]any, error) {
		r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		r.Header = headersFor(t, body)
		resp, err := srv.Client().Do(r)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		return v, json.Unmarshal(b, &v)
	}
	stop := make(chan struct{})
	var writes atomic.Int64
	var ww sync.WaitGroup
	for w := range 2 {
		ww.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := "dyn" + itoa(w) + "_" + itoa(i%7)
				if i%2 == 0 {
					s.AddTool(&Tool{Name: name}, noop)
				} else {
					s.RemoveTools(name)
				}
				writes.Add(1)
			}
		})
	}
	var wg sync.WaitGroup
	var failures atomic.Int64
	for c := range 3 {
		wg.Go(func() {
			for i := range 20 {
				v, err := do(req(i, MethodToolsCall, `"name":"echo","arguments":{"text":"hi"}`))
				if err != nil || v["result"] == nil {
					t.Errorf("client %d: tools/call: %v %v", c, err, v)
					failures.Add(1)
				}
				v, err = do(req(i, MethodToolsList, ""))
				if err != nil || v["result"] == nil {
					t.Errorf("client %d: tools/list: %v %v", c, err, v)
					continue
				}
				var names []string
				for _, x := range v["result"].(map[string]any)["tools"].([]any) {
					names = append(names, x.(map[string]any)["name"].(string))
				}
				if !slices.IsSorted(names) {
					t.Errorf("client %d: unsorted page %v", c, names)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	ww.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d calls failed", failures.Load())
	}
	if writes.Load() == 0 {
		t.Error("no registration happened while serving")
	}
}

// A removed resource template is listed no more, and reads of the URIs
// it matched are unknown resources.
func TestRemovedResourceTemplatesNoLongerMatch(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "file:///{name}", Name: "files"},
		func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "x"}}}, nil
		})
	h := NewHTTPHandler(s, nil)
	if v := post(t, h, req(1, MethodResourcesRead, `"uri":"file:///a"`)).last(t); v["error"] != nil {
		t.Fatalf("read through the template: %v", v)
	}
	s.RemoveResourceTemplates("file:///{name}", "file:///{never}")
	if r := result(t, post(t, h, req(2, methodResourceTemplatesList, "")).last(t)); len(r["resourceTemplates"].([]any)) != 0 {
		t.Errorf("a removed template is still listed: %v", r)
	}
	v := post(t, h, req(3, MethodResourcesRead, `"uri":"file:///a"`)).last(t)
	if e, _ := v["error"].(map[string]any); e == nil || e["code"] != float64(CodeInvalidParams) || e["message"] != "Resource not found: file:///a" {
		t.Errorf("read through a removed template: %v", v)
	}
}
