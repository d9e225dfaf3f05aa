package report

import (
	"bytes"
	"image/png"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

func TestFrontier(t *testing.T) {
	// throughput per GPU (y) against tokens/s per user (x), both better high
	xs := []float64{13.4, 67.8, 71.5, 70.4, 40}
	ys := []float64{374, 121, 120, 119, 100}
	if got := Frontier(xs, ys, true); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("frontier %v, want [0 1 2]: 70.4/119 is beaten by 71.5/120, 40/100 by 67.8/121", got)
	}
	// against TTFT p99, lower better: 12.4 s with 374 beats 50.8 s with 121
	if got := Frontier([]float64{0.9, 50.8, 12.4}, []float64{120, 121, 374}, false); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("frontier %v, want [0 2]", got)
	}
}

// TestParetoChartAndText: a two-treatment tune renders a PNG of the
// house size and a table naming each treatment with its interval.
func TestParetoChartAndText(t *testing.T) {
	fig := func(key string, m, lo, hi float64) result.TuneFigure {
		return result.TuneFigure{Key: key, Interval: result.Interval{Mean: m, Lo: lo, Hi: hi, N: 3}}
	}
	level := func(name string, y, x, ttft float64) result.TuneLevel {
		return result.TuneLevel{Name: name, Figures: []result.TuneFigure{fig(result.FigOutputTokSPerGPU, y, y-1, y+1),
			fig(result.FigTokSPerUser, x, x-1, x+1), fig(result.FigTTFTP99, ttft, ttft/2, ttft*2)}}
	}
	tu := &result.Tune{Repeats: 3, Clock: "modelled", Speedup: 5,
		Treatments: []result.TuneTreatment{
			{Name: "max-num-seqs=16", Repeats: 3, Levels: []result.TuneLevel{level("c=16", 120, 71.5, 0.9), level("c=256", 121, 67.8, 50.8)}},
			{Name: "max-num-seqs=256", Repeats: 3, Levels: []result.TuneLevel{level("c=256", 374, 13.4, 12.4)}}},
		Answer: &result.TuneAnswer{Text: "recommended: max-num-seqs=256 at c=256"}}
	b, err := ParetoChart(tu)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != ChartWidth || img.Bounds().Dy() != ChartHeight {
		t.Fatalf("pareto.png: %v %v", err, img.Bounds())
	}
	var out bytes.Buffer
	if err := TuneText(&out, tu); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max-num-seqs=256  c=256", "374 [373, 375]", "Clock: modelled", "recommended: max-num-seqs=256"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
