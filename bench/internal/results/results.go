// Package results reads `go test -bench` output of the side-by-side
// benchmarks (Benchmark<Workload>/<subject>, see bench_test.go) and
// computes the medians and ratios that cmd/ratios prints and cmd/chart
// draws.
package results

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Units used by the tables.
const (
	NsPerOp     = "ns/op"
	AllocsPerOp = "allocs/op"
	BytesPerOp  = "B/op"
)

// Subject names: the subject under test, the baseline, and the peers.
const (
	Roundtrip = "roundtrip"
	Raw       = "raw"
)

// Set holds every sample of every benchmark: Samples[workload][subject][unit].
type Set struct {
	Workloads []string // in the order first seen
	Subjects  []string // in the order first seen
	Samples   map[string]map[string]map[string][]float64
}

// Parse reads benchmark result lines; other lines are ignored. A line is
// "BenchmarkW/subject=s-P N v1 u1 v2 u2 ..." ("subject=" is optional).
func Parse(r io.Reader) (*Set, error) {
	s := &Set{Samples: map[string]map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		// The subject is the last "/subject=" element (the load run has
		// Load/clients=N/subject=S), else the first "/" element.
		var w, subj string
		if i := strings.LastIndex(name, "/subject="); i > 0 {
			w, subj = name[:i], name[i+len("/subject="):]
		} else {
			var ok bool
			if w, subj, ok = strings.Cut(name, "/"); !ok {
				continue
			}
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		if s.Samples[w] == nil {
			s.Samples[w] = map[string]map[string][]float64{}
			s.Workloads = append(s.Workloads, w)
		}
		if s.Samples[w][subj] == nil {
			s.Samples[w][subj] = map[string][]float64{}
			if !slices.Contains(s.Subjects, subj) {
				s.Subjects = append(s.Subjects, subj)
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q: %v", f[0], f[i], err)
			}
			s.Samples[w][subj][f[i+1]] = append(s.Samples[w][subj][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(s.Workloads) == 0 {
		return nil, fmt.Errorf("no benchmark results in the input")
	}
	return s, nil
}

// Median returns the median of the samples of workload w, subject subj,
// unit u, and the number of samples; NaN when there are none.
func (s *Set) Median(w, subj, u string) (float64, int) {
	v := slices.Clone(s.Samples[w][subj][u])
	if len(v) == 0 {
		return math.NaN(), 0
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2], n
	}
	return (v[n/2-1] + v[n/2]) / 2, n
}

// Peers returns the subjects of workload w that are neither roundtrip
// nor raw.
func (s *Set) Peers(w string) []string {
	var out []string
	for _, subj := range s.Subjects {
		if subj == Roundtrip || subj == Raw {
			continue
		}
		if _, ok := s.Samples[w][subj]; ok {
			out = append(out, subj)
		}
	}
	return out
}

// BestPeer returns the peer of workload w with the lowest median of unit
// u ("" when there is none).
func (s *Set) BestPeer(w, u string) (string, float64) {
	best, bv := "", math.Inf(1)
	for _, p := range s.Peers(w) {
		if v, _ := s.Median(w, p, u); v < bv {
			best, bv = p, v
		}
	}
	if best == "" {
		return "", math.NaN()
	}
	return best, bv
}

// Row is one workload of the ratio table.
type Row struct {
	Workload string
	Samples  int // samples of roundtrip's time

	RT, Raw            float64 // median ns/op
	Peer               string  // best peer by time
	PeerNs             float64
	TimeVsPeer         float64 // RT / PeerNs
	TimeVsRaw          float64 // RT / Raw
	RTAllocs           float64
	RawAllocs          float64
	AllocPeer          string // best peer by allocations
	PeerAllocs         float64
	AllocsVsPeer       float64
	AllocsVsRaw        float64
	RTBytes, PeerBytes float64 // B/op of roundtrip and of the best peer by time
}

// Special reports whether w is a scale or load workload, whose figures
// are custom metrics rather than time per operation.
func Special(w string) bool {
	return strings.HasPrefix(w, "Scale") || strings.HasPrefix(w, "Load")
}

// Rows computes the ratio table (the time workloads, not Special ones).
func (s *Set) Rows() []Row {
	var rows []Row
	for _, w := range s.Workloads {
		if Special(w) {
			continue
		}
		r := Row{Workload: w}
		r.RT, r.Samples = s.Median(w, Roundtrip, NsPerOp)
		r.Raw, _ = s.Median(w, Raw, NsPerOp)
		r.Peer, r.PeerNs = s.BestPeer(w, NsPerOp)
		r.TimeVsPeer = r.RT / r.PeerNs
		r.TimeVsRaw = r.RT / r.Raw
		r.RTAllocs, _ = s.Median(w, Roundtrip, AllocsPerOp)
		r.RawAllocs, _ = s.Median(w, Raw, AllocsPerOp)
		r.AllocPeer, r.PeerAllocs = s.BestPeer(w, AllocsPerOp)
		r.AllocsVsPeer = r.RTAllocs / r.PeerAllocs
		r.AllocsVsRaw = r.RTAllocs / r.RawAllocs
		r.RTBytes, _ = s.Median(w, Roundtrip, BytesPerOp)
		r.PeerBytes, _ = s.Median(w, r.Peer, BytesPerOp)
		rows = append(rows, r)
	}
	return rows
}

// Target is one acceptance target: Ratio of Workload must be at most
// Max. Ratio is "time/peer", "time/raw" or "allocs/peer" (from the ratio
// table), "<unit>/raw" (roundtrip's median of a custom unit over raw's)
// or "<unit>" (roundtrip's median of a custom unit itself).
type Target struct {
	Name     string
	Workload string
	Ratio    string
	Max      float64
}

// Targets are the acceptance targets of issue 7. Parallel throughput of
// at least 2× the best peer's is time per operation at most 0.5× the best
// peer's.
var Targets = []Target{
	{"HTTP tools/call ≤ 1.5× raw", "ToolCall", "time/raw", 1.5},
	{"HTTP tools/call ≤ 0.5× best peer", "ToolCall", "time/peer", 0.5},
	{"HTTP tools/call allocs ≤ ¼ best peer", "ToolCall", "allocs/peer", 0.25},
	{"two-leg MRTR (sealed) ≤ 0.5× best peer", "TwoLegMRTR", "time/peer", 0.5},
	{"pipe call ≤ 2× raw pipe echo", "Pipe", "time/raw", 2},
	{"1 MiB payload ≤ 1.3× raw", "Payload1MiB", "time/raw", 1.3},
	{"parallel throughput ≥ 2× best peer", "Parallel", "time/peer", 0.5},
}

// Targets17 are the acceptance targets of issue 17 (InMemory: the pipe
// call over mcp.NewInMemoryTransports, roundtrip and raw only).
var Targets17 = []Target{
	{"stdio ≤ 1.2× raw pipe echo", "Pipe", "time/raw", 1.2},
	{"in-memory ≤ 1.1× raw", "InMemory", "time/raw", 1.1},
	{"HTTP tools/call ≤ 1.0× raw", "ToolCall", "time/raw", 1},
	{"HTTP 10 KiB payload ≤ 1.0× raw", "Payload10KB", "time/raw", 1},
	{"HTTP 1 MiB payload ≤ 1.0× raw", "Payload1MiB", "time/raw", 1},
	{"HTTP two-leg MRTR ≤ 1.0× raw", "TwoLegMRTR", "time/raw", 1},
	{"HTTP handler ≤ 1.0× raw", "Handler", "time/raw", 1},
	{"HTTP parallel ≤ 1.0× raw", "Parallel", "time/raw", 1},
	{"legacy session tools/call ≤ 0.5× best peer", "LegacyToolCall", "time/peer", 0.5},
	{"legacy live elicitation ≤ 0.5× best peer", "LegacyElicit", "time/peer", 0.5},
	{"legacy stdio tools/call ≤ 0.5× best peer", "LegacyPipe", "time/peer", 0.5},
	{"idle legacy session ≤ 4 KiB", "ScaleIdleSessions", "B/session", 4096},
	{"open SSE stream ≤ 16 KiB", "ScaleSSEStreams", "B/stream", 16384},
	{"open listen stream ≤ 16 KiB", "ScaleListenStreams", "B/stream", 16384},
	{"p99 at 256 clients ≤ 1.5× raw", "Load/clients=256", "p99-µs/raw", 1.5},
}

// Targets22 are the performance targets of issue 22 (point 6): the
// 2025-11-25 session workloads against the hand-written stateful
// baseline (rawlegacy_test.go), and the modern two-leg call whose tool
// asks with mcp.Elicit.
var Targets22 = []Target{
	{"2025 live elicitation ≤ 1.15× raw stateful", "LegacyElicit", "time/raw", 1.15},
	{"2025 stdio tools/call ≤ 1.2× raw pipe loop", "LegacyPipe", "time/raw", 1.2},
	{"2025 p99 at 256 clients ≤ 1.2× raw", "LoadLegacy/clients=256", "p99-µs/raw", 1.2},
	{"two-leg call with mcp.Elicit ≤ 1.1× raw", "TwoLegMRTR", "time/raw", 1.1},
}

// Targets23 are the targets of issue 23: a modern tools/call through one
// gateway hop to a roundtrip upstream against the direct call
// (BenchmarkGatewayHop, whose other subject, "direct", is its peer).
var Targets23 = []Target{
	{"tools/call through a gateway hop ≤ 2× the direct call", "GatewayHop", "time/peer", 2},
}

// Value returns the measured value of t, and whether it was measured.
func (t Target) Value(s *Set, rows []Row) (float64, bool) {
	switch t.Ratio {
	case "time/peer", "time/raw", "allocs/peer":
	default:
		if unit, ok := strings.CutSuffix(t.Ratio, "/raw"); ok {
			rt, _ := s.Median(t.Workload, Roundtrip, unit)
			raw, _ := s.Median(t.Workload, Raw, unit)
			v := rt / raw
			return v, !math.IsNaN(v) && !math.IsInf(v, 0)
		}
		v, _ := s.Median(t.Workload, Roundtrip, t.Ratio)
		return v, !math.IsNaN(v)
	}
	for _, r := range rows {
		if r.Workload != t.Workload {
			continue
		}
		var v float64
		switch t.Ratio {
		case "time/peer":
			v = r.TimeVsPeer
		case "time/raw":
			v = r.TimeVsRaw
		case "allocs/peer":
			v = r.AllocsVsPeer
		}
		return v, !math.IsNaN(v)
	}
	return math.NaN(), false
}

// ParseFiles parses the named files of `go test -bench` output, in
// order, or standard input when there are none.
func ParseFiles(names []string) (*Set, error) {
	if len(names) == 0 {
		return Parse(os.Stdin)
	}
	rs := make([]io.Reader, 0, len(names))
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		rs = append(rs, f)
	}
	return Parse(io.MultiReader(rs...))
}

// Duration formats nanoseconds with three significant digits ("–" for
// a missing value).
func Duration(ns float64) string {
	if math.IsNaN(ns) {
		return "–"
	}
	unit, v := "ns", ns
	switch {
	case ns >= 1e9:
		unit, v = "s", ns/1e9
	case ns >= 1e6:
		unit, v = "ms", ns/1e6
	case ns >= 1e3:
		unit, v = "µs", ns/1e3
	}
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}
