package report

import (
	"fmt"
	"image/color"
	"math"

	"github.com/servebench/servebench/bench/result"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TableChart renders table.png: the table's five quantities as bars grouped
// by run, one colour per quantity, each value printed on its bar, the
// statistic named in the legend, a log axis when values span decades.
func TableChart(res *result.Results) ([]byte, error) {
	t := NewTableModel(res).seconds() // goodput is drawn by the sweep chart, not on a seconds axis
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("table chart: no runs")
	}
	return barChart(res, t, "Latency by "+groupWord(res)+": client medians beside engine means")
}

// barChart draws t's rows as groups of bars, one colour per column.
func barChart(res *result.Results, t *TableModel, title string) ([]byte, error) {
	var vals []float64
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			if c.OK {
				vals = append(vals, c.Value)
			}
		}
	}
	logY := spansDecades(vals)
	yLabel := "seconds"
	if logY {
		yLabel = "seconds (log scale)"
	}
	p := newPlot("", "", yLabel)
	gb := &groupedBars{t: t, logY: logY}
	hi := 0.0
	lo := math.Inf(1)
	for _, v := range vals {
		hi = max(hi, v)
		if v > 0 {
			lo = min(lo, v)
		}
	}
	switch {
	case hi <= 0:
		p.Y.Min, p.Y.Max = 0, 1
	case logY:
		setLogAxis(&p.Y, lo/1.5, hi*1.6) // head room for the value labels
	default:
		p.Y.Min, p.Y.Max = 0, hi*1.15
	}
	gb.base = p.Y.Min
	p.Add(gb)
	labels := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		labels[i] = r.Label
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Font.Size = labelSize
	p.X.Min, p.X.Max = -0.5, float64(len(t.Rows))-0.5
	leg := newLegend()
	for _, col := range t.Columns {
		leg.Add(col.Header, colorBox{Palette[col.Key]})
	}
	f := figure{title: title,
		panels: []*plot.Plot{p}, legend: leg}
	if logY {
		// Log-scale bars start at the axis floor, not at zero, so their
		// length is not proportional to the value; say so.
		f.footnote = "Log axis: read the printed values, not bar lengths."
	}
	if len(t.Notes) > 0 {
		f.footnote = joinNotes(f.footnote, "n/a: not available (see report.md).")
	}
	f.footnote = joinNotes(f.footnote, clockNote(res))
	return f.render()
}

// groupWord is "mode" for the standard streaming/non-streaming pair, "run"
// otherwise.
func groupWord(res *result.Results) string {
	for _, r := range res.Runs {
		if !result.RunName(r.Name).Standard() {
			return "run"
		}
	}
	return "mode"
}

// groupedBars draws a TableModel: one group per row, one bar per column.
type groupedBars struct {
	t    *TableModel
	logY bool
	base float64 // where bars start (the axis minimum)
}

// DataRange is left to the caller's axis settings.
func (g *groupedBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.5, float64(len(g.t.Rows)) - 0.5, g.base, g.base
}

func (g *groupedBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ncol := len(g.t.Columns)
	groupW := trX(1) - trX(0)
	barW := groupW * 0.8 / vg.Length(ncol)
	sty := textStyle(tickSize, color.Black)
	sty.XAlign = draw.XCenter
	for gi, row := range g.t.Rows {
		left := trX(float64(gi)) - barW*vg.Length(ncol)/2
		for ci, cell := range row.Cells {
			col := g.t.Columns[ci]
			x0 := left + barW*vg.Length(ci)
			x1 := x0 + barW*0.92
			y0 := trY(g.base)
			label := cell.format(col)
			top := y0
			if cell.OK && cell.Value > 0 && cell.Value > g.base {
				top = trY(cell.Value)
				c.FillPolygon(Palette[col.Key], []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: top}, {X: x0, Y: top}})
			}
			if !cell.OK {
				label = "n/a"
			}
			lsty := sty
			mid := (x0 + x1) / 2
			if lsty.Width(label) > barW*1.05 {
				// Too narrow for horizontal text: write it upwards.
				lsty.Rotation = math.Pi / 2
				lsty.XAlign = draw.XLeft
				lsty.YAlign = draw.YCenter
			}
			c.FillText(lsty, vg.Point{X: mid, Y: top + vg.Points(3)}, label)
		}
	}
}

// colorBox is a legend thumbnail: a filled square.
type colorBox struct{ c color.Color }

func (b colorBox) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.c, pts)
}
