package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// flakyGuard wraps a guard; while down is set every call fails as an
// unreachable store would.
type flakyGuard struct {
	requeststate.Guard
	down  atomic.Int32 // calls left to fail
	calls atomic.Int32
}

func (g *flakyGuard) Begin(ctx context.Context, l *requeststate.Leg) (requeststate.Verdict, error) {
	g.calls.Add(1)
	if g.down.Add(-1) >= 0 {
		return requeststate.Verdict{}, requeststate.ErrStoreUnavailable
	}
	return g.Guard.Begin(ctx, l)
}

func TestSingleUseIdenticalRetryGetsTheSameOutcomeWithoutRunningAgain(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{Guard: requeststate.NewMemoryGuard()})
	st := round1(t, s, "flow", `{"x":"1"}`)
	runs := s.runs.Load()
	answers := `"inputResponses":{"q":{"action":"accept","content":{}}}`
	first := post(t, NewHTTPHandler(s.Server, nil), req(2, MethodToolsCall, `"name":"flow","arguments":{"x":"1"},"requestState":`+quote(st)+`,`+answers))
	again := post(t, NewHTTPHandler(s.Server, nil), req(2, MethodToolsCall, `"name":"flow","arguments":{"x":"1"},"requestState":`+quote(st)+`,`+answers))
	if string(first.messages[0]) != string(again.messages[0]) {
		t.Fatalf("identical retry answered differently:\n%s\n%s", first.messages[0], again.messages[0])
	}
	if r := result(t, again.last(t)); r["resultType"] != "complete" {
		t.Fatalf("retry: %v", r)
	}
	if n := s.runs.Load() - runs; n != 1 {
		t.Errorf("the handler ran %d times for one leg and its retry", n)
	}
}

func TestSingleUseAnotherLegWithAUsedStateIsRefused(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{Guard: requeststate.NewMemoryGuard()})
	st := round1(t, s, "flow", `{"x":"1"}`)
	if r := result(t, s.call(t, 2, "flow", `{"x":"1"}`, &st)); r["resultType"] != "complete" {
		t.Fatalf("first use: %v", r)
	}
	other := `"inputResponses":{"q":{"action":"decline"}}`
	if got := rawError(t, s.call(t, 3, "flow", `{"x":"1"}`, &st, other)); got != fixedRejection {
		t.Errorf("the used state with other answers: %s", got)
	}
}

func TestUnavailableStoreIsRetryableNotARejectedState(t *testing.T) {
	t.Parallel()
	g := &flakyGuard{Guard: requeststate.NewMemoryGuard()}
	s := newStateServer(t, "svc", RequestStateOptions{Guard: g})
	st := round1(t, s, "flow", `{"x":"1"}`)
	runs := s.runs.Load()
	g.down.Store(1)
	body := req(2, MethodToolsCall, `"name":"flow","arguments":{"x":"1"},"requestState":`+quote(st))
	res := post(t, NewHTTPHandler(s.Server, nil), body)
	if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q; want 503 with Retry-After", res.status, res.header.Get("Retry-After"))
	}
	v := res.last(t)
	if errorCode(t, v) != codeTemporarilyUnavailable || rawError(t, v) == fixedRejection {
		t.Fatalf("store down: %s", rawError(t, v))
	}
	if s.runs.Load() != runs {
		t.Error("the handler ran while the store was down")
	}
	// The same leg once the store is back: served, not "already used".
	if r := result(t, post(t, NewHTTPHandler(s.Server, nil), body).last(t)); r["resultType"] != "complete" {
		t.Fatalf("after the store came back: %v", r)
	}
}

func TestClientRetriesTheSameLegWhenTheStoreIsUnavailable(t *testing.T) {
	t.Parallel()
	g := &flakyGuard{Guard: requeststate.NewMemoryGuard()}
	s := newStateServer(t, "svc", RequestStateOptions{Guard: g})
	g.down.Store(2)
	hs := httptest.NewServer(NewHTTPHandler(s.Server, nil))
	defer hs.Close()
	c := NewClient(NewHTTPClientTransport(hs.URL, nil), &ClientOptions{
		Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
			return &ElicitResult{Action: ElicitAccept, Content: map[string]any{}}, nil
		},
	})
	defer c.Close()
	c.sleep = func(context.Context, time.Duration) error { return nil }
	res, err := c.CallTool(context.Background(), "flow", map[string]any{"x": "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := res.Content[0].(*TextContent); !ok || tc.Text != "done 1" {
		t.Fatalf("result %v", res)
	}
	if n := g.calls.Load(); n != 3 {
		t.Errorf("guard asked %d times, want 3 (two unavailable, one served)", n)
	}
}

func TestClientGivesUpOnAnUnavailableStoreWithinABound(t *testing.T) {
	t.Parallel()
	g := &flakyGuard{Guard: requeststate.NewMemoryGuard()}
	s := newStateServer(t, "svc", RequestStateOptions{Guard: g})
	g.down.Store(1000)
	hs := httptest.NewServer(NewHTTPHandler(s.Server, nil))
	defer hs.Close()
	c := NewClient(NewHTTPClientTransport(hs.URL, nil), &ClientOptions{
		Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
			return &ElicitResult{Action: ElicitAccept, Content: map[string]any{}}, nil
		},
		LegRetries: 3,
	})
	defer c.Close()
	c.sleep = func(context.Context, time.Duration) error { return nil }
	_, err := c.CallTool(context.Background(), "flow", map[string]any{"x": "1"}, nil)
	if !errors.Is(err, ErrTemporarilyUnavailable) {
		t.Fatalf("err %v, want ErrTemporarilyUnavailable", err)
	}
	if n := g.calls.Load(); n != 4 {
		t.Errorf("guard asked %d times, want 1 + 3 retries", n)
	}
}

func TestClientFixedRejectionMatchesErrInvalidRequestState(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{})
	hs := httptest.NewServer(NewHTTPHandler(s.Server, nil))
	defer hs.Close()
	c := NewClient(NewHTTPClientTransport(hs.URL, nil), nil)
	defer c.Close()
	_, err := c.CallTool(context.Background(), "flow", map[string]any{"x": "1"}, &CallOptions{RequestState: "v1.forged"})
	if !errors.Is(err, ErrInvalidRequestState) {
		t.Fatalf("err %v does not match ErrInvalidRequestState", err)
	}
	if errors.Is(err, ErrTemporarilyUnavailable) {
		t.Error("a rejected state matches ErrTemporarilyUnavailable")
	}
}

// A leg whose answer is lost on the way back (the connection dies after
// the server ran it) is sent again, and the single-use guard answers the
// retry with the recorded outcome: the flow completes, the handler ran
// once.
func TestClientRetriesALegWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{Guard: requeststate.NewMemoryGuard()})
	h := NewHTTPHandler(s.Server, nil)
	var dropped atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"requestState"`)) && dropped.Add(1) == 1 {
			h.ServeHTTP(httptest.NewRecorder(), r) // served, then the answer is lost
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	c := NewClient(NewHTTPClientTransport(hs.URL, nil), &ClientOptions{
		Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
			return &ElicitResult{Action: ElicitAccept, Content: map[string]any{}}, nil
		},
	})
	defer c.Close()
	c.sleep = func(context.Context, time.Duration) error { return nil }
	res, err := c.CallTool(context.Background(), "flow", map[string]any{"x": "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := res.Content[0].(*TextContent); !ok || tc.Text != "done 1" {
		t.Fatalf("result %v", res)
	}
	if d := dropped.Load(); d != 2 {
		t.Errorf("%d legs with state arrived, want the lost one and its retry", d)
	}
	if n := s.runs.Load(); n != 2 {
		t.Errorf("the handler ran %d times, want 2 (first leg, second leg once)", n)
	}
}

// A first leg (no requestState) whose answer is lost is not sent again:
// its handler may have run, and nothing makes a second run safe.
func TestClientDoesNotResendAFirstLegWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{})
	var calls atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderMethod) == MethodToolsCall {
			calls.Add(1)
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		NewHTTPHandler(s.Server, nil).ServeHTTP(w, r)
	}))
	defer hs.Close()
	c := NewClient(NewHTTPClientTransport(hs.URL, nil), nil)
	defer c.Close()
	c.sleep = func(context.Context, time.Duration) error { return nil }
	if _, err := c.CallTool(context.Background(), "plain", nil, nil); err == nil {
		t.Fatal("no error")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the first leg was sent %d times", n)
	}
}
