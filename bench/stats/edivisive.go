package stats

import (
	"math"
	"math/rand/v2"
	"sort"
)

// EDivisiveOptions tune EDivisive; zero fields take the defaults.
type EDivisiveOptions struct {
	// Alpha is the permutation test's significance level (default 0.05):
	// a change point is kept while its p-value is at most Alpha.
	Alpha float64
	// Permutations per test (default 199: the smallest p-value is 1/200).
	Permutations int
	// MinSize is the fewest points a segment may have (default 3; at
	// least 2, as the within-segment sums need pairs).
	MinSize int
	// Exponent is the distance's power α in (0, 2) (default 1): any α
	// below 2 detects any change of distribution, not only of the mean.
	Exponent float64
	// Seed makes the permutations, and so the p-values, reproducible.
	Seed uint64
}

func (o EDivisiveOptions) withDefaults() EDivisiveOptions {
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	if o.Permutations <= 0 {
		o.Permutations = 199
	}
	if o.MinSize < 2 {
		o.MinSize = 3
	}
	if !(o.Exponent > 0 && o.Exponent < 2) {
		o.Exponent = 1
	}
	return o
}

// ChangePoint is a change EDivisive found: the series' distribution
// differs from Index on (the first point of the new segment).
type ChangePoint struct {
	Index int
	Q     float64 // the divergence statistic Q̂ of the split
	P     float64 // its permutation p-value
}

// EDivisive finds change points in xs (a series in time order) by
// E-divisive means: Matteson, D. S. and James, N. A. (2014), "A
// Nonparametric Approach for Multiple Change Point Analysis of
// Multivariate Data", Journal of the American Statistical Association
// 109(505):334-345, the method Apache Otava (formerly Hunter, MongoDB's
// change-point detection for nightly performance tests) runs on stored
// results.
//
// Each step splits one segment where the energy divergence between the
// points before τ and those from τ to κ, scaled by m n / (m + n), is
// largest (over τ and κ), and keeps the split when a permutation test
// (the points shuffled within each current segment, Permutations times)
// finds it significant at Alpha; it stops at the first split that is not.
// Distances are |x - y|^Exponent, so no distribution is assumed. The
// change points come back in index order. Cost: O(n²) per pass and
// permutation.
func EDivisive(xs []float64, o EDivisiveOptions) []ChangePoint {
	o = o.withDefaults()
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	bounds := []int{0, len(xs)} // segment edges, sorted
	var cps []ChangePoint
	work := make([]float64, len(xs))
	for {
		at, q := bestSplit(xs, bounds, o)
		if at < 0 {
			break
		}
		exceed := 0
		for range o.Permutations {
			copy(work, xs)
			for s := 0; s+1 < len(bounds); s++ {
				seg := work[bounds[s]:bounds[s+1]]
				rng.Shuffle(len(seg), func(i, j int) { seg[i], seg[j] = seg[j], seg[i] })
			}
			if _, pq := bestSplit(work, bounds, o); pq >= q {
				exceed++
			}
		}
		p := float64(exceed+1) / float64(o.Permutations+1)
		if p > o.Alpha {
			break
		}
		cps = append(cps, ChangePoint{Index: at, Q: q, P: p})
		bounds = append(bounds, at)
		sort.Ints(bounds)
	}
	sort.Slice(cps, func(i, j int) bool { return cps[i].Index < cps[j].Index })
	return cps
}

// bestSplit is the split of largest Q̂ over the segments between bounds:
// its index in xs and Q̂, or -1 when no segment can be split.
func bestSplit(xs []float64, bounds []int, o EDivisiveOptions) (at int, q float64) {
	at, q = -1, math.Inf(-1)
	for s := 0; s+1 < len(bounds); s++ {
		a, b := bounds[s], bounds[s+1]
		if tau, sq := splitSegment(xs[a:b], o); tau >= 0 && sq > q {
			at, q = a+tau, sq
		}
	}
	return at, q
}

// splitSegment maximises Q̂(τ, κ) over one segment z: the points z[:τ]
// against z[τ:κ], each at least MinSize long. It keeps, for every column
// c of the distance matrix, the prefix sums col[c][r] = Σ_{i<r} d(z_i,
// z_c), so each (τ, κ) costs O(1) from the one before.
func splitSegment(z []float64, o EDivisiveOptions) (tau int, best float64) {
	n, min := len(z), o.MinSize
	tau, best = -1, math.Inf(-1)
	if n < 2*min {
		return tau, best
	}
	col := make([][]float64, n)
	for c := range n {
		col[c] = make([]float64, n+1)
		for r := range n {
			col[c][r+1] = col[c][r] + math.Pow(math.Abs(z[r]-z[c]), o.Exponent)
		}
	}
	var left float64 // Σ_{i<k<t} d over the points before t
	for t := 1; t <= n-min; t++ {
		left += col[t-1][t-1]
		if t < min {
			continue
		}
		m := float64(t)
		var between, right float64
		for k := t + 1; k <= n; k++ {
			between += col[k-1][t]
			right += col[k-1][k-1] - col[k-1][t]
			if k-t < min {
				continue
			}
			nn := float64(k - t)
			e := 2*between/(m*nn) - left/(m*(m-1)/2) - right/(nn*(nn-1)/2)
			if qv := m * nn / (m + nn) * e; qv > best {
				tau, best = t, qv
			}
		}
	}
	return tau, best
}
