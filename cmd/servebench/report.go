package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/report"
	"github.com/spf13/cobra"
)

// reportOptions are the flags and argument of `servebench report`.
type reportOptions struct {
	dir    string
	format string
}

func newReportCmd() *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate report.md and the PNG charts from a saved results directory",
		Long: `report reads DIR/results.json and DIR/requests.jsonl, writes report.md and the
charts (table.png, timeline.png, tokens.png, cdf.png, and startup.png / sweep.png
where they apply, timeseries.png for --interval runs) into DIR exactly as the run
wrote them, and prints the table.
DIR/results.json may be given for DIR. When servebench stopped mid-run (kill -9,
a lost machine), DIR/checkpoint.json is newer than results.json (or results.json
is missing): report rebuilds results.json from it and requests.jsonl, marked
"incomplete": true, reading requests.jsonl one record at a time (memory does not
grow with its length). After a run that kept no records in memory (--interval)
or a rebuild, the per-request charts and the slowest requests are drawn as the
run drew them: from all of a requests.jsonl of at most ` + fmt.Sprint(report.MaxChartBytes>>20) + ` MiB; from a larger
one, read once, a seeded uniform sample of about that size (the same each time,
named in the charts and report.md), with the slowest requests and each run's
median request exact.`,
		Example: `  servebench report servebench-results/20260909T100000Z
  servebench report out --format csv > table.csv`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr(fmt.Errorf("report takes one results directory, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			// DIR/results.json works too, as it does for compare.
			if filepath.Base(o.dir) == result.ResultsFile {
				if fi, err := os.Stat(o.dir); err == nil && !fi.IsDir() {
					o.dir = filepath.Dir(o.dir)
				}
			}
			return runReport(cmd, o)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "text", "table format on stdout: "+strings.Join(report.Formats, ", "))
	return cmd
}

// loadOrRecover loads dir (report.LoadDir), or rebuilds its results.json
// from checkpoint.json and requests.jsonl when servebench stopped mid-run
// (store.Recover, which streams the records); the records then come as a
// bounded run's report gets them (report.ChartRecords), so memory stays
// bounded whatever the file's size.
func loadOrRecover(cmd *cobra.Command, dir string) (*result.Results, []result.Record, *report.Sample, []string, error) {
	if !store.NeedsRecovery(dir) {
		return report.LoadDir(dir)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: no results.json newer than %s: servebench stopped mid-run; rebuilding %s from it and %s (marked incomplete)\n",
		dir, result.CheckpointFile, result.ResultsFile, result.RequestsFile)
	res, warns, err := store.Recover(dir)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	recs, sample, notes, err := report.ChartRecords(dir, res, report.MaxChartBytes)
	if errors.Is(err, fs.ErrNotExist) { // killed before the first request completed
		err = nil
	}
	for _, n := range notes {
		if !slices.Contains(warns, n) { // the truncated last line: once
			warns = append(warns, n)
		}
	}
	return res, recs, sample, warns, err
}

// runReport loads the directory, rewrites the report files and prints the table.
func runReport(cmd *cobra.Command, o *reportOptions) error {
	if !slices.Contains(report.Formats, o.format) {
		return usageErr(fmt.Errorf("--format %q: expected one of %s", o.format, strings.Join(report.Formats, ", ")))
	}
	res, recs, sample, warns, err := loadOrRecover(cmd, o.dir)
	if err != nil {
		return usageErr(err)
	}
	for _, w := range warns { // e.g. a truncated last line: the rest still reports
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	// The table comes out even when a file cannot be written.
	werr := report.WriteSampled(o.dir, res, recs, sample)
	if len(res.Runs) == 0 { // `servebench startup --out DIR`: no table to print
		fmt.Fprintf(cmd.OutOrStdout(), "%s: no benchmark runs, start-up only; wrote %s\n", o.dir, result.ReportFile)
	} else if err := report.TableWith(cmd.OutOrStdout(), res, o.format, report.TableOptions{Load: true}); err != nil {
		return err
	}
	if werr != nil {
		return usageErr(werr) // DIR is the command's input: not writable is bad input, not an invalid run
	}
	return nil
}
