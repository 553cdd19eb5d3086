package requeststate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// Guard makes a sealed state single-use. The spec leaves consumption to
// the server: a token is only integrity-protected and may be replayed
// until it expires. Use records that the token was accepted, until its
// expiry; it reports false when the token was seen before. Errors deny.
type Guard interface {
	Use(ctx context.Context, token string, expires time.Time) (first bool, err error)
}

// TokenID is the key a guard stores for a token: a digest, so that a
// store never holds usable tokens.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// MemoryGuard is an in-process Guard. Entries are dropped once expired.
// It suits a single process; a fleet shares a guard through a store
// (see package redisguard).
type MemoryGuard struct {
	mu   sync.Mutex
	seen map[string]time.Time
	// Now is the clock; nil means time.Now.
	Now   func() time.Time
	sweep int
}

// NewMemoryGuard returns an empty guard.
func NewMemoryGuard() *MemoryGuard { return &MemoryGuard{seen: map[string]time.Time{}} }

// Use implements Guard.
func (g *MemoryGuard) Use(_ context.Context, token string, expires time.Time) (bool, error) {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	t := now()
	id := TokenID(token)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]time.Time{}
	}
	if g.sweep++; g.sweep >= 1024 {
		g.sweep = 0
		for k, exp := range g.seen {
			if !t.Before(exp) {
				delete(g.seen, k)
			}
		}
	}
	if exp, ok := g.seen[id]; ok && t.Before(exp) {
		return false, nil
	}
	g.seen[id] = expires
	return true, nil
}

// Len reports how many tokens the guard holds (expired ones may linger
// until the next sweep).
func (g *MemoryGuard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}
