package redisguard

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/internal/testredis"
)

func startRedis(t *testing.T) *redis.Client { return testredis.Client(t, testredis.Start(t)) }

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
