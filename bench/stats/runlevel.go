package stats

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Run-level statistics: the run, not the request, is the unit of evidence.
// Requests of one run share its batch schedule, so a whole run shifts
// together and its requests are not independent samples of a build's speed;
// each run's median (or p90, p99, throughput) is ONE observation.
//
// The test across runs is Welch's t-test on those run-level values, chosen
// over a rank test because CI repeats are few: with 3 runs a side an exact
// Mann-Whitney test cannot reach p < 0.05 at all (its smallest two-sided p
// is 0.1; 4+4 gives 0.029), while a t-test works from 2 runs a side. A
// run's median or percentile pools many requests, so it is close to normal
// across runs (central limit theorem for sample quantiles), which is what
// the t-test needs; Welch's form does not assume both sides equally noisy
// (a change can make a server noisier), and it yields the 95% confidence
// interval of the change directly. benchstat reports the same kind of
// figure and names its sample sizes the same way ("n=5+5").

// DefaultLevel is the confidence level of intervals when 0 is given.
const DefaultLevel = 0.95

// ErrTooFewRuns is returned when a side has fewer than two runs: one run
// says nothing about run-to-run noise.
var ErrTooFewRuns = errors.New("stats: run-level test needs at least 2 runs a side (one run says nothing about run-to-run noise)")

// RunTest is the outcome of CompareRuns: side B's run-level values against
// side A's (A the base, B the new).
type RunTest struct {
	NA, NB       int
	MeanA, MeanB float64
	SDA, SDB     float64 // sample standard deviations across runs
	Diff         float64 // MeanB - MeanA, in the values' unit
	DiffLo       float64 // confidence interval of Diff at Level
	DiffHi       float64
	// Change is Diff / |MeanA|; ChangeLo, ChangeHi its interval, the
	// interval of Diff over |MeanA| (MeanA's own uncertainty, already in
	// Diff's interval, is not counted twice). NaN when MeanA is 0.
	Change, ChangeLo, ChangeHi float64
	T, DF, P                   float64 // Welch's t, its degrees of freedom, the two-sided p-value
	Level                      float64
}

// N is benchstat's "n=5+5": how many runs stand behind each side.
func (r RunTest) N() string { return fmt.Sprintf("n=%d+%d", r.NA, r.NB) }

// Significant reports whether P is below alpha.
func (r RunTest) Significant(alpha float64) bool { return r.P < alpha }

// String is e.g. "+4.1% [+1.2%, +7.0%] (p=0.012, n=5+5, Welch's t-test across runs)".
func (r RunTest) String() string {
	return fmt.Sprintf("%s %s (p=%s, %s, Welch's t-test across runs)", pct(r.Change), pctRange(r.ChangeLo, r.ChangeHi), fmtPValue(r.P), r.N())
}

// CompareRuns runs Welch's two-sided t-test of b's run-level values
// against a's and returns the change with its confidence interval at level
// (0: DefaultLevel). It needs at least two runs a side (ErrTooFewRuns) and
// no NaN or infinity (ErrNaN). Two sides with no spread at all get P 1
// when their means agree and P 0 when they do not, with a zero-width
// interval.
func CompareRuns(a, b []float64, level float64) (RunTest, error) {
	level, err := checkLevel(level)
	if err != nil {
		return RunTest{}, err
	}
	r := RunTest{NA: len(a), NB: len(b), Level: level, P: 1}
	if r.NA < 2 || r.NB < 2 {
		return r, ErrTooFewRuns
	}
	if err := finiteAll(a, b); err != nil {
		return r, err
	}
	r.MeanA, r.SDA = meanSD(a)
	r.MeanB, r.SDB = meanSD(b)
	r.Diff = r.MeanB - r.MeanA
	va, vb := r.SDA*r.SDA/float64(r.NA), r.SDB*r.SDB/float64(r.NB)
	se := math.Sqrt(va + vb)
	if se == 0 {
		r.DiffLo, r.DiffHi, r.DF = r.Diff, r.Diff, float64(r.NA+r.NB-2)
		if r.Diff != 0 {
			r.P, r.T = 0, math.Copysign(math.Inf(1), r.Diff)
		}
	} else {
		// Welch-Satterthwaite degrees of freedom.
		r.DF = (va + vb) * (va + vb) / (va*va/float64(r.NA-1) + vb*vb/float64(r.NB-1))
		r.T = r.Diff / se
		r.P = twoSidedP(r.T, r.DF)
		h := tQuantile(0.5+level/2, r.DF) * se
		r.DiffLo, r.DiffHi = r.Diff-h, r.Diff+h
	}
	r.Change, r.ChangeLo, r.ChangeHi = rel(r.Diff, r.MeanA), rel(r.DiffLo, r.MeanA), rel(r.DiffHi, r.MeanA)
	return r, nil
}

// HistoryTest is the outcome of AgainstHistory: one new run's value judged
// against the run-to-run spread of N past runs.
type HistoryTest struct {
	N        int // past runs
	Mean, SD float64
	Value    float64 // the new run's
	// Lo, Hi is the prediction interval at Level: where a new run of the
	// same build falls with probability Level.
	Lo, Hi float64
	// Change is (Value - Mean) / |Mean|; ChangeLo, ChangeHi the prediction
	// interval's bounds as changes (how far a same-build run may stray).
	Change, ChangeLo, ChangeHi float64
	T, DF, P                   float64 // (Value-Mean)/(SD*sqrt(1+1/N)), N-1, two-sided p
	Level                      float64
}

// Outside reports whether Value falls outside the prediction interval:
// the history's run-to-run noise does not explain it (P < 1 - Level).
func (h HistoryTest) Outside() bool { return h.Value < h.Lo || h.Value > h.Hi }

// String is e.g. "+6.3% outside [-3.1%, +3.1%] (p=0.002, new run vs N=10 past runs)".
func (h HistoryTest) String() string {
	where := "inside"
	if h.Outside() {
		where = "outside"
	}
	return fmt.Sprintf("%s %s %s (p=%s, new run vs N=%d past runs, %g%% prediction interval)",
		pct(h.Change), where, pctRange(h.ChangeLo, h.ChangeHi), fmtPValue(h.P), h.N, h.Level*100)
}

// AgainstHistory judges one new run's value against past runs' values of
// the same quantity: the prediction interval for one more draw from the
// history's distribution, Mean ± t(N-1) * SD * sqrt(1 + 1/N) (Student's t
// with N-1 degrees of freedom: the SD is estimated from the history
// itself), at level (0: DefaultLevel). It needs at least two past runs
// (ErrTooFewRuns); ten or more give a usefully narrow interval.
func AgainstHistory(history []float64, value, level float64) (HistoryTest, error) {
	level, err := checkLevel(level)
	if err != nil {
		return HistoryTest{}, err
	}
	h := HistoryTest{N: len(history), Value: value, Level: level, P: 1}
	if h.N < 2 {
		return h, ErrTooFewRuns
	}
	if err := finiteAll(history, []float64{value}); err != nil {
		return h, err
	}
	h.Mean, h.SD = meanSD(history)
	h.DF = float64(h.N - 1)
	scale := h.SD * math.Sqrt(1+1/float64(h.N))
	d := value - h.Mean
	switch {
	case scale > 0:
		h.T = d / scale
		h.P = twoSidedP(h.T, h.DF)
	case d != 0:
		h.T, h.P = math.Copysign(math.Inf(1), d), 0
	}
	half := tQuantile(0.5+level/2, h.DF) * scale
	h.Lo, h.Hi = h.Mean-half, h.Mean+half
	h.Change, h.ChangeLo, h.ChangeHi = rel(d, h.Mean), rel(-half, h.Mean), rel(half, h.Mean)
	return h, nil
}

// Spread is a quantity's run-to-run spread over K runs of one build
// (servebench calibrate).
type Spread struct {
	N        int
	Mean, SD float64
	CV       float64 // SD / |Mean|; NaN when Mean is 0
}

// SpreadOf measures the run-to-run spread of values (one per run).
func SpreadOf(values []float64) Spread {
	s := Spread{N: len(values), Mean: math.NaN(), SD: math.NaN(), CV: math.NaN()}
	if s.N == 0 {
		return s
	}
	s.Mean, s.SD = meanSD(values)
	s.CV = rel(s.SD, s.Mean)
	return s
}

// Limit is the relative limit on a worse change that an unchanged build
// passes with probability 1 - falseAlarm when perSide runs a side are
// compared by their means: the difference of two such means has SD
// CV*sqrt(2/perSide), and with the CV estimated from N runs the ratio is
// Student t with N-1 degrees of freedom, one-sided since only a worse
// change fails the gate. NaN with fewer than two runs or no CV.
func (s Spread) Limit(falseAlarm float64, perSide int) float64 {
	if s.N < 2 || perSide < 1 || math.IsNaN(s.CV) || !(falseAlarm > 0 && falseAlarm < 1) {
		return math.NaN()
	}
	return tQuantile(1-falseAlarm, float64(s.N-1)) * s.CV * math.Sqrt(2/float64(perSide))
}

// Holm returns Holm's step-down adjusted p-values of ps (same order): a
// gate that judges m figures at once and fails on any keeps its
// family-wise false-alarm rate at alpha when it compares the adjusted
// p-values with alpha (Holm 1979), less conservatively than Bonferroni's
// m*p. NaN stays NaN and does not count towards m.
func Holm(ps []float64) []float64 {
	idx := make([]int, 0, len(ps))
	for i, p := range ps {
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ps[a], ps[b]) })
	out := slices.Clone(ps)
	m, run := len(idx), 0.0
	for k, i := range idx {
		run = math.Max(run, math.Min(1, float64(m-k)*ps[i]))
		out[i] = run
	}
	return out
}

func checkLevel(level float64) (float64, error) {
	if level == 0 {
		return DefaultLevel, nil
	}
	if !(level > 0 && level < 1) {
		return 0, fmt.Errorf("stats: confidence level %v is not in (0, 1)", level)
	}
	return level, nil
}

func finiteAll(xs ...[]float64) error {
	for _, s := range xs {
		for _, v := range s {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w (or an infinity) among the run-level values", ErrNaN)
			}
		}
	}
	return nil
}

// meanSD is the mean and the sample standard deviation (n-1; 0 for one value).
func meanSD(xs []float64) (mean, sd float64) {
	for _, v := range xs {
		mean += v
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range xs {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

func twoSidedP(t, df float64) float64 {
	return math.Min(1, 2*distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t)))
}

func tQuantile(p, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// rel is d / |base|, NaN when base is 0.
func rel(d, base float64) float64 {
	if base == 0 {
		return math.NaN()
	}
	return d / math.Abs(base)
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", v*100)
}

func pctRange(lo, hi float64) string { return "[" + pct(lo) + ", " + pct(hi) + "]" }

func fmtPValue(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", p)
}
