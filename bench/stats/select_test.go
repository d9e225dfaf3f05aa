package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// passOver is a Pass over xs that counts its calls.
func passOver(xs []float64, calls *int) Pass {
	return func(fn func(float64)) error {
		*calls++
		for _, x := range xs {
			fn(x)
		}
		return nil
	}
}

// sameBits says whether two summaries are equal bit for bit (NaN equal to NaN).
func sameBits(a, b *Summary) bool {
	if a == nil || b == nil {
		return a == b
	}
	fa := []float64{a.Mean, a.Median, a.P90, a.P99, a.Min, a.Max}
	fb := []float64{b.Mean, b.Median, b.P90, b.P99, b.Min, b.Max}
	for i := range fa {
		if math.Float64bits(fa[i]) != math.Float64bits(fb[i]) {
			return false
		}
	}
	return a.N == b.N
}

// TestSelectorEqualsSummarize: the Selector's summary of values read in
// passes (radix selection above its limit, set small here) equals
// Summarize's bit for bit, reads the values at most 6 times and keeps at
// most 4 histograms and 4 buckets.
func TestSelectorEqualsSummarize(t *testing.T) {
	const limit = 64
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, f func(i int) float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = f(i)
		}
		return xs
	}
	cases := []struct {
		name string
		xs   []float64
	}{
		{"empty", nil},
		{"one", []float64{0.25}},
		{"below the limit", gen(limit-1, func(int) float64 { return r.ExpFloat64() })},
		{"at the limit", gen(limit, func(int) float64 { return r.ExpFloat64() })},
		{"just above the limit, odd", gen(limit+1, func(int) float64 { return r.ExpFloat64() })},
		{"just above the limit, even", gen(limit+2, func(int) float64 { return r.ExpFloat64() })},
		{"random latencies, even", gen(10000, func(int) float64 { return 0.05 + r.ExpFloat64()*0.2 })},
		{"random latencies, odd", gen(10001, func(int) float64 { return 0.05 + r.ExpFloat64()*0.2 })},
		{"heavy ties", gen(5001, func(int) float64 { return float64(1 + r.IntN(3)) })},
		{"ties at the median, even", gen(4000, func(i int) float64 { return float64(i % 2) })},
		{"all equal", gen(3000, func(int) float64 { return 7.5 })},
		{"negative and positive", gen(7777, func(int) float64 { return r.NormFloat64() * 1e3 })},
		{"all negative", gen(2048, func(int) float64 { return -r.ExpFloat64() })},
		// Keys alike in their top 44 bits: narrowing goes 48 bits deep.
		{"a few ulps apart", gen(3001, func(int) float64 { return 1 + float64(r.IntN(1<<20))*0x1p-52 })},
		{"infinities", gen(500, func(i int) float64 { return []float64{math.Inf(1), math.Inf(-1), 1, 2}[i%4] })},
		// The sum overflows: mstats.Mean sums again scaled down.
		{"near the largest float", gen(301, func(int) float64 { return math.MaxFloat64 * (0.5 + r.Float64()/2) })},
		{"NaN among them", gen(300, func(i int) float64 { return []float64{math.NaN(), 1, 2}[i%3] })},
		{"integers (token counts)", gen(9999, func(int) float64 { return float64(1 + r.IntN(128)) })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := Summarize(slices.Clone(c.xs))
			s := Selector{Limit: limit}
			calls := 0
			got, err := s.Summarize(len(c.xs), passOver(c.xs, &calls))
			if err != nil {
				t.Fatal(err)
			}
			if !sameBits(got, want) {
				t.Errorf("selected %+v\nSummarize %+v", got, want)
			}
			if calls > 6 || len(s.hists) > 4 || len(s.bufs) > 4 {
				t.Errorf("%d passes, %d histograms, %d buckets: want at most 6, 4, 4", calls, len(s.hists), len(s.bufs))
			}
		})
	}
}

// TestSelectorDefaultLimit: past the default limit (128K values) a
// Selector reused for several quantities keeps no buffer the size of a
// quantity, and still agrees with Summarize.
func TestSelectorDefaultLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var s Selector
	for _, n := range []int{DefaultSelectLimit + 1, 300_000, 1000} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = 0.1 + r.ExpFloat64()*0.01
		}
		calls := 0
		got, err := s.Summarize(n, passOver(xs, &calls))
		if err != nil {
			t.Fatal(err)
		}
		if want := Summarize(slices.Clone(xs)); !sameBits(got, want) {
			t.Errorf("n=%d: selected %+v\nSummarize %+v", n, got, want)
		}
		for i, b := range s.bufs {
			if cap(b) > 2*DefaultSelectLimit {
				t.Errorf("n=%d: bucket %d keeps room for %d values, over twice the limit", n, i, cap(b))
			}
		}
	}
}

// TestSelectorPassErrors: a Pass that fails, or gives another count than
// announced, is an error, not a summary.
func TestSelectorPassErrors(t *testing.T) {
	boom := errors.New("disk gone")
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(i)
	}
	calls := 0
	failSecond := func(fn func(float64)) error {
		calls++
		if calls == 2 {
			return boom
		}
		for _, x := range xs {
			fn(x)
		}
		return nil
	}
	s := Selector{Limit: 16}
	if got, err := s.Summarize(len(xs), failSecond); !errors.Is(err, boom) || got != nil {
		t.Errorf("failing second pass: %+v, %v; want %v", got, err, boom)
	}
	n := 0
	if got, err := s.Summarize(len(xs)+1, passOver(xs, &n)); !errors.Is(err, errCount) || got != nil {
		t.Errorf("one value short: %+v, %v; want %v", got, err, errCount)
	}
}
