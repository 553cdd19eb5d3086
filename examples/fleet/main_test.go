package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMain lets the test binary play an instance: Start re-runs it as
// "serve ID SOCKET".
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
	ref := regexp.MustCompile(`replay 3 \(postgres\): refused by (\w+): .*-32602: Invalid or expired requestState`).FindStringSubmatch(got)
	if acc == nil || same == nil || ref == nil {
		t.Fatalf("replay lines missing:\n%s", got)
	}
	if acc[1] == same[1] {
		t.Errorf("the identical retry landed on the instance that ran the leg (%s): the test shows nothing about sharing", acc[1])
	}
	if acc[1] == ref[1] {
		t.Errorf("the replay was refused by the instance that accepted it (%s): the test shows nothing about sharing", acc[1])
	}
	// The 2025-11-25 client: live question and answer, every request of
	// its session on the one instance that holds it.
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
	// initialize may land anywhere; it names the home of everything after.
	for _, id := range homes[1:] {
		if id != homes[0] {
			t.Errorf("legacy session requests spread over instances: %q", homes)
		}
	}
}

// The load balancer really is in the path: nginx's access log names
// several upstream addresses for the POSTs, each one an instance.
func TestNginxSpreadsRequests(t *testing.T) {
	dir := t.TempDir()
	f, err := Start(os.Args[0], dir, 3)
	if err != nil {
		t.Fatalf("%v (the test command installs nginx-light and redis-server)", err)
	}
	defer f.Close()
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
