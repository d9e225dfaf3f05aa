package stats

import (
	"errors"
	"math"

	mstats "github.com/montanaflynn/stats"
)

// MannWhitneyResult is the outcome of a two-sided Mann-Whitney U test.
type MannWhitneyResult struct {
	U1     float64 // U statistic of the first sample: count of pairs x > y, ties counting one half
	Z      float64 // normal deviate after tie and continuity correction (>= 0)
	P      float64 // two-sided p-value from the normal approximation
	N1, N2 int
	// Tied is true when every value of both samples is equal: nothing can
	// be told apart and P is 1.
	Tied bool
}

// ErrEmptySample is returned by MannWhitney when a sample is empty.
var ErrEmptySample = errors.New("stats: Mann-Whitney U test needs at least one value in each sample")

// MannWhitney runs the two-sided Mann-Whitney U test (Wilcoxon rank-sum)
// of x against y with the normal approximation, the tie correction of the
// variance and a 0.5 continuity correction: the same figures as SciPy's
// mannwhitneyu(x, y, method="asymptotic") and, for larger samples, as
// benchstat's U test. It is distribution-free, so latency's long tails and
// odd shapes do not break it; only ranks matter.
func MannWhitney(x, y []float64) (MannWhitneyResult, error) {
	n1, n2 := len(x), len(y)
	res := MannWhitneyResult{N1: n1, N2: n2, P: 1}
	if n1 == 0 || n2 == 0 {
		return res, ErrEmptySample
	}
	all := make([]float64, 0, n1+n2)
	all = append(all, x...)
	all = append(all, y...)
	// Rank gives average ranks to ties, as the test wants.
	ranks, err := mstats.Rank(all)
	if err != nil {
		return res, err
	}
	r1 := 0.0
	for _, r := range ranks[:n1] {
		r1 += r
	}
	f1, f2, n := float64(n1), float64(n2), float64(n1+n2)
	res.U1 = r1 - f1*(f1+1)/2
	mu := f1 * f2 / 2
	variance := f1 * f2 / 12 * ((n + 1) - tieTerm(all)/(n*(n-1)))
	if n1+n2 < 2 || variance <= 0 {
		res.Tied = true
		return res, nil
	}
	z := (math.Abs(res.U1-mu) - 0.5) / math.Sqrt(variance)
	if z < 0 {
		z = 0
	}
	res.Z = z
	res.P = math.Min(1, 2*mstats.NormSf(z, 0, 1))
	return res, nil
}

// tieTerm is the sum over groups of tied values of t^3 - t.
func tieTerm(all []float64) float64 {
	counts := make(map[float64]int, len(all))
	for _, v := range all {
		counts[v]++
	}
	sum := 0.0
	for _, c := range counts {
		t := float64(c)
		sum += t*t*t - t
	}
	return sum
}

// MannWhitneyMinN is the smallest n such that two samples of n values each
// can reach two-sided significance at alpha under MannWhitney at all (the
// most extreme split, no ties). Below it a "no change" verdict says nothing.
// It returns 0 when alpha is not in (0, 1).
func MannWhitneyMinN(alpha float64) int {
	if !(alpha > 0 && alpha < 1) {
		return 0
	}
	// Bounded: even alpha = 1e-12 is reached well before n = 100.
	for n := 2; n <= 100; n++ {
		f := float64(n)
		mu := f * f / 2
		sd := math.Sqrt(f * f * (2*f + 1) / 12)
		if 2*mstats.NormSf((mu-0.5)/sd, 0, 1) < alpha {
			return n
		}
	}
	return 100
}
