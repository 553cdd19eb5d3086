package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/bench/internal/results"
)

// TestChartsOnePNGPerGroupWithData checks that each group with results
// gets its PNG and a group without any gets none.
func TestChartsOnePNGPerGroupWithData(t *testing.T) {
	set, err := results.Parse(strings.NewReader(`BenchmarkToolCall/subject=roundtrip-2 5000 60000 ns/op 150 allocs/op
BenchmarkToolCall/subject=mcpgo-2 1400 160000 ns/op 623 allocs/op
BenchmarkToolCall/subject=raw-2 5400 50000 ns/op 144 allocs/op
BenchmarkLegacyToolCall/subject=roundtrip-2 5000 60000 ns/op 150 allocs/op
BenchmarkLegacyToolCall/subject=gosdk-2 5000 90000 ns/op 150 allocs/op
BenchmarkScaleIdleSessions/subject=roundtrip-2 1 1 ns/op 2100 B/session 0 goroutines/session 10000 sessions
BenchmarkLoad/clients=16/subject=roundtrip-2 1 1 ns/op 5000 calls/s 1000 p50-µs 3000 p99-µs
BenchmarkLoad/clients=256/subject=roundtrip-2 1 1 ns/op 2000 calls/s 9000 p50-µs 30000 p99-µs
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := drawAll(set, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"modern-http.png", "legacy.png", "scale.png", "load.png"}
	if len(files) != len(want) {
		t.Fatalf("wrote %v, want %v", files, want)
	}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s is not a PNG", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "stream-pipe.png")); err == nil {
		t.Error("stream-pipe.png drawn without pipe results")
	}
}
