package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Behind nginx, 200 anonymous clients, each from its own address, each
// keep their 2025-11-25 session with the default quota (100 sessions per
// party): the instance trusts nginx (-trusted-proxies) and counts each
// client by its X-Forwarded-For address. Without -trusted-proxies every
// client is nginx's address, one party, and the first sessions are
// ended to make room for the later ones.
func TestAnonymousClientsBehindNginxKeepTheirSessions(t *testing.T) {
	if c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 201)}}).Dial("tcp", "127.0.0.1:1"); err != nil && strings.Contains(err.Error(), "assign") {
		t.Skipf("cannot dial from 127.0.0.201: %v", err)
	} else if c != nil {
		c.Close()
	}
	dir := t.TempDir()
	sock, stopRedis, err := startRedis(dir)
	if err != nil {
		t.Fatalf("%v (the test command installs redis-server)", err)
	}
	defer stopRedis()
	const clients = 200
	for _, c := range []struct {
		name, proxies string
		wantAlive     func(alive int) bool
	}{
		{"trusted", "127.0.0.1", func(n int) bool { return n == clients }},
		{"untrusted", "", func(n int) bool { return n <= 100 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := Start(Config{Self: os.Args[0], Dir: filepath.Join(dir, c.name), Instances: 1,
				Redis: "unix://" + sock, TrustedProxies: c.proxies})
			if err != nil {
				t.Fatalf("%v (the test command installs nginx-light)", err)
			}
			defer f.Close()
			cls := make([]*http.Client, clients)
			for i := range cls {
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(i+2))}, Timeout: 5 * time.Second}
				tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1}
				defer tr.CloseIdleConnections()
				cls[i] = &http.Client{Transport: tr, Timeout: 20 * time.Second}
			}
			// Every client opens its session, in order (so that the
			// oldest are the ones a shared quota ends), then each asks.
			sids := make([]string, clients)
			for i, hc := range cls {
				st, hdr, body, err := post(hc, f.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"party","version":"1"}}}`)
				if err != nil || st != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
					t.Fatalf("client %d initialize: %d %v %s\n%s", i, st, err, body, f.Logs(2000))
				}
				sids[i] = hdr.Get("Mcp-Session-Id")
				if st, _, body, err := post(hc, f.URL, sids[i], `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || st != http.StatusAccepted {
					t.Fatalf("client %d initialized: %d %v %s", i, st, err, body)
				}
			}
			var mu sync.Mutex
			alive, gone := 0, 0
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			for i, hc := range cls {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					st, _, body, err := post(hc, f.URL, sids[i], `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil && st == http.StatusOK && strings.Contains(body, `"name":"provision"`):
						alive++
					case err == nil && st == http.StatusNotFound:
						gone++
					default:
						t.Errorf("client %d tools/list: %d %v %.300s", i, st, err, body)
					}
				}()
			}
			wg.Wait()
			t.Logf("%d sessions answer, %d were ended", alive, gone)
			if !c.wantAlive(alive) {
				t.Errorf("%d of %d sessions answer tools/list, %d were ended", alive, clients, gone)
			}
		})
	}
}

// post sends one JSON-RPC message of a 2025-11-25 session (none for
// initialize) and returns the status, the headers and the body.
func post(hc *http.Client, url, sid, body string) (int, http.Header, string, error) {
	r, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := hc.Do(r)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, "", fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, resp.Header, string(b), nil
}

// -trusted-proxies takes CIDRs and bare IPs, and refuses anything else.
func TestTrustedProxiesFlag(t *testing.T) {
	f, err := parseServeFlags([]string{"-id", "a", "-redis", "redis://x", "-trusted-proxies", "127.0.0.1, 10.1.2.3/8,::1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(f.proxies); got != "[127.0.0.1/32 10.0.0.0/8 ::1/128]" {
		t.Errorf("proxies %s", got)
	}
	if _, err := parseServeFlags([]string{"-id", "a", "-redis", "redis://x", "-trusted-proxies", "nginx"}, io.Discard); err == nil {
		t.Error("a name was taken as a proxy")
	}
}
