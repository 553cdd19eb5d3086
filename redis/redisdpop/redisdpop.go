// Package redisdpop is an auth.ReplayCache kept in Redis, so that a
// fleet of resource servers shares the record of the DPoP proofs it
// accepted (RFC 9449 section 11.1): a proof accepted by one instance is
// refused by every other. Set it as auth.DPoPVerifyOptions.ReplayCache
// on every instance.
//
// Each proof is one key under Prefix (the cache key RequireBearer
// derives from the proof's key and jti: a base64url SHA-256, bounded),
// written with SET NX and an expiry, so that it lives as long as the
// proof could still be accepted by its age and no longer. Expiries are
// relative (PX), so the store's clock does not matter.
//
// # Durability
//
// Single use holds as long as the keys do. A store that fails cannot be
// asked, and the request is refused (503, fail closed): the client
// sends a new proof later. A store restarted empty (no persistence)
// forgets the proofs of the last MaxAge (auth.DPoPVerifyOptions, five
// minutes by default): those could be replayed until they are too old.
// Run it with persistence (appendonly) or accept that window. A failover
// to a replica (Redis Sentinel) may lose the last writes, since
// replication is asynchronous: set Replicas to have every write
// acknowledged by that many replicas (WAIT) before the proof is
// accepted; without enough acknowledgements within ReplicaTimeout the
// request is refused as unavailable.
package redisdpop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/auth"
)

// ReplayCache records accepted DPoP proofs in Redis.
type ReplayCache struct {
	// Client is the store.
	Client redis.UniversalClient
	// Prefix namespaces the keys; empty means "mcp:dpop:".
	Prefix string
	// Timeout bounds one round trip to the store; zero means 500 ms. A
	// store slower than this refuses the request (503).
	Timeout time.Duration
	// Replicas, when positive, is how many replicas must acknowledge
	// each write (WAIT) before the proof is accepted.
	Replicas int
	// ReplicaTimeout bounds that wait; zero means 500 ms.
	ReplicaTimeout time.Duration
}

// New returns a replay cache on the store c.
func New(c redis.UniversalClient) *ReplayCache { return &ReplayCache{Client: c} }

var _ auth.ReplayCache = (*ReplayCache)(nil)

// ErrUnavailable is wrapped by the errors of FirstUse: the store could
// not be asked, or too few replicas acknowledged the write.
var ErrUnavailable = errors.New("redisdpop: the replay cache is unavailable")

// FirstUse implements auth.ReplayCache: SET NX with the time left until
// until as the expiry (one millisecond at least).
func (c *ReplayCache) FirstUse(ctx context.Context, id string, until time.Time) (bool, error) {
	prefix := c.Prefix
	if prefix == "" {
		prefix = "mcp:dpop:"
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}
	ttl := max(time.Until(until), time.Millisecond)
	ctx, cancel := context.WithTimeout(ctx, timeout+c.replicaTimeout())
	defer cancel()
	pipe := c.Client.Pipeline()
	set := pipe.SetNX(ctx, prefix+id, "1", ttl)
	var wait *redis.Cmd
	if c.Replicas > 0 {
		wait = pipe.Do(ctx, "WAIT", c.Replicas, c.replicaTimeout().Milliseconds())
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	first, err := set.Result()
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if wait != nil {
		if n, err := wait.Int64(); err != nil || n < int64(c.Replicas) {
			// The key may be on the primary alone: the proof is refused
			// now, and refused later as a replay or by its age.
			return false, fmt.Errorf("%w: fewer than %d replicas acknowledged the write", ErrUnavailable, c.Replicas)
		}
	}
	return first, nil
}

func (c *ReplayCache) replicaTimeout() time.Duration {
	if c.Replicas <= 0 {
		return 0
	}
	if c.ReplicaTimeout <= 0 {
		return 500 * time.Millisecond
	}
	return c.ReplicaTimeout
}
