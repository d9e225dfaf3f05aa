// Package stats holds servebench's descriptive statistics. Every call into
// github.com/montanaflynn/stats lives here, so all figures are computed one
// way. It sits under bench, which summarises runs with it; report reads the
// same summaries. Its inference tests: Mann-Whitney on per-request samples
// (mannwhitney.go) and the run-level tests the CI gate judges by
// (runlevel.go: Welch's t-test across runs, a new run against history,
// calibrated limits); Student's t comes from gonum's distuv.
package stats

import (
	"math"
	"slices"

	mstats "github.com/montanaflynn/stats"
)

// Summary describes one quantity over a run's successful requests. It is
// part of results.json ("servebench/v1"): add fields, never rename.
type Summary struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize returns the summary of xs, or nil when xs is empty (a quantity
// with no samples is absent, not zero). Percentiles use the nearest-rank
// method on the sorted samples so every figure is one that was observed,
// except the median, which averages the middle two for even n.
func Summarize(xs []float64) *Summary {
	if len(xs) == 0 {
		return nil
	}
	data := mstats.Float64Data(xs)
	s := &Summary{N: len(xs)}
	s.Mean, _ = data.Mean()
	s.Median, _ = data.Median()
	s.P90, _ = data.PercentileNearestRank(90)
	s.P99, _ = data.PercentileNearestRank(99)
	s.Min, _ = data.Min()
	s.Max, _ = data.Max()
	return s
}

// SummarizeInPlace is Summarize(xs) without Summarize's sorted copies
// (three of xs's size), for values a Selector collected: it sorts xs,
// which the caller gives up. The mean is taken before the sort, in xs's
// order, so every figure equals Summarize's bit for bit.
func SummarizeInPlace(xs []float64) *Summary {
	if len(xs) == 0 {
		return nil
	}
	if slices.ContainsFunc(xs, math.IsNaN) {
		return Summarize(xs) // its NaN rules
	}
	data := mstats.Float64Data(xs)
	s := &Summary{N: len(xs)}
	s.Mean, _ = data.Mean()
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 0 {
		s.Median, _ = data[n/2-1 : n/2+1].Mean() // as mstats.Median
	} else {
		s.Median = xs[n/2]
	}
	s.P90, s.P99 = nearestRank(xs, 90), nearestRank(xs, 99)
	s.Min, s.Max = xs[0], xs[n-1]
	return s
}

// nearestRank is mstats.PercentileNearestRank on sorted, NaN-free xs.
func nearestRank(sorted []float64, p float64) float64 {
	if r := int(math.Ceil(float64(len(sorted)) * p / 100)); r > 0 {
		return sorted[r-1]
	}
	return sorted[0]
}

// Median is the median of xs, as in Summarize (the middle two averaged for
// even n), without the rest of a Summary; NaN when xs is empty.
func Median(xs []float64) float64 {
	m, _ := mstats.Float64Data(xs).Median()
	return m
}

// Finite is v, or 0 when v is NaN or infinite (an empty histogram's mean,
// a rate over no time): JSON has no NaN.
func Finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
