package main

import (
	"bytes"
	"fmt"
	"os"
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
              first token, latency its E2E); one object per run, a JSON array for several.
              servebench's own figures (engine /metrics, client medians) are under the key
              "servebench", which vLLM's readers ignore.
  csv         one row per measured request (RFC 4180), times in seconds.

Output goes to stdout, or to --out FILE.`,
		Example: `  servebench export servebench-results/20260909T100000Z --to vllm-bench --out vllm.json
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
	f.StringVar(&o.out, "out", "", "write to this file instead of stdout")
	f.StringVar(&o.percentiles, "metric-percentiles", "99", "vllm-bench: percentiles written as p<N>_<metric>_ms keys, comma-separated (vLLM's --metric-percentiles)")
	return cmd
}

func runExport(cmd *cobra.Command, o *exportOptions) error {
	if !slices.Contains(export.Formats, o.to) {
		return usageErr(fmt.Errorf("--to %q: expected one of %s", o.to, strings.Join(export.Formats, ", ")))
	}
	var opts export.Options
	for _, s := range strings.Split(o.percentiles, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(p >= 0 && p <= 100) {
			return usageErr(fmt.Errorf("--metric-percentiles %q: expected numbers from 0 to 100, comma-separated, e.g. 50,90,99", o.percentiles))
		}
		opts.Percentiles = append(opts.Percentiles, p)
	}
	res, recs, warns, err := result.Load(o.dir)
	if err != nil {
		return usageErr(err)
	}
	if len(res.Runs) == 0 {
		return usageErr(fmt.Errorf("%s: no benchmark runs to export (a start-up only result set)", o.dir))
	}
	for _, w := range warns {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	var b bytes.Buffer
	if err := export.Write(&b, o.to, res, recs, opts); err != nil {
		return usageErr(err)
	}
	if o.out == "" {
		_, err := cmd.OutOrStdout().Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(o.out, b.Bytes(), 0o644); err != nil {
		return usageErr(fmt.Errorf("--out: %w", err))
	}
	return nil
}
