package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/export"
)

// exportOptions are the flags and argument of `servebench export`.
type exportOptions struct {
	dir         string
	to          string
	out         string
	run         string
	appendTo    string
	percentiles string
}

func newExportCmd() *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export DIR --to vllm-bench|csv",
		Short: "Write a results directory as vLLM benchmark JSON or per-request CSV",
		Long: `export reads DIR/results.json and DIR/requests.jsonl and writes them for other tools:

  vllm-bench  the JSON of 'vllm bench serve --save-result --save-detailed': vLLM's keys,
              units (ms in *_ms keys, s in the arrays) and definitions (TTFT is the client's
              first token, latency its E2E, queue_times the wait before each send); one
              object per run, as vLLM's result files hold. servebench's own figures (engine
              /metrics, client medians) are under the key "servebench", which vLLM's readers
              ignore.
  csv         one row per measured request (RFC 4180), times in seconds.

Output goes to stdout (vllm-bench: one object per line), to --out FILE (one run: pick it
with --run NAME when DIR holds several), to --out DIR (vllm-bench: DIR/<run>.json per run;
a path is a DIR when it is a directory, ends in /, or has no .json extension), or appended
to --append FILE one object per line as 'vllm bench serve --append-result' does. Folders
are created.`,
		Example: `  servebench export servebench-results/20260909T100000Z --to vllm-bench --out vllm/
  servebench export out --to vllm-bench --run streaming --out vllm.json
  servebench export out --to vllm-bench --append all-runs.jsonl
  servebench export out --to csv > requests.csv`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("export takes one results directory, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			return runExport(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "format: "+strings.Join(export.Formats, ", ")+" (required)")
	f.StringVar(&o.out, "out", "", "write to this file, or (vllm-bench) one <run>.json per run in this directory, instead of stdout")
	f.StringVar(&o.run, "run", "", "export this run only (its name in results.json)")
	f.StringVar(&o.appendTo, "append", "", "vllm-bench: append one object per run to this file, one per line (vLLM's --append-result)")
	f.StringVar(&o.percentiles, "metric-percentiles", "99", "vllm-bench: percentiles written as p<N>_<metric>_ms keys, comma-separated (vLLM's --metric-percentiles)")
	return cmd
}

func runExport(cmd *cobra.Command, o *exportOptions) error {
	opts, err := o.check()
	if err != nil {
		return usageErr(err)
	}
	res, recs, warns, err := result.Load(o.dir)
	if err != nil {
		return usageErr(err)
	}
	if len(res.Runs) == 0 {
		return usageErr(fmt.Errorf("%s: no benchmark runs to export (a start-up only result set)", o.dir))
	}
	if o.run != "" {
		if res, err = export.OnlyRun(res, o.run); err != nil {
			return exportErr(err)
		}
	}
	for _, w := range warns {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	dest := export.Dest{Out: o.out, Append: o.appendTo, Stdout: cmd.OutOrStdout(), From: o.dir}
	return exportErr(export.Save(o.to, res, recs, opts, dest))
}

// exportErr maps export's errors to exit codes: bad usage or input 2, a
// failure while writing 3.
func exportErr(err error) error {
	if errors.Is(err, export.ErrUsage) {
		return usageErr(err)
	}
	return err
}

// check validates the flags alone, before anything is read.
func (o *exportOptions) check() (export.Options, error) {
	var opts export.Options
	if !slices.Contains(export.Formats, o.to) {
		return opts, fmt.Errorf("--to %q: expected one of %s", o.to, strings.Join(export.Formats, ", "))
	}
	if o.appendTo != "" && o.out != "" {
		return opts, errors.New("--out and --append: give one of them")
	}
	if o.appendTo != "" && o.to != "vllm-bench" {
		return opts, fmt.Errorf("--append: only for --to vllm-bench (vLLM's --append-result), not --to %s", o.to)
	}
	for _, s := range strings.Split(o.percentiles, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(p >= 0 && p <= 100) {
			return opts, fmt.Errorf("--metric-percentiles %q: expected numbers from 0 to 100, comma-separated, e.g. 50,90,99", o.percentiles)
		}
		opts.Percentiles = append(opts.Percentiles, p)
	}
	return opts, nil
}
