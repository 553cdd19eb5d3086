package redisguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

func leg(tok string, answers byte) *requeststate.Leg {
	now := time.Now()
	return &requeststate.Leg{Token: tok, Answers: [16]byte{answers}, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}
}

// newGuard returns a guard of srv whose generation is recorded, as a
// server does at start.
func newGuard(t *testing.T, c redis.UniversalClient) *Guard {
	t.Helper()
	g := New(c)
	if err := g.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g
}

func begin(t *testing.T, g *Guard, l *requeststate.Leg) requeststate.Verdict {
	t.Helper()
	v, err := g.Begin(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// use runs a leg to completion with outcome out and reports whether it
// ran (a First verdict).
func use(t *testing.T, g *Guard, l *requeststate.Leg, out string) bool {
	t.Helper()
	v := begin(t, g, l)
	if v.Kind != requeststate.First {
		return false
	}
	if err := g.Finish(context.Background(), l, []byte(out)); err != nil {
		t.Fatal(err)
	}
	return true
}

func TestFleetSharesConsumedStates(t *testing.T) {
	srv := redistest.StartServer(t, false)
	instanceA, instanceB := newGuard(t, srv.Client()), newGuard(t, srv.Client())
	if !use(t, instanceA, leg("v1.token-one", 1), "done") {
		t.Fatal("first use refused")
	}
	if v := begin(t, instanceB, leg("v1.token-one", 2)); v.Kind != requeststate.Conflict {
		t.Fatalf("another leg with the state on another instance: %+v", v)
	}
	if v := begin(t, instanceB, leg("v1.token-one", 1)); v.Kind != requeststate.Replay || string(v.Outcome) != "done" {
		t.Fatalf("the identical leg on another instance: %+v, want the recorded outcome", v)
	}
	if !use(t, instanceB, leg("v1.token-two", 1), "x") {
		t.Error("an unrelated token was refused")
	}
	ttl, err := srv.Client().PTTL(context.Background(), "mcp:rs:"+requeststate.TokenID("v1.token-one")).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute+time.Second {
		t.Errorf("entry lifetime %v %v, want about the token's remaining minute", ttl, err)
	}
}

func TestIdenticalLegWaitsForTheRunningOneThenTakesOverAfterItsLease(t *testing.T) {
	srv := redistest.StartServer(t, false)
	g := newGuard(t, srv.Client())
	g.Lease = 300 * time.Millisecond
	dead := leg("tok", 1)
	if v := begin(t, g, dead); v.Kind != requeststate.First {
		t.Fatal(v)
	}
	v := begin(t, g, leg("tok", 1))
	if v.Kind != requeststate.Busy || v.RetryAfter <= 0 || v.RetryAfter > 300*time.Millisecond {
		t.Fatalf("while the first runs: %+v", v)
	}
	time.Sleep(v.RetryAfter + 50*time.Millisecond)
	retry := leg("tok", 1)
	if v := begin(t, g, retry); v.Kind != requeststate.First {
		t.Fatalf("after the holder's lease: %+v", v)
	}
	g.Finish(context.Background(), dead, []byte("stale")) // the old holder is ignored
	g.Finish(context.Background(), retry, []byte("fresh"))
	if v := begin(t, g, leg("tok", 1)); string(v.Outcome) != "fresh" {
		t.Fatalf("outcome %q", v.Outcome)
	}
}

func TestRenewedLeaseKeepsTheClaim(t *testing.T) {
	srv := redistest.StartServer(t, false)
	g := newGuard(t, srv.Client())
	g.Lease = 200 * time.Millisecond
	l := leg("tok", 1)
	begin(t, g, l)
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		if err := g.Renew(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	if v := begin(t, g, leg("tok", 1)); v.Kind != requeststate.Busy {
		t.Fatalf("a renewed claim was taken over: %+v", v)
	}
}

func TestReleasedClaimRunsAgain(t *testing.T) {
	srv := redistest.StartServer(t, false)
	g := newGuard(t, srv.Client())
	l := leg("tok", 1)
	begin(t, g, l)
	g.Finish(context.Background(), l, nil)
	if v := begin(t, g, leg("tok", 1)); v.Kind != requeststate.First {
		t.Fatalf("after a release: %+v", v)
	}
}

func TestOutcomesOverTheLimitAreNotKept(t *testing.T) {
	srv := redistest.StartServer(t, false)
	g := newGuard(t, srv.Client())
	g.MaxOutcomeBytes = 8
	use(t, g, leg("tok", 1), "much too long")
	if v := begin(t, g, leg("tok", 1)); v.Kind != requeststate.Refused {
		t.Fatalf("identical retry of an unkept outcome: %+v", v)
	}
}

func TestExpiredStatesAreRefusedWithoutAnEntry(t *testing.T) {
	srv := redistest.StartServer(t, false)
	g := newGuard(t, srv.Client())
	l := leg("gone", 1)
	l.ExpiresAt = time.Now().Add(-time.Second)
	if v := begin(t, g, l); v.Kind != requeststate.Refused {
		t.Fatalf("expired: %+v", v)
	}
	if n, _ := srv.Client().Exists(context.Background(), "mcp:rs:"+l.ID()).Result(); n != 0 {
		t.Error("an expired state left an entry")
	}
}

func TestUnreachableStoreIsUnavailableNotRefused(t *testing.T) {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: filepath.Join(t.TempDir(), "none.sock"), MaxRetries: -1})
	defer c.Close()
	v, err := New(c).Begin(context.Background(), leg("t", 1))
	if err == nil || !errorsIs(err, requeststate.ErrStoreUnavailable) || v.Kind == requeststate.First {
		t.Errorf("unreachable redis: %+v %v", v, err)
	}
}

// A store restarted empty must not reopen the states used before: the
// generation record refuses everything issued before the restart.
func TestStoreRestartedEmptyDoesNotReopenUsedStates(t *testing.T) {
	srv := redistest.StartServer(t, false)
	g := newGuard(t, srv.Client())
	var used []*requeststate.Leg
	for i := range 20 {
		l := leg(fmt.Sprintf("used-%d", i), 1)
		if !use(t, g, l, "ok") {
			t.Fatal("first use refused")
		}
		used = append(used, l)
	}
	srv.Restart()
	accepted := 0
	for _, l := range used {
		for _, answers := range []byte{1, 2} {
			l2 := *l
			l2.Answers = [16]byte{answers}
			v, err := g.Begin(context.Background(), &l2)
			if err != nil {
				t.Fatal(err)
			}
			if v.Kind == requeststate.First {
				accepted++
			}
		}
	}
	if accepted != 0 {
		t.Fatalf("%d of %d uses of states from before the restart were accepted", accepted, 2*len(used))
	}
	if !use(t, g, leg("issued-after", 1), "ok") {
		t.Error("a state issued after the restart was refused")
	}
}

// With a Sentinel failover (primary killed, replica promoted) and
// Replicas set, every claim was acknowledged by the replica before it
// counted: nothing used before the failover runs again after it.
func TestSentinelFailoverDoesNotReopenUsedStates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five redis processes")
	}
	grp := redistest.StartSentinel(t)
	g := newGuard(t, grp.Client())
	g.Replicas = 1
	g.ReplicaTimeout = 2 * time.Second
	var used []*requeststate.Leg
	for i := range 20 {
		l := leg(fmt.Sprintf("used-%d", i), 1)
		if !use(t, g, l, "ok") {
			t.Fatal("first use refused")
		}
		used = append(used, l)
	}
	grp.FailOver()
	g.Replicas = 0 // the promoted primary has no replica left
	ran := 0
	deadline := time.Now().Add(20 * time.Second)
	for _, l := range used {
		for _, answers := range []byte{1, 2} {
			l2 := *l
			l2.Answers = [16]byte{answers}
			for {
				v, err := g.Begin(context.Background(), &l2)
				if err != nil && time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond) // the client finding the new primary
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if v.Kind == requeststate.First {
					ran++
				}
				if answers == 1 && (v.Kind != requeststate.Replay || string(v.Outcome) != "ok") {
					t.Errorf("identical leg after the failover: %+v, want the recorded outcome", v)
				}
				break
			}
		}
	}
	if ran != 0 {
		t.Fatalf("%d of %d uses of states from before the failover ran again", ran, 2*len(used))
	}
}

func TestMissingReplicaAcknowledgementDeniesAndReleases(t *testing.T) {
	srv := redistest.StartServer(t, false)
	g := newGuard(t, srv.Client())
	g.Replicas, g.ReplicaTimeout = 1, 50*time.Millisecond // no replica exists
	l := leg("tok", 1)
	if v, err := g.Begin(context.Background(), l); err == nil || !errorsIs(err, requeststate.ErrStoreUnavailable) {
		t.Fatalf("claim without a replica: %+v %v", v, err)
	}
	g.Replicas = 0
	if v := begin(t, g, leg("tok", 1)); v.Kind != requeststate.First {
		t.Fatalf("the unacknowledged claim was not released: %+v", v)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// startedScript evaluates the generation's start estimate (the latest
// moment a store process can have started) for a clock and an uptime.
var startedScript = redis.NewScript(generationLua + `
return started(tonumber(ARGV[1]), tonumber(ARGV[2]))
`)

func TestStoreStartIsNeverUnderestimated(t *testing.T) {
	srv := redistest.StartServer(t, false)
	started := func(usec, up int64) int64 {
		t.Helper()
		n, err := startedScript.Run(context.Background(), srv.Client(), nil, usec, up).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Started at 99.9 s; at 100.2 s the store says uptime 1 (100 - 99).
	if start := started(100_200_000, 1); start < 99_900 || start > 100_200 {
		t.Fatalf("start %d, want one in [99.9 s, 100.2 s]", start)
	}
	if start := started(100_200_000, 0); start != 100_200 {
		t.Errorf("uptime 0: start %d, want now", start)
	}
	// A clock of today (2^50 µs and more) keeps its milliseconds.
	if start := started(1_750_000_000_123_456, 0); start != 1_750_000_000_123 {
		t.Errorf("today's clock: start %d, want 1750000000123", start)
	}
}

// A store restarted from an older AOF (a backup, writes lost) comes back
// with the generation record of the process that wrote the file, which
// names the process the guard last checked: a claim checked against it
// would find no record of the states used since and accept them again.
// Every claim checks the process it runs on, so the window is zero: 0 of
// the states used after the copy are accepted again, with other answers
// or the same.
func TestStoreRestoredFromAnOlderAOFDoesNotReopenUsedStates(t *testing.T) {
	srv := redistest.StartServer(t, false, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	if v, err := srv.Client().ConfigGet(ctx, "appendonly").Result(); err != nil || v["appendonly"] != "yes" {
		t.Fatalf("appendonly %v %v", v, err)
	}
	g := newGuard(t, srv.Client())
	g.GenerationCheck = time.Hour // ignored now; before, the window lasted as long as this
	var used []*requeststate.Leg
	for i := range 10 {
		l := leg(fmt.Sprintf("in-the-backup-%d", i), 1)
		if !use(t, g, l, "ok") {
			t.Fatal("first use refused")
		}
		used = append(used, l)
	}
	aof := filepath.Join(srv.Dir(), "appendonlydir")
	backup := filepath.Join(t.TempDir(), "appendonlydir")
	copyDir(t, aof, backup)
	run, err := srv.Client().HGet(ctx, "mcp:rs:gen", "run").Result()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		l := leg(fmt.Sprintf("after-the-backup-%d", i), 1)
		if !use(t, g, l, "ok") {
			t.Fatal("first use refused")
		}
		used = append(used, l)
	}
	srv.Kill()
	if err := os.RemoveAll(aof); err != nil {
		t.Fatal(err)
	}
	copyDir(t, backup, aof)
	srv.Restart()
	c := srv.Client()
	if got, _ := c.HGet(ctx, "mcp:rs:gen", "run").Result(); got != run {
		t.Fatalf("restored generation record names %q, want the old process %q", got, run)
	}
	if n, _ := c.Exists(ctx, "mcp:rs:"+used[0].ID()).Result(); n != 1 {
		t.Fatal("the backup's records did not come back")
	}
	accepted := 0
	for _, l := range used {
		for _, answers := range []byte{2, 1} {
			l2 := *l
			l2.Answers = [16]byte{answers}
			v, err := g.Begin(ctx, &l2)
			if err != nil {
				t.Fatal(err)
			}
			if v.Kind == requeststate.First || v.Kind == requeststate.Replay && answers != 1 {
				accepted++
			}
		}
	}
	if accepted != 0 {
		t.Fatalf("%d of %d uses of states used before the restart were accepted", accepted, 2*len(used))
	}
	if !use(t, g, leg("issued-after", 1), "ok") {
		t.Error("a state issued after the restart was refused")
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}
