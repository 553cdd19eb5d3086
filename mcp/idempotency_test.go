package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// counterServer serves "charge", a side-effecting tool that takes an
// idempotency key and counts its runs, and "plain", the same tool
// without the declaration. gate, when set, holds a run until it is
// closed.
type counterServer struct {
	*Server
	runs  atomic.Int32
	gate  chan struct{}
	began chan struct{}
}

func newCounterServer(t *testing.T, o RequestStateOptions) *counterServer {
	t.Helper()
	cs := &counterServer{Server: NewServer(Implementation{Name: "shop", Version: "1"}, &ServerOptions{RequestState: o})}
	h := func(ctx context.Context, req *CallToolRequest, in struct {
		Amount int `json:"amount"`
	}) (*CallToolResult, error) {
		if cs.began != nil {
			cs.began <- struct{}{}
		}
		if cs.gate != nil {
			<-cs.gate
		}
		n := cs.runs.Add(1)
		return TextResult(fmt.Sprintf("charged %d (run %d)", in.Amount, n)), nil
	}
	AddTypedTool(cs.Server, &Tool{Name: "charge", Meta: Meta{IdempotencyMetaKey: true}}, h)
	AddTypedTool(cs.Server, &Tool{Name: "plain"}, h)
	return cs
}

func (cs *counterServer) client(t *testing.T, opts *ClientOptions, hopts *HTTPClientOptions) *Client {
	t.Helper()
	hs := httptest.NewServer(NewHTTPHandler(cs.Server, nil))
	t.Cleanup(hs.Close)
	c := NewClient(NewHTTPClientTransport(hs.URL, hopts), opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func keyed(key string) *CallOptions { return &CallOptions{Meta: Meta{IdempotencyMetaKey: key}} }

func chargeText(t *testing.T, c *Client, tool string, amount int, opts *CallOptions) string {
	t.Helper()
	res, err := c.CallTool(context.Background(), tool, map[string]any{"amount": amount}, opts)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res.Content[0].(*TextContent).Text
}

func TestIdempotentToolRunsOnceForTheSameKey(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{})
	c := cs.client(t, nil, nil)
	first := chargeText(t, c, "charge", 5, keyed("k-1"))
	again := chargeText(t, c, "charge", 5, keyed("k-1"))
	if first != "charged 5 (run 1)" || again != first {
		t.Fatalf("the same call twice with one key: %q then %q, want the first result twice", first, again)
	}
	if n := cs.runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times for one key", n)
	}
	if got := chargeText(t, c, "charge", 5, keyed("k-2")); got != "charged 5 (run 2)" {
		t.Errorf("another key: %q, want a second run", got)
	}
	if got := chargeText(t, c, "charge", 5, nil); got != "charged 5 (run 3)" {
		t.Errorf("no key: %q, want a run", got)
	}
}

func TestIdempotencyKeyAcrossTwoServersSharingAGuard(t *testing.T) {
	t.Parallel()
	g := requeststate.NewMemoryGuard()
	a, b := newCounterServer(t, RequestStateOptions{Guard: g}), newCounterServer(t, RequestStateOptions{Guard: g})
	first := chargeText(t, a.client(t, nil, nil), "charge", 7, keyed("fleet"))
	again := chargeText(t, b.client(t, nil, nil), "charge", 7, keyed("fleet"))
	if again != first || a.runs.Load()+b.runs.Load() != 1 {
		t.Fatalf("one key on two instances: %q then %q, %d+%d runs; want one run", first, again, a.runs.Load(), b.runs.Load())
	}
}

func TestIdempotencyKeyWithOtherArgumentsIsRefused(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{})
	c := cs.client(t, nil, nil)
	chargeText(t, c, "charge", 5, keyed("k"))
	_, err := c.CallTool(context.Background(), "charge", map[string]any{"amount": 500}, keyed("k"))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidParams || e.Message != "Idempotency key already used with other arguments" ||
		!strings.Contains(string(mustJSON(t, e.Data)), `"reason":"idempotency_key_reused"`) {
		t.Fatalf("the key with other arguments: %v (%+v)", err, e)
	}
	if n := cs.runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times", n)
	}
	// The canonical arguments decide: the same members in another order
	// and spacing are the same call.
	body := strings.Replace(req(9, MethodToolsCall, `"name":"charge","arguments":{ "amount" : 5 }`), `"_meta":{`, `"_meta":{"io.roundtrip/idempotencyKey":"k",`, 1)
	res := post(t, NewHTTPHandler(cs.Server, nil), body)
	if r := result(t, res.last(t)); r["resultType"] != "complete" || cs.runs.Load() != 1 {
		t.Errorf("the same arguments spelt differently: %v, %d runs", r, cs.runs.Load())
	}
}

func TestIdempotencyKeysOfDifferentPrincipalsAreIndependent(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{Principal: func(ctx context.Context) (string, error) {
		return RequestHeader(ctx).Get("X-User"), nil
	}})
	alice := cs.client(t, nil, &HTTPClientOptions{Header: http.Header{"X-User": {"alice"}}})
	bob := cs.client(t, nil, &HTTPClientOptions{Header: http.Header{"X-User": {"bob"}}})
	a := chargeText(t, alice, "charge", 1, keyed("shared"))
	b := chargeText(t, bob, "charge", 1, keyed("shared"))
	if a != "charged 1 (run 1)" || b != "charged 1 (run 2)" {
		t.Fatalf("one key, two principals: %q and %q, want a run each", a, b)
	}
	if got := chargeText(t, alice, "charge", 1, keyed("shared")); got != a {
		t.Errorf("alice again: %q, want her own %q", got, a)
	}
}

func TestIdempotencyKeyExpires(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{IdempotencyTTL: 20 * time.Millisecond})
	c := cs.client(t, nil, nil)
	chargeText(t, c, "charge", 5, keyed("k"))
	testutil.Eventually(t, 5*time.Second, "the key's record to expire", func() bool {
		chargeText(t, c, "charge", 5, keyed("k"))
		return cs.runs.Load() == 2
	})
}

func TestConcurrentDuplicateIsToldToRetryThenGetsTheOutcome(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{})
	cs.gate, cs.began = make(chan struct{}), make(chan struct{}, 4)
	c := cs.client(t, &ClientOptions{LegRetries: -1}, nil)
	var once sync.Once
	release := func() { once.Do(func() { close(cs.gate) }) }
	t.Cleanup(release) // before the servers close, on every path
	retrying := cs.client(t, nil, nil)
	for _, cl := range []*Client{c, retrying} { // connected before the first call holds
		for _, err := range cl.Tools(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	done := make(chan string, 1)
	firstBack := make(chan struct{}) // closed once the first call has its answer (recorded before it leaves)
	go func() {
		defer close(firstBack)
		res, err := c.CallTool(context.Background(), "charge", map[string]any{"amount": 3}, keyed("dup"))
		if err != nil {
			done <- err.Error()
			return
		}
		done <- res.Content[0].(*TextContent).Text
	}()
	<-cs.began
	_, err := c.CallTool(context.Background(), "charge", map[string]any{"amount": 3}, keyed("dup"))
	if !errors.Is(err, ErrTemporarilyUnavailable) {
		t.Fatalf("a duplicate while the first runs: %v, want ErrTemporarilyUnavailable", err)
	}
	// With the client's retries, the duplicate waits out the first.
	retrying.sleep = func(context.Context, time.Duration) error {
		release()
		<-firstBack
		return nil
	}
	second := make(chan string)
	go func() { second <- chargeText(t, retrying, "charge", 3, keyed("dup")) }()
	first := <-done
	if got := <-second; first != "charged 3 (run 1)" || got != first {
		t.Fatalf("the first call %q, its duplicate %q: want the first's result twice", first, got)
	}
	if n := cs.runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times", n)
	}
}

func TestAToolWithoutTheDeclarationIgnoresTheKey(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{})
	c := cs.client(t, nil, nil)
	a, b := chargeText(t, c, "plain", 1, keyed("k")), chargeText(t, c, "plain", 1, keyed("k"))
	if a == b || cs.runs.Load() != 2 {
		t.Fatalf("a tool without IdempotencyMetaKey: %q then %q, want two runs", a, b)
	}
	// The declaration reaches the client in tools/list.
	var declared bool
	for tool, err := range c.Tools(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Meta[IdempotencyMetaKey] == true {
			declared = declared || tool.Name == "charge"
			if tool.Name != "charge" {
				t.Errorf("%s declares the key", tool.Name)
			}
		}
	}
	if !declared {
		t.Error("charge does not declare the key in tools/list")
	}
}

func TestAnInvalidIdempotencyKeyIsRefused(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{})
	c := cs.client(t, nil, nil)
	for _, key := range []any{"", strings.Repeat("k", 256), 42} {
		_, err := c.CallTool(context.Background(), "charge", map[string]any{"amount": 1}, &CallOptions{Meta: Meta{IdempotencyMetaKey: key}})
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidParams || !strings.Contains(string(mustJSON(t, e.Data)), "invalid_idempotency_key") {
			t.Errorf("key %v: %v, want -32602 invalid_idempotency_key", key, err)
		}
	}
	if got := chargeText(t, c, "charge", 1, keyed(strings.Repeat("k", 255))); got != "charged 1 (run 1)" {
		t.Errorf("a key of 255 bytes: %q", got)
	}
	if n := cs.runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times", n)
	}
}

func TestAnInputRequiredFirstLegRecordsNothing(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "shop", Version: "1"}, nil)
	var runs atomic.Int32
	AddTypedTool(s, &Tool{Name: "confirm", Meta: Meta{IdempotencyMetaKey: true}}, func(ctx context.Context, req *CallToolRequest, in struct{}) (*CallToolResult, error) {
		runs.Add(1)
		ok, err := Elicit[struct {
			OK bool `json:"ok"`
		}](ctx, "Sure?")
		if err != nil {
			return nil, err
		}
		v, err := ok.Value()
		if err != nil {
			return nil, err
		}
		return TextResult(fmt.Sprint("confirmed ", v.OK)), nil
	})
	hs := httptest.NewServer(NewHTTPHandler(s, nil))
	defer hs.Close()
	c := NewClient(NewHTTPClientTransport(hs.URL, nil), &ClientOptions{Elicitation: func(context.Context, *ElicitRequest) (*ElicitResult, error) {
		return nil, errors.New("manual calls do not answer")
	}})
	defer c.Close()
	opts := &CallOptions{Manual: true, Meta: Meta{IdempotencyMetaKey: "ask"}}
	for i := range 2 {
		_, err := c.CallTool(context.Background(), "confirm", map[string]any{}, opts)
		var pe *PendingCallError
		if !errors.As(err, &pe) {
			t.Fatalf("call %d: %v, want the question", i+1, err)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the first leg ran %d times for two calls with one key, want 2 (an input_required result is not recorded)", n)
	}
}

// lossyHandler runs every tools/call but answers the first lose of
// them with a 502, as a proxy that lost the answer would.
type lossyHandler struct {
	h    http.Handler
	lose atomic.Int32
}

func (l *lossyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Method") == MethodToolsCall && l.lose.Add(-1) >= 0 {
		l.h.ServeHTTP(httptest.NewRecorder(), r)
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	l.h.ServeHTTP(w, r)
}

func TestClientSendsALostFirstLegAgainOnlyWithAKey(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{})
	lossy := &lossyHandler{h: NewHTTPHandler(cs.Server, nil)}
	hs := httptest.NewServer(lossy)
	defer hs.Close()
	c := NewClient(NewHTTPClientTransport(hs.URL, nil), nil)
	defer c.Close()
	c.sleep = func(context.Context, time.Duration) error { return nil }
	lossy.lose.Store(1)
	if got := chargeText(t, c, "charge", 9, keyed("lost")); got != "charged 9 (run 1)" || cs.runs.Load() != 1 {
		t.Fatalf("a first leg with a key whose answer was lost: %q after %d runs, want the recorded result of one run", got, cs.runs.Load())
	}
	// Without a key the lost answer is the caller's: the leg is not
	// sent again.
	lossy.lose.Store(1)
	if _, err := c.CallTool(context.Background(), "charge", map[string]any{"amount": 1}, nil); err == nil {
		t.Fatal("a lost first leg without a key succeeded")
	}
	if n := cs.runs.Load(); n != 2 {
		t.Errorf("without a key the first leg ran %d more times, want 1", n-1)
	}
}

func TestAnUnavailableIdempotencyStoreIsRetryableAndRunsNothing(t *testing.T) {
	t.Parallel()
	g := &flakyGuard{Guard: requeststate.NewMemoryGuard()}
	cs := newCounterServer(t, RequestStateOptions{Guard: g})
	c := cs.client(t, &ClientOptions{LegRetries: -1}, nil)
	g.down.Store(1)
	if _, err := c.CallTool(context.Background(), "charge", map[string]any{"amount": 1}, keyed("k")); !errors.Is(err, ErrTemporarilyUnavailable) {
		t.Fatalf("store down: %v, want ErrTemporarilyUnavailable", err)
	}
	if n := cs.runs.Load(); n != 0 {
		t.Fatalf("the tool ran %d times while the store was down", n)
	}
	if got := chargeText(t, c, "charge", 1, keyed("k")); got != "charged 1 (run 1)" {
		t.Errorf("once the store is back: %q", got)
	}
}

func TestASessionOfAnEarlierRevisionIgnoresTheKey(t *testing.T) {
	t.Parallel()
	cs := newCounterServer(t, RequestStateOptions{})
	c := cs.client(t, &ClientOptions{Mode: ModeLegacy}, nil)
	a, b := chargeText(t, c, "charge", 1, keyed("k")), chargeText(t, c, "charge", 1, keyed("k"))
	if a == b || cs.runs.Load() != 2 {
		t.Fatalf("a 2025-11-25 session: %q then %q, want two runs (a recorded outcome is in the 2026-07-28 encoding)", a, b)
	}
}
