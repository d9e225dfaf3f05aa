package report

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servebench/servebench/bench/result"
)

// FilePareto is tune's frontier chart.
const FilePareto = "pareto.png"

// tuneColumns are the figures tune's tables show, with their headers.
var tuneColumns = []struct{ key, head string }{
	{result.FigOutputTokSPerGPU, "Output tok/s per GPU"},
	{result.FigTokSPerUser, "tok/s per user"},
	{result.FigTTFTP99, "TTFT p99 (s)"},
	{result.FigTPOTMedian, "TPOT median (s)"},
	{result.FigE2EP99, "E2E p99 (s)"},
	{result.FigAttainment, "SLO attainment (%)"},
	{result.FigUSDPerMTok, "$ per M output tokens"},
}

// TuneText writes tune's table (one row per treatment and level, each
// figure a mean and its 95% interval across repeats), the max-rate
// answers and the recommendation.
func TuneText(w io.Writer, t *result.Tune) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n", tuneCaption(t))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	heads := []string{"Treatment", "Level", "Runs"}
	cols := presentColumns(t)
	for _, c := range cols {
		heads = append(heads, c.head)
	}
	heads = append(heads, "SLO held")
	fmt.Fprintln(tw, strings.Join(heads, "\t"))
	for _, tr := range t.Treatments {
		for i := range tr.Levels {
			lv := &tr.Levels[i]
			row := []string{tr.Name, lv.Name, fmt.Sprint(tr.Repeats)}
			for _, c := range cols {
				row = append(row, intervalText(lv.Figure(c.key)))
			}
			row = append(row, heldText(lv))
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, tr := range t.Treatments {
		if tr.MaxRate != nil {
			fmt.Fprintf(&b, "%s: highest rate meeting the SLO %s req/s (%d runs, each re-checked with fresh seeds)\n", tr.Name, intervalText(tr.MaxRate), tr.MaxRate.N)
		}
		for _, n := range tr.Notes {
			fmt.Fprintf(&b, "%s: %s\n", tr.Name, n)
		}
	}
	if t.Answer != nil {
		fmt.Fprintf(&b, "\n%s\n", t.Answer.Text)
	}
	for _, wn := range t.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// tuneCaption says what the figures are and which clock they are in.
func tuneCaption(t *result.Tune) string {
	s := fmt.Sprintf("Each figure: mean [95%% interval] across %d runs per treatment, each on a fresh server.", t.Repeats)
	switch {
	case t.Clock == "modelled":
		s += fmt.Sprintf(" Clock: modelled, the emulated hardware's time (the bundled engine ran %gx faster).", t.Speedup)
	case t.Speedup > 1:
		s += fmt.Sprintf(" Clock: wall, this machine's (the bundled engine ran %gx faster).", t.Speedup)
	}
	if t.SLO != "" {
		s += " SLO " + t.SLO
		if t.Target > 0 {
			s += fmt.Sprintf(", attainment >= %g%%", t.Target)
		}
		s += "."
	}
	return s
}

// presentColumns are the columns some level has a figure for.
func presentColumns(t *result.Tune) []struct{ key, head string } {
	var out []struct{ key, head string }
	for _, c := range tuneColumns {
		if slices.ContainsFunc(t.Treatments, func(tr result.TuneTreatment) bool {
			return slices.ContainsFunc(tr.Levels, func(lv result.TuneLevel) bool { return lv.Figure(c.key) != nil })
		}) {
			out = append(out, c)
		}
	}
	return out
}

func intervalText(iv *result.Interval) string {
	if iv == nil {
		return "-"
	}
	if iv.N < 2 {
		return sig(iv.Mean)
	}
	return fmt.Sprintf("%s [%s, %s]", sig(iv.Mean), sig(iv.Lo), sig(iv.Hi))
}

func heldText(lv *result.TuneLevel) string {
	if lv.SLOHeld == nil {
		return "-"
	}
	n := 0
	if len(lv.Figures) > 0 {
		n = lv.Figures[0].N
	}
	return fmt.Sprintf("%d of %d", *lv.SLOHeld, n)
}

// sig writes v with 3 significant digits, without an exponent.
func sig(v float64) string {
	if max(v, -v) >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// WriteTune writes the tune's report.md, report.html (the same, one page,
// the chart inlined) and pareto.png into dir.
func WriteTune(dir string, t *result.Tune) error {
	var md bytes.Buffer
	fmt.Fprintf(&md, "# servebench tune\n\n")
	grid := make([]string, len(t.Grid))
	for i, f := range t.Grid {
		grid[i] = fmt.Sprintf("%s (%s) = %s", f.Name, f.Kind, strings.Join(f.Values, ", "))
	}
	fmt.Fprintf(&md, "Grid: %s; %d repeats each, in a shuffled interleaved order (seed %d). Command: `%s`\n\n",
		strings.Join(grid, "; "), t.Repeats, t.Seed, strings.Join(t.Manifest.CommandLine, " "))
	writeTuneSection(&md, t)
	images := map[string][]byte{}
	var errs []error
	png, err := ParetoChart(t)
	if err == nil {
		images[FilePareto] = png
		err = writeFile(filepath.Join(dir, FilePareto), png)
	}
	errs = append(errs, err)
	errs = append(errs, writeFile(filepath.Join(dir, result.ReportFile), md.Bytes()))
	errs = append(errs, writeHTML(dir, md.Bytes(), images))
	return errors.Join(errs...)
}

// writeTuneSection is report.md's tune section: the answer, the frontier,
// the table and the start-up per treatment.
func writeTuneSection(b *bytes.Buffer, t *result.Tune) {
	fmt.Fprintf(b, "## Which configuration\n\n")
	if t.Answer != nil {
		fmt.Fprintf(b, "**%s**\n\n", t.Answer.Text)
	}
	for _, c := range t.Comparisons {
		fmt.Fprintf(b, "- %s\n", c.Text)
	}
	fmt.Fprintf(b, "\n%s\n\n![frontier](%s)\n\n", tuneCaption(t), FilePareto)
	cols := presentColumns(t)
	fmt.Fprintf(b, "| Treatment | Level | Runs |")
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c.head)
	}
	fmt.Fprintf(b, " SLO held |\n|---|---|---|%s---|\n", strings.Repeat("---|", len(cols)))
	for _, tr := range t.Treatments {
		for i := range tr.Levels {
			lv := &tr.Levels[i]
			fmt.Fprintf(b, "| %s | %s | %d |", tr.Name, lv.Name, tr.Repeats)
			for _, c := range cols {
				fmt.Fprintf(b, " %s |", intervalText(lv.Figure(c.key)))
			}
			fmt.Fprintf(b, " %s |\n", heldText(lv))
		}
	}
	fmt.Fprintf(b, "\n### Start-up per treatment (seconds in the tune's clock)\n\n| Treatment | Max rate (req/s) |")
	keys := []string{"health_ok_s", "first_token_s", "weights_load_s", "kv_cache_tokens"}
	for _, k := range keys {
		fmt.Fprintf(b, " %s |", k)
	}
	fmt.Fprintf(b, "\n|---|---|%s\n", strings.Repeat("---|", len(keys)))
	for _, tr := range t.Treatments {
		fmt.Fprintf(b, "| %s | %s |", tr.Name, intervalText(tr.MaxRate))
		for _, k := range keys {
			var iv *result.Interval
			for i := range tr.Startup {
				if tr.Startup[i].Key == k {
					iv = &tr.Startup[i].Interval
				}
			}
			fmt.Fprintf(b, " %s |", intervalText(iv))
		}
		fmt.Fprintln(b)
	}
	for _, w := range t.Warnings {
		fmt.Fprintf(b, "\n- warning: %s", w)
	}
	fmt.Fprintln(b)
}

// paretoPoint is one treatment at one level.
type paretoPoint struct {
	name       string
	x, y, ttft float64
}

func paretoPoints(t *result.Tune) []paretoPoint {
	var pts []paretoPoint
	for _, tr := range t.Treatments {
		for i := range tr.Levels {
			lv := &tr.Levels[i]
			y, x := lv.Figure(result.FigOutputTokSPerGPU), lv.Figure(result.FigTokSPerUser)
			if y == nil || x == nil {
				continue
			}
			p := paretoPoint{name: tr.Name + " " + lv.Name, x: x.Mean, y: y.Mean}
			if ttft := lv.Figure(result.FigTTFTP99); ttft != nil {
				p.ttft = ttft.Mean
			}
			pts = append(pts, p)
		}
	}
	return pts
}

// Frontier returns the indices of the points no other point beats on both
// axes (x higher-is-better when xHigher, lower otherwise; y always
// higher-is-better), ordered by x.
func Frontier(xs, ys []float64, xHigher bool) []int {
	atLeast := func(a, b float64) bool { return a >= b == xHigher || a == b }
	var idx []int
	for i := range xs {
		dominated := false
		for j := range xs {
			if j != i && atLeast(xs[j], xs[i]) && ys[j] >= ys[i] && (xs[j] != xs[i] || ys[j] != ys[i]) {
				dominated = true
				break
			}
		}
		if !dominated {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	return idx
}

// ParetoChart draws output tokens/s per GPU against tokens/s per user and
// against TTFT p99, every point named by its settings, the frontier as a
// line.
func ParetoChart(t *result.Tune) ([]byte, error) {
	pts := paretoPoints(t)
	if len(pts) == 0 {
		return nil, errors.New("pareto: no level has both output tokens/s and TPOT")
	}
	clock := "wall"
	if t.Clock != "" {
		clock = t.Clock
	}
	left := newPlot("", "tokens/s per user (1 / median TPOT, "+clock+")", "output tokens/s per GPU")
	right := newPlot("", "TTFT p99 (s, "+clock+")", "output tokens/s per GPU")
	for k, p := range []*plot.Plot{left, right} {
		xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
		for i, pt := range pts {
			xs[i], ys[i] = pt.x, pt.y
			if k == 1 {
				xs[i] = pt.ttft
			}
		}
		if err := paretoPanel(p, pts, xs, ys, k == 0); err != nil {
			return nil, err
		}
	}
	return figure{title: "Throughput per GPU against per-user speed and TTFT: the frontier", panels: []*plot.Plot{left, right}, cols: 2,
		footnote: tuneCaption(t) + " The line joins the treatments no other beats on both axes."}.render()
}

func paretoPanel(p *plot.Plot, pts []paretoPoint, xs, ys []float64, xHigher bool) error {
	xy := make(plotter.XYs, len(pts))
	labels := make([]string, len(pts))
	for i := range pts {
		xy[i] = plotter.XY{X: xs[i], Y: ys[i]}
		labels[i] = pts[i].name
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	sc.GlyphStyle.Radius = vg.Points(5)
	sc.GlyphStyle.Color = color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	front := Frontier(xs, ys, xHigher)
	fxy := make(plotter.XYs, len(front))
	for i, j := range front {
		fxy[i] = xy[j]
	}
	line, err := plotter.NewLine(fxy)
	if err != nil {
		return err
	}
	line.Color = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	line.Width = vg.Points(2)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels})
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = tickSize
		lb.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(4)}
	}
	p.Add(line, sc, lb, plotter.NewGrid())
	// Room on the right for the last point's name.
	lo, hi := slices.Min(xs), slices.Max(xs)
	span := max(hi-lo, 0.1*max(hi, -hi, 1e-9))
	p.X.Min, p.X.Max = lo-0.05*span, hi+0.35*span
	return nil
}
