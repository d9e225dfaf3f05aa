package store

import (
	"fmt"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// RateStatsOf is a run's result.RateStats from the sends' lags (seconds
// late), the send phase's start and the last send. Spilled lags are read in passes; when
// they cannot be read back the figures are absent (the run warns:
// lags.Err).
func RateStatsOf(lags *Column, first, last time.Time, target float64) *result.RateStats {
	rs := &result.RateStats{TargetPerS: target}
	n := lags.N
	if n == 0 {
		return rs
	}
	if span := last.Sub(first).Seconds(); n > 1 && span > 0 {
		rs.AchievedPerS = float64(n-1) / span
	}
	if err := lags.Each(func(l float64) {
		if l > 0.001 {
			rs.LateSends++
		}
	}); err != nil {
		return &result.RateStats{TargetPerS: target}
	}
	var sel stats.Selector
	rs.SendLagS = lags.Summary(&sel)
	return rs
}

// LateWarning says when an open-loop run missed its schedule by enough to
// matter (result.RateStats.LateMatters: p99 send lag over the larger of
// 1 ms and a tenth of the mean gap between sends). Latency from the
// intended send time includes the lag.
func LateWarning(rs *result.RateStats, wl *result.Workload) string {
	if !rs.LateMatters() {
		return ""
	}
	return fmt.Sprintf("%d of %d sends started more than 1 ms late (median lag %.1f ms, p99 %.1f ms, max %.1f ms; "+
		"the p99 is over %.1f ms, a tenth of the mean gap between sends or 1 ms; %s): "+
		"the schedule was not kept; *_from_intended_s figures include the lag",
		rs.LateSends, rs.SendLagS.N, 1000*rs.SendLagS.Median, 1000*rs.SendLagS.P99, 1000*rs.SendLagS.Max,
		1000*rs.LateLimitS(), rs.AchievedText(wl.Arrival, wl.Burstiness))
}
