package mcp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/httpstream"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// HTTPOptions configure the Streamable HTTP handler. The zero value is
// valid and safe for a server on loopback.
//
// The handler bounds what a client can hold once a request reaches it:
// the body (MaxBodyBytes, BodyReadTimeout, read as it arrives, never
// preallocated from Content-Length) and every SSE write
// (StreamWriteTimeout). What comes before the handler is the embedding
// http.Server's: set its ReadHeaderTimeout (slow headers) and IdleTimeout
// (idle keep-alive connections). Its WriteTimeout is not needed for the
// streams, which arm their own deadline before every write and clear it
// after (so a WriteTimeout no longer cuts a healthy stream short
// either). The deadlines are set through http.ResponseController's
// interfaces; a ResponseWriter wrapped by middleware must offer Unwrap
// for them to apply.
type HTTPOptions struct {
	// MaxBodyBytes bounds a request body. Zero means
	// 4 MiB; larger bodies get 413.
	MaxBodyBytes int64
	// AllowedHosts are extra Host header values (host or host:port,
	// case-insensitive) accepted in addition to loopback names. When the
	// request arrived on a non-loopback address and AllowedHosts is
	// empty, any Host is accepted.
	AllowedHosts []string
	// AllowedOrigins are Origin header values (scheme://host[:port])
	// accepted in addition to loopback origins. A request with any other
	// Origin is refused with 403 (DNS-rebinding and cross-site
	// protection). Requests without Origin are not affected.
	AllowedOrigins []string
	// DisableHostCheck turns off Host and Origin checking, for servers
	// behind a proxy that does it.
	DisableHostCheck bool
	// KeepAlive is the interval of SSE comment lines on streams that
	// stay open (subscriptions/listen, slow tools). Zero means 15 s; a
	// negative value disables them.
	KeepAlive time.Duration
	// BodyReadTimeout bounds how long a request body may take to arrive,
	// from the moment the handler starts reading it (a read deadline on
	// the connection). An expired read is answered with 408 and a
	// JSON-RPC error. Zero means 30 s. When the embedding http.Server's
	// ReadTimeout is shorter it applies instead; once the body is in, the
	// connection's read deadline is cleared, so that a long handler is
	// not cancelled by it.
	BodyReadTimeout time.Duration
	// StreamWriteTimeout bounds each write of an SSE stream (events,
	// keep-alive comments, the final response; 2026-07-28 responses,
	// subscriptions/listen and 2025-11-25 streams alike): a client that
	// does not read for this long loses the stream. It bounds writes
	// only: the deadline is cleared once a write is through, so a stream
	// may stay idle for longer (HTTP/2 too). Zero means 10 s.
	StreamWriteTimeout time.Duration
	// TrustedProxies are the reverse proxies in front of the handler.
	// When a request's peer (RemoteAddr) is in one of them, its client's
	// address, which names its party for the per-party bounds (the
	// sessions, requests in flight and RateLimit of both HTTP handlers),
	// is the right-most address of X-Forwarded-For, or of the for= of
	// Forwarded (RFC 7239), that is not itself in TrustedProxies. With
	// both headers, both must agree. A chain of more than 32 hops or
	// 4 KiB, a hop that is not an address ("unknown", an obfuscated
	// identifier), or no header at all leaves the peer's address. The
	// headers of any other peer are ignored: a client cannot pick its
	// party. Empty means no proxy is trusted.
	TrustedProxies []netip.Prefix
	// RateLimit, when set, is asked about every request before it runs
	// (every POST but one carrying a JSON-RPC response, every GET and
	// DELETE; on the HTTP+SSE handler, every POST), with its party:
	// LegacyHTTPOptions.QuotaKey, else the verified principal, else
	// "address " and the client's address (see TrustedProxies). A
	// positive delay refuses the request: 429 with Retry-After (whole
	// seconds, at least 1) and ErrTemporarilyUnavailable for its id
	// (data.retryAfterMs), and nothing runs. An error (the limiter's
	// store unreachable) lets the request through, logged at most once a
	// minute. NewRateLimiter is one in process; the redis module's
	// redisrate one is shared by a fleet. Nil means no limit.
	RateLimit func(ctx context.Context, party string) (retryAfter time.Duration, err error)
	// Legacy configures the 2025-11-25 sessions (initialize,
	// Mcp-Session-Id, the GET stream, DELETE, resumable SSE) the handler
	// serves next to 2026-07-28 unless ServerOptions.DisableLegacy.
	Legacy LegacyHTTPOptions
}

// NewHTTPHandler returns the Streamable HTTP transport of s as an
// http.Handler, to be mounted at the MCP endpoint. Each POST carries one
// request or notification; the answer is a JSON body, or an SSE stream
// when the handler sends notifications first. A client disconnect
// cancels the handler's context.
//
// A 2025-11-25 session's GET stream over HTTP/1.1 is taken over from
// net/http (hijacked) once it is held, so that an open stream costs its
// connection and two small goroutines; http.Server.Shutdown does not
// wait for such connections, Server.Drain and Server.Close end them.
func NewHTTPHandler(s *Server, opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	h := newHTTPHandler(s, o)
	if s.legacyEnabled() {
		h.legacy = newLegacyHTTP(s, h.opts.Legacy, h.opts.KeepAlive, h.opts.StreamWriteTimeout)
		h.bindings = append(h.bindings, h.legacy)
	}
	h.bindings = append(h.bindings, modernHTTP{h})
	return h
}

// newHTTPHandler applies the defaults of o and makes the protections
// both HTTP handlers share (host checks, body reading, deadlines):
// NewHTTPHandler and NewSSEHandler start from it.
func newHTTPHandler(s *Server, o HTTPOptions) *httpHandler {
	h := &httpHandler{s: s, opts: o}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = defaultMaxMessageBytes
	}
	if h.opts.KeepAlive == 0 {
		h.opts.KeepAlive = 15 * time.Second
	}
	if h.opts.BodyReadTimeout <= 0 {
		h.opts.BodyReadTimeout = 30 * time.Second
	}
	if h.opts.StreamWriteTimeout <= 0 {
		h.opts.StreamWriteTimeout = 10 * time.Second
	}
	for _, a := range h.opts.AllowedHosts {
		h.hosts = append(h.hosts, strings.ToLower(a))
	}
	for _, a := range h.opts.AllowedOrigins {
		h.origins = append(h.origins, strings.ToLower(strings.TrimSuffix(a, "/")))
	}
	return h
}

type httpHandler struct {
	s        *Server
	opts     HTTPOptions
	hosts    []string
	origins  []string
	legacy   *legacyHTTP   // 2025-11-25 sessions (legacy_http.go); nil when disabled
	bindings []httpBinding // the eras served, in the order they are asked; the last (modern) claims everything

	rateLogged atomic.Int64 // when a failing RateLimit was last logged (unix ns; party.go)
}

// An httpBinding is one protocol era's side of the Streamable HTTP
// endpoint, connect-go's way: ServeHTTP does the checks every era shares
// (host and origin, method, content type, the body, the JSON-RPC
// envelope) and then asks its bindings in turn. The handler holds the
// 2025-era sessions' binding (legacyHTTP, when the server has the legacy
// era) and then the 2026-07-28 one (modernHTTP), which claims whatever
// is left.
type httpBinding interface {
	// claims reports whether msg, a decoded POST, is this era's traffic.
	claims(r *http.Request, msg jsonrpc.Message) bool
	// serve answers a message the binding claimed.
	serve(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message)
	// serveOther answers what is not one message: a GET or DELETE (body
	// nil) or a POSTed JSON-RPC batch (body, the array). It reports
	// whether it answered; when no binding does, the request gets 405
	// (GET, DELETE) or the modern binding's refusal (a batch).
	serveOther(w http.ResponseWriter, r *http.Request, body []byte) bool
}

var (
	allowPost = []string{"POST"}
)

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.opts.DisableHostCheck && !h.hostAllowed(r) {
		writeHTTPError(w, http.StatusForbidden, jsonrpc.ID{}, jsonrpc.NewError(CodeInvalidRequest, "Forbidden: Host or Origin not allowed"))
		return
	}
	r = withClientAddress(r, h.opts.TrustedProxies)
	if r.Method != http.MethodPost {
		if h.rateLimited(w, r, jsonrpc.ID{}) {
			return
		}
		if h.other(w, r, nil) {
			return
		}
		w.Header()["Allow"] = allowPost
		http.Error(w, "method not allowed: the MCP endpoint accepts POST only", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		writeHTTPError(w, http.StatusUnsupportedMediaType, jsonrpc.ID{}, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: Content-Type must be application/json"))
		return
	}
	body, ok := h.body(w, r)
	if !ok {
		return
	}
	h.s.countDecode(false)
	msg, e := jsonrpc.Decode(body)
	if e != nil {
		if jsonrpc.IsBatch(body) && (h.rateLimited(w, r, jsonrpc.ID{}) || h.other(w, r, body)) { // legacy_batch.go
			return
		}
		writeHTTPError(w, http.StatusBadRequest, msg.ID, e)
		return
	}
	if !msg.IsResponse() && h.rateLimited(w, r, msg.ID) {
		return
	}
	for _, b := range h.bindings {
		if b.claims(r, msg) {
			b.serve(w, r, msg)
			return
		}
	}
}

// other offers what is not one message (a GET or DELETE: body nil; a
// batch: body) to the bindings in turn; it reports whether one answered.
func (h *httpHandler) other(w http.ResponseWriter, r *http.Request, body []byte) bool {
	for _, b := range h.bindings {
		if b.serveOther(w, r, body) {
			return true
		}
	}
	return false
}

// body reads the request body (readBody); when that fails, it answers
// the request (413, 408 or 400) and reports false.
func (h *httpHandler) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := h.readBody(w, r)
	if err == nil {
		return body, true
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeHTTPError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: body exceeds the size limit"))
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeHTTPError(w, http.StatusRequestTimeout, jsonrpc.ID{}, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: the body did not arrive within the read timeout"))
	default:
		writeHTTPError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.NewError(CodeParseError, "Parse error: reading body failed"))
	}
	return nil, false
}

// modernHTTP is the 2026-07-28 binding of the endpoint: no session, one
// POST per request, claiming every message no earlier binding claimed.
type modernHTTP struct{ h *httpHandler }

func (modernHTTP) claims(*http.Request, jsonrpc.Message) bool { return true }

// serveOther refuses a batch (2026-07-28 has none) and leaves GET and
// DELETE to the 405.
func (modernHTTP) serveOther(w http.ResponseWriter, _ *http.Request, body []byte) bool {
	if body == nil {
		return false
	}
	writeHTTPError(w, http.StatusBadRequest, jsonrpc.ID{}, batchRefusal(LatestProtocolVersion))
	return true
}

func (m modernHTTP) serve(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) {
	h := m.h
	switch {
	case msg.IsResponse():
		writeHTTPError(w, http.StatusBadRequest, msg.ID, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: clients send no responses in protocol revision "+LatestProtocolVersion))
		return
	case msg.IsNotification():
		// No client notification is defined over HTTP in this revision;
		// accept and ignore (cancellation is closing the stream).
		w.WriteHeader(http.StatusAccepted)
		return
	}
	c := &call{msg: msg, era: modern}
	if f := h.s.prepare(c, r.Header); f != nil {
		writeHTTPError(w, f.status, msg.ID, f.err)
		return
	}
	if c.msg.Method == methodSubscriptionsListen {
		// A listen stream lasts: it goes on without net/http's goroutines
		// (internal/httpstream), its context ended when the client leaves.
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		if hr := httpstream.Hijack(w, r, cancel); hr != nil {
			// The request as handlers see it, without its body (read
			// already), which would keep net/http's connection reader.
			r = r.WithContext(ctx)
			r.Body, r.GetBody = http.NoBody, nil
			go func() {
				defer hr.End()
				defer cancel()
				h.serveCall(ctx, hr, r, c)
			}()
			return
		}
		cancel()
	}
	h.serveCall(r.Context(), w, r, c)
}

// serveCall runs a modern call and writes its answer to w.
func (h *httpHandler) serveCall(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call) {
	out := &httpOut{w: w, h: h, r: r}
	res, f := h.s.execute(ctx, c, out)
	out.finish(h.s, c, res, f, ctx)
}

// maxBodyPrealloc bounds what a body gets before its bytes arrive: a
// Content-Length larger than this is believed only as the bytes come.
const maxBodyPrealloc = 4 << 10

// readBody reads the request body within MaxBodyBytes and
// BodyReadTimeout, growing its buffer as data arrives.
func (h *httpHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	max := h.opts.MaxBodyBytes
	if r.ContentLength > max {
		return nil, &http.MaxBytesError{Limit: max}
	}
	timed := r.ContentLength != 0 && h.s.exch.StartRead(w, r, h.opts.BodyReadTimeout)
	body, err := readAll(http.MaxBytesReader(w, r.Body, max), r.ContentLength)
	if timed {
		h.s.exch.EndRead(w, err == nil)
	}
	return body, err
}

// readAll reads rd to its end. want is the declared length (-1 when
// unknown): the buffer starts at most maxBodyPrealloc bytes and doubles
// as the bytes come, up to want.
func readAll(rd io.Reader, want int64) ([]byte, error) {
	if want < 0 {
		return io.ReadAll(rd)
	}
	buf := make([]byte, 0, min(want, maxBodyPrealloc))
	for int64(len(buf)) < want {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(want, 2*int64(cap(buf))))-len(buf))
		}
		end := cap(buf)
		if int64(end) > want {
			end = int(want)
		}
		n, err := rd.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) < want {
				return nil, io.ErrUnexpectedEOF
			}
			break
		}
		if err != nil {
			return nil, err
		}
	}
	// The declared length was read; anything more is an error.
	var one [1]byte
	if n, _ := rd.Read(one[:]); n > 0 {
		return nil, errors.New("body longer than Content-Length")
	}
	return buf, nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func writeHTTPError(w http.ResponseWriter, status int, id jsonrpc.ID, e *Error) {
	bp := bufPool.Get().(*[]byte)
	b := jsonrpc.AppendError((*bp)[:0], id, e)
	w.Header()["Content-Type"] = ctJSON
	w.WriteHeader(status)
	w.Write(b)
	*bp = b
	bufPool.Put(bp)
}

// httpOut delivers a request's notifications. The response stays a plain
// JSON body until the first notification, which turns it into an SSE
// stream (an sse.Writer) that the final response then ends.
//
// Every SSE write is armed with StreamWriteTimeout first and the deadline
// is cleared once it is through, so a client that stops reading costs a
// blocked write for that long at most, and a stream that stays idle for
// longer lives on; the stream is known to Server.Close (exchanges) while
// it lasts. Writes are serialized by mu, which closing never needs.
type httpOut struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	sw   *sse.Writer // the event stream; nil while the response is a JSON body
	done bool
	ka   *time.Timer  // the next keep-alive comment, while streaming
	h    *httpHandler // options and exchanges (one pointer keeps httpOut in a 64-byte size class)
	r    *http.Request
}

func (o *httpOut) exchange() (TransportKind, *http.Request) { return TransportHTTP, o.r }

func (o *httpOut) startSSE() error {
	o.sw = sse.NewWriter(o.w, o.h.opts.StreamWriteTimeout)
	o.h.s.exch.AddWriter(o.sw)
	if err := o.sw.Start(nil); err != nil {
		return err
	}
	if o.h.opts.KeepAlive > 0 {
		// A timer, not a goroutine: a held stream (a listen) costs no
		// goroutine for its keep-alive comments.
		o.ka = time.AfterFunc(o.h.opts.KeepAlive, o.keepAlive)
	}
	return nil
}

// keepAlive writes a keep-alive comment and arms the next one, until the
// response is answered or the stream broke (the next notification says
// so).
func (o *httpOut) keepAlive() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done || o.sw.KeepAlive() != nil {
		return
	}
	o.ka.Reset(o.h.opts.KeepAlive)
}

func (o *httpOut) notify(method string, params any) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b, err := encodeNotification((*bp)[:0], method, params)
	if err != nil {
		return err
	}
	*bp = b
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return errors.New("mcp: request already answered")
	}
	if o.sw == nil {
		if err := o.startSSE(); err != nil {
			return err
		}
	}
	return o.sw.WriteEvent(sse.Event{Name: "message", Data: b})
}

// finish writes the final response.
func (o *httpOut) finish(s *Server, c *call, res Result, f *failure, ctx context.Context) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = true
	if o.ka != nil {
		o.ka.Stop()
	}
	if o.sw != nil {
		defer func() {
			o.sw.Release()
			o.h.s.exch.RemoveWriter(o.sw)
		}()
	}
	if ctx.Err() != nil {
		return // the client went away: nobody to answer
	}
	bp := bufPool.Get().(*[]byte)
	b, status := s.encodeResult((*bp)[:0], c, res, f)
	if o.sw != nil {
		o.sw.WriteEvent(sse.Event{Name: "message", Data: b})
	} else {
		o.w.Header()["Content-Type"] = ctJSON
		if status == http.StatusServiceUnavailable && f != nil {
			d, _ := retryAfter(f.err)
			o.w.Header().Set("Retry-After", retryAfterHeader(d))
		}
		o.w.WriteHeader(status)
		o.w.Write(b)
	}
	if cap(b) <= 64<<10 {
		*bp = b
		bufPool.Put(bp)
	}
}

// hostAllowed implements DNS-rebinding protection: a request that came
// in on a loopback address must name a loopback host (or an allowed
// one), and any Origin must be loopback or allowed.
func (h *httpHandler) hostAllowed(r *http.Request) bool {
	if origin := r.Header.Get("Origin"); origin != "" {
		o := strings.ToLower(strings.TrimSuffix(origin, "/"))
		ok := false
		if i := strings.Index(o, "://"); i >= 0 && isLoopbackHost(o[i+3:]) {
			ok = true
		}
		for _, a := range h.origins {
			if a == o {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	host := strings.ToLower(r.Host)
	for _, a := range h.hosts {
		if a == host {
			return true
		}
		if hn, _, err := net.SplitHostPort(host); err == nil && hn == a {
			return true
		}
	}
	if isLoopbackHost(host) {
		return true
	}
	// Non-loopback listener with no allow-list: the operator serves a
	// public name; rebinding protection is about loopback servers.
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && len(h.hosts) == 0 {
		if ta, ok := la.(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
			return true
		}
	}
	return false
}

// isLoopbackHost reports whether hostport names a loopback host.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// exchanges are the HTTP exchanges Server.Close cuts short (bodies being
// read, SSE streams being written): internal/httpstream.
type exchanges = httpstream.Exchanges
