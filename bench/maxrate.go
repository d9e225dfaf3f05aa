package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/option"
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
	// Recheck re-runs the answer's rate with fresh seeds (another arrival
	// schedule, other prompts) once the bracket is closed, up to
	// MaxRechecks times: a rate holds only if every run at it held, so an
	// answer that held by the luck of one schedule is not reported; a
	// failed re-check makes it the bracket's top and the search goes on
	// below it. The re-checks do not count against MaxSteps.
	Recheck bool
	// WarmupOnce keeps Base's warm-up for the first step only: the later
	// steps find the same server warm (tune: one warm-up per server).
	WarmupOnce bool
	Log        io.Writer
	// Clock is the time Start, the runs' names, the log and the notes give
	// rates in (the zero Clock: wall); Base's SLO is in wall time already,
	// and results.json's max_rate keeps wall-clock rates.
	Clock result.Clock
}

// MaxRechecks bounds MaxRateSearch's re-checks.
const MaxRechecks = 3

// recheckSuffix ends a re-check run's name: "rate=9.5 recheck 1".
const recheckSuffix = " recheck "

// recheckSeedStride separates the re-checks' seeds from the search's.
const recheckSeedStride = 7919

// ParseTarget reads --find-max-rate's "90%" (or "90") as a percentage.
func ParseTarget(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || !(v > 0 && v <= 100) {
		return 0, fmt.Errorf("%q: expected an attainment percentage in (0, 100], e.g. 90%%", s)
	}
	return v, nil
}

// WithDefaults is m with its zero Start, MaxSteps and Precision set to
// their defaults and Base completed (RunSpec.WithDefaults); m stays as it is.
func (m MaxRateSearch) WithDefaults() MaxRateSearch {
	m.Base = m.Base.WithDefaults()
	if m.Start == 0 {
		m.Start = DefaultMaxRateStart
	}
	if m.MaxSteps == 0 {
		m.MaxSteps = DefaultMaxRateSteps
	}
	if m.Precision == 0 {
		m.Precision = DefaultMaxRatePrecision
	}
	return m
}

// Validate checks the search, its zero fields as their defaults; it
// changes nothing.
func (m *MaxRateSearch) Validate() error {
	c := m.WithDefaults()
	if !(c.Target > 0 && c.Target <= 100) {
		return option.Errorf("Target", c.Target, "expected an attainment percentage in (0, 100]")
	}
	if c.Base.SLO.IsZero() {
		return option.Errorf("Target", nil, "{Target} needs {SLO}: the attainment it keeps is of an SLO")
	}
	if !(c.Start > 0) || math.IsInf(c.Start, 0) {
		return option.Errorf("Start", c.Start, "expected a first rate > 0 requests/s")
	}
	if c.MaxSteps < 1 || c.MaxSteps > 100 {
		return option.Errorf("MaxSteps", c.MaxSteps, "expected 1-100 runs")
	}
	if !(c.Precision > 0 && c.Precision < 1) {
		return fmt.Errorf("search precision %g: expected a fraction in (0, 1)", c.Precision)
	}
	_, err := c.spec(c.Start)
	return err
}

// spec is the run at rate, as a one-level rate sweep makes it.
func (m *MaxRateSearch) spec(rate float64) (RunSpec, error) {
	runs, err := Sweep{Rates: []float64{rate}, Clock: m.Clock}.Runs(m.Base)
	if err != nil {
		return RunSpec{}, err
	}
	return runs[0], nil
}

// bracket reads the search's state from the runs so far: lo is the highest
// rate at which every run held the target (0: none), hi the lowest above lo
// at which one did not (0: none), steps the search's runs, rechecks those
// of them that re-checked an answer; rates in the search's clock.
func (m *MaxRateSearch) bracket(runs []result.Run) (lo, hi float64, steps, rechecks int) {
	missed := map[float64]bool{}
	for _, r := range runs {
		if r.Workload.Mode != workload.ModeRate || r.Goodput == nil {
			continue
		}
		steps++
		if isRecheck(&r) {
			rechecks++
		}
		if !m.holds(&r) {
			missed[m.rate(&r)] = true
		}
	}
	for _, r := range runs {
		if r.Workload.Mode == workload.ModeRate && r.Goodput != nil && !missed[m.rate(&r)] {
			lo = max(lo, m.rate(&r))
		}
	}
	for rate := range missed {
		if rate > lo && (hi == 0 || rate < hi) {
			hi = rate
		}
	}
	return lo, hi, steps, rechecks
}

func isRecheck(r *result.Run) bool { return strings.Contains(r.Name, recheckSuffix) }

// rate is run r's rate in the search's clock, as it named the run (rounded
// as the names are, so a converted rate equals the one tried).
func (m *MaxRateSearch) rate(r *result.Run) float64 {
	if !m.Clock.Modelled() {
		return r.Workload.Rate
	}
	return roundRate(m.Clock.RateToModelled(r.Workload.Rate))
}

// runsAt counts the search's runs at rate (in its clock).
func (m *MaxRateSearch) runsAt(runs []result.Run, rate float64) int {
	n := 0
	for _, r := range runs {
		if r.Workload.Mode == workload.ModeRate && r.Goodput != nil && m.rate(&r) == rate {
			n++
		}
	}
	return n
}

// holds reports whether run r met the SLO: its percentile keys within
// bounds and its attainment of the others at the target.
func (m *MaxRateSearch) holds(r *result.Run) bool { return r.Goodput.Held(m.Target) }

// verdictText is a run's attainment and percentile keys, for the log, in
// the search's clock.
func (m *MaxRateSearch) verdictText(g *result.Goodput) string {
	s := fmt.Sprintf("attainment %.1f%% (%d of %d)", g.Attainment, g.Attained, g.Requests)
	for _, p := range g.Percentiles {
		op := "<="
		if !p.Met {
			op = ">"
		}
		s += fmt.Sprintf(", %s %.4g s %s %.4g s", p.Key, m.Clock.ToModelled(p.ValueS), op, m.Clock.ToModelled(p.LimitS))
	}
	return s
}

// Next is the run after runs, or false when the search is done. It logs the
// last run's verdict and what it does next.
func (m *MaxRateSearch) Next(runs []result.Run) (RunSpec, bool) {
	lo, hi, steps, rechecks := m.bracket(runs)
	if steps > 0 {
		last := &runs[len(runs)-1]
		verdict := "holds"
		if !m.holds(last) {
			verdict = "misses"
		}
		what := fmt.Sprintf("step %d/%d", steps-rechecks, m.MaxSteps)
		if isRecheck(last) {
			what = fmt.Sprintf("re-check %d/%d (fresh seeds)", rechecks, MaxRechecks)
		}
		m.logf("find-max-rate: %s: rate %s req/s: %s %s the %g%% target\n",
			what, fmtRate(m.rate(last)), m.verdictText(last.Goodput), verdict, m.Target)
	}
	next, ok := m.nextRate(runs, lo, hi, steps-rechecks)
	if !ok {
		return m.recheck(runs, lo, steps, rechecks)
	}
	spec, err := m.spec(next)
	if err != nil {
		m.logf("find-max-rate: %v\n", err)
		return RunSpec{}, false
	}
	spec.Workload.Offset += steps * levelStride // fresh prompts: no step is served from an earlier step's prefix cache
	if m.WarmupOnce && steps > 0 {
		spec.Workload.Warmup = 0
	}
	return spec, true
}

// nextRate is the search's next rate, or false once the bracket is closed
// (or the steps are spent).
func (m *MaxRateSearch) nextRate(runs []result.Run, lo, hi float64, steps int) (float64, bool) {
	if steps >= m.MaxSteps {
		return 0, false
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
			return 0, false
		}
	case hi/lo-1 <= m.Precision:
		return 0, false
	default:
		next = math.Sqrt(lo * hi)
	}
	next = roundRate(next)
	if m.runsAt(runs, next) > 0 {
		return 0, false // the bracket is finer than the rates' rounding
	}
	return next, true
}

// recheck is the run re-checking the answer lo with fresh seeds, or false
// when there is nothing to re-check (no answer, already re-checked, the
// re-checks spent, or Recheck off).
func (m *MaxRateSearch) recheck(runs []result.Run, lo float64, steps, rechecks int) (RunSpec, bool) {
	if !m.Recheck || lo == 0 || m.runsAt(runs, lo) > 1 || rechecks >= MaxRechecks {
		return RunSpec{}, false
	}
	spec, err := m.spec(lo)
	if err != nil {
		m.logf("find-max-rate: %v\n", err)
		return RunSpec{}, false
	}
	spec.Name += recheckSuffix + strconv.Itoa(rechecks+1)
	if m.WarmupOnce {
		spec.Workload.Warmup = 0
	}
	spec.Workload.Seed += int64(rechecks+1) * recheckSeedStride
	spec.Workload.Offset += steps * levelStride
	return spec, true
}

// Result summarizes the search over runs (results.json's max_rate).
func (m *MaxRateSearch) Result(runs []result.Run) *result.MaxRate {
	lo, hi, steps, rechecks := m.bracket(runs)
	mr := &result.MaxRate{Target: m.Target, SLO: m.Base.SLO.String(), RatePerS: m.Clock.RateFromModelled(lo),
		MissedAtPerS: m.Clock.RateFromModelled(hi), Steps: steps, Rechecks: rechecks}
	mr.Confirmed = m.Recheck && lo > 0 && m.runsAt(runs, lo) > 1
	switch {
	case m.Recheck && lo > 0 && !mr.Confirmed:
		mr.Note = fmt.Sprintf("%s req/s was not confirmed by a re-check with fresh seeds (%d re-checks made)", fmtRate(lo), rechecks)
	case steps == 0:
		mr.Note = "no run finished"
	case lo == 0:
		mr.Note = fmt.Sprintf("no rate tried (down to %s req/s) held the target", fmtRate(hi))
	case hi == 0:
		mr.Note = "every rate tried held the target: the highest is a lower bound (raise --max-steps)"
	case hi/lo-1 > m.Precision:
		mr.Note = fmt.Sprintf("search stopped at %d steps with the bracket %s-%s req/s still wider than %g%%", steps-rechecks, fmtRate(lo), fmtRate(hi), 100*m.Precision)
	}
	m.logf("find-max-rate: %s\n", m.Clock.ViewMaxRate(mr))
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
