package redisguard

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startRedis runs a real redis-server on a Unix socket in a temporary
// directory (no TCP port), for the duration of the test.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is required (the test command installs it): %v", err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatal("redis-server did not come up")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestFleetSharesConsumedStates(t *testing.T) {
	c := startRedis(t)
	ctx := context.Background()
	instanceA, instanceB := New(c), New(c)
	exp := time.Now().Add(time.Minute)
	if ok, err := instanceA.Use(ctx, "v1.token-one", exp); err != nil || !ok {
		t.Fatalf("first use: %v %v", ok, err)
	}
	if ok, err := instanceB.Use(ctx, "v1.token-one", exp); err != nil || ok {
		t.Fatalf("second use on another instance accepted: %v %v", ok, err)
	}
	if ok, _ := instanceB.Use(ctx, "v1.token-two", exp); !ok {
		t.Error("an unrelated token was refused")
	}
	ttl, err := c.PTTL(ctx, "mcp:rs:"+tokenKey("v1.token-one")).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute+time.Second {
		t.Errorf("entry lifetime %v %v, want about the token's remaining minute", ttl, err)
	}
}

func TestEntriesExpireWithTheirToken(t *testing.T) {
	c := startRedis(t)
	ctx := context.Background()
	g := New(c)
	if ok, _ := g.Use(ctx, "short", time.Now().Add(50*time.Millisecond)); !ok {
		t.Fatal("first use refused")
	}
	time.Sleep(120 * time.Millisecond)
	if n, _ := c.Exists(ctx, "mcp:rs:"+tokenKey("short")).Result(); n != 0 {
		t.Error("entry outlived its token")
	}
	if ok, _ := g.Use(ctx, "gone", time.Now().Add(-time.Second)); ok {
		t.Error("an expired token was accepted")
	}
}

func TestRedisErrorDenies(t *testing.T) {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: filepath.Join(t.TempDir(), "none.sock"), MaxRetries: -1})
	defer c.Close()
	ok, err := New(c).Use(context.Background(), "t", time.Now().Add(time.Minute))
	if ok || err == nil {
		t.Errorf("unreachable redis: %v %v", ok, err)
	}
}
