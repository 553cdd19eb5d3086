package pin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ErrNotListed refuses a tools/call of a tool the server does not list:
// its definition cannot be checked.
var ErrNotListed = errors.New("pin: the server does not list the tool")

// Options configure a Guard.
type Options struct {
	// Pins are the approved definitions, updated when OnChange accepts a
	// change. Nil means a new, empty Pins (see Guard.Pins).
	Pins *Pins
	// OnChange, when set, decides a tool whose listed definition is not
	// the pinned one (old is the pinned definition, nil when the tool
	// was never pinned; new is the listed one): true pins new and lets
	// the call go, false refuses it with a *ChangeError. Nil refuses
	// every such call. It runs on the goroutine of the call, before the
	// tools/call is sent, one at a time per Guard; ctx is the call's.
	OnChange func(ctx context.Context, tool string, old, new *mcp.Tool) (accept bool)
	// MaxPages bounds the pages of the tools/list the Guard sends itself
	// for a tool it has not seen listed. Zero means 32.
	MaxPages int
}

// Guard checks tools/call requests against Pins. See Enable.
type Guard struct {
	pins     *Pins
	onChange func(ctx context.Context, tool string, old, new *mcp.Tool) bool
	maxPages int

	mu     sync.Mutex
	client *mcp.Client
	gen    uint64                // bumped by Invalidate
	listed map[string]listedTool // the latest definition listed, since the last Invalidate

	decide sync.Mutex // one OnChange at a time
}

// Enable adds a Guard to the client options o (before mcp.NewClient):
// its middleware (appended to o.Middleware) watches the tools/list
// pages the Client receives and checks every tools/call before it is
// sent, and o.OnSessionNotification is wrapped so that a 2025 session's
// notifications/tools/list_changed invalidates what the Guard saw
// listed. Bind the Guard to the Client made with o so that it can list
// the tools itself; the callback of Client.Listen should pass its
// notifications to Guard.Notify.
func Enable(o *mcp.ClientOptions, po *Options) *Guard {
	g := &Guard{listed: map[string]listedTool{}}
	if po != nil {
		g.pins, g.onChange, g.maxPages = po.Pins, po.OnChange, po.MaxPages
	}
	if g.pins == nil {
		g.pins = new(Pins)
	}
	if g.maxPages <= 0 {
		g.maxPages = 32
	}
	o.Middleware = append(o.Middleware[:len(o.Middleware):len(o.Middleware)], g.middleware)
	prev := o.OnSessionNotification
	o.OnSessionNotification = func(n *mcp.ListenNotification) {
		g.Notify(n)
		if prev != nil {
			prev(n)
		}
	}
	return g
}

// Bind tells the Guard which Client it guards, so that it can list the
// tools itself when a call names one it has not seen listed. Without
// it such a call is refused (ErrNotListed).
func (g *Guard) Bind(c *mcp.Client) {
	g.mu.Lock()
	g.client = c
	g.mu.Unlock()
}

// Pins returns the Guard's pins (Options.Pins, or the Guard's own).
func (g *Guard) Pins() *Pins { return g.pins }

// Notify invalidates what the Guard saw listed when n is
// notifications/tools/list_changed (other notifications are ignored):
// the next call lists the tools again. Give it the notifications of
// Client.Listen.
func (g *Guard) Notify(n *mcp.ListenNotification) {
	if n != nil && n.Method == mcp.NotificationToolListChanged {
		g.Invalidate()
	}
}

// Invalidate forgets what the Guard saw listed.
func (g *Guard) Invalidate() {
	g.mu.Lock()
	g.gen++
	clear(g.listed)
	g.mu.Unlock()
}

// ownListing marks the context of the Guard's own tools/list, whose pages
// it reads from the decoded result instead.
type ownListing struct{}

func (g *Guard) middleware(next mcp.ClientHandler) mcp.ClientHandler {
	return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
		switch req.Method {
		case mcp.MethodToolsCall:
			if err := g.check(ctx, req.Target); err != nil {
				return nil, err
			}
			return next(ctx, req)
		case mcp.MethodToolsList:
			if ctx.Value(ownListing{}) != nil {
				return next(ctx, req)
			}
			gen := g.generation()
			res, err := next(ctx, req)
			if err == nil {
				g.observe(gen, res)
			}
			return res, err
		}
		return next(ctx, req)
	}
}

func (g *Guard) generation() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gen
}

// observe records the tools of a tools/list page received while the
// generation was gen (a page fetched across an invalidation is dropped).
func (g *Guard) observe(gen uint64, page json.RawMessage) {
	var w struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(page, &w) != nil {
		return
	}
	tools := make([]*mcp.Tool, 0, len(w.Tools))
	for _, raw := range w.Tools {
		if t, err := decodeTool(raw); err == nil && t.Name != "" {
			tools = append(tools, t)
		}
	}
	g.learn(gen, tools)
}

func (g *Guard) learn(gen uint64, tools []*mcp.Tool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gen != gen {
		return false
	}
	for _, t := range tools {
		g.listed[t.Name] = listedTool{tool: t}
	}
	return true
}

func (g *Guard) lookup(name string) (*mcp.Tool, *mcp.Client, uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.listed[name].tool, g.client, g.gen
}

// listedTool is a listed definition and its digest, computed on the
// first call that checks it (a listing is not digested tool by tool).
type listedTool struct {
	tool   *mcp.Tool
	digest string
}

// digestOf returns the digest of t, a listed definition, computing it
// once.
func (g *Guard) digestOf(t *mcp.Tool) (string, error) {
	g.mu.Lock()
	e := g.listed[t.Name]
	g.mu.Unlock()
	if e.tool == t && e.digest != "" {
		return e.digest, nil
	}
	p, err := New(t)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	if e := g.listed[t.Name]; e.tool == t {
		e.digest = p.Digest
		g.listed[t.Name] = e
	}
	g.mu.Unlock()
	return p.Digest, nil
}

// Check runs the check a tools/call of tool gets, without calling it:
// nil when the tool's listed definition is pinned (or OnChange accepts
// it), else the *ChangeError (or ErrNotListed, or why the tools could
// not be listed). For a caller that wants the verdict earlier: a host
// about to show the tool to a model, a saved call about to ask its
// questions again.
func (g *Guard) Check(ctx context.Context, tool string) error { return g.check(ctx, tool) }

// check lets a call of the tool name go when its listed definition is
// the pinned one (or OnChange accepts it).
func (g *Guard) check(ctx context.Context, name string) error {
	cur, c, _ := g.lookup(name)
	if cur == nil {
		if c == nil {
			return fmt.Errorf("%w %q (no listing seen, and the Guard is not bound to its Client to list)", ErrNotListed, name)
		}
		var err error
		if cur, err = g.list(ctx, c, name); err != nil {
			return err
		}
		if cur == nil {
			return fmt.Errorf("%w %q", ErrNotListed, name)
		}
	}
	ok, err := g.matches(cur)
	if err != nil || ok {
		return err
	}
	g.decide.Lock()
	defer g.decide.Unlock()
	// Another call may have accepted it meanwhile.
	if ok, err := g.matches(cur); err != nil || ok {
		return err
	}
	var old *mcp.Tool
	if p, found := g.pins.Get(name); found {
		if old, err = p.Tool(); err != nil {
			return err
		}
	}
	if g.onChange != nil && g.onChange(ctx, name, old, cur) {
		return g.pins.Set(cur)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return Compare(old, cur)
}

func (g *Guard) matches(cur *mcp.Tool) (bool, error) {
	d, err := g.digestOf(cur)
	if err != nil {
		return false, err
	}
	p, ok := g.pins.Get(cur.Name)
	return ok && p.Digest == d, nil
}

// list reads every page of tools/list (at most maxPages) and returns the
// definition of the tool name, nil when it is not listed. A listing
// interrupted by an invalidation, or whose pages disagree (a tool listed
// twice with two definitions: the list changed between pages), is read
// again once; after that the latest definition seen wins.
func (g *Guard) list(ctx context.Context, c *mcp.Client, name string) (*mcp.Tool, error) {
	lctx := context.WithValue(ctx, ownListing{}, true)
	for attempt := 0; ; attempt++ {
		gen := g.generation()
		seen := map[string]*mcp.Tool{}
		consistent := true
		var cursor *string
		for page := 0; ; page++ {
			if page == g.maxPages {
				return nil, fmt.Errorf("pin: tools/list has more than %d pages (Options.MaxPages)", g.maxPages)
			}
			res, err := c.ListTools(lctx, cursor)
			var rpc *mcp.Error
			if err != nil && cursor != nil && attempt == 0 && errors.As(err, &rpc) && rpc.Code == mcp.CodeInvalidParams {
				// The server no longer knows the cursor: the list changed.
				consistent = false
				break
			}
			if err != nil {
				return nil, fmt.Errorf("pin: listing the tools to check %q: %w", name, err)
			}
			for _, t := range res.Tools {
				if prev, dup := seen[t.Name]; dup && !same(prev, t) {
					consistent = false
				}
				seen[t.Name] = t
			}
			if res.NextCursor == nil || *res.NextCursor == "" {
				break
			}
			cursor = res.NextCursor
		}
		tools := make([]*mcp.Tool, 0, len(seen))
		for _, t := range seen {
			tools = append(tools, t)
		}
		kept := g.learn(gen, tools)
		if (kept && consistent) || attempt == 1 {
			return seen[name], nil
		}
		// The list changed while it was read: read it again, fresh.
		g.Invalidate()
		c.InvalidateCache()
	}
}

func same(a, b *mcp.Tool) bool {
	x, err1 := New(a)
	y, err2 := New(b)
	return err1 == nil && err2 == nil && x.Digest == y.Digest
}
