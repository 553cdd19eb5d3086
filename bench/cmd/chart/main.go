// Command chart draws the side-by-side benchmark results (`go test -bench`
// output, from files or standard input) as a PNG with the standard
// library: per workload, one horizontal bar per subject for time per
// operation and for allocations per operation, both as multiples of the
// raw baseline on a logarithmic scale, labelled with the median.
//
//	go run ./cmd/chart -o results/chart.png results/latest.txt
package main

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"github.com/roundtrip-mcp/roundtrip/bench/internal/results"
)

var (
	white  = color.RGBA{255, 255, 255, 255}
	black  = color.RGBA{30, 30, 30, 255}
	grey   = color.RGBA{120, 120, 120, 255}
	grid   = color.RGBA{225, 225, 225, 255}
	colors = map[string]color.RGBA{
		"roundtrip": {31, 119, 180, 255},
		"gosdk":     {255, 127, 14, 255},
		"mcpgo":     {44, 160, 44, 255},
		"raw":       {127, 127, 127, 255},
	}
	others = []color.RGBA{{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}}
)

func colorOf(subjects []string, s string) color.RGBA {
	if c, ok := colors[s]; ok {
		return c
	}
	for i, x := range subjects {
		if x == s {
			return others[i%len(others)]
		}
	}
	return black
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

const (
	scale    = 2  // font scale of labels
	small    = 1  // font scale of tick labels
	rowH     = 22 // one bar
	headH    = 24 // a workload's name
	gap      = 10 // between workloads
	top      = 96 // title, legend, panel titles
	left     = 16
	labelW   = 170
	textRoom = 190 // right of the longest bar, for its label
	lo       = 0.5 // left end of the log axes (ratio to raw)
)

// panel is one of the two columns of bars.
type panel struct {
	title string
	unit  string
	x, w  int
	hi    float64 // right end of the log axis
	label func(v float64) string
}

func (p *panel) barLen(ratio float64) int {
	if !(ratio > 0) {
		return 0
	}
	f := (math.Log(max(ratio, lo)) - math.Log(lo)) / (math.Log(p.hi) - math.Log(lo))
	return max(2, int(f*float64(p.w-textRoom)))
}

// niceAbove returns the smallest of 1, 2, 5, 10, 20, 50, ... that is at
// least v.
func niceAbove(v float64) float64 {
	for m := 1.0; ; m *= 10 {
		for _, k := range []float64{1, 2, 5} {
			if k*m >= v {
				return k * m
			}
		}
	}
}

func main() {
	out := flag.String("o", "chart.png", "output PNG file")
	flag.Parse()
	set, err := results.ParseFiles(flag.Args())
	if err != nil {
		fatal(err)
	}
	img := render(set)
	f, err := os.Create(*out)
	if err != nil {
		fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		fatal(err)
	}
	if err := f.Close(); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "chart:", err)
	os.Exit(1)
}

func render(set *results.Set) *image.RGBA {
	const width = 1400
	panels := []*panel{
		{title: "time per call, × raw (log scale)", unit: results.NsPerOp, x: left + labelW, w: 640, label: results.Duration},
		{title: "allocations per call, × raw (log scale)", unit: results.AllocsPerOp, x: left + labelW + 640 + 30, w: width - (left + labelW + 640 + 30) - left,
			label: func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	}
	runs := 0
	for _, p := range panels {
		hi := 1.0
		for _, w := range set.Workloads {
			raw, _ := set.Median(w, results.Raw, p.unit)
			for _, s := range set.Subjects {
				v, n := set.Median(w, s, p.unit)
				runs = max(runs, n)
				if raw > 0 && v/raw > hi {
					hi = v / raw
				}
			}
		}
		p.hi = niceAbove(hi * 1.05)
	}
	height := top + len(set.Workloads)*(headH+len(set.Subjects)*rowH+gap) + 40
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), white)

	drawText(img, left, 12, fmt.Sprintf("roundtrip vs go-sdk, mcp-go and raw net/http, protocol 2026-07-28: medians of %d runs", runs), scale, black)
	x := left
	for _, s := range set.Subjects {
		fill(img, image.Rect(x, 40, x+14, 54), colorOf(set.Subjects, s))
		drawText(img, x+20, 40, s, scale, black)
		x += 20 + textWidth(s, scale) + 30
	}
	drawText(img, x+10, 43, "(bars: multiples of raw, labels: medians)", small, grey)

	plotTop, plotBottom := top, height-40
	for _, p := range panels {
		drawText(img, p.x, 66, p.title, scale, black)
		for m := 1.0; m <= p.hi; m *= 10 {
			for _, k := range []float64{1, 2, 5} {
				t := k * m
				if t > p.hi {
					break
				}
				gx := p.x + p.barLen(t)
				fill(img, image.Rect(gx, plotTop-4, gx+1, plotBottom), grid)
				drawText(img, gx-textWidth(tick(t), small)/2, plotTop-14, tick(t), small, grey)
			}
		}
	}

	y := top
	for _, w := range set.Workloads {
		drawText(img, left, y+5, w, scale, black)
		y += headH
		for _, s := range set.Subjects {
			drawText(img, left+16, y+4, s, scale, grey)
			for _, p := range panels {
				v, n := set.Median(w, s, p.unit)
				if n == 0 {
					continue
				}
				raw, _ := set.Median(w, results.Raw, p.unit)
				ratio := v / raw
				l := p.barLen(ratio)
				fill(img, image.Rect(p.x, y+3, p.x+l, y+rowH-3), colorOf(set.Subjects, s))
				label := p.label(v)
				if s != results.Raw && raw > 0 {
					label += fmt.Sprintf("  %s×", ratioText(ratio))
				}
				drawText(img, p.x+l+6, y+4, label, scale, black)
			}
			y += rowH
		}
		y += gap
		fill(img, image.Rect(left, y-gap/2, width-left, y-gap/2+1), grid)
	}
	drawText(img, left, height-26, "generated by bench/cmd/chart from go test -bench output - see docs/performance.md", small, grey)
	return img
}

func tick(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.1f×", v)
	}
	return fmt.Sprintf("%.0f×", v)
}

func ratioText(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
