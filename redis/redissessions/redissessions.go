// Package redissessions is an mcp.SessionStore backed by Redis: the
// 2025-era sessions of a fleet (Streamable HTTP and HTTP+SSE), kept where
// every instance finds them, so that any instance serves any request of
// any session.
//
//	store := redissessions.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), redissessions.Options{})
//	srv := mcp.NewServer(impl, &mcp.ServerOptions{SessionStore: store})
//
// # What is kept, and for how long
//
// Under Options.Prefix (default "mcp:sess:"):
//
//   - a session's record: a hash under PREFIX{ID} holding the record as
//     JSON (at most Options.MaxRecordBytes), its version, its party and its
//     idle timeout. It lives as long as the record's IdleTimeout (1 h when
//     zero); every Touch starts that time again (one script, one round
//     trip, which also marks the session used in its party's index).
//   - the events of each SSE stream of a session: a Redis Stream under
//     PREFIX{ID}:e:STREAM whose entry ids are 0-SEQ, trimmed to the newest
//     Options.MaxEvents entries, living the idle timeout after its last
//     event; and PREFIX{ID}:st, the streams a session has (at most
//     Options.MaxStreams; the oldest stream is dropped past it).
//   - the party index PREFIXp:DIGEST (a sorted set of the party's
//     sessions by last use, for the per-party bound and its least recently
//     used eviction) and the fleet index PREFIXall (every session by the
//     time it expires, for the fleet bound). Both expire with their
//     longest-lived session; stale members are removed as Create meets
//     them.
//
// The bus between instances is Redis pub/sub: one channel per instance,
// PREFIXi:INSTANCE. It is best effort, as the interface allows: a
// message published while its instance is reconnecting is lost.
//
// # Restarts and failover
//
// Sessions are worth keeping across a restart only as far as the store
// keeps them: a Redis restarted without persistence (or from a file older
// than a session) has lost them, and every instance then answers their
// requests with 404 Not Found (mcp.ErrSessionNotFound here). A 2025-era
// client initializes a new session on that 404, as its specification
// says, so a restart costs a new handshake per client, not an outage.
// For Sentinel, pass a client of redis.NewFailoverClient; a promoted
// replica may lack the last writes (replication is asynchronous), with
// the same cost for the sessions it lacks.
//
// # Redis Cluster
//
// Every key of a session carries a hash tag ({ID}), so that one
// session's record and streams live in one hash slot. Create, Touch and
// Delete also change the party and fleet indexes in the same script, so
// on a Redis Cluster every key of the store must share one slot: given a
// *redis.ClusterClient, New wraps a Prefix that has no hash tag in braces
// ("{mcp:sess:}"), and the whole store lives on the shard of that slot:
// a cluster adds no capacity to one store (fleets under several prefixes
// spread over several slots).
package redissessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Options configures a Store; the zero value is usable.
type Options struct {
	// Prefix namespaces every key and channel; empty means "mcp:sess:".
	Prefix string
	// MaxEvents bounds the log of one SSE stream (the oldest events are
	// dropped past it); zero means 1000.
	MaxEvents int
	// MaxStreams bounds the streams whose events a session keeps; zero
	// means 256.
	MaxStreams int
	// MaxRecordBytes bounds a record (as JSON): a larger one is refused
	// on write and on read; zero means 64 KiB.
	MaxRecordBytes int
	// MaxEventBytes bounds one event's data; zero means 1 MiB.
	MaxEventBytes int
	// MaxReadBytes bounds the data EventsAfter returns at once (it
	// returns the oldest events that fit, at least one); zero means 8 MiB.
	MaxReadBytes int
	// MaxMessageBytes bounds a bus message: a larger one is refused by
	// Publish and ignored by Receive; zero means 1 MiB.
	MaxMessageBytes int
	// MaxWait bounds the wait of EventsAfter; zero means one minute.
	MaxWait time.Duration
	// DefaultIdleTimeout is the idle timeout of a record whose
	// IdleTimeout is zero; zero means one hour.
	DefaultIdleTimeout time.Duration
}

// Store is an mcp.SessionStore in Redis.
type Store struct {
	c      redis.UniversalClient
	prefix string
	o      Options
}

var _ mcp.SessionStore = (*Store)(nil)

// New returns a store using client.
func New(client redis.UniversalClient, opts Options) *Store {
	p := opts.Prefix
	if p == "" {
		p = "mcp:sess:"
	}
	if _, ok := client.(*redis.ClusterClient); ok && !hasHashTag(p) {
		p = "{" + p + "}"
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opts.MaxEvents, 1000)
	def(&opts.MaxStreams, 256)
	def(&opts.MaxRecordBytes, 64<<10)
	def(&opts.MaxEventBytes, 1<<20)
	def(&opts.MaxReadBytes, 8<<20)
	def(&opts.MaxMessageBytes, 1<<20)
	if opts.MaxWait <= 0 {
		opts.MaxWait = time.Minute
	}
	if opts.DefaultIdleTimeout <= 0 {
		opts.DefaultIdleTimeout = time.Hour
	}
	return &Store{c: client, prefix: p, o: opts}
}

func hasHashTag(p string) bool {
	i := strings.IndexByte(p, '{')
	return i >= 0 && strings.IndexByte(p[i+1:], '}') > 0
}

func (s *Store) recKey(id string) string     { return s.prefix + "{" + id + "}" }
func (s *Store) allKey() string              { return s.prefix + "all" }
func (s *Store) channel(inst string) string  { return s.prefix + "i:" + inst }
func (s *Store) streamsKey(id string) string { return s.recKey(id) + ":st" }
func (s *Store) streamKey(id string, stream uint64) string {
	return s.recKey(id) + ":e:" + strconv.FormatUint(stream, 10)
}
func (s *Store) partyKey(party string) string {
	d := sha256.Sum256([]byte(party))
	return s.prefix + "p:" + hex.EncodeToString(d[:16])
}

// The record hash: j the record as JSON (without its version), v the
// version, p the party index's key, t the idle timeout (ms).
const commonLua = `
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- extend makes key live at least ms more.
local function extend(key, ms)
  local p = redis.call('PTTL', key)
  if p == -1 or (p >= 0 and p < ms) then redis.call('PEXPIRE', key, ms) end
end
-- drop removes a session, its streams and its index entries.
local function drop(P, id)
  local rk = P .. '{' .. id .. '}'
  local party = redis.call('HGET', rk, 'p')
  local st = rk .. ':st'
  for _, n in ipairs(redis.call('ZRANGE', st, 0, -1)) do redis.call('DEL', rk .. ':e:' .. n) end
  redis.call('DEL', st)
  local existed = redis.call('DEL', rk)
  if party then redis.call('ZREM', party, id) end
  redis.call('ZREM', P .. 'all', id)
  return existed
end
`

// KEYS: record, party, all. ARGV: prefix, id, json, idle ms,
// maxPerParty, maxSessions. Returns the evicted ids, or 'full'.
var createScript = redis.NewScript(commonLua + `
local P, id, idle = ARGV[1], ARGV[2], tonumber(ARGV[4])
local perParty, fleet = tonumber(ARGV[5]), tonumber(ARGV[6])
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('ERR session id in use') end
local t = now()
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if redis.call('EXISTS', P .. '{' .. m .. '}') == 0 then
    redis.call('ZREM', KEYS[2], m)
    redis.call('ZREM', KEYS[3], m)
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', t)
local inParty, inFleet = redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3])
local need = math.max(0, inParty - perParty + 1)
if fleet > 0 then
  local f = inFleet - fleet + 1
  if f > inParty then return 'full' end
  need = math.max(need, f)
end
local evicted = {}
for i = 1, need do
  local lru = redis.call('ZRANGE', KEYS[2], 0, 0)
  drop(P, lru[1])
  evicted[i] = lru[1]
end
redis.call('HSET', KEYS[1], 'j', ARGV[3], 'v', 1, 'p', KEYS[2], 't', idle)
redis.call('PEXPIRE', KEYS[1], idle)
redis.call('ZADD', KEYS[2], t, id)
extend(KEYS[2], idle)
redis.call('ZADD', KEYS[3], t + idle, id)
extend(KEYS[3], idle)
return evicted
`)

// KEYS: record, all. ARGV: id. Returns the version, or nil.
var touchScript = redis.NewScript(commonLua + `
local h = redis.call('HMGET', KEYS[1], 'v', 'p', 't')
if not h[1] then return false end
local t, idle = now(), tonumber(h[3])
redis.call('PEXPIRE', KEYS[1], idle)
redis.call('ZADD', h[2], t, ARGV[1])
extend(h[2], idle)
redis.call('ZADD', KEYS[2], t + idle, ARGV[1])
extend(KEYS[2], idle)
return h[1]
`)

// KEYS: record. ARGV: max bytes. Returns {json, version}, nil, or 'big'.
var loadScript = redis.NewScript(`
if redis.call('HSTRLEN', KEYS[1], 'j') > tonumber(ARGV[1]) then return 'big' end
local h = redis.call('HMGET', KEYS[1], 'j', 'v')
if not h[1] then return false end
return h
`)

// KEYS: record. ARGV: expected version, json. Returns the new version,
// 0 when the version moved, nil when the record is gone.
var casScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return false end
if v ~= ARGV[1] then return 0 end
local nv = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'j', ARGV[2], 'v', nv)
return nv
`)

// KEYS: record, all. ARGV: prefix, id. Returns 1 when it existed.
var deleteScript = redis.NewScript(commonLua + `
return drop(ARGV[1], ARGV[2])
`)

// KEYS: record, streams, stream. ARGV: entry id, data, end, max events,
// stream number, max streams, stream key prefix. Returns 1, or nil when
// the session is gone.
var appendScript = redis.NewScript(commonLua + `
local idle = redis.call('HGET', KEYS[1], 't')
if not idle then return false end
if ARGV[1] ~= '0-0' then
  redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[4], ARGV[1], 'd', ARGV[2], 'e', ARGV[3])
  redis.call('PEXPIRE', KEYS[3], idle)
end
local t = now()
redis.call('ZADD', KEYS[2], t, ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', t - tonumber(idle))
while redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[6]) do
  local old = redis.call('ZPOPMIN', KEYS[2])
  redis.call('DEL', ARGV[7] .. old[1])
end
redis.call('PEXPIRE', KEYS[2], idle)
return 1
`)

// KEYS: stream, record, the session's streams. ARGV: seq, max entries,
// max bytes, the stream's number. Returns {-1} when the session does
// not exist, {2} when the stream is unknown (no event, not opened), {0}
// when it lost events after seq, else {1, entries...}
// (each {id, {field, value...}}), the oldest that fit within max bytes.
var rangeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return {-1} end
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #first == 0 then
  if redis.call('ZSCORE', KEYS[3], ARGV[4]) then return {1} end
  return {2}
end
local seq = tonumber(ARGV[1])
if tonumber(string.sub(first[1][1], 3)) > seq + 1 then return {0} end
local out, size = {1}, 0
for _, e in ipairs(redis.call('XRANGE', KEYS[1], '(0-' .. ARGV[1], '+', 'COUNT', ARGV[2])) do
  local d = ''
  for i = 1, #e[2], 2 do if e[2][i] == 'd' then d = e[2][i + 1] end end
  size = size + #d
  if #out > 1 and size > tonumber(ARGV[3]) then break end
  out[#out + 1] = e
end
return out
`)

func (s *Store) idle(rec *mcp.SessionRecord) time.Duration {
	if rec.IdleTimeout > 0 {
		return rec.IdleTimeout
	}
	return s.o.DefaultIdleTimeout
}

func ms(d time.Duration) int64 { return max(1, d.Milliseconds()) }

func (s *Store) encode(rec *mcp.SessionRecord) (string, error) {
	r := *rec
	r.Version = 0
	b, err := json.Marshal(&r)
	if err != nil {
		return "", fmt.Errorf("redissessions: encode record: %w", err)
	}
	if len(b) > s.o.MaxRecordBytes {
		return "", fmt.Errorf("redissessions: record of %d bytes, over the %d-byte bound", len(b), s.o.MaxRecordBytes)
	}
	return string(b), nil
}

// Create records rec (see mcp.SessionStore).
func (s *Store) Create(ctx context.Context, rec *mcp.SessionRecord, maxPerParty, maxSessions int) ([]string, error) {
	if rec.ID == "" {
		return nil, errors.New("redissessions: a record without an id")
	}
	j, err := s.encode(rec)
	if err != nil {
		return nil, err
	}
	res, err := createScript.Run(ctx, s.c, []string{s.recKey(rec.ID), s.partyKey(rec.Party), s.allKey()},
		s.prefix, rec.ID, j, ms(s.idle(rec)), max(1, maxPerParty), max(0, maxSessions)).Result()
	if err != nil {
		return nil, fmt.Errorf("redissessions: create: %w", err)
	}
	if res == "full" {
		return nil, mcp.ErrTemporarilyUnavailable
	}
	list, _ := res.([]any)
	var evicted []string
	for _, e := range list {
		if id, ok := e.(string); ok {
			evicted = append(evicted, id)
		}
	}
	rec.Version = 1
	return evicted, nil
}

// Touch marks the session used now and returns its version: one round
// trip (see mcp.SessionStore).
func (s *Store) Touch(ctx context.Context, id string) (uint64, error) {
	v, err := touchScript.Run(ctx, s.c, []string{s.recKey(id), s.allKey()}, id).Text()
	if errors.Is(err, redis.Nil) {
		return 0, mcp.ErrSessionNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("redissessions: touch: %w", err)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redissessions: touch: a version of %q", v)
	}
	return n, nil
}

// Load returns the session's record (see mcp.SessionStore).
func (s *Store) Load(ctx context.Context, id string) (*mcp.SessionRecord, error) {
	rec, _, err := s.load(ctx, id)
	return rec, err
}

func (s *Store) load(ctx context.Context, id string) (*mcp.SessionRecord, string, error) {
	res, err := loadScript.Run(ctx, s.c, []string{s.recKey(id)}, s.o.MaxRecordBytes).Result()
	if errors.Is(err, redis.Nil) {
		return nil, "", mcp.ErrSessionNotFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("redissessions: load: %w", err)
	}
	if res == "big" {
		return nil, "", fmt.Errorf("redissessions: the record of %q is over the %d-byte bound", id, s.o.MaxRecordBytes)
	}
	h, _ := res.([]any)
	if len(h) != 2 {
		return nil, "", fmt.Errorf("redissessions: load: a malformed record")
	}
	j, _ := h[0].(string)
	v, _ := h[1].(string)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, "", fmt.Errorf("redissessions: load: a version of %q", v)
	}
	rec := new(mcp.SessionRecord)
	if err := json.Unmarshal([]byte(j), rec); err != nil {
		return nil, "", fmt.Errorf("redissessions: load: %w", err)
	}
	rec.ID, rec.Version = id, n
	return rec, v, nil
}

// apply changes rec by u and reports whether anything changed.
func apply(rec *mcp.SessionRecord, u mcp.SessionUpdate) bool {
	changed := false
	if u.LogLevel != "" && rec.LogLevel != u.LogLevel {
		rec.LogLevel, changed = u.LogLevel, true
	}
	if u.Initialized && !rec.Initialized {
		rec.Initialized, changed = true, true
	}
	if u.Subscribe != "" {
		i, found := slices.BinarySearch(rec.Subscriptions, u.Subscribe)
		if !found && (u.MaxSubscriptions <= 0 || len(rec.Subscriptions) < u.MaxSubscriptions) {
			rec.Subscriptions, changed = slices.Insert(rec.Subscriptions, i, u.Subscribe), true
		}
	}
	if u.Unsubscribe != "" {
		if i, found := slices.BinarySearch(rec.Subscriptions, u.Unsubscribe); found {
			rec.Subscriptions, changed = slices.Delete(rec.Subscriptions, i, i+1), true
		}
	}
	if u.SetInstance && rec.Instance != u.Instance {
		rec.Instance, changed = u.Instance, true
	}
	return changed
}

// maxUpdateTries bounds how often Update starts again when another
// instance changed the record between its read and its write.
const maxUpdateTries = 32

// Update changes the session's record: it reads it, changes it and
// writes it back if its version has not moved meanwhile, else starts
// again (see mcp.SessionStore).
func (s *Store) Update(ctx context.Context, id string, u mcp.SessionUpdate) (*mcp.SessionRecord, error) {
	for range maxUpdateTries {
		rec, v, err := s.load(ctx, id)
		if err != nil {
			return nil, err
		}
		slices.Sort(rec.Subscriptions)
		if !apply(rec, u) {
			return rec, nil
		}
		j, err := s.encode(rec)
		if err != nil {
			return nil, err
		}
		n, err := casScript.Run(ctx, s.c, []string{s.recKey(id)}, v, j).Uint64()
		if errors.Is(err, redis.Nil) {
			return nil, mcp.ErrSessionNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("redissessions: update: %w", err)
		}
		if n != 0 {
			rec.Version = n
			return rec, nil
		}
	}
	return nil, fmt.Errorf("redissessions: update of %q: the record kept changing: %w", id, mcp.ErrTemporarilyUnavailable)
}

// Delete removes the session and its events (see mcp.SessionStore).
func (s *Store) Delete(ctx context.Context, id string) (bool, error) {
	n, err := deleteScript.Run(ctx, s.c, []string{s.recKey(id), s.allKey()}, s.prefix, id).Int()
	if err != nil {
		return false, fmt.Errorf("redissessions: delete: %w", err)
	}
	return n == 1, nil
}

// AppendEvent adds ev to its stream's log (see mcp.SessionStore). An
// event whose Seq is not past the stream's last one is refused.
func (s *Store) AppendEvent(ctx context.Context, id string, ev mcp.SessionEvent) error {
	if len(ev.Data) > s.o.MaxEventBytes {
		return fmt.Errorf("redissessions: an event of %d bytes, over the %d-byte bound", len(ev.Data), s.o.MaxEventBytes)
	}
	end := "0"
	if ev.End {
		end = "1"
	}
	err := appendScript.Run(ctx, s.c, []string{s.recKey(id), s.streamsKey(id), s.streamKey(id, ev.Stream)},
		"0-"+strconv.FormatUint(ev.Seq, 10), ev.Data, end, s.o.MaxEvents, ev.Stream, s.o.MaxStreams, s.recKey(id)+":e:").Err()
	if errors.Is(err, redis.Nil) {
		return mcp.ErrSessionNotFound
	}
	if err != nil {
		return fmt.Errorf("redissessions: append event: %w", err)
	}
	return nil
}

// EventsAfter returns the events of stream after seq, waiting up to wait
// (at most Options.MaxWait) for the first one (see mcp.SessionStore).
func (s *Store) EventsAfter(ctx context.Context, id string, stream, seq uint64, wait time.Duration) ([]mcp.SessionEvent, bool, error) {
	key := s.streamKey(id, stream)
	evs, kept, err := s.eventsAfter(ctx, id, key, stream, seq)
	// An unknown stream is waited for (its first event may be on its
	// way), a gap is not: it stays one.
	unknown := errors.Is(err, errStreamUnknown)
	if unknown {
		err = nil
	}
	if err != nil || len(evs) > 0 || wait <= 0 || !kept && !unknown {
		return evs, kept, err
	}
	wait = min(wait, s.o.MaxWait)
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	if wait < time.Millisecond {
		return nil, !unknown, nil
	}
	// XREAD BLOCK wakes this up when an event comes; the range script
	// then reads what came, within its bounds. go-redis does not end a
	// blocked read with ctx, so the wait runs apart, in blocks of at most
	// a second (a wait given up holds a connection no longer), and this
	// returns as soon as ctx ends.
	woke := make(chan error, 1)
	go func() {
		wctx := context.WithoutCancel(ctx)
		deadline := time.Now().Add(wait)
		from := "0-" + strconv.FormatUint(seq, 10)
		for {
			block := min(time.Until(deadline), time.Second)
			if block < time.Millisecond || ctx.Err() != nil {
				woke <- redis.Nil
				return
			}
			err := s.c.XRead(wctx, &redis.XReadArgs{Streams: []string{key, from}, Count: 1, Block: block}).Err()
			if !errors.Is(err, redis.Nil) {
				woke <- err
				return
			}
		}
	}()
	select {
	case <-ctx.Done():
		return nil, !unknown, ctx.Err()
	case err := <-woke:
		if errors.Is(err, redis.Nil) {
			return nil, !unknown, nil
		}
		if err != nil {
			return nil, !unknown, fmt.Errorf("redissessions: wait for events: %w", err)
		}
	}
	evs, kept, err = s.eventsAfter(ctx, id, key, stream, seq)
	if errors.Is(err, errStreamUnknown) {
		return nil, false, nil
	}
	return evs, kept, err
}

// errStreamUnknown: the session exists, the stream has no event (yet).
var errStreamUnknown = errors.New("redissessions: unknown stream")

func (s *Store) eventsAfter(ctx context.Context, id, key string, stream, seq uint64) ([]mcp.SessionEvent, bool, error) {
	res, err := rangeScript.Run(ctx, s.c, []string{key, s.recKey(id), s.streamsKey(id)}, seq, s.o.MaxEvents, s.o.MaxReadBytes, stream).Slice()
	if err != nil {
		return nil, false, fmt.Errorf("redissessions: events: %w", err)
	}
	switch {
	case len(res) == 0:
		return nil, false, nil
	case res[0] == int64(-1):
		return nil, false, mcp.ErrSessionNotFound
	case res[0] == int64(2):
		return nil, false, errStreamUnknown
	case res[0] != int64(1):
		return nil, false, nil
	}
	evs := make([]mcp.SessionEvent, 0, len(res)-1)
	for _, e := range res[1:] {
		entry, _ := e.([]any)
		if len(entry) != 2 {
			return nil, false, errors.New("redissessions: events: a malformed entry")
		}
		eid, _ := entry[0].(string)
		n, err := strconv.ParseUint(strings.TrimPrefix(eid, "0-"), 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("redissessions: events: an entry id of %q", eid)
		}
		ev := mcp.SessionEvent{Stream: stream, Seq: n}
		fields, _ := entry[1].([]any)
		for i := 0; i+1 < len(fields); i += 2 {
			v, _ := fields[i+1].(string)
			switch fields[i] {
			case "d":
				if v != "" {
					ev.Data = []byte(v)
				}
			case "e":
				ev.End = v == "1"
			}
		}
		evs = append(evs, ev)
	}
	return evs, true, nil
}

// Publish sends msg to the instance named to (see mcp.SessionStore).
func (s *Store) Publish(ctx context.Context, to string, msg []byte) error {
	if len(msg) > s.o.MaxMessageBytes {
		return fmt.Errorf("redissessions: a message of %d bytes, over the %d-byte bound", len(msg), s.o.MaxMessageBytes)
	}
	if err := s.c.Publish(ctx, s.channel(to), msg).Err(); err != nil {
		return fmt.Errorf("redissessions: publish: %w", err)
	}
	return nil
}

// Receive delivers what is published to instance until ctx ends, then
// returns nil (see mcp.SessionStore). Messages over MaxMessageBytes are
// ignored.
func (s *Store) Receive(ctx context.Context, instance string, ready func(), deliver func(msg []byte)) error {
	ps := s.c.Subscribe(ctx, s.channel(instance))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription is in place
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("redissessions: subscribe: %w", err)
	}
	if ready != nil {
		ready()
	}
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			if len(m.Payload) > s.o.MaxMessageBytes {
				continue
			}
			deliver([]byte(m.Payload))
		}
	}
}
