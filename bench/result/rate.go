package result

import (
	"fmt"
	"math"
)

// The lateness rule: a send counts as late past 1 ms, and lateness
// matters when the run's p99 send lag exceeds the larger of LateFloorS and
// LateShare of the mean gap between sends (1/target rate). Below that, no
// more than 1% of sends moved by more than a tenth of the gap to the next,
// which leaves the arrival pattern (and latency counted from the intended
// send) as scheduled.
const (
	LateFloorS = 0.001
	LateShare  = 0.1
)

// LateLimitS is the p99 send lag above which lateness matters.
func (rs *RateStats) LateLimitS() float64 {
	if rs.TargetPerS <= 0 {
		return LateFloorS
	}
	return max(LateFloorS, LateShare/rs.TargetPerS)
}

// LateMatters reports whether the sends' p99 lag broke the lateness rule.
func (rs *RateStats) LateMatters() bool {
	return rs.SendLagS != nil && rs.SendLagS.P99 > rs.LateLimitS()
}

// RateSpread is the relative standard deviation of the send rate that the
// arrival process alone gives over sends sends: the rate is (sends - 1)
// over the sum of sends - 1 gaps, each gamma with shape k (Poisson: k = 1,
// gamma: k = burstiness), whose coefficient of variation is
// 1/sqrt(k (sends - 1)). 0 for constant arrivals or fewer than 2 sends.
func RateSpread(arrival string, burstiness float64, sends int) float64 {
	k := 0.0
	switch arrival {
	case "poisson":
		k = 1
	case "gamma":
		k = burstiness
	}
	if k <= 0 || sends < 2 {
		return 0
	}
	return 1 / math.Sqrt(k*float64(sends-1))
}

// AchievedText is the achieved send rate against the target, with how far
// the arrival process alone moves it when it is random, e.g. "achieved 3.72
// of 4 req/s (-7.0%, within the arrival process's own variation: ±9.9% at
// one standard deviation for 103 poisson sends)"; beyond two standard
// deviations it says so.
func (rs *RateStats) AchievedText(arrival string, burstiness float64) string {
	s := fmt.Sprintf("achieved %.3g of %g req/s", rs.AchievedPerS, rs.TargetPerS)
	if rs.TargetPerS <= 0 || rs.SendLagS == nil {
		return s
	}
	dev := rs.AchievedPerS/rs.TargetPerS - 1
	sd := RateSpread(arrival, burstiness, rs.SendLagS.N)
	if sd == 0 {
		return s + fmt.Sprintf(" (%+.1f%%)", 100*dev)
	}
	within := "within"
	if math.Abs(dev) > 2*sd {
		within = "beyond" // two standard deviations
	}
	return s + fmt.Sprintf(" (%+.1f%%, %s the arrival process's own variation: ±%.1f%% at one standard deviation for %d %s sends)",
		100*dev, within, 100*sd, rs.SendLagS.N, arrival)
}
