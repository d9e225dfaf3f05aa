package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// Gate compares a run just made (newRes and its records, not necessarily
// saved yet) with the baseline in baseDir and writes the report to w in
// format. It is `--baseline DIR` of `servebench table` and `run`.
// regressed is true when any figure regressed (exit 1); err wraps
// ErrInput or ErrMismatch (exit 2) or ErrInvalidRun (exit 3). The format is
// checked before anything is loaded.
func Gate(w io.Writer, baseDir string, newRes *result.Results, newRecs []result.Record, opts Options, format string) (regressed bool, err error) {
	wr, err := WriterFor(format)
	if err != nil {
		return false, err
	}
	base, err := Load(baseDir)
	if err != nil {
		return false, fmt.Errorf("baseline: %w", err)
	}
	rep, err := Compare(base, &Side{Path: "this run", Results: newRes, Records: newRecs}, opts)
	if err != nil {
		return false, err
	}
	if err := wr(w, rep); err != nil {
		return false, err
	}
	return rep.Regressed(), nil
}

// Help describes the quantities, their statistics and the default limits,
// for the command's help text.
func Help() string {
	var b strings.Builder
	b.WriteString("Quantities (QUANTITY: statistics; * = shown by default):\n")
	for _, q := range quantities {
		stats := make([]string, len(q.Stats))
		for i, s := range q.Stats {
			stats[i] = s
			if s == q.Headline {
				stats[i] += "*"
			}
		}
		fmt.Fprintf(&b, "  %-22s %s  (%s)\n", q.Name, strings.Join(stats, " "), q.Doc)
	}
	b.WriteString("Default limits (--max-regression KEY=off removes one; KEY=LIMIT replaces it):\n")
	for _, t := range DefaultThresholds() {
		fmt.Fprintf(&b, "  %s=%s\n", t.Key(), t)
	}
	return b.String()
}
