package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// PoolOptions configure a Pool. The zero value is valid.
type PoolOptions struct {
	// Info is the client implementation sent to upstreams. An empty Name
	// means "roundtrip-gateway".
	Info mcp.Implementation
	// Logger receives the pool's logs. Nil means slog.Default().
	Logger *slog.Logger
	// OnChange is called (on a goroutine of the pool, one call at a time
	// per upstream) when an upstream's catalog changed: it came up, went
	// down, or listed anew after a list_changed notification.
	OnChange func(upstream string)
	// Elicitation, Sampling and Roots answer the questions an upstream
	// asks during a call (live on a 2025 session). ctx is the call's
	// context when the transport ties the question to the call
	// (Streamable HTTP), else the transport's. Nil declines elicitation
	// and refuses the others.
	Elicitation func(ctx context.Context, upstream string, r *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	Sampling    func(ctx context.Context, upstream string, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Roots       func(ctx context.Context, upstream string, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error)

	// OnResourceUpdated, when set, receives an upstream's
	// notifications/resources/updated (uri is the upstream's own). The
	// pool then follows the updates of each upstream's resources (at most
	// 256 of each) that advertises resources.subscribe.
	OnResourceUpdated func(upstream, uri string)

	// ConfigureClient, when set, may change the options of each
	// upstream's client before it connects (once per connection, restarts
	// included): add middleware (otel.InstrumentClient for one trace from
	// the downstream call through its upstream legs: the upstream call's
	// context keeps the downstream request's values), a cache, a log
	// level. It must keep the question handlers and the notification
	// callbacks the pool set (wrap them, do not drop them).
	ConfigureClient func(upstream string, opts *mcp.ClientOptions) *mcp.ClientOptions

	// BackoffMin and BackoffMax bound the wait between two failed
	// connection attempts, doubled after each (zero: 200 ms and 30 s).
	BackoffMin, BackoffMax time.Duration
	// BreakerThreshold failed attempts in a row open an upstream's
	// circuit breaker for BreakerCooldown (zero: 5 and 60 s).
	BreakerThreshold int
	BreakerCooldown  time.Duration
}

// Pool is a client of many upstream MCP servers, each supervised on its
// own: connected (any revision, any transport), listed, reconnected or
// restarted with exponential backoff and a circuit breaker when it
// fails. It is usable alone by an agent host; Gateway serves one as an
// aggregate server. Its methods are safe for concurrent use.
type Pool struct {
	log              *slog.Logger
	info             mcp.Implementation
	onChange         func(string)
	configure        func(string, *mcp.ClientOptions) *mcp.ClientOptions
	onUpdated        func(upstream, uri string)
	ask              askHooks
	backoffMin       time.Duration
	backoffMax       time.Duration
	breakerThreshold int
	breakerCooldown  time.Duration

	order  []string
	ups    map[string]*upstream
	cancel context.CancelFunc
	once   sync.Once

	changeMu sync.Mutex
	changes  map[string]chan struct{}
}

// NewPool validates the upstreams and starts supervising each of them
// (connections are made in the background; see WaitReady). Close stops
// them all.
func NewPool(upstreams []Upstream, opts *PoolOptions) (*Pool, error) {
	if err := validateUpstreams(upstreams); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &PoolOptions{}
	}
	p := &Pool{
		log:              opts.Logger,
		info:             opts.Info,
		onChange:         opts.OnChange,
		configure:        opts.ConfigureClient,
		onUpdated:        opts.OnResourceUpdated,
		ask:              askHooks{opts.Elicitation, opts.Sampling, opts.Roots},
		backoffMin:       opts.BackoffMin,
		backoffMax:       opts.BackoffMax,
		breakerThreshold: opts.BreakerThreshold,
		breakerCooldown:  opts.BreakerCooldown,
		ups:              make(map[string]*upstream, len(upstreams)),
		changes:          make(map[string]chan struct{}),
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.info.Name == "" {
		p.info = mcp.Implementation{Name: "roundtrip-gateway", Version: "1"}
	}
	if p.backoffMin <= 0 {
		p.backoffMin = 200 * time.Millisecond
	}
	if p.backoffMax <= 0 {
		p.backoffMax = 30 * time.Second
	}
	if p.breakerThreshold <= 0 {
		p.breakerThreshold = 5
	}
	if p.breakerCooldown <= 0 {
		p.breakerCooldown = time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	for _, cfg := range upstreams {
		u := newUpstream(p, cfg)
		p.ups[cfg.Name] = u
		p.order = append(p.order, cfg.Name)
	}
	for _, name := range p.order {
		go p.ups[name].supervise(ctx)
	}
	return p, nil
}

func (p *Pool) backoff(failures int) time.Duration {
	d := p.backoffMin
	for i := 1; i < failures && d < p.backoffMax; i++ {
		d *= 2
	}
	return min(d, p.backoffMax)
}

// changed calls OnChange for upstream on a goroutine of its own, calls
// for one upstream coalesced and never overlapping.
func (p *Pool) changed(upstream string) {
	if p.onChange == nil {
		return
	}
	p.changeMu.Lock()
	ch, running := p.changes[upstream]
	if running {
		select {
		case ch <- struct{}{}:
		default:
		}
		p.changeMu.Unlock()
		return
	}
	ch = make(chan struct{}, 1)
	p.changes[upstream] = ch
	p.changeMu.Unlock()
	go func() {
		for {
			p.onChange(upstream)
			p.changeMu.Lock()
			select {
			case <-ch:
				p.changeMu.Unlock()
				continue
			default:
			}
			delete(p.changes, upstream)
			p.changeMu.Unlock()
			return
		}
	}()
}

// Upstreams returns the upstreams' names, in configuration order.
func (p *Pool) Upstreams() []string { return slices.Clone(p.order) }

// Health reports every upstream, in configuration order.
func (p *Pool) Health() []Health {
	out := make([]Health, 0, len(p.order))
	for _, name := range p.order {
		h, _ := p.ups[name].snapshot()
		out = append(out, h)
	}
	return out
}

// Catalog returns what upstream exposes, as last listed; ok is false
// when the upstream is unknown or not up. The catalog is shared: do not
// modify it.
func (p *Pool) Catalog(upstream string) (cat *Catalog, ok bool) {
	u := p.ups[upstream]
	if u == nil {
		return nil, false
	}
	_, cat = u.snapshot()
	return cat, cat != nil
}

// WaitReady waits until every upstream has been tried at least once (up,
// down or open, not starting), or ctx ends.
func (p *Pool) WaitReady(ctx context.Context) error {
	for _, name := range p.order {
		u := p.ups[name]
		for {
			h, _ := u.snapshot()
			if h.State != HealthStarting {
				break
			}
			if !sleepCtx(ctx, 5*time.Millisecond) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// HealthHandler serves the upstreams' health as JSON:
// {"ready":true,"upstreams":[{"name":...,"state":"up",...}]}, 200 when
// every upstream is up and 503 otherwise (so that a /readyz check can
// tell a degraded gateway; the aggregate still serves what is up).
func (p *Pool) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs := p.Health()
		ready := true
		for _, h := range hs {
			ready = ready && h.State == HealthUp
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(struct {
			Ready     bool     `json:"ready"`
			Upstreams []Health `json:"upstreams"`
		}{ready, hs})
	})
}

// Close stops supervising and closes every upstream: stdio upstreams
// have their whole process group killed. It returns once all are
// closed.
func (p *Pool) Close() error {
	p.once.Do(func() {
		p.cancel()
		for _, name := range p.order {
			<-p.ups[name].done
		}
	})
	return nil
}

// modern reports whether upstream is connected in the 2026-07-28 era.
func (p *Pool) modern(name string) bool {
	u := p.ups[name]
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conn != nil && u.health.ProtocolVersion == mcp.LatestProtocolVersion
}

func (p *Pool) upstream(name string) (*upstream, error) {
	u := p.ups[name]
	if u == nil {
		return nil, fmt.Errorf("gateway: no upstream %q", name)
	}
	return u, nil
}

// do runs f with the upstream's client, within its concurrency bound
// and (unless ctx has an earlier deadline) its timeout.
func do[T any](ctx context.Context, p *Pool, name string, f func(ctx context.Context, c *mcp.Client) (T, error)) (T, error) {
	var zero T
	u, err := p.upstream(name)
	if err != nil {
		return zero, err
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.timeout())
	defer cancel()
	c, err := u.acquire(ctx)
	if err != nil {
		return zero, err
	}
	v, err := f(ctx, c)
	u.release(err)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("gateway: upstream %s did not answer within %v: %w", name, u.cfg.timeout(), err)
	}
	return v, err
}

// CallTool calls tool (the upstream's own name) on upstream. With
// opts.Manual, an upstream's input_required round comes back as a
// *mcp.PendingCallError (continue with Resume); a 2025 upstream's live
// questions go to PoolOptions' handlers.
func (p *Pool) CallTool(ctx context.Context, upstream, tool string, args json.RawMessage, opts *mcp.CallOptions) (*mcp.CallToolResult, error) {
	return do(ctx, p, upstream, func(ctx context.Context, c *mcp.Client) (*mcp.CallToolResult, error) {
		if args == nil {
			return c.CallTool(ctx, tool, nil, opts)
		}
		return c.CallTool(ctx, tool, args, opts)
	})
}

// Resume continues a call of upstream stopped at an input_required round
// (see mcp.Client.Resume).
func (p *Pool) Resume(ctx context.Context, upstream string, call *mcp.PendingCall, responses mcp.InputResponses, opts *mcp.CallOptions) (mcp.Result, error) {
	return do(ctx, p, upstream, func(ctx context.Context, c *mcp.Client) (mcp.Result, error) {
		return c.Resume(ctx, call, responses, opts)
	})
}

// GetPrompt gets prompt (the upstream's own name) from upstream.
func (p *Pool) GetPrompt(ctx context.Context, upstream, prompt string, args map[string]string, opts *mcp.CallOptions) (*mcp.GetPromptResult, error) {
	return do(ctx, p, upstream, func(ctx context.Context, c *mcp.Client) (*mcp.GetPromptResult, error) {
		return c.GetPrompt(ctx, prompt, args, opts)
	})
}

// ReadResource reads uri (the upstream's own) from upstream.
func (p *Pool) ReadResource(ctx context.Context, upstream, uri string, opts *mcp.CallOptions) (*mcp.ReadResourceResult, error) {
	return do(ctx, p, upstream, func(ctx context.Context, c *mcp.Client) (*mcp.ReadResourceResult, error) {
		return c.ReadResource(mcp.WithoutCache(ctx), uri, opts)
	})
}

// Complete asks upstream for completions (names and URIs its own).
func (p *Pool) Complete(ctx context.Context, upstream string, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return do(ctx, p, upstream, func(ctx context.Context, c *mcp.Client) (*mcp.CompleteResult, error) {
		return c.Complete(ctx, req)
	})
}

// askHooks are PoolOptions' question handlers.
type askHooks struct {
	e func(ctx context.Context, upstream string, r *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	s func(ctx context.Context, upstream string, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	r func(ctx context.Context, upstream string, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

// errRefused answers an upstream's sampling request that the gateway
// refuses (as a user rejecting it would: code -1).
var errRefused = mcp.NewError(-1, "The request was declined by the gateway", nil)

func (a askHooks) elicit(ctx context.Context, upstream string, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if a.e == nil {
		return &mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
	}
	return a.e(ctx, upstream, r)
}

func (a askHooks) sample(ctx context.Context, upstream string, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if a.s == nil {
		return nil, errRefused
	}
	return a.s(ctx, upstream, r)
}

func (a askHooks) roots(ctx context.Context, upstream string, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if a.r == nil {
		return &mcp.ListRootsResult{Roots: []mcp.Root{}}, nil
	}
	return a.r(ctx, upstream, r)
}
