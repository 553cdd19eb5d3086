package results

import (
	"math"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkToolCall/subject=roundtrip-2   	 5392	 60000 ns/op	 13761 B/op	 199 allocs/op
BenchmarkToolCall/subject=roundtrip-2   	 5392	 64000 ns/op	 13761 B/op	 199 allocs/op
BenchmarkToolCall/subject=roundtrip-2   	 5392	 90000 ns/op	 13761 B/op	 201 allocs/op
BenchmarkToolCall/gosdk-2       	  378	800000 ns/op	735766 B/op	 629 allocs/op
BenchmarkToolCall/mcpgo-2       	 1449	160000 ns/op	 47400 B/op	 623 allocs/op
BenchmarkToolCall/raw-2         	 5487	 50000 ns/op	 10734 B/op	 144 allocs/op
BenchmarkPayload1MiB/roundtrip-2	    6	36000000 ns/op	  57.24 MB/s	22112232 B/op	 306 allocs/op
BenchmarkPayload1MiB/raw-2      	   13	24000000 ns/op	  88.11 MB/s	20590985 B/op	 245 allocs/op
PASS
`

func TestRows(t *testing.T) {
	s, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Workloads, ","); got != "ToolCall,Payload1MiB" {
		t.Fatalf("workloads %s", got)
	}
	rows := s.Rows()
	r := rows[0]
	if r.RT != 64000 || r.Samples != 3 || r.Peer != "mcpgo" || r.PeerNs != 160000 || r.Raw != 50000 {
		t.Fatalf("%+v", r)
	}
	if r.TimeVsPeer != 0.4 || r.TimeVsRaw != 1.28 || r.AllocPeer != "mcpgo" || r.AllocsVsPeer != 199.0/623 {
		t.Fatalf("%+v", r)
	}
	if !math.IsNaN(rows[1].TimeVsPeer) || rows[1].TimeVsRaw != 1.5 {
		t.Fatalf("%+v", rows[1])
	}
	if v, ok := Targets[0].Value(s, rows); !ok || v != 1.28 {
		t.Fatal(v, ok)
	}
	if _, ok := Targets[3].Value(s, rows); ok {
		t.Fatal("TwoLegMRTR was not measured")
	}
}

func TestMedianEven(t *testing.T) {
	s, err := Parse(strings.NewReader("BenchmarkA/x-4 1 1 ns/op\nBenchmarkA/x-4 1 3 ns/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m, n := s.Median("A", "x", NsPerOp); m != 2 || n != 2 {
		t.Fatal(m, n)
	}
}

// TestLoadAndScaleLines checks that the load run's nested names and the
// custom metrics of the scale runs are read, kept out of the time table,
// and judged by the issue-17 targets.
func TestLoadAndScaleLines(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkLoad/clients=256/subject=roundtrip-2 1 100 ns/op 2000 calls/s 900 p50-µs 3000 p99-µs
BenchmarkLoad/clients=256/subject=raw-2 1 100 ns/op 2500 calls/s 800 p50-µs 2000 p99-µs
BenchmarkScaleIdleSessions/subject=roundtrip-2 1 100 ns/op 2100 B/session 0 goroutines/session 10000 sessions
BenchmarkToolCall/subject=roundtrip-2 10 50 ns/op
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Workloads, ","); got != "Load/clients=256,ScaleIdleSessions,ToolCall" {
		t.Fatalf("workloads %s", got)
	}
	rows := s.Rows()
	if len(rows) != 1 || rows[0].Workload != "ToolCall" {
		t.Fatalf("rows %+v", rows)
	}
	for _, tg := range Targets17 {
		v, ok := tg.Value(s, rows)
		switch tg.Workload {
		case "Load/clients=256":
			if !ok || v != 1.5 {
				t.Errorf("%s: %v %v", tg.Name, v, ok)
			}
		case "ScaleIdleSessions":
			if !ok || v != 2100 {
				t.Errorf("%s: %v %v", tg.Name, v, ok)
			}
		case "ScaleSSEStreams", "ScaleListenStreams", "InMemory":
			if ok {
				t.Errorf("%s measured", tg.Name)
			}
		}
	}
}
