package report

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// writeEnergy writes report.md's energy lines: each run's GPU energy and
// joules per output token, where a DCGM exporter's counter gave them.
func writeEnergy(b *strings.Builder, res *result.Results) {
	var lines []string
	for _, run := range res.Runs {
		e := run.Engine.GPUEnergyJ
		if e == nil {
			continue
		}
		line := fmt.Sprintf("- **%s:** %.1f J", mdEscape(RunLabel(run.Name)), *e)
		if per := run.Engine.JoulesPerOutputToken; per != nil {
			line += fmt.Sprintf(", %.3g J per output token", *per)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## Energy\n\nThe GPUs' energy over each run (the delta of DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION between the " +
		"before- and after-run scrapes, summed over GPUs) and per output token the engine counted. The bundled engine's " +
		"series come from its step physics: each GPU at its profile's board power while a step runs, idle power between.\n\n")
	b.WriteString(strings.Join(lines, "\n") + "\n\n")
}
