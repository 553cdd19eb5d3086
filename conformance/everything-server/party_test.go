package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/netaddr"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

func TestRateLimitFlagForms(t *testing.T) {
	for _, c := range []struct {
		in    string
		rate  float64
		burst int
		ok    bool
	}{
		{"10/s", 10, 10, true},
		{"0.5/s", 0.5, 1, true},
		{"10/s:25", 10, 25, true},
		{"10", 0, 0, false},
		{"10/m", 0, 0, false},
		{"0/s", 0, 0, false},
		{"-1/s", 0, 0, false},
		{"NaN/s", 0, 0, false},
		{"10/s:0", 0, 0, false},
		{"10/s:x", 0, 0, false},
	} {
		rate, burst, err := parseRate(c.in)
		if (err == nil) != c.ok || rate != c.rate || burst != c.burst {
			t.Errorf("parseRate(%q) = %v, %v, %v", c.in, rate, burst, err)
		}
	}
	ps, err := netaddr.ParsePrefixes("127.0.0.1, 10.9.0.0/16,::1")
	if err != nil || fmt.Sprint(ps) != "[127.0.0.1/32 10.9.0.0/16 ::1/128]" {
		t.Errorf("parsePrefixes: %v %v", ps, err)
	}
	if _, err := netaddr.ParsePrefixes("localhost"); err == nil {
		t.Error("a name was taken as a proxy")
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	pf := partyFlagsOf(fs)
	if err := fs.Parse([]string{"-rate-limit", "5/s"}); err != nil {
		t.Fatal(err)
	}
	if o, err := pf.httpOptions(fs, stateFlags{}); err != nil || o.RateLimit == nil || o.TrustedProxies != nil {
		t.Errorf("in-process limit: %v %v", o, err)
	}
}

// post sends tools/list as the client behind a proxy named client
// (X-Forwarded-For) and returns the status and Retry-After.
func postAs(t *testing.T, url, client string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/list")
	r.Header.Set("X-Forwarded-For", client)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusTooManyRequests {
		var m struct {
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &m) != nil || m.Error.Code != -32000 {
			t.Errorf("429 body %s", b)
		}
	} else if resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// -rate-limit with -trusted-proxies: each forwarded client has its own
// burst; past it, 429 with Retry-After. With a Redis -guard, two
// processes share the count.
func TestRateLimitFlagLimitsEachForwardedClient(t *testing.T) {
	bin := buildServer(t)
	url := startHTTP(t, bin, "-trusted-proxies", "127.0.0.1", "-rate-limit", "0.01/s:2")
	for i := range 2 {
		if st, _ := postAs(t, url, "198.51.100.1"); st != http.StatusOK {
			t.Fatalf("request %d of the burst: %d", i, st)
		}
	}
	st, ra := postAs(t, url, "198.51.100.1")
	if n, _ := strconv.Atoi(ra); st != http.StatusTooManyRequests || n < 1 {
		t.Errorf("past the burst: %d, Retry-After %q", st, ra)
	}
	if st, _ := postAs(t, url, "198.51.100.2"); st != http.StatusOK {
		t.Errorf("another client behind the proxy: %d", st)
	}

	sock := redistest.Start(t)
	keys := newKey()
	a := startHTTP(t, bin, "-state-keys", keys, "-guard", "unix://"+sock, "-trusted-proxies", "127.0.0.1", "-rate-limit", "0.01/s:2")
	b := startHTTP(t, bin, "-state-keys", keys, "-guard", "unix://"+sock, "-trusted-proxies", "127.0.0.1", "-rate-limit", "0.01/s:2")
	if st, _ := postAs(t, a, "203.0.113.1"); st != http.StatusOK {
		t.Fatalf("first on a: %d", st)
	}
	if st, _ := postAs(t, b, "203.0.113.1"); st != http.StatusOK {
		t.Fatalf("second on b: %d", st)
	}
	if st, _ := postAs(t, a, "203.0.113.1"); st != http.StatusTooManyRequests {
		t.Errorf("third, on a, past the shared burst: %d", st)
	}
}
