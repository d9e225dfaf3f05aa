package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
)

// Defaults of MaxRateSearch.
const (
	DefaultMaxRateSteps     = 10
	DefaultMaxRateStart     = 1.0  // requests/s
	DefaultMaxRatePrecision = 0.05 // stop once the bracket is within 5%
	minSearchRate           = 0.01 // requests/s: below it the search gives up
)

// MaxRateSearch finds the highest open-loop request rate whose SLO
// attainment stays at or above Target percent (sweep --find-max-rate). Each
// step is a normal run at one rate, named "rate=R": the rate doubles from
// Start while attainment holds (halves while it does not), then the bracket
// between the highest rate that held and the lowest above it that did not
// is bisected (geometric mean, as the loads span decades) until it is
// within Precision or MaxSteps runs were made. Runs at any rate stay in the
// results like any sweep level. Not safe for concurrent use.
type MaxRateSearch struct {
	Target    float64 // attainment percent to keep, (0, 100]
	Start     float64 // first rate, requests/s (0: DefaultMaxRateStart)
	MaxSteps  int     // most runs (0: DefaultMaxRateSteps)
	Precision float64 // relative width of the final bracket (0: DefaultMaxRatePrecision)
	Base      RunSpec // the workload of every step; the search sets the rate
	Log       io.Writer
}

// ParseTarget reads --find-max-rate's "90%" (or "90") as a percentage.
func ParseTarget(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || !(v > 0 && v <= 100) {
		return 0, fmt.Errorf("%q: expected an attainment percentage in (0, 100], e.g. 90%%", s)
	}
	return v, nil
}

// Validate checks the search and fills its defaults.
func (m *MaxRateSearch) Validate() error {
	if !(m.Target > 0 && m.Target <= 100) {
		return fmt.Errorf("--find-max-rate %g: expected an attainment percentage in (0, 100]", m.Target)
	}
	if m.Base.SLO.IsZero() {
		return errors.New("--find-max-rate needs --slo: the attainment it keeps is of an SLO")
	}
	if m.Start == 0 {
		m.Start = DefaultMaxRateStart
	}
	if !(m.Start > 0) || math.IsInf(m.Start, 0) {
		return fmt.Errorf("--rate %g: expected a first rate > 0 requests/s", m.Start)
	}
	if m.MaxSteps == 0 {
		m.MaxSteps = DefaultMaxRateSteps
	}
	if m.MaxSteps < 1 || m.MaxSteps > 100 {
		return fmt.Errorf("--max-steps %d: expected 1-100 runs", m.MaxSteps)
	}
	if m.Precision == 0 {
		m.Precision = DefaultMaxRatePrecision
	}
	if !(m.Precision > 0 && m.Precision < 1) {
		return fmt.Errorf("search precision %g: expected a fraction in (0, 1)", m.Precision)
	}
	_, err := m.spec(m.Start)
	return err
}

// spec is the run at rate, as a one-level rate sweep makes it.
func (m *MaxRateSearch) spec(rate float64) (RunSpec, error) {
	runs, err := Sweep{Rates: []float64{rate}}.Runs(m.Base)
	if err != nil {
		return RunSpec{}, err
	}
	return runs[0], nil
}

// bracket reads the search's state from the runs so far: lo is the highest
// rate that held the target (0: none), hi the lowest above lo that did not
// (0: none), steps the search's runs.
func (m *MaxRateSearch) bracket(runs []result.Run) (lo, hi float64, steps int) {
	for _, r := range runs {
		if r.Workload.Mode != workload.ModeRate || r.Goodput == nil {
			continue
		}
		steps++
		if m.holds(&r) {
			lo = max(lo, r.Workload.Rate)
		}
	}
	for _, r := range runs {
		if r.Workload.Mode == workload.ModeRate && r.Goodput != nil && !m.holds(&r) && r.Workload.Rate > lo && (hi == 0 || r.Workload.Rate < hi) {
			hi = r.Workload.Rate
		}
	}
	return lo, hi, steps
}

func (m *MaxRateSearch) holds(r *result.Run) bool {
	return r.Goodput.Requests > 0 && r.Goodput.Attainment >= m.Target
}

// Next is the run after runs, or false when the search is done. It logs the
// last run's verdict and what it does next.
func (m *MaxRateSearch) Next(runs []result.Run) (RunSpec, bool) {
	lo, hi, steps := m.bracket(runs)
	if steps > 0 {
		last := &runs[len(runs)-1]
		verdict := "holds"
		if !m.holds(last) {
			verdict = "misses"
		}
		m.logf("find-max-rate: step %d/%d: rate %s req/s: attainment %.1f%% (%d of %d) %s the %g%% target\n",
			steps, m.MaxSteps, fmtRate(last.Workload.Rate), last.Goodput.Attainment, last.Goodput.Attained, last.Goodput.Requests, verdict, m.Target)
	}
	if steps >= m.MaxSteps {
		return RunSpec{}, false
	}
	var next float64
	switch {
	case steps == 0:
		next = m.Start
	case hi == 0:
		next = 2 * lo
	case lo == 0:
		next = hi / 2
		if next < minSearchRate {
			return RunSpec{}, false
		}
	case hi/lo-1 <= m.Precision:
		return RunSpec{}, false
	default:
		next = math.Sqrt(lo * hi)
	}
	next = roundRate(next)
	for _, r := range runs {
		if r.Workload.Mode == workload.ModeRate && r.Workload.Rate == next {
			return RunSpec{}, false // the bracket is finer than the rates' rounding
		}
	}
	spec, err := m.spec(next)
	if err != nil {
		m.logf("find-max-rate: %v\n", err)
		return RunSpec{}, false
	}
	spec.Workload.Offset += steps * levelStride // fresh prompts: no step is served from an earlier step's prefix cache
	return spec, true
}

// Result summarizes the search over runs (results.json's max_rate).
func (m *MaxRateSearch) Result(runs []result.Run) *result.MaxRate {
	lo, hi, steps := m.bracket(runs)
	mr := &result.MaxRate{Target: m.Target, SLO: m.Base.SLO.String(), RatePerS: lo, MissedAtPerS: hi, Steps: steps}
	switch {
	case steps == 0:
		mr.Note = "no run finished"
	case lo == 0:
		mr.Note = fmt.Sprintf("no rate tried (down to %s req/s) held the target", fmtRate(hi))
	case hi == 0:
		mr.Note = "every rate tried held the target: the highest is a lower bound (raise --max-steps)"
	case hi/lo-1 > m.Precision:
		mr.Note = fmt.Sprintf("search stopped at %d steps with the bracket %s-%s req/s still wider than %g%%", steps, fmtRate(lo), fmtRate(hi), 100*m.Precision)
	}
	m.logf("find-max-rate: %s\n", mr)
	return mr
}

func (m *MaxRateSearch) logf(format string, a ...any) {
	if m.Log != nil {
		fmt.Fprintf(m.Log, format, a...)
	}
}

// roundRate keeps 3 significant digits, so run names stay readable.
func roundRate(r float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(r, 'g', 3, 64), 64)
	return v
}

func fmtRate(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }
