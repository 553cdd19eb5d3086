package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

type eventLog struct {
	mu sync.Mutex
	ev []Event
}

func (l *eventLog) add(e Event) { l.mu.Lock(); l.ev = append(l.ev, e); l.mu.Unlock() }

func (l *eventLog) count(k EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.ev {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func (l *eventLog) find(k EventKind) (Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.ev {
		if e.Kind == k {
			return e, true
		}
	}
	return Event{}, false
}

// The observer hears of a session from its initialize to its end, with
// its revision and lifetime.
func TestObserverHearsOfSessions(t *testing.T) {
	t.Parallel()
	log := &eventLog{}
	s, _ := dualServer(t, &ServerOptions{Observer: log.add})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	c.request(MethodToolsList, `{}`)
	c.delete()
	testutil.Eventually(t, 5*time.Second, "the session-closed event", func() bool { return log.count(EventSessionClosed) != 0 })
	opened, ok1 := log.find(EventSessionOpened)
	closed, ok2 := log.find(EventSessionClosed)
	if !ok1 || !ok2 || opened.Revision != LegacyProtocolVersion || opened.SessionID == "" || closed.SessionID != opened.SessionID || closed.Duration <= 0 {
		t.Fatalf("opened %+v %v, closed %+v %v", opened, ok1, closed, ok2)
	}
}

// A rejected state is reported with its cause; the wire keeps the one
// fixed error.
func TestObserverHearsWhyAStateWasRejected(t *testing.T) {
	t.Parallel()
	log := &eventLog{}
	s := newStateServer(t, "svc", RequestStateOptions{})
	s.opts.Observer = log.add
	if got := rawError(t, s.call(t, 1, "flow", `{"x":"1"}`, ptr("v1.AAAA"))); got != fixedRejection {
		t.Fatalf("wire: %s", got)
	}
	st := round1(t, s, "flow", `{"x":"1"}`)
	if got := rawError(t, s.call(t, 2, "flow", `{"x":"other"}`, &st)); got != fixedRejection {
		t.Fatalf("wire: %s", got)
	}
	var causes []StateCause
	log.mu.Lock()
	for _, e := range log.ev {
		if e.Kind == EventStateRejected {
			causes = append(causes, e.Cause)
		}
	}
	log.mu.Unlock()
	if len(causes) != 2 || causes[0] != StateCauseMalformed || causes[1] != StateCauseBinding {
		t.Errorf("causes %v, want [malformed binding]", causes)
	}
}

func TestObserverHearsOfListenStreams(t *testing.T) {
	t.Parallel()
	log := &eventLog{}
	s := newTestServer(t, &ServerOptions{Observer: log.add})
	c := memClient(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go c.Listen(ctx, SubscriptionFilter{ToolsListChanged: true}, func(*ListenNotification) {})
	testutil.Eventually(t, 5*time.Second, "the stream-opened event", func() bool { return log.count(EventStreamOpened) != 0 })
	cancel()
	testutil.Eventually(t, 5*time.Second, "the stream-closed event", func() bool { return log.count(EventStreamClosed) != 0 })
	if e, ok := log.find(EventStreamOpened); !ok || e.Stream != "listen" || log.count(EventStreamClosed) != 1 {
		t.Errorf("events %+v", log.ev)
	}
}

func TestStateCausesCoverTheReasons(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]StateCause{
		"malformed: prefix": StateCauseMalformed, "unknown key": StateCauseKey, "seal": StateCauseSeal,
		"expired": StateCauseExpired, "issued in the future": StateCauseExpired, "target mismatch": StateCauseBinding,
		"arguments mismatch": StateCauseBinding, "audience mismatch": StateCauseBinding, "principal mismatch": StateCausePrincipal,
		"principal presence mismatch": StateCausePrincipal, "state already used": StateCauseUsed,
		"issued before the single-use store generation (the store lost its records)": StateCauseGeneration,
		"requestState is not a string": StateCauseMalformed, "claims: malformed": StateCauseMalformed,
	} {
		if got := stateCause(reason); got != want {
			t.Errorf("%q: %s, want %s", reason, got, want)
		}
	}
}

// Outgoing middleware sees every live request of a session and can add
// _meta members that reach the client.
func TestOutgoingMiddlewareSeesLiveRequestsAndAddsMeta(t *testing.T) {
	t.Parallel()
	var seen []string
	var mu sync.Mutex
	mw := func(next ServerRequestHandler) ServerRequestHandler {
		return func(ctx context.Context, r *ServerRequest) (json.RawMessage, error) {
			mu.Lock()
			seen = append(seen, r.Method+"@"+r.ProtocolVersion)
			mu.Unlock()
			if r.Meta == nil {
				r.Meta = Meta{}
			}
			r.Meta["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
			return next(ctx, r)
		}
	}
	s, _ := dualServer(t, &ServerOptions{OutgoingMiddleware: []ServerRequestMiddleware{mw}})
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClient(t, ts.URL, legacyCaps)
	var metas []any
	c.answer = func(method string, params map[string]any) any {
		metas = append(metas, params["_meta"])
		return legacyAnswers(method, params)
	}
	v := c.request(MethodToolsCall, `{"name":"provision","arguments":{}}`)
	if _, ok := v["result"]; !ok {
		t.Fatalf("call: %v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0] != MethodElicit+"@"+LegacyProtocolVersion {
		t.Errorf("middleware saw %v", seen)
	}
	for i, m := range metas {
		mm, _ := m.(map[string]any)
		if mm["traceparent"] == nil {
			t.Errorf("live request %d: _meta %v without the added member", i, m)
		}
	}
}

func TestOutgoingMetaCannotTakeReservedNames(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"io.modelcontextprotocol/protocolVersion", "progressToken"} {
		if _, err := paramsWithMeta(json.RawMessage(`{}`), Meta{k: 1}); err == nil {
			t.Errorf("%s accepted", k)
		}
	}
	got, err := paramsWithMeta(json.RawMessage(`{"a":1,"_meta":{"x":1}}`), Meta{"y": 2})
	if err != nil || string(got) != `{"_meta":{"x":1,"y":2},"a":1}` {
		t.Errorf("%s %v", got, err)
	}
}
