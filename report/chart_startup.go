package report

import (
	"fmt"
	"image/color"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Start-up chart colours: measured phases (servebench's own clock) and
// durations read from the server log.
var (
	phaseColor = color.RGBA{0x3b, 0x5b, 0x92, 0xff} // slate blue
	logColor   = color.RGBA{0xb0, 0xb8, 0xc8, 0xff} // light slate
)

// phaseBar is one row of the start-up chart: a bar from From to To seconds
// after spawn.
type phaseBar struct {
	name     string
	from, to float64
	fromLog  bool // a duration the server logged, placed by its end
	label    string
}

// startupBars turns a Startup into rows, top to bottom. Measured milestones
// each get a bar from the previous known milestone; log durations get their
// own lighter bars.
func startupBars(st *result.Startup) []phaseBar {
	var bars []phaseBar
	prev, prevName := 0.0, "spawn"
	milestone := func(name string, at *float64) {
		if at == nil {
			return
		}
		bars = append(bars, phaseBar{name: name, from: prev, to: *at,
			label: fmt.Sprintf("at %s (+%s after %s)", secsText(*at), secsText(*at-prev), prevName)})
		prev, prevName = *at, name
	}
	if st.WeightsLoadS != nil && st.WeightsLoadedAtS != nil {
		bars = append(bars, phaseBar{name: "loading weights (log)", from: *st.WeightsLoadedAtS - *st.WeightsLoadS,
			to: *st.WeightsLoadedAtS, fromLog: true, label: fmt.Sprintf("took %s", secsText(*st.WeightsLoadS))})
	}
	milestone("weights loaded", st.WeightsLoadedAtS)
	if st.InitEngineS != nil && st.WeightsLoadedAtS != nil {
		bars = append(bars, phaseBar{name: "init engine (log)", from: *st.WeightsLoadedAtS,
			to: *st.WeightsLoadedAtS + *st.InitEngineS, fromLog: true,
			label: fmt.Sprintf("took %s: profiling, KV cache, warm-up", secsText(*st.InitEngineS))})
	}
	milestone("port open", st.PortOpenS)
	milestone("/health OK", st.HealthOKS)
	milestone("model listed", st.ModelListedS)
	milestone("first token", st.FirstTokenS)
	return bars
}

// StartupChart renders startup.png from res.Server.Startup: the server's
// start-up phases as a horizontal timeline from process spawn, one row per
// phase, with the log-derived facts (KV cache, concurrency) underneath.
func StartupChart(res *result.Results) ([]byte, error) {
	st := res.Server.Startup
	if st == nil {
		return nil, fmt.Errorf("startup chart: start-up was not measured")
	}
	bars := startupBars(st)
	if len(bars) == 0 {
		return nil, fmt.Errorf("startup chart: no start-up phase was measured")
	}
	p := newPlot("", "seconds since the server process was spawned", "")
	names := make([]string, len(bars))
	xmax := 0.0
	for i, b := range bars {
		names[len(bars)-1-i] = b.name
		xmax = max(xmax, b.to)
	}
	p.NominalY(names...)
	p.Y.Tick.Label.Font.Size = labelSize
	p.Y.Min, p.Y.Max = -0.6, float64(len(bars))-0.4
	p.X.Min, p.X.Max = 0, xmax*1.3 // room for the labels right of the last bars
	p.X.Tick.Marker = linearTicks{}
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil // rows are phases; only time needs guides
	p.Add(grid)
	p.Add(&gantt{bars: bars})
	leg := newLegend()
	leg.Add("measured by servebench", colorBox{phaseColor})
	leg.Add("duration from the server log", colorBox{logColor})
	f := figure{title: "Server start-up: from process spawned to first token", panels: []*plot.Plot{p},
		legend: leg, footnote: joinNotes(startupFacts(st), clockNote(res))}
	return f.render()
}

// startupFacts is the one-line summary of the log-derived capacity facts.
func startupFacts(st *result.Startup) string {
	var fs []string
	if st.ModelGiB != nil && *st.ModelGiB >= 0.01 {
		fs = append(fs, fmt.Sprintf("weights %.2f GiB", *st.ModelGiB))
	} else if st.ModelGiB != nil && *st.ModelGiB > 0 { // a tiny model: "0.00 GiB" would say nothing
		fs = append(fs, fmt.Sprintf("weights %.3g MiB", *st.ModelGiB*1024))
	}
	if st.KVCacheTokens != nil {
		fs = append(fs, "KV cache "+result.FormatCount(*st.KVCacheTokens)+" tokens")
	}
	if st.MaxConcurrency != nil {
		c := fmt.Sprintf("max concurrency %.2fx", *st.MaxConcurrency)
		if st.MaxConcurrencyTokens != nil {
			c += " at " + result.FormatCount(*st.MaxConcurrencyTokens) + " tokens per request"
		}
		fs = append(fs, c)
	}
	if st.PollIntervalS != nil {
		fs = append(fs, fmt.Sprintf("phases polled every %s", secsText(*st.PollIntervalS)))
	}
	return strings.Join(fs, "; ")
}

// gantt draws startup bars; bar i is on row len-1-i (first bar on top).
type gantt struct{ bars []phaseBar }

func (g *gantt) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	h := (trY(1) - trY(0)) * 0.45
	lab := textStyle(tickSize, color.Black)
	lab.YAlign = draw.YCenter
	for i, b := range g.bars {
		y := trY(float64(len(g.bars) - 1 - i))
		col := phaseColor
		if b.fromLog {
			col = logColor
		}
		x0, x1 := trX(b.from), trX(b.to)
		if x1-x0 < vg.Points(2) {
			x1 = x0 + vg.Points(2) // a phase too short to see still gets a sliver
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y - h/2}, {X: x1, Y: y - h/2}, {X: x1, Y: y + h/2}, {X: x0, Y: y + h/2}})
		c.FillText(lab, vg.Point{X: x1 + vg.Points(5), Y: y}, b.label)
	}
}
