package report

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// saturatedLabel marks a saturated run's row in the table.
const saturatedLabel = " (saturated)"

// saturatedCaption explains saturatedLabel under the table.
const saturatedCaption = " Saturated: the level's wait for a first token grew without bound (a slope test over the steady window)," +
	" so it stopped sending early; its figures are a queue's, not the server's steady state."

// saturated reports whether run's saturation test held.
func saturated(run *result.Run) bool { return run.Saturation != nil && run.Saturation.Saturated }

// writeSteady writes report.md's steady-state section: each run's window
// (ramp-up and drain left out), its in-flight count against its target,
// the window's throughput and tails, and the saturation test.
func writeSteady(b *strings.Builder, res *result.Results) {
	var rows []string
	for i := range res.Runs {
		run := &res.Runs[i]
		st := run.Steady
		if st == nil {
			continue
		}
		verdict := "-"
		if s := run.Saturation; s != nil {
			verdict = fmt.Sprintf("not saturated (t = %.1f, %d requests)", s.T, s.Points)
			if s.Points < result.SaturationMinPoints {
				verdict = fmt.Sprintf("not judged (%d requests in the window, %d needed)", s.Points, result.SaturationMinPoints)
			}
			if s.Saturated {
				verdict = fmt.Sprintf("**saturated** (t = %.1f, wait %s -> %s; sending stopped at %s)", s.T, secsText(s.WaitFirstS), secsText(s.WaitLastS), secsText(s.StoppedAtS))
			}
		}
		if st.Note != "" {
			rows = append(rows, fmt.Sprintf("| %s | %s | | | | | %s |", mdEscape(RunLabel(run.Name)), mdEscape(st.Note), verdict))
			continue
		}
		p99 := "-"
		if st.E2E != nil {
			p99 = secsText(st.E2E.P99)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s - %s | %.1f (%.1f, %d-%d) | %d | %.2f req/s, %.1f tok/s | %s | %s |",
			mdEscape(RunLabel(run.Name)), secsText(st.StartS), secsText(st.EndS), st.InFlightTarget, st.InFlightMean, st.InFlightMin, st.InFlightMax,
			st.Requests, st.Throughput.RequestsPerS, st.Throughput.OutputTokensPerS, p99, verdict))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Steady state\n\nEach run's window from its first answer (before it the in-flight count only grows) to its last send " +
		"(after it the count only falls): ramp-up and drain left out. In-flight: the target (the concurrency, or the rate x mean E2E " +
		"by Little's law), then the count over the window (mean, min-max). Throughput counts the window's completions; E2E p99 " +
		"is over the requests sent in it.\n\n")
	b.WriteString("| Run | Window | In-flight target (mean, range) | Requests | Throughput | E2E p99 | Saturation |\n|---|---|---|---:|---|---:|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

// loadValue is a load column's figure (TableOptions.Load): over the run's
// steady-state window where it has one, else over the whole run.
func loadValue(run *result.Run, key string) (float64, bool, string) {
	fv, e2e, tp, ok := run.Client.FirstVisibleS, run.Client.E2ES, run.Throughput, run.OK > 0
	if st := run.Steady; st != nil && st.Note == "" && st.Requests > 0 {
		fv, e2e, tp, ok = st.FirstVisible, st.E2E, st.Throughput, st.Completed > 0
	}
	switch key {
	case KeyFirstVisP99:
		return clientP99(fv)
	case KeyE2EClientP99:
		return clientP99(e2e)
	}
	if !ok {
		return 0, false, "no successful requests in this run"
	}
	if key == KeyRequestsPerS {
		return tp.RequestsPerS, true, ""
	}
	return tp.OutputTokensPerS, true, ""
}
