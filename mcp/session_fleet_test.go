package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// A fleet for tests: n Servers sharing one memory SessionStore, each
// behind its own loopback HTTP server, and a client transport that sends
// each request to the instance the test names (route), or else to the
// next one in turn.
type testFleet struct {
	store   SessionStore
	servers []*Server
	ts      []*httptest.Server
	hs      []*httpHandler

	mu    sync.Mutex
	queue []int
	next  int
	// served records which instance each request went to.
	served []int
	// down are instances no request goes to any more (killed).
	down map[int]bool
	// resumes are the instances GETs with Last-Event-ID went to.
	resumes []int
}

func newTestFleet(t *testing.T, n int, o *HTTPOptions, setup func(s *Server)) *testFleet {
	t.Helper()
	f := &testFleet{store: NewMemorySessionStore()}
	for range n {
		s := newTestServer(t, &ServerOptions{SessionStore: f.store})
		if setup != nil {
			setup(s)
		}
		ts, h := legacyServer(t, s, o)
		t.Cleanup(func() { s.Close() })
		f.servers, f.ts, f.hs = append(f.servers, s), append(f.ts, ts), append(f.hs, h)
	}
	return f
}

// route sends the next requests to these instances, in order.
func (f *testFleet) route(to ...int) {
	f.mu.Lock()
	f.queue = append(f.queue, to...)
	f.mu.Unlock()
}

func (f *testFleet) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	var i int
	if len(f.queue) > 0 {
		i, f.queue = f.queue[0], f.queue[1:]
	} else {
		i = f.next % len(f.ts)
		f.next++
	}
	for n := 0; f.down[i] && n < len(f.ts); n++ {
		i = (i + 1) % len(f.ts) // the balancer skips a dead instance
	}
	f.served = append(f.served, i)
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		f.resumes = append(f.resumes, i)
	}
	f.mu.Unlock()
	u, _ := url.Parse(f.ts[i].URL)
	r2 := r.Clone(r.Context())
	r2.URL.Scheme, r2.URL.Host, r2.Host = u.Scheme, u.Host, u.Host
	return http.DefaultTransport.RoundTrip(r2)
}

// client initializes a session on instance at (and its
// notifications/initialized on the same one).
func (f *testFleet) client(t *testing.T, at int, caps string) *legacyClient {
	t.Helper()
	f.route(at, at)
	c := &legacyClient{t: t, url: "http://fleet.invalid/", hc: &http.Client{Timeout: 10 * time.Second, Transport: f}, caps: caps, answer: legacyAnswers}
	c.initialize()
	return c
}

// status POSTs a request to the session on instance i and returns the
// HTTP status.
func (f *testFleet) status(t *testing.T, c *legacyClient, i int) int {
	t.Helper()
	r, _ := http.NewRequest(http.MethodPost, f.ts[i].URL, strings.NewReader(`{"jsonrpc":"2.0","id":77,"method":"tools/list"}`))
	c.headers(r)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, what, cond)
}

func TestASessionOpenedOnOneInstanceIsServedByAnother(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 3, nil, nil)
	c := f.client(t, 0, `{}`)
	f.route(1)
	if v := c.request(MethodToolsCall, `{"name":"echo","arguments":{"text":"from B"}}`); legacyText(t, v) != "from B" {
		t.Fatalf("tools/call on B: %v", v)
	}
	f.route(2)
	if v := c.request(MethodToolsList, ""); len(v["result"].(map[string]any)["tools"].([]any)) == 0 {
		t.Fatalf("tools/list on C: %v", v)
	}
	for i, h := range f.hs {
		if n := h.legacy.sessionCount(); n != 1 {
			t.Errorf("instance %d holds %d sessions, want 1 (the session or its replica)", i, n)
		}
	}
	rec, err := f.store.Load(context.Background(), c.sid)
	if err != nil || !rec.Initialized || rec.ProtocolVersion != LegacyProtocolVersion || rec.ClientInfo.Name != "legacy-test" {
		t.Errorf("record %+v, %v", rec, err)
	}
}

func TestASessionBoundToAPrincipalIsRefusedToAnotherOnEveryInstance(t *testing.T) {
	t.Parallel()
	store := NewMemorySessionStore()
	var urls []string
	for range 2 {
		s := newTestServer(t, &ServerOptions{SessionStore: store})
		t.Cleanup(func() { s.Close() })
		h := NewHTTPHandler(s, nil)
		// Authentication middleware puts the caller's token in the context.
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(WithTokenInfo(r.Context(), &TokenInfo{ClientID: "app", Issuer: "idp", Subject: r.Header.Get("X-Who")})))
		}))
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	post := func(url, who, sid, body string) *http.Response {
		r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("X-Who", who)
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := post(urls[0], "alice", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if st := post(urls[1], "mallory", sid, list).StatusCode; st != http.StatusNotFound {
		t.Errorf("another principal on the other instance: %d, want 404", st)
	}
	if st := post(urls[1], "alice", sid, list).StatusCode; st != http.StatusOK {
		t.Errorf("the session's principal on the other instance: %d, want 200", st)
	}
	if st := post(urls[1], "mallory", sid, list).StatusCode; st != http.StatusNotFound {
		t.Errorf("another principal on the instance holding a replica: %d, want 404", st)
	}
}

func TestAQuestionAskedOnOneInstanceIsAnsweredThroughAnother(t *testing.T) {
	t.Parallel()
	var runs [3]int
	var mu sync.Mutex
	i := 0
	f := newTestFleet(t, 3, nil, func(s *Server) {
		n := i
		i++
		s.AddTool(&Tool{Name: "provision"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			mu.Lock()
			runs[n]++
			mu.Unlock()
			e, err := Elicit[Region](ctx, "Which region should the database live in?")
			if err != nil {
				return nil, err
			}
			region, err := e.Value()
			if err != nil {
				return nil, err
			}
			return TextResult(region.Region), nil
		})
	})
	c := f.client(t, 0, legacyCaps)
	// tools/call runs on C; the client's answer is POSTed to A, which
	// hands it to C over the store's bus.
	f.route(2, 0)
	v := c.request(MethodToolsCall, `{"name":"provision","arguments":{}}`)
	if legacyText(t, v) != "eu-west-1" {
		t.Fatalf("got %v", v)
	}
	if runs != [3]int{0, 0, 1} {
		t.Errorf("the handler ran %v times per instance, want once on C", runs)
	}
	f.mu.Lock()
	served := f.served
	f.mu.Unlock()
	if len(served) != 4 || served[2] != 2 || served[3] != 0 {
		t.Errorf("requests went to %v, want initialize and initialized on A, the call on C, the answer on A", served)
	}
}

func TestSetLevelOnOneInstanceGovernsTheLogsOfAnother(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 3, nil, func(s *Server) {
		s.AddTool(&Tool{Name: "chatty"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			logMessage(ctx, LevelDebug, "t", "debug line")
			logMessage(ctx, LevelWarning, "t", "warning line")
			return TextResult("ok"), nil
		})
	})
	c := f.client(t, 0, `{}`)
	f.route(2) // C makes its replica before the level changes
	c.request(MethodToolsCall, `{"name":"chatty"}`)
	if len(c.notes) != 0 {
		t.Fatalf("logs before logging/setLevel: %v", c.notes)
	}
	f.route(1)
	c.request(methodSetLevel, `{"level":"info"}`)
	f.route(2)
	c.request(MethodToolsCall, `{"name":"chatty"}`)
	if len(c.notes) != 1 || c.notes[0]["params"].(map[string]any)["data"] != "warning line" {
		t.Errorf("logs on C after setLevel on B: %v", c.notes)
	}
}

func TestASubscriptionMadeOnOneInstanceReachesTheGETStreamHeldByAnother(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 3, nil, nil)
	c := f.client(t, 0, `{}`)
	f.route(2)
	resp := c.get("")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET on C: %d", resp.StatusCode)
	}
	events := readSSE(resp.Body)
	waitFor(t, "the record to name C as the GET stream's holder", func() bool {
		rec, err := f.store.Load(context.Background(), c.sid)
		return err == nil && rec.Instance == f.servers[2].fleet.name
	})
	f.route(0)
	if v := c.request(methodSubscribe, `{"uri":"test://watched"}`); v["result"] == nil {
		t.Fatalf("subscribe on A: %v", v)
	}
	waitFor(t, "C's replica to learn of the subscription", func() bool {
		hs := f.hs[2].legacy.lookup(c.sid)
		if hs == nil {
			return false
		}
		hs.mu.Lock()
		defer hs.mu.Unlock()
		_, ok := hs.subs["test://watched"]
		return ok
	})
	f.servers[2].ResourceUpdated("test://other")
	f.servers[2].ResourceUpdated("test://watched")
	m := events.next(t)
	if m["method"] != NotificationResourceUpdated || m["params"].(map[string]any)["uri"] != "test://watched" {
		t.Errorf("GET stream on C: %v", m)
	}
}

func TestDeletingOnOneInstanceEndsTheSessionOnAll(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 3, nil, nil)
	c := f.client(t, 0, `{}`)
	f.route(1, 2)
	c.request(MethodToolsList, "")
	c.request(MethodToolsList, "")
	f.route(1)
	if st := c.delete(); st != http.StatusNoContent {
		t.Fatalf("DELETE on B: %d", st)
	}
	for i := range f.ts {
		waitFor(t, "the replicas to be dropped", func() bool { return f.hs[i].legacy.sessionCount() == 0 })
		if st := f.status(t, c, i); st != http.StatusNotFound {
			t.Errorf("instance %d after DELETE: %d, want 404", i, st)
		}
	}
	if _, err := f.store.Load(context.Background(), c.sid); err != ErrSessionNotFound {
		t.Errorf("the store after DELETE: %v", err)
	}
}

func TestThePartyBoundHoldsAcrossInstances(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 3, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 2}}, nil)
	first := f.client(t, 0, `{}`)
	f.route(1) // B holds a replica of the first session
	first.request(MethodToolsList, "")
	f.client(t, 1, `{}`)
	third := f.client(t, 2, `{}`) // the party's third: the first makes room
	for i := range f.ts {
		if st := f.status(t, first, i); st != http.StatusNotFound {
			t.Errorf("the evicted session on instance %d: %d, want 404", i, st)
		}
	}
	waitFor(t, "B's replica of the evicted session to be dropped", func() bool { return f.hs[1].legacy.lookup(first.sid) == nil })
	if st := f.status(t, third, 0); st != http.StatusOK {
		t.Errorf("the newest session on A: %d", st)
	}
}

func TestASessionGoesOnWhenTheInstanceThatOpenedItIsGone(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, nil)
	c := f.client(t, 0, `{}`)
	f.ts[0].Close()
	f.servers[0].Close()
	f.route(1)
	if v := c.request(MethodToolsCall, `{"name":"echo","arguments":{"text":"still here"}}`); legacyText(t, v) != "still here" {
		t.Fatalf("tools/call on B once A is gone: %v", v)
	}
	// Closing an instance ends what it holds, not the fleet's sessions.
	if _, err := f.store.Load(context.Background(), c.sid); err != nil {
		t.Errorf("the session after A closed: %v", err)
	}
}

func TestAStoreReplicaIsDroppedWhenIdleWithoutEndingTheSession(t *testing.T) {
	t.Parallel()
	// A loaded machine (-race, make check) can stall the test past the
	// idle timeout between two requests that keep the session alive; such
	// a try shows nothing and is made again (a few times). A session gone
	// sooner than its idle timeout after a request began fails at once.
	for try := 1; !replicaDroppedWhenIdle(t); try++ {
		if try == 3 {
			t.Fatalf("%d tries, each stalled past the idle timeout between two requests", try)
		}
	}
}

// replicaDroppedWhenIdle is one try of the test above; false when the
// test stalled past the idle timeout between two requests.
func replicaDroppedWhenIdle(t *testing.T) bool {
	const idle = 600 * time.Millisecond
	f := newTestFleet(t, 2, &HTTPOptions{Legacy: LegacyHTTPOptions{IdleTimeout: idle}}, nil)
	c := f.client(t, 0, `{}`) // A holds the session
	f.route(1)
	last := time.Now()
	c.request(MethodToolsList, "")
	// alive sends a request to instance i: false when it found the
	// session gone and the previous request began an idle timeout ago.
	alive := func(i int, what string) bool {
		t.Helper()
		start := time.Now()
		st := f.status(t, c, i)
		if st == http.StatusNotFound && time.Since(last) >= idle {
			return false
		}
		if st != http.StatusOK {
			t.Fatalf("%s: %d", what, st)
		}
		last = start
		return true
	}
	// B's copy is used no more; A keeps the session alive in the store.
	for stop := time.Now().Add(2 * idle); time.Now().Before(stop); time.Sleep(100 * time.Millisecond) {
		if !alive(0, "on A") {
			return false
		}
	}
	if f.hs[1].legacy.sessionCount() != 0 {
		t.Error("B's idle replica was not dropped")
	}
	if !alive(1, "the session on B again") {
		return false
	}
	// Used on B only, A (the holder) keeps its replica while the record
	// lives: it writes the session's notifications related to no request.
	for stop := time.Now().Add(2 * idle); time.Now().Before(stop); time.Sleep(100 * time.Millisecond) {
		if !alive(1, "on B") {
			return false
		}
	}
	if f.hs[0].legacy.lookup(c.sid) == nil {
		if time.Since(last) >= idle {
			return false // stalled since the last request: the session may have expired
		}
		t.Error("the holder's replica was dropped while the session lives")
	}
	// Unused everywhere, the store expires it, and the holder lets go.
	waitFor(t, "the store to expire the session", func() bool {
		_, err := f.store.Load(context.Background(), c.sid)
		return errors.Is(err, ErrSessionNotFound)
	})
	if st := f.status(t, c, 1); st != http.StatusNotFound {
		t.Errorf("an idle session: %d, want 404", st)
	}
	waitFor(t, "the holder to drop the expired session", func() bool { return f.hs[0].legacy.sessionCount() == 0 })
	return true
}

func TestTheMemorySessionStoreKeepsItsBounds(t *testing.T) {
	t.Parallel()
	// In a bubble: the idle expiry and the wait for an event pass on the
	// bubble's clock.
	synctest.Test(t, testTheMemorySessionStoreKeepsItsBounds)
}

func testTheMemorySessionStoreKeepsItsBounds(t *testing.T) {
	ctx := context.Background()
	st := NewMemorySessionStore()
	mk := func(id, party string) *SessionRecord {
		return &SessionRecord{ID: id, Party: party, Transport: TransportHTTP, IdleTimeout: time.Hour}
	}
	for _, id := range []string{"a1", "a2"} {
		if ev, err := st.Create(ctx, mk(id, "a"), 2, 3); err != nil || len(ev) != 0 {
			t.Fatalf("create %s: %v %v", id, ev, err)
		}
	}
	if _, err := st.Touch(ctx, "a1"); err != nil { // a2 is now the least recently used
		t.Fatal(err)
	}
	if ev, err := st.Create(ctx, mk("a3", "a"), 2, 3); err != nil || len(ev) != 1 || ev[0] != "a2" {
		t.Fatalf("at the party's bound: %v %v", ev, err)
	}
	if _, err := st.Create(ctx, mk("b1", "b"), 2, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, mk("c1", "c"), 2, 3); err != ErrTemporarilyUnavailable {
		t.Errorf("at the fleet's bound with nothing of the party's: %v", err)
	}
	r, err := st.Update(ctx, "a1", SessionUpdate{Subscribe: "x", MaxSubscriptions: 1})
	if err != nil || len(r.Subscriptions) != 1 {
		t.Fatalf("subscribe: %+v %v", r, err)
	}
	v := r.Version
	if r, _ = st.Update(ctx, "a1", SessionUpdate{Subscribe: "y", MaxSubscriptions: 1}); len(r.Subscriptions) != 1 || r.Version <= v {
		t.Errorf("past MaxSubscriptions: %+v", r)
	}
	if ok, _ := st.Delete(ctx, "a1"); !ok {
		t.Error("delete")
	}
	if _, err := st.Touch(ctx, "a1"); err != ErrSessionNotFound {
		t.Errorf("touch after delete: %v", err)
	}
	// Idle expiry.
	if _, err := st.Create(ctx, &SessionRecord{ID: "e", Party: "e", IdleTimeout: 20 * time.Millisecond}, 1, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond)
	if _, err := st.Load(ctx, "e"); err != ErrSessionNotFound {
		t.Errorf("an idle session: %v", err)
	}
	// The event log: EventsAfter waits for the first event, and says
	// when events were dropped.
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = st.AppendEvent(ctx, "a3", SessionEvent{Stream: 5, Seq: 1, Data: []byte(`{}`)})
	}()
	evs, kept, err := st.EventsAfter(ctx, "a3", 5, 0, 2*time.Second)
	if err != nil || !kept || len(evs) != 1 || evs[0].Seq != 1 {
		t.Fatalf("waiting for an event: %v %v %v", evs, kept, err)
	}
	for i := uint64(2); i <= memMaxEventsPerSession+1; i++ {
		_ = st.AppendEvent(ctx, "a3", SessionEvent{Stream: 5, Seq: i})
	}
	if _, kept, _ := st.EventsAfter(ctx, "a3", 5, 0, 0); kept {
		t.Error("a stream whose first events were dropped resumes from 0")
	}
	if evs, kept, _ := st.EventsAfter(ctx, "a3", 5, memMaxEventsPerSession, 0); !kept || len(evs) != 1 {
		t.Errorf("the last event: %v %v", evs, kept)
	}
	// The bus.
	got := make(chan string, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan struct{})
	go st.Receive(rctx, "i1", func() { close(ready) }, func(m []byte) { got <- string(m) })
	<-ready
	_ = st.Publish(ctx, "i2", []byte("not for i1"))
	_ = st.Publish(ctx, "i1", []byte("hello"))
	select {
	case m := <-got:
		if m != "hello" {
			t.Errorf("received %q", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received")
	}
}

func TestABusMessageThatDoesNotDecodeIsIgnored(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, nil)
	c := f.client(t, 0, `{}`)
	for _, m := range []string{`{`, `[]`, `{"k":"close"}`, `{"k":"reply","s":"` + c.sid + `","m":"x"}`, `{"k":"what","s":"` + c.sid + `"}`} {
		f.servers[0].fleet.receive([]byte(m))
	}
	f.route(0)
	if v := c.request(MethodToolsList, ""); v["result"] == nil {
		t.Errorf("the session after junk on the bus: %v", v)
	}
}

func TestAResponseStreamResumesOnAnotherInstance(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	f := newTestFleet(t, 2, nil, func(s *Server) {
		s.AddTool(&Tool{Name: "poll"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			ReportProgress(ctx, 1, 3, "started")
			if !CloseLegacySSEStream(ctx) {
				return nil, errors.New("no stream to close")
			}
			ReportProgress(ctx, 2, 3, "while disconnected")
			<-release
			return TextResult("finished after the reconnection"), nil
		})
	})
	c := f.client(t, 0, legacyCaps)
	var ids []string
	f.route(0)
	if v, _ := c.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"poll","_meta":{"progressToken":1}}}`, &ids); v != nil {
		t.Fatalf("the stream carried the response: %v", v)
	}
	if len(ids) != 2 || len(c.notes) != 1 {
		t.Fatalf("event ids %v, notifications %v", ids, c.notes)
	}
	f.route(1)
	resp := c.get(ids[1])
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID on B: %d", resp.StatusCode)
	}
	events := readSSE(resp.Body)
	if m := events.next(t); m["method"] != notificationProgress || m["params"].(map[string]any)["message"] != "while disconnected" {
		t.Fatalf("replayed on B: %v", m)
	}
	close(release) // the result is written on A, and followed on B
	if m := events.next(t); legacyText(t, m) != "finished after the reconnection" || m["id"] != float64(7) {
		t.Fatalf("got %v", m)
	}
	if _, ok := <-events.msgs; ok {
		t.Error("the resumed stream went on after its result")
	}
	f.route(1)
	if bad := c.get(strings.Replace(ids[1], "-", "9-", 1)); bad.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown stream of another instance: %d", bad.StatusCode)
	}
}

func TestTheGETStreamResumedOnAnotherInstanceReplaysExactlyWhatWasMissed(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, nil)
	c := f.client(t, 0, `{}`)
	for _, u := range []string{"test://1", "test://2", "test://3", "test://4"} {
		f.route(0)
		if v := c.request(methodSubscribe, `{"uri":"`+u+`"}`); v["result"] == nil {
			t.Fatalf("subscribe: %v", v)
		}
	}
	f.route(0)
	resp := c.get("")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET on A: %d", resp.StatusCode)
	}
	events := readSSE(resp.Body)
	for _, u := range []string{"test://1", "test://2", "test://3"} {
		f.servers[0].ResourceUpdated(u)
	}
	<-events.ids // the priming event's
	events.next(t)
	last := <-events.ids
	resp.Body.Close() // the client saw one update; two more were written
	// The store has A's events (they are appended off the response's path).
	waitFor(t, "A's events in the store", func() bool {
		evs, _, _ := f.store.EventsAfter(context.Background(), c.sid, 0, 0, 0)
		return len(evs) == 3
	})
	f.route(1)
	again := c.get(last)
	defer again.Body.Close()
	if again.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID on B: %d", again.StatusCode)
	}
	ev := readSSE(again.Body)
	var got []string
	for range 2 {
		m := ev.next(t)
		got = append(got, <-ev.ids+" "+m["params"].(map[string]any)["uri"].(string))
	}
	if want := []string{"0-2 test://2", "0-3 test://3"}; last != "0-1" || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("resumed after %s with %v, want %v", last, got, want)
	}
	// B now holds the GET stream: what changes there goes on it, numbered on.
	waitFor(t, "the record to name B", func() bool {
		rec, err := f.store.Load(context.Background(), c.sid)
		return err == nil && rec.Instance == f.servers[1].fleet.name
	})
	f.servers[1].ResourceUpdated("test://4")
	if m := ev.next(t); m["params"].(map[string]any)["uri"] != "test://4" {
		t.Fatalf("live on B: %v", m)
	}
	if id := <-ev.ids; id != "0-4" {
		t.Errorf("the next event on B is %s, want 0-4", id)
	}
}

func TestADrainingInstanceEndsItsGETStreamsWithARetryHintAndTheSessionGoesOnElsewhere(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, nil)
	c := f.client(t, 0, `{}`)
	f.route(0)
	resp := c.get("")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET on A: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.servers[0].Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	body, _ := io.ReadAll(resp.Body) // the stream ends
	text := string(body)
	if strings.Count(text, "id: 0-0") != 2 || !strings.Contains(text, "retry: ") || !strings.HasSuffix(text, "\n\n") {
		t.Fatalf("the drained GET stream: %q, want its priming event and a closing one with the last id and retry", text)
	}
	f.route(1)
	again := c.get("0-0")
	defer again.Body.Close()
	if again.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID on B: %d", again.StatusCode)
	}
	waitFor(t, "B to hold the GET stream", func() bool {
		rec, err := f.store.Load(context.Background(), c.sid)
		return err == nil && rec.Instance == f.servers[1].fleet.name
	})
}

func TestAnHTTPSSEPostToAnInstanceNotHoldingTheStreamIsRunByTheHolder(t *testing.T) {
	t.Parallel()
	store := NewMemorySessionStore()
	var urls []string
	for range 2 {
		s := samplingServer(t, &ServerOptions{SessionStore: store})
		t.Cleanup(func() { s.Close() })
		u, _ := sseServer(t, s, nil)
		urls = append(urls, u)
	}
	c := openRawSSE(t, urls[0], "") // A holds the stream
	a, _ := url.Parse(urls[0])
	b, _ := url.Parse(urls[1])
	c.endpoint = strings.Replace(c.endpoint, a.Host, b.Host, 1) // every POST goes to B
	if v := c.initialize("2024-11-05", `{"sampling":{}}`); v != "2024-11-05" {
		t.Fatalf("negotiated %q", v)
	}
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"haiku","arguments":{}}}`)
	q := c.next()
	if q["method"] != MethodCreateMessage {
		t.Fatalf("expected sampling/createMessage on A's stream, got %v", q)
	}
	id, _ := json.Marshal(q["id"])
	c.mustPost(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"waves"}}}`)
	if got := legacyText(t, c.next()); got != "model said: waves" {
		t.Fatalf("result %q", got)
	}
	if st := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"`); st != http.StatusBadRequest {
		t.Errorf("a body that does not decode, on B: %d, want 400", st)
	}
	// Another principal presenting the id on B is told it does not exist.
	if st, _ := c.postTo(c.endpoint, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, http.Header{"X-User": {"mallory"}}); st != http.StatusNotFound {
		t.Errorf("another principal on B: %d, want 404", st)
	}
	// The stream ends: the session is gone on every instance.
	c.resp.Body.Close()
	waitFor(t, "the session to end", func() bool {
		st, _ := c.postTo(c.endpoint, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, nil)
		return st == http.StatusNotFound
	})
}

func TestACancellationPostedToOneInstanceStopsTheRequestRunningOnAnother(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	f := newTestFleet(t, 2, nil, func(s *Server) {
		s.AddTool(&Tool{Name: "wait"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				stopped <- ctx.Err()
				return nil, ctx.Err()
			case <-time.After(10 * time.Second):
				stopped <- nil
				return TextResult("not cancelled"), nil
			}
		})
	})
	c := f.client(t, 0, `{}`)
	c.quiet = true
	f.route(0)
	go func() {
		r, _ := http.NewRequest(http.MethodPost, f.ts[0].URL, strings.NewReader(`{"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"wait"}}`))
		c.headers(r)
		if resp, err := http.DefaultClient.Do(r); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the tool did not start")
	}
	f.route(1)
	if st := c.postRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1"}}`); st != http.StatusAccepted {
		t.Fatalf("notifications/cancelled on B: %d", st)
	}
	select {
	case err := <-stopped:
		if err == nil {
			t.Fatal("the request on A ran to its end")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request on A was not cancelled")
	}
}

// sseFleet is n Servers sharing one memory store, each behind an
// HTTP+SSE endpoint on loopback (X-User names the verified caller).
func sseFleet(t *testing.T, n int, setup func(s *Server)) (SessionStore, []*Server, []string) {
	t.Helper()
	store := NewMemorySessionStore()
	var servers []*Server
	var urls []string
	for range n {
		s := samplingServer(t, &ServerOptions{SessionStore: store})
		if setup != nil {
			setup(s)
		}
		t.Cleanup(func() { s.Close() })
		u, _ := sseServer(t, s, nil)
		servers, urls = append(servers, s), append(urls, u)
	}
	return store, servers, urls
}

func TestAnHTTPSSEPostForwardedToAHolderThatIsGoneIsNotFound(t *testing.T) {
	t.Parallel()
	store, servers, urls := sseFleet(t, 2, nil)
	c := openRawSSE(t, urls[0], "alice") // A holds the stream
	a, _ := url.Parse(urls[0])
	b, _ := url.Parse(urls[1])
	c.endpoint = strings.Replace(c.endpoint, a.Host, b.Host, 1) // every POST goes to B
	if v := c.initialize("2024-11-05", `{}`); v != "2024-11-05" {
		t.Fatalf("negotiated %q", v)
	}
	sid, _ := url.Parse(c.endpoint)
	id := sid.Query().Get(sseSessionParam)
	// A dies: it hears nothing more on the bus (its record stays, naming it).
	servers[0].fleet.close()
	start := time.Now()
	st, m := c.postTo(c.endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	took := time.Since(start)
	if st != http.StatusNotFound {
		t.Fatalf("a POST forwarded to a dead holder: %d %v, want 404", st, m)
	}
	if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(-32001) {
		t.Errorf("the 404's body: %v", m)
	}
	if took < fleetAckWait || took > fleetAckWait+3*time.Second {
		t.Errorf("answered after %v, want about %v", took, fleetAckWait)
	}
	if _, err := store.Load(context.Background(), id); err != ErrSessionNotFound {
		t.Errorf("the dead holder's record: %v, want it deleted", err)
	}
	// Now at once: no record, no wait.
	start = time.Now()
	if st := c.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); st != http.StatusNotFound || time.Since(start) > fleetAckWait/2 {
		t.Errorf("again: %d after %v", st, time.Since(start))
	}
}

func TestAnHTTPSSEPostForwardedToAnInstanceThatNoLongerHoldsTheStreamIsNotFoundAtOnce(t *testing.T) {
	t.Parallel()
	store, servers, urls := sseFleet(t, 2, nil)
	// A record naming A, which holds no such stream (its Delete was lost).
	rec := &SessionRecord{ID: "stale", Transport: TransportHTTPSSE, Party: "p", Instance: servers[0].fleet.name, IdleTimeout: time.Minute}
	if _, err := store.Create(context.Background(), rec, 1, 0); err != nil {
		t.Fatal(err)
	}
	c := &rawSSE{t: t, hc: &http.Client{}}
	start := time.Now()
	if st, _ := c.postTo(urls[1]+"?sessionId=stale", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); st != http.StatusNotFound {
		t.Fatalf("%d, want 404", st)
	}
	if d := time.Since(start); d >= fleetAckWait {
		t.Errorf("answered after %v: A's refusal should come before the wait's end", d)
	}
	if _, err := store.Load(context.Background(), "stale"); err != ErrSessionNotFound {
		t.Errorf("the stale record: %v, want it deleted", err)
	}
}

func TestAForwardedHTTPSSERequestRunsWithTheCallersVerifiedToken(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 2)
	_, _, urls := sseFleet(t, 2, func(s *Server) {
		s.AddTool(&Tool{Name: "whoami"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			ti := TokenInfoFromContext(ctx)
			if ti == nil {
				ran <- ""
				return TextResult("nobody"), nil
			}
			ran <- ti.Subject
			return TextResult(ti.ClientID + "/" + ti.Issuer + "/" + ti.Subject), nil
		})
	})
	c := openRawSSE(t, urls[0], "alice")
	a, _ := url.Parse(urls[0])
	b, _ := url.Parse(urls[1])
	c.endpoint = strings.Replace(c.endpoint, a.Host, b.Host, 1)
	c.initialize("2024-11-05", `{}`)
	c.mustPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if got := legacyText(t, c.next()); got != "app/idp/alice" {
		t.Errorf("the handler on A saw %q, want the token B verified", got)
	}
	if who := <-ran; who != "alice" {
		t.Errorf("ran as %q", who)
	}
}

func TestAForwardedHTTPSSEMessageOfAnotherPrincipalIsNotRun(t *testing.T) {
	t.Parallel()
	_, servers, urls := sseFleet(t, 2, nil)
	c := openRawSSE(t, urls[0], "alice")
	c.initialize("2024-11-05", `{}`)
	sid, _ := url.Parse(c.endpoint)
	id := sid.Query().Get(sseSessionParam)
	// A bus message claiming the session with mallory's token.
	m := &fleetMessage{Kind: fleetPost, Session: id, Msg: []byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}`),
		Token: &fleetToken{ClientID: "app", Issuer: "idp", Subject: "mallory"}}
	raw, _ := json.Marshal(m)
	servers[0].fleet.receive(raw)
	c.mustPost(`{"jsonrpc":"2.0","id":10,"method":"ping"}`)
	if got := c.next(); got["id"] != float64(10) {
		t.Errorf("the stream carried %v: the bus message of another principal ran", got)
	}
}

// slowAppends is a store whose AppendEvent takes a while: the events of
// the instance using it reach the log late.
type slowAppends struct {
	SessionStore
	delay time.Duration
}

func (s slowAppends) AppendEvent(ctx context.Context, id string, ev SessionEvent) error {
	time.Sleep(s.delay)
	return s.SessionStore.AppendEvent(ctx, id, ev)
}

func TestTheGETStreamResumedElsewhereWaitsForTheFormerHoldersLateEvents(t *testing.T) {
	t.Parallel()
	f := &testFleet{store: NewMemorySessionStore()}
	for i := range 2 {
		var st SessionStore = f.store
		if i == 0 {
			st = slowAppends{f.store, 100 * time.Millisecond} // A's events reach the log late
		}
		s := newTestServer(t, &ServerOptions{SessionStore: st})
		ts, h := legacyServer(t, s, nil)
		t.Cleanup(func() { s.Close() })
		f.servers, f.ts, f.hs = append(f.servers, s), append(f.ts, ts), append(f.hs, h)
	}
	c := f.client(t, 0, `{}`)
	for _, u := range []string{"test://1", "test://2", "test://3"} {
		f.route(0)
		if v := c.request(methodSubscribe, `{"uri":"`+u+`"}`); v["result"] == nil {
			t.Fatalf("subscribe: %v", v)
		}
	}
	f.route(0)
	resp := c.get("")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET on A: %d", resp.StatusCode)
	}
	events := readSSE(resp.Body)
	<-events.ids // the priming event's
	for _, u := range []string{"test://1", "test://2", "test://3"} {
		f.servers[0].ResourceUpdated(u)
	}
	events.next(t)
	last := <-events.ids
	resp.Body.Close()
	// At once, before A's queue has reached the store: B asks A to flush.
	if evs, _, _ := f.store.EventsAfter(context.Background(), c.sid, 0, 0, 0); len(evs) == 3 {
		t.Fatal("A's events reached the store at once: the test shows nothing")
	}
	// A notification raised on B during the hand-over follows the replay.
	raised := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if hs := f.hs[1].legacy.lookup(c.sid); hs != nil {
				hs.fmu.Lock()
				handing := hs.handing
				hs.fmu.Unlock()
				if handing {
					hs.sendUnrelated(notificationElicitationComplete, map[string]string{"elicitationId": "during"})
					raised <- true
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
		raised <- false
	}()
	f.route(1)
	again := c.get(last)
	defer again.Body.Close()
	if again.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID %s on B: %d", last, again.StatusCode)
	}
	ev := readSSE(again.Body)
	var got []string
	for range 2 {
		m := ev.next(t)
		got = append(got, <-ev.ids+" "+m["params"].(map[string]any)["uri"].(string))
	}
	if want := "0-2 test://2,0-3 test://3"; last != "0-1" || strings.Join(got, ",") != want {
		t.Fatalf("resumed after %s with %v, want %v", last, got, want)
	}
	if !<-raised {
		t.Fatal("B never took the stream over")
	}
	if m, id := ev.next(t), <-ev.ids; m["method"] != notificationElicitationComplete || id != "0-4" {
		t.Errorf("after the replay: %s %v, want 0-4 and the notification raised during the hand-over", id, m)
	}
	if f.hs[0].legacy.lookup(c.sid).holder.Load() {
		t.Error("A still writes the session's notifications")
	}
}

func TestTheGETStreamResumedElsewhereDoesNotWaitLongForADeadFormerHolder(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, nil)
	c := f.client(t, 0, `{}`)
	f.route(0)
	resp := c.get("")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET on A: %d", resp.StatusCode)
	}
	resp.Body.Close()
	f.servers[0].fleet.close() // A hears nothing more
	f.route(1)
	start := time.Now()
	again := c.get("0-0")
	defer again.Body.Close()
	if again.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID on B: %d", again.StatusCode)
	}
	if d := time.Since(start); d > fleetAckWait+2*time.Second {
		t.Errorf("the resume took %v", d)
	}
	f.servers[1].ResourceUpdated("test://x") // not subscribed: nothing
	rec, err := f.store.Load(context.Background(), c.sid)
	if err != nil || rec.Instance != f.servers[1].fleet.name {
		t.Errorf("record %+v %v: B should hold the GET stream", rec, err)
	}
}

func TestCompleteElicitationFindsAnElicitationAskedOnAnotherInstance(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, func(s *Server) {
		s.AddTool(&Tool{Name: "connect"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			var args struct{ Flow string }
			_ = json.Unmarshal(r.Arguments, &args)
			a, err := ElicitURL(ctx, "Sign in", "https://example.com/login", WithLegacyElicitationID(args.Flow))
			if err != nil {
				return nil, err
			}
			return TextResult(string(a)), nil
		})
	})
	c := f.client(t, 0, legacyCaps)
	c.answer = func(string, map[string]any) any { return map[string]any{"action": "accept"} }
	f.route(0)
	resp := c.get("") // A holds the GET stream
	defer resp.Body.Close()
	events := readSSE(resp.Body)
	for _, flow := range []string{"flow-1", "flow-2"} {
		f.route(1, 1) // asked on B, answered on B
		if v := c.request(MethodToolsCall, `{"name":"connect","arguments":{"flow":"`+flow+`"}}`); legacyText(t, v) != "accept" {
			t.Fatalf("got %v", v)
		}
	}
	// Completed on A, which did not ask it: B is found over the bus.
	if !f.servers[0].CompleteElicitation("flow-1") {
		t.Fatal("CompleteElicitation on A found no session")
	}
	// Completed on B, which asked it but does not hold the GET stream.
	if !f.servers[1].CompleteElicitation("flow-2") {
		t.Fatal("CompleteElicitation on B found no session")
	}
	got := map[string]bool{}
	for range 2 {
		m := events.next(t)
		if m["method"] != notificationElicitationComplete {
			t.Fatalf("got %v", m)
		}
		got[m["params"].(map[string]any)["elicitationId"].(string)] = true
	}
	if !got["flow-1"] || !got["flow-2"] {
		t.Errorf("completions on A's GET stream: %v", got)
	}
	start := time.Now()
	if f.servers[0].CompleteElicitation("flow-1") {
		t.Error("an elicitation completed twice")
	}
	if d := time.Since(start); d < fleetAckWait || d > fleetAckWait+2*time.Second {
		t.Errorf("an unknown id took %v, want the fleet's wait", d)
	}
}

func TestSessionEventsAreObservedOncePerFleet(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	count := map[EventKind]int{}
	f := newTestFleet(t, 3, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 2, IdleTimeout: 300 * time.Millisecond}}, func(s *Server) {
		s.opts.Observer = func(e Event) {
			if e.Kind == EventSessionOpened || e.Kind == EventSessionClosed {
				mu.Lock()
				count[e.Kind]++
				mu.Unlock()
			}
		}
	})
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return count[EventSessionOpened], count[EventSessionClosed]
	}
	deleted := f.client(t, 0, `{}`)
	for i := range f.ts { // a replica on every instance
		if st := f.status(t, deleted, i); st != http.StatusOK {
			t.Fatalf("on %d: %d", i, st)
		}
	}
	if o, cl := counts(); o != 1 || cl != 0 {
		t.Fatalf("after one initialize and requests on three instances: opened %d, closed %d", o, cl)
	}
	f.route(1)
	if st := deleted.delete(); st != http.StatusNoContent {
		t.Fatalf("DELETE: %d", st)
	}
	for i := range f.hs {
		waitFor(t, "the replicas to go", func() bool { return f.hs[i].legacy.sessionCount() == 0 })
	}
	if o, cl := counts(); o != 1 || cl != 1 {
		t.Errorf("after DELETE: opened %d, closed %d, want 1 and 1", o, cl)
	}
	// Eviction: the party's third session evicts its first.
	evicted := f.client(t, 0, `{}`)
	f.status(t, evicted, 2)
	expiring := f.client(t, 1, `{}`)
	f.client(t, 2, `{}`)
	for i := range f.ts {
		waitFor(t, "the evicted replicas to go", func() bool { return f.hs[i].legacy.lookup(evicted.sid) == nil })
	}
	if o, cl := counts(); o != 4 || cl != 2 {
		t.Errorf("after an eviction: opened %d, closed %d, want 4 and 2", o, cl)
	}
	// Expiry: the two sessions left, unused, are observed closed once each.
	f.status(t, expiring, 0) // a replica on A too
	waitFor(t, "the sessions to expire", func() bool {
		_, cl := counts()
		return cl >= 4
	})
	time.Sleep(700 * time.Millisecond) // no second count comes
	if o, cl := counts(); o != 4 || cl != 4 {
		t.Errorf("after expiry: opened %d, closed %d, want 4 and 4", o, cl)
	}
}

func TestANonHolderReplicaAccumulatesNoChanges(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, nil)
	c := f.client(t, 0, `{}`) // A holds the session
	var uris []string
	for i := range 40 {
		uris = append(uris, "test://r"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		f.route(1)
		if v := c.request(methodSubscribe, `{"uri":"`+uris[i]+`"}`); v["result"] == nil {
			t.Fatalf("subscribe on B: %v", v)
		}
	}
	pending := func(i int) int {
		hs := f.hs[i].legacy.lookup(c.sid)
		hs.listener.mu.Lock()
		defer hs.listener.mu.Unlock()
		return len(hs.listener.pending)
	}
	for _, u := range uris {
		f.servers[1].ResourceUpdated(u)
		f.servers[0].ResourceUpdated(u)
	}
	if n := pending(1); n != 0 {
		t.Errorf("B, not the holder, keeps %d changes for a stream it never writes", n)
	}
	if n := pending(0); n == 0 || n > maxPendingChanges {
		t.Errorf("A, the holder, keeps %d changes for its GET stream, want some, at most %d", n, maxPendingChanges)
	}
	// B takes the GET stream over: from then on it is told, and A is not.
	f.route(1)
	resp := c.get("")
	defer resp.Body.Close()
	events := readSSE(resp.Body)
	waitFor(t, "B to hold the session", func() bool { return f.hs[1].legacy.lookup(c.sid).holder.Load() })
	waitFor(t, "A to let go", func() bool { return !f.hs[0].legacy.lookup(c.sid).holder.Load() })
	if n := pending(0); n != 0 {
		t.Errorf("A, no longer the holder, keeps %d changes", n)
	}
	f.servers[1].ResourceUpdated(uris[7])
	for {
		m := events.next(t)
		if m["method"] == NotificationResourceUpdated && m["params"].(map[string]any)["uri"] == uris[7] {
			break
		}
	}
}

func TestOurClientsGETStreamMovesToAnotherInstanceWhenItsHolderDies(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, nil)
	got := make(chan string, 16)
	c := NewClient(NewHTTPClientTransport("http://fleet.invalid/", &HTTPClientOptions{HTTPClient: &http.Client{Transport: f}}),
		&ClientOptions{Mode: ModeLegacy, OnSessionNotification: func(n *ListenNotification) {
			if n.Method == NotificationResourceUpdated {
				got <- n.URI
			}
		}})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(ctx, "test://watched"); err != nil {
		t.Fatal(err)
	}
	holderOf := func() int {
		var sid string
		for i := range f.hs {
			lh := f.hs[i].legacy
			lh.mu.Lock()
			for id := range lh.sessions {
				sid = id
			}
			lh.mu.Unlock()
		}
		rec, err := f.store.Load(context.Background(), sid)
		if err != nil {
			return -1
		}
		for i, s := range f.servers {
			if rec.Instance == s.fleet.name {
				if hs := f.hs[i].legacy.lookup(sid); hs != nil {
					if st := hs.standalone(); st != nil {
						st.mu.Lock()
						open := st.conn != nil
						st.mu.Unlock()
						if open {
							return i
						}
					}
				}
			}
		}
		return -1
	}
	var h int
	waitFor(t, "the client's GET stream to open", func() bool { h = holderOf(); return h >= 0 })
	other := 1 - h
	// The holder hears of the subscription over the bus (it reloads the
	// record when told): until then an update is not for the session.
	func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(10 * time.Second)
		for {
			f.servers[h].ResourceUpdated("test://watched")
			select {
			case u := <-got:
				if u != "test://watched" {
					t.Fatalf("got %q", u)
				}
				return
			case <-tick.C:
			case <-deadline:
				t.Fatal("no resource update reached the client through its GET stream's holder")
			}
		}
	}()
	for len(got) > 0 {
		<-got // the updates sent while waiting
	}
	// The holder dies: no more requests, bus or connections.
	f.mu.Lock()
	f.down = map[int]bool{h: true}
	f.mu.Unlock()
	f.servers[h].fleet.close()
	f.ts[h].CloseClientConnections()
	f.servers[h].Close()
	waitFor(t, "the client to resume its GET stream on the other instance", func() bool { return holderOf() == other })
	f.mu.Lock()
	resumes := slices.Clone(f.resumes)
	f.mu.Unlock()
	if !slices.Contains(resumes, other) {
		t.Errorf("GETs with Last-Event-ID went to %v: the client did not resume on the other instance", resumes)
	}
	f.servers[other].ResourceUpdated("test://watched")
	select {
	case u := <-got:
		if u != "test://watched" {
			t.Fatalf("got %q", u)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the notification through the other instance did not reach the client")
	}
	// The session goes on there.
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list after the move: %v", err)
	}
}

func TestAnAnswerToAQuestionOfADeadInstanceIsAcceptedAndTheSessionGoesOn(t *testing.T) {
	t.Parallel()
	f := newTestFleet(t, 2, nil, nil)
	c := f.client(t, 0, legacyCaps)
	tag := f.servers[0].fleet.tag
	f.servers[0].fleet.close()
	f.ts[0].CloseClientConnections()
	f.servers[0].Close()
	// The client answers a question A asked before it died, through B:
	// the request that asked died with A; the answer has nowhere to go,
	// and is accepted as any answer to a request no longer waiting.
	f.route(1)
	id := int64(tag)<<32 | 1
	if st := c.postRaw(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"result":{"action":"accept"}}`); st != http.StatusAccepted {
		t.Fatalf("the answer on B: %d, want 202", st)
	}
	f.route(1)
	if v := c.request(MethodToolsList, ""); v["result"] == nil {
		t.Errorf("the session on B afterwards: %v", v)
	}
}
