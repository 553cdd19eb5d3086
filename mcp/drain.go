package mcp

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Readiness and a graceful stop for rolling restarts. Drain turns
// readiness off, answers every new request with ErrTemporarilyUnavailable
// (503 with Retry-After: the client's loop and a proxy retrying 503 send
// it to another instance, and nothing of it ran here), ends the listen
// streams (clients listen again elsewhere), waits for the requests in
// flight, and then closes the server.

// drainRetryAfter is the delay a request refused while draining is told
// to wait: another instance can take it at once.
const drainRetryAfter = 100 * time.Millisecond

type drainState struct {
	draining atomic.Bool
	inflight atomic.Int64
	mu       sync.Mutex
	idle     chan struct{} // closed when inflight reaches 0 while draining
}

// enter counts a request in, or reports false while draining.
func (d *drainState) enter() bool {
	d.inflight.Add(1)
	if d.draining.Load() {
		d.leave()
		return false
	}
	return true
}

func (d *drainState) leave() {
	if d.inflight.Add(-1) == 0 && d.draining.Load() {
		d.signalIdle()
	}
}

func (d *drainState) signalIdle() {
	d.mu.Lock()
	if d.idle != nil {
		select {
		case <-d.idle:
		default:
			close(d.idle)
		}
	}
	d.mu.Unlock()
}

// Ready reports whether the server takes new requests: true from
// NewServer until Drain or Close.
func (s *Server) Ready() bool {
	if s.drain.draining.Load() {
		return false
	}
	select {
	case <-s.hub.closed:
		return false
	default:
		return true
	}
}

// InFlight reports how many requests are running.
func (s *Server) InFlight() int { return int(max(s.drain.inflight.Load(), 0)) }

// Drain stops the server gracefully: readiness turns off at once (see
// HealthHandler), every new request is answered with
// ErrTemporarilyUnavailable (HTTP 503 with Retry-After, retried by
// clients and proxies elsewhere), listen streams end (a 2025-11-25 GET
// stream with its last event id and the retry interval, so that its
// client resumes with Last-Event-ID, on another instance of a fleet with
// ServerOptions.SessionStore), and Drain waits for
// the requests in flight to finish or for ctx to end, whichever comes
// first; then it closes the server (Close) and returns ctx's error if it
// gave up waiting. Call it on SIGTERM before http.Server.Shutdown.
func (s *Server) Drain(ctx context.Context) error {
	d := &s.drain
	d.mu.Lock()
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	d.mu.Unlock()
	d.draining.Store(true)
	s.hub.close() // listen streams end now: they would never finish
	if d.inflight.Load() == 0 {
		d.signalIdle()
	}
	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.legacy.waitGETStreams(ctx)
	s.Close()
	return err
}

// waitGETStreams gives the 2025-11-25 GET streams, which end with the
// hub (their last event id and the retry interval, for the client to
// reconnect elsewhere), up to drainGETWait to write that ending before
// Close lets their connections go.
func (st *legacyState) waitGETStreams(ctx context.Context) {
	deadline := time.Now().Add(drainGETWait)
	for {
		n := 0
		for _, lh := range st.liveHandlers() {
			n += lh.getStreamsOpen()
		}
		if n == 0 || ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const drainGETWait = time.Second

// HealthHandler serves liveness and readiness for health checks and
// orchestrators, on GET or HEAD of a path ending in /livez or /readyz:
// /livez answers 200 while the process serves HTTP at all; /readyz
// answers 200 while the server is Ready and 503 once Drain (or Close)
// began, so a balancer stops sending new requests. Anything else is 404.
func HealthHandler(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case strings.HasSuffix(r.URL.Path, "/livez"):
			w.Write([]byte("ok\n"))
		case strings.HasSuffix(r.URL.Path, "/readyz"):
			if !s.Ready() {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "draining", http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte("ready\n"))
		default:
			http.NotFound(w, r)
		}
	})
}
