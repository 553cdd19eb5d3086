// Command chart draws the side-by-side benchmark results (`go test -bench`
// output, from files or standard input) with gonum/plot, one PNG per
// group of workloads, into a directory:
//
//	modern-http.png  2026-07-28 over HTTP (ToolCall, payloads, MRTR, Handler,
//	                 Parallel): time per call as a multiple of raw's
//	stream-pipe.png  the os.Pipe workloads (Pipe, LegacyPipe): time per call, µs
//	legacy.png       the 2025-11-25 session workloads: time per call, µs
//	scale.png        KiB per idle session, per open GET SSE stream, per listen stream
//	load.png         p99 latency against concurrent clients, per subject
//
// A group with no results in the input is skipped.
//
//	go run ./cmd/chart -dir results results/latest.txt
package main

import (
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/roundtrip-mcp/roundtrip/bench/internal/results"
)

var colors = map[string]color.RGBA{
	"roundtrip": {31, 119, 180, 255},
	"gosdk":     {255, 127, 14, 255},
	"mcpgo":     {44, 160, 44, 255},
	"raw":       {127, 127, 127, 255},
}

func colorOf(s string) color.Color {
	if c, ok := colors[s]; ok {
		return c
	}
	return color.RGBA{148, 103, 189, 255}
}

func main() {
	dir := flag.String("dir", "results", "directory the PNGs are written to")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: chart [-dir results] [bench-output-file ...]  (standard input when none)")
		flag.PrintDefaults()
	}
	flag.Parse()
	set, err := results.ParseFiles(flag.Args())
	if err != nil {
		fatal(err)
	}
	written, err := drawAll(set, *dir)
	if err != nil {
		fatal(err)
	}
	for _, f := range written {
		fmt.Println(f)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "chart:", err)
	os.Exit(1)
}

// group is one chart: which workloads, which unit, how it is drawn.
type group struct {
	file, title, ylabel string
	match               func(w string) bool
	unit                string
	// scale turns a median into the plotted value; relRaw divides by
	// raw's median of the same workload first.
	scale  float64
	relRaw bool
}

var groups = []group{
	{"modern-http.png", "2026-07-28 over loopback HTTP: time per call relative to raw", "time / raw time",
		func(w string) bool {
			return slices.Contains([]string{"ToolCall", "Payload10KB", "Payload1MiB", "TwoLegMRTR", "Handler", "Parallel"}, w)
		}, results.NsPerOp, 1, true},
	{"stream-pipe.png", "stdio framing over an os.Pipe pair: time per call", "µs per call",
		func(w string) bool { return w == "Pipe" || w == "LegacyPipe" }, results.NsPerOp, 1e-3, false},
	{"legacy.png", "2025-11-25 sessions: time per call", "µs per call",
		func(w string) bool { return strings.HasPrefix(w, "Legacy") }, results.NsPerOp, 1e-3, false},
}

// drawAll writes every chart that has data and returns their paths.
func drawAll(set *results.Set, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	save := func(p *plot.Plot, name string) error {
		if p == nil {
			return nil
		}
		f := filepath.Join(dir, name)
		if err := p.Save(9*vg.Inch, 4.5*vg.Inch, f); err != nil {
			return err
		}
		out = append(out, f)
		return nil
	}
	for _, g := range groups {
		p, err := barChart(set, g)
		if err != nil {
			return nil, err
		}
		if err := save(p, g.file); err != nil {
			return nil, err
		}
	}
	p, err := scaleChart(set)
	if err != nil {
		return nil, err
	}
	if err := save(p, "scale.png"); err != nil {
		return nil, err
	}
	p, err = loadChart(set)
	if err != nil {
		return nil, err
	}
	if err := save(p, "load.png"); err != nil {
		return nil, err
	}
	return out, nil
}

// bars draws grouped bars: one group per workload, one bar per subject.
func bars(title, ylabel string, workloads, subjects []string, value func(w, s string) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	w := vg.Points(min(18, 90/float64(max(1, len(subjects)))))
	top := 0.0
	for i, s := range subjects {
		vals := make(plotter.Values, len(workloads))
		for j, wl := range workloads {
			v := value(wl, s)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				v = 0
			}
			vals[j] = v
			top = max(top, v)
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = colorOf(s)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(len(subjects)-1)/2)
		p.Add(b)
		p.Legend.Add(s, b)
	}
	p.NominalX(workloads...)
	// Room for the legend above the bars, and for the outer bars.
	p.Y.Max = top * 1.3
	p.X.Min, p.X.Max = -0.5, float64(len(workloads))-0.5
	p.Add(plotter.NewGrid())
	return p, nil
}

// subjectsOf returns the subjects with samples in any of workloads, in
// the order of the input.
func subjectsOf(set *results.Set, workloads []string) []string {
	var out []string
	for _, s := range set.Subjects {
		for _, w := range workloads {
			if _, ok := set.Samples[w][s]; ok {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func barChart(set *results.Set, g group) (*plot.Plot, error) {
	var ws []string
	for _, w := range set.Workloads {
		if g.match(w) {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return nil, nil
	}
	return bars(g.title, g.ylabel, ws, subjectsOf(set, ws), func(w, s string) float64 {
		v, _ := set.Median(w, s, g.unit)
		if g.relRaw {
			raw, _ := set.Median(w, results.Raw, g.unit)
			v /= raw
		}
		return v * g.scale
	})
}

func scaleChart(set *results.Set) (*plot.Plot, error) {
	unit := map[string]string{"ScaleIdleSessions": "B/session", "ScaleSSEStreams": "B/stream", "ScaleListenStreams": "B/stream"}
	var ws []string
	for _, w := range []string{"ScaleIdleSessions", "ScaleSSEStreams", "ScaleListenStreams"} {
		if _, ok := set.Samples[w]; ok {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return nil, nil
	}
	return bars("cost at scale: memory per idle session, per open GET SSE stream, per listen stream", "KiB (heap + stacks)",
		ws, subjectsOf(set, ws), func(w, s string) float64 {
			v, _ := set.Median(w, s, unit[w])
			return v / 1024
		})
}

func loadChart(set *results.Set) (*plot.Plot, error) {
	type point struct{ clients, p99 float64 }
	lines := map[string][]point{}
	var subjects []string
	for _, w := range set.Workloads {
		c, ok := strings.CutPrefix(w, "Load/clients=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(c)
		if err != nil {
			continue
		}
		for _, s := range set.Subjects {
			v, k := set.Median(w, s, "p99-µs")
			if k == 0 {
				continue
			}
			if _, seen := lines[s]; !seen {
				subjects = append(subjects, s)
			}
			lines[s] = append(lines[s], point{float64(n), v / 1e3})
		}
	}
	if len(lines) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "load: p99 latency of tools/call against concurrent clients (loopback)"
	p.X.Label.Text = "concurrent clients"
	p.Y.Label.Text = "p99, ms"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 16, Label: "16"}, {Value: 64, Label: "64"}, {Value: 256, Label: "256"}})
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	for _, s := range subjects {
		pts := lines[s]
		slices.SortFunc(pts, func(a, b point) int { return int(a.clients - b.clients) })
		xys := make(plotter.XYs, len(pts))
		for i, pt := range pts {
			xys[i] = plotter.XY{X: pt.clients, Y: pt.p99}
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color = colorOf(s), colorOf(s)
		l.Width = vg.Points(2)
		sc.Shape = draw.CircleGlyph{}
		p.Add(l, sc)
		p.Legend.Add(s, l, sc)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}
