package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/bench/internal/results"
)

const sample = `BenchmarkToolCall/subject=roundtrip-2  5000  60000 ns/op  13761 B/op  150 allocs/op
BenchmarkToolCall/subject=gosdk-2      400  800000 ns/op 735766 B/op  629 allocs/op
BenchmarkToolCall/subject=mcpgo-2     1400  160000 ns/op  47400 B/op  623 allocs/op
BenchmarkToolCall/subject=raw-2       5400   50000 ns/op  10734 B/op  144 allocs/op
BenchmarkPipe/subject=roundtrip-2     5000   35000 ns/op   5964 B/op  111 allocs/op
BenchmarkPipe/subject=raw-2          16000   14000 ns/op   2256 B/op   43 allocs/op
BenchmarkScaleIdleSessions/subject=roundtrip-2 1 100 ns/op 2100 B/session 2000 heap-B/session 100 stack-B/session 0 goroutines/session 10000 sessions
BenchmarkLoad/clients=256/subject=roundtrip-2 1 100 ns/op 2000 calls/s 900 p50-µs 3000 p99-µs
BenchmarkLoad/clients=256/subject=raw-2 1 100 ns/op 2500 calls/s 800 p50-µs 2000 p99-µs
BenchmarkLoadLegacy/clients=256/subject=roundtrip-2 1 100 ns/op 2000 calls/s 900 p50-µs 2200 p99-µs
BenchmarkLoadLegacy/clients=256/subject=raw-2 1 100 ns/op 2500 calls/s 800 p50-µs 2000 p99-µs
`

func TestWrite(t *testing.T) {
	set, err := results.Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	write(&b, set)
	out := b.String()
	for _, want := range []string{
		"| ToolCall | 60.0 µs | 50.0 µs | mcpgo 160 µs | 0.38 | 1.20 | 150 | 144 | mcpgo 623 | 0.24 | 1.04 |",
		"| Pipe | 35.0 µs | 14.0 µs | – | – | 2.50 | 111 | 43 | – | – | 2.58 |",
		"| HTTP tools/call allocs ≤ ¼ best peer | ToolCall allocs/peer ≤ 0.25 | 0.24 | yes |",
		"| stdio ≤ 1.2× raw pipe echo | Pipe time/raw ≤ 1.2 | 2.50 | **no** |",
		"| idle legacy session ≤ 4 KiB | ScaleIdleSessions B/session ≤ 4096 | 2100 | yes |",
		"| p99 at 256 clients ≤ 1.5× raw | Load/clients=256 p99-µs/raw ≤ 1.5 | 1.50 | yes |",
		"| 256 | roundtrip | 2000 | 900 µs | 3.00 ms | 1.50 |",
		"| 256 (2025 sessions) | roundtrip | 2000 | 900 µs | 2.20 ms | 1.10 |",
		"| 2025 p99 at 256 clients ≤ 1.2× raw | LoadLegacy/clients=256 p99-µs/raw ≤ 1.2 | 1.10 | yes |",
		"| 2025 stdio tools/call ≤ 1.2× raw pipe loop | LegacyPipe time/raw ≤ 1.2 | – | not measured |",
		"| roundtrip | 2100 | 2000 | 100 | 0.00 | 10000 |",
		"| pipe call ≤ 2× raw pipe echo | Pipe time/raw ≤ 2 | 2.50 | **no** |",
		"| 1 MiB payload ≤ 1.3× raw | Payload1MiB time/raw ≤ 1.3 | – | not measured |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
