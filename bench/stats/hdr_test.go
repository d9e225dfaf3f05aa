package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHistAgainstExact: a Hist's quantiles are within HistRelativeError of
// Summarize's exact ones on the same samples (lognormal, as latencies
// are), N, mean, min and max equal; merging two halves gives the whole.
func TestHistAgainstExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []float64
	var all, a, b Hist
	for i := range 20000 {
		v := math.Exp(rng.NormFloat64()*0.7 - 4) // about 18 ms, long tail
		xs = append(xs, v)
		all.Record(v, 1)
		if i%2 == 0 {
			a.Record(v, 1)
		} else {
			b.Record(v, 1)
		}
	}
	exact, got := Summarize(xs), all.Summary()
	t.Logf("exact %+v\nhist  %+v", *exact, *got)
	if got.N != exact.N || got.Min != exact.Min || got.Max != exact.Max || math.Abs(got.Mean-exact.Mean) > 1e-12*exact.Mean {
		t.Errorf("n/min/max/mean differ: %+v vs %+v", got, exact)
	}
	for _, c := range [][2]float64{{got.Median, exact.Median}, {got.P90, exact.P90}, {got.P99, exact.P99}} {
		if math.Abs(c[0]-c[1]) > HistRelativeError*c[1]+1e-12 {
			t.Errorf("quantile %.9f, exact %.9f: off by more than %g", c[0], c[1], HistRelativeError)
		}
	}
	a.Merge(&b)
	if m := a.Summary(); m.N != got.N || m.Median != got.Median || m.P99 != got.P99 || m.Min != got.Min || m.Max != got.Max {
		t.Errorf("merged halves %+v, whole %+v", *m, *got)
	}
}
