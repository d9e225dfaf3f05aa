package stats

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// HistSigFigs is how many significant decimal digits a Hist keeps of each
// value: its quantiles are within HistRelativeError of an observed value
// (HdrHistogram's value-equivalence guarantee).
const (
	HistSigFigs       = 3
	HistRelativeError = 0.001
)

// Hist range: values are recorded in nanoseconds, from 1 ns to one hour;
// smaller values count as 1 ns, larger as one hour (min and max stay exact).
const (
	histUnit   = 1e-9
	histLowest = 1
	histHigh   = int64(3600e9)
)

// Hist summarises a quantity with too many samples to keep, per-token
// inter-token latency above all, in bounded memory (270 KB whatever
// the count): an HdrHistogram (github.com/HdrHistogram/hdrhistogram-go)
// for the quantiles, exact count, sum, min and max beside it. Hists merge
// exactly. The zero value is empty and ready; not safe for concurrent use.
type Hist struct {
	h        *hdrhistogram.Histogram
	n        int
	sum      float64
	min, max float64
}

// Record adds n samples of v seconds (v >= 0).
func (h *Hist) Record(v float64, n int) {
	if n <= 0 || math.IsNaN(v) {
		return
	}
	if h.h == nil {
		h.h = hdrhistogram.New(histLowest, histHigh, HistSigFigs)
		h.min, h.max = v, v
	}
	ns := int64(math.Round(v / histUnit))
	ns = min(max(ns, histLowest), histHigh)
	_ = h.h.RecordValues(ns, int64(n)) // in range by the clamp
	h.n += n
	h.sum += v * float64(n)
	h.min, h.max = min(h.min, v), max(h.max, v)
}

// N is the number of samples recorded.
func (h *Hist) N() int { return h.n }

// Merge adds o's samples to h.
func (h *Hist) Merge(o *Hist) {
	if o.h == nil {
		return
	}
	if h.h == nil {
		h.h = hdrhistogram.New(histLowest, histHigh, HistSigFigs)
		h.min, h.max = o.min, o.max
	}
	h.h.Merge(o.h)
	h.n += o.n
	h.sum += o.sum
	h.min, h.max = min(h.min, o.min), max(h.max, o.max)
}

// Quantile is h's p-th percentile (0 < p <= 100), within
// HistRelativeError of an observed value and clamped to the exact extremes;
// NaN when h is empty.
func (h *Hist) Quantile(p float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	v := float64(h.h.ValueAtQuantile(p)) * histUnit
	return min(max(v, h.min), h.max) // a bucket's edge may pass the extremes
}

// Summary is h as a Summary: N, mean, min and max exact; median, p90 and
// p99 within HistRelativeError. Nil when h is empty.
func (h *Hist) Summary() *Summary {
	if h.n == 0 {
		return nil
	}
	return &Summary{N: h.n, Mean: h.sum / float64(h.n), Min: h.min, Max: h.max,
		Median: h.Quantile(50), P90: h.Quantile(90), P99: h.Quantile(99)}
}
