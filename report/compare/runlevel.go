package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// Tests are the valid Options.Test values (--test), in help order.
var Tests = []string{TestAuto, TestRequests}

// Options.Test values.
const (
	// TestAuto judges runs, not requests: across runs (Welch's t-test)
	// with two or more runs a side; one new run against two or more base
	// runs by the base runs' prediction interval; with one run a side by
	// the limits alone (run-to-run noise unknown).
	TestAuto = "auto"
	// TestRequests is the per-request Mann-Whitney test on one run a side
	// (pooled requests with several): servebench's verdicts before run-level
	// statistics, kept so their outputs stay available. Requests of one
	// run share its batch schedule, so it cries wolf between runs of one
	// build (docs/ci-gate.md).
	TestRequests = "requests"
)

// Report.Mode values: which test stands behind the verdicts.
const (
	ModeRuns     = "runs"     // Welch's t-test across runs, n=A+B
	ModeHistory  = "history"  // one new run against the base runs' prediction interval
	ModeLimits   = "limits"   // one run a side: limits only
	ModeRequests = "requests" // per-request Mann-Whitney (TestRequests)
)

// RunLevel is a row's run-level evidence: one value of the statistic per
// run, and the test across them.
type RunLevel struct {
	Test     string   `json:"test"`
	NBase    int      `json:"n_base"`
	NNew     int      `json:"n_new"`
	ChangeLo *float64 `json:"change_lo"` // 95% interval of the change (prediction interval in history mode); null when base is 0
	ChangeHi *float64 `json:"change_hi"`
	// PRaw is the test's own p-value when Row.P is Holm-adjusted (a
	// gated figure: judgeFamily).
	PRaw *float64  `json:"p_raw,omitempty"`
	Base []float64 `json:"base_values"`
	New  []float64 `json:"new_values"`
}

// pickMode says which test judges a comparison of nb base runs and nn
// new runs.
func pickMode(test string, nb, nn int) (string, error) {
	switch test {
	case TestRequests:
		return ModeRequests, nil
	case "", TestAuto:
	default:
		return "", fmt.Errorf("%w: %w", ErrInput, result.OptionErrorf("Test", test, "want one of %s", strings.Join(Tests, ", ")))
	}
	switch {
	case nb >= 2 && nn >= 2:
		return ModeRuns, nil
	case nb >= 2 && nn == 1:
		return ModeHistory, nil
	}
	return ModeLimits, nil
}

// testDescription is Report.Test for a mode.
func testDescription(mode string, nb, nn int) string {
	switch mode {
	case ModeRuns:
		return fmt.Sprintf("Welch's two-sided t-test across runs (each run's statistic one observation; n=%d+%d runs), 95%% interval of the change; p of the figures with a limit Holm-adjusted over them (the gate fails on any)", nb, nn)
	case ModeHistory:
		return fmt.Sprintf("one new run against %d base runs: two-sided Student-t prediction interval (95%%) from their mean and run-to-run SD; p of the figures with a limit Holm-adjusted over them (the gate fails on any)", nb)
	case ModeLimits:
		return fmt.Sprintf("none across runs: %d+%d runs, run-to-run noise unknown, so verdicts use the limits only; p/req (per-request Mann-Whitney) is shown, not gating, since requests of one run share its batch schedule; repeat runs (--repeats 5) for a test across runs", nb, nn)
	}
	return "two-sided Mann-Whitney U test (normal approximation, tie- and continuity-corrected) on per-request samples, successful measured requests only"
}

// pooled is the side's records of every repeat together: the per-request
// view of a side of several runs.
func pooled(s *Side) []result.Record {
	if len(s.Repeats) < 2 {
		return s.Records
	}
	var all []result.Record
	for _, r := range s.Repeats {
		all = append(all, r.Records...)
	}
	return all
}

// repRun is one repeat's run of a name and its samples.
type repRun struct {
	run *result.Run
	s   *runSamples
}

// repRuns finds run name in each repeat of s (a repeat without it is left out).
func repRuns(s *Side, name string, slo *result.SLO) []repRun {
	var out []repRun
	for _, rep := range s.repeats() {
		i := slices.IndexFunc(rep.Results.Runs, func(r result.Run) bool { return r.Name == name })
		if i < 0 {
			continue
		}
		r := &rep.Results.Runs[i]
		out = append(out, repRun{r, samplesOf(rep.Records, name, r.Workload.OpenLoop(), slo)})
	}
	return out
}

// repeatsDiffer refuses a side of several runs whose workloads for run r
// differ among themselves (several directories a side that are not runs
// of one workload): their spread would be the workloads', not noise.
func repeatsDiffer(s *Side, label string, r *result.Run) error {
	if len(s.Repeats) < 2 || s.Foreign != "" {
		return nil
	}
	for _, rep := range s.Repeats {
		i := slices.IndexFunc(rep.Results.Runs, func(x result.Run) bool { return x.Name == r.Name })
		if i < 0 {
			continue
		}
		if d := workloadDiffs(r, &rep.Results.Runs[i]); len(d) > 0 {
			return &MismatchError{Run: r.Name + " (" + label + " side: " + rep.Path + " against its first run)", Diffs: d}
		}
	}
	return nil
}

// runValue is one run's value of a statistic: what a row shows for a side
// of one run. NaN when the run lacks the quantity.
func runValue(q quantity, stat string, rr repRun) float64 {
	switch q.src {
	case fromSamples:
		return rr.s.stat(q.Name, stat)
	case fromEngine:
		if h := engineHist(&rr.run.Engine, q.Name); h != nil {
			return histStat(h, stat)
		}
	case fromThroughput:
		if stat == "requests_per_s" {
			return rr.run.Throughput.RequestsPerS
		}
		return rr.run.Throughput.OutputTokensPerS
	case fromGoodput:
		if rr.s.attained == nil {
			return math.NaN()
		}
		if stat == "rate_per_s" {
			return perSecond(rr.s.nAttained, rr.run.DurationS)
		}
		return frac(rr.s.nAttained, rr.s.measured)
	case fromErrors:
		return frac(rr.s.failed, rr.s.measured)
	}
	return math.NaN()
}

func values(q quantity, stat string, rs []repRun) []float64 {
	var out []float64
	for _, r := range rs {
		if v := runValue(q, stat, r); !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// rejudge replaces the per-request verdicts of rr's rows by the mode's:
// the run-level test (ModeRuns, ModeHistory) or the limits alone
// (ModeLimits). The per-request p stays, as RequestP.
func rejudge(rr *RunReport, mode string, b, n []repRun, th map[string]Threshold, alpha float64) {
	for i := range rr.Rows {
		row := &rr.Rows[i]
		q, _ := lookupQuantity(row.Quantity)
		row.RequestP, row.P = row.P, nil
		row.Significant, row.Regression, row.Past = false, false, false
		if row.Verdict == VerdictNotJudged {
			continue
		}
		row.Verdict, row.Confirmed, row.confirmedWorse = "", "", false
		if strings.HasPrefix(row.Note, noteEngine) || row.Note == noteThroughput {
			row.Note = ""
		}
		if mode != ModeLimits && !runTest(row, mode, values(q, row.Stat, b), values(q, row.Stat, n)) {
			row.Verdict, row.Note = VerdictNotJudged, "too few runs with this figure"
			continue
		}
		t, has := th[row.Key()]
		if has {
			row.Past = q.past(t, row)
		}
		if mode == ModeLimits {
			judgeRuns(row, q, has, alpha)
		}
	}
}

// judgeFamily judges the rows of a run-level report (ModeRuns,
// ModeHistory) after adjusting the p-values of its gated figures (those
// with a limit, across every run) with Holm's method: the gate fails on
// any of them, so its false-alarm rate is family-wise. Each such row's
// unadjusted p stays in RunLevel.PRaw.
func judgeFamily(rep *Report, alpha float64) {
	var gated []*Row
	for i := range rep.Runs {
		for j := range rep.Runs[i].Rows {
			if row := &rep.Runs[i].Rows[j]; row.Runs != nil && row.P != nil && row.Threshold != "" {
				gated = append(gated, row)
			}
		}
	}
	ps := make([]float64, len(gated))
	for i, row := range gated {
		ps[i] = *row.P
	}
	for i, adj := range stats.Holm(ps) {
		gated[i].Runs.PRaw, gated[i].P = gated[i].P, &adj
	}
	rep.Gated = len(gated)
	for i := range rep.Runs {
		for j := range rep.Runs[i].Rows {
			row := &rep.Runs[i].Rows[j]
			if row.Verdict == "" {
				q, _ := lookupQuantity(row.Quantity)
				judgeRuns(row, q, row.Threshold != "", alpha)
			}
		}
	}
}

// runTest fills a row from its run-level values; false when a side has
// too few.
func runTest(row *Row, mode string, bv, nv []float64) bool {
	lvl := &RunLevel{NBase: len(bv), NNew: len(nv), Base: bv, New: nv}
	switch mode {
	case ModeRuns:
		t, err := stats.CompareRuns(bv, nv, 0)
		if err != nil {
			return false
		}
		lvl.Test = t.N() + " Welch"
		row.Base, row.New, row.P = t.MeanA, t.MeanB, &t.P
		lvl.ChangeLo, lvl.ChangeHi = finite(t.ChangeLo), finite(t.ChangeHi)
	case ModeHistory:
		if len(nv) != 1 {
			return false
		}
		h, err := stats.AgainstHistory(bv, nv[0], 0)
		if err != nil {
			return false
		}
		lvl.Test = fmt.Sprintf("n=%d+1 prediction", h.N)
		row.Base, row.New, row.P = h.Mean, h.Value, &h.P
		lvl.ChangeLo, lvl.ChangeHi = finite(h.ChangeLo), finite(h.ChangeHi)
	}
	row.Runs, row.NBase, row.NNew = lvl, len(bv), len(nv)
	row.Change = relChange(row.Base, row.New)
	return true
}

// judgeRuns sets a row's verdict under a run-level test (P set) or the
// limits alone (P nil: one run a side).
func judgeRuns(row *Row, q quantity, hasThreshold bool, alpha float64) {
	worse := row.New > row.Base
	if !q.higherIsWorse() {
		worse = row.New < row.Base
	}
	if row.P == nil { // limits only
		row.limitsOnly = true
		switch {
		case row.Past && worse:
			row.Regression, row.Verdict = true, VerdictRegression
		case hasThreshold:
			row.Verdict = VerdictWithinLimit
		default:
			row.Verdict = VerdictNoTest
		}
		return
	}
	row.Significant = *row.P < alpha
	testedVerdict(row, worse, hasThreshold)
}

// fmtInterval is "[+1.2%, +7.0%]" or "-".
func fmtInterval(l *RunLevel) string {
	if l == nil || l.ChangeLo == nil || l.ChangeHi == nil {
		return "-"
	}
	return "[" + fmtChange(l.ChangeLo) + ", " + fmtChange(l.ChangeHi) + "]"
}
