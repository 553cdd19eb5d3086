package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func prefixes(t testing.TB, ss ...string) []netip.Prefix {
	t.Helper()
	var ps []netip.Prefix
	for _, s := range ss {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}

// The party address of a request: the peer's, unless the peer is a
// trusted proxy and the forwarding headers name the client.
func TestForwardedPartyHonoursOnlyTrustedProxies(t *testing.T) {
	t.Parallel()
	proxies := prefixes(t, "10.0.0.0/8", "2001:db8:ff::/48")
	long := strings.Repeat("192.0.2.1, ", maxForwardedHops) + "192.0.2.2"
	for _, c := range []struct {
		name, peer string
		xff, fwd   []string
		want       string
	}{
		{"no headers", "10.0.0.1:5000", nil, nil, "10.0.0.1"},
		{"untrusted peer, spoofed XFF", "192.0.2.9:5000", []string{"198.51.100.1"}, nil, "192.0.2.9"},
		{"untrusted peer, spoofed Forwarded", "192.0.2.9:5000", nil, []string{"for=198.51.100.1"}, "192.0.2.9"},
		{"one hop", "10.0.0.1:5000", []string{"198.51.100.1"}, nil, "198.51.100.1"},
		{"client's spoof left of the real hop", "10.0.0.1:5000", []string{"6.6.6.6, 198.51.100.1"}, nil, "198.51.100.1"},
		{"a chain of trusted proxies", "10.0.0.1:5000", []string{"198.51.100.1, 10.1.1.1, 10.2.2.2"}, nil, "198.51.100.1"},
		{"two header lines", "10.0.0.1:5000", []string{"6.6.6.6", "198.51.100.1, 10.1.1.1"}, nil, "198.51.100.1"},
		{"every hop trusted: the left-most", "10.0.0.1:5000", []string{"10.3.3.3, 10.2.2.2"}, nil, "10.3.3.3"},
		{"XFF with a port", "10.0.0.1:5000", []string{"198.51.100.1:4711"}, nil, "198.51.100.1"},
		{"XFF IPv6 by its /64", "10.0.0.1:5000", []string{"2001:db8:1:2:3::4"}, nil, "2001:db8:1:2::/64"},
		{"XFF bracketed IPv6 with a port", "10.0.0.1:5000", []string{"[2001:db8:1:2::9]:443"}, nil, "2001:db8:1:2::/64"},
		{"XFF mapped IPv4", "10.0.0.1:5000", []string{"::ffff:198.51.100.1"}, nil, "198.51.100.1"},
		{"trusted IPv6 peer", "[2001:db8:ff::1]:443", []string{"198.51.100.1"}, nil, "198.51.100.1"},
		{"XFF garbage", "10.0.0.1:5000", []string{"not-an-address"}, nil, "10.0.0.1"},
		{"XFF empty hop", "10.0.0.1:5000", []string{"198.51.100.1,,10.1.1.1"}, nil, "10.0.0.1"},
		{"XFF unknown", "10.0.0.1:5000", []string{"unknown"}, nil, "10.0.0.1"},
		{"XFF too many hops", "10.0.0.1:5000", []string{long}, nil, "10.0.0.1"},
		{"XFF too long", "10.0.0.1:5000", []string{strings.Repeat(" ", maxForwardedBytes) + "198.51.100.1"}, nil, "10.0.0.1"},
		{"Forwarded for", "10.0.0.1:5000", nil, []string{"for=198.51.100.1"}, "198.51.100.1"},
		{"Forwarded with other pairs", "10.0.0.1:5000", nil, []string{"by=10.0.0.1;for=198.51.100.1;proto=https;host=example.com"}, "198.51.100.1"},
		{"Forwarded case and spaces", "10.0.0.1:5000", nil, []string{"For=198.51.100.1 ; Proto=http"}, "198.51.100.1"},
		{"Forwarded quoted IPv4 with a port", "10.0.0.1:5000", nil, []string{`for="198.51.100.1:8080"`}, "198.51.100.1"},
		{"Forwarded quoted IPv6", "10.0.0.1:5000", nil, []string{`for="[2001:db8:1:2::9]"`}, "2001:db8:1:2::/64"},
		{"Forwarded quoted IPv6 with a port", "10.0.0.1:5000", nil, []string{`for="[2001:db8:1:2::9]:4711"`}, "2001:db8:1:2::/64"},
		{"Forwarded obfuscated port", "10.0.0.1:5000", nil, []string{`for="198.51.100.1:_p1"`}, "198.51.100.1"},
		{"Forwarded chain", "10.0.0.1:5000", nil, []string{"for=6.6.6.6, for=198.51.100.1;proto=https, for=10.9.9.9"}, "198.51.100.1"},
		{"Forwarded quoted comma", "10.0.0.1:5000", nil, []string{`for=6.6.6.6;x="a,b", for=198.51.100.1`}, "198.51.100.1"},
		{"Forwarded obfuscated node", "10.0.0.1:5000", nil, []string{"for=_hidden"}, "10.0.0.1"},
		{"Forwarded unknown node", "10.0.0.1:5000", nil, []string{"for=unknown"}, "10.0.0.1"},
		{"Forwarded element without for", "10.0.0.1:5000", nil, []string{"proto=https"}, "10.0.0.1"},
		{"Forwarded for twice", "10.0.0.1:5000", nil, []string{"for=1.1.1.1;for=2.2.2.2"}, "10.0.0.1"},
		{"Forwarded unterminated quote", "10.0.0.1:5000", nil, []string{`for="198.51.100.1`}, "10.0.0.1"},
		{"Forwarded bracket without close", "10.0.0.1:5000", nil, []string{`for="[2001:db8::1"`}, "10.0.0.1"},
		{"Forwarded garbage", "10.0.0.1:5000", nil, []string{";;==,"}, "10.0.0.1"},
		{"both headers agree", "10.0.0.1:5000", []string{"198.51.100.1"}, []string{"for=198.51.100.1"}, "198.51.100.1"},
		{"both headers disagree: a client's spoof", "10.0.0.1:5000", []string{"198.51.100.1"}, []string{"for=6.6.6.6"}, "10.0.0.1"},
		{"peer that is no address", "pipe", []string{"198.51.100.1"}, nil, "pipe"},
	} {
		h := http.Header{}
		for _, v := range c.xff {
			h.Add("X-Forwarded-For", v)
		}
		for _, v := range c.fwd {
			h.Add("Forwarded", v)
		}
		if got := forwardedParty(c.peer, h, proxies); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// No trusted proxy: headers never count.
	if got := forwardedParty("10.0.0.1:5000", http.Header{"X-Forwarded-For": {"198.51.100.1"}}, nil); got != "10.0.0.1" {
		t.Errorf("without trusted proxies: %q", got)
	}
}

// FuzzForwardedParty: no header makes the parser panic, and what it
// returns is the peer's party or a forwarded address's.
func FuzzForwardedParty(f *testing.F) {
	f.Add("10.0.0.1:80", "198.51.100.1, 10.1.1.1", `for="[2001:db8::1]:80";proto=https, for=198.51.100.1`)
	f.Add("192.0.2.1:80", "6.6.6.6", "for=6.6.6.6")
	f.Add("10.0.0.1:80", "", `for="\"`)
	proxies := prefixes(f, "10.0.0.0/8")
	f.Fuzz(func(t *testing.T, peer, xff, fwd string) {
		h := http.Header{}
		if xff != "" {
			h.Set("X-Forwarded-For", xff)
		}
		if fwd != "" {
			h.Set("Forwarded", fwd)
		}
		got := forwardedParty(peer, h, proxies)
		if got == remoteParty(peer) {
			return
		}
		if p, ok := parseNode(peer); !ok || !trusted(p, proxies) {
			t.Fatalf("untrusted peer %q got party %q from its headers", peer, got)
		}
		if _, err := netip.ParseAddr(got); err != nil {
			if _, err := netip.ParsePrefix(got); err != nil {
				t.Fatalf("party %q is no address", got)
			}
		}
	})
}

// Behind a trusted proxy, anonymous parties are the forwarded clients:
// each keeps its own sessions; a peer that is not trusted cannot choose
// its party with the header.
func TestLegacyAnonymousPartiesBehindATrustedProxyAreTheForwardedClients(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, h := legacyServer(t, s, &HTTPOptions{TrustedProxies: prefixes(t, "127.0.0.1/32"),
		Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 1}})
	p := newParty(t, ts.URL, "", nil)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}`
	var sids []string
	for i := range 5 {
		_, hdr, _ := p.do("", init, http.Header{"X-Forwarded-For": {"198.51.100." + strconv.Itoa(i+1)}})
		sids = append(sids, hdr.Get("Mcp-Session-Id"))
	}
	for i, sid := range sids {
		if !p.alive(sid) {
			t.Errorf("the session of forwarded client %d was ended", i)
		}
	}
	if n := h.legacy.sessionCount(); n != 5 {
		t.Errorf("%d sessions, want 5", n)
	}

	// From 127.0.0.2, which is not trusted, the header is ignored: one party.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	if c, err := d.Dial("tcp", ts.Listener.Addr().String()); err != nil {
		t.Skipf("cannot dial from 127.0.0.2: %v", err)
	} else {
		c.Close()
	}
	q := newParty(t, ts.URL, "", &http.Transport{DialContext: d.DialContext})
	_, h1, _ := q.do("", init, http.Header{"X-Forwarded-For": {"203.0.113.1"}})
	_, h2, _ := q.do("", init, http.Header{"X-Forwarded-For": {"203.0.113.2"}})
	if q.alive(h1.Get("Mcp-Session-Id")) || !q.alive(h2.Get("Mcp-Session-Id")) {
		t.Error("an untrusted peer chose its party with X-Forwarded-For")
	}
}

// Past its rate a party is refused with 429, Retry-After and the
// retryable ErrTemporarilyUnavailable for its id, and nothing runs;
// another party is not affected; a failing limiter lets requests through.
func TestRateLimitRefusesAPartyPastItsRateWith429AndNothingRuns(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	var runs atomic.Int32
	s.AddTool(&Tool{Name: "count", InputSchema: []byte(`{"type":"object"}`)}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		runs.Add(1)
		return TextResult("ok"), nil
	})
	var mu sync.Mutex
	var asked []string
	lim := NewRateLimiter(0.01, 3) // three, then one every 100 s
	ts, _ := partyServer(t, s, &HTTPOptions{RateLimit: func(ctx context.Context, party string) (time.Duration, error) {
		mu.Lock()
		asked = append(asked, party)
		mu.Unlock()
		return lim(ctx, party)
	}})
	alice := newParty(t, ts.URL, "alice", nil)
	sid := alice.mustInitialize()                                                // 1
	alice.do(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil) // 2
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":{}}}`
	if st, _, m := alice.do(sid, call, nil); st != http.StatusOK || m["result"] == nil { // 3
		t.Fatalf("the third request: %d %v", st, m)
	}
	st, hdr, m := alice.do(sid, call, nil)
	if st != http.StatusTooManyRequests {
		t.Fatalf("past the rate: %d %v", st, m)
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 || ra > 100 {
		t.Errorf("Retry-After %q", hdr.Get("Retry-After"))
	}
	e, _ := m["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if m["id"] != 7.0 || e["code"] != float64(codeTemporarilyUnavailable) || data["reason"] != reasonUnavailable {
		t.Errorf("refusal %v", m)
	}
	if ms, _ := data["retryAfterMs"].(float64); ms < 1000 || ms > 100000 {
		t.Errorf("retryAfterMs %v", data["retryAfterMs"])
	}
	if runs.Load() != 1 {
		t.Errorf("the tool ran %d times, want once", runs.Load())
	}
	// The modern era is limited too, with the same party.
	if st, _, _ := alice.do("", `{"jsonrpc":"2.0","id":8,"method":"ping"}`, http.Header{HeaderProtocolVersion: {LatestProtocolVersion}}); st != http.StatusTooManyRequests {
		t.Errorf("a modern request past the rate: %d", st)
	}
	// So is a DELETE: the session is still there afterwards.
	del, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
	del.Header.Set("Mcp-Session-Id", sid)
	del.Header.Set("X-User", "alice")
	if resp, err := http.DefaultClient.Do(del); err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a DELETE past the rate: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	mu.Lock()
	first := asked[0]
	mu.Unlock()
	if first != "principal "+`["app","idp","alice"]` {
		t.Errorf("the limiter was asked about %q", first)
	}
	bob := newParty(t, ts.URL, "bob", nil)
	if sid := bob.mustInitialize(); !bob.alive(sid) {
		t.Error("bob was limited by alice's rate")
	}

	// A limiter that fails lets requests through.
	ts2, _ := partyServer(t, s, &HTTPOptions{RateLimit: func(context.Context, string) (time.Duration, error) {
		return time.Hour, errors.New("store down")
	}})
	carol := newParty(t, ts2.URL, "carol", nil)
	if sid := carol.mustInitialize(); !carol.alive(sid) {
		t.Error("a failing limiter refused requests")
	}
}

// The in-process limiter: the burst at once, then one request per
// interval; each party on its own; parties bounded.
func TestInProcessRateLimiterAllowsTheBurstThenTheRate(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := newRateLimiter(2, 3, func() time.Time { return now }) // 2/s, burst 3
	allow := func(p string) time.Duration {
		d, err := l.allow(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := range 3 {
		if d := allow("a"); d != 0 {
			t.Fatalf("request %d of the burst refused (%v)", i, d)
		}
	}
	if d := allow("a"); d != 500*time.Millisecond {
		t.Errorf("past the burst: wait %v, want 500ms", d)
	}
	if d := allow("b"); d != 0 {
		t.Error("b limited by a")
	}
	now = now.Add(500 * time.Millisecond)
	if d := allow("a"); d != 0 {
		t.Errorf("after one interval: wait %v", d)
	}
	if d := allow("a"); d == 0 {
		t.Error("two requests allowed after one interval")
	}
	now = now.Add(time.Hour)
	for i := range 3 {
		if d := allow("a"); d != 0 {
			t.Fatalf("after an hour, request %d of the burst refused", i)
		}
	}
	for i := range maxRateParties + 10 {
		allow("p" + strconv.Itoa(i))
	}
	if n := len(l.tat); n > maxRateParties {
		t.Errorf("%d parties tracked", n)
	}
}

// On the HTTP+SSE handler: a stream's party is the forwarded client
// behind a trusted proxy, and its POSTs past the rate get 429 with the
// request's id, nothing on the stream.
func TestSSEPartiesBehindATrustedProxyAndTheirRate(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	lim := NewRateLimiter(0.01, 3)
	h := NewSSEHandler(s, &SSEOptions{HTTPOptions: HTTPOptions{TrustedProxies: prefixes(t, "127.0.0.0/8"), RateLimit: lim,
		Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 1}}}).(*sseHandler)
	mux := http.NewServeMux()
	mux.Handle("/sse", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The test's stand-in for the proxy: X-User is the forwarded client.
		if u := r.Header.Get("X-User"); u != "" {
			r.Header.Set("X-Forwarded-For", u)
		}
		h.ServeHTTP(w, r)
	}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	u := ts.URL + "/sse"
	one := openRawSSE(t, u, "198.51.100.1")
	two := openRawSSE(t, u, "198.51.100.2")
	one.initialize(LegacyProtocolVersion, `{}`) // POSTs 1 and 2 of 198.51.100.1
	two.initialize(LegacyProtocolVersion, `{}`)
	if n := h.sessionCount(); n != 2 {
		t.Fatalf("%d sessions, want one per forwarded client", n)
	}
	one.mustPost(`{"jsonrpc":"2.0","id":5,"method":"ping"}`) // 3
	if m := one.next(); m["id"] != 5.0 {
		t.Fatalf("ping: %v", m)
	}
	st, m := one.postTo(one.endpoint, `{"jsonrpc":"2.0","id":6,"method":"ping"}`, nil)
	if e, _ := m["error"].(map[string]any); st != http.StatusTooManyRequests || m["id"] != 6.0 || e["code"] != float64(codeTemporarilyUnavailable) {
		t.Fatalf("past the rate: %d %v", st, m)
	}
	two.mustPost(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if m := two.next(); m["id"] != 7.0 {
		t.Fatalf("the other client's ping: %v", m)
	}
	select {
	case m := <-one.msgs:
		t.Errorf("the refused request was answered on the stream: %v", m)
	case <-time.After(50 * time.Millisecond):
	}
}
