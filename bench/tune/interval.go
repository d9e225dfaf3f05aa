package tune

import (
	"fmt"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// meanInterval is the mean of xs (one value per run) with its 95%
// confidence interval across the runs (stats.MeanInterval); nil for no
// runs.
func meanInterval(xs []float64) *result.Interval {
	if len(xs) == 0 {
		return nil
	}
	m, lo, hi, _ := stats.MeanInterval(xs, stats.DefaultLevel)
	return &result.Interval{Mean: m, Lo: lo, Hi: hi, N: len(xs), Values: xs}
}

// compare is A against B on figure across their runs (Welch's t,
// stats.CompareRuns): "A beats B" only when the 95% interval of the
// difference leaves out zero, else no significant difference, with the
// margin either way. higher says whether more is better.
func compare(a, b string, figure string, av, bv []float64, higher bool, unit string) result.TuneComparison {
	c := result.TuneComparison{A: a, B: b, Figure: figure, Test: fmt.Sprintf("Welch's t across runs, n=%d+%d", len(av), len(bv))}
	rt, err := stats.CompareRuns(bv, av, stats.DefaultLevel) // B the base: Diff = mean A - mean B
	if err != nil {
		c.Text = fmt.Sprintf("%s vs %s: too few runs to tell (n=%d+%d; at least 2 a side)", a, b, len(av), len(bv))
		return c
	}
	c.Diff, c.Lo, c.Hi = rt.Diff, rt.DiffLo, rt.DiffHi
	margin := fmt.Sprintf("%s %s [%s, %s] (95%%, %s)", signed(c.Diff), unit, signed(c.Lo), signed(c.Hi), c.Test)
	better := c.Diff > 0 == higher
	switch {
	case c.Lo > 0 || c.Hi < 0:
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

// signed is num with its sign: "+9300", not "+9.3e+03".
func signed(v float64) string {
	if v >= 0 {
		return "+" + num(v)
	}
	return num(v)
}
