package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Options configure a Gateway. The zero value is valid.
type Options struct {
	// Implementation is the aggregate server's name and version. An
	// empty Name means "roundtrip-gateway".
	Implementation mcp.Implementation
	// Server holds the aggregate server's options (request-state keys,
	// session store, middleware, logger, ...). The gateway sets Visible
	// (its allow lists, after Server.Visible when one is given) and
	// Completions (forwarded to the upstreams); a Completions given here
	// is replaced.
	Server *mcp.ServerOptions
	// Pool holds the upstream pool's options (PoolOptions.ConfigureClient
	// instruments the upstream clients). OnChange and the question
	// handlers are the gateway's own (any given are replaced).
	Pool *PoolOptions
	// Separator joins an upstream's prefix and a tool or prompt name.
	// Empty means DefaultSeparator.
	Separator string
	// RoundTimeout bounds how long a call to a 2025 upstream is held open
	// waiting for the downstream client's answers to one round (then the
	// upstream call is cancelled and the next leg is refused with the
	// fixed state error). Zero means 5 minutes.
	RoundTimeout time.Duration
	// MaxHeld bounds the calls held open across rounds in all, and
	// MaxHeldPerPrincipal those of one downstream principal. A question
	// past either bound is answered to the upstream as declined. Zero
	// means 1024 and 16.
	MaxHeld, MaxHeldPerPrincipal int
}

// Gateway serves many upstream MCP servers, of any revision, as one
// aggregate *mcp.Server: every upstream's tools, prompts, resources and
// resource templates, under names of at most MaxNameLength characters,
// filtered per downstream principal, with each era's questions
// translated to the other's (see the package documentation).
type Gateway struct {
	pool    *Pool
	srv     *mcp.Server
	log     *slog.Logger
	sep     string
	byName  map[string]*Upstream
	held    *heldTable
	timeout time.Duration // RoundTimeout
	started chan struct{} // closed once pool is set

	mu        sync.RWMutex
	tools     map[string]*entry // aggregated name → entry
	prompts   map[string]*entry
	resources map[string]*entry // aggregated URI → entry
	templates map[string]*entry // URI template → entry
	syncMu    sync.Mutex        // one sync at a time

	inflightMu sync.Mutex
	inflight   map[string]map[*heldCall]struct{} // by upstream
}

// entry is one upstream entry exposed by the aggregate server.
type entry struct {
	upstream string
	name     string // the upstream's name (tools, prompts) or URI
	def      []byte // the definition as registered, to skip unchanged ones
}

// New validates the upstreams, starts the pool and builds the aggregate
// server. Upstreams come up in the background; each one's entries appear
// (with a list_changed notification) once it is connected and listed.
// Close closes both.
func New(upstreams []Upstream, opts *Options) (*Gateway, error) {
	if opts == nil {
		opts = &Options{}
	}
	g := &Gateway{
		sep:       opts.Separator,
		byName:    make(map[string]*Upstream, len(upstreams)),
		tools:     map[string]*entry{},
		prompts:   map[string]*entry{},
		resources: map[string]*entry{},
		templates: map[string]*entry{},
		inflight:  map[string]map[*heldCall]struct{}{},
		timeout:   opts.RoundTimeout,
		started:   make(chan struct{}),
	}
	if g.sep == "" {
		g.sep = DefaultSeparator
	}
	if !safeName(g.sep) || len(g.sep) > 4 {
		return nil, fmt.Errorf("gateway: separator %q: want 1 to 4 bytes of [A-Za-z0-9_.-]", g.sep)
	}
	if g.timeout <= 0 {
		g.timeout = 5 * time.Minute
	}
	g.held = newHeldTable(opts.MaxHeld, opts.MaxHeldPerPrincipal)
	for i := range upstreams {
		g.byName[upstreams[i].Name] = &upstreams[i]
	}
	impl := opts.Implementation
	if impl.Name == "" {
		impl = mcp.Implementation{Name: "roundtrip-gateway", Version: "1"}
	}
	var so mcp.ServerOptions
	if opts.Server != nil {
		so = *opts.Server
	}
	g.log = so.Logger
	if g.log == nil {
		g.log = slog.Default()
	}
	userVisible := so.Visible
	so.Visible = func(ctx context.Context, kind mcp.FeatureKind, name string) bool {
		return g.visible(ctx, kind, name) && (userVisible == nil || userVisible(ctx, kind, name))
	}
	so.Completions = g.complete
	// Tools, prompts and resources are advertised (with listChanged)
	// before the first upstream is up, so that a client that connects
	// early knows to list again when they come.
	caps := mcp.ServerCapabilities{}
	if so.Capabilities != nil {
		caps = *so.Capabilities
	}
	if caps.Tools == nil {
		caps.Tools = &mcp.ListChangedCapability{ListChanged: true}
	}
	if caps.Prompts == nil {
		caps.Prompts = &mcp.ListChangedCapability{ListChanged: true}
	}
	if caps.Resources == nil {
		caps.Resources = &mcp.ResourcesCapability{ListChanged: true, Subscribe: true}
	}
	so.Capabilities = &caps
	g.srv = mcp.NewServer(impl, &so)

	var po PoolOptions
	if opts.Pool != nil {
		po = *opts.Pool
	}
	if po.Logger == nil {
		po.Logger = g.log
	}
	po.OnResourceUpdated = func(up, uri string) {
		<-g.started
		g.srv.ResourceUpdated(g.aggregateURI(up, uri))
	}
	po.OnChange = func(string) {
		<-g.started
		g.sync()
	}
	po.Elicitation = func(ctx context.Context, up string, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		raw, err := g.relay(ctx, up, r)
		if err != nil {
			return nil, err
		}
		return mcp.InputResponses{"a": raw}.Elicit("a")
	}
	po.Sampling = func(ctx context.Context, up string, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		raw, err := g.relay(ctx, up, r)
		if err != nil {
			return nil, err
		}
		return mcp.InputResponses{"a": raw}.Sampling("a")
	}
	po.Roots = func(ctx context.Context, up string, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
		raw, err := g.relay(ctx, up, r)
		if err != nil {
			return nil, err
		}
		return mcp.InputResponses{"a": raw}.Roots("a")
	}
	pool, err := NewPool(upstreams, &po)
	if err != nil {
		g.srv.Close()
		return nil, err
	}
	g.pool = pool
	close(g.started)
	return g, nil
}

// Server returns the aggregate server: serve it with mcp.NewHTTPHandler,
// mcp.NewSSEHandler or ServeStdio, as any server.
func (g *Gateway) Server() *mcp.Server { return g.srv }

// Pool returns the gateway's upstream pool (health, catalogs).
func (g *Gateway) Pool() *Pool { return g.pool }

// HealthHandler reports each upstream's health (see Pool.HealthHandler).
// The aggregate server's own /livez and /readyz are mcp.HealthHandler's.
func (g *Gateway) HealthHandler() http.Handler { return g.pool.HealthHandler() }

// WaitReady waits until every upstream has been tried once and the
// aggregate lists what the upstreams that are up expose.
func (g *Gateway) WaitReady(ctx context.Context) error {
	if err := g.pool.WaitReady(ctx); err != nil {
		return err
	}
	g.sync()
	return nil
}

// Close closes the upstream pool (calls held open end with an error; stdio
// upstreams' process groups are killed) and the aggregate server.
func (g *Gateway) Close() error {
	g.held.closeAll()
	g.pool.Close()
	return g.srv.Close()
}

// Upstream names the upstream entry behind an aggregated tool or prompt
// name (kind mcp.FeatureTool or mcp.FeaturePrompt) or resource URI
// (mcp.FeatureResource): the upstream's Name and the entry's own name or
// URI. ok is false for a name the gateway does not expose.
func (g *Gateway) Upstream(kind mcp.FeatureKind, name string) (upstream, original string, ok bool) {
	e := g.lookup(kind, name)
	if e == nil {
		return "", "", false
	}
	return e.upstream, e.name, true
}

func (g *Gateway) lookup(kind mcp.FeatureKind, name string) *entry {
	g.mu.RLock()
	defer g.mu.RUnlock()
	switch kind {
	case mcp.FeatureTool:
		return g.tools[name]
	case mcp.FeaturePrompt:
		return g.prompts[name]
	case mcp.FeatureResource:
		return g.resources[name]
	case mcp.FeatureResourceTemplate:
		return g.templates[name]
	}
	return nil
}

// aggregateURI is the URI under which the aggregate serves upstream's
// uri: a static resource's (rewritten or not), else uri itself (a
// template's resources are not rewritten).
func (g *Gateway) aggregateURI(upstream, uri string) string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for agg, e := range g.resources {
		if e.upstream == upstream && e.name == uri {
			return agg
		}
	}
	return uri
}

// visible applies the upstreams' allow lists.
func (g *Gateway) visible(ctx context.Context, kind mcp.FeatureKind, name string) bool {
	e := g.lookup(kind, name)
	if e == nil {
		return true // not the gateway's: the server answers as for any unknown name
	}
	return g.byName[e.upstream].allowed(ctx, kind, e.name)
}

func entryMeta(m mcp.Meta, upstream, name string) mcp.Meta {
	out := make(mcp.Meta, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[MetaKey] = map[string]string{"upstream": upstream, "name": name}
	return out
}

// sync brings the aggregate server's registrations in line with the
// upstreams' catalogs: names are assigned over every upstream that is up
// (deterministically), entries gone are removed, new or changed ones
// added. Each add and remove is one list_changed notification.
func (g *Gateway) sync() {
	g.syncMu.Lock()
	defer g.syncMu.Unlock()
	cats := map[string]*Catalog{}
	prefixes := map[string]string{}
	for _, name := range g.pool.Upstreams() {
		prefixes[name] = g.byName[name].prefix()
		if cat, ok := g.pool.Catalog(name); ok {
			cats[name] = cat
		}
	}
	g.syncTools(cats, prefixes)
	g.syncPrompts(cats, prefixes)
	g.syncResources(cats)
	g.syncTemplates(cats)
}

func (g *Gateway) upstreamOrder(cats map[string]*Catalog) []string {
	var out []string
	for _, name := range g.pool.Upstreams() {
		if cats[name] != nil {
			out = append(out, name)
		}
	}
	return out
}

// register calls add, recovering from the panic the server raises for an
// invalid definition (an upstream's tool whose schema it refuses): the
// entry is left out and logged.
func (g *Gateway) register(kind, upstream, name string, add func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			g.log.Warn("gateway: upstream entry left out", "kind", kind, "upstream", upstream, "name", name, "err", r)
			ok = false
		}
	}()
	add()
	return true
}

// aggregate collects the entries every upstream lists (an upstream's
// first entry of a name wins), gives each its aggregate name, and
// encodes its definition under that name with its origin in _meta.
func aggregate[T any](g *Gateway, cats map[string]*Catalog, prefixes map[string]string, items func(*Catalog) []*T, nameOf func(*T) string, rename func(*T, string, entryKey)) map[string]*entry {
	var keys []entryKey
	defs := map[entryKey]*T{}
	for _, up := range g.upstreamOrder(cats) {
		for _, it := range items(cats[up]) {
			k := entryKey{up, nameOf(it)}
			if _, dup := defs[k]; dup {
				continue
			}
			keys = append(keys, k)
			defs[k] = it
		}
	}
	names := assignNames(keys, prefixes, g.sep)
	next := map[string]*entry{}
	for _, k := range keys {
		agg, ok := names[k]
		if !ok {
			continue
		}
		v := *defs[k]
		rename(&v, agg, k)
		def, _ := json.Marshal(&v)
		next[agg] = &entry{upstream: k.upstream, name: k.name, def: def}
	}
	return next
}

func (g *Gateway) syncTools(cats map[string]*Catalog, prefixes map[string]string) {
	next := aggregate(g, cats, prefixes, func(c *Catalog) []*mcp.Tool { return c.Tools },
		func(t *mcp.Tool) string { return t.Name },
		func(t *mcp.Tool, agg string, k entryKey) { t.Name, t.Meta = agg, entryMeta(t.Meta, k.upstream, k.name) })
	g.apply(g.tools, next, func(agg string, e *entry) bool {
		var t mcp.Tool
		json.Unmarshal(e.def, &t)
		t.InputSchema = json.RawMessage(rawMember(e.def, "inputSchema"))
		if os := rawMember(e.def, "outputSchema"); os != nil {
			t.OutputSchema = json.RawMessage(os)
		}
		return g.register("tool", e.upstream, e.name, func() { g.srv.AddTool(&t, g.toolHandler(e.upstream, e.name)) })
	}, g.srv.RemoveTools)
}

func (g *Gateway) syncPrompts(cats map[string]*Catalog, prefixes map[string]string) {
	next := aggregate(g, cats, prefixes, func(c *Catalog) []*mcp.Prompt { return c.Prompts },
		func(p *mcp.Prompt) string { return p.Name },
		func(p *mcp.Prompt, agg string, k entryKey) {
			p.Name, p.Meta = agg, entryMeta(p.Meta, k.upstream, k.name)
		})
	g.apply(g.prompts, next, func(agg string, e *entry) bool {
		var p mcp.Prompt
		json.Unmarshal(e.def, &p)
		up, name := e.upstream, e.name
		return g.register("prompt", up, name, func() { g.srv.AddPrompt(&p, g.promptHandler(up, name)) })
	}, g.srv.RemovePrompts)
}

// syncResources keeps a resource's URI when one upstream alone exposes
// it, and rewrites it (rewriteURI) for every upstream when several do.
func (g *Gateway) syncResources(cats map[string]*Catalog) {
	count := map[string]int{}
	for _, up := range g.upstreamOrder(cats) {
		seen := map[string]bool{}
		for _, r := range cats[up].Resources {
			if !seen[r.URI] {
				seen[r.URI] = true
				count[r.URI]++
			}
		}
	}
	next := map[string]*entry{}
	for _, up := range g.upstreamOrder(cats) {
		for _, r := range cats[up].Resources {
			uri := r.URI
			if count[uri] > 1 {
				uri = rewriteURI(up, r.URI)
			}
			if next[uri] != nil {
				continue
			}
			res := *r
			res.URI = uri
			res.Meta = entryMeta(res.Meta, up, r.URI)
			def, _ := json.Marshal(&res)
			next[uri] = &entry{upstream: up, name: r.URI, def: def}
		}
	}
	g.apply(g.resources, next, func(uri string, e *entry) bool {
		var res mcp.Resource
		json.Unmarshal(e.def, &res)
		up, orig := e.upstream, e.name
		return g.register("resource", up, orig, func() {
			g.srv.AddResource(&res, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				r, err := g.pool.ReadResource(noQuestions(ctx), up, orig, nil)
				if err != nil {
					return nil, asRPCError(err)
				}
				return r, nil
			})
		})
	}, g.srv.RemoveResources)
}

// syncTemplates exposes each upstream's resource templates as they are;
// a template two upstreams both expose is served by the first in
// configuration order.
func (g *Gateway) syncTemplates(cats map[string]*Catalog) {
	next := map[string]*entry{}
	for _, up := range g.upstreamOrder(cats) {
		for _, t := range cats[up].ResourceTemplates {
			if next[t.URITemplate] != nil {
				continue
			}
			rt := *t
			rt.Meta = entryMeta(rt.Meta, up, t.URITemplate)
			def, _ := json.Marshal(&rt)
			next[t.URITemplate] = &entry{upstream: up, name: t.URITemplate, def: def}
		}
	}
	g.apply(g.templates, next, func(_ string, e *entry) bool {
		var rt mcp.ResourceTemplate
		json.Unmarshal(e.def, &rt)
		up := e.upstream
		return g.register("resource template", up, e.name, func() {
			g.srv.AddResourceTemplate(&rt, g.templateHandler(up))
		})
	}, g.srv.RemoveResourceTemplates)
}

// apply replaces the entries of cur by next: removed ones first (one
// RemoveX call), then added or changed ones.
func (g *Gateway) apply(cur, next map[string]*entry, add func(string, *entry) bool, remove func(...string)) {
	g.mu.RLock()
	var gone []string
	for k := range cur {
		if next[k] == nil {
			gone = append(gone, k)
		}
	}
	var changed []string
	for k, e := range next {
		if old := cur[k]; old == nil || old.upstream != e.upstream || old.name != e.name || !bytes.Equal(old.def, e.def) {
			changed = append(changed, k)
		}
	}
	g.mu.RUnlock()
	slices.Sort(changed)
	if len(gone) > 0 {
		g.mu.Lock()
		for _, k := range gone {
			delete(cur, k)
		}
		g.mu.Unlock()
		remove(gone...)
	}
	for _, k := range changed {
		e := next[k]
		g.mu.Lock()
		cur[k] = e
		g.mu.Unlock()
		if !add(k, e) {
			g.mu.Lock()
			delete(cur, k)
			g.mu.Unlock()
		}
	}
}

// rawMember returns the raw JSON of a top-level member of obj (nil when
// absent).
func rawMember(obj []byte, name string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[name]
}

// asRPCError keeps an upstream's JSON-RPC error as it is and makes any
// other failure (the upstream down, cut at its timeout, its process
// killed) an internal error whose message says so.
func asRPCError(err error) error {
	var e *mcp.Error
	if errors.As(err, &e) {
		return e
	}
	return mcp.NewError(mcp.CodeInternalError, err.Error(), nil)
}

// complete forwards completion/complete to the upstream of the prompt or
// resource template named.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	var e *entry
	fwd := *req
	switch req.Ref.Type {
	case "ref/prompt":
		if e = g.lookup(mcp.FeaturePrompt, req.Ref.Name); e != nil && g.visible(ctx, mcp.FeaturePrompt, req.Ref.Name) {
			fwd.Ref.Name = e.name
		} else {
			e = nil
		}
	case "ref/resource":
		if e = g.lookup(mcp.FeatureResourceTemplate, req.Ref.URI); e != nil && !g.byName[e.upstream].allowed(ctx, mcp.FeatureResourceTemplate, e.name) {
			e = nil
		}
	}
	if e == nil {
		return &mcp.CompleteResult{Completion: mcp.Completion{Values: []string{}}}, nil
	}
	r, err := g.pool.Complete(noQuestions(ctx), e.upstream, &fwd)
	if err != nil {
		return nil, asRPCError(err)
	}
	return r, nil
}
