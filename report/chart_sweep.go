package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"github.com/servebench/servebench/bench/result"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// sweepSeries is one line of the sweep chart's latency panel.
type sweepSeries struct {
	name   string
	key    string // Palette key
	dashed bool   // p99 lines are dashed, p50 and means solid
	value  func(r *result.Run) (float64, bool)
}

var sweepLatency = []sweepSeries{
	{"first visible output (client, p50)", KeyFirstVisible, false, func(r *result.Run) (float64, bool) {
		s := r.Client.FirstVisibleS
		return summaryField(s != nil, func() float64 { return s.Median })
	}},
	{"first visible output (client, p99)", KeyFirstVisible, true, func(r *result.Run) (float64, bool) {
		s := r.Client.FirstVisibleS
		return summaryField(s != nil, func() float64 { return s.P99 })
	}},
	{"E2E (client, p50)", KeyE2EClient, false, func(r *result.Run) (float64, bool) {
		s := r.Client.E2ES
		return summaryField(s != nil, func() float64 { return s.Median })
	}},
	{"E2E (client, p99)", KeyE2EClient, true, func(r *result.Run) (float64, bool) {
		s := r.Client.E2ES
		return summaryField(s != nil, func() float64 { return s.P99 })
	}},
	{"engine TTFT (mean)", KeyEngineTTFT, false, func(r *result.Run) (float64, bool) { return histMean(r.Engine.TTFTS) }},
	{"queue wait (engine, mean)", KeyQueue, false, func(r *result.Run) (float64, bool) { return histMean(r.Engine.QueueS) }},
}

func summaryField(ok bool, get func() float64) (float64, bool) {
	if !ok {
		return 0, false
	}
	return get(), true
}

// SweepChart renders sweep.png for a sweep (runs "c=N" or "rate=R"): client
// first visible output and E2E (p50 solid, p99 dashed), engine TTFT and
// queue wait (means) against load on a log-log panel, and output tokens/s
// against load below it, so the knee is visible.
func SweepChart(res *result.Results) ([]byte, error) {
	loads, ok := sweepLoads(res)
	if !ok {
		return nil, fmt.Errorf("sweep chart: runs are not a sweep (expected names c=N or rate=R)")
	}
	xLabel := "concurrency (requests in flight)"
	if sweepKind(res) == "rate" {
		xLabel = "request rate (requests/s)"
	}
	order := byLoad(loads)
	lat := newPlot("Latency", "", "seconds (log scale)")
	tput := newPlot("Throughput", xLabel+", log scale", "output tokens/s")
	panels := []*plot.Plot{lat, tput}
	var att *plot.Plot
	if runsSLO(res) != "" {
		tput.X.Label.Text = ""
		att = newPlot("SLO attainment ("+runsSLO(res)+")", xLabel+", log scale", "% of requests")
		panels = append(panels, att)
	}
	loadAxes(panels, loads)
	leg := newLegend()
	zeroQueue, err := sweepLatencyPanel(lat, leg, res, loads, order)
	if err != nil {
		return nil, err
	}
	var txys plotter.XYs
	for _, i := range order {
		txys = append(txys, plotter.XY{X: loads[i], Y: res.Runs[i].Throughput.OutputTokensPerS})
	}
	if err := addLinePoints(tput, leg, "output tokens/s", txys, Palette[KeyTokensPerS], false); err != nil {
		return nil, err
	}
	tput.Y.Min = 0
	tput.Y.Tick.Marker = linearTicks{}
	if att != nil {
		if err := attainmentPanel(att, leg, res, loads, order); err != nil {
			return nil, err
		}
	}
	f := figure{title: "Load sweep: where latency turns up and throughput flattens (the knee)",
		panels: panels, legend: leg}
	if zeroQueue {
		f.footnote = "Queue wait of 0 is not drawn on the log axis."
	}
	f.footnote = joinNotes(f.footnote, clockNote(res))
	return f.render()
}

// loadAxes gives each panel the same log-scale load axis, ticked at the
// loads run, and a grid.
func loadAxes(panels []*plot.Plot, loads []float64) {
	var ticks []plot.Tick
	for _, l := range loads {
		ticks = append(ticks, plot.Tick{Value: l, Label: trimFloat(l)})
	}
	lo, hi := math.Inf(1), 0.0
	for _, l := range loads {
		lo, hi = min(lo, l), max(hi, l)
	}
	for _, p := range panels {
		p.Title.TextStyle.Font.Size = labelSize
		p.X.Scale = logScale{}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = lo/1.15, hi*1.15
		grid := plotter.NewGrid()
		grid.Vertical.Color = color.Gray{0xdd}
		grid.Horizontal.Color = color.Gray{0xee}
		p.Add(grid)
	}
}

// sweepLatencyPanel draws each sweepLatency series against load on a log
// axis; zeroQueue says a queue wait of 0 was left out (a log axis cannot
// show it).
func sweepLatencyPanel(lat *plot.Plot, leg *plot.Legend, res *result.Results, loads []float64, order []int) (zeroQueue bool, err error) {
	var vals []float64
	for _, s := range sweepLatency {
		var xys plotter.XYs
		for _, i := range order {
			v, ok := s.value(&res.Runs[i])
			if ok && v > 0 { // a log axis cannot show zero
				xys = append(xys, plotter.XY{X: loads[i], Y: v})
				vals = append(vals, v)
			} else if ok && s.key == KeyQueue {
				zeroQueue = true
			}
		}
		if len(xys) == 0 {
			continue
		}
		if err := addLinePoints(lat, leg, s.name, xys, Palette[s.key], s.dashed); err != nil {
			return false, err
		}
	}
	if len(vals) == 0 {
		return false, fmt.Errorf("sweep chart: no latency figures")
	}
	lmin, lmax := math.Inf(1), 0.0
	for _, v := range vals {
		lmin, lmax = min(lmin, v), max(lmax, v)
	}
	setLogAxis(&lat.Y, lmin, lmax)
	return zeroQueue, nil
}

// addLinePoints adds a line with point markers to p and its legend entry.
func addLinePoints(p *plot.Plot, leg *plot.Legend, name string, xys plotter.XYs, col color.RGBA, dashed bool) error {
	l, sc, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("sweep chart: %s: %w", name, err)
	}
	l.LineStyle = draw.LineStyle{Color: col, Width: vg.Points(2.5)}
	sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(8), vg.Points(5)}
		sc.GlyphStyle.Shape = draw.RingGlyph{}
	}
	p.Add(l, sc)
	leg.Add(name, l, sc)
	return nil
}

// byLoad is the run indices in increasing load, so lines run left to right
// (a --find-max-rate search visits rates out of order).
func byLoad(loads []float64) []int {
	order := make([]int, len(loads))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return loads[order[a]] < loads[order[b]] })
	return order
}

// attainmentPanel draws each run's SLO attainment against load, and the
// --find-max-rate target as a dashed line.
func attainmentPanel(p *plot.Plot, leg *plot.Legend, res *result.Results, loads []float64, order []int) error {
	var xys plotter.XYs
	for _, i := range order {
		if g := res.Runs[i].Goodput; g != nil && g.Requests > 0 {
			xys = append(xys, plotter.XY{X: loads[i], Y: g.Attainment})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	if err := addLinePoints(p, leg, "SLO attainment (client, % of requests)", xys, Palette[KeyAttainment], false); err != nil {
		return err
	}
	if mr := res.MaxRate; mr != nil {
		target := plotter.XYs{{X: p.X.Min, Y: mr.Target}, {X: p.X.Max, Y: mr.Target}}
		l, err := plotter.NewLine(target)
		if err != nil {
			return fmt.Errorf("sweep chart: target: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: color.Gray{0x60}, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(4)}}
		p.Add(l)
		leg.Add(fmt.Sprintf("--find-max-rate target %g%%", mr.Target), l)
	}
	p.Y.Min, p.Y.Max = 0, 105
	p.Y.Tick.Marker = linearTicks{}
	return nil
}
