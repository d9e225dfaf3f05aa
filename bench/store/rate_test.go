package store

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/bench/workload"
)

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
	if w := LateWarning(rs, wl); w != "" {
		t.Errorf("1.2 ms lags at 250 ms gaps: %q", w)
	}
	for i := range lags {
		lags[i] = 0.04
	}
	rs = &result.RateStats{TargetPerS: 4, AchievedPerS: 3.72, LateSends: 103, SendLagS: stats.Summarize(lags)}
	if w := LateWarning(rs, wl); !strings.Contains(w, "schedule was not kept") || !strings.Contains(w, "within the arrival process's own variation") {
		t.Errorf("40 ms lags: %q", w)
	}
}
