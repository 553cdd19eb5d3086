// Package sessionstoretest is the contract suite of mcp.SessionStore:
// subtests that any implementation must pass, written against the
// interface alone. An implementation's test calls Run with a function
// that opens a fresh, empty store for each subtest:
//
//	func TestContract(t *testing.T) {
//		sessionstoretest.Run(t, func(t *testing.T) mcp.SessionStore { return newStore(t) })
//	}
//
// The suite takes about two seconds: its idle timeouts are a few hundred
// milliseconds. The event-log subtest appends until the store reports
// the oldest events dropped, so open a store whose log bound is small
// (up to a few hundred events) to keep it fast.
package sessionstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// maxLog is how many events the suite appends to one stream before it
// calls the store's log unbounded.
const maxLog = 10000

// Run runs the contract suite against the stores open returns.
func Run(t *testing.T, open func(t *testing.T) mcp.SessionStore) {
	tests := []struct {
		name string
		f    func(*testing.T, mcp.SessionStore)
	}{
		{"CreateLoadRoundTrip", testRoundTrip},
		{"VersionGrowsAndTouchReturnsIt", testVersion},
		{"NotFoundForUnknownDeletedExpired", testNotFound},
		{"TouchRefreshesTheIdleTimeout", testTouchRefreshes},
		{"PartyBoundEvictsLeastRecentlyUsed", testPartyBound},
		{"FleetBoundIsTemporarilyUnavailable", testFleetBound},
		{"UpdateFields", testUpdate},
		{"ConcurrentUpdatesKeepEveryChange", testConcurrentUpdates},
		{"DeleteRemovesEvents", testDelete},
		{"EventsInOrderPerStream", testEvents},
		{"EventsAfterWaits", testEventsWait},
		{"EventsDroppedPastTheBound", testEventsDropped},
		{"PublishReceive", testPubSub},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.f(t, open(t))
		})
	}
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// record returns a record of party with every field set.
func record(id, party string) *mcp.SessionRecord {
	return &mcp.SessionRecord{
		ID:              id,
		ProtocolVersion: "2025-11-25",
		ClientInfo:      mcp.Implementation{Name: "client", Version: "1.2.3", Title: "A client", WebsiteURL: "https://example.com", Icons: []mcp.Icon{{Src: "https://example.com/i.png", MIMEType: "image/png"}}},
		ClientCapabilities: mcp.ClientCapabilities{
			Elicitation:  &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)},
			Roots:        &mcp.RootsCapabilities{ListChanged: true},
			Experimental: map[string]json.RawMessage{"x": json.RawMessage(`{"n":12345678901234567}`)},
		},
		Principal:     "user:" + party,
		Party:         party,
		Transport:     mcp.TransportHTTP,
		Instance:      "instance-a",
		LogLevel:      mcp.LevelWarning,
		Initialized:   true,
		Subscriptions: []string{"file:///a", "file:///b"},
		IdleTimeout:   time.Minute,
	}
}

func create(t *testing.T, s mcp.SessionStore, rec *mcp.SessionRecord, perParty, fleet int) []string {
	t.Helper()
	ev, err := s.Create(ctxOf(t), rec, perParty, fleet)
	if err != nil {
		t.Fatalf("Create %s: %v", rec.ID, err)
	}
	return ev
}

func touch(t *testing.T, s mcp.SessionStore, id string) uint64 {
	t.Helper()
	v, err := s.Touch(ctxOf(t), id)
	if err != nil {
		t.Fatalf("Touch %s: %v", id, err)
	}
	return v
}

func load(t *testing.T, s mcp.SessionStore, id string) *mcp.SessionRecord {
	t.Helper()
	r, err := s.Load(ctxOf(t), id)
	if err != nil {
		t.Fatalf("Load %s: %v", id, err)
	}
	return r
}

func update(t *testing.T, s mcp.SessionStore, id string, u mcp.SessionUpdate) *mcp.SessionRecord {
	t.Helper()
	r, err := s.Update(ctxOf(t), id, u)
	if err != nil {
		t.Fatalf("Update %s %+v: %v", id, u, err)
	}
	return r
}

func gone(t *testing.T, s mcp.SessionStore, id, when string) {
	t.Helper()
	if _, err := s.Touch(ctxOf(t), id); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("Touch %s %s: %v, want ErrSessionNotFound", id, when, err)
	}
	if r, err := s.Load(ctxOf(t), id); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("Load %s %s: %+v %v, want ErrSessionNotFound", id, when, r, err)
	}
}

func testRoundTrip(t *testing.T, s mcp.SessionStore) {
	in := record("s1", "p")
	create(t, s, in, 10, 0)
	if in.Version == 0 {
		t.Error("Create left the record's Version zero")
	}
	want := record("s1", "p")
	want.Version = in.Version
	got := load(t, s, "s1")
	if !reflect.DeepEqual(got, want) {
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		t.Errorf("Load after Create:\n got %s\nwant %s", a, b)
	}
	// The record returned is the caller's: changing it changes nothing kept.
	got.Subscriptions[0] = "changed"
	if again := load(t, s, "s1"); again.Subscriptions[0] != "file:///a" {
		t.Errorf("the loaded record aliases the store's: %v", again.Subscriptions)
	}
	sse := record("s2", "p")
	sse.Transport, sse.Instance, sse.Subscriptions, sse.LogLevel, sse.Initialized = mcp.TransportHTTPSSE, "", nil, "", false
	create(t, s, sse, 10, 0)
	if got := load(t, s, "s2"); got.Transport != mcp.TransportHTTPSSE || got.Instance != "" || len(got.Subscriptions) != 0 || got.Initialized || got.LogLevel != "" {
		t.Errorf("a record with empty fields: %+v", got)
	}
}

func testVersion(t *testing.T, s mcp.SessionStore) {
	rec := record("v", "p")
	create(t, s, rec, 10, 0)
	v1 := rec.Version
	if v := touch(t, s, "v"); v != v1 {
		t.Errorf("Touch after Create = %d, want the created Version %d", v, v1)
	}
	r := update(t, s, "v", mcp.SessionUpdate{LogLevel: mcp.LevelDebug})
	if r.Version <= v1 {
		t.Errorf("Version after Update %d, want more than %d", r.Version, v1)
	}
	if v := touch(t, s, "v"); v != r.Version {
		t.Errorf("Touch after Update = %d, want %d", v, r.Version)
	}
	r2 := update(t, s, "v", mcp.SessionUpdate{Subscribe: "file:///c"})
	if r2.Version <= r.Version {
		t.Errorf("second Update: Version %d, want more than %d", r2.Version, r.Version)
	}
	if l := load(t, s, "v"); l.Version != r2.Version {
		t.Errorf("Load's Version %d, want %d", l.Version, r2.Version)
	}
	if v := touch(t, s, "v"); v != r2.Version {
		t.Errorf("Touch changed nothing yet returned %d, want %d", v, r2.Version)
	}
}

func testNotFound(t *testing.T, s mcp.SessionStore) {
	ctx := ctxOf(t)
	gone(t, s, "never", "of an unknown session")
	if _, err := s.Update(ctx, "never", mcp.SessionUpdate{LogLevel: mcp.LevelDebug}); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("Update of an unknown session: %v, want ErrSessionNotFound", err)
	}
	if ok, err := s.Delete(ctx, "never"); ok || err != nil {
		t.Errorf("Delete of an unknown session: %v %v, want false nil", ok, err)
	}
	create(t, s, record("d", "p"), 10, 0)
	if ok, err := s.Delete(ctx, "d"); !ok || err != nil {
		t.Errorf("Delete: %v %v, want true nil", ok, err)
	}
	gone(t, s, "d", "after Delete")
	if _, err := s.Update(ctx, "d", mcp.SessionUpdate{Initialized: true}); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("Update after Delete: %v, want ErrSessionNotFound", err)
	}
	rec := record("e", "p")
	rec.IdleTimeout = 300 * time.Millisecond
	create(t, s, rec, 10, 0)
	time.Sleep(450 * time.Millisecond)
	gone(t, s, "e", "past its idle timeout")
}

func testTouchRefreshes(t *testing.T, s mcp.SessionStore) {
	// A loaded machine can stall the test past the idle timeout between
	// two Touches; such a try shows nothing and is made again (a few
	// times), while a session gone less than its idle timeout after a
	// Touch began fails at once.
	const idle = 400 * time.Millisecond
	for try := 1; ; try++ {
		id := fmt.Sprintf("t%d", try)
		if touchesKeepAlive(t, s, id, idle) {
			time.Sleep(idle + 200*time.Millisecond)
			gone(t, s, id, "once Touch stopped")
			return
		}
		if try == 4 {
			t.Fatalf("%d tries, each stalled past the %v idle timeout between two Touches", try, idle)
		}
	}
}

// touchesKeepAlive creates id and touches it 6 times 100 ms apart (600 ms
// in all: alive only because each Touch restarts the timeout). It reports
// false when the test itself stalled for idle between the start of one
// Touch and the end of the next (the store may then rightly have expired
// the session).
func touchesKeepAlive(t *testing.T, s mcp.SessionStore, id string, idle time.Duration) bool {
	t.Helper()
	rec := record(id, "p")
	rec.IdleTimeout = idle
	last := time.Now()
	create(t, s, rec, 10, 0)
	for range 6 {
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		_, err := s.Touch(ctxOf(t), id)
		switch {
		case errors.Is(err, mcp.ErrSessionNotFound) && time.Since(last) >= idle:
			return false
		case err != nil:
			t.Fatalf("Touch %s %v after the previous one began: %v", id, time.Since(last), err)
		}
		last = start
	}
	if _, err := s.Load(ctxOf(t), id); err != nil {
		if errors.Is(err, mcp.ErrSessionNotFound) && time.Since(last) >= idle {
			return false
		}
		t.Fatalf("Load %s: %v", id, err)
	}
	return true
}

func testPartyBound(t *testing.T, s mcp.SessionStore) {
	for _, id := range []string{"a1", "a2", "a3"} {
		if ev := create(t, s, record(id, "A"), 3, 0); len(ev) != 0 {
			t.Fatalf("Create %s under the bound evicted %v", id, ev)
		}
		time.Sleep(5 * time.Millisecond)
	}
	create(t, s, record("b1", "B"), 3, 0)
	time.Sleep(5 * time.Millisecond)
	touch(t, s, "a1") // a2 is now the least recently used of A
	time.Sleep(5 * time.Millisecond)
	ev := create(t, s, record("a4", "A"), 3, 0)
	if !slices.Equal(ev, []string{"a2"}) {
		t.Fatalf("evicted %v, want [a2] (A's least recently used)", ev)
	}
	gone(t, s, "a2", "once evicted")
	for _, id := range []string{"a1", "a3", "a4", "b1"} {
		touch(t, s, id)
	}
	// Another party at its own bound evicts only its own.
	time.Sleep(5 * time.Millisecond)
	if ev := create(t, s, record("b2", "B"), 1, 0); !slices.Equal(ev, []string{"b1"}) {
		t.Errorf("party B at bound 1 evicted %v, want [b1]", ev)
	}
	for _, id := range []string{"a1", "a3", "a4", "b2"} {
		touch(t, s, id)
	}
	// A deleted session no longer counts against its party.
	if ok, _ := s.Delete(ctxOf(t), "a1"); !ok {
		t.Fatal("Delete a1 reported no session")
	}
	if ev := create(t, s, record("a5", "A"), 3, 0); len(ev) != 0 {
		t.Errorf("after a Delete, Create evicted %v, want none", ev)
	}
}

func testFleetBound(t *testing.T, s mcp.SessionStore) {
	create(t, s, record("x", "P1"), 5, 2)
	create(t, s, record("y", "P2"), 5, 2)
	_, err := s.Create(ctxOf(t), record("z", "P3"), 5, 2)
	if !errors.Is(err, mcp.ErrTemporarilyUnavailable) {
		t.Fatalf("Create past the fleet bound: %v, want ErrTemporarilyUnavailable", err)
	}
	gone(t, s, "z", "refused at the fleet bound")
	touch(t, s, "x")
	touch(t, s, "y")
	if ok, _ := s.Delete(ctxOf(t), "y"); !ok {
		t.Fatal("Delete y reported no session")
	}
	if ev := create(t, s, record("z", "P3"), 5, 2); len(ev) != 0 {
		t.Errorf("Create after a Delete made room evicted %v", ev)
	}
	// An expired session does not count either.
	short := record("w", "P4")
	short.IdleTimeout = 200 * time.Millisecond
	s.Delete(ctxOf(t), "z")
	create(t, s, short, 5, 2)
	time.Sleep(350 * time.Millisecond)
	create(t, s, record("z2", "P5"), 5, 2)
}

func testUpdate(t *testing.T, s mcp.SessionStore) {
	rec := record("u", "p")
	rec.LogLevel, rec.Initialized, rec.Subscriptions, rec.Instance = "", false, nil, ""
	create(t, s, rec, 10, 0)
	r := update(t, s, "u", mcp.SessionUpdate{LogLevel: mcp.LevelError, Initialized: true})
	if r.LogLevel != mcp.LevelError || !r.Initialized {
		t.Errorf("LogLevel and Initialized: %+v", r)
	}
	r = update(t, s, "u", mcp.SessionUpdate{})
	if r.LogLevel != mcp.LevelError || !r.Initialized {
		t.Errorf("the zero update changed fields: %+v", r)
	}
	for _, uri := range []string{"file:///b", "file:///a", "file:///c", "file:///a"} {
		r = update(t, s, "u", mcp.SessionUpdate{Subscribe: uri, MaxSubscriptions: 3})
	}
	if want := []string{"file:///a", "file:///b", "file:///c"}; !slices.Equal(r.Subscriptions, want) {
		t.Errorf("subscriptions %v, want %v (sorted, once each)", r.Subscriptions, want)
	}
	r = update(t, s, "u", mcp.SessionUpdate{Subscribe: "file:///d", MaxSubscriptions: 3})
	if slices.Contains(r.Subscriptions, "file:///d") || len(r.Subscriptions) != 3 {
		t.Errorf("a Subscribe past MaxSubscriptions was kept: %v", r.Subscriptions)
	}
	r = update(t, s, "u", mcp.SessionUpdate{Unsubscribe: "file:///b"})
	if want := []string{"file:///a", "file:///c"}; !slices.Equal(r.Subscriptions, want) {
		t.Errorf("after Unsubscribe %v, want %v", r.Subscriptions, want)
	}
	r = update(t, s, "u", mcp.SessionUpdate{Unsubscribe: "file:///never"})
	if len(r.Subscriptions) != 2 {
		t.Errorf("Unsubscribe of a URI not subscribed: %v", r.Subscriptions)
	}
	r = update(t, s, "u", mcp.SessionUpdate{Subscribe: "file:///0", MaxSubscriptions: 3})
	if want := []string{"file:///0", "file:///a", "file:///c"}; !slices.Equal(r.Subscriptions, want) {
		t.Errorf("subscriptions %v, want %v", r.Subscriptions, want)
	}
	r = update(t, s, "u", mcp.SessionUpdate{SetInstance: true, Instance: "i-1"})
	if r.Instance != "i-1" {
		t.Errorf("SetInstance: %q", r.Instance)
	}
	r = update(t, s, "u", mcp.SessionUpdate{Instance: "ignored"})
	if r.Instance != "i-1" {
		t.Errorf("Instance without SetInstance changed it: %q", r.Instance)
	}
	r = update(t, s, "u", mcp.SessionUpdate{SetInstance: true})
	if r.Instance != "" {
		t.Errorf("SetInstance with an empty Instance left %q", r.Instance)
	}
	l := load(t, s, "u")
	if !reflect.DeepEqual(l, r) {
		t.Errorf("Load %+v, want the last Update's %+v", l, r)
	}
	if l.ClientInfo.Name != "client" || l.Principal != "user:p" || l.ProtocolVersion != "2025-11-25" {
		t.Errorf("Update lost fields it does not change: %+v", l)
	}
}

func testConcurrentUpdates(t *testing.T, s mcp.SessionStore) {
	rec := record("c", "p")
	rec.Subscriptions = nil
	create(t, s, rec, 10, 0)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := s.Update(ctxOf(t), "c", mcp.SessionUpdate{Subscribe: fmt.Sprintf("file:///%d", i)}); err != nil {
				t.Error(err)
			}
			if _, err := s.Touch(ctxOf(t), "c"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	l := load(t, s, "c")
	if len(l.Subscriptions) != 8 || !slices.IsSorted(l.Subscriptions) {
		t.Errorf("after 8 concurrent Subscribes: %v", l.Subscriptions)
	}
	if l.Version < rec.Version+8 {
		t.Errorf("Version %d after 8 Updates of %d", l.Version, rec.Version)
	}
}

func appendEv(t *testing.T, s mcp.SessionStore, id string, ev mcp.SessionEvent) {
	t.Helper()
	if err := s.AppendEvent(ctxOf(t), id, ev); err != nil {
		t.Fatalf("AppendEvent %s %+v: %v", id, ev, err)
	}
}

func after(t *testing.T, s mcp.SessionStore, id string, stream, seq uint64, wait time.Duration) ([]mcp.SessionEvent, bool) {
	t.Helper()
	evs, kept, err := s.EventsAfter(ctxOf(t), id, stream, seq, wait)
	if err != nil {
		t.Fatalf("EventsAfter %s %d %d: %v", id, stream, seq, err)
	}
	return evs, kept
}

func ev(stream, seq uint64, data string, end bool) mcp.SessionEvent {
	return mcp.SessionEvent{Stream: stream, Seq: seq, Data: []byte(data), End: end}
}

func testDelete(t *testing.T, s mcp.SessionStore) {
	create(t, s, record("d", "p"), 10, 0)
	appendEv(t, s, "d", ev(1, 1, `{"a":1}`, false))
	if evs, kept := after(t, s, "d", 1, 0, 0); len(evs) != 1 || !kept {
		t.Fatalf("before Delete: %v %v", evs, kept)
	}
	if ok, err := s.Delete(ctxOf(t), "d"); !ok || err != nil {
		t.Fatalf("Delete: %v %v", ok, err)
	}
	if _, _, err := s.EventsAfter(ctxOf(t), "d", 1, 0, 0); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("events after Delete: %v, want ErrSessionNotFound", err)
	}
	if ok, err := s.Delete(ctxOf(t), "d"); ok || err != nil {
		t.Errorf("second Delete: %v %v, want false nil", ok, err)
	}
	// A new session of the same id starts with no events.
	create(t, s, record("d", "p"), 10, 0)
	if evs, kept := after(t, s, "d", 1, 0, 0); len(evs) != 0 || kept {
		t.Errorf("events of a recreated session: %v %v", evs, kept)
	}
}

func testEvents(t *testing.T, s mcp.SessionStore) {
	create(t, s, record("e", "p"), 10, 0)
	create(t, s, record("other", "p"), 10, 0)
	appendEv(t, s, "e", ev(1, 1, `{"n":1}`, false))
	appendEv(t, s, "e", ev(2, 1, `{"m":1}`, true))
	appendEv(t, s, "e", ev(1, 2, `{"n":2}`, false))
	appendEv(t, s, "e", ev(1, 3, `{"n":3}`, true))
	appendEv(t, s, "other", ev(1, 1, `{"o":1}`, false))
	evs, kept := after(t, s, "e", 1, 0, 0)
	want := []mcp.SessionEvent{ev(1, 1, `{"n":1}`, false), ev(1, 2, `{"n":2}`, false), ev(1, 3, `{"n":3}`, true)}
	if !kept || !reflect.DeepEqual(evs, want) {
		t.Errorf("stream 1 from the start: %+v kept=%v, want %+v", evs, kept, want)
	}
	if evs, kept := after(t, s, "e", 1, 2, 0); !kept || !reflect.DeepEqual(evs, want[2:]) {
		t.Errorf("stream 1 after 2: %+v %v", evs, kept)
	}
	if evs, kept := after(t, s, "e", 2, 0, 0); !kept || !reflect.DeepEqual(evs, []mcp.SessionEvent{ev(2, 1, `{"m":1}`, true)}) {
		t.Errorf("stream 2: %+v %v", evs, kept)
	}
	if evs, kept := after(t, s, "e", 1, 3, 0); !kept || len(evs) != 0 {
		t.Errorf("stream 1 after its last event: %+v kept=%v, want none, kept", evs, kept)
	}
	if evs, kept := after(t, s, "e", 9, 0, 0); kept || len(evs) != 0 {
		t.Errorf("an unknown stream: %+v kept=%v, want none, not kept", evs, kept)
	}
	if _, _, err := s.EventsAfter(ctxOf(t), "nobody", 1, 0, 0); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("a stream of an unknown session: %v, want ErrSessionNotFound", err)
	}
	if evs, _ := after(t, s, "other", 1, 0, 0); len(evs) != 1 || string(evs[0].Data) != `{"o":1}` {
		t.Errorf("another session's stream 1: %+v", evs)
	}
}

func testEventsWait(t *testing.T, s mcp.SessionStore) {
	create(t, s, record("w", "p"), 10, 0)
	appendEv(t, s, "w", ev(1, 1, `1`, false))
	start := time.Now()
	evs, kept := after(t, s, "w", 1, 1, 200*time.Millisecond)
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("an empty wait of 200ms took %v", d)
	}
	if !kept || len(evs) != 0 {
		t.Errorf("after an empty wait: %+v kept=%v, want none, kept", evs, kept)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		s.AppendEvent(context.Background(), "w", ev(1, 2, `2`, true))
	}()
	start = time.Now()
	evs, kept = after(t, s, "w", 1, 1, 3*time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the wait did not end when the event came: %v", d)
	}
	if !kept || !reflect.DeepEqual(evs, []mcp.SessionEvent{ev(1, 2, `2`, true)}) {
		t.Errorf("the awaited event: %+v kept=%v", evs, kept)
	}
	// A stream with no event yet is waited for: its first event may be
	// on its way (a response stream resumed from its priming id).
	go func() {
		time.Sleep(100 * time.Millisecond)
		s.AppendEvent(context.Background(), "w", ev(7, 1, `7`, false))
	}()
	start = time.Now()
	evs, kept = after(t, s, "w", 7, 0, 3*time.Second)
	if d := time.Since(start); d > 2*time.Second || d < 50*time.Millisecond {
		t.Errorf("the wait for a new stream's first event took %v", d)
	}
	if !kept || !reflect.DeepEqual(evs, []mcp.SessionEvent{ev(7, 1, `7`, false)}) {
		t.Errorf("a new stream's first event: %+v kept=%v", evs, kept)
	}
	// A stream opened (Seq 0, its priming event) is known with no event.
	appendEv(t, s, "w", mcp.SessionEvent{Stream: 9})
	if evs, kept := after(t, s, "w", 9, 0, 0); !kept || len(evs) != 0 {
		t.Errorf("an opened stream with no event: %+v kept=%v, want none, kept", evs, kept)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		s.AppendEvent(context.Background(), "w", ev(9, 1, `9`, true))
	}()
	if evs, kept := after(t, s, "w", 9, 0, 3*time.Second); !kept || !reflect.DeepEqual(evs, []mcp.SessionEvent{ev(9, 1, `9`, true)}) {
		t.Errorf("an opened stream's first event: %+v kept=%v", evs, kept)
	}
	if evs, kept := after(t, s, "w", 8, 0, 100*time.Millisecond); kept || len(evs) != 0 {
		t.Errorf("a stream still unknown after the wait: %+v kept=%v, want none, not kept", evs, kept)
	}
	// A wait bounded by ctx ends with it.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	s.EventsAfter(ctx, "w", 1, 2, 5*time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a wait outlived its ctx: %v", d)
	}
}

func testEventsDropped(t *testing.T, s mcp.SessionStore) {
	create(t, s, record("b", "p"), 10, 0)
	var n uint64
	for n = 1; n <= maxLog; n++ {
		appendEv(t, s, "b", ev(1, n, fmt.Sprintf(`{"n":%d}`, n), false))
		if n%32 == 0 {
			if _, kept := after(t, s, "b", 1, 0, 0); !kept {
				break
			}
		}
	}
	if n > maxLog {
		t.Fatalf("after %d events of one stream every one is still kept: the log is unbounded", maxLog)
	}
	evs, kept := after(t, s, "b", 1, n-1, 0)
	if !kept || len(evs) != 1 || evs[0].Seq != n {
		t.Errorf("the newest event past the bound: %+v kept=%v", evs, kept)
	}
	evs, kept = after(t, s, "b", 1, n, 0)
	if !kept || len(evs) != 0 {
		t.Errorf("after the newest event: %+v kept=%v", evs, kept)
	}
}

func testPubSub(t *testing.T, s mcp.SessionStore) {
	ctx, cancel := context.WithCancel(ctxOf(t))
	type inbox struct {
		mu   sync.Mutex
		msgs []string
	}
	boxes := map[string]*inbox{"i1": {}, "i2": {}}
	var wg sync.WaitGroup
	for name, box := range boxes {
		ready := make(chan struct{})
		wg.Go(func() {
			err := s.Receive(ctx, name, func() { close(ready) }, func(msg []byte) {
				box.mu.Lock()
				box.msgs = append(box.msgs, string(msg))
				box.mu.Unlock()
			})
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Receive %s: %v", name, err)
			}
		})
		select {
		case <-ready:
		case <-time.After(5 * time.Second):
			t.Fatalf("Receive %s never called ready", name)
		}
	}
	count := func(name string) int {
		b := boxes[name]
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.msgs)
	}
	waitFor := func(name string, n int) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for count(name) < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := s.Publish(ctx, "i1", []byte(`{"m":"one"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor("i1", 1)
	var pw sync.WaitGroup
	for p := range 8 {
		pw.Go(func() {
			for i := range 10 {
				if err := s.Publish(ctx, "i2", fmt.Appendf(nil, `{"p":%d,"i":%d}`, p, i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	pw.Wait()
	waitFor("i2", 80)
	time.Sleep(50 * time.Millisecond) // anything misdelivered has time to arrive
	if b := boxes["i1"]; count("i1") != 1 || b.msgs[0] != `{"m":"one"}` {
		t.Errorf("i1 received %q, want only its one message", b.msgs)
	}
	if n := count("i2"); n != 80 {
		t.Errorf("i2 received %d of 80 concurrent messages", n)
	}
	got := slices.Clone(boxes["i2"].msgs)
	slices.Sort(got)
	got = slices.Compact(got)
	if len(got) != 80 {
		t.Errorf("i2's messages are not the 80 distinct ones published: %d distinct", len(got))
	}
	if err := s.Publish(ctx, "nobody", []byte(`{}`)); err != nil {
		t.Errorf("Publish to an instance nobody receives on: %v", err)
	}
	cancel()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Error("Receive did not return when its ctx ended")
	}
}
