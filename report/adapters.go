package report

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// writeAdapters is a run's per-adapter table (LoRA mixes): each adapter's
// requests and client medians, the base model as "(base)". Nothing
// without adapters.
func writeAdapters(b *strings.Builder, r *result.Run) {
	if len(r.Adapters) == 0 {
		return
	}
	mix := ""
	if r.Workload.LoRA != "" {
		mix = fmt.Sprintf(" (mix `%s`)", r.Workload.LoRA)
	}
	fmt.Fprintf(b, "- Per LoRA adapter%s: client clock, medians over each adapter's successful requests; "+
		"the adapters of one run share its batches, so compare them within the run\n\n", mix)
	b.WriteString("| Adapter | Requests | OK | First visible (s) | First token (s) | E2E (s) |\n|---|---|---|---|---|---|\n")
	for _, a := range r.Adapters {
		name := a.Name
		if name == "" {
			name = "(base)"
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s | %s | %s |\n", mdEscape(name), a.Requests, a.OK,
			med(a.Client.FirstVisibleS), med(a.Client.FirstTokenS), med(a.Client.E2ES))
	}
	b.WriteString("\n")
	if l := r.Engine.LoRA; l != nil {
		fmt.Fprintf(b, "- Engine LoRA slots (vllm:lora_requests_info, last seen): max_lora %d, running %s, waiting %s\n",
			l.MaxLoRA, orDash(strings.Join(l.Running, ",")), orDash(strings.Join(l.Waiting, ",")))
	}
}

// med is s's median in seconds, "-" when absent.
func med(s *stats.Summary) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.4f", s.Median)
}
