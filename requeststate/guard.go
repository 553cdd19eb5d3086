package requeststate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Guard makes sealed states single-use while keeping a lost answer
// retryable. The spec leaves consumption to the server: a sealed state
// is only integrity-protected and may be replayed until it expires. A
// Guard records each accepted state together with a digest of the rest
// of the leg that carried it (the answers), so that:
//
//   - the first leg with a state runs (Verdict First) and its outcome is
//     recorded with Finish;
//   - a retry of the identical leg (same state, same answers) gets the
//     recorded outcome again instead of running twice (Verdict Replay),
//     or, while the first is still running, is asked to come back later
//     (Verdict Busy);
//   - any other leg with that state is refused (Verdict Conflict: its
//     record holds other answers; or Refused), as is a state issued
//     before the guard's store last lost its records (a store restarted
//     empty, see Generation).
//
// The mcp package also keys the first legs of tools that take an
// idempotency key through the same Guard (a Leg whose Token names the
// principal, tool and key, and whose Answers digest the arguments): a
// guard needs nothing more for it.
//
// A running leg holds a lease (Begin, renewed with Renew while it runs);
// if its instance dies, the lease expires and an identical retry runs it
// again (at least once, never twice concurrently). Errors mean the store
// is unavailable: the caller must deny the leg, but with a retryable
// answer, not as a forged state.
type Guard interface {
	// Begin claims leg. It returns the verdict; an error means the
	// store could not be asked (deny, retryable).
	Begin(ctx context.Context, leg *Leg) (Verdict, error)
	// Renew extends the lease of a leg Begin returned First for.
	Renew(ctx context.Context, leg *Leg) error
	// Finish records the outcome of a leg Begin returned First for, so
	// that an identical retry is answered with it. A nil outcome
	// releases the claim instead (the leg did not finish: an identical
	// retry runs it again). An outcome longer than the guard's limit is
	// not kept: identical retries are then refused.
	Finish(ctx context.Context, leg *Leg, outcome []byte) error
}

// Preparer is implemented by guards whose store must record its
// generation before states are issued (see redisguard.Guard.Prepare).
// The mcp package calls Prepare before it seals the first state of a
// guarded flow, and again (at most once a second) until it succeeds.
type Preparer interface {
	Prepare(ctx context.Context) error
}

// Leg identifies one use of a state.
type Leg struct {
	// Token is the sealed state as received.
	Token string
	// Answers is a digest of everything else the leg carries that can
	// change its outcome (the inputResponses): two legs with the same
	// Token and Answers are the same leg.
	Answers [16]byte
	// IssuedAt and ExpiresAt are the state's claims.
	IssuedAt, ExpiresAt time.Time
	// Owner is set by Begin for a First verdict (a random value naming
	// this holder of the lease); Renew and Finish act only for it.
	Owner [16]byte

	id string
}

// ID is the key a guard stores for the leg's token: a digest, so that a
// store never holds usable tokens.
func (l *Leg) ID() string {
	if l.id == "" {
		l.id = TokenID(l.Token)
	}
	return l.id
}

// VerdictKind says what Begin decided.
type VerdictKind uint8

const (
	// Refused: the state was used by another leg, or predates the
	// store's current generation. The caller rejects it like a forged
	// one.
	Refused VerdictKind = iota
	// First: the leg runs; call Finish (or Renew while it runs).
	First
	// Replay: an identical leg finished; Outcome is what it recorded.
	Replay
	// Busy: an identical leg is running; retry after RetryAfter.
	Busy
	// Conflict: the token's record holds other answers (a state used
	// by another leg, an idempotency key sent with other arguments). A
	// caller that does not tell the two apart treats it as Refused.
	Conflict
)

// Verdict is Begin's answer.
type Verdict struct {
	Kind VerdictKind
	// Outcome is the recorded outcome of a Replay.
	Outcome []byte
	// RetryAfter is how long a Busy leg should wait.
	RetryAfter time.Duration
	// Lease is how long a First leg holds its claim without Renew.
	Lease time.Duration
	// Reason says why a leg was Refused, for logs only.
	Reason string
}

// Default bounds of a guard.
const (
	// DefaultLease is how long a running leg holds its claim without a
	// Renew; an identical retry after that runs it again.
	DefaultLease = 10 * time.Second
	// DefaultMaxOutcomeBytes bounds a recorded outcome.
	DefaultMaxOutcomeBytes = 64 << 10
)

// ErrStoreUnavailable matches errors of a guard whose store cannot be
// reached or did not confirm a write.
var ErrStoreUnavailable = errors.New("requeststate: single-use store unavailable")

// TokenID is the key a guard stores for a token: a digest, so that a
// store never holds usable tokens.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// MemoryGuard is an in-process Guard. Entries are dropped once their
// state has expired. Its generation is its creation: a state issued
// before the guard existed (by an earlier process sharing the keys) is
// refused, since the record of its uses died with that process. It
// suits a single process; a fleet shares a guard through a store (see
// package redisguard).
type MemoryGuard struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Lease bounds a claim without Renew; zero means DefaultLease.
	Lease time.Duration
	// MaxOutcomeBytes bounds a recorded outcome; zero means
	// DefaultMaxOutcomeBytes.
	MaxOutcomeBytes int
	// MaxEntries, when positive, bounds the records held: a new token
	// past it, once the expired ones are dropped, is not claimed (Begin
	// fails with ErrStoreUnavailable, a retryable denial); identical
	// retries of recorded legs are still answered.
	MaxEntries int

	mu    sync.Mutex
	born  time.Time
	seen  map[string]*memEntry
	sweep int
}

type memEntry struct {
	answers [16]byte
	expires time.Time
	owner   [16]byte
	lease   time.Time // while running
	done    bool
	kept    bool // the outcome was small enough to keep
	outcome []byte
}

// NewMemoryGuard returns an empty guard whose generation starts now.
func NewMemoryGuard() *MemoryGuard {
	return &MemoryGuard{seen: map[string]*memEntry{}, born: time.Now()}
}

func (g *MemoryGuard) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *MemoryGuard) lease() time.Duration {
	if g.Lease > 0 {
		return g.Lease
	}
	return DefaultLease
}

// Begin implements Guard.
func (g *MemoryGuard) Begin(_ context.Context, leg *Leg) (Verdict, error) {
	t := g.now()
	if !t.Before(leg.ExpiresAt) {
		return Verdict{Reason: "expired"}, nil
	}
	id := leg.ID()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]*memEntry{}
	}
	if g.born.IsZero() {
		g.born = t
	}
	if leg.IssuedAt.Before(g.born.Truncate(time.Millisecond)) {
		return Verdict{Reason: "issued before the guard's generation"}, nil
	}
	if g.sweep++; g.sweep >= 1024 {
		g.sweep = 0
		g.dropExpired(t)
	}
	e := g.seen[id]
	if e != nil && !t.Before(e.expires) {
		e = nil
	}
	switch {
	case e == nil:
		if g.MaxEntries > 0 && len(g.seen) >= g.MaxEntries {
			g.dropExpired(t)
			if len(g.seen) >= g.MaxEntries {
				return Verdict{}, fmt.Errorf("%w: the memory guard holds its %d entries", ErrStoreUnavailable, g.MaxEntries)
			}
		}
		e = &memEntry{answers: leg.Answers, expires: leg.ExpiresAt}
		g.seen[id] = e
	case e.answers != leg.Answers:
		return Verdict{Kind: Conflict, Reason: "state already used"}, nil
	case e.done && !e.kept:
		return Verdict{Reason: "state already used (outcome not kept)"}, nil
	case e.done:
		return Verdict{Kind: Replay, Outcome: e.outcome}, nil
	case t.Before(e.lease):
		return Verdict{Kind: Busy, RetryAfter: e.lease.Sub(t)}, nil
	}
	// New, or a running leg whose lease ran out: this leg takes it.
	leg.Owner = newOwner()
	e.owner, e.lease = leg.Owner, t.Add(g.lease())
	return Verdict{Kind: First, Lease: g.lease()}, nil
}

func (g *MemoryGuard) dropExpired(t time.Time) {
	for k, e := range g.seen {
		if !t.Before(e.expires) {
			delete(g.seen, k)
		}
	}
}

// Renew implements Guard.
func (g *MemoryGuard) Renew(_ context.Context, leg *Leg) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.seen[leg.ID()]; e != nil && e.owner == leg.Owner && !e.done {
		e.lease = g.now().Add(g.lease())
	}
	return nil
}

// Finish implements Guard.
func (g *MemoryGuard) Finish(_ context.Context, leg *Leg, outcome []byte) error {
	max := g.MaxOutcomeBytes
	if max <= 0 {
		max = DefaultMaxOutcomeBytes
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.seen[leg.ID()]
	if e == nil || e.owner != leg.Owner || e.done {
		return nil
	}
	if outcome == nil {
		delete(g.seen, leg.ID())
		return nil
	}
	e.done = true
	if len(outcome) <= max {
		e.kept, e.outcome = true, append([]byte{}, outcome...)
	}
	return nil
}

// Len reports how many tokens the guard holds (expired ones may linger
// until the next sweep).
func (g *MemoryGuard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

// NewOwner returns a random lease owner, for guard implementations.
func NewOwner() [16]byte { return newOwner() }

func newOwner() (o [16]byte) {
	rand.Read(o[:]) // never fails (crypto/rand)
	return o
}

var _ Guard = (*MemoryGuard)(nil)
