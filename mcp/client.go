package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The client side of both protocol eras. A modern Client sends every
// request with the per-request _meta envelope (version, capabilities,
// identity; this file), answers the input requests of tools/call,
// prompts/get and resources/read with its callbacks and retries
// (client_loop.go, with the persistable PendingCall in
// client_pending.go). A legacy Client (2025-11-25) opens a session with
// initialize and answers the server's live requests with the same
// callbacks (client_era.go, which also probes the era in ModeAuto).
// Both speak Streamable HTTP (client_http.go) or newline-delimited
// JSON-RPC on a byte stream (client_stream.go) through the sealed
// ClientTransport (client_transport.go). Results are decoded in
// client_decode.go, errors are in client_errors.go, the methods in
// client_methods.go; extra _meta and middleware in client_middleware.go;
// the response cache in client_cache.go, the check of structured results
// in client_validate.go, typed helpers in client_typed.go.

// ClientMode says which protocol era a Client speaks.
type ClientMode uint8

const (
	// ModeAuto finds the era out on first use (or Connect) and keeps it
	// for the Client's life. The in-memory pair is modern without a
	// probe. Over HTTP the first request is sent as a modern one; on
	// another byte stream server/discover is sent first. A modern answer
	// (a result, an in-band error, or a -32020, -32021 or -32022 error
	// listing a version the client speaks) keeps the client modern; any
	// other error (over HTTP: a 400, 404 or 405 without one), or no
	// answer to server/discover within ProbeTimeout, makes it open a
	// 2025-11-25 session instead, as ModeLegacy does.
	ModeAuto ClientMode = iota
	// ModeLegacy speaks 2025-11-25: the initialize handshake, a session
	// (Mcp-Session-Id over HTTP), requests without the _meta envelope,
	// and the server's live elicitation/create, sampling/createMessage,
	// roots/list and ping requests, answered with the same handlers.
	ModeLegacy
	// ModePinned speaks exactly ClientOptions.ProtocolVersion: a modern
	// version (2026-07-28), or a legacy one (2025-11-25, 2025-06-18,
	// 2025-03-26, 2024-11-05)
	// through the initialize handshake. It never negotiates another.
	ModePinned
)

// modernVersions are the modern protocol versions the client speaks,
// most preferred first.
var modernVersions = []string{LatestProtocolVersion}

// legacyClientVersions are the revisions a legacy session may run at,
// most preferred first. The client offers the first; it accepts any of
// them in answer, and ModePinned may ask for any. What the older ones
// lack (elicitation, structured output, titles, ...) is the server's to
// leave out; the client reads what is there.
var legacyClientVersions = []string{LegacyProtocolVersion, "2025-06-18", "2025-03-26", "2024-11-05"}

// defaultProbeTimeout bounds the server/discover probe of ModeAuto on a
// byte stream.
const defaultProbeTimeout = 3 * time.Second

// ClientOptions configure a Client. The zero value is valid: a modern
// client with no capabilities.
type ClientOptions struct {
	// Info is sent as _meta clientInfo on every request. An empty Name
	// means "roundtrip-go-client".
	Info Implementation
	// Mode picks the protocol era; see ClientMode.
	Mode ClientMode
	// ProtocolVersion is the version ModePinned speaks.
	ProtocolVersion string
	// ProbeTimeout bounds how long ModeAuto waits for the answer to
	// server/discover on a byte stream before it opens a legacy session
	// (a 2025-11-25 server may never answer a request it does not know
	// before initialize). Zero means 3 s.
	ProbeTimeout time.Duration

	// Elicitation, Sampling and Roots answer input requests. Each one
	// registered declares the matching client capability; an input
	// request of a kind without a handler fails the call with a
	// *NoHandlerError (no retry is sent). Each handler's ctx carries the
	// inputRequests key or the live request's id (see InputRequestKey)
	// and is cancelled when a sibling request of the same round fails,
	// or when the server cancels its live request.
	//
	// Elicitation answers elicitation/create (form or URL mode),
	// embedded in an input_required result or, on a legacy session, sent
	// live by the server; it declares the elicitation capability
	// {"form":{},"url":{}}. An accepted form answer gets the schema's
	// defaults for the fields it leaves out (SEP-1034). Sampling answers
	// sampling/createMessage (declaring the sampling capability); Roots
	// answers roots/list (declaring the roots capability, with
	// listChanged on a legacy session: see Client.NotifyRootsChanged).
	Elicitation func(ctx context.Context, req *ElicitRequest) (*ElicitResult, error)
	// Deprecated: sampling is deprecated in 2026-07-28 (SEP-2577) and
	// may be removed from a revision after 2027-07-28; servers of every
	// revision may still ask, and this handler answers them.
	Sampling func(ctx context.Context, req *CreateMessageRequest) (*CreateMessageResult, error)
	// Deprecated: roots are deprecated in 2026-07-28 (SEP-2577) and may
	// be removed from a revision after 2027-07-28; servers of every
	// revision may still ask, and this handler answers them.
	Roots func(ctx context.Context, req *ListRootsRequest) (*ListRootsResult, error)
	// SamplingTools declares sampling.tools: the Sampling handler
	// supports tools and toolChoice.
	SamplingTools bool
	// Capabilities, when set, are declared instead of those derived from
	// the handlers: for a client that answers input requests itself, in
	// manual mode or in another process (see PendingCall). A live request
	// of a legacy session still needs a handler.
	Capabilities *ClientCapabilities

	// MaxRounds bounds the retries of one automatic call: the
	// (MaxRounds+1)-th input_required result fails the call with a
	// *RoundsExceededError. Zero means 10; negative means no bound.
	MaxRounds int
	// MaxInputRequests bounds the input requests of one input_required
	// round: a round asking more fails the call with an
	// *InvalidResponseError (too many input requests) before any
	// handler runs (with a sampling handler, each would be a model call)
	// or a retry is sent, in Manual mode too. Zero means 64; negative
	// means no bound. (An extension's questions, a task's, are bounded
	// by the extension.)
	MaxInputRequests int
	// LegRetries bounds how often one leg of a call is sent again when
	// it may succeed on a retry: the server answered
	// ErrTemporarilyUnavailable (its single-use store is down, or the
	// identical leg is still running elsewhere), nothing could be sent
	// (the connection was refused), or the answer to a leg carrying a
	// requestState was lost (connection reset, HTTP 502/503/504, a
	// response stream cut short). A leg with a requestState is safe to
	// send again: a server with a single-use guard answers the identical
	// leg with the outcome it recorded. A first leg whose answer was
	// lost is not sent again (the handler may have run), unless it
	// carries an idempotency key (IdempotencyMetaKey in CallOptions.Meta
	// or WithMeta, for a tool that declares it): then it is sent again
	// with the same key. Waits follow
	// the server's Retry-After, else back off from 250 ms to 4 s. Zero
	// means 8; negative means no retry.
	LegRetries int
	// RequestTimeout, when positive, bounds each request (each leg of a
	// multi round-trip call separately, not the time spent in handlers).
	RequestTimeout time.Duration
	// DefaultTimeout bounds each request whose context has no deadline
	// when RequestTimeout is not set, so that a server that never
	// answers cannot hold a call for ever: each leg of a call (on a
	// 2025-11-25 session that includes the time the handlers take to
	// answer the live requests that arrive while the leg is open), each
	// page of a list, discover, the handshake, each request an extension
	// sends for a call (a task's tasks/get). Listen and the session's GET stream are not
	// bounded (a subscription lasts as long as its context), nor are the
	// time between legs (a modern round's handlers) and a task as a
	// whole. A context with a deadline, even a later one, is used as it
	// is. The in-memory pair, whose server is the program's own, gets no
	// default (its calls keep the allocation-free path of a context that
	// cannot end). Zero means 10 minutes; negative means no default.
	DefaultTimeout time.Duration

	// LogLevel, when set, asks servers for notifications/message at this
	// level and above (_meta logLevel; logging/setLevel after the
	// handshake of a legacy session); they are passed to OnLog.
	LogLevel LoggingLevel
	// OnLog receives notifications/message. It runs on the transport's
	// reading goroutine: it must return quickly and must not wait for
	// another request of the same Client.
	OnLog func(*LoggingMessageParams)
	// OnSessionNotification receives what a 2025 session's server says
	// changed: notifications/resources/updated (of a Client.Subscribe)
	// and the list-changed notifications of tools, prompts and
	// resources, sent on the session's GET stream, on a byte stream or
	// on a response stream (a Listen's notifications go to Listen's
	// callback instead). A 2026-07-28 server sends them only on a Listen
	// stream. It runs on the transport's reading goroutine: it must
	// return quickly and must not wait for another request of the same
	// Client.
	OnSessionNotification func(*ListenNotification)
	// Logger receives the client's own warnings. Nil means slog.Default().
	Logger *slog.Logger

	// Extensions declares the extensions the client supports and
	// receives their notifications (see ClientExtensions and
	// Client.CallMethod).
	Extensions *ClientExtensions

	// Middleware wraps every request the client sends for its caller
	// (each leg of a multi round-trip call, lists, discover, completion,
	// listen, custom methods), in both eras and on every transport;
	// the first element is outermost. The requests that settle the era
	// (initialize and what follows it, the server/discover probe of
	// ModeAuto on a byte stream or from Connect) are not wrapped, nor
	// are notifications and the answers to a legacy server's requests.
	// See ClientRequest, CallInfo and LogClientRequests.
	Middleware []ClientMiddleware

	// Cache configures the response cache: the results of
	// server/discover, the list methods (page by page) and
	// resources/read are served again without a request while the
	// server's ttlMs says they are fresh, in the scope its cacheScope
	// allows. On by default; a result with ttlMs 0 (the server default)
	// is never kept. A request served from the cache is not sent, so
	// middleware does not see it. See CacheOptions and WithoutCache.
	Cache CacheOptions
	// SkipOutputValidation turns off the check of structuredContent
	// against the outputSchema of the tool (as the client last saw it in
	// tools/list); see OutputValidationError.
	SkipOutputValidation bool
}

// Client is an MCP client bound to one server through a ClientTransport.
// A modern client keeps no session: each request carries everything the
// server needs. A legacy one holds the session its handshake opened.
// Its methods are safe for concurrent use; parallel calls never share
// input responses or request state.
type Client struct {
	t    ClientTransport
	opts ClientOptions
	log  *slog.Logger

	era        atomic.Pointer[clientEra] // nil until the era is known
	connecting chan struct{}             // held while probing or in the handshake
	initErr    error                     // set when the options cannot work (unknown pin)
	ids        atomic.Int64
	headers    bool // the transport mirrors params into HTTP headers
	memory     bool // the transport is the in-memory pair
	bounds     bool // the transport is a boundingTransport
	closeOnce  sync.Once
	handler    ClientHandler // the middleware chain; nil without middleware

	// serving are the server's live requests being answered (legacy),
	// by raw id, with what cancels them.
	serving sync.Map

	// sleep waits between requestState-only rounds; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// now is the cache's clock; tests replace it.
	now func() time.Time

	cache   *clientCache // nil when off (client_cache.go)
	outputs toolOutputs  // output schemas learned from tools/list (client_validate.go)

	mu       sync.RWMutex
	tools    map[string][]paramHeader   // x-mcp-header annotations learned from tools/list
	badTools map[string]string          // tools dropped for invalid annotations, with the reason
	listed   map[string]json.RawMessage // tools/list entries, by name, for ClientExtensions.LegacyParams
}

// clientEra is the era in use: a modern one is the negotiated version
// with its pre-encoded _meta prefix
// (`{"io.modelcontextprotocol/protocolVersion":...,...` without the
// closing brace, so that a progress token can be appended); a legacy one
// is the session the handshake opened. What differs between the eras is
// asked of its protocol (client_protocol.go), never tested.
type clientEra struct {
	clientProtocol
	version string
	meta    []byte // modern only

	session string       // Mcp-Session-Id (HTTP), "" when the server gave none
	hello   *serverHello // what initialize returned
	// helloRaw is the result of initialize as received.
	helloRaw json.RawMessage
}

// NewClient returns a client that talks to a server through t. The
// transport serves this one client; Close closes it.
func NewClient(t ClientTransport, opts *ClientOptions) *Client {
	c := &Client{t: t, tools: map[string][]paramHeader{}, badTools: map[string]string{}, connecting: make(chan struct{}, 1)}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.Info.Name == "" {
		c.opts.Info.Name = "roundtrip-go-client"
	}
	if c.opts.Info.Version == "" {
		c.opts.Info.Version = "0.1.0"
	}
	if c.opts.MaxRounds == 0 {
		c.opts.MaxRounds = 10
	}
	if c.opts.MaxInputRequests == 0 {
		c.opts.MaxInputRequests = defaultMaxInputRequests
	}
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.Default()
	}
	c.sleep = sleepCtx
	c.now = time.Now
	c.cache = newClientCache(c.opts.Cache, t)
	c.headers = t.mirrorsHeaders()
	c.memory = t.inMemory()
	_, c.bounds = t.(boundingTransport)
	if len(c.opts.Middleware) > 0 {
		c.opts.Middleware = slices.Clone(c.opts.Middleware)
		c.handler = c.chainClient(c.opts.Middleware)
	}
	t.bind(&clientHooks{unrouted: c.unrouted, serve: c.serveRequest, legacy: c.servesRequests, log: c.log})
	switch c.opts.Mode {
	case ModeAuto:
		if t.inMemory() {
			c.era.Store(c.newEra(LatestProtocolVersion))
		}
	case ModeLegacy:
		// The handshake runs on first use.
	case ModePinned:
		v := c.opts.ProtocolVersion
		switch {
		case slices.Contains(modernVersions, v):
			c.era.Store(c.newEra(v))
		case slices.Contains(legacyClientVersions, v):
		default:
			c.initErr = &UnsupportedVersionError{Requested: v, Supported: append(slices.Clone(modernVersions), legacyClientVersions...)}
		}
	default:
		c.initErr = fmt.Errorf("mcp: unknown ClientMode %d", c.opts.Mode)
	}
	return c
}

// Capabilities returns the capabilities the client declares on every
// modern request and in initialize, derived from the registered handlers.
// (In initialize, roots also declares listChanged; modern requests also
// declare ClientExtensions.Declared.)
func (c *Client) Capabilities() ClientCapabilities {
	if c.opts.Capabilities != nil {
		return *c.opts.Capabilities
	}
	var caps ClientCapabilities
	empty := json.RawMessage(`{}`)
	if c.opts.Elicitation != nil {
		caps.Elicitation = &ElicitationCapabilities{Form: empty, URL: empty}
	}
	if c.opts.Sampling != nil {
		caps.Sampling = &SamplingCapabilities{}
		if c.opts.SamplingTools {
			caps.Sampling.Tools = empty
		}
	}
	if c.opts.Roots != nil {
		caps.Roots = &RootsCapabilities{}
	}
	return caps
}

// ProtocolVersion returns the protocol version in use: a modern one
// (2026-07-28 unless a -32022 error made the client switch to another
// mutually supported version), or the version the initialize handshake
// of a legacy session agreed on. It is empty while the era is not known
// yet (ModeAuto and ModeLegacy before the first request or Connect).
func (c *Client) ProtocolVersion() string {
	if era := c.era.Load(); era != nil {
		return era.version
	}
	return ""
}

// Connect settles the era now rather than on the first request: in
// ModeAuto it probes the server (server/discover), and for a legacy
// session it runs the initialize handshake. It returns at once when the
// era is already known.
func (c *Client) Connect(ctx context.Context) error {
	if c.initErr != nil {
		return c.initErr
	}
	if c.era.Load() != nil {
		return nil
	}
	_, _, _, err := c.connect(ctx, nil)
	return err
}

// Close ends a legacy session (DELETE over HTTP, best effort) and
// closes the transport. Calls in flight fail.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		if era := c.era.Load(); era != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			era.end(ctx, c.t, era)
			cancel()
		}
	})
	return c.t.Close()
}

// servesRequests reports whether the server may send requests of its
// own (a legacy session).
func (c *Client) servesRequests() bool {
	era := c.era.Load()
	return era != nil && era.servesRequests()
}

func (c *Client) newEra(version string) *clientEra {
	b := make([]byte, 0, 256)
	b = append(b, `{"`+metaProtocolVersion+`":`...)
	b = jsonrpc.AppendString(b, version)
	caps, _ := json.Marshal(c.modernCapabilities())
	b = append(b, `,"`+MetaClientCapabilities+`":`...)
	b = append(b, caps...)
	info, _ := json.Marshal(c.opts.Info)
	b = append(b, `,"`+metaClientInfo+`":`...)
	b = append(b, info...)
	if c.opts.LogLevel != "" {
		b = append(b, `,"`+metaLogLevel+`":`...)
		b = jsonrpc.AppendString(b, string(c.opts.LogLevel))
	}
	return &clientEra{clientProtocol: modernProtocol{}, version: version, meta: b}
}

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// do sends one request and returns the raw result (a JSON object),
// settling the era first when it is not known yet. Every request made
// for the caller goes through it: its extra _meta members are those of
// l.extra (a call's, settled once for all its legs) or else of the
// context (WithMeta), and the middleware, if any, wrap the sending.
func (c *Client) do(ctx context.Context, l *wireRequest) ([]byte, error) {
	if c.initErr != nil {
		return nil, c.initErr
	}
	if l.extra == nil {
		if l.extra = ctxMeta(ctx); l.extra != nil && l.extra.err != nil {
			return nil, l.extra.err
		}
	}
	if c.handler != nil {
		return c.intercept(ctx, l)
	}
	return c.doWire(ctx, l)
}

// doWire sends l as it is (with the extra members of l.extra).
func (c *Client) doWire(ctx context.Context, l *wireRequest) ([]byte, error) {
	if l.notify == nil && (l.onProgress != nil || l.onNotify != nil || c.opts.OnLog != nil || c.extensionNotes()) {
		l.notify = func(method string, params []byte) { c.deliver(l, method, params) }
	}
	era := c.era.Load()
	if era == nil {
		var res []byte
		var done bool
		var err error
		if era, res, done, err = c.connect(ctx, l); done {
			return res, err
		}
	}
	return era.do(ctx, c, era, l)
}

// doModern sends a modern request. A -32022 error is retried once with a
// version from data.supported that the client speaks. Each attempt is a
// new request with a new id; l may be sent again (the next round of a
// call).
func (c *Client) doModern(ctx context.Context, era *clientEra, l *wireRequest) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		res, err := c.send(ctx, era, l)
		if e, ok := err.(*Error); ok && e.Code == CodeUnsupportedProtocolVersion && attempt == 0 {
			next, verr := c.negotiate(era, e)
			if verr != nil {
				return nil, verr
			}
			era = next
			continue
		}
		return res, err
	}
}

func (c *Client) send(ctx context.Context, era *clientEra, l *wireRequest) ([]byte, error) {
	if d := c.timeout(ctx, l); d > 0 {
		if c.bounds && ctx.Done() == nil {
			// The transport bounds it, without a context that can end.
			l.timeout = d
		} else {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	l.id = c.ids.Add(1)
	l.era = era
	bp := bodyPool.Get().(*[]byte)
	l.body = era.appendBody((*bp)[:0], era, l.id, l)
	res, err := c.t.roundTrip(ctx, l)
	l.timeout = 0
	if c.t.releasesBody() && cap(l.body) <= 64<<10 {
		*bp = l.body
		bodyPool.Put(bp)
	}
	l.body = nil
	return res, err
}

// defaultCallTimeout is ClientOptions.DefaultTimeout's default.
const defaultCallTimeout = 10 * time.Minute

// timeout is the bound send puts on request l: RequestTimeout, else
// DefaultTimeout when ctx has no deadline, l is not a listen stream and
// the transport is not the in-memory pair; 0 for none.
func (c *Client) timeout(ctx context.Context, l *wireRequest) time.Duration {
	if c.opts.RequestTimeout > 0 {
		return c.opts.RequestTimeout
	}
	if c.opts.DefaultTimeout < 0 || l.method == methodSubscriptionsListen || c.memory {
		return 0
	}
	if _, ok := ctx.Deadline(); ok {
		return 0
	}
	if c.opts.DefaultTimeout > 0 {
		return c.opts.DefaultTimeout
	}
	return defaultCallTimeout
}

// negotiate picks the version to retry with after a -32022 error.
func (c *Client) negotiate(era *clientEra, e *Error) (*clientEra, error) {
	var data struct {
		Supported []string `json:"supported"`
	}
	_ = json.Unmarshal(e.Data, &data)
	candidates := modernVersions
	if c.opts.Mode == ModePinned {
		candidates = []string{era.version}
	}
	for _, v := range candidates {
		if slices.Contains(data.Supported, v) {
			next := era
			if v != era.version {
				next = c.newEra(v)
				c.era.Store(next)
			}
			return next, nil
		}
	}
	return nil, &UnsupportedVersionError{Requested: era.version, Supported: data.Supported, Err: e}
}

// deliver routes a notification that belongs to request l.
func (c *Client) deliver(l *wireRequest, method string, params []byte) {
	switch method {
	case notificationProgress:
		if l.onProgress == nil {
			return
		}
		p := new(ProgressParams)
		if json.Unmarshal(params, p) != nil {
			c.log.Warn("mcp: client: malformed notifications/progress ignored")
			return
		}
		l.onProgress(p)
	case notificationMessage:
		c.unrouted(method, params)
	default:
		if method == notificationCancelled && l.era.servesRequests() {
			c.unrouted(method, params) // the server cancels its own request
			return
		}
		c.invalidateFor(method, params)
		if l.onNotify != nil {
			l.onNotify(method, params)
		} else if !c.sessionNotification(method, params) {
			c.extensionNotification(method, params)
		}
	}
}

// unrouted receives notifications that belong to no request in flight
// (on a byte stream, notifications/message carries no request id), and
// on a legacy session the server's notifications/cancelled of its own
// requests, and the list-changed and resource-updated notifications of a
// legacy session's streams (which make cached results stale).
func (c *Client) unrouted(method string, params []byte) {
	c.invalidateFor(method, params)
	if c.sessionNotification(method, params) {
		return
	}
	if method == notificationCancelled {
		if c.servesRequests() {
			c.cancelServing(params)
		}
		return
	}
	if method != notificationMessage {
		c.extensionNotification(method, params)
		return
	}
	if c.opts.OnLog == nil {
		return
	}
	m := new(LoggingMessageParams)
	if json.Unmarshal(params, m) != nil {
		c.log.Warn("mcp: client: malformed notifications/message ignored")
		return
	}
	c.opts.OnLog(m)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sessionNotification hands a change notification (resources/updated, a
// list-changed) to ClientOptions.OnSessionNotification; false when
// method is none of them.
func (c *Client) sessionNotification(method string, params []byte) bool {
	switch method {
	case NotificationResourceUpdated, notificationResourceListChanged, NotificationToolListChanged, notificationPromptListChanged:
	default:
		return false
	}
	if c.opts.OnSessionNotification != nil {
		c.opts.OnSessionNotification(newListenNotification(method, params))
	}
	return true
}
