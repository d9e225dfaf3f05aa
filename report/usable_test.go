package report

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

func summary(median, lo, hi float64, n int) *stats.Summary {
	return &stats.Summary{Mean: median, Median: median, Min: lo, Max: hi, N: n}
}

// TestUsableSection: the table gains the usable column right after first
// visible output, and the section's verdict follows the numbers: usable
// at E2E means streaming gains a program nothing; usable well before E2E
// says how much earlier it can act.
func TestUsableSection(t *testing.T) {
	run := func(name string, stream bool, fv, usable, e2e float64) result.Run {
		return result.Run{Name: name, Stream: stream, OK: 10, Workload: result.Workload{ResponseFormat: "json"},
			Client: result.ClientStats{FirstVisibleS: summary(fv, fv, fv, 10), UsableS: summary(usable, usable*0.9, usable*1.1, 10),
				E2ES: summary(e2e, e2e, e2e, 10), Unusable: 1}}
	}
	short := run("short", true, 0.03, 0.185, 0.2) // 15 ms short of E2E: one token's step
	short.Client.TPOTS = summary(0.015, 0.015, 0.015, 10)
	res := &result.Results{Runs: []result.Run{
		run("streaming", true, 0.03, 3.851, 3.853),
		run("early", true, 0.03, 1.2, 3.85),
		run("non-streaming", false, 3.85, 3.85, 3.85),
		short,
	}}
	tm := NewTableModel(res)
	if tm.Columns[0].Key != KeyFirstVisible || tm.Columns[1].Key != KeyUsable || tm.Columns[2].Key != KeyE2EClient {
		t.Fatalf("columns %v", tm.Columns)
	}
	if c := tm.Rows[1].Cells[1]; !c.OK || c.Value != 1.2 {
		t.Errorf("usable cell %+v", c)
	}
	var b strings.Builder
	writeUsable(&b, res)
	text := b.String()
	for _, want := range []string{
		"| Streaming | 10 | 0.03 s | 3.85 s | 3.85 s | 0.002 s | 1 |",
		"**Streaming:** streaming gains a program nothing here. Its first visible output came at 0.03 s, but the answer was usable only at 3.85 s (median; 3.47 s to 4.24 s over 10 requests of this one run), 0.002 s before E2E 3.85 s",
		"**short:** streaming gains a program nothing here.",
		"**early:** the answer was usable at 1.2 s (median over 10 requests of this one run), 2.65 s before E2E 3.85 s",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("section lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "**Non-streaming:**") {
		t.Errorf("a verdict on the non-streaming run:\n%s", text)
	}
	// A run that is not structured has neither the column nor the section.
	plain := &result.Results{Runs: []result.Run{{Name: "streaming", Client: result.ClientStats{E2ES: summary(1, 1, 1, 1)}}}}
	b.Reset()
	writeUsable(&b, plain)
	if Structured(plain) || b.Len() > 0 || len(NewTableModel(plain).Columns) != len(tableColumns) {
		t.Errorf("plain run: structured %v, section %q", Structured(plain), b.String())
	}
}
