package result

import (
	"math"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/stats"
)

// TestLateRule: lateness matters past the larger of 1 ms and a tenth of the
// mean gap between sends, judged on the p99 send lag.
func TestLateRule(t *testing.T) {
	lags := func(p99 float64) *stats.Summary {
		xs := make([]float64, 100)
		for i := range xs {
			xs[i] = p99 * float64(i) / 98 // the 99th of 100 at p99
		}
		return stats.Summarize(xs)
	}
	for _, c := range []struct {
		target, p99 float64
		matters     bool
	}{
		{4, 0.0012, false}, // issue 20: 1.2 ms against 250 ms gaps
		{4, 0.030, true},   // over 25 ms
		{1000, 0.0009, false},
		{1000, 0.002, true}, // the floor: 1 ms
	} {
		rs := &RateStats{TargetPerS: c.target, SendLagS: lags(c.p99)}
		if got := rs.LateMatters(); got != c.matters {
			t.Errorf("%g req/s, p99 lag %.4f s (limit %.4f s): matters %v, want %v", c.target, rs.SendLagS.P99, rs.LateLimitS(), got, c.matters)
		}
	}
}

// TestAchievedText: a Poisson schedule of 103 sends moves the achieved rate
// by 1/sqrt(102) = 9.9% at one standard deviation; 3.72 of 4 is inside
// that, 3.0 of 4 is not; a constant schedule has no spread.
func TestAchievedText(t *testing.T) {
	if got := RateSpread("poisson", 1, 103); math.Abs(got-1/math.Sqrt(102)) > 1e-12 {
		t.Errorf("poisson spread %v", got)
	}
	if got := RateSpread("gamma", 0.5, 103); math.Abs(got-1/math.Sqrt(51)) > 1e-12 {
		t.Errorf("gamma 0.5 spread %v", got)
	}
	n := stats.Summarize(make([]float64, 103))
	rs := &RateStats{TargetPerS: 4, AchievedPerS: 3.72, SendLagS: n}
	if s := rs.AchievedText("poisson", 1); !strings.Contains(s, "-7.0%, within") || !strings.Contains(s, "±9.9%") {
		t.Errorf("3.72 of 4: %q", s)
	}
	rs.AchievedPerS = 3.0
	if s := rs.AchievedText("poisson", 1); !strings.Contains(s, "beyond") {
		t.Errorf("3.0 of 4: %q", s)
	}
	if s := rs.AchievedText("constant", 0); strings.Contains(s, "variation") || !strings.Contains(s, "-25.0%") {
		t.Errorf("constant: %q", s)
	}
}
