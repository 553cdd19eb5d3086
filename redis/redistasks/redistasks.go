// Package redistasks is an tasks.SharedStore backed by Redis: set
// tasks.Options.Store to a Store (one per server, on the same Redis and
// Prefix) in every instance of a fleet, and tasks/get, tasks/update and
// tasks/cancel work on any instance whatever the balancer does.
//
// What is stored, under Prefix (default "mcp:tasks:"):
//
//   - {id}: a hash per task: its status, its state as tasks/get reports
//     it (JSON), its principal and its owner (the instance running it).
//     It expires at the task's TTL, counted from its creation.
//   - {id}:lease: the owner's lease on the task, renewed every Lease/3
//     while it runs. A reader that finds a running task without a lease
//     marks it failed (tasks.ErrInstanceStopped), in one script that
//     also checks the status, so that an owner renewing or finishing at
//     the same moment and the reader never disagree: whichever comes
//     first wins, and the other sees it.
//   - inbox:{owner}: a stream per instance carrying answers
//     (tasks/update) and cancellations received by other instances to
//     the owner. A stream rather than pub/sub because pub/sub drops what
//     is published while the owner is reconnecting: a lost answer would
//     leave the task waiting for input the client believes it gave until
//     the task's TTL. The owner reads the stream from where it left off,
//     so a brief disconnection loses nothing, and deletes what it has
//     delivered. The stream expires ten leases (at least a minute) after
//     the last signal, so the inbox of an instance that died goes away.
//   - inbox:{owner}:bytes: the bytes of the signals in the inbox not yet
//     delivered. An inbox holds at most MaxInboxBytes of them and 4096
//     entries; a signal is at most MaxSignalBytes. Past either bound
//     the signal is not sent and the sender gets an error that says so
//     (a tasks/update is answered -32602 for a signal too large,
//     mcp.ErrTemporarilyUnavailable for a full inbox), never a silent
//     loss. A cancellation is always sent (one per task at most).
//
// Every key that concerns one task carries the task id as its hash tag,
// so the scripts also run on Redis Cluster. A task's state is bounded by
// MaxBytes (8 MiB by default): a larger one is refused, and the server
// then fails the task; keep tasks.Options.MaxResultBytes (4 MiB by
// default) below it. The number of tasks is bounded by Redis memory (each
// record expires at its TTL) and, per instance, by tasks.Options.MaxTasks.
package redistasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// Defaults of Options.
const (
	DefaultPrefix   = "mcp:tasks:"
	DefaultLease    = 15 * time.Second
	DefaultMaxBytes = 8 << 20
	// DefaultMaxSignalBytes bounds one signal (a tasks/update's answers).
	DefaultMaxSignalBytes = 1 << 20
	// DefaultMaxInboxBytes bounds the signals waiting in one inbox.
	DefaultMaxInboxBytes = 16 << 20
)

const (
	inboxLen   = 4096 // bound of the signals waiting in an inbox
	readCount  = 16   // signals per XREAD
	readBlock  = time.Second
	renewBatch = 512 // leases renewed per pipeline
	maxIDLen   = 128
)

// Options configure a Store. The zero value takes the defaults.
type Options struct {
	// Prefix namespaces the keys; empty means DefaultPrefix. All the
	// instances of a fleet use the same.
	Prefix string
	// Lease is how long a task stays live without a renewal from its
	// owner, who renews every Lease/3: a task whose instance died is
	// reported failed within Lease of its last renewal. Zero means
	// DefaultLease; a few seconds at least in production, so that a
	// pause of the owner (or of its connection to Redis) does not fail
	// its tasks.
	Lease time.Duration
	// MaxBytes bounds a task's encoded state; zero means
	// DefaultMaxBytes. A larger state is refused with an error (the
	// server then fails the task).
	MaxBytes int
	// MaxSignalBytes bounds one encoded signal (a tasks/update's answers
	// forwarded to the task's owner); zero means DefaultMaxSignalBytes.
	// A larger one is not sent: the sender gets -32602 naming the bound.
	MaxSignalBytes int
	// MaxInboxBytes bounds the encoded signals waiting in one
	// instance's inbox (sent, not yet delivered); zero means
	// DefaultMaxInboxBytes. A signal that would pass it is not sent:
	// the sender gets mcp.ErrTemporarilyUnavailable and may retry once
	// the owner has read its inbox.
	MaxInboxBytes int
}

// Store is an tasks.SharedStore on Redis. Its methods are safe for
// concurrent use; Receive is called by one goroutine at a time.
type Store struct {
	c      redis.UniversalClient
	prefix string
	lease  time.Duration
	max    int
	maxSig int
	maxBox int
	block  time.Duration // XREAD's block time: how long Receive may take to see ctx end
	owner  string        // this instance: random, so that each Store has its own inbox

	mu     sync.Mutex
	lastID string   // the last signal delivered from the inbox
	unread []string // delivered signals to delete from the inbox: id, size, ...
}

var _ tasks.SharedStore = (*Store)(nil)

// New returns a Store on client. Use one Store per server: the Store is
// the instance's identity as an owner of tasks.
func New(client redis.UniversalClient, o *Options) *Store {
	s := &Store{c: client, prefix: DefaultPrefix, lease: DefaultLease, max: DefaultMaxBytes,
		maxSig: DefaultMaxSignalBytes, maxBox: DefaultMaxInboxBytes, block: readBlock, lastID: "0"}
	if o != nil {
		if o.Prefix != "" {
			s.prefix = o.Prefix
		}
		if o.Lease > 0 {
			s.lease = o.Lease
		}
		if o.MaxBytes > 0 {
			s.max = o.MaxBytes
		}
		if o.MaxSignalBytes > 0 {
			s.maxSig = o.MaxSignalBytes
		}
		if o.MaxInboxBytes > 0 {
			s.maxBox = o.MaxInboxBytes
		}
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	s.owner = hex.EncodeToString(id[:])
	return s
}

// Lease implements tasks.SharedStore.
func (s *Store) Lease() time.Duration { return s.lease }

// Owner returns the id of this instance as the owner of tasks, as
// recorded with each task it creates.
func (s *Store) Owner() string { return s.owner }

// Key returns the key of a task's record (a hash with fields s: status,
// t: state, p: principal, o: owner), for operations and tests.
func (s *Store) Key(id string) string { return s.prefix + "{" + id + "}" }

func (s *Store) leaseKey(id string) string { return s.prefix + "{" + id + "}:lease" }
func (s *Store) inbox(owner string) string { return s.prefix + "inbox:{" + owner + "}" }
func (s *Store) inboxBytes(owner string) string {
	return s.prefix + "inbox:{" + owner + "}:bytes"
}

// inboxTTL is how long an inbox outlives its last signal.
func (s *Store) inboxTTL() time.Duration { return max(10*s.lease, time.Minute) }

// validID reports whether id can be a task id (the server's are
// base64url): anything else is not found, and never becomes a key.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// A terminal status in Lua, shared by the scripts.
const luaEnded = `local function ended(s) return s == 'completed' or s == 'failed' or s == 'cancelled' end
`

// KEYS: record, lease. ARGV: status, state, principal, owner, ttl ms, lease ms.
var createScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 't', ARGV[2], 'p', ARGV[3], 'o', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[6])
return 1`)

// KEYS: record, lease. ARGV: status, state. -1 gone, 0 ended, 1 written.
var updateScript = redis.NewScript(luaEnded + `
local s = redis.call('HGET', KEYS[1], 's')
if not s then return -1 end
if ended(s) then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 't', ARGV[2])
if ended(ARGV[1]) then redis.call('DEL', KEYS[2]) end
return 1`)

// KEYS: record, lease. Returns {status, state, principal, lease exists}
// or nil.
var getScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 't', 'p')
if not v[1] then return false end
return {v[1], v[2] or '', v[3] or '', redis.call('EXISTS', KEYS[2])}`)

// KEYS: record, lease. ARGV: the failed state. Fails a running task
// without a lease, then answers as getScript.
var abandonScript = redis.NewScript(luaEnded + `
local s = redis.call('HGET', KEYS[1], 's')
if not s then return false end
if not ended(s) and redis.call('EXISTS', KEYS[2]) == 0 then
	redis.call('HSET', KEYS[1], 's', 'failed', 't', ARGV[1])
end
local v = redis.call('HMGET', KEYS[1], 's', 't', 'p')
return {v[1], v[2] or '', v[3] or '', redis.call('EXISTS', KEYS[2])}`)

// KEYS: record, lease. ARGV: status, state. -1 gone, 0 ended, else
// the owner.
var cancelScript = redis.NewScript(luaEnded + `
local v = redis.call('HMGET', KEYS[1], 's', 'o')
if not v[1] then return -1 end
if ended(v[1]) then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 't', ARGV[2])
redis.call('DEL', KEYS[2])
return v[2] or ''`)

// KEYS: record, lease. ARGV: owner, lease ms. 1 renewed, 0 over.
var renewScript = redis.NewScript(luaEnded + `
local s = redis.call('HGET', KEYS[1], 's')
if not s or ended(s) then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1`)

// KEYS: inbox, its byte count. ARGV: signal, max bytes (0: none), max
// entries, ttl ms. 1 sent, -1 the bytes bound, -2 the entries bound.
var sendScript = redis.NewScript(`
local size = string.len(ARGV[1])
local n = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) > 0 then
  if n + size > tonumber(ARGV[2]) then return -1 end
  if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[3]) then return -2 end
end
redis.call('XADD', KEYS[1], '*', 'd', ARGV[1])
redis.call('INCRBY', KEYS[2], size)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1`)

// KEYS: inbox, its byte count. ARGV: id, size, ... of delivered
// signals, deleted from the inbox and its count (once each, so that a
// retried call counts nothing twice).
var readScript = redis.NewScript(`
local n = 0
for i = 1, #ARGV, 2 do
  if redis.call('XDEL', KEYS[1], ARGV[i]) == 1 then n = n + tonumber(ARGV[i + 1]) end
end
if n > 0 and redis.call('DECRBY', KEYS[2], n) < 0 then redis.call('SET', KEYS[2], '0', 'KEEPTTL') end
return n`)

func (s *Store) encode(t *tasks.Task) ([]byte, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("redistasks: encoding task %s: %w", t.TaskID, err)
	}
	if len(b) > s.max {
		return nil, fmt.Errorf("redistasks: task %s state is %d bytes, over the store's bound of %d", t.TaskID, len(b), s.max)
	}
	return b, nil
}

// Create implements tasks.Store. The task needs a TTL: the record
// expires with it.
func (s *Store) Create(ctx context.Context, t *tasks.Task) error {
	if !validID(t.TaskID) {
		return fmt.Errorf("redistasks: invalid task id %q", t.TaskID)
	}
	if t.TTLMs == nil {
		return errors.New("redistasks: a task needs a TTL")
	}
	ttl := time.Duration(*t.TTLMs)*time.Millisecond - time.Since(t.CreatedAt)
	if ttl <= 0 {
		return fmt.Errorf("redistasks: task %s expired before it was created", t.TaskID)
	}
	b, err := s.encode(t)
	if err != nil {
		return err
	}
	ms := ttl.Milliseconds() + 1 // round up: the record outlives the task, not the reverse
	lease := min(s.lease.Milliseconds(), ms)
	n, err := createScript.Run(ctx, s.c, []string{s.Key(t.TaskID), s.leaseKey(t.TaskID)},
		string(t.Status), b, t.Principal, s.owner, ms, lease).Int()
	if err != nil {
		return fmt.Errorf("redistasks: creating task %s: %w", t.TaskID, err)
	}
	if n == 0 {
		return fmt.Errorf("redistasks: task %s exists already", t.TaskID)
	}
	return nil
}

// Get implements tasks.Store, and fails a running task whose lease
// lapsed (see the package documentation).
func (s *Store) Get(ctx context.Context, id string) (*tasks.Task, error) {
	if !validID(id) {
		return nil, tasks.ErrNotFound
	}
	keys := []string{s.Key(id), s.leaseKey(id)}
	t, leased, err := s.read(getScript.Run(ctx, s.c, keys))
	if err != nil || leased || t.Status.Terminal() {
		return t, s.readErr(id, err)
	}
	// Running, and its owner stopped renewing: fail it unless the owner
	// renewed or finished in the meantime (the script checks both).
	f := *t
	f.Status, f.LastUpdatedAt = tasks.Failed, time.Now().UTC()
	f.InputRequests, f.Result, f.Error = nil, nil, tasks.ErrInstanceStopped
	b, err := s.encode(&f)
	if err != nil {
		return nil, err
	}
	t, _, err = s.read(abandonScript.Run(ctx, s.c, keys, b))
	return t, s.readErr(id, err)
}

func (s *Store) readErr(id string, err error) error {
	switch {
	case err == nil, errors.Is(err, tasks.ErrNotFound):
		return err
	}
	return fmt.Errorf("redistasks: reading task %s: %w", id, err)
}

// read decodes the answer of getScript or abandonScript.
func (s *Store) read(cmd *redis.Cmd) (t *tasks.Task, leased bool, err error) {
	v, err := cmd.Slice()
	if errors.Is(err, redis.Nil) {
		return nil, false, tasks.ErrNotFound
	}
	if err != nil {
		return nil, false, err
	}
	if len(v) != 4 {
		return nil, false, errors.New("unexpected reply")
	}
	status, _ := v[0].(string)
	state, _ := v[1].(string)
	principal, _ := v[2].(string)
	lease, _ := v[3].(int64)
	if len(state) > s.max {
		return nil, false, errors.New("state over the store's bound")
	}
	t = new(tasks.Task)
	if err := json.Unmarshal([]byte(state), t); err != nil {
		return nil, false, fmt.Errorf("malformed state: %w", err)
	}
	if t.Status != tasks.Status(status) {
		return nil, false, errors.New("inconsistent status")
	}
	t.Principal = principal
	return t, lease == 1, nil
}

// Update implements tasks.Store: tasks.ErrEnded when the stored
// state is terminal (cancelled through another instance, failed after a
// lapsed lease), tasks.ErrNotFound when the record expired.
func (s *Store) Update(ctx context.Context, t *tasks.Task) error {
	if !validID(t.TaskID) {
		return tasks.ErrNotFound
	}
	b, err := s.encode(t)
	if err != nil {
		return err
	}
	n, err := updateScript.Run(ctx, s.c, []string{s.Key(t.TaskID), s.leaseKey(t.TaskID)}, string(t.Status), b).Int()
	switch {
	case err != nil:
		return fmt.Errorf("redistasks: writing task %s: %w", t.TaskID, err)
	case n < 0:
		return tasks.ErrNotFound
	case n == 0:
		return tasks.ErrEnded
	}
	return nil
}

// Cancel implements tasks.SharedStore.
func (s *Store) Cancel(ctx context.Context, t *tasks.Task) error {
	if !validID(t.TaskID) {
		return tasks.ErrNotFound
	}
	b, err := s.encode(t)
	if err != nil {
		return err
	}
	v, err := cancelScript.Run(ctx, s.c, []string{s.Key(t.TaskID), s.leaseKey(t.TaskID)}, string(t.Status), b).Result()
	if err != nil {
		return fmt.Errorf("redistasks: cancelling task %s: %w", t.TaskID, err)
	}
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return tasks.ErrNotFound
		}
		return tasks.ErrEnded
	case string:
		// Stored: now tell the owner. Should this fail, the owner still
		// learns it at its next renewal, which reports the task ended.
		return s.send(ctx, v, tasks.Signal{TaskID: t.TaskID, Cancel: true})
	}
	return fmt.Errorf("redistasks: cancelling task %s: unexpected reply %v", t.TaskID, v)
}

// Signal implements tasks.SharedStore: the signal is appended to the
// owner's inbox stream.
func (s *Store) Signal(ctx context.Context, sig tasks.Signal) error {
	if !validID(sig.TaskID) {
		return tasks.ErrNotFound
	}
	owner, err := s.c.HGet(ctx, s.Key(sig.TaskID), "o").Result()
	switch {
	case errors.Is(err, redis.Nil):
		return tasks.ErrNotFound
	case err != nil:
		return fmt.Errorf("redistasks: signalling task %s: %w", sig.TaskID, err)
	}
	return s.send(ctx, owner, sig)
}

func (s *Store) send(ctx context.Context, owner string, sig tasks.Signal) error {
	b, err := json.Marshal(sig)
	if err != nil {
		return fmt.Errorf("redistasks: encoding a signal: %w", err)
	}
	maxBox := s.maxBox
	if sig.Cancel {
		maxBox = 0 // one per task at most: always sent
	} else if len(b) > s.maxSig {
		return fmt.Errorf("redistasks: a signal of %d bytes for task %s: %w", len(b), sig.TaskID,
			mcp.NewError(mcp.CodeInvalidParams, fmt.Sprintf("Invalid params: the answers are %d bytes, over the task store's bound of %d", len(b), s.maxSig), nil))
	}
	n, err := sendScript.Run(ctx, s.c, []string{s.inbox(owner), s.inboxBytes(owner)},
		b, maxBox, inboxLen, s.inboxTTL().Milliseconds()).Int()
	switch {
	case err != nil:
		return fmt.Errorf("redistasks: signalling task %s: %w", sig.TaskID, err)
	case n == -1:
		return fmt.Errorf("redistasks: the inbox of task %s's owner holds signals not yet read up to its bound of %d bytes (this one is %d): %w",
			sig.TaskID, s.maxBox, len(b), mcp.TemporarilyUnavailable(time.Second))
	case n == -2:
		return fmt.Errorf("redistasks: task %s's owner has %d signals waiting: %w", sig.TaskID, inboxLen, mcp.TemporarilyUnavailable(time.Second))
	}
	return nil
}

// Receive implements tasks.SharedStore: it reads this instance's inbox
// from where the last call left off. Entries that are not signals (or
// over MaxBytes) are skipped.
func (s *Store) Receive(ctx context.Context, deliver func(tasks.Signal)) error {
	key := s.inbox(s.owner)
	for ctx.Err() == nil {
		s.mu.Lock()
		last := s.lastID
		s.mu.Unlock()
		res, err := s.c.XRead(ctx, &redis.XReadArgs{Streams: []string{key, last}, Count: readCount, Block: s.block}).Result()
		if errors.Is(err, redis.Nil) {
			continue // nothing within the block time
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("redistasks: reading the inbox: %w", err)
		}
		for _, st := range res {
			for _, m := range st.Messages {
				d, _ := m.Values["d"].(string)
				s.mu.Lock()
				s.lastID = m.ID
				s.unread = append(s.unread, m.ID, strconv.Itoa(len(d)))
				s.mu.Unlock()
				var sig tasks.Signal
				if len(d) > max(s.max, s.maxSig) || json.Unmarshal([]byte(d), &sig) != nil || !validID(sig.TaskID) {
					continue
				}
				deliver(sig)
			}
		}
		s.forget(ctx, key)
	}
	return nil
}

// forget deletes the signals delivered from the inbox, which frees
// their bytes for more; those it could not delete are tried again after
// the next read.
func (s *Store) forget(ctx context.Context, key string) {
	s.mu.Lock()
	done := s.unread
	s.unread = nil
	s.mu.Unlock()
	if len(done) == 0 {
		return
	}
	if err := readScript.Run(ctx, s.c, []string{key, s.inboxBytes(s.owner)}, toAny(done)...).Err(); err != nil && !errors.Is(err, redis.Nil) {
		s.mu.Lock()
		s.unread = append(done, s.unread...)
		s.mu.Unlock()
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, v := range ss {
		out[i] = v
	}
	return out
}

// Renew implements tasks.SharedStore, in pipelines of up to 512
// tasks.
func (s *Store) Renew(ctx context.Context, ids []string) (ended []string, err error) {
	lease := strconv.FormatInt(s.lease.Milliseconds(), 10)
	for len(ids) > 0 {
		batch := ids[:min(len(ids), renewBatch)]
		ids = ids[len(batch):]
		cmds := make([]*redis.Cmd, len(batch))
		_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range batch {
				if validID(id) {
					cmds[i] = renewScript.Eval(ctx, p, []string{s.Key(id), s.leaseKey(id)}, s.owner, lease)
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return ended, fmt.Errorf("redistasks: renewing leases: %w", err)
		}
		for i, c := range cmds {
			if c == nil {
				ended = append(ended, batch[i])
				continue
			}
			if n, err := c.Int(); err == nil && n == 0 {
				ended = append(ended, batch[i])
			}
		}
	}
	return ended, nil
}
