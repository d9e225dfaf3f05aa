package bench

import (
	"github.com/servebench/servebench/bench/workload"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// TestAppendRecent: the progress bar keeps between barRecent and
// 2*barRecent of the latest values, newest last.
func TestAppendRecent(t *testing.T) {
	var xs []float64
	for i := range 5 * barRecent {
		xs = appendRecent(xs, float64(i))
		if len(xs) > 2*barRecent || xs[len(xs)-1] != float64(i) || (i >= barRecent && len(xs) < barRecent) {
			t.Fatalf("after %d appends: %d kept, last %v", i+1, len(xs), xs[len(xs)-1])
		}
	}
	if xs[0] != float64(5*barRecent-len(xs)) {
		t.Errorf("kept values are not the latest: first %v of %d", xs[0], len(xs))
	}
}

// TestLateWarningOnlyWhenItMatters: issue 20's run, 20 of 103 Poisson
// sends at 4 req/s past 1 ms but none past 1.2 ms, kept its schedule (the
// gaps are 250 ms); sends 40 ms late at that rate did not.
func TestLateWarningOnlyWhenItMatters(t *testing.T) {
	wl := &result.Workload{Mode: workload.ModeRate, Rate: 4, Arrival: workload.ArrivalPoisson, Burstiness: 1}
	lags := make([]float64, 103)
	for i := range 20 {
		lags[i] = 0.0011 + 0.0001*float64(i%2)
	}
	rs := &result.RateStats{TargetPerS: 4, AchievedPerS: 3.4, LateSends: 20, SendLagS: stats.Summarize(lags)}
	if w := lateWarning(rs, wl); w != "" {
		t.Errorf("1.2 ms lags at 250 ms gaps: %q", w)
	}
	for i := range lags {
		lags[i] = 0.04
	}
	rs = &result.RateStats{TargetPerS: 4, AchievedPerS: 3.72, LateSends: 103, SendLagS: stats.Summarize(lags)}
	if w := lateWarning(rs, wl); !strings.Contains(w, "schedule was not kept") || !strings.Contains(w, "within the arrival process's own variation") {
		t.Errorf("40 ms lags: %q", w)
	}
}
