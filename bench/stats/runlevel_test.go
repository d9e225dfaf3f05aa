package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestCompareRunsWelch checks CompareRuns against Welch's t-test worked
// examples of Wikipedia's "Welch's t-test" article (two decimals given).
func TestCompareRunsWelch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		a, b      []float64
		t, df, p  float64
		tolT, tol float64
	}{
		// Example 1: equal sizes, equal variances.
		{"example 1",
			[]float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4},
			[]float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4},
			2.46, 24.99, 0.021, 0.01, 0.01},
		// Example 2: unequal sizes and variances.
		{"example 2",
			[]float64{17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8},
			[]float64{21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5, 23.6, 21.5, 22.5, 23.5, 21.5, 21.8},
			1.57, 9.9, 0.149, 0.01, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := CompareRuns(tc.a, tc.b, 0)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.T-tc.t) > tc.tolT || math.Abs(r.DF-tc.df) > tc.tol || math.Abs(r.P-tc.p) > 0.001 {
				t.Errorf("t %.3f df %.2f p %.4f, want t %.2f df %.2f p %.3f", r.T, r.DF, r.P, tc.t, tc.df, tc.p)
			}
			// The interval excludes 0 exactly when p < 0.05.
			if excl := r.DiffLo > 0 || r.DiffHi < 0; excl != (r.P < 0.05) {
				t.Errorf("interval [%g, %g] and p %g disagree", r.DiffLo, r.DiffHi, r.P)
			}
			if want := fmt.Sprintf("n=%d+%d", len(tc.a), len(tc.b)); r.N() != want {
				t.Errorf("N() = %q", r.N())
			}
		})
	}
}

// TestTQuantile: the t quantiles the intervals use, against tables.
func TestTQuantile(t *testing.T) {
	for _, tc := range []struct{ df, want float64 }{
		{1, 12.706205}, {4, 2.776445}, {9, 2.262157}, {29, 2.045230}, {1e6, 1.959966},
	} {
		if got := tQuantile(0.975, tc.df); math.Abs(got-tc.want) > 1e-5 {
			t.Errorf("t(0.975, %g) = %.6f, want %.6f", tc.df, got, tc.want)
		}
	}
}

// TestCompareRunsEdges: too few runs, NaN, no spread, a zero base.
func TestCompareRunsEdges(t *testing.T) {
	if _, err := CompareRuns([]float64{1}, []float64{1, 2}, 0); !errors.Is(err, ErrTooFewRuns) {
		t.Errorf("one run a side: err %v, want ErrTooFewRuns", err)
	}
	if _, err := CompareRuns([]float64{1, math.NaN()}, []float64{1, 2}, 0); !errors.Is(err, ErrNaN) {
		t.Errorf("NaN: err %v, want ErrNaN", err)
	}
	if _, err := CompareRuns([]float64{1, 2}, []float64{1, 2}, 1.5); err == nil {
		t.Error("level 1.5 accepted")
	}
	r, err := CompareRuns([]float64{2, 2}, []float64{2, 2, 2}, 0)
	if err != nil || r.P != 1 || r.Change != 0 {
		t.Errorf("identical constant sides: p %g change %g err %v, want p 1 change 0", r.P, r.Change, err)
	}
	r, _ = CompareRuns([]float64{2, 2}, []float64{3, 3}, 0)
	if r.P != 0 || r.Change != 0.5 || r.ChangeLo != 0.5 {
		t.Errorf("constant sides apart: p %g change %g [%g], want p 0, +50%%", r.P, r.Change, r.ChangeLo)
	}
	r, _ = CompareRuns([]float64{0, 0}, []float64{1, 2}, 0)
	if !math.IsNaN(r.Change) || math.IsNaN(r.Diff) {
		t.Errorf("zero base: change %g diff %g, want NaN change, a diff", r.Change, r.Diff)
	}
}

// TestCompareRunsCalibration: under no change, 5+5 runs flag p < 0.05 in
// about 5% of trials and the 95% interval covers the true change (here
// +10%) in about 95%; runs' values are normal with a 5% CV, as a run's
// median is across runs.
func TestCompareRunsCalibration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(n int, mean float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = mean * (1 + 0.05*rng.NormFloat64())
		}
		return xs
	}
	const trials = 4000
	var alarms, covered int
	for range trials {
		r, err := CompareRuns(draw(5, 100), draw(5, 100), 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.P < 0.05 {
			alarms++
		}
		r, _ = CompareRuns(draw(5, 100), draw(5, 110), 0)
		if r.DiffLo <= 10 && 10 <= r.DiffHi {
			covered++
		}
	}
	// Binomial SD at 4,000 trials is 0.34%: +-1.5% is over 4 SDs.
	if fa := float64(alarms) / trials; math.Abs(fa-0.05) > 0.015 {
		t.Errorf("false-alarm rate %.3f, want 0.05", fa)
	}
	if cov := float64(covered) / trials; math.Abs(cov-0.95) > 0.015 {
		t.Errorf("coverage %.3f, want 0.95", cov)
	}
}

// TestAgainstHistory: a worked case, then calibration: a new run of the
// same build falls outside the 95% prediction interval from 10 past runs
// about 5% of the time, and a run 10% slower with a 2% CV nearly always.
func TestAgainstHistory(t *testing.T) {
	hist := []float64{10, 11, 9, 10, 10, 11, 9, 10, 10, 10} // mean 10, SD sqrt(4/9)
	h, err := AgainstHistory(hist, 12, 0)
	if err != nil {
		t.Fatal(err)
	}
	scale := math.Sqrt(4.0/9) * math.Sqrt(1.1)
	if math.Abs(h.Mean-10) > 1e-12 || math.Abs(h.T-2/scale) > 1e-9 || h.DF != 9 {
		t.Errorf("mean %g t %g df %g, want 10, %g, 9", h.Mean, h.T, h.DF, 2/scale)
	}
	if math.Abs(h.Hi-(10+2.262157*scale)) > 1e-5 || !h.Outside() || h.P >= 0.05 || math.Abs(h.Change-0.2) > 1e-12 {
		t.Errorf("interval [%g, %g] p %g change %g: want 12 outside, +20%%", h.Lo, h.Hi, h.P, h.Change)
	}
	if _, err := AgainstHistory([]float64{1}, 1, 0); !errors.Is(err, ErrTooFewRuns) {
		t.Errorf("one past run: err %v, want ErrTooFewRuns", err)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	const trials = 4000
	var alarms, caught int
	for range trials {
		past := make([]float64, 10)
		for i := range past {
			past[i] = 100 * (1 + 0.02*rng.NormFloat64())
		}
		if h, _ := AgainstHistory(past, 100*(1+0.02*rng.NormFloat64()), 0); h.Outside() {
			alarms++
		}
		if h, _ := AgainstHistory(past, 110*(1+0.02*rng.NormFloat64()), 0); h.Outside() && h.Change > 0 {
			caught++
		}
	}
	if fa := float64(alarms) / trials; math.Abs(fa-0.05) > 0.015 {
		t.Errorf("false-alarm rate %.3f, want 0.05", fa)
	}
	if c := float64(caught) / trials; c < 0.95 {
		t.Errorf("10%% slower caught %.3f of the time, want >= 0.95", c)
	}
}

// TestSpreadLimit: the limit from K=20 runs holds its false-alarm rate
// for one run a side judged by the limit alone.
func TestSpreadLimit(t *testing.T) {
	if l := SpreadOf([]float64{1}).Limit(0.05, 1); !math.IsNaN(l) {
		t.Errorf("one run: limit %g, want NaN", l)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	run := func() float64 { return 100 * (1 + 0.04*rng.NormFloat64()) }
	const trials = 4000
	var alarms int
	for range trials {
		cal := make([]float64, 20)
		for i := range cal {
			cal[i] = run()
		}
		limit := SpreadOf(cal).Limit(0.05, 1)
		if base, cur := run(), run(); (cur-base)/base > limit {
			alarms++
		}
	}
	// One-sided 5%; the base's own noise in the denominator adds a little.
	if fa := float64(alarms) / trials; math.Abs(fa-0.05) > 0.015 {
		t.Errorf("false-alarm rate %.3f, want 0.05", fa)
	}
	s := SpreadOf([]float64{9, 10, 11})
	if s.Mean != 10 || s.SD != 1 || s.CV != 0.1 {
		t.Errorf("spread %+v, want mean 10 SD 1 CV 0.1", s)
	}
}

// TestHolm: the worked example of Holm's method (m = 4): sorted p
// 0.01 0.02 0.03 0.04 adjust to 0.04 0.06 0.06 0.06; NaN is left out.
func TestHolm(t *testing.T) {
	got := Holm([]float64{0.03, 0.01, math.NaN(), 0.04, 0.02})
	want := []float64{0.06, 0.04, math.NaN(), 0.06, 0.06}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(want[i]) && math.Abs(got[i]-want[i]) > 1e-12) {
			t.Fatalf("Holm = %v, want %v", got, want)
		}
	}
	if got := Holm([]float64{0.5, 0.9}); got[0] != 1 || got[1] != 1 {
		t.Errorf("capped at 1: %v", got)
	}
}
