package requeststate

import (
	"context"
	"errors"
	"testing"
	"time"
)

func memGuard(c *clock) *MemoryGuard {
	g := NewMemoryGuard()
	g.Now = c.now
	g.born = c.t.Add(-time.Hour)
	return g
}

func testLeg(tok string, answers byte, c *clock) *Leg {
	return &Leg{Token: tok, Answers: [16]byte{answers}, IssuedAt: c.t, ExpiresAt: c.t.Add(time.Minute)}
}

func begin(t *testing.T, g Guard, l *Leg) Verdict {
	t.Helper()
	v, err := g.Begin(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGuardRefusesAnotherLegWithAUsedState(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := memGuard(c)
	first := testLeg("tok", 1, c)
	if v := begin(t, g, first); v.Kind != First {
		t.Fatalf("first use: %+v", v)
	}
	g.Finish(context.Background(), first, []byte("outcome"))
	if v := begin(t, g, testLeg("tok", 2, c)); v.Kind != Conflict {
		t.Fatalf("the state with other answers: %+v, want Conflict", v)
	}
	if v := begin(t, g, testLeg("other", 2, c)); v.Kind != First {
		t.Fatalf("an unrelated state: %+v", v)
	}
}

func TestGuardReplaysTheOutcomeToTheIdenticalLeg(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := memGuard(c)
	l := testLeg("tok", 1, c)
	begin(t, g, l)
	g.Finish(context.Background(), l, []byte("the answer"))
	for range 3 {
		v := begin(t, g, testLeg("tok", 1, c))
		if v.Kind != Replay || string(v.Outcome) != "the answer" {
			t.Fatalf("identical retry: %+v", v)
		}
	}
}

func TestGuardAsksTheIdenticalLegToWaitWhileTheFirstRuns(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := memGuard(c)
	g.Lease = 3 * time.Second
	begin(t, g, testLeg("tok", 1, c))
	c.t = c.t.Add(time.Second)
	v := begin(t, g, testLeg("tok", 1, c))
	if v.Kind != Busy || v.RetryAfter != 2*time.Second {
		t.Fatalf("identical leg while the first runs: %+v", v)
	}
}

func TestGuardLetsTheIdenticalLegTakeOverAnExpiredLease(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := memGuard(c)
	g.Lease = 3 * time.Second
	dead := testLeg("tok", 1, c)
	begin(t, g, dead)
	c.t = c.t.Add(2 * time.Second)
	g.Renew(context.Background(), dead) // renewed: still running at +4 s
	c.t = c.t.Add(2 * time.Second)
	if v := begin(t, g, testLeg("tok", 1, c)); v.Kind != Busy {
		t.Fatalf("renewed lease: %+v", v)
	}
	c.t = c.t.Add(2 * time.Second) // the holder died: no renewal
	retry := testLeg("tok", 1, c)
	if v := begin(t, g, retry); v.Kind != First {
		t.Fatalf("after the lease: %+v, want First", v)
	}
	// The dead holder's late Finish does not overwrite the new one's.
	g.Finish(context.Background(), dead, []byte("stale"))
	g.Finish(context.Background(), retry, []byte("fresh"))
	if v := begin(t, g, testLeg("tok", 1, c)); string(v.Outcome) != "fresh" {
		t.Fatalf("outcome %q, want the live holder's", v.Outcome)
	}
}

func TestGuardReleasedClaimRunsAgain(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := memGuard(c)
	l := testLeg("tok", 1, c)
	begin(t, g, l)
	g.Finish(context.Background(), l, nil)
	if v := begin(t, g, testLeg("tok", 2, c)); v.Kind != First {
		t.Fatalf("after a release: %+v", v)
	}
}

func TestGuardRefusesStatesIssuedBeforeItsGeneration(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := NewMemoryGuard()
	g.Now = c.now
	// NewMemoryGuard starts its generation at the real time of its
	// creation, long after the fake clock's state was issued.
	if v := begin(t, g, testLeg("tok", 1, c)); v.Kind != Refused {
		t.Fatalf("a state from before the guard existed: %+v", v)
	}
	fresh := &Leg{Token: "new", IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)}
	g.Now = nil
	if v := begin(t, g, fresh); v.Kind != First {
		t.Fatalf("a state issued since: %+v", v)
	}
}

func TestGuardDoesNotKeepOutcomesOverTheLimit(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := memGuard(c)
	g.MaxOutcomeBytes = 4
	l := testLeg("tok", 1, c)
	begin(t, g, l)
	g.Finish(context.Background(), l, []byte("too long"))
	if v := begin(t, g, testLeg("tok", 1, c)); v.Kind != Refused {
		t.Fatalf("identical retry of an unkept outcome: %+v, want Refused", v)
	}
	e := testLeg("empty", 1, c)
	begin(t, g, e)
	g.Finish(context.Background(), e, []byte{})
	if v := begin(t, g, testLeg("empty", 1, c)); v.Kind != Replay || v.Outcome == nil {
		t.Fatalf("an empty outcome is an outcome: %+v", v)
	}
}

func TestGuardForgetsExpiredStates(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := memGuard(c)
	for i := range 2000 {
		l := &Leg{Token: string(rune(i)), IssuedAt: c.t, ExpiresAt: c.t.Add(time.Second)}
		begin(t, g, l)
		g.Finish(context.Background(), l, []byte("x"))
	}
	c.t = c.t.Add(2 * time.Second)
	for i := range 1100 {
		begin(t, g, &Leg{Token: "n" + string(rune(i)), IssuedAt: c.t, ExpiresAt: c.t.Add(time.Second)})
	}
	if n := g.Len(); n > 1200 {
		t.Errorf("%d entries after the old ones expired", n)
	}
	if v := begin(t, g, &Leg{Token: "late", IssuedAt: c.t.Add(-time.Minute), ExpiresAt: c.t}); v.Kind != Refused {
		t.Errorf("an expired state: %+v", v)
	}
}

func TestMemoryGuardHoldsAtMostMaxEntries(t *testing.T) {
	c := &clock{time.Unix(100, 0)}
	g := memGuard(c)
	g.MaxEntries = 2
	a, b := testLeg("a", 1, c), testLeg("b", 1, c)
	begin(t, g, a)
	begin(t, g, b)
	g.Finish(context.Background(), a, []byte("A"))
	if _, err := g.Begin(context.Background(), testLeg("c", 1, c)); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("a third token with two held: %v, want ErrStoreUnavailable", err)
	}
	if v := begin(t, g, testLeg("a", 1, c)); v.Kind != Replay || string(v.Outcome) != "A" {
		t.Fatalf("the identical retry of a held leg: %+v, want its replay", v)
	}
	c.t = c.t.Add(time.Hour) // both expire
	if v := begin(t, g, testLeg("c", 1, c)); v.Kind != First {
		t.Fatalf("a new token once the held ones expired: %+v, want First", v)
	}
	if n := g.Len(); n != 1 {
		t.Fatalf("Len = %d after the expired entries were dropped, want 1", n)
	}
}
