// Package redisrate is a per-party rate limit shared by a fleet of
// servers, kept in Redis: the Allow method of a Limiter is an
// mcp.HTTPOptions.RateLimit, so that a party is held to one rate however
// many instances its requests reach.
//
// The limit is the generic cell rate algorithm (GCRA): each party has a
// theoretical arrival time, one key under Prefix living only as long as
// the party is ahead of the rate; a request is allowed when that time is
// at most Burst-1 intervals ahead of now, and moves it one interval on.
// One Lua script does it in one round trip, on the store's clock (TIME),
// so the servers' clocks do not matter. A store that cannot be reached
// makes Allow return its error, which the HTTP handlers take as "let the
// request through" (fail open).
package redisrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options configure a Limiter.
type Options struct {
	// Rate is the sustained rate, in requests a second per party; it
	// must be positive.
	Rate float64
	// Burst is how many requests a party may make at once, at least 1
	// (zero means 1).
	Burst int
	// Prefix namespaces the keys; empty means "mcp:rate:".
	Prefix string
	// Timeout bounds one round trip to the store; zero means 250 ms. A
	// store slower than this lets the request through.
	Timeout time.Duration
}

// Limiter is a per-party GCRA in Redis.
type Limiter struct {
	c        redis.UniversalClient
	prefix   string
	interval int64 // µs between two requests at Rate
	tol      int64 // µs a party may be ahead of the rate: (Burst-1) intervals
	timeout  time.Duration
}

// New returns a Limiter of o on the store c. It panics when o.Rate is not
// positive.
func New(c redis.UniversalClient, o Options) *Limiter {
	if !(o.Rate > 0) || math.IsInf(o.Rate, 0) {
		panic("redisrate: Options.Rate must be positive and finite")
	}
	if o.Burst < 1 {
		o.Burst = 1
	}
	if o.Prefix == "" {
		o.Prefix = "mcp:rate:"
	}
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	interval := max(int64(math.Round(1e6/o.Rate)), 1)
	return &Limiter{c: c, prefix: o.Prefix, interval: interval, tol: int64(o.Burst-1) * interval, timeout: o.Timeout}
}

// gcra: KEYS[1] the party's arrival time (µs on the store's clock);
// ARGV[1] the interval, ARGV[2] the tolerance (µs). It returns 0 when
// allowed, else the µs to wait.
var gcra = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tol = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local wait = tat - now - tol
if wait > 0 then return wait end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
return 0
`)

// Allow counts one request of party: zero when it is within the rate,
// else how long it should wait (and it is not counted). An error is the
// store's: unreachable, too slow, or a script that failed.
func (l *Limiter) Allow(ctx context.Context, party string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	sum := sha256.Sum256([]byte(party))
	key := l.prefix + hex.EncodeToString(sum[:16])
	wait, err := gcra.Run(ctx, l.c, []string{key}, l.interval, l.tol).Int64()
	if err != nil {
		return 0, fmt.Errorf("redisrate: the store: %w", err)
	}
	if wait <= 0 {
		return 0, nil
	}
	return time.Duration(wait) * time.Microsecond, nil
}
