package report

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// writeIncomplete says, at the top of report.md, that the results were
// rebuilt after servebench stopped mid-run.
func writeIncomplete(b *strings.Builder, res *result.Results) {
	if !res.Incomplete {
		return
	}
	var runs []string
	for _, r := range res.Runs {
		if r.Incomplete {
			runs = append(runs, r.Name)
		}
	}
	fmt.Fprintf(b, "> **Incomplete run** (%s): servebench stopped mid-run; these results were rebuilt from %s and the complete lines of %s. "+
		"`servebench compare` refuses them unless `--allow-incomplete`.\n\n", mdEscape(strings.Join(runs, ", ")), result.CheckpointFile, result.RequestsFile)
}

// writeWindows writes the "Over time" section: one table row per
// --interval window of each run, client figures beside engine deltas.
func writeWindows(b *strings.Builder, res *result.Results, embed func(string)) {
	if !hasWindows(res) {
		return
	}
	b.WriteString("## Over time\n\n")
	b.WriteString("Client figures are p50 / p99 over the requests that completed in each window; engine figures are " +
		"means of the /metrics deltas between the window's boundaries, gauges read at its end.\n\n")
	embed(FileTimeseries)
	for _, r := range res.Runs {
		if len(r.Windows) == 0 {
			continue
		}
		fmt.Fprintf(b, "### %s\n\n", mdEscape(r.Name))
		b.WriteString("| window | s | requests | errors | req/s | first token (client) | first visible (client) | E2E (client) | ITL (client) " +
			"| engine TTFT | queue | E2E (engine) | KV usage | preemptions | running / waiting |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for i := range r.Windows {
			writeWindowRow(b, &r.Windows[i])
		}
		b.WriteString("\n")
	}
}

func writeWindowRow(b *strings.Builder, w *result.Window) {
	idx := fmt.Sprint(w.Index)
	if w.Incomplete {
		idx += " (incomplete)"
	}
	fmt.Fprintf(b, "| %s | %.0f-%.0f | %d | %d | %.2f | %s | %s | %s | %s |", idx, w.StartS, w.EndS, w.Requests, w.Requests-w.OK,
		w.Throughput.RequestsPerS, p50p99(w.Client.FirstTokenS), p50p99(w.Client.FirstVisibleS), p50p99(w.Client.E2ES), p50p99(w.Client.ITLS))
	e := w.Engine
	if e == nil {
		b.WriteString(" - | - | - | - | - | - |\n")
		return
	}
	mean := func(h *result.Hist) string {
		if v, ok := histMean(h); ok {
			return secsText(v)
		}
		return "-"
	}
	num := func(v *float64, f string) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf(f, *v)
	}
	kv := "-"
	if e.KVUsage != nil {
		kv = fmt.Sprintf("%.1f%%", 100**e.KVUsage)
	}
	fmt.Fprintf(b, " %s | %s | %s | %s | %s | %s / %s |", mean(e.TTFTS), mean(e.QueueS), mean(e.E2ES), kv,
		num(e.Preemptions, "%.0f"), num(e.Running, "%.0f"), num(e.Waiting, "%.0f"))
	if e.CounterReset {
		b.WriteString(" counters reset (server restart?)")
	}
	b.WriteString("\n")
}

// p50p99 is "p50 / p99" of s, "-" without samples.
func p50p99(s *stats.Summary) string {
	if s == nil {
		return "-"
	}
	return secsText(s.Median) + " / " + secsText(s.P99)
}
