package redissessions

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest/sessionstoretest"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

func TestContract(t *testing.T) {
	srv := redistest.StartServer(t, false)
	c := srv.Client()
	var n atomic.Int64
	sessionstoretest.Run(t, func(t *testing.T) mcp.SessionStore {
		// One server, a prefix per subtest: each gets an empty store.
		return New(c, Options{Prefix: "t" + strconv.FormatInt(n.Add(1), 10) + ":", MaxEvents: 50})
	})
}

// counter counts the commands a client sends (a pipeline counts as one
// round trip).
type counter struct {
	mu    sync.Mutex
	trips int
	cmds  []string
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.trips++
		c.cmds = append(c.cmds, cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.trips++
		for _, cmd := range cmds {
			c.cmds = append(c.cmds, cmd.Name())
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (c *counter) reset() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, cmds := c.trips, c.cmds
	c.trips, c.cmds = 0, nil
	return n, cmds
}

func rec(id, party string) *mcp.SessionRecord {
	return &mcp.SessionRecord{ID: id, ProtocolVersion: "2025-11-25", Party: party, Transport: mcp.TransportHTTP,
		ClientInfo: mcp.Implementation{Name: "c", Version: "1"}, IdleTimeout: time.Minute}
}

func TestTouchIsOneRoundTrip(t *testing.T) {
	srv := redistest.StartServer(t, false)
	c := srv.Client()
	var cnt counter
	c.AddHook(&cnt)
	s := New(c, Options{})
	ctx := context.Background()
	if _, err := s.Create(ctx, rec("s", "p"), 5, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Touch(ctx, "s"); err != nil { // loads the script once
		t.Fatal(err)
	}
	cnt.reset()
	for range 10 {
		if v, err := s.Touch(ctx, "s"); err != nil || v != 1 {
			t.Fatalf("Touch: %d %v", v, err)
		}
	}
	if n, cmds := cnt.reset(); n != 10 {
		t.Errorf("10 Touches took %d round trips (%v), want 10", n, cmds)
	}
	if _, err := s.Touch(ctx, "unknown"); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Fatal(err)
	}
	if n, cmds := cnt.reset(); n != 1 {
		t.Errorf("a Touch of an unknown session took %d round trips (%v)", n, cmds)
	}
	// The Touch refreshed the record's lifetime and the party's use.
	if ttl := c.PTTL(ctx, s.recKey("s")).Val(); ttl < 59*time.Second || ttl > time.Minute {
		t.Errorf("the record's TTL %v, want about the idle timeout (1m)", ttl)
	}
}

// A Redis restarted empty has lost every session: they are not found
// (the client initializes again), and the store works on.
func TestRestartLosesSessionsWithoutPanic(t *testing.T) {
	srv := redistest.StartServer(t, false)
	c := srv.Client()
	s := New(c, Options{})
	ctx := context.Background()
	if _, err := s.Create(ctx, rec("s", "p"), 5, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, "s", mcp.SessionEvent{Stream: 1, Seq: 1, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recvDone := make(chan error, 1)
	ready := make(chan struct{})
	go func() { recvDone <- s.Receive(rctx, "i1", func() { close(ready) }, func([]byte) {}) }()
	<-ready

	srv.Restart()

	// The first commands after the restart may meet a closed connection.
	var err error
	for range 20 {
		if _, err = s.Touch(ctx, "s"); errors.Is(err, mcp.ErrSessionNotFound) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Fatalf("Touch after the restart: %v, want ErrSessionNotFound", err)
	}
	if _, err := s.Load(ctx, "s"); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("Load after the restart: %v", err)
	}
	if _, err := s.Update(ctx, "s", mcp.SessionUpdate{Initialized: true}); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("Update after the restart: %v", err)
	}
	if err := s.AppendEvent(ctx, "s", mcp.SessionEvent{Stream: 1, Seq: 2}); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("AppendEvent after the restart: %v", err)
	}
	if evs, kept, err := s.EventsAfter(ctx, "s", 1, 0, 0); !errors.Is(err, mcp.ErrSessionNotFound) || kept || len(evs) != 0 {
		t.Errorf("events after the restart: %v %v %v", evs, kept, err)
	}
	// The store serves new sessions (scripts are loaded again).
	if _, err := s.Create(ctx, rec("s2", "p"), 5, 0); err != nil {
		t.Fatalf("Create after the restart: %v", err)
	}
	if v, err := s.Touch(ctx, "s2"); err != nil || v != 1 {
		t.Errorf("Touch of a new session: %d %v", v, err)
	}
	cancel()
	select {
	case <-recvDone:
	case <-time.After(5 * time.Second):
		t.Error("Receive did not end after the restart and its ctx")
	}
}

// Bad data in the store is an error, not a panic or an unbounded read.
func TestOversizeAndMalformedRecordsAreRefused(t *testing.T) {
	srv := redistest.StartServer(t, false)
	c := srv.Client()
	s := New(c, Options{MaxRecordBytes: 1024, MaxEventBytes: 16, MaxMessageBytes: 16})
	ctx := context.Background()
	big := rec("big", "p")
	big.ClientInfo.Name = string(make([]byte, 2048))
	if _, err := s.Create(ctx, big, 5, 0); err == nil {
		t.Error("a record over MaxRecordBytes was written")
	}
	if _, err := s.Create(ctx, rec("s", "p"), 5, 0); err != nil {
		t.Fatal(err)
	}
	c.HSet(ctx, s.recKey("s"), "j", string(make([]byte, 4096)))
	if _, err := s.Load(ctx, "s"); err == nil {
		t.Error("a record over MaxRecordBytes was read")
	}
	c.HSet(ctx, s.recKey("s"), "j", "{not json")
	if _, err := s.Load(ctx, "s"); err == nil {
		t.Error("a malformed record was read")
	}
	c.HSet(ctx, s.recKey("s"), "v", "x")
	if _, err := s.Touch(ctx, "s"); err == nil || errors.Is(err, mcp.ErrSessionNotFound) {
		t.Errorf("a malformed version: %v", err)
	}
	if err := s.AppendEvent(ctx, "s", mcp.SessionEvent{Stream: 1, Seq: 1, Data: make([]byte, 17)}); err == nil {
		t.Error("an event over MaxEventBytes was appended")
	}
	if err := s.Publish(ctx, "i", make([]byte, 17)); err == nil {
		t.Error("a message over MaxMessageBytes was published")
	}
	// A message over the bound that reaches the channel is ignored.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, got := make(chan struct{}), make(chan string, 4)
	go s.Receive(rctx, "i", func() { close(ready) }, func(m []byte) { got <- string(m) })
	<-ready
	c.Publish(ctx, s.channel("i"), string(make([]byte, 17)))
	if err := s.Publish(ctx, "i", []byte("small")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "small" {
			t.Errorf("received %d bytes, want only the message within the bound", len(m))
		}
	case <-time.After(3 * time.Second):
		t.Error("the message within the bound never came")
	}
	if _, err := s.Create(ctx, rec("", "p"), 5, 0); err == nil {
		t.Error("a record without an id was created")
	}
	// An event not past the stream's last one is refused.
	if _, err := s.Create(ctx, rec("e", "p"), 5, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, "e", mcp.SessionEvent{Stream: 1, Seq: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, "e", mcp.SessionEvent{Stream: 1, Seq: 2}); err == nil {
		t.Error("an event appended twice")
	}
}

// Every key of one session has the session's hash tag, and on a
// cluster client the whole store shares the prefix's.
func TestKeysCarryHashTags(t *testing.T) {
	s := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Options{})
	for _, k := range []string{s.recKey("abc"), s.streamsKey("abc"), s.streamKey("abc", 7)} {
		if slot := tagOf(k); slot != "abc" {
			t.Errorf("key %q: hash tag %q, want abc", k, slot)
		}
	}
	cs := New(redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), Options{})
	for _, k := range []string{cs.recKey("abc"), cs.streamKey("abc", 1), cs.partyKey("p"), cs.allKey()} {
		if slot := tagOf(k); slot != "mcp:sess:" {
			t.Errorf("cluster key %q: hash tag %q, want mcp:sess:", k, slot)
		}
	}
}

// tagOf is the part of key that Redis Cluster hashes.
func tagOf(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j == i+1 {
						return key
					}
					return key[i+1 : j]
				}
			}
			return key
		}
	}
	return key
}

// BenchmarkTouch measures the hot path: one script, one round trip to a
// local redis-server on a Unix socket.
func BenchmarkTouch(b *testing.B) {
	srv := redistest.StartServer(b, false)
	s := New(srv.Client(), Options{})
	ctx := context.Background()
	if _, err := s.Create(ctx, rec("s", "p"), 5, 0); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Touch(ctx, "s"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Touch(ctx, "s"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTouchParallel is Touch from many goroutines (one instance's
// concurrent requests) over the client's pool.
func BenchmarkTouchParallel(b *testing.B) {
	srv := redistest.StartServer(b, false)
	s := New(srv.Client(), Options{})
	ctx := context.Background()
	if _, err := s.Create(ctx, rec("s", "p"), 5, 0); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Touch(ctx, "s"); err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Touch(ctx, "s"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// A wait given up (ctx cancelled, no deadline) ends at once, and the
// blocked read it started frees its connection within a second.
func TestCancelledWaitEndsAtOnce(t *testing.T) {
	srv := redistest.StartServer(t, false)
	c := srv.Client()
	s := New(c, Options{})
	ctx := context.Background()
	if _, err := s.Create(ctx, rec("s", "p"), 5, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, "s", mcp.SessionEvent{Stream: 1, Seq: 1, Data: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	if _, _, err := s.EventsAfter(wctx, "s", 1, 1, 30*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a wait cancelled after 100ms took %v", d)
	}
	deadline := time.Now().Add(3 * time.Second)
	for c.PoolStats().TotalConns-c.PoolStats().IdleConns > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := c.PoolStats(); st.TotalConns != st.IdleConns {
		t.Errorf("a connection still in use 3 s after the wait ended: %+v", st)
	}
}

// The contract on a Redis Cluster (one node holding every slot): a
// cluster refuses a script whose keys are in several slots, so this is
// the test that every script keeps to one.
func TestContractOnACluster(t *testing.T) {
	srv := redistest.StartServer(t, true, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	ctx := context.Background()
	node := srv.Client()
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, _ := node.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not come up: %s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, addr := srv.Addr()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { c.Close() })
	var n atomic.Int64
	sessionstoretest.Run(t, func(t *testing.T) mcp.SessionStore {
		return New(c, Options{Prefix: "c" + strconv.FormatInt(n.Add(1), 10) + ":", MaxEvents: 50})
	})
	// Without the prefix's hash tag a cluster refuses the scripts.
	bare := &Store{c: c, prefix: "bare:", o: New(c, Options{}).o}
	if _, err := bare.Create(ctx, rec("x", "p"), 5, 0); err == nil || !strings.Contains(err.Error(), "slot") {
		t.Errorf("a store whose keys span slots: %v, want the cluster's refusal", err)
	}
}
