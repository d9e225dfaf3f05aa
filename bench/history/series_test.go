package history

import (
	"fmt"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/stats"
)

// TestAnalyzeMinStep: a steady series with a 0.2% shift at run 10 and a 5%
// rise at run 20 has both as significant change points; a 1% minimum step
// keeps only the rise, 0 keeps both.
func TestAnalyzeMinStep(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var es []Entry
	for i := range 30 {
		v := 1.0
		if i >= 10 {
			v = 0.998
		}
		if i >= 20 {
			v = 1.05
		}
		v += 1e-5 * float64(i%3) // run-to-run noise far below both steps
		es = append(es, Entry{Run: "streaming", StartedAt: start.Add(time.Duration(i) * time.Hour),
			Labels: map[string]string{"commit": fmt.Sprintf("c%02d", i+1)}, Stats: map[string]float64{"x.mean": v}})
	}
	o := stats.EDivisiveOptions{Seed: 1}
	for _, c := range []struct {
		minStep float64
		want    []int // the change points' indexes, in order
	}{
		{0, []int{10, 20}}, // every significant change point
		{0.01, []int{20}},  // the 0.2% shift left out
		{0.10, []int(nil)}, // the 5% rise too
	} {
		ss := Analyze(es, "x.mean", o, stats.DefaultLevel, c.minStep)
		if len(ss) != 1 {
			t.Fatalf("min step %v: %d series, want 1", c.minStep, len(ss))
		}
		var got []int
		for _, ch := range ss[0].Changes {
			got = append(got, ch.Index)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("min step %v: change points at %v, want %v", c.minStep, got, c.want)
		}
	}
}
