package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server the test can stop and start again, on a Unix
// socket (Sock) or a loopback TCP port (Port), with no persistence
// unless extra turns it on (a restart then comes back empty).
type Server struct {
	Sock string
	Port int
	dir  string
	args []string
	cmd  *exec.Cmd
	t    testing.TB
}

// StartServer starts a restartable redis-server on a Unix socket; with
// tcp, on a free loopback port instead. extra are more arguments
// (replicaof, ...).
func StartServer(t testing.TB, tcp bool, extra ...string) *Server {
	t.Helper()
	s := &Server{dir: t.TempDir(), t: t}
	if tcp {
		s.Port = FreePort(t)
		s.args = []string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1"}
	} else {
		s.Sock = filepath.Join(s.dir, "redis.sock")
		s.args = []string{"--port", "0", "--unixsocket", s.Sock}
	}
	s.args = append(s.args, "--save", "", "--appendonly", "no", "--dir", s.dir)
	s.args = append(s.args, extra...)
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// Dir is the server's working directory, where its persistence files
// (dump.rdb, appendonlydir) are written.
func (s *Server) Dir() string { return s.dir }

// Addr is the address for redis.Options (with Network).
func (s *Server) Addr() (network, addr string) {
	if s.Sock != "" {
		return "unix", s.Sock
	}
	return "tcp", "127.0.0.1:" + strconv.Itoa(s.Port)
}

// Client returns a client of s, closed when the test ends.
func (s *Server) Client() *redis.Client {
	n, a := s.Addr()
	c := redis.NewClient(&redis.Options{Network: n, Addr: a})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Start starts the server (again) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		s.t.Fatalf("redis-server is required (the test command installs it): %v", err)
	}
	s.cmd = exec.Command(bin, s.args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	waitPing(s.t, s.Client())
}

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart kills the server and starts it again: empty, or from its
// persistence files when extra turned persistence on.
func (s *Server) Restart() {
	s.Kill()
	if s.Sock != "" {
		os.Remove(s.Sock)
	}
	s.Start()
}

func waitPing(t testing.TB, c *redis.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for c.Ping(ctx).Err() != nil {
		select {
		case <-ctx.Done():
			t.Fatal("redis-server did not come up")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Sentinel is a primary, one replica and three sentinels on loopback.
type Sentinel struct {
	Master        string // the monitored name
	Primary       *Server
	Replica       *Server
	SentinelAddrs []string
	t             testing.TB
}

// StartSentinel starts a Sentinel group: one primary, one replica, three
// sentinels with quorum 2 and a one-second down-after.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	g := &Sentinel{Master: "mymaster", t: t}
	g.Primary = StartServer(t, true)
	g.Replica = StartServer(t, true, "--replicaof", "127.0.0.1", strconv.Itoa(g.Primary.Port))
	bin, err := exec.LookPath("redis-sentinel")
	args := []string{}
	if err != nil {
		if bin, err = exec.LookPath("redis-server"); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--sentinel")
	}
	for range 3 {
		port := FreePort(t)
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 1\n",
			port, dir, g.Master, g.Primary.Port, g.Master, g.Master, g.Master)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, append([]string{conf}, args...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr := "127.0.0.1:" + strconv.Itoa(port)
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { sc.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for sc.Ping(ctx).Err() != nil && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		g.SentinelAddrs = append(g.SentinelAddrs, addr)
	}
	g.waitReplicaSynced()
	return g
}

// waitReplicaSynced waits until the replica reports a live link to the
// primary and the sentinels know it.
func (g *Sentinel) waitReplicaSynced() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc := g.Replica.Client()
	for {
		info, _ := rc.Info(ctx, "replication").Result()
		n := 0
		for _, a := range g.SentinelAddrs {
			sc := redis.NewSentinelClient(&redis.Options{Addr: a})
			if rs, err := sc.Replicas(ctx, g.Master).Result(); err == nil && len(rs) > 0 {
				n++
			}
			sc.Close()
		}
		if n == len(g.SentinelAddrs) && strings.Contains(info, "master_link_status:up") {
			return
		}
		if ctx.Err() != nil {
			g.t.Fatalf("the sentinel group did not settle: %s", info)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Client returns a failover client of the group (it follows the
// primary through a failover).
func (g *Sentinel) Client() *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.Master, SentinelAddrs: g.SentinelAddrs,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	g.t.Cleanup(func() { c.Close() })
	return c
}

// FailOver kills the primary and waits until the sentinels have promoted
// the replica.
func (g *Sentinel) FailOver() {
	g.t.Helper()
	g.Primary.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := "127.0.0.1:" + strconv.Itoa(g.Replica.Port)
	for {
		sc := redis.NewSentinelClient(&redis.Options{Addr: g.SentinelAddrs[0]})
		addr, err := sc.GetMasterAddrByName(ctx, g.Master).Result()
		sc.Close()
		if err == nil && len(addr) == 2 && addr[0]+":"+addr[1] == want {
			if role, _ := g.Replica.Client().Do(ctx, "ROLE").Slice(); len(role) > 0 && role[0] == "master" {
				return
			}
		}
		if ctx.Err() != nil {
			g.t.Fatal("no failover within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
