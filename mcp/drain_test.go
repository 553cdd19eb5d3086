package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

func readyz(t *testing.T, s *Server) int {
	t.Helper()
	w := httptest.NewRecorder()
	HealthHandler(s).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return w.Code
}

// The exchange runs in a bubble: synctest.Wait returns once Drain is
// blocked on the request in flight, so "still draining" is a fact, not a
// guess after a short sleep.
func TestDrainTurnsReadinessOffLetsInFlightFinishAndRefusesNewRequests(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := NewServer(Implementation{Name: "svc", Version: "1"}, nil)
		started, release := make(chan struct{}), make(chan struct{})
		s.AddTool(&Tool{Name: "slow"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			close(started)
			<-release
			return TextResult("finished"), nil
		})
		s.AddTool(&Tool{Name: "fast"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			return TextResult("fast"), nil
		})
		h := NewHTTPHandler(s, nil)
		if readyz(t, s) != 200 {
			t.Fatal("not ready at start")
		}
		inflight := make(chan *httpResult, 1)
		go func() { inflight <- post(t, h, req(1, MethodToolsCall, `"name":"slow"`)) }()
		<-started
		drained := make(chan error, 1)
		go func() { drained <- s.Drain(context.Background()) }()
		synctest.Wait()
		if s.Ready() || readyz(t, s) != http.StatusServiceUnavailable {
			t.Error("readiness still on while draining")
		}
		refused := post(t, h, req(2, MethodToolsCall, `"name":"fast"`))
		if refused.status != http.StatusServiceUnavailable || refused.header.Get("Retry-After") == "" || errorCode(t, refused.last(t)) != codeTemporarilyUnavailable {
			t.Errorf("new request while draining: %d %s", refused.status, refused.body)
		}
		synctest.Wait()
		select {
		case <-drained:
			t.Fatal("Drain returned with a request in flight")
		default:
		}
		close(release)
		if r := result(t, (<-inflight).last(t)); r["resultType"] != "complete" {
			t.Errorf("the request in flight: %v", r)
		}
		if err := <-drained; err != nil {
			t.Errorf("Drain: %v", err)
		}
	})
}

func TestDrainGivesUpWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "svc", Version: "1"}, nil)
	started := make(chan struct{})
	s.AddTool(&Tool{Name: "stuck"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(NewHTTPHandler(s, nil))
	defer hs.Close()
	c := NewClient(NewHTTPClientTransport(hs.URL, nil), &ClientOptions{LegRetries: -1})
	defer c.Close()
	callCtx, stopCall := context.WithCancel(context.Background())
	defer stopCall() // before hs.Close, which waits for the handler
	go c.CallTool(callCtx, "stuck", nil, nil)
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Drain(ctx); err == nil {
		t.Error("Drain reported success with a request still running")
	}
	if s.Ready() {
		t.Error("ready after Drain")
	}
}

func TestLivenessStaysOnWhileDraining(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "svc", Version: "1"}, nil)
	s.Drain(context.Background())
	w := httptest.NewRecorder()
	HealthHandler(s).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/livez", nil))
	if w.Code != 200 {
		t.Errorf("livez %d", w.Code)
	}
}
