// Package redisguard is a requeststate.Guard backed by Redis, so that a
// fleet of servers shares the record of consumed states: a state used
// on one instance is refused on every other, while the identical leg
// retried after a lost answer gets the recorded outcome.
//
// # Durability
//
// Single use holds only as long as the records do. Two ways of losing
// them are covered:
//
//   - A store restarted empty (no persistence, or persistence that lost
//     its last writes). The guard keeps a generation record, the store's
//     own clock when it was first written; a state issued before the
//     current generation is refused, since whether it was used died with
//     the old records. Flows in flight across such a restart must start
//     again. Server clocks must be synchronised with the store's (NTP): a
//     state issued by a server whose clock lags the store's by d, within
//     d after a restart, is refused too.
//   - A store restarted from persistence that lacks its last records (an
//     older AOF or RDB file, lost writes). The file brings back the
//     generation record of the process that wrote it; every claim's
//     script reads the run_id of the process it runs on (INFO server)
//     and raises the generation before it looks at a token's record, so
//     no claim is ever checked against a restored record. The store must
//     let scripts call INFO (a renamed or disabled INFO makes every claim
//     fail as unavailable).
//   - A failover to a replica (Redis Sentinel). Replication is
//     asynchronous, so a promoted replica may lack the last records; set
//     Replicas to have every claim acknowledged by that many replicas
//     (WAIT) before the leg runs: without enough acknowledgements within
//     ReplicaTimeout the claim is released and the leg denied as
//     unavailable (the client retries it), so single use never rests on
//     a write only the primary saw. Outcomes are acknowledged the same
//     way; one that cannot be recorded leaves its claim open, and the
//     identical retry after the lease runs the leg again (at least once).
//
// A Redis Cluster is not supported (the generation record and a token's
// record live under different keys).
package redisguard

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// Guard records accepted states in Redis: one hash per token, under
// Prefix and the token's digest, living as long as the token; and the
// generation record under Prefix + "gen".
type Guard struct {
	Client redis.UniversalClient
	// Prefix namespaces the keys; empty means "mcp:rs:".
	Prefix string
	// Lease bounds a running leg's claim without renewal; zero means
	// requeststate.DefaultLease.
	Lease time.Duration
	// MaxOutcomeBytes bounds a recorded outcome (larger ones are not
	// kept, and their identical retries are refused); zero means
	// requeststate.DefaultMaxOutcomeBytes.
	MaxOutcomeBytes int
	// Replicas, when positive, is how many replicas must acknowledge
	// each claim and each outcome (WAIT) before it counts.
	Replicas int
	// ReplicaTimeout bounds that wait; zero means 500 ms.
	ReplicaTimeout time.Duration
	// GenerationCheck is ignored: every claim checks, in the script that
	// records it, that the store is still the process the generation
	// record names.
	//
	// Deprecated: a periodic check left a window after a restart from
	// an older file in which used states were accepted again.
	GenerationCheck time.Duration
}

// New returns a guard using client.
func New(client redis.UniversalClient) *Guard { return &Guard{Client: client} }

var _ requeststate.Guard = (*Guard)(nil)

func (g *Guard) prefix() string {
	if g.Prefix == "" {
		return "mcp:rs:"
	}
	return g.Prefix
}

func (g *Guard) lease() time.Duration {
	if g.Lease > 0 {
		return g.Lease
	}
	return requeststate.DefaultLease
}

// A token's hash: a answers digest (hex), o lease owner (hex), l lease
// end (store ms), d done (0/1), k outcome kept (0/1), r outcome.
var beginScript = redis.NewScript(generationLua + `
local floor, err = generation(KEYS[1])
if not floor then return redis.error_reply(err) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(ARGV[2]) < floor then return {'refused', 'issued before the single-use store generation (the store lost its records)'} end
local exp = tonumber(ARGV[3])
if exp <= now then return {'refused', 'expired'} end
local cur = redis.call('HMGET', KEYS[2], 'a', 'l', 'd', 'k', 'r')
if not cur[1] then
  redis.call('HSET', KEYS[2], 'a', ARGV[1], 'o', ARGV[4], 'l', now + tonumber(ARGV[5]), 'd', '0')
  redis.call('PEXPIREAT', KEYS[2], exp + 1)
  return {'first'}
end
if cur[1] ~= ARGV[1] then return {'conflict', 'state already used'} end
if cur[3] == '1' then
  if cur[4] == '1' then return {'replay', cur[5]} end
  return {'refused', 'state already used (outcome not kept)'}
end
local lease = tonumber(cur[2])
if lease > now then return {'busy', tostring(lease - now)} end
redis.call('HSET', KEYS[2], 'o', ARGV[4], 'l', now + tonumber(ARGV[5]))
return {'first'}
`)

// The generation record (a hash): run, the store process it was last
// checked against; floor, the issue time (store ms) before which states
// are refused. A missing record (a store restarted empty) or another
// process (a restart from persistence, which may have lost its last
// writes) raises floor to that process's start; a failover promotes a
// replica that started long ago, so floor stays (the records came with
// it, acknowledged by WAIT).
//
// generation runs inside every claim's script, so the process a claim
// is checked against is the process that records it: no claim is ever
// checked against a generation record restored from an older file (the
// record of the process that wrote it). It reads INFO server (the
// process's run_id, clock and uptime) from the script. started is the
// latest moment the process can have started (store ms): the store
// reports its uptime as the difference of whole seconds (its clock's
// seconds now, less those at its start), so it started before the
// second after now's second less the uptime.
const generationLua = `
local function started(usec, up)
  local ms = math.floor(usec / 1000)
  return math.min(ms, (math.floor(ms / 1000) - up + 1) * 1000)
end
local function generation(key)
  local info = redis.call('INFO', 'server')
  local run = string.match(info, '[\r\n]run_id:(%x+)')
  local usec = tonumber(string.match(info, '[\r\n]server_time_usec:(%d+)'))
  local up = tonumber(string.match(info, '[\r\n]uptime_in_seconds:(%d+)'))
  if not run or not usec or not up then
    return nil, 'INFO server without run_id, server_time_usec or uptime_in_seconds'
  end
  local cur = redis.call('HMGET', key, 'run', 'floor')
  local floor = tonumber(cur[2])
  if cur[1] == run and floor then return floor end
  local start = started(usec, up)
  if not floor or floor < start then floor = start end
  redis.call('HSET', key, 'run', run, 'floor', string.format('%d', floor))
  return floor
end
`

var generationScript = redis.NewScript(generationLua + `
local floor, err = generation(KEYS[1])
if not floor then return redis.error_reply(err) end
return floor
`)

var renewScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'd') ~= '0' then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'l', now + tonumber(ARGV[2]))
return 1
`)

// ARGV[2]: 'release', or 'keep' with the outcome in ARGV[3], or 'drop'
// (done, outcome too large to keep).
var finishScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'd') ~= '0' then return 0 end
if ARGV[2] == 'release' then
  redis.call('DEL', KEYS[1])
elseif ARGV[2] == 'keep' then
  redis.call('HSET', KEYS[1], 'd', '1', 'k', '1', 'r', ARGV[3])
else
  redis.call('HSET', KEYS[1], 'd', '1', 'k', '0')
end
return 1
`)

// Prepare records the store's generation now, so that states issued
// from here on are not mistaken for states of an earlier store. Call it
// when the server starts, before it issues states: on a store nobody has
// used yet (or one restarted empty) the generation otherwise starts at
// the first Begin, and states issued before that are refused. It fails
// when the store cannot be reached.
func (g *Guard) Prepare(ctx context.Context) error {
	_, _, err := g.run(ctx, generationScript, []string{g.prefix() + "gen"}, nil)
	return err
}

// Begin implements requeststate.Guard.
func (g *Guard) Begin(ctx context.Context, leg *requeststate.Leg) (requeststate.Verdict, error) {
	leg.Owner = requeststate.NewOwner()
	key := g.prefix() + leg.ID()
	keys := []string{g.prefix() + "gen", key}
	args := []any{hex.EncodeToString(leg.Answers[:]), leg.IssuedAt.UnixMilli(), leg.ExpiresAt.UnixMilli(),
		hex.EncodeToString(leg.Owner[:]), g.lease().Milliseconds()}
	res, acked, err := g.run(ctx, beginScript, keys, args)
	if err != nil {
		return requeststate.Verdict{}, err
	}
	vals, ok := res.([]any)
	if !ok || len(vals) == 0 {
		return requeststate.Verdict{}, fmt.Errorf("%w: unexpected reply %v", requeststate.ErrStoreUnavailable, res)
	}
	kind, _ := vals[0].(string)
	arg := ""
	if len(vals) > 1 {
		arg, _ = vals[1].(string)
	}
	switch kind {
	case "first":
		if !acked {
			// The claim is not safe from a failover: undo it and deny.
			g.finish(context.WithoutCancel(ctx), leg, "release", "")
			return requeststate.Verdict{}, g.notAcked()
		}
		return requeststate.Verdict{Kind: requeststate.First, Lease: g.lease()}, nil
	case "replay":
		return requeststate.Verdict{Kind: requeststate.Replay, Outcome: []byte(arg)}, nil
	case "busy":
		var ms int64
		fmt.Sscan(arg, &ms)
		return requeststate.Verdict{Kind: requeststate.Busy, RetryAfter: time.Duration(ms) * time.Millisecond}, nil
	case "refused":
		return requeststate.Verdict{Kind: requeststate.Refused, Reason: arg}, nil
	case "conflict":
		return requeststate.Verdict{Kind: requeststate.Conflict, Reason: arg}, nil
	}
	return requeststate.Verdict{}, fmt.Errorf("%w: unexpected reply %v", requeststate.ErrStoreUnavailable, res)
}

// Renew implements requeststate.Guard.
func (g *Guard) Renew(ctx context.Context, leg *requeststate.Leg) error {
	_, _, err := g.run(ctx, renewScript, []string{g.prefix() + leg.ID()},
		[]any{hex.EncodeToString(leg.Owner[:]), g.lease().Milliseconds()})
	return err
}

// Finish implements requeststate.Guard.
func (g *Guard) Finish(ctx context.Context, leg *requeststate.Leg, outcome []byte) error {
	max := g.MaxOutcomeBytes
	if max <= 0 {
		max = requeststate.DefaultMaxOutcomeBytes
	}
	switch {
	case outcome == nil:
		return g.finish(ctx, leg, "release", "")
	case len(outcome) > max:
		return g.finish(ctx, leg, "drop", "")
	}
	return g.finish(ctx, leg, "keep", string(outcome))
}

func (g *Guard) finish(ctx context.Context, leg *requeststate.Leg, mode, outcome string) error {
	_, acked, err := g.run(ctx, finishScript, []string{g.prefix() + leg.ID()},
		[]any{hex.EncodeToString(leg.Owner[:]), mode, outcome})
	if err == nil && !acked {
		err = g.notAcked()
	}
	return err
}

func (g *Guard) notAcked() error {
	return fmt.Errorf("%w: fewer than %d replicas acknowledged the write", requeststate.ErrStoreUnavailable, g.Replicas)
}

// run evaluates a script and, when Replicas is set, WAITs for the
// replicas on the same connection (a pipeline), so that the
// acknowledgement covers the script's writes. acked is true when no
// acknowledgement was asked for or enough replicas gave one.
func (g *Guard) run(ctx context.Context, s *redis.Script, keys []string, args []any) (res any, acked bool, err error) {
	for attempt := 0; attempt < 2; attempt++ {
		pipe := g.Client.Pipeline()
		var cmd *redis.Cmd
		if attempt == 0 {
			cmd = s.EvalSha(ctx, pipe, keys, args...)
		} else {
			cmd = s.Eval(ctx, pipe, keys, args...)
		}
		var wait *redis.Cmd
		if g.Replicas > 0 {
			timeout := g.ReplicaTimeout
			if timeout <= 0 {
				timeout = 500 * time.Millisecond
			}
			wait = pipe.Do(ctx, "WAIT", g.Replicas, timeout.Milliseconds())
		}
		_, err = pipe.Exec(ctx)
		if cerr := cmd.Err(); cerr != nil && strings.HasPrefix(cerr.Error(), "NOSCRIPT") && attempt == 0 {
			continue // the store lost its scripts (restarted): send the source
		}
		if cmd.Err() != nil {
			err = cmd.Err()
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, false, fmt.Errorf("%w: %w", requeststate.ErrStoreUnavailable, err)
		}
		if wait != nil {
			n, werr := wait.Int64()
			acked = werr == nil && n >= int64(g.Replicas)
		} else {
			acked = true
		}
		return cmd.Val(), acked, nil
	}
	return nil, false, fmt.Errorf("%w: script not loaded", requeststate.ErrStoreUnavailable)
}
