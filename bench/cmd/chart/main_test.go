package main

import (
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/bench/internal/results"
)

func TestRender(t *testing.T) {
	set, err := results.Parse(strings.NewReader(`BenchmarkToolCall/subject=roundtrip-2 5000 60000 ns/op 150 allocs/op
BenchmarkToolCall/subject=mcpgo-2 1400 160000 ns/op 623 allocs/op
BenchmarkToolCall/subject=raw-2 5400 50000 ns/op 144 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	img := render(set)
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() < 200 {
		t.Fatalf("bounds %v", b)
	}
	// The roundtrip bar is drawn in its colour at the start of the time panel.
	if c := img.RGBAAt(left+labelW+1, top+headH+rowH/2); c != colors["roundtrip"] {
		t.Fatalf("colour %v", c)
	}
}

func TestGlyphs(t *testing.T) {
	for r, g := range glyphs {
		for _, row := range g {
			if len(row) != glyphW {
				t.Errorf("glyph %q: row %q", r, row)
			}
		}
	}
}
