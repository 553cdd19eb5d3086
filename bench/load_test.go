package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The load run: C concurrent clients (16, 64, 256), each with its own
// client and connection, calling tools/call echo("hello") over loopback
// HTTP as fast as they can, for a fixed number of calls in all
// (-load.calls, split evenly) and never longer than -load.max. It reports
// throughput (calls/s) and the p50 and p99 latency of one call (p50-µs,
// p99-µs); the time per op is one whole run (use -benchtime 1x).
//
// -load.url points the run at a server of your own instead (the fleet
// behind nginx: scripts/load-fleet.sh): it must be a loopback address
// (checkLoopback refuses anything else, so the generator cannot be
// turned on another machine), and only the subjects whose client speaks
// what that server serves are run (-load.subjects).

var (
	loadCalls    = flag.Int("load.calls", 10000, "calls per load run, all clients together")
	loadMax      = flag.Duration("load.max", 20*time.Second, "longest a load run may take")
	loadURL      = flag.String("load.url", "", "an MCP endpoint on loopback to load instead of in-process servers")
	loadSubjects = flag.String("load.subjects", "", "comma-separated subjects to run (default: all)")
)

var loadClients = []int{16, 64, 256}

// checkLoopback refuses a target that is not on this machine's loopback:
// every address its host resolves to must be a loopback address.
func checkLoopback(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if u.Scheme != "http" {
		return fmt.Errorf("load target %q: only http:// on loopback", target)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("load target %q: no host", target)
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else if host == "localhost" {
		ips, err = net.LookupIP(host)
		if err != nil {
			return err
		}
	} else {
		return fmt.Errorf("load target %q: not a loopback address", target)
	}
	if len(ips) == 0 {
		return fmt.Errorf("load target %q: no address", target)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("load target %q: %s is not a loopback address", target, ip)
		}
	}
	return nil
}

// loadResult is one run.
type loadResult struct {
	calls    int
	elapsed  time.Duration
	p50, p99 time.Duration
}

// runLoad runs clients concurrent callers made by newCaller, calls in all,
// for at most limit.
func runLoad(ctx context.Context, clients, calls int, limit time.Duration, newCaller func() caller) (loadResult, error) {
	// Connecting is bounded by limit too, but not counted in the run.
	cctx, ccancel := context.WithTimeout(ctx, limit)
	defer ccancel()
	cs := make([]caller, 0, clients)
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	for range clients {
		c := newCaller()
		cs = append(cs, c)
		if err := callWant(cctx, c, "echo", "hello", "hello"); err != nil {
			return loadResult{}, fmt.Errorf("connecting: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	lat := make([][]time.Duration, clients)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range cs {
		n := calls / clients
		if i < calls%clients {
			n++
		}
		lat[i] = make([]time.Duration, 0, min(n, 1<<16)) // n may be huge when the time bounds the run
		wg.Go(func() {
			for range n {
				if ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := callWant(ctx, c, "echo", "hello", "hello")
				if err != nil {
					if ctx.Err() == nil {
						failed.CompareAndSwap(nil, &err)
					}
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if p := failed.Load(); p != nil {
		return loadResult{}, *p
	}
	all := slices.Concat(lat...)
	if len(all) == 0 {
		if ctx.Err() != nil {
			return loadResult{elapsed: elapsed}, nil // stopped by the limit before any call completed
		}
		return loadResult{}, errors.New("no call completed")
	}
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	return loadResult{calls: len(all), elapsed: elapsed, p50: q(0.50), p99: q(0.99)}, nil
}

func wanted(name string) bool {
	if *loadSubjects == "" {
		return true
	}
	return slices.Contains(strings.Split(*loadSubjects, ","), name)
}

func BenchmarkLoad(b *testing.B) { benchLoad(b, subjects) }

// BenchmarkLoadLegacy is the load run on 2025-11-25 sessions: every
// client opens its own session (initialize) and calls tools/call echo in
// it; roundtrip against the hand-written stateful server (rawLegacy).
// Every client comes from loopback, one party to the server: roundtrip's
// per-party bound on sessions (100 by default) is raised to fit the
// largest run.
func BenchmarkLoadLegacy(b *testing.B) {
	rt := roundtripLegacy
	rt.handler = func(tb testing.TB) http.Handler {
		n := 2 * slices.Max(loadClients)
		return mcp.NewHTTPHandler(rtServer(), &mcp.HTTPOptions{Legacy: mcp.LegacyHTTPOptions{MaxSessionsPerPrincipal: n, MaxRequestsPerPrincipal: n}})
	}
	benchLoad(b, []subject{rt, rawLegacy})
}

func benchLoad(b *testing.B, subjects []subject) {
	if *loadURL != "" {
		if err := checkLoopback(*loadURL); err != nil {
			b.Fatal(err)
		}
	}
	for _, clients := range loadClients {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			for _, s := range subjects {
				if !wanted(s.name) {
					continue
				}
				b.Run("subject="+s.name, func(b *testing.B) {
					u := *loadURL
					if u == "" {
						u = serveHTTP(b, s.handler(b))
					}
					var r loadResult
					for b.Loop() {
						var err error
						r, err = runLoad(context.Background(), clients, *loadCalls, *loadMax, func() caller {
							return s.httpClient(b, u, newHTTPClient(nil))
						})
						if err != nil {
							b.Fatal(err)
						}
					}
					if r.calls < *loadCalls {
						b.Logf("stopped by -load.max after %d of %d calls", r.calls, *loadCalls)
					}
					b.ReportMetric(float64(r.calls)/r.elapsed.Seconds(), "calls/s")
					b.ReportMetric(float64(r.p50.Microseconds()), "p50-µs")
					b.ReportMetric(float64(r.p99.Microseconds()), "p99-µs")
				})
			}
		})
	}
}

// TestLoadRefusesNonLoopbackTargets checks that the load generator can
// only be pointed at this machine.
func TestLoadRefusesNonLoopbackTargets(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080/mcp", "http://[::1]:80/mcp", "http://127.3.4.5/mcp"} {
		if err := checkLoopback(u); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
	for _, u := range []string{"http://10.0.0.1/mcp", "http://192.168.1.2:8080/mcp", "http://example.com/mcp", "https://127.0.0.1/mcp", "http://[2001:db8::1]/mcp", "http:///mcp", "http://0.0.0.0/mcp"} {
		if err := checkLoopback(u); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
}

// TestLoadRunIsBoundedInCallsAndTime checks that a load run stops at its
// call count, and at its time limit when the calls are slower.
func TestLoadRunIsBoundedInCallsAndTime(t *testing.T) {
	u := serveHTTP(t, rawSubject.handler(t))
	mk := func() caller { return rawSubject.httpClient(t, u, newHTTPClient(nil)) }
	r, err := runLoad(context.Background(), 2, 20, time.Minute, mk)
	if err != nil {
		t.Fatal(err)
	}
	if r.calls != 20 {
		t.Fatalf("%d calls, want 20", r.calls)
	}
	const limit = 300 * time.Millisecond
	r, err = runLoad(context.Background(), 2, 1<<30, limit, mk)
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: far fewer calls than asked for, and an end soon after the
	// limit (the slack is for the calls in flight on a loaded machine).
	if r.calls >= 1<<30 || r.elapsed > limit+5*time.Second {
		t.Fatalf("%d calls in %v: not bounded by the time limit", r.calls, r.elapsed)
	}
}
