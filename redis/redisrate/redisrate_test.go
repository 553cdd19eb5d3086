package redisrate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

func allow(t *testing.T, l *Limiter, party string) time.Duration {
	t.Helper()
	d, err := l.Allow(context.Background(), party)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Two limiters on one store (two instances of a fleet) hold a party to
// one burst and one rate together; another party is not affected.
func TestLimitHoldsAcrossInstances(t *testing.T) {
	srv := redistest.StartServer(t, false)
	o := Options{Rate: 1, Burst: 4, Prefix: "t:"}
	a, b := New(srv.Client(), o), New(srv.Client(), o)
	allowed := 0
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if allow(t, l, "address 192.0.2.1") == 0 {
			allowed++
		}
	}
	if allowed != 4 {
		t.Errorf("%d of 10 allowed across two instances, want the burst of 4", allowed)
	}
	if d := allow(t, b, "address 192.0.2.1"); d <= 0 || d > time.Second {
		t.Errorf("past the burst: wait %v, want within one interval", d)
	}
	if d := allow(t, a, "address 192.0.2.2"); d != 0 {
		t.Errorf("another party limited: %v", d)
	}
	// A key per party, living no longer than the party is ahead.
	keys, err := srv.Client().Keys(context.Background(), "t:*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %v %v", keys, err)
	}
	for _, k := range keys {
		if ttl := srv.Client().PTTL(context.Background(), k).Val(); ttl <= 0 || ttl > 5*time.Second {
			t.Errorf("key %s TTL %v", k, ttl)
		}
	}
}

// After the wait it was told, a party is allowed again, one request an
// interval; a burst comes back once it has been quiet long enough.
func TestLimitRecoversAfterTheWindow(t *testing.T) {
	srv := redistest.StartServer(t, false)
	l := New(srv.Client(), Options{Rate: 2, Burst: 2}) // 500 ms an interval
	p := "principal alice"
	for i := range 2 {
		if d := allow(t, l, p); d != 0 {
			t.Fatalf("request %d of the burst of 2 refused (%v)", i, d)
		}
	}
	d := allow(t, l, p)
	if d <= 0 || d > 500*time.Millisecond {
		t.Fatalf("past the burst: wait %v", d)
	}
	time.Sleep(d + 5*time.Millisecond)
	if w := allow(t, l, p); w != 0 {
		t.Errorf("after the wait: still refused for %v", w)
	}
	if allow(t, l, p) == 0 {
		t.Error("two requests allowed after one wait")
	}
	time.Sleep(1100 * time.Millisecond)
	for i := range 2 {
		if d := allow(t, l, p); d != 0 {
			t.Errorf("after a quiet while, request %d of the burst refused (%v)", i, d)
		}
	}
}

// A store that is down makes Allow fail, promptly, and the HTTP handler
// then lets requests through (fail open).
func TestRedisDownFailsOpen(t *testing.T) {
	srv := redistest.StartServer(t, false)
	n, addr := srv.Addr()
	c := redis.NewClient(&redis.Options{Network: n, Addr: addr, MaxRetries: -1})
	defer c.Close()
	l := New(c, Options{Rate: 0.001, Burst: 1, Timeout: 200 * time.Millisecond})
	if allow(t, l, "p") != 0 || allow(t, l, "p") == 0 {
		t.Fatal("the limit does not hold while the store is up")
	}
	srv.Kill()
	start := time.Now()
	if d, err := l.Allow(context.Background(), "p"); err == nil || d != 0 {
		t.Errorf("store down: %v %v, want an error", d, err)
	}
	if e := time.Since(start); e > 2*time.Second {
		t.Errorf("Allow took %v with the store down", e)
	}

	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, nil)
	ts := httptest.NewServer(mcp.NewHTTPHandler(s, &mcp.HTTPOptions{RateLimit: l.Allow}))
	defer ts.Close()
	for range 3 {
		r, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || m["result"] == nil {
			t.Fatalf("with the store down: %d %v", resp.StatusCode, m)
		}
	}
}
