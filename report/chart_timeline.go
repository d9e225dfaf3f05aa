package report

import (
	"fmt"
	"image/color"

	"github.com/servebench/servebench/bench/result"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// laneGrey is the colour of lane base lines and the "nothing visible" wait.
var laneGrey = color.RGBA{0x99, 0x99, 0x99, 0xff}

// timelineRun is what the timeline draws for one run.
type timelineRun struct {
	label           string
	rec             result.Record
	ttft, queue     float64
	engE2E          float64
	hasTTFT, hasQ   bool
	hasEngE2E, stre bool
}

// timelineChart renders timeline.png, the seed's ASCII diagram for real: per
// run an engine lane (queue wait, TTFT and E2E, the run's means) and a client
// lane (the median request: sent, nothing visible yet, each content arrival
// as a tick, first visible output, done) on one time axis. recs may be a
// Sample s (nil: all records): then each run's request is s's, nearest the
// run's median over every record.
func timelineChart(res *result.Results, recs []result.Record, s *Sample) ([]byte, error) {
	var runs []timelineRun
	xmax := 0.0
	for _, run := range res.Runs {
		rec, ok := medianRecord(measured(run.Name, recs))
		if rs := s.run(run.Name); rs != nil {
			rec, ok = rs.Median, rs.HasMedian
		}
		if !ok {
			continue
		}
		tr := timelineRun{label: RunLabel(run.Name), rec: rec, stre: run.Stream}
		tr.ttft, tr.hasTTFT = histMean(run.Engine.TTFTS)
		tr.queue, tr.hasQ = histMean(run.Engine.QueueS)
		tr.engE2E, tr.hasEngE2E = histMean(run.Engine.E2ES)
		xmax = max(xmax, rec.E2ES, tr.engE2E)
		runs = append(runs, tr)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("timeline chart: no successful requests")
	}
	p := newPlot("", "time since the request was sent (s)", "")
	var names []string
	for i := len(runs) - 1; i >= 0; i-- { // NominalY counts from the bottom
		names = append(names, runs[i].label+": client (median request)", runs[i].label+": engine (means)")
	}
	p.NominalY(names...)
	p.Y.Tick.Label.Font.Size = labelSize
	p.Y.Min, p.Y.Max = -0.6, float64(len(names))-0.4
	p.X.Min, p.X.Max = 0, xmax*1.04
	p.X.Tick.Marker = linearTicks{}
	p.Add(&timeline{runs: runs})

	leg := newLegend()
	leg.Add("request sent", markThumb{Palette[KeySent], draw.CircleGlyph{}})
	leg.Add("engine TTFT (run mean)", markThumb{Palette[KeyEngineTTFT], diamondGlyph{}})
	if anyQueue(runs) {
		leg.Add("engine queue wait (run mean)", lineThumb{Palette[KeyQueue], vg.Points(8), nil})
	}
	leg.Add("engine E2E (run mean)", markThumb{Palette[KeyE2EEngine], draw.BoxGlyph{}})
	leg.Add("nothing visible yet", lineThumb{laneGrey, vg.Points(2), []vg.Length{vg.Points(6), vg.Points(4)}})
	leg.Add("first visible output", markThumb{Palette[KeyFirstVisible], draw.PyramidGlyph{}})
	leg.Add("content arrives (tick)", tickThumb{Palette[KeyContent]})
	leg.Add("done (client E2E)", markThumb{Palette[KeyE2EClient], draw.BoxGlyph{}})
	f := figure{
		title:  "One request per mode: when the engine made the first token vs when the user saw it",
		panels: []*plot.Plot{p}, legend: leg,
		footnote: joinNotes("Engine marks are run means on the engine's clock, drawn from the send time; "+
			"compare them with client marks at the order-of-magnitude level only.", medianNote(s, "The client lane's request"), clockNote(res)),
	}
	if groupWord(res) == "run" {
		f.title = "One request per run: when the engine made the first token vs when the user saw it"
	}
	return f.render()
}

// timeline draws the lanes; lane k counts from the top.
type timeline struct{ runs []timelineRun }

func (t *timeline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := 2 * len(t.runs)
	laneY := func(k int) vg.Length { return trY(float64(n - 1 - k)) }
	laneH := trY(1) - trY(0)
	lab := textStyle(tickSize, color.Black)
	for i, r := range t.runs {
		t.engineLane(c, trX, laneY(2*i), laneH, r, lab)
		t.clientLane(c, trX, laneY(2*i+1), laneH, r, lab)
	}
}

func (t *timeline) engineLane(c draw.Canvas, trX func(float64) vg.Length, y, h vg.Length, r timelineRun, lab draw.TextStyle) {
	if !r.hasTTFT && !r.hasEngE2E {
		s := lab
		s.Color = laneGrey
		c.FillText(s, vg.Point{X: trX(0) + vg.Points(4), Y: y}, "engine figures not exported by the server")
		return
	}
	end := r.engE2E
	if !r.hasEngE2E {
		end = r.ttft
	}
	c.StrokeLine2(draw.LineStyle{Color: laneGrey, Width: vg.Points(1.5)}, trX(0), y, trX(end), y)
	ttftLabel := fmt.Sprintf("engine TTFT %s", secsText(r.ttft))
	if r.hasQ && r.queue > 0 {
		c.StrokeLine2(draw.LineStyle{Color: Palette[KeyQueue], Width: h * 0.25}, trX(0), y, trX(r.queue), y)
		ql := fmt.Sprintf("queue %s", secsText(r.queue))
		if lab.Width(ql) < trX(r.queue)-trX(0) {
			above(c, lab, trX(r.queue/2), y+h*0.17, ql, draw.XCenter)
		} else { // too short a bar to label: say it with TTFT
			ttftLabel += ", of which " + ql
		}
	}
	c.DrawGlyph(glyph(Palette[KeySent], draw.CircleGlyph{}), vg.Point{X: trX(0), Y: y})
	if r.hasTTFT {
		c.DrawGlyph(glyph(Palette[KeyEngineTTFT], diamondGlyph{}), vg.Point{X: trX(r.ttft), Y: y})
		below(c, lab, trX(r.ttft), y-h*0.12, ttftLabel)
	} else {
		below(c, lab, trX(0), y-h*0.12, "engine TTFT: not exported")
	}
	if r.hasEngE2E {
		c.DrawGlyph(glyph(Palette[KeyE2EEngine], draw.BoxGlyph{}), vg.Point{X: trX(r.engE2E), Y: y})
		above(c, lab, trX(r.engE2E), y+h*0.14, fmt.Sprintf("engine E2E %s", secsText(r.engE2E)), draw.XRight)
	}
}

func (t *timeline) clientLane(c draw.Canvas, trX func(float64) vg.Length, y, h vg.Length, r timelineRun, lab draw.TextStyle) {
	fv, e2e := r.rec.FirstVisibleS, r.rec.E2ES
	wait := draw.LineStyle{Color: laneGrey, Width: vg.Points(2), Dashes: []vg.Length{vg.Points(6), vg.Points(4)}}
	c.StrokeLine2(wait, trX(0), y, trX(fv), y)
	if trX(fv)-trX(0) > vg.Points(160) {
		s := lab
		s.Color = color.Gray{0x55}
		above(c, s, (trX(0)+trX(fv))/2, y+h*0.06, "nothing visible yet", draw.XCenter)
	}
	c.StrokeLine2(draw.LineStyle{Color: laneGrey, Width: vg.Points(1)}, trX(fv), y, trX(e2e), y)
	tick := draw.LineStyle{Color: Palette[KeyContent], Width: vg.Points(1)}
	times := eventTimes(r.rec)
	th := h * 0.16
	if len(times) == 1 {
		tick.Width, th = vg.Points(3), h*0.3 // one arrival carrying everything
	}
	for _, at := range times {
		c.StrokeLine2(tick, trX(at), y-th, trX(at), y+th)
	}
	c.DrawGlyph(glyph(Palette[KeySent], draw.CircleGlyph{}), vg.Point{X: trX(0), Y: y})
	// Done before first visible, a size larger: when they coincide (not
	// streaming) the triangle sits inside the square and both show.
	done := glyph(Palette[KeyE2EClient], draw.BoxGlyph{})
	done.Radius = vg.Points(7.5)
	c.DrawGlyph(done, vg.Point{X: trX(e2e), Y: y})
	first := glyph(Palette[KeyFirstVisible], draw.PyramidGlyph{})
	first.Radius = vg.Points(5.5)
	c.DrawGlyph(first, vg.Point{X: trX(fv), Y: y})
	events := plural(r.rec.OutputTokens, "token") + " in " + plural(len(times), "content event")
	if trX(e2e)-trX(fv) < vg.Points(12) {
		// First visible output and done coincide (non-streaming): one label.
		above(c, lab, trX(e2e), y+th+vg.Points(2),
			fmt.Sprintf("first visible = done: %s (%s)", secsText(e2e), events), draw.XRight)
		return
	}
	fvLabel := fmt.Sprintf("first visible %s", secsText(fv))
	below(c, lab, trX(fv), y-th-vg.Points(2), fvLabel)
	doneLabel := fmt.Sprintf("done %s", secsText(e2e))
	if len(t.runs) > 3 && trX(e2e)-lab.Width(doneLabel) > trX(fv)+lab.Width(fvLabel)+vg.Points(10) {
		// Many lanes: keep the space above the client lane free for the
		// engine lane's labels; "done" goes below beside "first visible".
		s := lab
		s.XAlign, s.YAlign = draw.XRight, draw.YTop
		c.FillText(s, vg.Point{X: trX(e2e), Y: y - th - vg.Points(2)}, doneLabel)
		return
	}
	above(c, lab, trX(e2e), y+th+vg.Points(2), doneLabel, draw.XRight)
	s := lab
	s.Color = Palette[KeyContent]
	if room := trX(e2e) - trX(fv) - lab.Width(doneLabel); room > s.Width(events)+vg.Points(20) {
		above(c, s, trX(fv)+room/2, y+th+vg.Points(2), events, draw.XCenter)
	}
}

// plural writes "1 token", "256 tokens".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// above writes txt with its bottom at y, aligned on x as xa says.
func above(c draw.Canvas, sty draw.TextStyle, x, y vg.Length, txt string, xa draw.XAlignment) {
	sty.XAlign, sty.YAlign = xa, draw.YBottom
	c.FillText(sty, vg.Point{X: x, Y: y}, txt)
}

// below writes txt with its top at y, starting at x.
func below(c draw.Canvas, sty draw.TextStyle, x, y vg.Length, txt string) {
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	c.FillText(sty, vg.Point{X: x, Y: y}, txt)
}

func glyph(col color.Color, shape draw.GlyphDrawer) draw.GlyphStyle {
	return draw.GlyphStyle{Color: col, Radius: vg.Points(6), Shape: shape}
}

// Legend thumbnails.
type markThumb struct {
	c     color.Color
	shape draw.GlyphDrawer
}

func (m markThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(glyph(m.c, m.shape), c.Center()) }

type lineThumb struct {
	c      color.Color
	w      vg.Length
	dashes []vg.Length
}

func (l lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(draw.LineStyle{Color: l.c, Width: l.w, Dashes: l.dashes}, c.Min.X, y, c.Max.X, y)
}

type tickThumb struct{ c color.Color }

func (t tickThumb) Thumbnail(c *draw.Canvas) {
	sty := draw.LineStyle{Color: t.c, Width: vg.Points(1)}
	for i := 1; i < 6; i++ {
		x := c.Min.X + (c.Max.X-c.Min.X)*vg.Length(i)/6
		c.StrokeLine2(sty, x, c.Min.Y, x, c.Max.Y)
	}
}

func anyQueue(runs []timelineRun) bool {
	for _, r := range runs {
		if r.hasQ && r.queue > 0 {
			return true
		}
	}
	return false
}

// diamondGlyph is a filled diamond (gonum has none).
type diamondGlyph struct{}

func (diamondGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 1.25
	c.FillPolygon(sty.Color, []vg.Point{{X: pt.X, Y: pt.Y + r}, {X: pt.X + r, Y: pt.Y}, {X: pt.X, Y: pt.Y - r}, {X: pt.X - r, Y: pt.Y}})
}

// medianNote says how the median request (which, in the chart's words) was
// found when the records are a Sample, "" when they are all.
func medianNote(s *Sample, which string) string {
	if s == nil {
		return ""
	}
	return which + " is the one whose E2E is nearest the run's median in results.json, over every request of requests.jsonl."
}
