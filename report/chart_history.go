package report

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servebench/servebench/bench/history"
)

// maxHistoryPanels bounds history.png: the longest series first.
const maxHistoryPanels = 4

// HistoryChart renders history.png: per series (at most four, longest
// first) its values run after run, the segments' means between change
// points, and each change point as a dashed vertical line.
func HistoryChart(title string, ss []history.Series) ([]byte, error) {
	if len(ss) == 0 {
		return nil, fmt.Errorf("history chart: no series")
	}
	leg := newLegend()
	var panels []*plot.Plot
	for i, s := range ss[:min(len(ss), maxHistoryPanels)] {
		p := newPlot(fmt.Sprintf("%s, run %s (workload %s)", s.Key, s.Run, s.WorkloadFP), "run (oldest first)", s.Key)
		var xys plotter.XYs
		for k, v := range s.Values {
			xys = append(xys, plotter.XY{X: float64(k + 1), Y: v})
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("history chart: %w", err)
		}
		col := Palette[KeyE2EClient]
		l.LineStyle = draw.LineStyle{Color: col, Width: vg.Points(1.5)}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		p.Add(l, sc)
		if err := segmentLines(p, leg, s, i == 0); err != nil {
			return nil, err
		}
		p.Y.Tick.Marker = linearTicks{}
		if i == 0 {
			leg.Add("each run's "+s.Key, l, sc)
		}
		panels = append(panels, p)
	}
	f := figure{title: title, panels: panels, legend: leg,
		footnote: "Change points by E-divisive means with a permutation test (Matteson & James 2014), as Apache Otava finds them."}
	return f.render()
}

// segmentLines draws each segment's mean and the change points between.
func segmentLines(p *plot.Plot, leg *plot.Legend, s history.Series, legend bool) error {
	edges := []int{0}
	for _, c := range s.Changes {
		edges = append(edges, c.Index)
	}
	edges = append(edges, len(s.Values))
	grey := Palette[KeySent]
	red := Palette[KeyQueue]
	lo, hi := s.Values[0], s.Values[0]
	for _, v := range s.Values {
		lo, hi = min(lo, v), max(hi, v)
	}
	for i := 0; i+1 < len(edges); i++ {
		var sum float64
		for _, v := range s.Values[edges[i]:edges[i+1]] {
			sum += v
		}
		m := sum / float64(edges[i+1]-edges[i])
		l, err := plotter.NewLine(plotter.XYs{{X: float64(edges[i] + 1), Y: m}, {X: float64(edges[i+1]), Y: m}})
		if err != nil {
			return err
		}
		l.LineStyle = draw.LineStyle{Color: grey, Width: vg.Points(2)}
		p.Add(l)
		if legend && i == 0 {
			leg.Add("segment mean", l)
		}
		if i == 0 {
			continue
		}
		x := float64(edges[i]) + 0.5
		cl, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
		if err != nil {
			return err
		}
		cl.LineStyle = draw.LineStyle{Color: red, Width: vg.Points(2), Dashes: []vg.Length{vg.Points(8), vg.Points(5)}}
		p.Add(cl)
		if legend && i == 1 {
			leg.Add("change point", cl)
		}
	}
	return nil
}
