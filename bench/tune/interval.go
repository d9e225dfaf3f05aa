package tune

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/servebench/servebench/bench/result"
)

// confidence is the level of every interval tune reports.
const confidence = 0.95

// meanInterval is the mean of xs (one value per run) with its 95%
// confidence interval, Student's t with n-1 degrees of freedom. The run
// is the unit of evidence, so xs are runs' figures, never pooled requests.
// Kept minimal and local until bench/stats has a one-sample interval; swap
// it for that one when it lands.
func meanInterval(xs []float64) *result.Interval {
	if len(xs) == 0 {
		return nil
	}
	n := float64(len(xs))
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / n
	iv := &result.Interval{Mean: mean, Lo: mean, Hi: mean, N: len(xs), Values: xs}
	if len(xs) < 2 {
		return iv
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	half := tQuantile(n-1) * math.Sqrt(ss/(n-1)/n)
	iv.Lo, iv.Hi = mean-half, mean+half
	return iv
}

// tQuantile is Student's t two-sided critical value at confidence for df
// degrees of freedom.
func tQuantile(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-confidence)/2)
}

// welch compares a's runs with b's: the difference of the means with its
// 95% interval (Welch-Satterthwaite degrees of freedom, which do not
// assume both sides equally noisy). ok is false with fewer than two runs a
// side. Swap for bench/stats' run-level test when it lands.
func welch(a, b []float64) (diff, lo, hi float64, ok bool) {
	ia, ib := meanInterval(a), meanInterval(b)
	if ia == nil || ib == nil || ia.N < 2 || ib.N < 2 {
		return 0, 0, 0, false
	}
	va, vb := variance(a, ia.Mean)/float64(ia.N), variance(b, ib.Mean)/float64(ib.N)
	diff = ia.Mean - ib.Mean
	se := math.Sqrt(va + vb)
	if se == 0 {
		return diff, diff, diff, true
	}
	df := (va + vb) * (va + vb) / (va*va/float64(ia.N-1) + vb*vb/float64(ib.N-1))
	half := tQuantile(df) * se
	return diff, diff - half, diff + half, true
}

func variance(xs []float64, mean float64) float64 {
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return ss / float64(len(xs)-1)
}

// compare is A against B on figure: "A beats B" only when the interval of
// the difference leaves out zero, else no significant difference, with
// the margin either way. higher says whether more is better.
func compare(a, b string, figure string, av, bv []float64, higher bool, unit string) result.TuneComparison {
	c := result.TuneComparison{A: a, B: b, Figure: figure, Test: fmt.Sprintf("Welch's t across runs, n=%d+%d", len(av), len(bv))}
	diff, lo, hi, ok := welch(av, bv)
	c.Diff, c.Lo, c.Hi = diff, lo, hi
	if !ok {
		c.Text = fmt.Sprintf("%s vs %s: too few runs to tell (n=%d+%d; at least 2 a side)", a, b, len(av), len(bv))
		return c
	}
	margin := fmt.Sprintf("%s %s [%s, %s] (95%%, %s)", signed(diff), unit, signed(lo), signed(hi), c.Test)
	better := diff > 0 == higher
	switch {
	case lo > 0 || hi < 0:
		c.Significant = true
		if better {
			c.Text = fmt.Sprintf("%s beats %s on %s: %s", a, b, figure, margin)
		} else {
			c.Text = fmt.Sprintf("%s beats %s on %s: %s", b, a, figure, margin)
		}
	default:
		c.Text = fmt.Sprintf("%s vs %s: no significant difference on %s: %s", a, b, figure, margin)
	}
	return c
}

func signed(v float64) string { return fmt.Sprintf("%+.3g", v) }
