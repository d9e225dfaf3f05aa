package report

import (
	"fmt"
	"image/color"
	"slices"

	"github.com/servebench/servebench/bench/result"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// maxThinLines caps the individual requests drawn per run in tokens.png; a
// run with more is thinned evenly by index, deterministically.
const maxThinLines = 100

// runColors tell runs apart in tokens.png, where colour is not a quantity:
// teal (the colour of content arriving) for the first, then plum. More runs
// than these are a sweep and take loadRamp.
var runColors = []color.RGBA{Palette[KeyContent], {0x9b, 0x2d, 0x6f, 0xff}}

// loadRamp colours many runs (a sweep) from light load (yellow-green) to
// heavy load (dark blue), so order reads at a glance.
var loadRamp = []color.RGBA{{0xb5, 0xcf, 0x3b, 0xff}, {0x2a, 0xa5, 0x8c, 0xff}, {0x2c, 0x5f, 0x9e, 0xff}, {0x30, 0x1d, 0x5c, 0xff}}

func runColor(i, n int) color.RGBA {
	if n <= len(runColors) {
		return runColors[i]
	}
	f := float64(i) / float64(n-1) * float64(len(loadRamp)-1)
	k := min(int(f), len(loadRamp)-2)
	a, b, t := loadRamp[k], loadRamp[k+1], f-float64(k)
	return color.RGBA{lerp(a.R, b.R, t), lerp(a.G, b.G, t), lerp(a.B, b.B, t), 0xff}
}

// tokensChart renders tokens.png: cumulative visible tokens against time
// since the request was sent, per run: the median request as a thick line,
// every other request as a thin light one. Streaming climbs as a staircase
// from the first token; non-streaming stays at zero and jumps at the end.
// recs may be a Sample s (nil: all records): the median line is then s's
// exact median request, the thin ones the sample's.
func tokensChart(res *result.Results, recs []result.Record, s *Sample) ([]byte, error) {
	ylabel := "visible output tokens received"
	if Reasoned(res) {
		ylabel = "output tokens received (thinking, then answer)"
	}
	p := newPlot("", "time since the request was sent (s)", ylabel)
	p.X.Tick.Marker = linearTicks{}
	p.Y.Tick.Marker = linearTicks{}
	leg := newLegend()
	n := len(res.Runs)
	// With many runs (a sweep) only the median lines stay readable.
	few := n <= len(runColors)
	drawn, thought := 0, false
	var medians []plot.Plotter
	for i, run := range res.Runs {
		rs := measured(run.Name, recs)
		med, ok := medianRecord(rs)
		if r := s.run(run.Name); r != nil { // the sample's records have no events: draw the thin sample
			med, ok, rs = r.Median, r.HasMedian, measured(run.Name, r.Thin)
		}
		if !ok {
			continue
		}
		col := runColor(i, n)
		thin := draw.LineStyle{Color: tint(col, 0.65), Width: vg.Points(0.8)}
		step := max(1, (len(rs)+maxThinLines-1)/maxThinLines)
		for k := 0; few && k < len(rs); k += step {
			if rs[k].Index == med.Index {
				continue
			}
			if _, err := addTokenLine(p, rs[k], thin, true, p.Add); err != nil {
				return nil, fmt.Errorf("tokens chart: run %s: %w", run.Name, err)
			}
		}
		thick := draw.LineStyle{Color: col, Width: vg.Points(3)}
		t, err := addTokenLine(p, med, thick, false, func(ps ...plot.Plotter) {
			medians = append(medians, ps...) // on top of every thin line
		})
		if err != nil {
			return nil, fmt.Errorf("tokens chart: run %s: %w", run.Name, err)
		}
		thought = thought || t
		leg.Add(RunLabel(run.Name)+": median request", lineThumb{col, vg.Points(3), nil})
		if few {
			others := fmt.Sprintf("%s: the other %d", RunLabel(run.Name), len(rs)-1)
			if r := s.run(run.Name); r != nil {
				others = fmt.Sprintf("%s: a uniform sample of %d of %d", RunLabel(run.Name), len(rs), r.N)
			}
			leg.Add(others, lineThumb{thin.Color, vg.Points(1.5), nil})
		}
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("tokens chart: no successful requests")
	}
	if thought {
		leg.Add("thinking (reasoning tokens, before the answer)", lineThumb{Palette[KeyThinking], vg.Points(3), nil})
	}
	p.Add(medians...)
	p.X.Min, p.Y.Min = 0, 0
	p.Y.Max *= 1.05
	title := "Visible output over time"
	if thought {
		title = "Output over time, thinking (amber) before the answer"
	}
	f := figure{title: title, panels: []*plot.Plot{p}, legend: leg,
		footnote: joinNotes(s.note(res, true), medianNote(s, "Each median request (thick line)"), clockNote(res))}
	if hasMode(res, true) && hasMode(res, false) {
		f.title += ": streaming arrives as a staircase, non-streaming all at the end"
	}
	return f.render()
}

// stepXYs is a record's cumulative visible tokens as plot points.
func stepXYs(r result.Record) plotter.XYs {
	steps := visibleSteps(r)
	xys := make(plotter.XYs, len(steps))
	for i, s := range steps {
		xys[i] = plotter.XY{X: s[0], Y: s[1]}
	}
	return xys
}

// cdfChart renders cdf.png: the empirical distribution of client first
// visible output (left, blue) and E2E (right, orange) per run (line style
// per run), each panel on its own axis, so the spread behind each median
// is visible. recs may be a Sample s (nil: all records), which it names.
func cdfChart(res *result.Results, recs []result.Record, s *Sample) ([]byte, error) {
	fvPanel := cdfPanel{key: KeyFirstVisible, title: "First visible output (client)"}
	e2ePanel := cdfPanel{key: KeyE2EClient, title: "E2E (client)"}
	for i, run := range res.Runs {
		rs := measured(run.Name, recs)
		if len(rs) == 0 {
			continue
		}
		fv, e2e := make([]float64, len(rs)), make([]float64, len(rs))
		for k, r := range rs {
			fv[k], e2e[k] = r.FirstVisibleS, r.E2ES
		}
		fvPanel.add(i, RunLabel(run.Name), fv)
		e2ePanel.add(i, RunLabel(run.Name), e2e)
	}
	if len(fvPanel.vals) == 0 {
		return nil, fmt.Errorf("cdf chart: no successful requests")
	}
	n := len(res.Runs)
	leg := newLegend()
	var panels []*plot.Plot
	for _, cp := range []cdfPanel{fvPanel, e2ePanel} {
		p, err := cp.plot(n, leg)
		if err != nil {
			return nil, err
		}
		panels = append(panels, p)
	}
	f := figure{title: "Spread of client latency over the requests of each " + groupWord(res),
		panels: panels, cols: 2, legend: leg}
	if hasMode(res, false) {
		f.footnote = "Not streaming, first visible output is E2E by construction: its two curves are the same."
	}
	f.footnote = joinNotes(s.Note(res), f.footnote, clockNote(res))
	return f.render()
}

// cdfPanel is one quantity's CDFs, a curve per run.
type cdfPanel struct {
	key, title string
	runs       []int
	labels     []string
	vals       [][]float64
}

func (cp *cdfPanel) add(run int, label string, vals []float64) {
	cp.runs = append(cp.runs, run)
	cp.labels = append(cp.labels, label)
	cp.vals = append(cp.vals, vals)
}

func (cp *cdfPanel) plot(nruns int, leg *plot.Legend) (*plot.Plot, error) {
	p := newPlot(cp.title, "seconds since the request was sent", "fraction of requests at or below")
	p.Title.TextStyle.Font.Size = labelSize
	p.Title.TextStyle.Color = Palette[cp.key] // the panel title is the colour key
	var all []float64
	for _, v := range cp.vals {
		all = append(all, v...)
	}
	lo, hi := slices.Min(all), slices.Max(all)
	switch {
	case spansDecades(all) && lo > 0:
		setLogAxis(&p.X, lo, hi)
		p.X.Label.Text += " (log scale)"
	default:
		pad := max((hi-lo)*0.08, hi*0.002, 1e-6)
		p.X.Min, p.X.Max = max(lo-pad, 0), hi+pad
		p.X.Tick.Marker = linearTicks{}
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = linearTicks{}
	for i, vals := range cp.vals {
		l, err := plotter.NewLine(cdfXYs(vals))
		if err != nil {
			return nil, fmt.Errorf("cdf chart: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: runShade(Palette[cp.key], cp.runs[i], nruns),
			Width: vg.Points(2.5), Dashes: runDash(cp.runs[i])}
		p.Add(l)
		if cp.key == KeyFirstVisible { // one legend entry per run: the colour is the panel's quantity
			leg.Add(cp.labels[i], lineThumb{runShade(color.RGBA{0x33, 0x33, 0x33, 0xff}, cp.runs[i], nruns),
				vg.Points(2.5), runDash(cp.runs[i])})
		}
	}
	return p, nil
}

// cdfXYs is the empirical CDF of vals as a step line from 0 to 1.
func cdfXYs(vals []float64) plotter.XYs {
	s := slices.Clone(vals)
	slices.Sort(s)
	n := float64(len(s))
	var xys plotter.XYs
	for i, v := range s {
		xys = append(xys, plotter.XY{X: v, Y: float64(i) / n}, plotter.XY{X: v, Y: float64(i+1) / n})
	}
	return xys
}

// hasMode reports whether some run streams (stream true) or does not.
func hasMode(res *result.Results, stream bool) bool {
	for _, r := range res.Runs {
		if r.Stream == stream {
			return true
		}
	}
	return false
}
