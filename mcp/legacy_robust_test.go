package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The rules a 2025-11-25 session obeys whatever its client (or another
// client) does: the header bindings it chose to send, its party's quota,
// the lifetime of a held stream.

// party is a raw legacy client of one principal (the X-User header,
// turned into a verified token by partyServer) over one keep-alive
// connection.
type party struct {
	t       testing.TB
	url     string
	user    string
	version string
	hc      *http.Client
}

type userTransport struct {
	user string
	next http.RoundTripper
}

func (u userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if u.user != "" {
		r.Header.Set("X-User", u.user)
	}
	return u.next.RoundTrip(r)
}

func newParty(t testing.TB, url, user string, tr *http.Transport) *party {
	if tr == nil {
		tr = &http.Transport{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &party{t: t, url: url, user: user, version: LegacyProtocolVersion, hc: &http.Client{Timeout: 10 * time.Second, Transport: userTransport{user, tr}}}
}

// partyServer serves h behind an authentication stand-in: X-User is the
// verified subject.
func partyServer(t testing.TB, s *Server, o *HTTPOptions) (*httptest.Server, *httpHandler) {
	h := NewHTTPHandler(s, o).(*httpHandler)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-User"); u != "" {
			r = r.WithContext(WithTokenInfo(r.Context(), &TokenInfo{ClientID: "app", Issuer: "idp", Subject: u}))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, h
}

// do POSTs body to session sid (none when empty) with extra headers and
// returns the status, the headers and the JSON-RPC message of the answer.
func (p *party) do(sid, body string, extra http.Header) (int, http.Header, map[string]any) {
	p.t.Helper()
	r, _ := http.NewRequest(http.MethodPost, p.url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set(HeaderProtocolVersion, p.version)
	}
	for k, vs := range extra {
		r.Header[k] = vs
	}
	resp, err := p.hc.Do(r)
	if err != nil {
		p.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			p.t.Fatalf("status %d, body %q", resp.StatusCode, b)
		}
	}
	return resp.StatusCode, resp.Header, m
}

// initialize opens a session; "" and the status when refused.
func (p *party) initialize() (string, int, http.Header) {
	p.t.Helper()
	st, hdr, m := p.do("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+p.version+`","capabilities":{},"clientInfo":{"name":"party","version":"1"}}}`, nil)
	if st != http.StatusOK {
		return "", st, hdr
	}
	if m["result"] == nil || hdr.Get("Mcp-Session-Id") == "" {
		p.t.Fatalf("initialize: %v", m)
	}
	return hdr.Get("Mcp-Session-Id"), st, hdr
}

func (p *party) mustInitialize() string {
	p.t.Helper()
	sid, st, _ := p.initialize()
	if sid == "" {
		p.t.Fatalf("initialize for %q: %d", p.user, st)
	}
	return sid
}

// alive reports whether session sid still answers ping.
func (p *party) alive(sid string) bool {
	p.t.Helper()
	st, _, m := p.do(sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	switch {
	case st == http.StatusOK && m["result"] != nil:
		return true
	case st == http.StatusNotFound:
		return false
	}
	p.t.Fatalf("ping: %d %v", st, m)
	return false
}

// hold opens the GET stream of sid and returns once its priming event
// came; the stream stays open until the test ends.
func (p *party) hold(sid string) *http.Response {
	p.t.Helper()
	r, _ := http.NewRequest(http.MethodGet, p.url, nil)
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("Mcp-Session-Id", sid)
	hc := &http.Client{Transport: p.hc.Transport}
	resp, err := hc.Do(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		p.t.Fatalf("GET stream: %v %v", err, resp)
	}
	p.t.Cleanup(func() { resp.Body.Close() })
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(line, "id: ") {
		p.t.Fatalf("GET stream began with %q, %v", line, err)
	}
	return resp
}

// Legacy requests honour the headers they send: 2025-11-25 and 2025-06-18
// define no Mcp-Method, Mcp-Name or Mcp-Param-* headers, so a request
// without them is served, but one whose headers contradict its body is
// refused with 400 and a JSON-RPC error, and its handler does not run.
func TestLegacyRequestsHonourTheHeadersTheySend(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			s := newTestServer(t, nil)
			var runs atomic.Int32
			s.AddTool(&Tool{Name: "counted", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
				func(context.Context, *CallToolRequest) (ToolResponse, error) {
					runs.Add(1)
					return TextResult("ok"), nil
				})
			ts, _ := legacyServer(t, s, nil)
			p := newParty(t, ts.URL, "", nil)
			p.version = version
			sid := p.mustInitialize()
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counted","arguments":{"region":"eu west"}}}`
			noArg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counted","arguments":{}}}`
			read := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"test://static"}}`
			prompt := `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"x"}}}`

			served := map[string]struct {
				body string
				hdr  http.Header
			}{
				"no headers":       {call, nil},
				"agreeing headers": {call, http.Header{HeaderMethod: {"tools/call"}, HeaderName: {"counted"}, "Mcp-Param-Region": {"eu west"}}},
				"base64 param":     {call, http.Header{"Mcp-Param-Region": {"=?base64?ZXUgd2VzdA==?="}}},
				"method only":      {call, http.Header{HeaderMethod: {" tools/call "}}},
				"no argument":      {noArg, nil},
				"resource name":    {read, http.Header{HeaderName: {"test://static"}}},
			}
			for name, c := range served {
				before := runs.Load()
				st, _, m := p.do(sid, c.body, c.hdr)
				if st != http.StatusOK || m["result"] == nil {
					t.Errorf("%s: %d %v", name, st, m)
				}
				if c.body != read && runs.Load() != before+1 {
					t.Errorf("%s: the handler did not run", name)
				}
			}
			refused := map[string]struct {
				body string
				hdr  http.Header
			}{
				"method":          {call, http.Header{HeaderMethod: {"tools/list"}}},
				"method twice":    {call, http.Header{HeaderMethod: {"tools/call", "tools/call"}}},
				"name":            {call, http.Header{HeaderName: {"echo"}}},
				"bad base64 name": {call, http.Header{HeaderName: {"=?base64?Y291bnRlZA?="}}},
				"param":           {call, http.Header{"Mcp-Param-Region": {"us"}}},
				"param, no arg":   {noArg, http.Header{"Mcp-Param-Region": {"eu west"}}},
				"resource uri":    {read, http.Header{HeaderName: {"test://other"}}},
				"prompt name":     {prompt, http.Header{HeaderName: {"other"}}},
				"unknown method":  {`{"jsonrpc":"2.0","id":1,"method":"nope/nope"}`, http.Header{HeaderMethod: {"tools/list"}}},
			}
			for name, c := range refused {
				before := runs.Load()
				st, _, m := p.do(sid, c.body, c.hdr)
				if st != http.StatusBadRequest || errorCode(t, m) != CodeHeaderMismatch || m["id"] != float64(1) {
					t.Errorf("%s: %d %v", name, st, m)
				}
				if runs.Load() != before {
					t.Errorf("%s: the handler ran despite the contradicting header", name)
				}
			}
			// initialize too, and a stateless request.
			st, _, m := p.do("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
				http.Header{HeaderMethod: {"tools/call"}})
			if st != http.StatusBadRequest || errorCode(t, m) != CodeHeaderMismatch {
				t.Errorf("initialize with a contradicting Mcp-Method: %d %v", st, m)
			}
			sts, _ := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{Stateless: true}})
			sp := newParty(t, sts.URL, "", nil)
			hdr := http.Header{HeaderProtocolVersion: {version}}
			if st, _, m := sp.do("", call, hdr); st != http.StatusOK || m["result"] == nil {
				t.Errorf("stateless, no headers: %d %v", st, m)
			}
			hdr.Set(HeaderName, "echo")
			if st, _, m := sp.do("", call, hdr); st != http.StatusBadRequest || errorCode(t, m) != CodeHeaderMismatch {
				t.Errorf("stateless, contradicting Mcp-Name: %d %v", st, m)
			}
		})
	}
}

// One principal's initializes end only its own sessions: alice opening
// fifty sessions over one connection ends her oldest idle ones at her
// quota, and bob's idle session survives.
func TestLegacyInitializeEvictsOnlyThePrincipalsOwnSessions(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, h := partyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 3}})
	bob := newParty(t, ts.URL, "bob", nil)
	bobs := bob.mustInitialize()
	alice := newParty(t, ts.URL, "alice", nil)
	var hers []string
	for range 50 {
		hers = append(hers, alice.mustInitialize())
	}
	if !bob.alive(bobs) {
		t.Fatal("alice's initializes ended bob's idle session")
	}
	if n := h.legacy.sessionCount(); n != 4 {
		t.Errorf("%d sessions, want alice's 3 and bob's 1", n)
	}
	for i, sid := range hers {
		if want := i >= len(hers)-3; alice.alive(sid) != want {
			t.Errorf("alice's session %d alive: %v, want %v", i, !want, want)
		}
	}
	// Using a session makes it the most recent: the oldest idle goes.
	alice.alive(hers[47])
	newest := alice.mustInitialize()
	if alice.alive(hers[48]) || !alice.alive(hers[47]) || !alice.alive(newest) || !alice.alive(hers[49]) {
		t.Error("the session ended was not alice's longest idle")
	}
	// Nothing is left of a party whose sessions all ended.
	for _, sid := range []string{hers[47], hers[49], newest} {
		r, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
		r.Header.Set("Mcp-Session-Id", sid)
		resp, err := alice.hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	h.legacy.mu.Lock()
	quotas := len(h.legacy.quotas)
	h.legacy.mu.Unlock()
	if quotas != 1 {
		t.Errorf("%d quotas kept, want bob's alone", quotas)
	}
}

// A principal over its quota whose sessions are all busy (each holds a
// GET stream) is told 503 with Retry-After; another principal can still
// initialize.
func TestLegacyPrincipalOverItsQuotaGets503WhileOthersInitialize(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := partyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 3}})
	alice := newParty(t, ts.URL, "alice", nil)
	for range 3 {
		alice.hold(alice.mustInitialize())
	}
	sid, st, hdr := alice.initialize()
	if sid != "" || st != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("alice over her quota, every session busy: %d, Retry-After %q", st, hdr.Get("Retry-After"))
	}
	bob := newParty(t, ts.URL, "bob", nil)
	if sid := bob.mustInitialize(); !bob.alive(sid) {
		t.Error("bob's new session does not answer")
	}
}

// The global bound is a last resort that never lets one principal end
// another's sessions: at it, a principal ends its own longest idle
// session, and one with none to end is told 503 with Retry-After.
func TestLegacyGlobalSessionBoundNeverEvictsAnotherPrincipal(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, h := partyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 3, MaxSessions: 4}})
	alice, bob, carol := newParty(t, ts.URL, "alice", nil), newParty(t, ts.URL, "bob", nil), newParty(t, ts.URL, "carol", nil)
	hers := []string{alice.mustInitialize(), alice.mustInitialize(), alice.mustInitialize()}
	bobs := bob.mustInitialize()
	if sid, st, hdr := carol.initialize(); sid != "" || st != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("carol at the global bound: %d, Retry-After %q", st, hdr.Get("Retry-After"))
	}
	bobs2 := bob.mustInitialize()
	if bob.alive(bobs) || !bob.alive(bobs2) {
		t.Error("bob's new session did not replace his own old one")
	}
	newest := alice.mustInitialize()
	if alice.alive(hers[0]) || !alice.alive(newest) || !bob.alive(bobs2) {
		t.Error("at the global bound alice's initialize did not end her own longest idle session alone")
	}
	if n := h.legacy.sessionCount(); n != 4 {
		t.Errorf("%d sessions", n)
	}
}

// Anonymous sessions are counted per remote address (what QuotaKey can
// change, for a server behind a proxy).
func TestLegacyAnonymousSessionsAreCountedPerRemoteAddress(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 2}})
	from := func(ip string) *http.Transport {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Transport{DialContext: d.DialContext}
	}
	if c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", ts.Listener.Addr().String()); err != nil {
		t.Skipf("cannot dial from 127.0.0.2: %v", err)
	} else {
		c.Close()
	}
	one, two := newParty(t, ts.URL, "", from("127.0.0.1")), newParty(t, ts.URL, "", from("127.0.0.2"))
	twos := two.mustInitialize()
	var ones []string
	for range 5 {
		ones = append(ones, one.mustInitialize())
	}
	if !two.alive(twos) {
		t.Error("127.0.0.1's initializes ended 127.0.0.2's session")
	}
	if one.alive(ones[2]) || !one.alive(ones[4]) {
		t.Error("127.0.0.1 is not bounded to 2 sessions of its own")
	}

	// Behind a proxy: the party named by a header the proxy sets.
	ps, _ := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 1,
		QuotaKey: func(r *http.Request) string { return r.Header.Get("X-Client") }}})
	p := newParty(t, ps.URL, "", nil)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}`
	_, hx, _ := p.do("", init, http.Header{"X-Client": {"x"}})
	_, hy, _ := p.do("", init, http.Header{"X-Client": {"y"}})
	_, hx2, _ := p.do("", init, http.Header{"X-Client": {"x"}})
	if p.alive(hx.Get("Mcp-Session-Id")) || !p.alive(hy.Get("Mcp-Session-Id")) || !p.alive(hx2.Get("Mcp-Session-Id")) {
		t.Error("QuotaKey did not separate the parties behind one address")
	}

	for addr, want := range map[string]string{
		"192.0.2.1:1234":           "192.0.2.1",
		"[::ffff:192.0.2.1]:1":     "192.0.2.1",
		"[2001:db8:1:2:3::4]:443":  "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::]:80": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":        "fe80::/64",
		"pipe":                     "pipe",
	} {
		if got := remoteParty(addr); got != want {
			t.Errorf("remoteParty(%q) = %q, want %q", addr, got, want)
		}
	}
}

// A held GET stream is closed after its lifetime with an SSE retry hint
// and the last event id, and resumes with Last-Event-ID, missing nothing.
func TestLegacyHeldGETStreamsEndAfterTheirLifetimeAndResume(t *testing.T) {
	t.Parallel()
	s, _ := dualServer(t, nil)
	ts, _ := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{StreamLifetime: 300 * time.Millisecond, RetryInterval: 250 * time.Millisecond}})
	c := newLegacyClient(t, ts.URL, `{}`)

	// read returns the events of a stream until the server ends it, each
	// as its lines; step runs after the first event.
	read := func(resp *http.Response, step func()) [][]string {
		t.Helper()
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d", resp.StatusCode)
		}
		watchdog := time.AfterFunc(10*time.Second, func() { resp.Body.Close() })
		defer watchdog.Stop()
		var events [][]string
		var cur []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() != "" {
				cur = append(cur, sc.Text())
				continue
			}
			events = append(events, cur)
			cur = nil
			if len(events) == 1 && step != nil {
				step()
			}
		}
		if !watchdog.Stop() {
			t.Fatal("the held stream did not end after its lifetime")
		}
		return events
	}
	has := func(ev []string, line string) bool {
		for _, l := range ev {
			if l == line {
				return true
			}
		}
		return false
	}
	noop := func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil }

	events := read(c.get(""), func() { s.AddTool(&Tool{Name: "late"}, noop) })
	if len(events) != 3 {
		t.Fatalf("events %q, want priming, the change, the end", events)
	}
	if !strings.Contains(strings.Join(events[1], "\n"), NotificationToolListChanged) {
		t.Errorf("the change: %q", events[1])
	}
	end := events[2]
	if !has(end, "id: 0-1") || !has(end, "retry: 250") {
		t.Errorf("the stream ended with %q, want the last id and a retry hint", end)
	}

	// While the client is away, something happens; it resumes from the
	// last id it saw, gets it, and the new stream is bounded too.
	s.RemoveTools("late")
	events = read(c.get("0-1"), nil)
	if len(events) < 2 || !strings.Contains(strings.Join(events[0], "\n"), NotificationToolListChanged) || !has(events[0], "id: 0-2") {
		t.Fatalf("resumed with %q", events)
	}
	if last := events[len(events)-1]; !has(last, "id: 0-2") || !has(last, "retry: 250") {
		t.Errorf("the resumed stream ended with %q", last)
	}
}

// BenchmarkLegacyInitializeAtTheBound measures an initialize that must
// end the caller's longest idle session to make room, next to n sessions
// of other parties: the cost does not grow with n (no scan of the table).
func BenchmarkLegacyInitializeAtTheBound(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run("sessions="+itoa(n), func(b *testing.B) {
			s := NewServer(Implementation{Name: "b", Version: "1"}, &ServerOptions{Logger: slog.New(slog.DiscardHandler)})
			h := NewHTTPHandler(s, &HTTPOptions{Legacy: LegacyHTTPOptions{MaxSessionsPerPrincipal: 1, MaxSessions: n + 1,
				QuotaKey: func(r *http.Request) string { return r.Header.Get("X-Client") }}}).(*httpHandler)
			defer s.Close()
			init := legacyInitLine(`{}`)
			do := func(client string) int {
				r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(init))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("X-Client", client)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Code
			}
			for i := range n {
				do("other-" + itoa(i))
			}
			do("caller")
			b.ReportAllocs()
			for b.Loop() {
				if st := do("caller"); st != http.StatusOK {
					b.Fatalf("status %d", st)
				}
			}
			if got := h.legacy.sessionCount(); got != n+1 {
				b.Fatalf("%d sessions", got)
			}
		})
	}
}
