// Command ratios reads `go test -bench` output of the side-by-side
// benchmarks (from files or standard input) and prints, per workload, the
// medians and the ratios roundtrip / best peer and roundtrip / raw for
// time and allocations, then the acceptance targets of issue 7 with the
// measured ratios.
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
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | ratio | measured | holds |")
	fmt.Fprintln(w, "| --- | --- | ---: | --- |")
	for _, t := range results.Targets {
		v, ok := t.Value(rows)
		holds := "not measured"
		if ok {
			holds = "yes"
			if v > t.Max {
				holds = "**no**"
			}
		}
		fmt.Fprintf(w, "| %s | %s %s ≤ %s | %s | %s |\n", t.Name, t.Workload, t.Ratio, trim(t.Max), ratio(v), holds)
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
