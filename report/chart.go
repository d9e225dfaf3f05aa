package report

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"strings"

	"github.com/servebench/servebench/report/textwrap"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Chart size: readable in a design doc or a PR comment.
const (
	ChartWidth  = 1200 // pixels
	ChartHeight = 800  // pixels
	chartDPI    = 96
)

// Palette is the one place chart colours are defined: the same quantity has
// the same colour in every chart (keys as in the table's columns, plus the
// few quantities only charts show).
var Palette = map[string]color.RGBA{
	KeyFirstVisible: {0x1f, 0x77, 0xb4, 0xff}, // blue
	KeyE2EClient:    {0xff, 0x7f, 0x0e, 0xff}, // orange
	KeyEngineTTFT:   {0x2c, 0xa0, 0x2c, 0xff}, // green
	KeyE2EEngine:    {0x94, 0x67, 0xbd, 0xff}, // purple
	KeyQueue:        {0xd6, 0x27, 0x28, 0xff}, // red
	KeyTokensPerS:   {0x8c, 0x56, 0x4b, 0xff}, // brown
	KeyContent:      {0x17, 0x8c, 0x9c, 0xff}, // teal: content arrivals and visible tokens
	KeySent:         {0x30, 0x30, 0x30, 0xff}, // near black: request sent
	KeyAttainment:   {0xe3, 0x77, 0xc2, 0xff}, // pink: SLO attainment
	KeyGoodput:      {0xbc, 0xbd, 0x22, 0xff}, // olive: goodput
	KeyFirstToken:   {0x7f, 0x7f, 0x7f, 0xff}, // grey: first token (client), by turn
	KeyPromptTokens: {0x17, 0xbe, 0xcf, 0xff}, // cyan: prompt tokens, by turn
	KeyCachedTokens: {0x98, 0xdf, 0x8a, 0xff}, // light green: cached prompt tokens (what the prefix cache saved)
	KeyPrefilled:    {0x52, 0x54, 0xa3, 0xff}, // indigo: prompt tokens prefilled (not cached)
	KeyThinking:     {0xf2, 0xa9, 0x00, 0xff}, // amber: a reasoning model's thinking (time and tokens)
	KeyFirstTokenS:  {0xc4, 0x9c, 0x94, 0xff}, // rose brown: first token of any kind (table column)
	KeyUsable:       {0x00, 0x5f, 0x5f, 0xff}, // dark teal: usable output of a structured answer
}

// Keys of chart-only quantities in Palette.
const (
	KeyTokensPerS = "output_tokens_per_s"
	KeyContent    = "content"
	KeySent       = "sent"
)

// runDashes tell runs apart where colour already means a quantity: the
// first run solid, the second dashed, and so on.
var runDashes = [][]vg.Length{nil, {vg.Points(9), vg.Points(5)}, {vg.Points(2), vg.Points(3)},
	{vg.Points(9), vg.Points(3), vg.Points(2), vg.Points(3)}}

func runDash(i int) []vg.Length { return runDashes[i%len(runDashes)] }

// tint mixes c with white: f=0 is c, f=1 is white.
func tint(c color.RGBA, f float64) color.RGBA {
	return color.RGBA{lerp(c.R, 255, f), lerp(c.G, 255, f), lerp(c.B, 255, f), 0xff}
}

// lerp is the colour channel t of the way from x to y, rounded.
func lerp(x, y uint8, t float64) uint8 {
	return uint8(math.Round(float64(x) + (float64(y)-float64(x))*t))
}

// runShade shades a quantity colour by run for charts with many runs
// (sweeps): light for the first run, full for the last.
func runShade(c color.RGBA, i, n int) color.RGBA {
	if n <= 2 {
		return c
	}
	return tint(c, 0.6*float64(n-1-i)/float64(n-1))
}

// Font sizes for 1200x800 at 96 DPI.
var (
	titleSize = vg.Points(17)
	labelSize = vg.Points(13)
	tickSize  = vg.Points(11)
	noteSize  = vg.Points(10.5)
)

// newPlot returns a plot with the house title and axis styles.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = titleSize
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = labelSize
		ax.Tick.Label.Font.Size = tickSize
	}
	p.Legend.TextStyle.Font.Size = tickSize
	p.Legend.ThumbnailWidth = vg.Points(28)
	return p
}

// textStyle is a plain text style for labels drawn inside a chart.
func textStyle(size vg.Length, c color.Color) draw.TextStyle {
	return draw.TextStyle{Color: c, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
}

// renderPNG draws on a fresh 1200x800 white canvas and encodes it as PNG.
func renderPNG(drawFn func(dc draw.Canvas)) ([]byte, error) {
	w := vg.Length(ChartWidth) * vg.Inch / chartDPI
	h := vg.Length(ChartHeight) * vg.Inch / chartDPI
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(chartDPI))
	drawFn(draw.New(c))
	var buf bytes.Buffer
	// Fastest deflate: a third of the encoding time for files a little
	// larger; charts are mostly flat colour and stay small anyway.
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, c.Image()); err != nil {
		return nil, fmt.Errorf("encoding PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten that
// falls in range, in seconds without trailing zeros, so short ranges (one or
// two decades) still get several labels; past maxDecades125 decades only
// the powers of ten are labelled, since the 2 and 5 labels of a narrow
// decade ("0.00005", "0.0001") run into each other.
type logTicks struct{}

// maxDecades125 is the widest range (in decades) labelled at 1, 2 and 5.
const maxDecades125 = 3

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	only1 := math.Log10(hi/lo) > maxDecades125+0.01
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1; m < 10; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo*0.999 || v > hi*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!only1 && (m == 2 || m == 5)) {
				t.Label = trimFloat(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// trimFloat prints v without exponent or trailing zeros.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.6f", v)
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// setLogAxis makes ax logarithmic over [lo, hi], padded to whole 1-2-5 steps.
func setLogAxis(ax *plot.Axis, lo, hi float64) {
	ax.Scale = logScale{}
	ax.Tick.Marker = logTicks{}
	ax.Min, ax.Max = floor125(lo), ceil125(hi)
}

// floor125 and ceil125 round to the 1-2-5 sequence.
func floor125(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= v*1.0000001 {
			return m * e
		}
	}
	return e
}

func ceil125(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v*0.9999999 {
			return m * e
		}
	}
	return 10 * e
}

// spansDecades reports whether positive values vs span enough orders of
// magnitude that a linear axis would flatten the small ones.
func spansDecades(vs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return hi > 0 && hi/lo >= 20
}

// figure lays out a chart: a title across the whole image, panels in a grid
// of cols columns (one by default; axes aligned), an optional legend in a strip on the right
// so it can never hide data, and an optional footnote under everything.
type figure struct {
	title    string
	panels   []*plot.Plot
	cols     int
	legend   *plot.Legend
	footnote string
}

// newLegend returns a legend in the house style for figure.legend.
func newLegend() *plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = labelSize
	l.ThumbnailWidth = vg.Points(30)
	l.Padding = vg.Points(5)
	l.Top, l.Left = true, true
	return &l
}

func (f figure) render() ([]byte, error) {
	return renderPNG(func(dc draw.Canvas) {
		pad := vg.Points(8)
		titleSty := textStyle(titleSize, color.Black)
		titleSty.XAlign, titleSty.YAlign = draw.XCenter, draw.YTop
		dc.FillText(titleSty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - pad}, f.title)
		top := titleSty.Height(f.title) + 2*pad
		bottom := pad
		if f.footnote != "" {
			noteSty := textStyle(noteSize, color.Gray{0x44})
			noteSty.XAlign, noteSty.YAlign = draw.XCenter, draw.YBottom
			lines := wrapWidth(noteSty, f.footnote, dc.Max.X-dc.Min.X-4*pad)
			for i := len(lines) - 1; i >= 0; i-- { // bottom line first
				dc.FillText(noteSty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Min.Y + bottom}, lines[i])
				bottom += noteSty.Height(lines[i]) + vg.Points(2)
			}
			bottom += pad
		}
		right := pad
		if f.legend != nil {
			w := f.legend.Rectangle(dc).Size().X
			strip := draw.Crop(dc, dc.Max.X-dc.Min.X-w-2*pad, -pad, bottom, -top-pad)
			f.legend.Draw(strip)
			right += w + 2*pad
		}
		area := draw.Crop(dc, pad, -right, bottom, -top)
		cols := max(f.cols, 1)
		rows := (len(f.panels) + cols - 1) / cols
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadY: vg.Points(18), PadX: vg.Points(24)}
		grid := make([][]*plot.Plot, rows)
		for i := range grid {
			grid[i] = make([]*plot.Plot, cols)
			for j := range cols {
				if k := i*cols + j; k < len(f.panels) {
					grid[i][j] = f.panels[k]
				}
			}
		}
		for i, row := range plot.Align(grid, tiles, area) {
			for j, cs := range row {
				if grid[i][j] != nil {
					grid[i][j].Draw(cs)
				}
			}
		}
	})
}

// linearTicks labels a linear axis at 1-2-5 steps, about eight labels.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: trimFloat(lo)}}
	}
	step := ceil125((hi - lo) / 8)
	minor := step / 5
	if m := step / math.Pow(10, math.Floor(math.Log10(step))); m == 2 {
		minor = step / 4
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / minor); i*minor <= hi*(1+1e-9); i++ {
		v := i * minor
		t := plot.Tick{Value: v}
		if r := math.Abs(v/step - math.Round(v/step)); r < 1e-6 {
			t.Label = trimFloat(v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// logScale is plot.LogScale except at the arithmetic middle of the range,
// which it maps to the middle of the axis. gonum reserves room for the axis
// label as if the label sat at that value; on a log axis that is near the
// far end, and the label's box then squeezes the whole plot. (A sample
// exactly at that middle would be drawn mid-axis: with 1-2-5 axis ends, no
// tick falls there, and timings essentially never do.)
type logScale struct{}

func (logScale) Normalize(min, max, x float64) float64 {
	if x == 0.5*(min+max) {
		return 0.5
	}
	return plot.LogScale{}.Normalize(min, max, x)
}

// joinNotes joins non-empty footnote sentences.
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, " ")
}

// wrapWidth breaks txt at spaces into lines no wider than w in sty.
func wrapWidth(sty draw.TextStyle, txt string, w vg.Length) []string {
	return textwrap.Lines(txt, func(line string) bool { return sty.Width(line) <= w })
}
