package report

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// KeyUsable is the table column of a structured workload's time to usable
// output.
const KeyUsable = "usable_s"

// usableColumn joins the table, beside first visible output and E2E, when a
// run's reader is a program (--response-format, --tools).
var usableColumn = Column{KeyUsable, "Usable output (client, median)", "client.usable", "client", "median", "s", 3}

// usableNear is how close to E2E a run's median time to usable output must
// come for the report to say streaming gains a program nothing: within
// this share of E2E, usableNearAbs or two tokens' time (TPOT), whichever
// is largest (the engine's end-of-turn step and the closing chunks come
// after the value closes).
const (
	usableNear    = 0.05
	usableNearAbs = 0.005 // seconds
)

// Structured reports whether a run of res timed usable output.
func Structured(res *result.Results) bool {
	for _, r := range res.Runs {
		if r.Client.UsableS != nil || r.Client.Unusable > 0 || r.Workload.ResponseFormat != "" || r.Workload.ToolsFile != "" {
			return true
		}
	}
	return false
}

// withUsable inserts the usable-output column after first visible output.
func withUsable(cols []Column) []Column {
	for i, c := range cols {
		if c.Key == KeyFirstVisible {
			return append(cols[:i+1:i+1], append([]Column{usableColumn}, cols[i+1:]...)...)
		}
	}
	return append(cols, usableColumn)
}

// usableValue is run's table figure for KeyUsable, or why it is missing.
func usableValue(run *result.Run) (float64, bool, string) {
	c := run.Client
	if c.UsableS == nil && c.Unusable > 0 {
		return 0, false, "no answer of this run parsed complete (and valid): see usable_error in requests.jsonl"
	}
	if c.UsableS == nil && run.Workload.ResponseFormat == "" && run.Workload.ToolsFile == "" {
		return 0, false, "not a structured workload"
	}
	return clientMedian(c.UsableS)
}

// writeUsable writes the section on a program reading the answer: per run
// first visible output, usable output and E2E, and what streaming gains
// the program.
func writeUsable(b *strings.Builder, res *result.Results) {
	if !Structured(res) {
		return
	}
	b.WriteString("## When the reader is a program\n\n" +
		"A program cannot act on half a JSON value: its answer is usable when the streamed JSON (or the tool " +
		"call's arguments) first parses complete and valid for its schema, not at the first visible token. " +
		"Medians over each run's successful requests, client clock.\n\n")
	b.WriteString("| Run | Requests | First visible output | Usable output | E2E | E2E - usable | Never usable |\n" +
		"|---|---:|---:|---:|---:|---:|---:|\n")
	var verdicts []string
	for _, r := range res.Runs {
		c := r.Client
		if c.E2ES == nil || c.FirstVisibleS == nil {
			continue
		}
		usable, gap := "n/a", "n/a"
		if c.UsableS != nil {
			usable, gap = secsText(c.UsableS.Median), secsText(c.E2ES.Median-c.UsableS.Median)
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %d |\n", mdEscape(RunLabel(r.Name)), r.OK,
			secsText(c.FirstVisibleS.Median), usable, secsText(c.E2ES.Median), gap, c.Unusable)
		if v := usableVerdict(&r); v != "" {
			verdicts = append(verdicts, v)
		}
	}
	b.WriteString("\n")
	for _, v := range verdicts {
		b.WriteString("- " + v + "\n")
	}
	if len(verdicts) > 0 {
		b.WriteString("\n")
	}
}

// usableVerdict says, for a streaming run, what streaming gained a program
// (one run's requests: its medians and range, n).
func usableVerdict(r *result.Run) string {
	c := r.Client
	if !r.Stream || c.UsableS == nil || c.E2ES == nil || c.FirstVisibleS == nil {
		return ""
	}
	u, e, fv := c.UsableS.Median, c.E2ES.Median, c.FirstVisibleS.Median
	label := mdEscape(RunLabel(r.Name))
	near := max(usableNear*e, usableNearAbs)
	if c.TPOTS != nil {
		near = max(near, 2*c.TPOTS.Median)
	}
	if e-u <= near {
		return fmt.Sprintf("**%s:** streaming gains a program nothing here. Its first visible output came at %s, "+
			"but the answer was usable only at %s (median; %s to %s over %d requests of this one run), %s before "+
			"E2E %s: the JSON closes with the answer, so the program waits as long as it would without streaming.",
			label, secsText(fv), secsText(u), secsText(c.UsableS.Min), secsText(c.UsableS.Max), c.UsableS.N, secsText(e-u), secsText(e))
	}
	return fmt.Sprintf("**%s:** the answer was usable at %s (median over %d requests of this one run), %s before "+
		"E2E %s: a program streaming it can act that much earlier (first visible output %s).",
		label, secsText(u), c.UsableS.N, secsText(e-u), secsText(e), secsText(fv))
}
