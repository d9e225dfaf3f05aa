package report

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servebench/servebench/bench/result"
)

// reasoningSplit is where a record's token staircase (stepXYs) stops being
// thinking: the points up to index k are its reasoning events, the rest its
// answer's. 0 when the record did not reason (or kept no events).
func reasoningSplit(r result.Record) int {
	if !r.Reasoned() || r.LastReasoningS <= 0 {
		return 0
	}
	n := 0
	for _, ev := range r.Events {
		if ev[0] > r.LastReasoningS {
			break
		}
		n++
	}
	return 2 * n // stepXYs: the origin, then two points per event
}

// addTokenLine adds r's staircase to p in style, its thinking part in
// the reasoning colour (tinted like style when thin); it reports whether
// r had a thinking part.
func addTokenLine(p *plot.Plot, r result.Record, style draw.LineStyle, thin bool, add func(...plot.Plotter)) (bool, error) {
	xys := stepXYs(r)
	k := reasoningSplit(r)
	if k > 0 {
		rs := style
		rs.Color = Palette[KeyThinking]
		if thin {
			rs.Color = tint(Palette[KeyThinking], 0.65)
		}
		l, err := plotter.NewLine(xys[:k+1])
		if err != nil {
			return false, err
		}
		l.LineStyle = rs
		add(l)
		xys = xys[k:]
	}
	if len(xys) > 1 {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return false, err
		}
		l.LineStyle = style
		add(l)
	}
	return k > 0, nil
}
