package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSummarizeInPlace: the copy-free summary of a column read back from
// disk equals Summarize's on the same values bit for bit (mean in the
// original order, the median of even and odd counts, nearest ranks,
// ties), and NaN follows Summarize's rules.
func TestSummarizeInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 10, 99, 100, 1001, 4096} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = r.ExpFloat64() * 0.05
			if i%7 == 3 {
				xs[i] = xs[i/2] // ties
			}
		}
		want := Summarize(xs)
		got := SummarizeInPlace(slices.Clone(xs))
		if *got != *want {
			t.Errorf("n=%d: in place %+v, Summarize %+v", n, *got, *want)
		}
	}
	if SummarizeInPlace(nil) != nil {
		t.Error("no samples: want nil")
	}
	if s := SummarizeInPlace([]float64{1, math.NaN(), 2}); !math.IsNaN(s.Median) || s.N != 3 {
		t.Errorf("NaN: %+v, want Summarize's NaN median", *s)
	}
}
