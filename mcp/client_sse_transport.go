package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// The client side of the HTTP+SSE transport of protocol revision
// 2024-11-05 (the server side is sse_transport.go), which the HTTP
// client transport speaks when told to (HTTPClientOptions.SSE) or falls
// back to, as the backwards-compatibility rules of 2025-03-26 say: the
// POST of initialize to the URL fails with a 4xx, so the client GETs the
// same URL expecting an event stream whose first event is "endpoint".
//
// A link is one event stream: the session it carries lasts as long as
// the stream. Each initialize opens a new link (the old one, if any, is
// closed); requests, notifications and the answers to the server's
// requests are POSTed to the endpoint, and everything the server sends
// arrives on the stream, matched to the calls waiting for it by id.
// When the stream ends, the calls waiting fail, and the next request
// gets the status a Streamable HTTP session that is gone gets (404),
// which makes the Client open a new session, as it does there.

// httpSSE is the HTTP+SSE side of an HTTP client transport.
type httpSSE struct {
	t        *httpClientTransport
	fallback bool        // may switch to HTTP+SSE on a 4xx to initialize
	on       atomic.Bool // speaking HTTP+SSE (HTTPClientOptions.SSE, or since the fallback)

	mu   sync.Mutex
	link *sseLink // the stream of the current session; nil before the first initialize
}

// sseFallbackStatus reports whether an HTTP status answering the POST
// of initialize sends the client to HTTP+SSE: a 4xx, except those that
// say something about the caller rather than the transport (401, 403,
// 407: credentials; 408, 429: time and rate).
func sseFallbackStatus(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}

// fallsBack reports whether the failed POST of r sends the transport to
// HTTP+SSE: an initialize answered with a fallback status, the
// fallback allowed, the call not cancelled.
func (s *httpSSE) fallsBack(ctx context.Context, r *wireRequest) bool {
	return s.fallback && r.method == methodInitialize && ctx.Err() == nil && sseFallbackStatus(int(r.status))
}

// fallBack opens an event stream at the URL after the POST of
// initialize failed with postErr; when the server does not answer the
// GET with a stream whose first event is endpoint, postErr stands (with
// what the GET got).
func (s *httpSSE) fallBack(ctx context.Context, r *wireRequest, postErr error) ([]byte, error) {
	l, err := s.open(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w (and GET found no HTTP+SSE event stream at that URL: %v)", postErr, err)
	}
	if h := s.t.hooks; h != nil && h.log != nil {
		h.log.Debug("mcp: client: the server refused initialize over Streamable HTTP; speaking HTTP+SSE (2024-11-05)", "status", r.status, "endpoint", l.endpoint)
	}
	s.on.Store(true)
	s.replace(l)
	return l.roundTrip(ctx, r)
}

// roundTrip sends r over HTTP+SSE. initialize opens a new stream, and
// with it a new session.
func (s *httpSSE) roundTrip(ctx context.Context, r *wireRequest) ([]byte, error) {
	if r.method == methodInitialize {
		l, err := s.open(ctx)
		if err != nil {
			return nil, err
		}
		s.replace(l)
		return l.roundTrip(ctx, r)
	}
	if r.era == nil || !r.era.servesRequests() {
		// A 2026-07-28 request (the probe of ModeAuto): this transport
		// has no such era. A 405 is what sends the Client to
		// initialize, and nothing went on the wire.
		r.status = http.StatusMethodNotAllowed
		return nil, &HTTPStatusError{StatusCode: http.StatusMethodNotAllowed, Body: []byte("HTTP+SSE (protocol revision 2024-11-05) carries initialize sessions only")}
	}
	l := s.current()
	if l == nil {
		r.status = http.StatusNotFound
		return nil, fmt.Errorf("%w: no HTTP+SSE event stream is open", ErrTransportClosed)
	}
	return l.roundTrip(ctx, r)
}

// notify POSTs a notification of the session.
func (s *httpSSE) notify(ctx context.Context, r *wireRequest) error {
	l := s.current()
	if l == nil {
		return fmt.Errorf("mcp: %s: %w: no HTTP+SSE event stream is open", r.method, ErrTransportClosed)
	}
	if err := l.ended(); err != nil {
		return fmt.Errorf("mcp: %s: %w", r.method, err)
	}
	if _, err := l.post(ctx, r.body); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("mcp: %s: %w", r.method, err)
	}
	return nil
}

// end closes the stream, which ends the session (2024-11-05 has no other
// way).
func (s *httpSSE) end() { s.replace(nil) }

func (s *httpSSE) current() *sseLink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.link
}

// replace makes l the current link and closes the one before.
func (s *httpSSE) replace(l *sseLink) {
	s.mu.Lock()
	old := s.link
	s.link = l
	s.mu.Unlock()
	if old != nil && old != l {
		old.close(errors.New("the session was replaced or ended"))
	}
}

// ---- one event stream ----

// sseLink is one HTTP+SSE event stream and the session it carries.
type sseLink struct {
	s        *httpSSE
	endpoint string // where messages are POSTed
	ctx      context.Context
	cancel   context.CancelFunc // closes the stream

	mu    sync.Mutex
	calls callTable // the calls waiting for their responses (client_calls.go)
	err   error     // why the stream ended; nil while it is open
}

// open GETs the URL and reads the stream's first event, which must be
// endpoint, naming a URL of the same origin as the stream. ctx bounds
// the wait for it; the stream then lives until closed, the transport is
// closed, or the server ends it.
func (s *httpSSE) open(ctx context.Context) (*sseLink, error) {
	t := s.t
	lctx, cancel := context.WithCancel(t.ctx)
	stop := context.AfterFunc(ctx, cancel)
	fail := func(err error) (*sseLink, error) {
		stop()
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	req, err := t.newRequest(lctx, http.MethodGet, nil, "", "")
	if err != nil {
		return fail(err)
	}
	req.Header["Accept"] = acceptSSE
	resp, err := t.hc.Do(req)
	if err != nil {
		return fail(fmt.Errorf("mcp: opening the HTTP+SSE event stream: %w", err))
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		err := statusError(resp, t.max)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			err = fmt.Errorf("mcp: GET answered with Content-Type %q, not an event stream", ct)
		}
		return fail(err)
	}
	rd := sse.NewReader(resp.Body, t.max, 0)
	ev, err := rd.Next()
	var endpoint *url.URL
	switch {
	case err != nil:
		err = fmt.Errorf("mcp: the HTTP+SSE event stream ended before its endpoint event: %w", err)
	case ev.Name != "endpoint":
		err = fmt.Errorf("mcp: the first event of the stream is %q, not endpoint: not an HTTP+SSE server", ev.Name)
	default:
		endpoint, err = resp.Request.URL.Parse(strings.TrimSpace(string(ev.Data)))
		base, _ := url.Parse(t.url)
		switch {
		case err != nil:
			err = fmt.Errorf("mcp: the endpoint event names no URL: %w", err)
		case !sameOrigin(endpoint, base):
			// Messages (and the headers they carry, such as
			// Authorization) go to the origin the user named, never
			// where a stream says: an endpoint elsewhere is a redirect
			// in disguise, refused whatever FollowRedirects says.
			err = fmt.Errorf("%w: the endpoint event names %s, of another origin than the stream", ErrRedirect, endpoint.Redacted())
		}
	}
	if err != nil {
		resp.Body.Close()
		return fail(err)
	}
	if !stop() {
		// ctx ended just now, and cancelled the stream.
		resp.Body.Close()
		return fail(ctx.Err())
	}
	l := &sseLink{s: s, endpoint: endpoint.String(), ctx: lctx, cancel: cancel}
	l.calls = newCallTable(&l.mu)
	go l.read(rd, resp.Body)
	return l, nil
}

// ended returns why the stream ended, nil while it is open.
func (l *sseLink) ended() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// close ends the stream (the server then ends the session); the calls
// waiting fail with cause.
func (l *sseLink) close(cause error) {
	l.fail(fmt.Errorf("%w: %v", ErrTransportClosed, cause))
	l.cancel()
}

// fail marks the stream ended with err and fails every call waiting.
func (l *sseLink) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.calls.failLocked(l.err)
	l.mu.Unlock()
}

// read reads the stream until it ends. Its messages go to the calls
// waiting for them (responses, notifications related to a call), to
// the Client (the server's requests, notifications related to none).
func (l *sseLink) read(rd *sse.Reader, body io.ReadCloser) {
	defer body.Close()
	defer l.cancel() // handlers answering the server's requests stop
	for {
		ev, err := rd.Next()
		if err != nil {
			switch {
			case errors.Is(err, sse.ErrLineTooLong), errors.Is(err, sse.ErrEventTooLarge):
				// Which call the event was for cannot be known: every
				// waiting call fails, and the stream with them.
				l.fail(&InvalidResponseError{Method: "HTTP+SSE event stream", Err: ErrMessageTooLarge})
			case l.ctx.Err() != nil:
				l.fail(fmt.Errorf("%w: the HTTP+SSE event stream was closed", ErrTransportClosed))
			default:
				l.fail(fmt.Errorf("%w: the HTTP+SSE event stream ended, and with it the session (%v)", ErrTransportClosed, err))
			}
			return
		}
		if ev.Name != "message" || len(jsonrpc.TrimSpace(ev.Data)) == 0 {
			continue // another endpoint event, or an event of no MCP meaning
		}
		l.dispatch(ev.Data)
	}
}

// dispatch handles one message of the stream. data is the reader's
// until the next event: what outlives the call is copied.
func (l *sseLink) dispatch(data []byte) {
	if e := l.calls.dispatch(data, true, l.route, l.serve); e != nil {
		l.warn("mcp: client: dropped a malformed message of the HTTP+SSE stream", "err", e.Message)
	}
}

// route passes a notification to the call it belongs to (progress, by
// its token: the request id) or to the Client (log messages, the
// server's cancellation of its own requests, list changes).
func (l *sseLink) route(method string, params []byte) {
	var c *waitingCall
	if id, ok := notificationRoute(method, params); ok && method != notificationCancelled {
		l.mu.Lock()
		c = l.calls.getLocked(id)
		l.mu.Unlock()
	}
	if c != nil {
		if c.notify != nil {
			c.notify(method, params)
		}
		return
	}
	if h := l.s.t.hooks; h != nil && h.unrouted != nil {
		h.unrouted(method, params)
	}
}

// serve answers a request of the server (sampling/createMessage,
// roots/list, elicitation/create, ping) on a goroutine of its own, so
// that reading goes on, by POSTing the response; at most
// maxConcurrentAnswers at once, shared with the transport's Streamable
// side (client_answers.go).
func (l *sseLink) serve(msg jsonrpc.Message) {
	l.s.t.answers.answer(l.ctx, l.s.t.hooks, msg, func(resp []byte, wait time.Duration) {
		actx, cancel := context.WithTimeout(l.ctx, wait)
		defer cancel()
		if _, err := l.post(actx, resp); err != nil && l.ctx.Err() == nil {
			l.warn("mcp: client: could not answer the server's request", "method", msg.Method, "err", err)
		}
	}, l.warn)
}

func (l *sseLink) warn(msg string, args ...any) {
	if h := l.s.t.hooks; h != nil && h.log != nil {
		h.log.Warn(msg, args...)
	}
}

// roundTrip POSTs a request and waits for its response on the stream.
func (l *sseLink) roundTrip(ctx context.Context, r *wireRequest) ([]byte, error) {
	c := &waitingCall{ch: make(chan streamReply, 1), method: r.method, notify: r.notify}
	l.mu.Lock()
	if err := l.err; err != nil {
		l.mu.Unlock()
		r.status = http.StatusNotFound // the session is gone, as a Streamable session's 404 says
		return nil, fmt.Errorf("mcp: %s: %w", r.method, err)
	}
	l.calls.addLocked(r.id, c)
	l.mu.Unlock()
	status, err := l.post(ctx, r.body)
	r.status = int32(status)
	if h := r.hook; h != nil {
		// The session's name for the Client: the message URL (it never
		// goes out as a header on this transport).
		h.sessionID = l.endpoint
		if h.onStatus != nil && status != 0 {
			h.onStatus(status)
		}
	}
	if err != nil {
		l.calls.take(r.id)
		if ctx.Err() != nil {
			// The request may have reached the server before the POST
			// was cut short.
			go l.sendCancelled(r.id, context.Cause(ctx))
			return nil, ctx.Err()
		}
		if e, ok := err.(*Error); ok {
			return nil, e // the server's answer, as Streamable HTTP returns it
		}
		return nil, fmt.Errorf("mcp: %s: %w", r.method, err)
	}
	select {
	case rep := <-c.ch:
		return rep.result, rep.err
	case <-ctx.Done():
		if l.calls.take(r.id) != nil {
			go l.sendCancelled(r.id, context.Cause(ctx))
		}
		return nil, ctx.Err()
	}
}

// sendCancelled tells the server that the client gave up on request id
// (best effort).
func (l *sseLink) sendCancelled(id int64, cause error) {
	b := appendCancelled(make([]byte, 0, 128), id, cause)
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	_, _ = l.post(ctx, b)
}

// post POSTs one message to the endpoint and returns the status. A 2xx
// is success (202 Accepted, as 2024-11-05 says); anything else is an
// error: the server's JSON-RPC error when the body is one (a session
// that is gone, headers that disagree), else an *HTTPStatusError.
func (l *sseLink) post(ctx context.Context, body []byte) (int, error) {
	t := l.s.t
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("mcp: %w", err)
	}
	for k, v := range t.extra {
		req.Header[k] = v
	}
	req.Header["Content-Type"] = ctJSON
	resp, err := t.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, int64(t.max)))
		return resp.StatusCode, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(min(4096, t.max))))
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		if msg, e := jsonrpc.Decode(b); e == nil && msg.Error != nil {
			if e, derr := jsonrpc.DecodeError(msg.Error); derr == nil {
				return resp.StatusCode, e
			}
		}
	}
	return resp.StatusCode, &HTTPStatusError{StatusCode: resp.StatusCode, Body: b[:min(len(b), 512)]}
}
