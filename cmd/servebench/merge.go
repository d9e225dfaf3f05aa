package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench/fleet"
	"github.com/servebench/servebench/report"
)

func newMergeCmd() *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:   "merge DIR|LOG... --out DIR",
		Short: "Merge the results directories of a sharded run or sweep (--shard K/N) into one",
		Long: `merge combines the shards of one run (servebench run --shard K/N, e.g. the pods of
'servebench k8s job') or sweep (sweep --shard K/N) into one results directory, as if one
machine had sent the whole run; a sweep is merged level by level. It refuses (exit 2)
shards that do not belong together: different runs or levels, a different workload, seed
or N, different planned starts, a shard given twice or missing. A shard is its results
directory, or a saved log holding it (--results-to-log: e.g. 'kubectl logs' of each pod;
other lines around the block are ignored, and a block cut short or failing its checksum is
refused naming the file and line). requests.jsonl is the union of the shards' records;
every client statistic is recomputed from those records (never averaged); the engine
figures span the merged window: from the shards' saved /metrics snapshots (the latest
before-snapshot taken by the planned start, the latest after), or one Prometheus query
when the shards read Prometheus. It prints each run's start skew per shard on stderr. The
table, report.md and the charts are written as 'run' writes them.`,
		Example: `  servebench merge results/shard-0 results/shard-1 results/shard-2 --out results/merged
  servebench merge shard-0.log shard-1.log shard-2.log --out merged`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, shards []string) error {
			if out == "" {
				return usageErr(errors.New("--out: expected the merged results directory"))
			}
			if !slices.Contains(report.Formats, format) {
				return usageErr(fmt.Errorf("--format %q: expected one of %s", format, strings.Join(report.Formats, ", ")))
			}
			res, err := fleet.Merge(cmd.Context(), fleet.MergeOptions{Dirs: shards, Out: out, Version: version, Args: os.Args,
				Log: cmd.ErrOrStderr()})
			if res == nil {
				return mapBenchErr(err, false)
			}
			if terr := report.TableWith(cmd.OutOrStdout(), res, format, report.TableOptions{Load: true}); terr != nil {
				err = errors.Join(err, terr)
			}
			// The merge kept no records: the charts read them back, bounded.
			recs, sample, notes, rerr := report.ChartRecords(out, res, report.MaxChartBytes)
			for _, n := range notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "servebench: %s\n", n)
			}
			err = errors.Join(err, readBackErr(res, rerr))
			if werr := writeReport(out, res, recs, sample); werr != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "servebench: report: %v\n", werr)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "results: %s\n", out)
			return mapBenchErr(err, false)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the merged results directory")
	cmd.Flags().StringVar(&format, "format", "text", "table format: "+strings.Join(report.Formats, ", "))
	return cmd
}
