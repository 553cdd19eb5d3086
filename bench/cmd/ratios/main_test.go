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
		"| pipe call ≤ 2× raw pipe echo | Pipe time/raw ≤ 2 | 2.50 | **no** |",
		"| 1 MiB payload ≤ 1.3× raw | Payload1MiB time/raw ≤ 1.3 | – | not measured |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
