package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// HTTPClientOptions configure the Streamable HTTP client transport. The
// zero value is valid.
type HTTPClientOptions struct {
	// HTTPClient sends the requests. Nil means a client with no overall
	// timeout (bound calls with their context or
	// ClientOptions.RequestTimeout instead: an SSE response may
	// legitimately stay open for long). The transport sends with a copy
	// whose CheckRedirect is its own (see FollowRedirects); the client
	// given is not modified, and Client.Close leaves its idle
	// connections to it (with nil, the transport has connections of its
	// own and closes them).
	HTTPClient *http.Client
	// FollowRedirects lets the transport follow a server's redirects
	// (3xx with a Location, at most 10 per request). By default every
	// request it makes (the POSTs, the GET streams, DELETE, the HTTP+SSE
	// stream and the POSTs to its endpoint) refuses them: the answer is
	// an error matching ErrRedirect, and nothing is sent to the Location
	// (a redirect would hand the JSON-RPC body, and take the answer, from
	// wherever the server points). Even when set, a hop to another origin
	// (scheme, host and port) than the URL's carries only the MCP headers
	// the transport sets itself: Header (Authorization, X-Api-Key, ...),
	// cookies and Mcp-Session-Id stay behind. The CheckRedirect of
	// HTTPClient, if any, is then asked as well. Credentials a
	// RoundTripper of HTTPClient adds to every hop (an OAuth transport)
	// are that RoundTripper's to guard.
	FollowRedirects bool
	// Header holds extra headers sent with every request, such as
	// Authorization. The MCP headers are always set by the transport.
	Header http.Header
	// MaxMessageBytes bounds a JSON response body and each SSE event.
	// Zero means 4 MiB; a larger message fails
	// the call with ErrMessageTooLarge.
	MaxMessageBytes int
	// NoLegacyGetStream keeps a 2025-11-25 session from opening the
	// session's GET stream. By default the client opens it after the
	// handshake (and before any other request) for what the server sends
	// outside a response stream: requests not tied to a call (answered
	// with the Client's handlers, as on a response stream) and
	// notifications (notifications/message goes to ClientOptions.OnLog).
	// A server without one (405) is fine. The modern era has no GET
	// stream.
	NoLegacyGetStream bool
	// SSE speaks the HTTP+SSE transport of protocol revision 2024-11-05
	// from the start: url is the server's event stream (a GET whose
	// first event, endpoint, names where to POST the session's
	// messages). Without it the transport speaks Streamable HTTP and
	// falls back to HTTP+SSE when the server answers the POST of
	// initialize with a 4xx other than 401, 403, 407, 408 and 429 (as
	// 2025-03-26 prescribes for clients of older servers): it then GETs
	// the same URL, and speaks HTTP+SSE for the rest of its life when
	// the answer is an event stream whose first event is endpoint. A
	// 5xx, a network failure or another answer to the GET leave the
	// error of the POST as it was. Either way the session is the
	// initialize handshake's: the Client offers its newest session
	// revision and, over HTTP+SSE, also accepts 2025-03-26 and
	// 2024-11-05 in answer.
	SSE bool
	// NoSSEFallback turns the fallback to HTTP+SSE off: a 4xx to the
	// POST of initialize is the handshake's error.
	NoSSEFallback bool
}

// Headers of the 2025-11-25 Streamable HTTP binding.
const (
	clientHeaderSession     = "Mcp-Session-Id"
	clientHeaderLastEventID = "Last-Event-ID"
)

// Reconnection of an interrupted SSE stream of a legacy session: the
// delay when the server gave no retry field, and how many reconnections
// in a row may bring nothing new before the call fails.
const (
	defaultSSERetry  = time.Second
	maxSSEReconnects = 3
)

// getStreamWait bounds how long the handshake waits for the response
// headers of the GET stream.
const getStreamWait = 2 * time.Second

// NewHTTPClientTransport returns a Streamable HTTP transport for the MCP
// endpoint url. Every request is its own POST with the headers
// MCP-Protocol-Version, Mcp-Method, Mcp-Name (tools/call, prompts/get,
// resources/read) and Mcp-Param-* (tools/call arguments the tool's
// inputSchema marks with x-mcp-header, learned from tools/list). The
// response may be a JSON body or an SSE stream: the stream is read until
// the event carrying the response; notifications before it go to the
// call's callbacks; comment lines are ignored. Cancelling a call's
// context closes its stream, which is how HTTP cancels a request.
//
// On a 2025-11-25 session the transport sends Mcp-Session-Id and
// MCP-Protocol-Version instead of the modern headers, answers the
// server's requests found on a response stream (a POST of the response),
// resumes a stream that ends before its response with GET and
// Last-Event-ID after the server's retry delay, and ends the session
// with DELETE when the Client is closed.
//
// A server that speaks only the HTTP+SSE transport of 2024-11-05
// refuses the POST of initialize with a 4xx; the transport then GETs
// the URL and, when it gets that transport's event stream, speaks it
// instead (see HTTPClientOptions.SSE and NoSSEFallback).
func NewHTTPClientTransport(url string, opts *HTTPClientOptions) ClientTransport {
	t := &httpClientTransport{url: url, max: defaultMaxMessageBytes}
	if opts != nil {
		t.hc = opts.HTTPClient
		t.extra = opts.Header
		if opts.MaxMessageBytes > 0 {
			t.max = opts.MaxMessageBytes
		}
		t.getStream = !opts.NoLegacyGetStream
		t.sse.fallback = !opts.NoSSEFallback
		t.sse.on.Store(opts.SSE)
	}
	if opts == nil {
		t.getStream = true
		t.sse.fallback = true
	}
	t.sse.t = t
	if t.hc == nil {
		// A transport of its own: closing this Client closes its idle
		// connections, and those of a shared transport (the default
		// one) may be handed to another client's request at that
		// moment, which then fails.
		t.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		t.ownsConns = true
	}
	t.hc = redirectClient(t.hc, opts != nil && opts.FollowRedirects)
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.answers = newAnswerSlots(t.ctx.Done())
	return t
}

type httpClientTransport struct {
	url       string
	hc        *http.Client
	extra     http.Header
	max       int
	getStream bool
	ownsConns bool // hc's transport is this transport's alone
	hooks     *clientHooks

	// ctx ends with the transport (the GET stream, answers in flight).
	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	stopListen context.CancelFunc // the GET stream of the current session

	// answers bound the answers to the server's requests (both
	// transports).
	answers answerSlots

	// sse is the HTTP+SSE transport (2024-11-05), spoken when asked for
	// or after the fallback (client_sse_transport.go).
	sse httpSSE
}

var (
	acceptBoth = []string{"application/json, text/event-stream"}
	acceptSSE  = []string{"text/event-stream"}
)

func (t *httpClientTransport) mirrorsHeaders() bool { return true }
func (t *httpClientTransport) inMemory() bool       { return false }
func (t *httpClientTransport) releasesBody() bool   { return false }
func (t *httpClientTransport) bind(h *clientHooks)  { t.hooks = h }

func (t *httpClientTransport) kind() string {
	if t.sse.on.Load() {
		return "http+sse"
	}
	return "http"
}

// Close stops the GET stream and closes idle connections when the
// transport made its own http.Client (a caller's is left as it is).
func (t *httpClientTransport) Close() error {
	t.cancel()
	if t.ownsConns {
		t.hc.CloseIdleConnections()
	}
	return nil
}

// newRequest builds a request to the endpoint with the headers every
// message of r's era carries.
func (t *httpClientTransport) newRequest(ctx context.Context, method string, body []byte, version, session string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, rd)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	h := req.Header
	for k, v := range t.extra {
		h[k] = v
	}
	if body != nil {
		h["Content-Type"] = ctJSON
		h["Accept"] = acceptBoth
	}
	if version != "" {
		h.Set(HeaderProtocolVersion, version)
	}
	if session != "" {
		h.Set(clientHeaderSession, session)
	}
	return req, nil
}

func (t *httpClientTransport) roundTrip(ctx context.Context, r *wireRequest) ([]byte, error) {
	if t.sse.on.Load() {
		return t.sse.roundTrip(ctx, r)
	}
	res, err := t.postRoundTrip(ctx, r)
	if err != nil && t.sse.fallsBack(ctx, r) {
		return t.sse.fallBack(ctx, r, err)
	}
	return res, err
}

// postRoundTrip sends r as a Streamable HTTP POST.
func (t *httpClientTransport) postRoundTrip(ctx context.Context, r *wireRequest) ([]byte, error) {
	era := r.era
	req, err := t.newRequest(ctx, http.MethodPost, r.body, era.version, era.session)
	if err != nil {
		return nil, err
	}
	if era.mirrorsHeaders() {
		h := req.Header
		h.Set(HeaderMethod, r.method)
		if r.hasTarget {
			h.Set(HeaderName, encodeHeaderValue(r.target))
		}
		for _, p := range r.headers {
			h.Set(headerParamPrefix+p.name, p.value)
		}
	}
	r.status = 0
	resp, err := t.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("mcp: %s: %w", r.method, err)
	}
	defer resp.Body.Close()
	r.status = int32(resp.StatusCode)
	if h := r.hook; h != nil {
		h.sessionID = resp.Header.Get(clientHeaderSession)
		if h.onStatus != nil {
			h.onStatus(resp.StatusCode)
		}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var res []byte
	switch {
	case ct == "text/event-stream" && resp.StatusCode == http.StatusOK:
		st := &sseState{}
		res, err = t.readSSE(ctx, resp.Body, r, st)
		if errors.Is(err, errSSEEnded) && era.resumes() && st.lastID != "" {
			res, err = t.resume(ctx, r, st)
		}
		if errors.Is(err, errSSEEnded) {
			err = &InvalidResponseError{Method: r.method, Err: errSSEEnded}
		}
	case ct == "application/json":
		res, err = t.readJSON(resp, r)
	default:
		err = statusError(resp, t.max)
		if resp.StatusCode/100 == 2 {
			err = invalidResponse(r.method, "HTTP %d response with Content-Type %q", resp.StatusCode, ct)
		}
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

// resume reconnects to the SSE stream of r with GET and Last-Event-ID
// (2025-11-25 resumability) until the response comes: after the
// server's retry delay each time, giving up after maxSSEReconnects
// reconnections in a row that brought no new event.
func (t *httpClientTransport) resume(ctx context.Context, r *wireRequest, st *sseState) ([]byte, error) {
	for failures := 0; ; {
		delay := st.retry
		if delay <= 0 {
			delay = defaultSSERetry
		}
		if err := sleepCtx(ctx, delay); err != nil {
			return nil, err
		}
		prev := st.lastID
		res, err := t.reconnect(ctx, r, st)
		if !errors.Is(err, errSSEEnded) {
			return res, err
		}
		if st.lastID == prev {
			failures++
		} else {
			failures = 0
		}
		if failures >= maxSSEReconnects {
			return nil, err
		}
	}
}

// reconnect is one GET with Last-Event-ID, read like the original stream.
func (t *httpClientTransport) reconnect(ctx context.Context, r *wireRequest, st *sseState) ([]byte, error) {
	req, err := t.newRequest(ctx, http.MethodGet, nil, r.era.version, r.era.session)
	if err != nil {
		return nil, err
	}
	req.Header["Accept"] = acceptSSE
	req.Header.Set(clientHeaderLastEventID, st.lastID)
	resp, err := t.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %v", errSSEEnded, err)
	}
	defer resp.Body.Close()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusOK && ct == "text/event-stream":
		return t.readSSE(ctx, resp.Body, r, st)
	case resp.StatusCode >= 500:
		return nil, fmt.Errorf("%w: %v", errSSEEnded, statusError(resp, t.max))
	}
	return nil, fmt.Errorf("mcp: %s: resuming the SSE stream: %w", r.method, statusError(resp, t.max))
}

// post sends a message that gets no JSON-RPC answer (a notification, or
// the response to a server's request) on a legacy session.
func (t *httpClientTransport) post(ctx context.Context, body []byte, version, session string) error {
	req, err := t.newRequest(ctx, http.MethodPost, body, version, session)
	if err != nil {
		return err
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(resp, t.max)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, int64(t.max)))
	return nil
}

// notify POSTs a notification of a legacy session (202 expected).
func (t *httpClientTransport) notify(ctx context.Context, r *wireRequest) error {
	if t.sse.on.Load() {
		return t.sse.notify(ctx, r)
	}
	if err := t.post(ctx, r.body, r.era.version, r.era.session); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("mcp: %s: %w", r.method, err)
	}
	return nil
}

// endSession sends DELETE with the session id; a server that does not
// allow it (405) or already forgot the session is fine.
func (t *httpClientTransport) endSession(ctx context.Context, version, session string) {
	if t.sse.on.Load() {
		t.sse.end() // the end of the stream ends an HTTP+SSE session
		return
	}
	t.mu.Lock()
	if t.stopListen != nil {
		t.stopListen()
		t.stopListen = nil
	}
	t.mu.Unlock()
	if session == "" {
		return
	}
	req, err := t.newRequest(ctx, http.MethodDelete, nil, version, session)
	if err != nil {
		return
	}
	if resp, err := t.hc.Do(req); err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// listen opens the GET stream of a legacy session and keeps it open
// (reconnecting with Last-Event-ID) until the session or the transport
// ends, or the server says it has none. It returns once the server
// answered the first GET (or after getStreamWait, or when ctx ends), so
// that the stream is there before the session's first request.
func (t *httpClientTransport) listen(ctx context.Context, era *clientEra) {
	if t.sse.on.Load() {
		return // HTTP+SSE: the session's stream is its only one
	}
	lctx, cancel := context.WithCancel(t.ctx)
	t.mu.Lock()
	if t.stopListen != nil {
		t.stopListen()
	}
	t.stopListen = cancel
	t.mu.Unlock()
	r := &wireRequest{method: "GET stream", era: era, id: -1}
	if t.hooks != nil {
		r.notify = t.hooks.unrouted
	}
	opened := make(chan struct{})
	signal := sync.OnceFunc(func() { close(opened) })
	go func() {
		defer cancel()
		defer signal()
		st := &sseState{}
		for failures := 0; failures < maxSSEReconnects && lctx.Err() == nil; {
			req, err := t.newRequest(lctx, http.MethodGet, nil, era.version, era.session)
			if err != nil {
				return
			}
			req.Header["Accept"] = acceptSSE
			if st.lastID != "" {
				req.Header.Set(clientHeaderLastEventID, st.lastID)
			}
			resp, err := t.hc.Do(req)
			signal()
			if err == nil {
				ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
				ok := resp.StatusCode == http.StatusOK && ct == "text/event-stream"
				if ok {
					failures = 0
					t.readSSE(lctx, resp.Body, r, st)
				}
				resp.Body.Close()
				if !ok && resp.StatusCode == http.StatusNotFound && st.lastID != "" {
					// The server cannot resume from that id (it no longer
					// keeps the events after it): open the stream afresh,
					// at once. A session that is gone answers 404 to that
					// too, and ends the loop.
					if h := t.hooks; h != nil && h.log != nil {
						h.log.Warn("mcp: client: the GET stream could not be resumed; notifications may have been missed", "lastEventId", st.lastID)
					}
					st.lastID = ""
					continue
				}
				if !ok && resp.StatusCode < 500 {
					return // no GET stream (405), or the session is gone
				}
			}
			failures++
			delay := st.retry
			if delay <= 0 {
				delay = defaultSSERetry
			}
			if sleepCtx(lctx, delay) != nil {
				return
			}
		}
	}()
	wait := time.NewTimer(getStreamWait)
	defer wait.Stop()
	select {
	case <-opened:
	case <-wait.C: // a server that holds its headers back: go on without it
	case <-ctx.Done():
	}
}

func statusError(resp *http.Response, max int) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(min(512, max))))
	return &HTTPStatusError{StatusCode: resp.StatusCode, Body: b}
}

// readJSON reads a JSON body holding exactly one response.
func (t *httpClientTransport) readJSON(resp *http.Response, r *wireRequest) ([]byte, error) {
	var body []byte
	if n := resp.ContentLength; n > int64(t.max) {
		return nil, &InvalidResponseError{Method: r.method, Err: ErrMessageTooLarge}
	} else if n > 0 {
		body = make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return nil, fmt.Errorf("mcp: %s: reading the response: %w", r.method, err)
		}
	} else {
		var err error
		body, err = io.ReadAll(io.LimitReader(resp.Body, int64(t.max)+1))
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: reading the response: %w", r.method, err)
		}
		if len(body) > t.max {
			return nil, &InvalidResponseError{Method: r.method, Err: ErrMessageTooLarge}
		}
	}
	msg, e := jsonrpc.Decode(body)
	if e != nil || !msg.IsResponse() {
		if resp.StatusCode != http.StatusOK {
			return nil, &HTTPStatusError{StatusCode: resp.StatusCode, Body: body[:min(len(body), 512)]}
		}
		if e != nil {
			return nil, invalidResponse(r.method, "%s", e.Message)
		}
		return nil, invalidResponse(r.method, "the JSON body is not a response")
	}
	if id, ok := idOf(msg.ID); ok && id != r.id || !ok && msg.Error == nil {
		return nil, invalidResponse(r.method, "the response is for id %s, not %d", msg.ID.Raw(), r.id)
	}
	// An error without id answers a request the server could not read.
	return responseOf(r.method, &msg)
}

// sseState is what survives a reconnection of a legacy SSE stream: the
// id of the last event and the server's retry delay.
type sseState struct {
	lastID string
	retry  time.Duration
}

// maxSSERetry bounds the retry delay a server may ask for; a longer one
// is ignored (the last one, or defaultSSERetry, stays).
const maxSSERetry = math.MaxInt32 * time.Millisecond

// update takes what the stream read so far set: its last event id (an
// id the stream did not set leaves the one from before the
// reconnection) and its retry delay.
func (st *sseState) update(rd *sse.Reader) {
	if id := rd.LastEventID(); id != "" {
		st.lastID = id
	}
	if d, ok := rd.Retry(); ok && d <= maxSSERetry {
		st.retry = d
	}
}

// errSSEEnded: the stream ended (or broke) before the response.
var errSSEEnded = errors.New("mcp: the SSE stream ended without the response")

// readSSE reads an SSE stream (package sse, each event's data within
// MaxMessageBytes) until the event carrying the response to r, passing
// notifications to r.notify and (legacy sessions) answering the server's
// requests. Events without data (a priming event) only move the last
// event id; an event the stream ends in the middle of is dropped, as an
// EventSource does. It returns an error matching errSSEEnded when the
// stream ends or breaks first.
func (t *httpClientTransport) readSSE(ctx context.Context, body io.Reader, r *wireRequest, st *sseState) ([]byte, error) {
	rd := sse.NewReader(body, t.max, 0)
	for {
		ev, err := rd.Next()
		st.update(rd)
		switch {
		case err == nil:
		case errors.Is(err, sse.ErrLineTooLong), errors.Is(err, sse.ErrEventTooLarge):
			return nil, &InvalidResponseError{Method: r.method, Err: ErrMessageTooLarge}
		case err == io.EOF:
			return nil, errSSEEnded
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			return nil, fmt.Errorf("%w (reading it failed: %v)", errSSEEnded, err)
		}
		// ev.Data is the reader's until the next event: event copies what
		// outlives the call (a server request's params), and the response
		// is the last event read.
		if res, done, derr := t.event(ctx, ev.Data, r); done {
			return res, derr
		}
	}
}

// event handles one SSE event; done is true when it carried the
// response to r (or was malformed).
func (t *httpClientTransport) event(ctx context.Context, data []byte, r *wireRequest) (res []byte, done bool, err error) {
	if len(jsonrpc.TrimSpace(data)) == 0 {
		return nil, false, nil
	}
	msg, e := jsonrpc.Decode(data)
	if e != nil {
		return nil, true, invalidResponse(r.method, "SSE event: %s", e.Message)
	}
	switch {
	case msg.IsNotification():
		if r.notify != nil {
			r.notify(msg.Method, msg.Params)
		}
		return nil, false, nil
	case msg.IsResponse():
		if id, ok := idOf(msg.ID); ok && id == r.id || !ok && msg.Error != nil && r.id >= 0 {
			res, err := responseOf(r.method, &msg)
			return res, true, err
		}
	case msg.IsRequest() && r.era != nil && r.era.servesRequests():
		t.serve(ctx, msg, r.era.version, r.era.session)
	}
	// Another request's response, or a request on a modern stream
	// (a modern server sends none): not ours, ignored.
	return nil, false, nil
}

// serve answers a request the server sent on a legacy session's stream,
// on a goroutine of its own (reading goes on), by POSTing the response;
// at most maxConcurrentAnswers at once (client_answers.go).
func (t *httpClientTransport) serve(ctx context.Context, msg jsonrpc.Message, version, session string) {
	h := t.hooks
	warn := func(string, ...any) {}
	if h != nil {
		warn = h.log.Warn
	}
	t.answers.answer(ctx, h, msg, func(resp []byte, wait time.Duration) {
		// The answer is sent even when the call that carried the request
		// has ended: the server is waiting for it.
		actx, cancel := context.WithTimeout(t.ctx, wait)
		defer cancel()
		if err := t.post(actx, resp, version, session); err != nil && t.ctx.Err() == nil {
			h.log.Warn("mcp: client: could not answer the server's request", "method", msg.Method, "err", err)
		}
	}, warn)
}

// How long the POST of an answer to a server's request, and of a
// refusal, may take.
const (
	answerPostTimeout  = 30 * time.Second
	refusalPostTimeout = 5 * time.Second
)
