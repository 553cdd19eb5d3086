package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// The chaos test: real nginx, real Redis, three instances of this
// program, a load driver running multi round-trip flows through nginx
// and an attacker replaying their legs, while the fleet is broken in
// every way an operator meets: an instance killed, a rolling restart, a
// key rotation, the store restarted empty and from an older AOF, a
// Sentinel failover.

const (
	chaosWorkers  = 6
	chaosTTL      = 5 * time.Second  // fleet 1: short, for the rotation's third phase
	failoverTTL   = 30 * time.Second // fleet 2: the flows replayed after the failover are still alive
	chaosLease    = time.Second      // well under the TTL: a leg claimed by a killed instance is free again soon
	flowTimeout   = 90 * time.Second
	phaseDeadline = 40 * time.Second // for any one wait of a phase
)

var phaseNames = []string{
	"a steady state",
	"b kill -9 and restart",
	"b' rolling restart (drain)",
	"c key rotation (file + SIGHUP)",
	"d store restarted empty",
	"d' store restored from an older AOF",
	"e Sentinel failover",
}

// phaseStats are the figures of one phase (events counted in the phase
// current when they happen; flows in the phase they started in).
type phaseStats struct {
	started, completed  atomic.Int64
	storeLossRestarts   atomic.Int64 // a leg refused because the store lost its records: the flow starts again
	legitRejected       atomic.Int64 // ErrInvalidRequestState outside that window: must be 0
	firstLegResends     atomic.Int64 // a first leg whose answer was lost, sent again by the driver
	replaysRefused      atomic.Int64 // a leg replayed with other answers, refused: as it must be
	identicalAnswered   atomic.Int64 // the identical leg replayed, answered from the record
	identicalRefused    atomic.Int64 // the identical leg replayed after its record could be gone (expired, store lost)
	identicalUnexpected atomic.Int64 // the identical leg refused while its record should be there: must be 0
	replaysAccepted     atomic.Int64 // a replay with other answers that was not refused: must be 0
	replaysUnanswered   atomic.Int64 // a replay that got no verdict (store unavailable past the retries)
	clientResends       atomic.Int64 // legs the client's loop sent again (503, lost answers)
	lost                atomic.Int64 // computed at the end: started, never completed: must be 0
}

// flow is one provision call, three legs; the fields of its completed
// attempt are what the attacker replays.
type flow struct {
	id     int
	name   string
	fleet  int    // 1 or 2
	url    string // its fleet's endpoint
	phase  int
	client *mcp.Client // the worker's

	mu        sync.Mutex
	done      bool
	err       error
	p1, p2    *mcp.PendingCall   // the states of legs 2 and 3
	a1, a2    mcp.InputResponses // the answers sent with them
	got1      time.Time          // when p1 arrived
	got2      time.Time          // when p2 arrived
	text      string             // the result
	completed time.Time
	restarts  int
}

func (fl *flow) engine() string { return []string{"postgres", "mysql"}[fl.id%2] }
func (fl *flow) region() string { return []string{"eu-west-1", "us-east-1"}[fl.id/2%2] }
func (fl *flow) gib() int       { return 10 + fl.id%90 }
func (fl *flow) want() string {
	return fmt.Sprintf("Provisioned %s: %s in %s, %d GiB.", fl.name, fl.engine(), fl.region(), fl.gib())
}

// responses answers every input request of p with content.
func responses(p *mcp.PendingCall, content map[string]any) mcp.InputResponses {
	b, _ := json.Marshal(map[string]any{"action": "accept", "content": content})
	rs := mcp.InputResponses{}
	for k := range p.InputRequests {
		rs[k] = b
	}
	return rs
}

type chaos struct {
	start   time.Time
	target  atomic.Pointer[target] // where new flows go
	phase   atomic.Int32
	stats   [7]phaseStats
	stop    atomic.Bool
	workers sync.WaitGroup
	attack  chan *flow
	attWG   sync.WaitGroup
	tr      *http.Transport
	events  lockedBuffer
	nevents atomic.Int64

	mu        sync.Mutex
	flows     []*flow
	storeFrom time.Time // fleet-1 states that arrived in [storeFrom, storeTo) may be refused: the store lost its records
	storeTo   time.Time
	completed atomic.Int64
	byFleet   [3]atomic.Int64
}

// target is a fleet new flows go to.
type target struct {
	url   string
	fleet int
}

func (c *chaos) st() *phaseStats { return &c.stats[c.phase.Load()] }

// eventf notes something worth reading in a failure: the first 200.
func (c *chaos) eventf(format string, args ...any) {
	if c.nevents.Add(1) > 200 {
		return
	}
	fmt.Fprintf(&c.events, "%6.2fs %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

func (c *chaos) newClient(url string) *mcp.Client {
	return mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{HTTPClient: &http.Client{Transport: c.tr}}),
		&mcp.ClientOptions{
			Elicitation: answer, // declares the capability; Manual calls hand the questions back
			// Generous: a failover or a restart takes seconds, and a leg
			// with a state is safe to send again.
			LegRetries:     30,
			RequestTimeout: 20 * time.Second,
			Logger:         slog.New(&resendCounter{c: c, next: slog.NewTextHandler(&c.events, &slog.HandlerOptions{Level: slog.LevelError})}),
		})
}

// worker runs flows one after the other until stop.
func (c *chaos) worker() {
	defer c.workers.Done()
	clients := map[string]*mcp.Client{}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for !c.stop.Load() {
		tg := c.target.Load()
		cl := clients[tg.url]
		if cl == nil {
			cl = c.newClient(tg.url)
			clients[tg.url] = cl
		}
		c.mu.Lock()
		fl := &flow{id: len(c.flows), fleet: tg.fleet, url: tg.url, phase: int(c.phase.Load()), client: cl}
		fl.name = fmt.Sprintf("db%05d", fl.id)
		c.flows = append(c.flows, fl)
		c.mu.Unlock()
		c.stats[fl.phase].started.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), flowTimeout)
		err := c.run(ctx, fl)
		cancel()
		fl.mu.Lock()
		fl.err = err
		fl.mu.Unlock()
		if err != nil {
			c.eventf("flow %s (fleet %d): lost: %v", fl.name, fl.fleet, err)
			continue
		}
		c.completed.Add(1)
		c.byFleet[fl.fleet].Add(1)
		c.st().completed.Add(1)
		if fl.id%3 == 0 {
			select {
			case c.attack <- fl:
			default:
			}
		}
	}
}

// storeLost reports whether a fleet-1 state that arrived at got may have
// been refused because the store was restarted empty.
func (c *chaos) storeLost(fleet int, got time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fleet == 1 && !c.storeFrom.IsZero() && !got.Before(c.storeFrom) && got.Before(c.storeTo)
}

// run drives one flow through its three legs, starting it again (from
// its first leg) when a leg is refused because the store lost its
// records.
func (c *chaos) run(ctx context.Context, fl *flow) error {
	manual := &mcp.CallOptions{Manual: true}
	for attempt := 0; ; attempt++ {
		if attempt > 5 {
			return errors.New("started again too often")
		}
		p1, err := c.first(ctx, fl)
		if err != nil {
			return fmt.Errorf("leg 1: %w", err)
		}
		got1 := time.Now()
		a1 := responses(p1, map[string]any{"engine": fl.engine(), "region": fl.region()})
		_, err = fl.client.Resume(ctx, p1, a1, manual)
		var pe *mcp.PendingCallError
		if !errors.As(err, &pe) {
			if c.refused(fl, 2, got1, err) {
				continue
			}
			return fmt.Errorf("leg 2: %w", err)
		}
		p2, got2 := pe.Call, time.Now()
		a2 := responses(p2, map[string]any{"gib": fl.gib()})
		res, err := fl.client.Resume(ctx, p2, a2, manual)
		if err != nil {
			if c.refused(fl, 3, got2, err) {
				continue
			}
			return fmt.Errorf("leg 3: %w", err)
		}
		r, ok := res.(*mcp.CallToolResult)
		if !ok || textOf(r) != fl.want() {
			return fmt.Errorf("leg 3: result %#v, want %q", res, fl.want())
		}
		fl.mu.Lock()
		fl.done, fl.p1, fl.p2, fl.a1, fl.a2, fl.got1, fl.got2 = true, p1, p2, a1, a2, got1, got2
		fl.text, fl.completed, fl.restarts = textOf(r), time.Now(), attempt
		fl.mu.Unlock()
		return nil
	}
}

// refused handles a leg that failed with err: true when the flow is to
// start again (the state was refused), counting the refusal as the cost
// of a store that lost its records or as a legitimate round rejected.
func (c *chaos) refused(fl *flow, leg int, got time.Time, err error) bool {
	if !errors.Is(err, mcp.ErrInvalidRequestState) {
		return false
	}
	if c.storeLost(fl.fleet, got) {
		c.st().storeLossRestarts.Add(1)
		return true
	}
	c.st().legitRejected.Add(1)
	c.eventf("flow %s (fleet %d): leg %d refused, state %.2fs old: LEGITIMATE ROUND REJECTED", fl.name, fl.fleet, leg, time.Since(got).Seconds())
	return true // start again, so that the figures of lost flows stay separate
}

// first sends the first leg. Its answer may be lost (a connection cut by
// a killed instance or a reloading nginx); the client does not send a
// first leg again, since the handler may have run, but this tool's first
// leg only asks a question, so the driver does.
func (c *chaos) first(ctx context.Context, fl *flow) (*mcp.PendingCall, error) {
	for try := 0; ; try++ {
		_, err := fl.client.CallTool(ctx, "provision", ProvisionArgs{Name: fl.name}, &mcp.CallOptions{Manual: true})
		var pe *mcp.PendingCallError
		if errors.As(err, &pe) {
			return pe.Call, nil
		}
		// About 12 s in all: longer than nginx keeps every instance out
		// (fail_timeout) after the 503s of a store outage.
		if try >= 30 || ctx.Err() != nil {
			return nil, err
		}
		c.st().firstLegResends.Add(1)
		c.eventf("flow %s: first leg sent again after: %v", fl.name, err)
		time.Sleep(time.Duration(min(50*(try+1), 500)) * time.Millisecond)
	}
}

// attacker replays legs of completed flows until the channel closes,
// with clients of its own.
func (c *chaos) attacker() {
	defer c.attWG.Done()
	clients := map[string]*mcp.Client{}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for fl := range c.attack {
		cl := clients[fl.url]
		if cl == nil {
			cl = c.newClient(fl.url)
			clients[fl.url] = cl
		}
		c.replay(cl, fl)
	}
}

// replay sends, for a completed flow, leg 2's state and leg 3's state
// with other answers (each must be refused) and leg 3 again as it was
// (it must get the same answer, or be refused when its record may be
// gone; never run a second time: the ledger tells).
func (c *chaos) replay(cl *mcp.Client, fl *flow) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fl.mu.Lock()
	p1, p2, a2, got2, text := fl.p1, fl.p2, fl.a2, fl.got2, fl.text
	fl.mu.Unlock()
	manual := &mcp.CallOptions{Manual: true}
	other := map[string]string{"postgres": "mysql", "mysql": "postgres"}[fl.engine()]
	_, err := cl.Resume(ctx, p1, responses(p1, map[string]any{"engine": other, "region": fl.region()}), manual)
	c.expectRefused(fl, "leg 2 with another engine", err)
	_, err = cl.Resume(ctx, p2, responses(p2, map[string]any{"gib": fl.gib() + 1}), manual)
	c.expectRefused(fl, "leg 3 with another size", err)

	sent := time.Now()
	res, err := cl.Resume(ctx, p2, a2, manual)
	st := c.st()
	switch r, ok := res.(*mcp.CallToolResult); {
	case err == nil && ok && textOf(r) == text:
		st.identicalAnswered.Add(1)
	case err == nil:
		st.replaysAccepted.Add(1)
		c.eventf("flow %s: the identical leg 3 got another answer %#v: REPLAY ACCEPTED", fl.name, res)
	case errors.Is(err, mcp.ErrInvalidRequestState):
		ttl := chaosTTL
		if fl.fleet == 2 {
			ttl = failoverTTL
		}
		if sent.Sub(got2) < ttl-time.Second && !c.storeLost(fl.fleet, got2) {
			st.identicalUnexpected.Add(1)
			c.eventf("flow %s: the identical leg 3 was refused %.2fs after its state arrived: RECORD MISSING", fl.name, sent.Sub(got2).Seconds())
		} else {
			st.identicalRefused.Add(1)
		}
	default:
		st.replaysUnanswered.Add(1)
		c.eventf("flow %s: identical replay unanswered: %v", fl.name, err)
	}
}

func (c *chaos) expectRefused(fl *flow, what string, err error) {
	st := c.st()
	switch {
	case errors.Is(err, mcp.ErrInvalidRequestState):
		st.replaysRefused.Add(1)
	case err == nil || errors.As(err, new(*mcp.PendingCallError)):
		st.replaysAccepted.Add(1)
		c.eventf("flow %s: %s was not refused: REPLAY ACCEPTED", fl.name, what)
	default:
		st.replaysUnanswered.Add(1)
		c.eventf("flow %s: %s unanswered: %v", fl.name, what, err)
	}
}

// lastCompleted returns up to n flows of fleet completed most recently.
func (c *chaos) lastCompleted(fleet, n int) []*flow {
	c.mu.Lock()
	all := append([]*flow(nil), c.flows...)
	c.mu.Unlock()
	var out []*flow
	for i := len(all) - 1; i >= 0 && len(out) < n; i-- {
		fl := all[i]
		fl.mu.Lock()
		ok := fl.done && fl.fleet == fleet
		fl.mu.Unlock()
		if ok {
			out = append(out, fl)
		}
	}
	return out
}

// waitCompleted waits until n more flows (of fleet, 0 for any) completed.
func (c *chaos) waitCompleted(t *testing.T, fleet, n int, what string) {
	t.Helper()
	counter := &c.completed
	if fleet > 0 {
		counter = &c.byFleet[fleet]
	}
	want := counter.Load() + int64(n)
	deadline := time.Now().Add(phaseDeadline)
	for counter.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d flows completed within %v", what, n-int(want-counter.Load()), n, phaseDeadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restartStore kills fleet 1's store, removes its AOF, runs down
// (which may put a file back: the store then restarts from it, else
// empty) and starts the store again. The states issued from a TTL
// before the kill until two seconds after the start may be refused (the
// new generation's floor is the store's start, rounded up to its next
// second).
func (c *chaos) restartStore(t *testing.T, store *redistest.Server, aof string, down func() error) {
	t.Helper()
	c.mu.Lock()
	c.storeFrom = time.Now().Add(-chaosTTL - time.Second)
	c.storeTo = time.Now().Add(time.Hour)
	c.mu.Unlock()
	store.Kill()
	os.Remove(store.Sock)
	if err := os.RemoveAll(aof); err != nil {
		t.Fatal(err)
	}
	if err := down(); err != nil {
		t.Fatal(err)
	}
	store.Start()
	c.mu.Lock()
	c.storeTo = time.Now().Add(2 * time.Second)
	c.mu.Unlock()
}

func (c *chaos) setPhase(t *testing.T, p int) {
	c.phase.Store(int32(p))
	t.Logf("%6.2fs phase %s", time.Since(c.start).Seconds(), phaseNames[p])
}

// Under a load of concurrent multi round-trip flows through nginx, the
// fleet loses no flow and accepts no replay while an instance is killed
// and restarted, every instance is drained and restarted in turn, the
// keys rotate in three phases, the store restarts empty (the flows in
// flight start again, by design) and a Sentinel group fails over; every
// completed flow's side effect happened exactly once. 2025-11-25 sessions
// (chaos_legacy_test.go) run through the kill, the drain and the
// rotation: none is lost, no answer to a live question is lost, a call
// in flight on the killed instance fails fast, and each GET stream
// resumes elsewhere with Last-Event-ID without an event id seen twice.
func TestFleetLosesNoFlowAndAcceptsNoReplayUnderChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two fleets, nginx and seven redis processes")
	}
	c := &chaos{start: time.Now(), attack: make(chan *flow, 256),
		tr: &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: 30 * time.Second}}
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	var ctlLog lockedBuffer
	logger := slog.New(slog.NewTextHandler(&ctlLog, nil))
	var fleets []*Fleet
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", ctlLog.String())
			for i, f := range fleets {
				for _, id := range f.IDs() {
					t.Logf("fleet %d instance %s, the end of its log (without the provisioning records):\n%s", i+1, id, logTail(f.LogFile(id), 6000))
				}
				t.Logf("fleet %d nginx:\n%s", i+1, f.tail("nginx", 3000))
			}
		}
	})

	// The Sentinel group of phase e starts now: its sentinels find a
	// replica that joins later only at their next poll of the primary
	// (every 10 s), so the second replica has the first phases' time to be
	// found.
	grp := redistest.StartSentinel(t)
	spare := redistest.StartServer(t, true, "--replicaof", "127.0.0.1", strconv.Itoa(grp.Primary.Port))
	t.Logf("%6.2fs the Sentinel group is up", time.Since(c.start).Seconds())

	// Fleet 1: one redis-server on a Unix socket, with an AOF (phase d
	// removes it to restart empty; phase d' restores an older copy).
	store := redistest.StartServer(t, false, "--appendonly", "yes", "--appendfsync", "always")
	aof := filepath.Join(store.Dir(), "appendonlydir")
	k1 := requeststate.GenerateKey()
	f1, err := Start(Config{Self: os.Args[0], Dir: mkdir(t, dir, "fleet1"), Instances: 3, Redis: "unix://" + store.Sock,
		StateTTL: chaosTTL, GuardLease: chaosLease, DrainTimeout: 10 * time.Second, Keys: [][]byte{k1},
		Ledger: ledger, HealthInterval: 100 * time.Millisecond, Logger: logger.With("fleet", 1)})
	if err != nil {
		t.Fatalf("%v (the test command installs nginx-light and redis-server)", err)
	}
	fleets = append(fleets, f1)
	t.Cleanup(f1.Close)
	c.target.Store(&target{f1.URL, 1})

	for range 2 {
		c.attWG.Add(1)
		go c.attacker()
	}
	for range chaosWorkers {
		c.workers.Add(1)
		go c.worker()
	}
	// The 2025 sessions, through the kill, the drain and the rotation
	// (the store restarted empty in phase d ends sessions by design).
	legacy := startLegacyDriver(f1.URL, &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second},
		func() int { return int(c.phase.Load()) }, c.eventf)
	defer legacy.Stop()
	stopped := false
	stopAll := func() {
		if stopped {
			return
		}
		stopped = true
		c.stop.Store(true)
		done := make(chan struct{})
		go func() { c.workers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(flowTimeout + 10*time.Second):
			t.Error("the workers did not stop")
			return
		}
		close(c.attack)
		c.attWG.Wait()
	}
	defer stopAll()
	ctx := context.Background()

	// a. Steady state.
	c.setPhase(t, 0)
	c.waitCompleted(t, 1, 100, "steady state")

	// b. kill -9 one instance; nginx's passive checks and the health loop
	// take it out, the client's leg retries carry the legs it held; then
	// it starts again on its address and rejoins.
	c.setPhase(t, 1)
	if err := f1.Kill("b"); err != nil {
		t.Fatal(err)
	}
	if err := f1.WaitPool(ctx, "b", false); err != nil {
		t.Fatal(err)
	}
	c.waitCompleted(t, 1, 10, "one instance killed")
	if err := f1.Restart("b"); err != nil {
		t.Fatal(err)
	}
	if err := f1.WaitPool(ctx, "b", true); err != nil {
		t.Fatal(err)
	}
	c.waitCompleted(t, 1, 10, "the killed instance restarted")

	// b'. A rolling restart: each instance drained (SIGTERM), out of the
	// pool, started again, back in.
	c.setPhase(t, 2)
	if err := f1.RollingRestart(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitCompleted(t, 1, 10, "rolling restart")

	// c. Key rotation in three phases, by rewriting every key file and
	// SIGHUP: the new key verifies everywhere, then seals everywhere, and
	// once every state sealed with the old key has expired, the old key
	// goes.
	c.setPhase(t, 3)
	k2 := requeststate.GenerateKey()
	for i, keys := range [][][]byte{{k1, k2}, {k2, k1}, {k2}} {
		if i == 2 {
			time.Sleep(chaosTTL + 500*time.Millisecond) // one state TTL after the new key seals everywhere
		}
		if err := f1.RotateKeys(keys); err != nil {
			t.Fatal(err)
		}
		if err := f1.WaitKeys(ctx, keys); err != nil {
			t.Fatal(err)
		}
		t.Logf("%6.2fs rotation phase %d: every instance uses %v", time.Since(c.start).Seconds(), i+1, KeyIDs(keys))
		c.waitCompleted(t, 1, 10, fmt.Sprintf("rotation phase %d", i+1))
	}

	// d. The store restarted empty (no persistence): whether the states
	// issued before the restart were used died with it, so they are
	// refused and their flows start again.
	legacy.Stop()
	c.setPhase(t, 4)
	before := c.lastCompleted(1, 20)
	// Down long enough that legs meet it: the instances deny guarded legs
	// with 503 (the clients retry them) until it is back.
	c.restartStore(t, store, aof, func() error {
		if err := waitFor(5*time.Second, func() error {
			if n := countLog(f1, "requestState single-use store unavailable"); n < 3 {
				return fmt.Errorf("%d legs denied", n)
			}
			return nil
		}); err != nil {
			t.Logf("the store was down without denying legs: %v", err)
		}
		t.Logf("%6.2fs the store is down", time.Since(c.start).Seconds())
		return nil
	})
	t.Logf("%6.2fs the store restarted empty", time.Since(c.start).Seconds())
	replayer := c.newClient(f1.URL)
	defer replayer.Close()
	for _, fl := range before {
		c.replay(replayer, fl) // refused, every one: identical or not
	}
	c.waitCompleted(t, 1, 20, "after the store restart")

	// d'. The store restarted from an older AOF (a backup restored, the
	// last writes lost): the file brings back the generation record of
	// the process that wrote it, and no record of the states used since
	// the copy. Replayed at once after the restart, with other answers,
	// none of them may be accepted.
	c.setPhase(t, 5)
	backup := filepath.Join(dir, "aof-backup")
	if err := os.CopyFS(backup, os.DirFS(aof)); err != nil {
		t.Fatal(err)
	}
	copied := time.Now()
	c.waitCompleted(t, 1, 20, "after the AOF copy")
	var usedSince []*flow
	for _, fl := range c.lastCompleted(1, 40) {
		fl.mu.Lock()
		if fl.got1.After(copied) {
			usedSince = append(usedSince, fl)
		}
		fl.mu.Unlock()
	}
	c.restartStore(t, store, aof, func() error { return os.CopyFS(aof, os.DirFS(backup)) })
	t.Logf("%6.2fs the store restarted from the AOF copied %.2fs before; replaying %d flows used since", time.Since(c.start).Seconds(), time.Since(copied).Seconds(), len(usedSince))
	if len(usedSince) == 0 {
		t.Fatal("no flow used its states after the AOF copy")
	}
	replayer3 := c.newClient(f1.URL)
	defer replayer3.Close()
	acceptedBefore := c.stats[5].replaysAccepted.Load()
	for _, fl := range usedSince {
		c.replay(replayer3, fl) // refused, every one: the claim checks the process it runs on
	}
	restoreReplays, restoreAccepted := 2*len(usedSince), c.stats[5].replaysAccepted.Load()-acceptedBefore
	c.waitCompleted(t, 1, 20, "after the restore from an older AOF")

	// e. A second fleet on a Sentinel group (one primary, two replicas,
	// three sentinels), each record acknowledged by a replica (WAIT)
	// before it counts; the primary is killed and the replica with the
	// most of its writes promoted; the other follows it, so that the new
	// primary has a replica to acknowledge.
	// (Fleet 1 keeps serving while fleet 2 starts.)
	c.setPhase(t, 6)
	waitReplicas(t, grp, spare, 2)
	k3 := requeststate.GenerateKey()
	f2, err := Start(Config{Self: os.Args[0], Dir: mkdir(t, dir, "fleet2"), Instances: 3,
		Sentinels: grp.SentinelAddrs, Master: grp.Master, GuardReplicas: 1,
		StateTTL: failoverTTL, GuardLease: chaosLease, DrainTimeout: 10 * time.Second, Keys: [][]byte{k3},
		Ledger: ledger, HealthInterval: 100 * time.Millisecond, Logger: logger.With("fleet", 2)})
	if err != nil {
		t.Fatal(err)
	}
	fleets = append(fleets, f2)
	t.Cleanup(f2.Close)
	t.Logf("%6.2fs fleet 2 started; new flows go to it", time.Since(c.start).Seconds())
	c.target.Store(&target{f2.URL, 2})
	c.waitCompleted(t, 2, 20, "fleet 2 before the failover")
	before = c.lastCompleted(2, 20)
	promoted := failOver(t, grp, spare)
	t.Logf("%6.2fs the Sentinel group failed over to %s", time.Since(c.start).Seconds(), promoted)
	c.waitCompleted(t, 2, 20, "fleet 2 after the failover")
	replayer2 := c.newClient(f2.URL)
	defer replayer2.Close()
	for _, fl := range before {
		c.replay(replayer2, fl) // identical: the recorded outcome (it was acknowledged by a replica); other answers: refused
	}

	stopAll()

	shown := 0
	errorf := func(format string, args ...any) { // the first 30 problems in full
		if shown++; shown <= 30 {
			t.Errorf(format, args...)
		} else {
			t.Fail()
		}
	}

	// The ledger: one line per execution of a last leg.
	b, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	type execution struct {
		instance string
		pid      int
		line     int
	}
	runs := map[string][]execution{}
	byPID := map[int][]int{} // the ledger lines each process wrote
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var name, id string
		var pid int
		if _, err := fmt.Sscanf(line, "%s %s %d", &name, &id, &pid); err != nil {
			errorf("ledger line %q: %v", line, err)
			continue
		}
		runs[name] = append(runs[name], execution{id, pid, i})
		byPID[pid] = append(byPID[pid], i)
	}
	// inFlightAtKill: a line among the last ones a killed process wrote,
	// one per worker at most: a last leg that may have been running when
	// the process died.
	inFlightAtKill := func(e execution) bool {
		lines := byPID[e.pid]
		return fleets[0].Killed(e.pid) && slices.Contains(lines[max(0, len(lines)-chaosWorkers):], e.line)
	}
	c.mu.Lock()
	flows := append([]*flow(nil), c.flows...)
	c.mu.Unlock()
	duplicates, crashReruns, sideEffectsMissing := 0, 0, 0
	for _, fl := range flows {
		fl.mu.Lock()
		done, ferr := fl.done, fl.err
		fl.mu.Unlock()
		r := runs[fl.name]
		delete(runs, fl.name)
		if !done {
			c.stats[fl.phase].lost.Add(1)
			errorf("flow %s (fleet %d, phase %s) lost: %v (its last leg ran %d times)", fl.name, fl.fleet, phaseNames[fl.phase], ferr, len(r))
			continue
		}
		switch {
		case len(r) == 1:
		case len(r) == 0:
			sideEffectsMissing++
			errorf("flow %s completed without its side effect", fl.name)
		case len(r) == 2 && fl.fleet == 1 && inFlightAtKill(r[0]):
			// The last leg ran on an instance killed before it recorded
			// its outcome: the lease ran out and the retry ran it again.
			// At least once, never twice at the same time: documented.
			crashReruns++
			t.Logf("flow %s: its last leg ran on a killed instance (%s pid %d) and again on %v (at least once after a crash)", fl.name, r[0].instance, r[0].pid, r[1:])
		default:
			duplicates++
			c.stats[fl.phase].replaysAccepted.Add(1)
			errorf("flow %s: its side effect happened %d times: %v", fl.name, len(r), r)
		}
	}
	// The 2025 sessions' calls: each completed one provisioned, once
	// unless an attempt of it failed in flight (its instance died after
	// the side effect: the call was made again).
	for name := range legacy.done {
		if len(runs[name]) == 0 {
			errorf("2025 call %s completed without its side effect", name)
		}
	}
	for name, r := range runs {
		if !strings.HasPrefix(name, "legacy") {
			continue
		}
		delete(runs, name)
		if len(r) > 1 && !legacy.failed[name] {
			errorf("2025 call %s: its side effect happened %d times without a failed attempt: %v", name, len(r), r)
		}
		if !legacy.done[name] && !legacy.failed[name] {
			errorf("2025 call %s provisioned by no attempt the driver made", name)
		}
	}
	for name, r := range runs {
		errorf("ledger names %s (%d times), which no flow provisioned", name, len(r))
	}

	// Figures: in the test log, and in FLEET_CHAOS_REPORT when set (make
	// check prints that file, since go test shows no log of a passing
	// test).
	var report strings.Builder
	figure := func(format string, args ...any) {
		t.Helper()
		t.Logf(format, args...)
		fmt.Fprintf(&report, format+"\n", args...)
	}
	defer func() {
		if path := os.Getenv("FLEET_CHAOS_REPORT"); path != "" {
			os.WriteFile(path, []byte(report.String()), 0o644)
		}
	}()
	var total phaseStats
	for i := range c.stats {
		s := &c.stats[i]
		figure("chaos phase %-32s started %4d  completed %4d  restarted after the store lost its records %3d  "+
			"legitimate rounds rejected %d  replays refused %4d  identical replays answered %3d  identical replays refused (record gone) %3d  "+
			"identical replays refused (record expected) %d  replays accepted %d  replays unanswered %d  legs resent by the client %d  first legs resent %d  flows lost %d",
			phaseNames[i], s.started.Load(), s.completed.Load(), s.storeLossRestarts.Load(), s.legitRejected.Load(),
			s.replaysRefused.Load(), s.identicalAnswered.Load(), s.identicalRefused.Load(), s.identicalUnexpected.Load(),
			s.replaysAccepted.Load(), s.replaysUnanswered.Load(), s.clientResends.Load(), s.firstLegResends.Load(), s.lost.Load())
		for _, p := range []struct{ sum, v *atomic.Int64 }{
			{&total.started, &s.started}, {&total.completed, &s.completed}, {&total.storeLossRestarts, &s.storeLossRestarts},
			{&total.legitRejected, &s.legitRejected}, {&total.replaysAccepted, &s.replaysAccepted}, {&total.lost, &s.lost},
			{&total.identicalUnexpected, &s.identicalUnexpected}, {&total.identicalAnswered, &s.identicalAnswered},
			{&total.replaysRefused, &s.replaysRefused},
		} {
			p.sum.Add(p.v.Load())
		}
	}
	figure("chaos total: started %d, completed %d, restarted after the store lost its records %d, legitimate rounds rejected %d, "+
		"replays refused %d, identical replays answered %d, replays accepted %d, flows lost %d, last legs re-run after a crash %d, "+
		"wall %.1fs",
		total.started.Load(), total.completed.Load(), total.storeLossRestarts.Load(), total.legitRejected.Load(),
		total.replaysRefused.Load(), total.identicalAnswered.Load(), total.replaysAccepted.Load(), total.lost.Load(), crashReruns,
		time.Since(c.start).Seconds())
	figure("chaos phase d': %d of %d replays (other answers) of states used after the AOF copy accepted, sent as soon as the store was back",
		restoreAccepted, restoreReplays)
	for i, f := range fleets {
		figure("chaos fleet %d: %s", i+1, fleetFigures(f))
	}
	legacyLines, lt := legacy.figures(phaseNames)
	for _, l := range legacyLines {
		figure("chaos %s", l)
	}
	t.Logf("events (the first 200):\n%s", c.events.String())

	if n := total.legitRejected.Load(); n != 0 {
		t.Errorf("%d legitimate rounds rejected (ErrInvalidRequestState outside the store-loss window)", n)
	}
	if n := total.replaysAccepted.Load(); n != 0 {
		t.Errorf("%d replays accepted (%d duplicate side effects)", n, duplicates)
	}
	if n := total.identicalUnexpected.Load(); n != 0 {
		t.Errorf("%d identical replays refused while their record should be there", n)
	}
	if n := total.lost.Load(); n != 0 {
		t.Errorf("%d flows lost", n)
	}
	if sideEffectsMissing != 0 || total.completed.Load() == 0 {
		t.Errorf("%d completed flows without a side effect, %d completed in all", sideEffectsMissing, total.completed.Load())
	}
	if lt.sessionsLost.Load() != 0 || lt.answersLost.Load() != 0 || lt.slowFailures.Load() != 0 || lt.duplicateEvents.Load() != 0 {
		t.Errorf("2025 sessions: %d lost, %d answers lost, %d calls that failed slowly (over %v), %d events seen twice on resumed streams",
			lt.sessionsLost.Load(), lt.answersLost.Load(), lt.slowFailures.Load(), legacyFailFast, lt.duplicateEvents.Load())
	}
	if lt.completed.Load() == 0 || lt.notified.Load() == 0 || lt.resumes.Load() == 0 {
		t.Errorf("2025 sessions: %d calls completed, %d notifications, %d GET streams resumed: the sessions showed nothing",
			lt.completed.Load(), lt.notified.Load(), lt.resumes.Load())
	}
	// A notification sent while the instance holding the stream is
	// killed, or drained, may go with it (docs/design/fleet.md, "2025
	// sessions in a fleet": what the holder has not written reaches no
	// other instance): the figures above show how many. Resource updates
	// cross instances through the Fanout, which is best effort (Redis
	// pub/sub; mcp/fanout.go), so a missing one is reported, not failed:
	// in the steady state and through the key rotation runs here have
	// shown 0 or 1 of about 100, each a 10 s wait for an update that
	// never came (an open question, in docs/design/fleet.md's limits).
	for _, i := range []int{0, 3} {
		if n := legacy.stats[i].notificationsMissing.Load(); n != 0 {
			t.Logf("2025 sessions: %d notifications missing in phase %s (best effort)", n, phaseNames[i])
		}
	}
	if c.stats[4].storeLossRestarts.Load() == 0 && c.stats[4].identicalRefused.Load() == 0 {
		t.Error("the store restart refused nothing: the phase showed nothing")
	}
	if c.stats[5].replaysRefused.Load() == 0 {
		t.Error("the restore from an older AOF refused no replay: the phase showed nothing")
	}
	if c.stats[6].identicalAnswered.Load() == 0 {
		t.Error("no identical replay was answered in the failover phase")
	}
}

// resendCounter counts the client's "sending the leg again" records and
// passes its errors on.
type resendCounter struct {
	c    *chaos
	next slog.Handler
}

func (h *resendCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *resendCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "mcp: sending the leg again" {
		h.c.st().clientResends.Add(1)
	}
	if r.Level >= slog.LevelError {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *resendCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &resendCounter{c: h.c, next: h.next.WithAttrs(as)}
}

func (h *resendCounter) WithGroup(name string) slog.Handler {
	return &resendCounter{c: h.c, next: h.next.WithGroup(name)}
}

// fleetFigures reads what nginx and the instances logged: requests nginx
// sent to another instance after a failure, 5xx answers that reached the
// clients, and the reasons instances gave for refusing states.
func fleetFigures(f *Fleet) string {
	retried, failed := 0, 0
	if b, err := os.ReadFile(f.AccessLog); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			fields := strings.SplitN(line, " ", 3)
			if len(fields) < 3 {
				continue
			}
			if strings.Contains(fields[2], ", ") {
				retried++
			}
			if fields[1] >= "500" {
				failed++
			}
		}
	}
	reasons := map[string]int{}
	drains, unrecorded := 0, 0
	unavailable := map[string]int{}
	for _, id := range f.IDs() {
		b, _ := os.ReadFile(f.LogFile(id))
		for _, line := range bytes.Split(b, []byte("\n")) {
			var rec struct {
				Msg     string `json:"msg"`
				Reason  string `json:"reason"`
				Err     string `json:"err"`
				Drained *bool  `json:"drained"`
			}
			if json.Unmarshal(line, &rec) != nil {
				continue
			}
			switch {
			case strings.HasPrefix(rec.Msg, "requestState rejected"):
				reasons[rec.Reason]++
			case rec.Msg == "stopped" && rec.Drained != nil && *rec.Drained:
				drains++
			case strings.HasPrefix(rec.Msg, "requestState single-use store unavailable"):
				// The cause, without addresses: "dial tcp ...: connect:
				// connection refused" reads "connection refused".
				cause := rec.Err
				if i := strings.LastIndex(cause, ": "); i >= 0 {
					cause = cause[i+2:]
				}
				unavailable[cause]++
			case strings.HasPrefix(rec.Msg, "requestState single-use store: recording the outcome failed"):
				unrecorded++
			}
		}
	}
	list := func(m map[string]int) string {
		var rs []string
		for r, n := range m {
			rs = append(rs, fmt.Sprintf("%q %d", r, n))
		}
		slices.Sort(rs)
		return "[" + strings.Join(rs, ", ") + "]"
	}
	return fmt.Sprintf("nginx reloads %d, requests nginx sent to another instance %d, 5xx answers to clients %d, clean drains %d, "+
		"outcomes not recorded %d; legs denied while the store was unreachable, by cause: %s; states refused by reason: %s",
		f.Reloads(), retried, failed, drains, unrecorded, list(unavailable), list(reasons))
}

// failOver kills the group's primary and waits until the sentinels
// promoted one of the two replicas (whichever has the most of the
// primary's writes, so a write one replica acknowledged survives) and
// the other replica follows it. (The group's own FailOver expects one
// replica by name; with two, Sentinel picks.) It returns the new
// primary's address.
func failOver(t *testing.T, g *redistest.Sentinel, spare *redistest.Server) string {
	t.Helper()
	old := "127.0.0.1:" + strconv.Itoa(g.Primary.Port)
	g.Primary.Kill()
	// Generous: a failed election is tried again only after twice the
	// group's failover-timeout (10 s), which a loaded machine may need.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := redis.NewSentinelClient(&redis.Options{Addr: g.SentinelAddrs[0]})
	defer sc.Close()
	for {
		if a, err := sc.GetMasterAddrByName(ctx, g.Master).Result(); err == nil && len(a) == 2 && a[0]+":"+a[1] != old {
			addr := a[0] + ":" + a[1]
			promoted, other := g.Replica, spare
			if "127.0.0.1:"+strconv.Itoa(spare.Port) == addr {
				promoted, other = spare, g.Replica
			}
			if "127.0.0.1:"+strconv.Itoa(promoted.Port) != addr {
				t.Fatalf("the sentinels promoted %s, neither replica", addr)
			}
			if role, _ := promoted.Client().Do(ctx, "ROLE").Slice(); len(role) > 0 && role[0] == "master" {
				// The other replica must follow the new primary before a
				// write can be acknowledged (Replicas: 1). Sentinel sees to
				// it, but on a loaded machine that took up to 20 s in our
				// runs: do what an operator's runbook does, and point it
				// there now (a no-op when Sentinel was first).
				oc := other.Client()
				if err := oc.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(promoted.Port)).Err(); err != nil {
					t.Logf("REPLICAOF on the other replica: %v", err)
				}
				for ctx.Err() == nil {
					if info, _ := oc.Info(ctx, "replication").Result(); strings.Contains(info, "master_link_status:up") &&
						strings.Contains(info, "master_port:"+strconv.Itoa(promoted.Port)) {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				return addr
			}
		}
		if ctx.Err() != nil {
			var b strings.Builder
			for _, a := range g.SentinelAddrs {
				s := redis.NewSentinelClient(&redis.Options{Addr: a})
				m, err := s.Master(context.Background(), g.Master).Result()
				rs, _ := s.Replicas(context.Background(), g.Master).Result()
				s.Close()
				fmt.Fprintf(&b, "sentinel %s: master %v %v; replicas %v\n", a, m, err, rs)
			}
			t.Fatalf("no failover within 60 s:\n%s", b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTail is the end of an instance's log, without the provisioning
// records (one per last leg: most of it).
func logTail(path string, max int) string {
	b, _ := os.ReadFile(path)
	var keep [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"msg":"provisioning"`)) {
			keep = append(keep, line)
		}
	}
	out := bytes.Join(keep, []byte("\n"))
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return string(out)
}

// countLog counts the records of f's instances whose message starts
// with prefix.
func countLog(f *Fleet, prefix string) int {
	n := 0
	for _, id := range f.IDs() {
		b, _ := os.ReadFile(f.LogFile(id))
		n += bytes.Count(b, []byte(`"msg":"`+prefix))
	}
	return n
}

// waitReplicas waits until the sentinels know n replicas of the group's
// primary and spare's link to it is up.
func waitReplicas(t *testing.T, g *redistest.Sentinel, spare *redistest.Server, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc := spare.Client()
	for {
		info, _ := sc.Info(ctx, "replication").Result()
		known := 0
		for _, a := range g.SentinelAddrs {
			s := redis.NewSentinelClient(&redis.Options{Addr: a})
			if rs, err := s.Replicas(ctx, g.Master).Result(); err == nil && len(rs) >= n {
				known++
			}
			s.Close()
		}
		if known == len(g.SentinelAddrs) && strings.Contains(info, "master_link_status:up") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the second replica did not join the group: %s", info)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
