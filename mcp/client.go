package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The client side of 2026-07-28. A Client sends every request with the
// per-request _meta envelope (version, capabilities, identity; this
// file), answers the input requests of tools/call, prompts/get and
// resources/read with its callbacks and retries (client_loop.go, with
// the persistable PendingCall in client_pending.go), and speaks
// Streamable HTTP (client_http.go) or newline-delimited JSON-RPC on a
// byte stream (client_stream.go) through the sealed ClientTransport
// (client_transport.go). Results are decoded in client_decode.go, errors
// are in client_errors.go, the methods in client_methods.go.
//
// The era seam: ClientMode picks modern, legacy or a pinned version, and
// the transport interface is sealed so that the legacy era (initialize,
// sessions, live server→client requests answered by the same handlers)
// can be added without changing the API.

// ClientMode says which protocol era a Client speaks.
type ClientMode uint8

const (
	// ModeAuto picks the era from the server. Until the legacy era is
	// implemented it always speaks the modern era (2026-07-28).
	ModeAuto ClientMode = iota
	// ModeLegacy speaks 2025-11-25 (initialize, sessions). Not
	// implemented yet: every call fails with ErrLegacyUnsupported.
	ModeLegacy
	// ModePinned speaks exactly ClientOptions.ProtocolVersion and never
	// negotiates another version.
	ModePinned
)

// modernVersions are the modern protocol versions the client speaks,
// most preferred first.
var modernVersions = []string{LatestProtocolVersion}

// ElicitationHandler answers an elicitation/create input request (form or
// URL mode). Registering one declares the elicitation capability
// {"form":{},"url":{}}. ctx carries the inputRequests key (see
// InputRequestKey) and is cancelled when a sibling request of the same
// round fails.
type ElicitationHandler func(ctx context.Context, req *ElicitRequest) (*ElicitResult, error)

// SamplingHandler answers a sampling/createMessage input request.
// Registering one declares the sampling capability.
type SamplingHandler func(ctx context.Context, req *CreateMessageRequest) (*CreateMessageResult, error)

// RootsHandler answers a roots/list input request. Registering one
// declares the roots capability.
type RootsHandler func(ctx context.Context, req *ListRootsRequest) (*ListRootsResult, error)

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

	// Elicitation, Sampling and Roots answer input requests. Each one
	// registered declares the matching client capability; an input
	// request of a kind without a handler fails the call with a
	// *NoHandlerError (no retry is sent).
	Elicitation ElicitationHandler
	Sampling    SamplingHandler
	Roots       RootsHandler
	// SamplingTools declares sampling.tools: the Sampling handler
	// supports tools and toolChoice.
	SamplingTools bool

	// MaxRounds bounds the retries of one automatic call: the
	// (MaxRounds+1)-th input_required result fails the call with a
	// *RoundsExceededError. Zero means 10; negative means no bound.
	MaxRounds int
	// RequestTimeout, when positive, bounds each request (each leg of a
	// multi round-trip call separately, not the time spent in handlers).
	RequestTimeout time.Duration

	// LogLevel, when set, asks servers for notifications/message at this
	// level and above (_meta logLevel); they are passed to OnLog.
	LogLevel LoggingLevel
	// OnLog receives notifications/message. It runs on the transport's
	// reading goroutine: it must return quickly and must not wait for
	// another request of the same Client.
	OnLog func(*LoggingMessageParams)
	// Logger receives the client's own warnings. Nil means slog.Default().
	Logger *slog.Logger
}

// Client is an MCP client bound to one server through a ClientTransport.
// A modern client keeps no session: each request carries everything the
// server needs. Its methods are safe for concurrent use; parallel calls
// never share input responses or request state.
type Client struct {
	t    ClientTransport
	opts ClientOptions
	log  *slog.Logger

	era     atomic.Pointer[clientEra]
	initErr error // set when the options cannot work (legacy, unknown pin)
	ids     atomic.Int64
	headers bool // the transport mirrors params into HTTP headers

	// sleep waits between requestState-only rounds; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	mu       sync.RWMutex
	tools    map[string][]paramHeader // x-mcp-header annotations learned from tools/list
	badTools map[string]string        // tools dropped for invalid annotations, with the reason
}

// clientEra is the negotiated version with its pre-encoded _meta prefix:
// `{"io.modelcontextprotocol/protocolVersion":...,...` without the
// closing brace, so that a progress token can be appended.
type clientEra struct {
	version string
	meta    []byte
}

// NewClient returns a client that talks to a server through t. The
// transport serves this one client; Close closes it.
func NewClient(t ClientTransport, opts *ClientOptions) *Client {
	c := &Client{t: t, tools: map[string][]paramHeader{}, badTools: map[string]string{}}
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
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.Default()
	}
	c.sleep = sleepCtx
	c.headers = t.mirrorsHeaders()
	t.bind(c.unrouted)
	version := LatestProtocolVersion
	switch c.opts.Mode {
	case ModeLegacy:
		c.initErr = ErrLegacyUnsupported
	case ModePinned:
		version = c.opts.ProtocolVersion
		if !slices.Contains(modernVersions, version) {
			c.initErr = &UnsupportedVersionError{Requested: version, Supported: slices.Clone(modernVersions)}
		}
	}
	c.era.Store(c.newEra(version))
	return c
}

// Capabilities returns the capabilities the client declares on every
// request, derived from the registered handlers.
func (c *Client) Capabilities() ClientCapabilities {
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

// ProtocolVersion returns the protocol version the client currently
// sends: 2026-07-28 unless a -32022 error made it switch to another
// mutually supported version, or the pinned version. It is empty in
// legacy mode until that era is implemented.
func (c *Client) ProtocolVersion() string {
	if c.opts.Mode == ModeLegacy {
		return ""
	}
	return c.era.Load().version
}

// Close closes the transport. Calls in flight fail.
func (c *Client) Close() error { return c.t.Close() }

func (c *Client) newEra(version string) *clientEra {
	b := make([]byte, 0, 256)
	b = append(b, `{"`+MetaProtocolVersion+`":`...)
	b = jsonrpc.AppendString(b, version)
	caps, _ := json.Marshal(c.Capabilities())
	b = append(b, `,"`+MetaClientCapabilities+`":`...)
	b = append(b, caps...)
	info, _ := json.Marshal(c.opts.Info)
	b = append(b, `,"`+MetaClientInfo+`":`...)
	b = append(b, info...)
	if c.opts.LogLevel != "" {
		b = append(b, `,"`+MetaLogLevel+`":`...)
		b = jsonrpc.AppendString(b, string(c.opts.LogLevel))
	}
	return &clientEra{version: version, meta: b}
}

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// appendBody appends the JSON-RPC request of l with id under era.
func appendBody(dst []byte, era *clientEra, id int64, l *wireRequest) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":`...)
	dst = jsonrpc.AppendString(dst, l.method)
	dst = append(dst, `,"params":{"_meta":`...)
	dst = append(dst, era.meta...)
	if l.onProgress != nil {
		dst = append(dst, `,"progressToken":`...)
		dst = strconv.AppendInt(dst, id, 10)
	}
	dst = append(dst, '}')
	dst = append(dst, l.params...)
	return append(dst, "}}"...)
}

// do sends one request and returns the raw result (a JSON object). A
// -32022 error is retried once with a version from data.supported that
// the client speaks. Each attempt is a new request with a new id; l may
// be sent again (the next round of a call).
func (c *Client) do(ctx context.Context, l *wireRequest) ([]byte, error) {
	if c.initErr != nil {
		return nil, c.initErr
	}
	if l.notify == nil && (l.onProgress != nil || l.onNotify != nil || c.opts.OnLog != nil) {
		l.notify = func(method string, params []byte) { c.deliver(l, method, params) }
	}
	era := c.era.Load()
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
	if c.opts.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.RequestTimeout)
		defer cancel()
	}
	l.id = c.ids.Add(1)
	l.version = era.version
	bp := bodyPool.Get().(*[]byte)
	l.body = appendBody((*bp)[:0], era, l.id, l)
	res, err := c.t.roundTrip(ctx, l)
	if c.t.releasesBody() && cap(l.body) <= 64<<10 {
		*bp = l.body
		bodyPool.Put(bp)
	}
	l.body = nil
	return res, err
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
	case NotificationProgress:
		if l.onProgress == nil {
			return
		}
		p := new(ProgressParams)
		if json.Unmarshal(params, p) != nil {
			c.log.Warn("mcp: client: malformed notifications/progress ignored")
			return
		}
		l.onProgress(p)
	case NotificationMessage:
		c.unrouted(method, params)
	default:
		if l.onNotify != nil {
			l.onNotify(method, params)
		}
	}
}

// unrouted receives notifications that belong to no request in flight
// (on a byte stream, notifications/message carries no request id).
func (c *Client) unrouted(method string, params []byte) {
	if method != NotificationMessage || c.opts.OnLog == nil {
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
