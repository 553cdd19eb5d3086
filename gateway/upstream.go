package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// HealthState is where an upstream's supervision stands.
type HealthState string

const (
	// HealthStarting: the first connection is being made.
	HealthStarting HealthState = "starting"
	// HealthUp: connected; its entries are served.
	HealthUp HealthState = "up"
	// HealthDown: the connection failed or was lost; it is retried with
	// exponential backoff and its entries are withdrawn meanwhile.
	HealthDown HealthState = "down"
	// HealthOpen: the circuit breaker is open after BreakerThreshold
	// failed starts in a row; the next try comes after BreakerCooldown.
	HealthOpen HealthState = "open"
	// HealthClosed: the pool was closed.
	HealthClosed HealthState = "closed"
)

// Health is one upstream's state, as Pool.Health reports it.
type Health struct {
	Name            string      `json:"name"`
	State           HealthState `json:"state"`
	Since           time.Time   `json:"since"`
	Error           string      `json:"error,omitempty"`
	Failures        int         `json:"failures,omitempty"`
	Restarts        int         `json:"restarts,omitempty"`
	ProtocolVersion string      `json:"protocolVersion,omitempty"`
	InFlight        int         `json:"inFlight"`
}

// Catalog is what an upstream exposes, as last listed (every page).
type Catalog struct {
	Tools             []*mcp.Tool
	Prompts           []*mcp.Prompt
	Resources         []*mcp.Resource
	ResourceTemplates []*mcp.ResourceTemplate
}

// maxCatalogEntries bounds each kind of an upstream's catalog: an
// upstream that lists more is cut there (and logged).
const maxCatalogEntries = 4096

// ErrUpstreamDown is the error of a call to an upstream that is not
// connected (starting, restarting, or its circuit breaker open).
var ErrUpstreamDown = errors.New("gateway: upstream unavailable")

type upstream struct {
	cfg  Upstream
	pool *Pool
	log  *slog.Logger
	sem  chan struct{}

	mu       sync.Mutex
	conn     *conn // nil when not connected
	health   Health
	catalog  *Catalog
	inFlight int

	kick    chan struct{} // the connection broke or must be checked
	refresh chan struct{} // a list changed
	done    chan struct{} // closed when the supervisor has stopped
}

// conn is one connection (one process, one session) of an upstream.
type conn struct {
	client *mcp.Client
	proc   *process // stdio only
	cancel context.CancelFunc
	lost   chan struct{} // closed when the connection is known broken
	once   sync.Once

	subscribe  bool            // the upstream advertises resources.subscribe
	relisten   chan struct{}   // the catalog changed: open the listen stream anew
	subscribed map[string]bool // 2025 sessions: URIs subscribed (supervisor only)
}

// maxSubscriptions bounds the resources the gateway follows on one
// upstream (for resources/updated).
const maxSubscriptions = 256

func (c *conn) markLost() { c.once.Do(func() { close(c.lost) }) }

func (c *conn) close() {
	c.markLost()
	c.cancel()
	c.client.Close()
	if c.proc != nil {
		c.proc.Close()
	}
}

func newUpstream(p *Pool, cfg Upstream) *upstream {
	return &upstream{
		cfg:     cfg,
		pool:    p,
		log:     p.log.With("upstream", cfg.Name),
		sem:     make(chan struct{}, cfg.concurrency()),
		health:  Health{Name: cfg.Name, State: HealthStarting, Since: time.Now()},
		kick:    make(chan struct{}, 1),
		refresh: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
}

// supervise connects, waits for the connection to break, and connects
// again with backoff, until ctx ends.
func (u *upstream) supervise(ctx context.Context) {
	defer close(u.done)
	failures := 0
	for ctx.Err() == nil {
		c, cat, err := u.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			state, wait := HealthDown, u.pool.backoff(failures)
			if failures >= u.pool.breakerThreshold {
				state, wait = HealthOpen, u.pool.breakerCooldown
			}
			u.setDown(state, err, failures)
			u.log.Warn("gateway: upstream unavailable", "err", err, "failures", failures, "retry_in", wait)
			if !sleepCtx(ctx, wait) {
				break
			}
			continue
		}
		failures = 0
		u.setUp(c, cat)
		u.serveConn(ctx, c)
		u.mu.Lock()
		u.conn = nil
		u.mu.Unlock()
		c.close()
		if ctx.Err() != nil {
			break
		}
		u.setDown(HealthDown, errors.New("connection lost"), 0)
		u.mu.Lock()
		u.health.Restarts++
		u.mu.Unlock()
		u.log.Warn("gateway: upstream connection lost; reconnecting")
	}
	u.mu.Lock()
	c := u.conn
	u.conn, u.catalog = nil, nil
	u.health.State, u.health.Since = HealthClosed, time.Now()
	u.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// serveConn returns when c breaks (or ctx ends), refreshing the
// catalog on list changes meanwhile.
func (u *upstream) serveConn(ctx context.Context, c *conn) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.lost:
			return
		case <-u.kick:
			// A call failed below JSON-RPC: check the connection.
			if _, err := u.list(ctx, c.client); err != nil {
				u.log.Warn("gateway: upstream check failed", "err", err)
				return
			}
		case <-u.refresh:
			cat, err := u.list(ctx, c.client)
			if err != nil {
				u.log.Warn("gateway: upstream refresh failed", "err", err)
				return
			}
			u.mu.Lock()
			u.catalog = cat
			u.mu.Unlock()
			u.pool.changed(u.cfg.Name)
			select {
			case c.relisten <- struct{}{}:
			default:
			}
			if c.client.ProtocolVersion() != mcp.LatestProtocolVersion {
				u.subscribeAll(ctx, c, cat)
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (u *upstream) setUp(c *conn, cat *Catalog) {
	u.mu.Lock()
	u.conn, u.catalog = c, cat
	u.health.State, u.health.Since, u.health.Error, u.health.Failures = HealthUp, time.Now(), "", 0
	u.health.ProtocolVersion = c.client.ProtocolVersion()
	u.mu.Unlock()
	u.log.Info("gateway: upstream up", "protocol_version", c.client.ProtocolVersion(), "tools", len(cat.Tools))
	u.pool.changed(u.cfg.Name)
}

func (u *upstream) setDown(state HealthState, err error, failures int) {
	u.mu.Lock()
	had := u.catalog != nil
	u.catalog = nil
	if u.health.State != state {
		u.health.Since = time.Now()
	}
	u.health.State, u.health.Error, u.health.Failures = state, err.Error(), failures
	u.mu.Unlock()
	if had {
		u.pool.changed(u.cfg.Name)
	}
}

// connect opens a connection and lists the catalog, within the
// upstream's timeout.
func (u *upstream) connect(ctx context.Context) (*conn, *Catalog, error) {
	cctx, cancel := context.WithCancel(ctx)
	c := &conn{cancel: cancel, lost: make(chan struct{}), relisten: make(chan struct{}, 1), subscribed: map[string]bool{}}
	opts := &mcp.ClientOptions{
		Info:   u.pool.info,
		Logger: u.log,
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return u.pool.ask.elicit(ctx, u.cfg.Name, r)
		},
		Sampling: func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return u.pool.ask.sample(ctx, u.cfg.Name, r)
		},
		Roots: func(ctx context.Context, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
			return u.pool.ask.roots(ctx, u.cfg.Name, r)
		},
		SamplingTools: true,
		// The upstream's own log records go to the gateway's log.
		LogLevel: mcp.LevelInfo,
		OnLog: func(m *mcp.LoggingMessageParams) {
			u.log.Info("gateway: upstream log", "level", string(m.Level), "logger", m.Logger, "data", m.Data)
		},
		DefaultTimeout: u.cfg.timeout(),
		OnSessionNotification: func(n *mcp.ListenNotification) {
			u.notified(n)
		},
	}
	if u.pool.configure != nil {
		if o := u.pool.configure(u.cfg.Name, opts); o != nil {
			opts = o
		}
	}
	var t mcp.ClientTransport
	switch u.cfg.transport() {
	case TransportStdio:
		proc, err := startProcess(&u.cfg)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		c.proc = proc
		go func() {
			select {
			case <-proc.exited:
				c.markLost()
			case <-cctx.Done():
			}
		}()
		t = mcp.NewStreamClientTransport(proc, &mcp.StreamClientOptions{Logger: u.log})
	default:
		t = mcp.NewHTTPClientTransport(u.cfg.URL, &mcp.HTTPClientOptions{
			HTTPClient: u.cfg.HTTPClient,
			Header:     u.cfg.Header,
			SSE:        u.cfg.transport() == TransportSSE,
		})
	}
	c.client = mcp.NewClient(t, opts)
	tctx, tcancel := context.WithTimeout(ctx, u.cfg.timeout())
	defer tcancel()
	if err := c.client.Connect(tctx); err != nil {
		c.close()
		return nil, nil, fmt.Errorf("connecting: %w", err)
	}
	cat, err := u.list(tctx, c.client)
	if err != nil {
		c.close()
		return nil, nil, fmt.Errorf("listing: %w", err)
	}
	if d, err := c.client.Discover(tctx); err == nil && d.Capabilities.Resources != nil {
		c.subscribe = d.Capabilities.Resources.Subscribe
	}
	if c.client.ProtocolVersion() == mcp.LatestProtocolVersion {
		go u.listen(cctx, c)
	} else {
		u.subscribeAll(tctx, c, cat)
	}
	return c, cat, nil
}

// notified handles a notification of the upstream: a list change
// refreshes its catalog, a resource update goes to PoolOptions.
func (u *upstream) notified(n *mcp.ListenNotification) {
	switch {
	case isListChanged(n.Method):
		u.signalRefresh()
	case n.Method == notificationResourceUpdated && n.URI != "" && u.pool.onUpdated != nil:
		u.pool.onUpdated(u.cfg.Name, n.URI)
	}
}

const notificationResourceUpdated = "notifications/resources/updated"

// subscribeAll subscribes a 2025 session to the catalog's resources not
// yet subscribed (at most maxSubscriptions), when the upstream supports
// it. Failures are logged: updates are best effort.
func (u *upstream) subscribeAll(ctx context.Context, c *conn, cat *Catalog) {
	if !c.subscribe || u.pool.onUpdated == nil {
		return
	}
	for _, r := range cat.Resources {
		if len(c.subscribed) >= maxSubscriptions {
			return
		}
		if c.subscribed[r.URI] {
			continue
		}
		if err := c.client.Subscribe(ctx, r.URI); err != nil {
			u.log.Debug("gateway: upstream resource subscription failed", "uri", r.URI, "err", err)
			continue
		}
		c.subscribed[r.URI] = true
	}
}

func isListChanged(method string) bool {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed":
		return true
	}
	return false
}

func (u *upstream) signalRefresh() {
	select {
	case u.refresh <- struct{}{}:
	default:
	}
}

// check asks the supervisor to check the connection (a call failed below
// JSON-RPC).
func (u *upstream) check() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// listen follows a 2026-07-28 upstream's list changes (and its
// resources' updates) on a subscriptions/listen stream, opened again
// (after a pause) when it ends, and at once when the catalog changed.
func (u *upstream) listen(ctx context.Context, c *conn) {
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		filter := mcp.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}
		if c.subscribe && u.pool.onUpdated != nil {
			_, cat := u.snapshot()
			if cat != nil {
				for _, r := range cat.Resources {
					if len(filter.ResourceSubscriptions) == maxSubscriptions {
						break
					}
					filter.ResourceSubscriptions = append(filter.ResourceSubscriptions, r.URI)
				}
			}
		}
		lctx, lcancel := context.WithCancel(ctx)
		stop, again := make(chan struct{}), make(chan bool, 1)
		go func() {
			select {
			case <-c.relisten:
				lcancel()
				again <- true
			case <-stop:
				again <- false
			}
		}()
		err := c.client.Listen(lctx, filter, u.notified)
		close(stop)
		lcancel()
		if <-again {
			continue
		}
		if ctx.Err() != nil || errors.Is(err, mcp.ErrLegacyUnsupported) {
			return
		}
		if err != nil {
			u.log.Debug("gateway: upstream listen stream ended", "err", err)
			u.check()
		}
		if !sleepCtx(ctx, pause) {
			return
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// list reads every page of every list, without the client's cache.
func (u *upstream) list(ctx context.Context, cl *mcp.Client) (*Catalog, error) {
	ctx = mcp.WithoutCache(ctx)
	cat := &Catalog{}
	var err error
	if cat.Tools, err = collect(u, "tools", cl.Tools(ctx)); err != nil {
		return nil, err
	}
	if cat.Prompts, err = collect(u, "prompts", cl.Prompts(ctx)); err != nil {
		return nil, err
	}
	if cat.Resources, err = collect(u, "resources", cl.Resources(ctx)); err != nil {
		return nil, err
	}
	if cat.ResourceTemplates, err = collect(u, "resource templates", cl.ResourceTemplates(ctx)); err != nil {
		return nil, err
	}
	return cat, nil
}

func collect[T any](u *upstream, what string, seq func(func(*T, error) bool)) ([]*T, error) {
	var out []*T
	for v, err := range seq {
		if err != nil {
			if mcp.ErrorCode(err) == mcp.CodeMethodNotFound {
				return nil, nil // the upstream has none of these
			}
			return nil, err
		}
		if len(out) == maxCatalogEntries {
			u.log.Warn("gateway: upstream lists too many entries; the rest are left out", "kind", what, "max", maxCatalogEntries)
			break
		}
		out = append(out, v)
	}
	return out, nil
}

// acquire takes a slot of the upstream's concurrency bound and its
// current client; release gives the slot back.
func (u *upstream) acquire(ctx context.Context) (*mcp.Client, error) {
	select {
	case u.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("gateway: upstream %s: no free slot (%d calls in flight): %w", u.cfg.Name, cap(u.sem), ctx.Err())
	}
	u.mu.Lock()
	c := u.conn
	if c == nil {
		st := u.health.State
		u.mu.Unlock()
		<-u.sem
		return nil, fmt.Errorf("%w: %s is %s", ErrUpstreamDown, u.cfg.Name, st)
	}
	u.inFlight++
	u.mu.Unlock()
	return c.client, nil
}

func (u *upstream) release(err error) {
	u.mu.Lock()
	u.inFlight--
	u.mu.Unlock()
	<-u.sem
	if err != nil && brokenBelowJSONRPC(err) {
		u.check()
	}
}

// brokenBelowJSONRPC reports whether err says the connection, not the
// call, failed: not a JSON-RPC error, not the caller's context.
func brokenBelowJSONRPC(err error) bool {
	var e *mcp.Error
	var pe *mcp.PendingCallError
	switch {
	case errors.As(err, &e), errors.As(err, &pe), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrUpstreamDown):
		return false
	}
	return true
}

func (u *upstream) snapshotInFlight() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.inFlight
}

func (u *upstream) snapshot() (Health, *Catalog) {
	u.mu.Lock()
	defer u.mu.Unlock()
	h := u.health
	h.InFlight = u.inFlight
	return h, u.catalog
}
