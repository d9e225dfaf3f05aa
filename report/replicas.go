package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// FileReplicas is the per-replica chart.
const FileReplicas = "replicas.png"

// hasReplicas reports whether some run has per-replica engine figures.
func hasReplicas(res *result.Results) bool {
	for _, r := range res.Runs {
		if len(r.Engine.Replicas) > 0 {
			return true
		}
	}
	return false
}

// replicaColumns are the engine columns of the table, per replica.
var replicaColumns = []string{KeyEngineTTFT, KeyQueue, KeyE2EEngine}

// ReplicaChart renders replicas.png: each replica's engine TTFT, queue
// wait and E2E means as bars, one group per run and replica, with the
// requests it finished in the group's label.
func ReplicaChart(res *result.Results) ([]byte, error) {
	t := &TableModel{}
	for _, c := range tableColumns {
		if slices.Contains(replicaColumns, c.Key) {
			t.Columns = append(t.Columns, c)
		}
	}
	multi := len(res.Runs) > 1
	for _, run := range res.Runs {
		for _, rp := range run.Engine.Replicas {
			label := rp.Name + " (" + requestsText(rp.Requests) + " req)"
			if multi {
				label = RunLabel(run.Name) + ": " + label
			}
			row := Row{Run: run.Name, Label: label}
			for _, c := range t.Columns {
				v, ok := histMean(replicaHist(&rp, c.Key))
				cell := Cell{Value: v, OK: ok}
				if !ok {
					cell.Note = t.note("no requests or not exported by this replica")
				}
				row.Cells = append(row.Cells, cell)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("replica chart: no per-replica figures")
	}
	return barChart(res, t, "Engine means by replica")
}

func replicaHist(r *result.Replica, key string) *result.Hist {
	switch key {
	case KeyEngineTTFT:
		return r.TTFTS
	case KeyQueue:
		return r.QueueS
	case KeyE2EEngine:
		return r.E2ES
	}
	return nil
}

func requestsText(v *float64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprintf("%g", *v)
}

// writeReplicas writes a run's per-replica table beside the sum.
func writeReplicas(b *strings.Builder, r *result.Run) {
	reps := r.Engine.Replicas
	if len(reps) == 0 {
		return
	}
	kv := slices.ContainsFunc(reps, func(rp result.Replica) bool { return rp.KVUsage != nil })
	hit := slices.ContainsFunc(reps, func(rp result.Replica) bool { return rp.PrefixCacheHitRate != nil })
	b.WriteString("Per replica (engine clock, means):\n\n| replica | requests | TTFT (s) | queue wait (s) | E2E (s) |")
	align := "\n|---|---:|---:|---:|---:|"
	if kv {
		b.WriteString(" KV usage mean / max |")
		align += "---:|"
	}
	if hit {
		b.WriteString(" prefix cache hit rate |")
		align += "---:|"
	}
	b.WriteString(align + "\n")
	for _, rp := range reps {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |", mdEscape(rp.Name), requestsText(rp.Requests),
			meanText(rp.TTFTS), meanText(rp.QueueS), meanText(rp.E2ES))
		if kv {
			if g := rp.KVUsage; g != nil {
				fmt.Fprintf(b, " %.1f%% / %.1f%% |", 100*g.Mean, 100*g.Max)
			} else {
				b.WriteString(" - |")
			}
		}
		if hit {
			b.WriteString(" " + percentText(rp.PrefixCacheHitRate) + " |")
		}
		b.WriteString("\n")
	}
	sum := "-"
	if rc := r.Engine.Reconciliation; rc != nil {
		sum = fmt.Sprintf("%g", rc.EngineCount)
	}
	fmt.Fprintf(b, "| **all** | %s | %s | %s | %s |", sum, meanText(r.Engine.TTFTS), meanText(r.Engine.QueueS), meanText(r.Engine.E2ES))
	if kv {
		b.WriteString(" |")
	}
	if hit {
		b.WriteString(" " + percentText(r.Engine.PrefixCacheHitRate) + " |")
	}
	b.WriteString("\n\n")
	if rc := r.Engine.Reconciliation; rc != nil && len(rc.IdleReplicas) > 0 {
		fmt.Fprintf(b, "**Idle replicas**: %s finished none of the run's requests.\n\n", mdEscape(strings.Join(rc.IdleReplicas, ", ")))
	}
}

// meanText is a histogram's mean for a table cell, "-" without one.
func meanText(h *result.Hist) string {
	if m, ok := histMean(h); ok {
		return fmt.Sprintf("%.4f", m)
	}
	return "-"
}

func percentText(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100**v)
}
