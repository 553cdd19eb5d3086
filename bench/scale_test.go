package bench

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Cost at scale: what N idle 2025-11-25 sessions and N open SSE streams
// cost the server, in heap and goroutine stacks (runtime.ReadMemStats
// after two GCs, before and after opening them) and in goroutines.
//
//	ScaleIdleSessions  N sessions opened with initialize and
//	                   notifications/initialized over one keep-alive
//	                   connection, then left idle: a legacy session over
//	                   HTTP is an id, it needs no connection
//	ScaleSSEStreams    N sessions, each with its GET stream held open on
//	                   a connection of its own (raw: a bare net/http
//	                   handler holding the GET open, the floor net/http
//	                   itself sets)
//	ScaleListenStreams N 2026-07-28 subscriptions/listen streams (tools
//	                   list changes), a connection each: roundtrip and raw
//
// The driver speaks the 2025-11-25 wire by hand (the same bytes to every
// subject, so no SDK's client is measured) over bare sockets: the
// figures include the client side's sockets (a net.Conn each, no
// goroutine, no buffer kept), a few hundred bytes per stream. Each
// benchmark reports bytes/session or bytes/stream and goroutines/...; the
// time per op is not the point (run them with -benchtime 1x).
//
// N is -scale.n (10000). A stream holds two descriptors in this process
// (both ends of the loopback connection): the benchmark raises
// RLIMIT_NOFILE to its hard limit and, if that is too low, scales N down
// and says so in the output (b.Log) and in the metric "streams".

var (
	scaleN           = flag.Int("scale.n", 10000, "sessions / streams opened by the Scale benchmarks")
	scaleHeapProfile = flag.String("scale.heapprofile", "", "write a heap profile to this file while the streams (or sessions) are open")
)

// heapProfile writes the heap profile -scale.heapprofile asks for, with
// the subject's name before its extension.
func heapProfile(tb testing.TB, subject string) {
	if *scaleHeapProfile == "" {
		return
	}
	ext := filepath.Ext(*scaleHeapProfile)
	f, err := os.Create(strings.TrimSuffix(*scaleHeapProfile, ext) + "-" + subject + ext)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		tb.Fatal(err)
	}
}

// scaleSubjects are the servers measured at scale.
var scaleSubjects = []struct {
	name    string
	handler func(tb testing.TB, n int) http.Handler
}{
	{"roundtrip", func(tb testing.TB, n int) http.Handler {
		// One loopback party opens all N sessions: lift the per-party
		// quota (100 by default) and the global bound (10000) above N.
		return mcp.NewHTTPHandler(rtServer(), &mcp.HTTPOptions{Legacy: mcp.LegacyHTTPOptions{
			MaxSessionsPerPrincipal: n + 16, MaxSessions: n + 16,
		}})
	}},
	{"gosdk", func(tb testing.TB, n int) http.Handler { return gosdkLegacy.handler(tb) }},
	{"mcpgo", func(tb testing.TB, n int) http.Handler { return mcpgoLegacy.handler(tb) }},
}

// rawStreamHandler holds every GET open as an SSE stream until the
// client goes: the net/http floor under any SDK's stream.
var rawStreamHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Header.Get("Mcp-Method") != "subscriptions/listen" {
		w.Header().Set("Mcp-Session-Id", "raw")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"raw","version":"1"}}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
})

// mem is heap in use and goroutine stacks, after two GCs, and the number
// of goroutines.
type mem struct {
	heap, stack uint64
	goroutines  int
}

func memNow() mem {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return mem{ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()}
}

// per returns the cost of each of n things opened between m0 and m1,
// less extra bytes that are the driver's own.
func per(m0, m1 mem, n int, extra uint64) scaleResult {
	heap := float64(m1.heap) - float64(m0.heap) - float64(extra)
	stack := float64(m1.stack) - float64(m0.stack)
	return scaleResult{n: n, bytesEach: (heap + stack) / float64(n), heapEach: heap / float64(n), stackEach: stack / float64(n),
		goroutines: float64(m1.goroutines-m0.goroutines) / float64(n)}
}

const legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"scale","version":"1"}}}`
const legacyInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// sessionDriver opens 2025-11-25 sessions over one keep-alive connection.
type sessionDriver struct {
	url string
	hc  *http.Client
}

func newSessionDriver(u string) *sessionDriver {
	return &sessionDriver{url: u, hc: &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}}}
}

func (d *sessionDriver) post(session, body string) (*http.Response, error) {
	r, err := http.NewRequest(http.MethodPost, d.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header["Content-Type"] = []string{"application/json"}
	r.Header["Accept"] = []string{"application/json, text/event-stream"}
	if session != "" {
		r.Header["Mcp-Session-Id"] = []string{session}
		r.Header["Mcp-Protocol-Version"] = []string{legacyVersion}
	}
	resp, err := d.hc.Do(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if session == "" && !bytes.Contains(b, []byte(`"protocolVersion":"2025-11-25"`)) {
		return nil, fmt.Errorf("initialize answered %s", b)
	}
	return resp, nil
}

// open opens one session and returns its id.
func (d *sessionDriver) open() (string, error) {
	resp, err := d.post("", legacyInit)
	if err != nil {
		return "", err
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		return "", fmt.Errorf("initialize without Mcp-Session-Id")
	}
	if _, err := d.post(id, legacyInitialized); err != nil {
		return "", err
	}
	return id, nil
}

// end ends a session with DELETE (errors ignored: the measure is done).
func (d *sessionDriver) end(id string) {
	r, _ := http.NewRequest(http.MethodDelete, d.url, nil)
	r.Header["Mcp-Session-Id"] = []string{id}
	r.Header["Mcp-Protocol-Version"] = []string{legacyVersion}
	if resp, err := d.hc.Do(r); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// listenBody is a 2026-07-28 subscriptions/listen request for the tools
// list's changes.
const listenBody = `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"scale","version":"1"}},"notifications":{"toolsListChanged":true}}}`

// openListen opens a 2026-07-28 listen stream on a socket of its own and
// returns the socket once the response headers (200, text/event-stream)
// have arrived.
func openListen(u string) (net.Conn, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: %s\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s",
		pu.Path, pu.Host, protocolVersion, len(listenBody), listenBody)
	return c, readSSEHeaders(c)
}

// readSSEHeaders reads a response's headers from c and fails (closing c)
// unless it is a 200 text/event-stream.
func readSSEHeaders(c net.Conn) error {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(c, 512)
	status, err := br.ReadString('\n')
	if err != nil {
		c.Close()
		return fmt.Errorf("stream: %v", err)
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		c.Close()
		return fmt.Errorf("stream: %s", strings.TrimSpace(status))
	}
	sse := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return fmt.Errorf("stream headers: %v", err)
		}
		if strings.HasPrefix(strings.ToLower(line), "content-type: text/event-stream") {
			sse = true
		}
		if line == "\r\n" {
			break
		}
	}
	c.SetReadDeadline(time.Time{})
	if !sse {
		c.Close()
		return fmt.Errorf("stream is not text/event-stream")
	}
	return nil
}

// openStream opens the session's GET stream on a socket of its own and
// returns the socket once the response headers (200, text/event-stream)
// have arrived.
func openStream(u, session string) (net.Conn, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n\r\n", pu.Path, pu.Host, session, legacyVersion)
	if err := readSSEHeaders(c); err != nil {
		return nil, err
	}
	return c, nil
}

// raiseFDLimit raises RLIMIT_NOFILE to its hard limit and returns the
// soft limit in force.
func raiseFDLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 1024
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	}
	return l.Cur
}

// streamsAllowed is how many streams fit under the descriptor limit:
// two descriptors each, and a reserve for everything else.
func streamsAllowed(want int) int {
	limit := raiseFDLimit()
	const reserve = 256
	if fit := (int(limit) - reserve) / 2; fit < want {
		return max(fit, 1)
	}
	return want
}

// scaleResult is one measurement.
type scaleResult struct {
	n                   int
	bytesEach           float64 // heap and stacks
	heapEach, stackEach float64
	goroutines          float64
}

// report reports r per unit ("session", "stream"), and the count as
// units+"s".
func (r scaleResult) report(b *testing.B, unit string) {
	b.ReportMetric(r.bytesEach, "B/"+unit)
	b.ReportMetric(r.heapEach, "heap-B/"+unit)
	b.ReportMetric(r.stackEach, "stack-B/"+unit)
	b.ReportMetric(r.goroutines, "goroutines/"+unit)
	b.ReportMetric(float64(r.n), unit+"s")
}

// streamCount is -scale.n, or what RLIMIT_NOFILE allows (logged).
func streamCount(b *testing.B) int {
	n := streamsAllowed(*scaleN)
	if n < *scaleN {
		b.Logf("RLIMIT_NOFILE allows %d streams, not %d: measured at %d", n, *scaleN, n)
	}
	return n
}

// measureIdleSessions opens n sessions on h and measures them.
func measureIdleSessions(tb testing.TB, name string, h http.Handler, n int) scaleResult {
	u := serveHTTP(tb, h)
	d := newSessionDriver(u)
	defer d.hc.CloseIdleConnections()
	if id, err := d.open(); err != nil { // warm up: the connection, the registry
		tb.Fatal(err)
	} else {
		d.end(id)
	}
	before := memNow()
	ids := make([]string, n)
	for i := range ids {
		id, err := d.open()
		if err != nil {
			tb.Fatalf("session %d: %v", i, err)
		}
		ids[i] = id
	}
	// The ids are the client's: count them out of the server's cost.
	var idBytes uint64
	for _, id := range ids {
		idBytes += uint64(len(id)) + 16
	}
	after := memNow()
	heapProfile(tb, name)
	res := per(before, after, n, idBytes)
	for _, id := range ids {
		d.end(id)
	}
	return res
}

// measureStreams opens n sessions on h, each with its GET stream on a
// socket of its own, and measures them.
func measureStreams(tb testing.TB, name string, h http.Handler, n int) scaleResult {
	u := serveHTTP(tb, h)
	d := newSessionDriver(u)
	defer d.hc.CloseIdleConnections()
	if id, err := d.open(); err != nil {
		tb.Fatal(err)
	} else if c, err := openStream(u, id); err != nil {
		tb.Fatal(err)
	} else {
		c.Close()
		d.end(id)
	}
	ids := make([]string, n)
	for i := range ids {
		id, err := d.open()
		if err != nil {
			tb.Fatalf("session %d: %v", i, err)
		}
		ids[i] = id
	}
	before := memNow()
	conns := make([]net.Conn, n)
	for i, id := range ids {
		c, err := openStream(u, id)
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			tb.Fatalf("stream %d: %v", i, err)
		}
		conns[i] = c
	}
	after := memNow()
	heapProfile(tb, name)
	res := per(before, after, n, 0)
	for _, c := range conns {
		c.Close()
	}
	for _, id := range ids {
		d.end(id)
	}
	return res
}

// measureListens opens n 2026-07-28 listen streams on h, each on a
// socket of its own, and measures them.
func measureListens(tb testing.TB, name string, h http.Handler, n int) scaleResult {
	u := serveHTTP(tb, h)
	if c, err := openListen(u); err != nil {
		tb.Fatal(err)
	} else {
		c.Close()
	}
	before := memNow()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := openListen(u)
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			tb.Fatalf("listen stream %d: %v", i, err)
		}
		conns[i] = c
	}
	after := memNow()
	heapProfile(tb, name)
	res := per(before, after, n, 0)
	for _, c := range conns {
		c.Close()
	}
	return res
}

// listenSubjects are the 2026-07-28 servers whose listen streams are
// measured: roundtrip, and raw holding the POST open.
var listenSubjects = []struct {
	name    string
	handler func(tb testing.TB) http.Handler
}{
	{"roundtrip", roundtripSubject.handler},
	{"raw", func(testing.TB) http.Handler { return rawStreamHandler }},
}

func BenchmarkScaleListenStreams(b *testing.B) {
	for _, s := range listenSubjects {
		b.Run("subject="+s.name, func(b *testing.B) {
			n := streamCount(b)
			var r scaleResult
			for b.Loop() {
				r = measureListens(b, "listen-"+s.name, s.handler(b), n)
			}
			r.report(b, "stream")
		})
	}
}

func BenchmarkScaleIdleSessions(b *testing.B) {
	for _, s := range scaleSubjects {
		b.Run("subject="+s.name, func(b *testing.B) {
			n := *scaleN
			var r scaleResult
			for b.Loop() {
				r = measureIdleSessions(b, "sessions-"+s.name, s.handler(b, n), n)
			}
			r.report(b, "session")
		})
	}
}

func BenchmarkScaleSSEStreams(b *testing.B) {
	subjects := append(scaleSubjects[:len(scaleSubjects):len(scaleSubjects)], struct {
		name    string
		handler func(tb testing.TB, n int) http.Handler
	}{"raw", func(testing.TB, int) http.Handler { return rawStreamHandler }})
	for _, s := range subjects {
		b.Run("subject="+s.name, func(b *testing.B) {
			n := streamCount(b)
			var r scaleResult
			for b.Loop() {
				r = measureStreams(b, "streams-"+s.name, s.handler(b, n), n)
			}
			r.report(b, "stream")
		})
	}
}

// TestScaleDriverOpensSessionsAndStreams checks, on a few sessions, that
// the scale driver's hand-written 2025-11-25 wire opens real sessions
// and GET streams on every subject (the benchmarks' figures would
// otherwise measure errors).
func TestScaleDriverOpensSessionsAndStreams(t *testing.T) {
	for _, s := range scaleSubjects {
		t.Run(s.name, func(t *testing.T) {
			u := serveHTTP(t, s.handler(t, 8))
			d := newSessionDriver(u)
			defer d.hc.CloseIdleConnections()
			seen := map[string]bool{}
			for range 3 {
				id, err := d.open()
				if err != nil {
					t.Fatal(err)
				}
				if seen[id] {
					t.Fatalf("session id %q twice", id)
				}
				seen[id] = true
				c, err := openStream(u, id)
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			if s.name == "roundtrip" {
				c, err := openListen(u)
				if err != nil {
					t.Fatalf("listen stream: %v", err)
				}
				c.Close()
			}
			if _, err := d.post("no-such-session", legacyInitialized); err == nil && s.name == "roundtrip" {
				t.Fatal("a message for an unknown session was accepted")
			}
		})
	}
}
