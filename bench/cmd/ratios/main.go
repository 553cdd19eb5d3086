// Command ratios reads `go test -bench` output of the side-by-side
// benchmarks (from files or standard input) and prints, per workload, the
// medians and the ratios roundtrip / best peer and roundtrip / raw for
// time and allocations; the scale figures (bytes and goroutines per idle
// session and per open stream) and the load run (calls/s, p50, p99 per
// concurrency, on the 2026-07-28 and the 2025-11-25 era); then the
// acceptance targets of issue 17, of issue 22, of issue 7 and, last, of
// issue 23 (the gateway hop), with the measured values and whether each
// holds.
//
//	go test -run '^$' -bench . -benchmem -count 6 > new.txt
//	go run ./cmd/ratios new.txt
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/bench/internal/results"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: ratios [bench-output-file ...]  (standard input when none)")
		flag.PrintDefaults()
	}
	flag.Parse()
	set, err := results.ParseFiles(flag.Args())
	if err != nil {
		fatal(err)
	}
	write(os.Stdout, set)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "ratios:", err)
	os.Exit(1)
}

func write(w io.Writer, set *results.Set) {
	rows := set.Rows()
	n := 0
	for _, r := range rows {
		n = max(n, r.Samples)
	}
	fmt.Fprintf(w, "Medians of %d runs per benchmark. Best peer: the fastest (for allocations: the fewest) of the other SDKs. Ratios below 1 favour roundtrip.\n\n", n)
	fmt.Fprintln(w, "| workload | roundtrip | raw | best peer | rt / peer | rt / raw | rt allocs | raw allocs | best peer allocs | rt / peer | rt / raw |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Workload, results.Duration(r.RT), results.Duration(r.Raw), named(r.Peer, results.Duration(r.PeerNs)),
			ratio(r.TimeVsPeer), ratio(r.TimeVsRaw),
			count(r.RTAllocs), count(r.RawAllocs), named(r.AllocPeer, count(r.PeerAllocs)),
			ratio(r.AllocsVsPeer), ratio(r.AllocsVsRaw))
	}
	writeScale(w, set)
	writeLoad(w, set)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets of issue 17:")
	fmt.Fprintln(w)
	writeTargets(w, set, rows, results.Targets17)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets of issue 22:")
	fmt.Fprintln(w)
	writeTargets(w, set, rows, results.Targets22)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets of issue 7:")
	fmt.Fprintln(w)
	writeTargets(w, set, rows, results.Targets)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets of issue 23:")
	fmt.Fprintln(w)
	writeTargets(w, set, rows, results.Targets23)
}

func writeTargets(w io.Writer, set *results.Set, rows []results.Row, targets []results.Target) {
	fmt.Fprintln(w, "| target | measure | measured | holds |")
	fmt.Fprintln(w, "| --- | --- | ---: | --- |")
	for _, t := range targets {
		v, ok := t.Value(set, rows)
		holds := "not measured"
		if ok {
			holds = "yes"
			if v > t.Max {
				holds = "**no**"
			}
		}
		measured := ratio(v)
		if !strings.HasSuffix(t.Ratio, "/raw") && !strings.HasSuffix(t.Ratio, "/peer") {
			measured = count(v) // an absolute value (bytes)
		}
		fmt.Fprintf(w, "| %s | %s %s ≤ %s | %s | %s |\n", t.Name, t.Workload, t.Ratio, trim(t.Max), measured, holds)
	}
}

// writeScale prints the Scale workloads: per subject, the medians of
// their custom metrics.
func writeScale(w io.Writer, set *results.Set) {
	for _, wl := range set.Workloads {
		if !strings.HasPrefix(wl, "Scale") {
			continue
		}
		per, gor, n := "B/session", "goroutines/session", "sessions"
		if wl != "ScaleIdleSessions" {
			per, gor, n = "B/stream", "goroutines/stream", "streams"
		}
		fmt.Fprintf(w, "\n| %s | %s | heap | stacks | %s | %s |\n| --- | ---: | ---: | ---: | ---: | ---: |\n", wl, per, gor, n)
		for _, subj := range set.Subjects {
			if _, ok := set.Samples[wl][subj]; !ok {
				continue
			}
			b, _ := set.Median(wl, subj, per)
			h, _ := set.Median(wl, subj, "heap-"+per)
			st, _ := set.Median(wl, subj, "stack-"+per)
			g, _ := set.Median(wl, subj, gor)
			c, _ := set.Median(wl, subj, n)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f | %s |\n", subj, count(b), count(h), count(st), g, count(c))
		}
	}
}

// writeLoad prints the load run: per concurrency and subject, calls/s
// and the p50 and p99 latency, and roundtrip's p99 over raw's.
func writeLoad(w io.Writer, set *results.Set) {
	header := false
	for _, wl := range set.Workloads {
		era := ""
		clients, ok := strings.CutPrefix(wl, "Load/clients=")
		if !ok {
			if clients, ok = strings.CutPrefix(wl, "LoadLegacy/clients="); !ok {
				continue
			}
			era = " (2025 sessions)"
		}
		if !header {
			fmt.Fprintln(w, "\n| load: clients | subject | calls/s | p50 | p99 | p99 / raw p99 |\n| ---: | --- | ---: | ---: | ---: | ---: |")
			header = true
		}
		raw99, _ := set.Median(wl, results.Raw, "p99-µs")
		for _, subj := range set.Subjects {
			if _, ok := set.Samples[wl][subj]; !ok {
				continue
			}
			cps, _ := set.Median(wl, subj, "calls/s")
			p50, _ := set.Median(wl, subj, "p50-µs")
			p99, _ := set.Median(wl, subj, "p99-µs")
			fmt.Fprintf(w, "| %s%s | %s | %s | %s | %s | %s |\n", clients, era, subj, count(cps),
				results.Duration(p50*1e3), results.Duration(p99*1e3), ratio(p99/raw99))
		}
	}
}

func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func trim(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// named is "name value", or "–" when there is no such subject.
func named(name, value string) string {
	if name == "" {
		return "–"
	}
	return name + " " + value
}

func count(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}
