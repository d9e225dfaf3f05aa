package report

import (
	"fmt"
	"image/color"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// FileTimeseries is the chart of figures over time (--interval windows).
const FileTimeseries = "timeseries.png"

// Colours of the engine-state series, which no other chart shows.
var (
	colorKV      = color.RGBA{0x7f, 0x7f, 0x7f, 0xff} // grey
	colorRunning = color.RGBA{0xbc, 0xbd, 0x22, 0xff} // olive
	colorWaiting = color.RGBA{0xe3, 0x77, 0xc2, 0xff} // pink
)

// tsSeries is one line of the timeseries chart: a figure of a window.
type tsSeries struct {
	panel  int // 0 client latency, 1 client rates, 2 engine latency, 3 engine state
	name   string
	col    color.RGBA
	dashed bool // p99 dashed
	value  func(w *result.Window) (float64, bool)
}

func clientStat(s func(c *result.ClientStats) *stats.Summary, p99 bool) func(w *result.Window) (float64, bool) {
	return func(w *result.Window) (float64, bool) {
		v := s(&w.Client)
		if v == nil {
			return 0, false
		}
		if p99 {
			return v.P99, true
		}
		return v.Median, true
	}
}

func engineHist(get func(e *result.EngineStats) *result.Hist) func(w *result.Window) (float64, bool) {
	return func(w *result.Window) (float64, bool) {
		if w.Engine == nil {
			return 0, false
		}
		return histMean(get(&w.Engine.EngineStats))
	}
}

func engineGauge(get func(e *result.WindowEngine) *float64, scale float64) func(w *result.Window) (float64, bool) {
	return func(w *result.Window) (float64, bool) {
		if w.Engine == nil || get(w.Engine) == nil {
			return 0, false
		}
		return scale * *get(w.Engine), true
	}
}

var tsLines = []tsSeries{
	{0, "first visible (client, p50)", Palette[KeyFirstVisible], false, clientStat(func(c *result.ClientStats) *stats.Summary { return c.FirstVisibleS }, false)},
	{0, "first visible (client, p99)", Palette[KeyFirstVisible], true, clientStat(func(c *result.ClientStats) *stats.Summary { return c.FirstVisibleS }, true)},
	{0, "E2E (client, p50)", Palette[KeyE2EClient], false, clientStat(func(c *result.ClientStats) *stats.Summary { return c.E2ES }, false)},
	{0, "E2E (client, p99)", Palette[KeyE2EClient], true, clientStat(func(c *result.ClientStats) *stats.Summary { return c.E2ES }, true)},
	{1, "requests/s (ok)", Palette[KeyTokensPerS], false, func(w *result.Window) (float64, bool) { return w.Throughput.RequestsPerS, true }},
	{1, "errors/s", Palette[KeyQueue], true, func(w *result.Window) (float64, bool) {
		if d := w.EndS - w.StartS; d > 0 {
			return float64(w.Requests-w.OK) / d, true
		}
		return 0, false
	}},
	{2, "engine TTFT (mean)", Palette[KeyEngineTTFT], false, engineHist(func(e *result.EngineStats) *result.Hist { return e.TTFTS })},
	{2, "E2E (engine, mean)", Palette[KeyE2EEngine], false, engineHist(func(e *result.EngineStats) *result.Hist { return e.E2ES })},
	{2, "queue wait (engine, mean)", Palette[KeyQueue], false, engineHist(func(e *result.EngineStats) *result.Hist { return e.QueueS })},
	{3, "KV cache usage (%)", colorKV, false, engineGauge(func(e *result.WindowEngine) *float64 { return e.KVUsage }, 100)},
	{3, "running", colorRunning, false, engineGauge(func(e *result.WindowEngine) *float64 { return e.Running }, 1)},
	{3, "waiting", colorWaiting, false, engineGauge(func(e *result.WindowEngine) *float64 { return e.Waiting }, 1)},
	{3, "preemptions", Palette[KeyQueue], true, engineGauge(func(e *result.WindowEngine) *float64 { return e.Preemptions }, 1)},
}

// hasWindows reports whether some run of res was split into windows.
func hasWindows(res *result.Results) bool {
	for _, r := range res.Runs {
		if len(r.Windows) > 0 {
			return true
		}
	}
	return false
}

// TimeseriesChart renders timeseries.png: each window's figures at its end
// time, the client's (latency p50 solid, p99 dashed; rates) and the
// engine's (/metrics delta means; gauges at the window's end) on separate
// panels, never on one axis: they come from two clocks. Runs are told
// apart by dash pattern.
func TimeseriesChart(res *result.Results) ([]byte, error) {
	if !hasWindows(res) {
		return nil, fmt.Errorf("timeseries chart: no run has --interval windows")
	}
	unit, div := "s", 1.0
	for _, r := range res.Runs {
		if r.DurationS > 1200 {
			unit, div = "min", 60
		}
	}
	x := "time since the run's start (" + unit + "), at each window's end"
	panels := []*plot.Plot{
		newPlot("Client latency", x, "seconds"),
		newPlot("Client rates", x, "per second"),
		newPlot("Engine latency (/metrics, mean per window)", x, "seconds"),
		newPlot("Engine state (at each window's end)", x, "count, or %"),
	}
	leg := newLegend()
	drawn := make([]bool, len(panels))
	for i, run := range res.Runs {
		for _, s := range tsLines {
			var xys plotter.XYs
			for k := range run.Windows {
				w := &run.Windows[k]
				if v, ok := s.value(w); ok {
					xys = append(xys, plotter.XY{X: w.EndS / div, Y: v})
				}
			}
			if len(xys) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, fmt.Errorf("timeseries chart: %s: %w", s.name, err)
			}
			l.LineStyle = draw.LineStyle{Color: s.col, Width: vg.Points(2), Dashes: runDash(i)}
			sc.GlyphStyle = draw.GlyphStyle{Color: s.col, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
			if s.dashed {
				sc.GlyphStyle.Shape = draw.RingGlyph{}
				l.LineStyle.Color = tint(s.col, 0.35)
			}
			panels[s.panel].Add(l, sc)
			name := s.name
			if len(res.Runs) > 1 {
				name = run.Name + ": " + name
			}
			leg.Add(name, l, sc)
			drawn[s.panel] = true
		}
	}
	var used []*plot.Plot
	for i, p := range panels {
		if drawn[i] {
			p.Title.TextStyle.Font.Size = labelSize
			p.Y.Min = 0
			p.Y.Tick.Marker = linearTicks{}
			p.X.Tick.Marker = linearTicks{}
			used = append(used, p)
		}
	}
	f := figure{title: "Figures over time, one point per --interval window", panels: used, cols: 2, legend: leg,
		footnote: joinNotes("Client figures (top) are over requests that completed in the window; engine figures (bottom) are /metrics deltas between the scrapes at its boundaries.", clockNote(res))}
	return f.render()
}
