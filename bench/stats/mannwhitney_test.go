package stats

import (
	"math"
	"testing"

	mstats "github.com/montanaflynn/stats"
)

// TestMannWhitneySciPyExample checks the example of SciPy's mannwhitneyu
// documentation (ages of male and female faculty). Worked by hand: the
// pooled ranks of the first sample are 3, 5, 7, 8, 9, so R1 = 32 and
// U1 = 32 - 5*6/2 = 17; mu = 5*4/2 = 10, sigma^2 = 5*4*10/12 = 16.667;
// z = (17 - 10 - 0.5) / 4.0825 = 1.5922; p = 2*(1 - Phi(z)) = 0.11135,
// matching SciPy's method="asymptotic" result 0.11134688653314041.
func TestMannWhitneySciPyExample(t *testing.T) {
	males := []float64{19, 22, 16, 29, 24}
	females := []float64{20, 11, 17, 12}
	res, err := MannWhitney(males, females)
	if err != nil {
		t.Fatal(err)
	}
	if res.U1 != 17 {
		t.Errorf("U1 = %v, want 17", res.U1)
	}
	if math.Abs(res.P-0.11134688653314041) > 1e-9 {
		t.Errorf("p = %.12f, want 0.111346886533", res.P)
	}
	// The test is symmetric: swapping the samples gives U2 = n1*n2 - U1 and the same p.
	rev, _ := MannWhitney(females, males)
	if rev.U1 != 3 || math.Abs(rev.P-res.P) > 1e-12 {
		t.Errorf("swapped: U1 = %v p = %v, want 3 and %v", rev.U1, rev.P, res.P)
	}
}

// TestMannWhitneyTies checks the tie correction against a hand-worked
// example: x = {1, 2, 2, 3}, y = {2, 3, 4, 4}. Pooled sorted: 1 | 2 2 2 |
// 3 3 | 4 4, average ranks 1 | 3 3 3 | 5.5 5.5 | 7.5 7.5. R1 = 1+3+3+5.5 =
// 12.5, U1 = 12.5 - 10 = 2.5. Tie groups of 3, 2, 2: sum(t^3-t) = 24+6+6 =
// 36; sigma^2 = 16/12 * (9 - 36/56) = 11.142857; z = (8 - 2.5 - 0.5) /
// 3.338092 = 1.497862; p = 0.134164.
func TestMannWhitneyTies(t *testing.T) {
	res, err := MannWhitney([]float64{1, 2, 2, 3}, []float64{2, 3, 4, 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.U1 != 2.5 {
		t.Errorf("U1 = %v, want 2.5", res.U1)
	}
	if math.Abs(res.Z-1.497862) > 1e-5 {
		t.Errorf("z = %v, want 1.497862", res.Z)
	}
	if math.Abs(res.P-0.134164) > 1e-5 {
		t.Errorf("p = %v, want 0.134164", res.P)
	}
}

// TestMannWhitneyPairCount checks U1 against its definition (pairs with
// x > y, ties one half) on samples with many ties.
func TestMannWhitneyPairCount(t *testing.T) {
	x := []float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}
	y := []float64{2, 7, 1, 8, 2, 8, 1, 8, 2, 8}
	want := 0.0
	for _, a := range x {
		for _, b := range y {
			switch {
			case a > b:
				want++
			case a == b:
				want += 0.5
			}
		}
	}
	res, err := MannWhitney(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if res.U1 != want {
		t.Errorf("U1 = %v, want %v", res.U1, want)
	}
	if !(res.P > 0 && res.P <= 1) {
		t.Errorf("p = %v out of (0, 1]", res.P)
	}
}

// TestMannWhitneyEdges covers the degenerate inputs.
func TestMannWhitneyEdges(t *testing.T) {
	if _, err := MannWhitney(nil, []float64{1}); err != ErrEmptySample {
		t.Errorf("empty x: err = %v, want ErrEmptySample", err)
	}
	if _, err := MannWhitney([]float64{1, math.NaN()}, []float64{2}); err != ErrNaN {
		t.Errorf("NaN: err = %v, want ErrNaN", err)
	}
	// All values equal on both sides: nothing to tell apart.
	res, err := MannWhitney([]float64{0, 0, 0}, []float64{0, 0})
	if err != nil || !res.Tied || res.P != 1 {
		t.Errorf("all tied: %+v, %v; want Tied, p = 1", res, err)
	}
	// Fully separated samples of 10: U1 = 0, z = (50-0.5)/13.2288, p ~ 1.8e-4.
	lo := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	hi := []float64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	res, _ = MannWhitney(lo, hi)
	if res.U1 != 0 || math.Abs(res.P-1.8267e-4) > 1e-7 {
		t.Errorf("separated: U1 = %v p = %v, want 0 and 1.8267e-4", res.U1, res.P)
	}
}

// TestMannWhitneyMinN: at n = 3 per side the most extreme split gives
// z = (4.5-0.5)/2.2913 = 1.746, p = 0.081; at n = 4, z = 7.5/3.4641 =
// 2.165, p = 0.030. So 4 for alpha 0.05; for 0.001, n = 7 gives p = 0.0022
// and n = 8 gives p = 0.00094.
func TestMannWhitneyMinN(t *testing.T) {
	for _, tc := range []struct {
		alpha float64
		want  int
	}{
		{0.05, 4},
		{0.10, 3},
		{0.001, 8},
		{0, 0}, // invalid alpha
		{1, 0}, // invalid alpha
	} {
		if got := MannWhitneyMinN(tc.alpha); got != tc.want {
			t.Errorf("MannWhitneyMinN(%v) = %d, want %d", tc.alpha, got, tc.want)
		}
	}
}

// BenchmarkMannWhitney: two samples of 10,000 latencies each.
func BenchmarkMannWhitney(b *testing.B) {
	x, y := make([]float64, 10000), make([]float64, 10000)
	for i := range x {
		x[i] = float64((i*7919)%10007) * 1e-4
		y[i] = float64((i*104729)%10009) * 1.02e-4
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MannWhitney(x, y); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRankMontanaflynn is the ranking MannWhitney does not use, for
// the ratio.
func BenchmarkRankMontanaflynn(b *testing.B) {
	all := make([]float64, 20000)
	for i := range all {
		all[i] = float64((i*7919)%10007) * 1e-4
	}
	for b.Loop() {
		if _, err := mstats.Rank(all); err != nil {
			b.Fatal(err)
		}
	}
}
