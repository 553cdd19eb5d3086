// Package redisguard is a requeststate.Guard backed by Redis, so that a
// fleet of servers shares the record of consumed states: a state used
// on one instance is refused on every other.
package redisguard

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// Guard records accepted tokens in Redis with SET NX and the token's
// remaining lifetime, under Prefix + the token's digest.
type Guard struct {
	Client redis.UniversalClient
	// Prefix namespaces the keys; empty means "mcp:rs:".
	Prefix string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// New returns a guard using client.
func New(client redis.UniversalClient) *Guard { return &Guard{Client: client} }

// Use implements requeststate.Guard. A token whose expiry has passed is
// refused without touching Redis; a Redis error denies.
func (g *Guard) Use(ctx context.Context, token string, expires time.Time) (bool, error) {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	ttl := expires.Sub(now())
	if ttl <= 0 {
		return false, nil
	}
	// Redis keeps milliseconds; round up so the entry outlives the token.
	ttl = ttl.Truncate(time.Millisecond) + time.Millisecond
	prefix := g.Prefix
	if prefix == "" {
		prefix = "mcp:rs:"
	}
	return g.Client.SetNX(ctx, prefix+tokenKey(token), 1, ttl).Result()
}

var _ requeststate.Guard = (*Guard)(nil)

func tokenKey(token string) string { return requeststate.TokenID(token) }
