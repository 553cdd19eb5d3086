package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// TestMain lets the test binary play an instance: Start re-runs it as
// "serve -id ID ...".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := run(os.Args[1:], os.Stdout); err != nil {
			os.Stderr.WriteString("fleet: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Behind real nginx doing round robin, the legs of one call land on
// different processes and the call completes; a replayed leg is refused
// by another instance than the one that accepted it (the single-use
// record is in Redis, shared by the fleet).
func TestFleetBehindNginx(t *testing.T) {
	var out bytes.Buffer
	if err := demo(os.Args[0], &out); err != nil {
		t.Fatalf("%v (the test command installs nginx-light and redis-server)\n%s", err, out.String())
	}
	got := out.String()
	if !strings.Contains(got, "result: Provisioned orders: postgres in eu-west-1, 50 GiB.") {
		t.Fatalf("no result:\n%s", got)
	}
	legs := regexp.MustCompile(`legs served by: (.*)`).FindStringSubmatch(got)
	if legs == nil {
		t.Fatalf("no legs line:\n%s", got)
	}
	ids := strings.Fields(legs[1])
	distinct := map[string]bool{}
	for _, id := range ids {
		distinct[id] = true
	}
	if len(ids) != 3 || len(distinct) < 2 {
		t.Errorf("three legs on at least two instances, got %q", ids)
	}
	acc := regexp.MustCompile(`replay 1 \(mysql\): answered by (\w+) \(next question: How much storage for audit on mysql\?\)`).FindStringSubmatch(got)
	same := regexp.MustCompile(`replay 2 \(mysql\): answered by (\w+) \(next question: How much storage for audit on mysql\?\)`).FindStringSubmatch(got)
	ref := regexp.MustCompile(`replay 3 \(postgres\): refused by (\w+): .*the server rejected the request state`).FindStringSubmatch(got)
	if acc == nil || same == nil || ref == nil {
		t.Fatalf("replay lines missing:\n%s", got)
	}
	if acc[1] == same[1] {
		t.Errorf("the identical retry landed on the instance that ran the leg (%s): the test shows nothing about sharing", acc[1])
	}
	if acc[1] == ref[1] {
		t.Errorf("the replay was refused by the instance that accepted it (%s): the test shows nothing about sharing", acc[1])
	}
	// The 2025-11-25 client: live question and answer, the requests of its
	// session spread by round robin (the session is in the shared store).
	if !strings.Contains(got, "legacy (2025-11-25) result: Provisioned reports: postgres in eu-west-1, 50 GiB.") {
		t.Fatalf("no legacy result:\n%s", got)
	}
	lg := regexp.MustCompile(`legacy requests served by: (.*)`).FindStringSubmatch(got)
	if lg == nil {
		t.Fatalf("no legacy line:\n%s", got)
	}
	homes := strings.Fields(lg[1])
	if len(homes) < 3 {
		t.Fatalf("legacy requests: %q", homes)
	}
	served := map[string]bool{}
	for _, id := range homes {
		served[id] = true
	}
	if len(served) < 2 {
		t.Errorf("the legacy session's requests all went to one instance (%q): round robin should spread them", homes)
	}
}

// The load balancer really is in the path: nginx's access log names
// several upstream addresses for the POSTs, each one an instance.
func TestNginxSpreadsRequests(t *testing.T) {
	dir := t.TempDir()
	f, stop, err := startDemo(os.Args[0], dir)
	if err != nil {
		t.Fatalf("%v (the test command installs nginx-light and redis-server)", err)
	}
	defer stop()
	var out bytes.Buffer
	if err := callThrough(f.URL, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	f.Close() // flush the log
	b, err := os.ReadFile(f.AccessLog)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]string{}
	for id, addr := range f.Instances {
		known[addr] = id
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		fields := strings.Fields(line) // method status upstream instance
		if len(fields) != 4 || fields[0] != "POST" {
			continue
		}
		if id, ok := known[fields[2]]; !ok || id != fields[3] {
			t.Errorf("log line %q: upstream is not the instance that answered", line)
		}
		seen[fields[2]] = true
	}
	if len(seen) < 2 {
		t.Errorf("POSTs reached %d upstream(s); access log:\n%s", len(seen), b)
	}
}

// An instance needs a shared store and an id; everything else has a
// default. Keys never come from the command line (there is no flag).
func TestServeRefusesAnInstanceWithoutIDOrSharedStore(t *testing.T) {
	for _, args := range [][]string{
		{"-redis", "unix:///r.sock"},               // no id
		{"-id", "a b", "-redis", "unix:///r.sock"}, // not a word
		{"-id", "a"}, // no store
		{"-id", "a", "-redis", "redis://x", "-sentinels", "s"}, // two stores
		{"-id", "a", "-sentinels", "127.0.0.1:26379"},          // no master
		{"-id", "a", "-redis", "unix:///r.sock", "-state-ttl", "-1s"},
		{"-id", "a", "-redis", "unix:///r.sock", "-state-keys", "k"},
		{"-id", "a", "-redis", "unix:///r.sock", "extra"},
	} {
		if _, err := parseServeFlags(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	f, err := parseServeFlags([]string{"-id", "a-1", "-sentinels", "h1:26379,h2:26379", "-master", "m", "-guard-replicas", "1"}, io.Discard)
	if err != nil || f.drainTimeout != 30*time.Second || f.addr != "127.0.0.1:0" {
		t.Errorf("%+v %v", f, err)
	}
}

// A not-ready instance leaves nginx's pool: the health loop marks it down
// in the upstream block and reloads nginx; the calls go on through the
// others; started again, it is back in the pool.
func TestHealthLoopTakesAnInstanceThatIsNotReadyOutOfThePool(t *testing.T) {
	dir := t.TempDir()
	f, stop, err := startDemo(os.Args[0], dir)
	if err != nil {
		t.Fatalf("%v (the test command installs nginx-light and redis-server)", err)
	}
	defer stop()
	ctx := context.Background()
	downLine := "server " + f.Instances["b"] + " max_fails=2 fail_timeout=2s down;"
	if err := f.Kill("b"); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitPool(ctx, "b", false); err != nil {
		t.Fatal(err)
	}
	if conf, _ := os.ReadFile(filepath.Join(dir, "nginx.conf")); !strings.Contains(string(conf), downLine) {
		t.Fatalf("the upstream block does not mark b down:\n%s", conf)
	}
	rec := &legs{rt: http.DefaultTransport}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(f.URL, &mcp.HTTPClientOptions{HTTPClient: &http.Client{Transport: rec}}),
		&mcp.ClientOptions{Elicitation: answer})
	defer c.Close()
	for i := range 3 {
		if _, err := c.CallTool(ctx, "provision", ProvisionArgs{Name: fmt.Sprintf("db%d", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if served := rec.take(); slices.Contains(served, "b") || len(served) != 9 {
		t.Errorf("legs served by %q with b down", served)
	}
	if err := f.Restart("b"); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitPool(ctx, "b", true); err != nil {
		t.Fatal(err)
	}
	if conf, _ := os.ReadFile(filepath.Join(dir, "nginx.conf")); strings.Contains(string(conf), " down;") {
		t.Fatalf("b still down after its restart:\n%s", conf)
	}
	if f.Reloads() != 2 {
		t.Errorf("%d nginx reloads, want 2 (out, back in)", f.Reloads())
	}
}

// SIGTERM drains: readiness turns off at once, the leg in flight runs to
// its end and its answer reaches the client, then the process exits 0.
func TestSIGTERMLetsTheLegInFlightFinishThenExits(t *testing.T) {
	dir := t.TempDir()
	sock, stopRedis, err := startRedis(dir)
	if err != nil {
		t.Fatalf("%v (the test command installs redis-server)", err)
	}
	defer stopRedis()
	ledger := filepath.Join(dir, "ledger")
	f, err := Start(Config{Self: os.Args[0], Dir: dir, Instances: 1, Redis: "unix://" + sock,
		ProvisionTime: 1500 * time.Millisecond, DrainTimeout: 20 * time.Second, Ledger: ledger})
	if err != nil {
		t.Fatalf("%v (the test command installs nginx-light)", err)
	}
	defer f.Close()
	c := mcp.NewClient(mcp.NewHTTPClientTransport(f.URL, nil), &mcp.ClientOptions{Elicitation: answer})
	defer c.Close()
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, "provision", ProvisionArgs{Name: "drained"}, nil)
		done <- result{res, err}
	}()
	if err := waitFor(20*time.Second, func() error {
		if !strings.Contains(f.tail("a", 1<<20), `"msg":"provisioning"`) {
			return errors.New("the last leg did not start")
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, f.Logs(4000))
	}
	p, err := f.drain("a")
	if err != nil {
		t.Fatal(err)
	}
	readyz := "http://" + f.Instances["a"] + "/readyz"
	if err := waitFor(5*time.Second, func() error {
		resp, err := http.Get(readyz)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("/readyz %d while draining", resp.StatusCode)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	r := <-done
	if r.err != nil || textOf(r.res) != "Provisioned drained: postgres in eu-west-1, 50 GiB." {
		t.Fatalf("the leg in flight: %v %v\n%s", r.res, r.err, f.Logs(4000))
	}
	f.waitExit("a", p)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d after draining", code)
	}
	log := f.tail("a", 1<<20)
	if !strings.Contains(log, `"msg":"draining","instance":"a","signal":"terminated","inFlight":1`) ||
		!strings.Contains(log, `"msg":"stopped","instance":"a","drained":true`) {
		t.Errorf("the log does not show a drain with one leg in flight:\n%s", log)
	}
	if b, _ := os.ReadFile(ledger); strings.Count(string(b), "drained a ") != 1 {
		t.Errorf("ledger: %q", b)
	}
}
