package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// methodCounter counts the requests a Server handles, by method.
type methodCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *methodCounter) middleware(next ServerHandler) ServerHandler {
	return func(ctx context.Context, method string, p Params) (Result, error) {
		m.mu.Lock()
		if m.n == nil {
			m.n = map[string]int{}
		}
		m.n[method]++
		m.mu.Unlock()
		return next(ctx, method, p)
	}
}

func (m *methodCounter) count(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[method]
}

// fakeClock is a Client's cache clock under the test's control.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(cs ...*Client) *fakeClock {
	fc := &fakeClock{t: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
	for _, c := range cs {
		c.now = fc.now
	}
	return fc
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// cacheServer is a Server whose cacheable results are fresh for ttl,
// in scope, counting the requests it handles.
func cacheServer(t testing.TB, ttl time.Duration, scope CacheScope) (*Server, *methodCounter) {
	mc := &methodCounter{}
	s := NewServer(Implementation{Name: "cache", Version: "1"}, &ServerOptions{ListTTL: ttl, CacheScope: scope, PageSize: 2, Middleware: []ServerMiddleware{mc.middleware}})
	for i := range 5 {
		s.AddTool(&Tool{Name: fmt.Sprintf("t%d", i)}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult("ok"), nil })
	}
	s.AddPrompt(&Prompt{Name: "p"}, func(context.Context, *GetPromptRequest) (PromptResponse, error) {
		return &GetPromptResult{Messages: []PromptMessage{}}, nil
	})
	read := func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "x"}}, Cache: Cache{TTLMs: ttl.Milliseconds()}}, nil
	}
	s.AddResource(&Resource{URI: "test://a", Name: "a"}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		res, err := read(ctx, r)
		return res.(*ReadResourceResult), err
	})
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"}, read)
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://ask/{id}", Name: "ask"}, func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
		if _, err := r.InputResponses.Roots("where"); err != nil {
			return &InputRequiredResult{InputRequests: map[string]InputRequest{"where": &ListRootsRequest{}}}, nil
		}
		return read(ctx, r)
	})
	return s, mc
}

func drainTools(t testing.TB, ctx context.Context, c *Client) int {
	t.Helper()
	n := 0
	for _, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// SEP-2549: a result is fresh for ttlMs from its receipt; while fresh,
// the same request is answered without sending anything; once stale, it
// is sent again. Every cacheable method, every page on its own.
func TestCachedResultWithinTTLMakesNoRequest(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"http", "memory"} {
		t.Run(tr, func(t *testing.T) {
			s, mc := cacheServer(t, time.Minute, CachePublic)
			var c *Client
			if tr == "http" {
				c = httpClient(t, s, nil, nil)
			} else {
				c = memClient(t, s, nil)
			}
			clock := newFakeClock(c)
			ctx := context.Background()
			calls := func() {
				t.Helper()
				if n := drainTools(t, ctx, c); n != 5 {
					t.Fatalf("%d tools", n)
				}
				for _, err := range c.Prompts(ctx) {
					if err != nil {
						t.Fatal(err)
					}
				}
				for _, err := range c.Resources(ctx) {
					if err != nil {
						t.Fatal(err)
					}
				}
				for _, err := range c.ResourceTemplates(ctx) {
					if err != nil {
						t.Fatal(err)
					}
				}
				if _, err := c.Discover(ctx); err != nil {
					t.Fatal(err)
				}
				if r, err := c.ReadResource(ctx, "test://items/1", nil); err != nil || r.Contents[0].Text != "x" {
					t.Fatal(r, err)
				}
			}
			want := map[string]int{MethodToolsList: 3, methodPromptsList: 1, MethodResourcesList: 1, methodResourceTemplatesList: 1, MethodDiscover: 1, MethodResourcesRead: 1}
			check := func(times int) {
				t.Helper()
				for m, n := range want {
					if got := mc.count(m); got != n*times {
						t.Errorf("%s: %d requests, want %d", m, got, n*times)
					}
				}
			}
			calls()
			check(1)
			clock.advance(59 * time.Second)
			calls()
			check(1) // all fresh: nothing sent
			clock.advance(time.Second)
			calls()
			check(2) // ttlMs elapsed: all sent again
		})
	}
}

// ttlMs 0 (the server default) means immediately stale: never kept.
func TestCachedResultWithZeroTTLIsNeverKept(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, 0, CachePublic)
	c := memClient(t, s, nil)
	for range 3 {
		if _, err := c.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := mc.count(MethodToolsList); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

// A list-changed notification received on a Listen stream makes the
// cached pages of that list stale at once; resources/updated makes the
// cached read of that resource stale, and no other.
func TestListChangedNotificationInvalidatesTheCache(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Hour, CachePublic)
	clientTransports(t, s, nil, func(t *testing.T, c *Client) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		before := map[string]int{}
		for _, m := range []string{MethodToolsList, methodPromptsList, MethodResourcesList, methodResourceTemplatesList, MethodResourcesRead} {
			before[m] = mc.count(m)
		}
		sent := func(m string) int { return mc.count(m) - before[m] }
		fill := func() {
			t.Helper()
			drainTools(t, ctx, c)
			for _, f := range []func() error{
				func() error { _, err := c.ListPrompts(ctx, nil); return err },
				func() error { _, err := c.ListResources(ctx, nil); return err },
				func() error { _, err := c.ListResourceTemplates(ctx, nil); return err },
				func() error { _, err := c.ReadResource(ctx, "test://a", nil); return err },
				func() error { _, err := c.ReadResource(ctx, "test://items/2", nil); return err },
			} {
				if err := f(); err != nil {
					t.Fatal(err)
				}
			}
		}
		pages := func(n int) int { return (n + 1) / 2 } // PageSize 2
		tools := s.tools.len()
		fill()
		fill()
		if sent(MethodToolsList) != pages(tools) || sent(MethodResourcesRead) != 2 || sent(methodPromptsList) != 1 {
			t.Fatalf("before any notification: %v", mc.n)
		}
		got := make(chan string, 16)
		done := make(chan error, 1)
		go func() {
			done <- c.Listen(ctx, SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: []string{"test://a"}},
				func(n *ListenNotification) { got <- n.Method })
		}()
		wait := func(method string) {
			t.Helper()
			for {
				select {
				case m := <-got:
					if m == method {
						return
					}
				case err := <-done:
					t.Fatalf("Listen ended: %v", err)
				case <-time.After(5 * time.Second):
					t.Fatalf("no %s", method)
				}
			}
		}
		wait(NotificationSubscriptionsAck)

		name := "added_" + strings.ReplaceAll(t.Name(), "/", "_")
		s.AddTool(&Tool{Name: name}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
		wait(NotificationToolListChanged)
		if n := drainTools(t, ctx, c); n != tools+1 {
			t.Fatalf("after the change: %d tools, want %d", n, tools+1)
		}
		if n, want := sent(MethodToolsList), pages(tools)+pages(tools+1); n != want {
			t.Fatalf("tools/list after list_changed: %d requests in all, want %d (every page again)", n, want)
		}
		fill()
		if sent(methodPromptsList) != 1 || sent(MethodResourcesList) != 1 || sent(MethodResourcesRead) != 2 {
			t.Fatalf("a tools notification touched other results: %v", mc.n)
		}

		s.ResourceUpdated("test://a")
		wait(NotificationResourceUpdated)
		fill()
		if n := sent(MethodResourcesRead); n != 3 {
			t.Fatalf("resources/read after resources/updated of test://a: %d requests, want 3 (test://a again, test://items/2 still cached)", n)
		}

		s.AddPrompt(&Prompt{Name: name}, func(context.Context, *GetPromptRequest) (PromptResponse, error) { return nil, nil })
		wait(notificationPromptListChanged)
		s.AddResource(&Resource{URI: "test://" + name, Name: name}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) { return nil, nil })
		wait(notificationResourceListChanged)
		fill()
		if sent(methodPromptsList) != 2 || sent(MethodResourcesList) != 2 || sent(methodResourceTemplatesList) != 2 {
			t.Fatalf("after prompts and resources list_changed: %v", mc.n)
		}
		cancel()
		<-done
	})
}

// purgeSignal is a store that tells when it is purged.
type purgeSignal struct {
	*MemoryCache
	purged chan string
}

func (p *purgeSignal) Purge(prefix string) {
	p.MemoryCache.Purge(prefix)
	select {
	case p.purged <- prefix:
	default:
	}
}

// The notifications of a legacy session's GET stream invalidate too:
// here a store shared (by URL) with a modern client of the same server.
func TestLegacySessionNotificationInvalidatesTheCache(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Hour, CachePublic)
	store := &purgeSignal{MemoryCache: NewMemoryCache(0, 0), purged: make(chan string, 4)}
	ts := httpTestServer(t, s)
	modern := NewClient(NewHTTPClientTransport(ts+"/mcp", nil), &ClientOptions{Cache: CacheOptions{Store: store}})
	legacy := NewClient(NewHTTPClientTransport(ts+"/mcp", nil), &ClientOptions{Mode: ModeLegacy, Cache: CacheOptions{Store: store}})
	t.Cleanup(func() { modern.Close(); legacy.Close() })
	ctx := context.Background()
	for range 2 {
		if _, err := modern.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := mc.count(MethodToolsList); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if err := legacy.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	s.AddTool(&Tool{Name: "late"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
	select {
	case p := <-store.purged:
		if !strings.Contains(p, MethodToolsList) {
			t.Fatalf("purged %q", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the legacy session's list_changed did not reach the cache")
	}
	if _, err := modern.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := mc.count(MethodToolsList); n != 2 {
		t.Fatalf("%d requests after the notification, want 2", n)
	}
}

// A private result is kept under the principal of the client that got
// it: on a shared store, another principal's client sends its own
// request (and gets its own copy); a public result is shared. With a
// shared store and no principal, private results are not kept at all.
func TestPrivateEntriesAreNotSharedBetweenPrincipals(t *testing.T) {
	t.Parallel()
	t.Run("private", func(t *testing.T) {
		s, mc := cacheServer(t, time.Hour, CachePrivate)
		store := NewMemoryCache(0, 0)
		opts := func(p string) *ClientOptions {
			return &ClientOptions{Cache: CacheOptions{Store: store, Principal: p, Namespace: "srv"}}
		}
		alice, bob := memClient(t, s, opts("alice")), memClient(t, s, opts("bob"))
		ctx := context.Background()
		for i, c := range []*Client{alice, bob, alice, bob} {
			if _, err := c.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ReadResource(ctx, "test://a", nil); err != nil {
				t.Fatal(err)
			}
			want := min(i+1, 2)
			if n := mc.count(MethodToolsList); n != want {
				t.Fatalf("call %d: %d tools/list requests, want %d", i, n, want)
			}
			if n := mc.count(MethodResourcesRead); n != want {
				t.Fatalf("call %d: %d resources/read requests, want %d", i, n, want)
			}
		}
		nobody := memClient(t, s, opts(""))
		for range 2 {
			if _, err := nobody.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		if n := mc.count(MethodToolsList); n != 4 {
			t.Fatalf("a client without principal on a shared store: %d requests in all, want 4 (its private results not kept)", n)
		}
	})
	t.Run("public", func(t *testing.T) {
		s, mc := cacheServer(t, time.Hour, CachePublic)
		store := NewMemoryCache(0, 0)
		opts := func(p string) *ClientOptions {
			return &ClientOptions{Cache: CacheOptions{Store: store, Principal: p, Namespace: "srv"}}
		}
		ctx := context.Background()
		for _, c := range []*Client{memClient(t, s, opts("alice")), memClient(t, s, opts("bob")), memClient(t, s, opts(""))} {
			if _, err := c.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		if n := mc.count(MethodToolsList); n != 1 {
			t.Fatalf("a public result: %d requests from three clients, want 1", n)
		}
	})
	t.Run("unknown scope is private", func(t *testing.T) {
		var sent atomic.Int32
		store := NewMemoryCache(0, 0)
		h := func(w http.ResponseWriter, r *http.Request) {
			in := readRPC(t, r)
			sent.Add(1)
			writeResult(w, in, `{"resultType":"complete","ttlMs":60000,"cacheScope":"shared-by-all","tools":[]}`)
		}
		for _, p := range []string{"alice", "bob"} {
			c := rawHTTPClient(t, h, nil, &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion, Cache: CacheOptions{Store: store, Principal: p, Namespace: "srv"}})
			if _, err := c.ListTools(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
		}
		if n := sent.Load(); n != 2 {
			t.Fatalf("%d requests, want 2: a scope the client does not know must not be shared", n)
		}
	})
}

// WithoutCache sends the request though a fresh result is cached, and
// the answer replaces the cached one.
func TestWithoutCacheSendsTheRequest(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Hour, CachePublic)
	c := memClient(t, s, nil)
	ctx := context.Background()
	for _, cx := range []context.Context{ctx, WithoutCache(ctx), ctx} {
		if _, err := c.ListTools(cx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ReadResource(cx, "test://a", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := mc.count(MethodToolsList), mc.count(MethodResourcesRead); n != 2 || m != 2 {
		t.Fatalf("tools/list %d, resources/read %d requests; want 2 and 2", n, m)
	}
	c.InvalidateCache()
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := mc.count(MethodToolsList); n != 3 {
		t.Fatalf("after InvalidateCache: %d requests, want 3", n)
	}
}

// CacheOptions.Disabled: every call is sent.
func TestCacheDisabledSendsEveryRequest(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Hour, CachePublic)
	c := memClient(t, s, &ClientOptions{Cache: CacheOptions{Disabled: true}})
	for range 3 {
		if _, err := c.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := mc.count(MethodToolsList); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

// The store a Client makes is bounded: many entries evict the least
// recently used, and the bytes held stay under MaxBytes.
func TestCacheIsBoundedInEntriesAndBytes(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Hour, CachePublic)
	c := memClient(t, s, &ClientOptions{Cache: CacheOptions{MaxEntries: 8, MaxBytes: 4 << 10}})
	store := c.cache.store.(*MemoryCache)
	ctx := context.Background()
	for i := range 100 {
		if _, err := c.ReadResource(ctx, fmt.Sprintf("test://items/%d", i), nil); err != nil {
			t.Fatal(err)
		}
		if store.Entries() > 8 || store.Bytes() > 4<<10 {
			t.Fatalf("after %d reads: %d entries, %d bytes", i+1, store.Entries(), store.Bytes())
		}
	}
	if _, err := c.ReadResource(ctx, "test://items/99", nil); err != nil {
		t.Fatal(err)
	}
	if n := mc.count(MethodResourcesRead); n != 100 {
		t.Fatalf("the most recent read was not kept: %d requests", n)
	}
	if _, err := c.ReadResource(ctx, "test://items/0", nil); err != nil {
		t.Fatal(err)
	}
	if n := mc.count(MethodResourcesRead); n != 101 {
		t.Fatalf("the oldest read was not evicted: %d requests", n)
	}

	m := NewMemoryCache(100, 1000)
	big := CacheEntry{Result: json.RawMessage(`{"x":"` + strings.Repeat("a", 2000) + `"}`)}
	m.Set("big", big)
	if m.Entries() != 0 {
		t.Fatal("an entry larger than the byte bound was kept")
	}
	for i := range 50 {
		m.Set(fmt.Sprint(i), CacheEntry{Result: json.RawMessage(`{"x":"` + strings.Repeat("a", 100) + `"}`)})
		if m.Bytes() > 1000 {
			t.Fatalf("%d bytes held, bound 1000", m.Bytes())
		}
	}
	if _, ok := m.Get("49"); !ok {
		t.Fatal("the newest entry was evicted")
	}
	m.Purge("4")
	for k := range m.entries {
		if strings.HasPrefix(k, "4") {
			t.Fatalf("Purge left %q", k)
		}
	}
}

// MaxTTL caps what the server claims.
func TestCacheMaxTTLCapsTheServersHint(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, 24*time.Hour, CachePublic)
	c := memClient(t, s, &ClientOptions{Cache: CacheOptions{MaxTTL: time.Minute}})
	clock := newFakeClock(c)
	for range 2 {
		if _, err := c.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(time.Minute)
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := mc.count(MethodToolsList); n != 2 {
		t.Fatalf("%d requests, want 2 (fresh for one minute only)", n)
	}
}

// Results of retries are never cached: a resources/read that needed
// input is sent again, every leg of it, on the next read.
func TestCacheNeverKeepsResultsOfRetries(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Hour, CachePublic)
	c := memClient(t, s, fixtureHandlers(nil))
	for range 2 {
		r, err := c.ReadResource(context.Background(), "test://ask/1", nil)
		if err != nil || r.Contents[0].Text != "x" {
			t.Fatal(r, err)
		}
	}
	if n := mc.count(MethodResourcesRead); n != 4 {
		t.Fatalf("%d legs, want 4 (two per read)", n)
	}
}

// A result fetched while a notification invalidated its group is
// returned but not kept: it may predate the change.
func TestCacheResultFetchedAcrossAnInvalidationIsNotKept(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	var c *Client
	h := func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		if sent.Add(1) == 1 {
			c.invalidateFor(NotificationToolListChanged, nil) // as if it arrived now
		}
		writeResult(w, in, `{"resultType":"complete","ttlMs":60000,"cacheScope":"public","tools":[]}`)
	}
	c = rawHTTPClient(t, h, nil, &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	for range 3 {
		if _, err := c.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := sent.Load(); n != 2 {
		t.Fatalf("%d requests, want 2 (the first answer not kept, the second kept)", n)
	}
}

// A cursor the server refuses drops every cached page of the list
// (SEP-2549): the first page is fetched again.
func TestCacheRefusedCursorDropsThePages(t *testing.T) {
	t.Parallel()
	var first, second atomic.Int32
	h := func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		if strings.Contains(string(in.raw), `"cursor"`) {
			second.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"Invalid cursor"}}`, in.ID)
			return
		}
		first.Add(1)
		writeResult(w, in, `{"resultType":"complete","ttlMs":60000,"cacheScope":"public","tools":[],"nextCursor":"c1"}`)
	}
	c := rawHTTPClient(t, h, nil, &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	ctx := context.Background()
	for _, err := range c.Tools(ctx) {
		if ErrorCode(err) != CodeInvalidParams {
			t.Fatalf("got %v", err)
		}
	}
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if first.Load() != 2 || second.Load() != 1 {
		t.Fatalf("first page %d, second %d requests; want 2 and 1", first.Load(), second.Load())
	}
}

// Cache hints are read as SEP-2549 says: a missing, negative or
// non-numeric ttlMs is 0; a result that is not complete is not kept.
func TestCacheHintsOfMalformedResults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw   string
		ttl   time.Duration
		scope CacheScope
		ok    bool
	}{
		{`{"ttlMs":1500,"cacheScope":"public"}`, 1500 * time.Millisecond, CachePublic, true},
		{`{"ttlMs":-5,"cacheScope":"public"}`, 0, CachePublic, true},
		{`{"ttlMs":"60000"}`, 0, "", true},
		{`{"ttlMs":1e400}`, 0, "", true},
		{`{"ttlMs":1e300,"cacheScope":7}`, time.Duration(1<<63 - 1), "", true},
		{`{"ttlMs":100,"resultType":"input_required"}`, 100 * time.Millisecond, "", false},
		{`{}`, 0, "", true},
	} {
		ttl, scope, ok := cacheHints([]byte(tc.raw))
		if ttl != tc.ttl || scope != tc.scope || ok != tc.ok {
			t.Errorf("%s: %v %q %v, want %v %q %v", tc.raw, ttl, scope, ok, tc.ttl, tc.scope, tc.ok)
		}
	}
}

// httpTestServer serves s on loopback and returns its base URL.
func httpTestServer(t testing.TB, s *Server) string {
	t.Helper()
	ts := httptest.NewServer(NewHTTPHandler(s, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// notifications/resources/updated received on a Listen stream makes the
// cached read of that resource stale, and the reads of other resources
// stay cached.
func TestResourceUpdatedInvalidatesThatResourcesRead(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Hour, CachePublic)
	clientTransports(t, s, nil, func(t *testing.T, c *Client) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		base := mc.count(MethodResourcesRead)
		read := func() {
			t.Helper()
			for _, uri := range []string{"test://a", "test://items/7"} {
				if _, err := c.ReadResource(ctx, uri, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		read()
		read()
		if n := mc.count(MethodResourcesRead) - base; n != 2 {
			t.Fatalf("%d reads sent before any notification, want 2", n)
		}
		got := make(chan string, 16)
		done := make(chan error, 1)
		go func() {
			done <- c.Listen(ctx, SubscriptionFilter{ResourceSubscriptions: []string{"test://a"}}, func(n *ListenNotification) { got <- n.Method })
		}()
		wait := func(method string) {
			t.Helper()
			for {
				select {
				case m := <-got:
					if m == method {
						return
					}
				case err := <-done:
					t.Fatalf("Listen ended: %v", err)
				case <-time.After(5 * time.Second):
					t.Fatalf("no %s", method)
				}
			}
		}
		wait(NotificationSubscriptionsAck)
		s.ResourceUpdated("test://a")
		wait(NotificationResourceUpdated)
		read()
		if n := mc.count(MethodResourcesRead) - base; n != 3 {
			t.Fatalf("%d reads sent after resources/updated of test://a, want 3 (test://a again, test://items/7 still cached)", n)
		}
		cancel()
		<-done
	})
}

// Two Clients of one server over one shared store, with different
// bearer tokens and no Principal named: each token is its own principal
// (a digest of the Authorization header), so neither is served the
// other's private results, while each is served its own again; a third
// Client with the first token shares the first one's entries.
func TestPrivateEntriesOfDifferentTokensAreNotShared(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Hour, CachePrivate)
	ts := httpTestServer(t, s)
	store := NewMemoryCache(0, 0)
	client := func(token string) *Client {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+token)
		c := NewClient(NewHTTPClientTransport(ts+"/mcp", &HTTPClientOptions{Header: h}), &ClientOptions{Cache: CacheOptions{Store: store}})
		t.Cleanup(func() { c.Close() })
		return c
	}
	alice, bob, alice2 := client("alice-token"), client("bob-token"), client("alice-token")
	ctx := context.Background()
	for i, step := range []struct {
		c    *Client
		want int
	}{{alice, 1}, {bob, 2}, {alice, 2}, {bob, 2}, {alice2, 2}} {
		if _, err := step.c.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := step.c.ReadResource(ctx, "test://a", nil); err != nil {
			t.Fatal(err)
		}
		if n, m := mc.count(MethodToolsList), mc.count(MethodResourcesRead); n != step.want || m != step.want {
			t.Fatalf("step %d: %d tools/list and %d resources/read requests, want %d", i, n, m, step.want)
		}
	}
	for k := range store.entries {
		if strings.Contains(k, "token") {
			t.Fatalf("a credential reached a key of the store: %q", k)
		}
	}
}

// The cache works in both eras where the hints exist. A 2025-11-25
// session of roundtrip's server carries no hints (they are dropped for
// that era), so nothing is kept; a legacy server that sends them anyway
// is honoured, and its notifications/tools/list_changed on the session's
// stream drops what it kept.
func TestCacheHonoursHintsInBothEras(t *testing.T) {
	t.Parallel()
	t.Run("legacy session of roundtrip's server", func(t *testing.T) {
		s, mc := cacheServer(t, time.Hour, CachePublic)
		c := httpClient(t, s, nil, &ClientOptions{Mode: ModeLegacy})
		for range 2 {
			if _, err := c.ListTools(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
		}
		if c.ProtocolVersion() != LegacyProtocolVersion {
			t.Fatalf("spoke %s", c.ProtocolVersion())
		}
		if n := mc.count(MethodToolsList); n != 2 {
			t.Fatalf("%d requests, want 2 (no hints in a legacy result: nothing kept)", n)
		}
	})
	t.Run("legacy server sending hints", func(t *testing.T) {
		store := &purgeSignal{MemoryCache: NewMemoryCache(0, 0), purged: make(chan string, 4)}
		c, f := newFakeStdio(t, &ClientOptions{Mode: ModePinned, ProtocolVersion: LegacyProtocolVersion, Cache: CacheOptions{Store: store, Namespace: "old"}})
		ctx := context.Background()
		list := func(answer bool) {
			t.Helper()
			done := make(chan error, 1)
			go func() { _, err := c.ListTools(ctx, nil); done <- err }()
			if answer {
				l := f.nextNot(notificationCancelled)
				if l["method"] != MethodToolsList {
					t.Fatalf("want tools/list, got %v", l)
				}
				f.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"tools":[],"ttlMs":60000,"cacheScope":"public"}}`, l["id"]))
			}
			if err := waitErr(t, done); err != nil {
				t.Fatal(err)
			}
		}
		connected := make(chan error, 1)
		go func() { connected <- c.Connect(ctx) }()
		f.handshake(LegacyProtocolVersion)
		if err := waitErr(t, connected); err != nil {
			t.Fatal(err)
		}
		list(true)
		list(false) // answered from the cache: nothing sent, nothing to answer
		f.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		select {
		case p := <-store.purged:
			if !strings.Contains(p, MethodToolsList) {
				t.Fatalf("purged %q", p)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the legacy server's list_changed did not reach the cache")
		}
		list(true)
		select {
		case m := <-f.lines:
			t.Fatalf("unexpected message %v", m)
		default:
		}
	})
}

// mapStore is a ClientCache of the test's own, standing for a store
// outside the process; forget makes it drop everything it is given.
type mapStore struct {
	mu     sync.Mutex
	m      map[string]CacheEntry
	forget bool
	sets   int
}

func (s *mapStore) Get(k string) (CacheEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[k]
	return e, ok
}

func (s *mapStore) Set(k string, e CacheEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets++
	if !s.forget {
		s.m[k] = e
	}
}

func (s *mapStore) Delete(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
}

func (s *mapStore) Purge(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			delete(s.m, k)
		}
	}
}

// Any ClientCache may hold the entries: Clients naming one Namespace
// share a store plugged in through CacheOptions.Store, each entry
// stamped with its expiry; a store that keeps nothing only costs
// requests.
func TestCacheStoreIsPluggable(t *testing.T) {
	t.Parallel()
	s, mc := cacheServer(t, time.Minute, CachePublic)
	store := &mapStore{m: map[string]CacheEntry{}}
	opts := &ClientOptions{Cache: CacheOptions{Store: store, Namespace: "srv"}}
	a, b := memClient(t, s, opts), memClient(t, s, opts)
	clock := newFakeClock(a, b)
	for _, c := range []*Client{a, b} {
		if _, err := c.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := mc.count(MethodToolsList); n != 1 {
		t.Fatalf("%d requests from two Clients sharing a store, want 1", n)
	}
	if len(store.m) != 1 {
		t.Fatalf("%d entries in the store, want 1", len(store.m))
	}
	for _, e := range store.m {
		if !e.Expires.Equal(clock.now().Add(time.Minute)) {
			t.Fatalf("expires %v, want ttlMs after receipt", e.Expires)
		}
	}

	s2, mc2 := cacheServer(t, time.Minute, CachePublic)
	forgetful := &mapStore{m: map[string]CacheEntry{}, forget: true}
	c := memClient(t, s2, &ClientOptions{Cache: CacheOptions{Store: forgetful}})
	for range 3 {
		if _, err := c.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := mc2.count(MethodToolsList); n != 3 || forgetful.sets != 3 {
		t.Fatalf("a store that keeps nothing: %d requests and %d sets, want 3 and 3", n, forgetful.sets)
	}
}
