package stats

import (
	"math/rand/v2"
	"testing"
)

// noisy is n draws around mean with a relative spread of sd, seeded.
func noisy(r *rand.Rand, n int, mean, sd float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = mean * (1 + sd*r.NormFloat64())
	}
	return xs
}

// TestEDivisive finds steps where they are and none in stationary noise.
func TestEDivisive(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   func(r *rand.Rand) []float64
		want []int
	}{
		{"a 5% step at 20 in 1% noise", func(r *rand.Rand) []float64 {
			return append(noisy(r, 20, 100, 0.01), noisy(r, 10, 105, 0.01)...)
		}, []int{20}},
		{"two steps, up then back", func(r *rand.Rand) []float64 {
			xs := append(noisy(r, 15, 100, 0.01), noisy(r, 10, 110, 0.01)...)
			return append(xs, noisy(r, 15, 100, 0.01)...)
		}, []int{15, 25}},
		{"no change", func(r *rand.Rand) []float64 { return noisy(r, 30, 100, 0.01) }, nil},
		{"too short to split", func(r *rand.Rand) []float64 { return []float64{1, 1, 5, 5, 5} }, nil},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		cps := EDivisive(c.xs(r), EDivisiveOptions{Seed: 7})
		var got []int
		for _, cp := range cps {
			got = append(got, cp.Index)
			if cp.P > 0.05 {
				t.Errorf("%s: change at %d kept with p %g", c.name, cp.Index, cp.P)
			}
		}
		if len(got) != len(c.want) || (len(got) > 0 && !equalInts(got, c.want)) {
			t.Errorf("%s: change points %v, want %v", c.name, got, c.want)
		}
	}
}

// TestEDivisiveFalseAlarms: on stationary noise, a change is reported in
// about Alpha of the series (the permutation test's promise).
func TestEDivisiveFalseAlarms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const series = 100
	found := 0
	for i := range series {
		if len(EDivisive(noisy(r, 30, 100, 0.02), EDivisiveOptions{Seed: uint64(i), Permutations: 99})) > 0 {
			found++
		}
	}
	if found > 12 { // 5% of 100 expected; 12 is past 3 binomial SDs
		t.Errorf("changes found in %d of %d stationary series, want about 5", found, series)
	}
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}
