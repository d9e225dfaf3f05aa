package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

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
		if res, err = onlyRun(res, o.run); err != nil {
			return usageErr(err)
		}
	}
	for _, w := range warns {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	if o.to == "vllm-bench" && (o.out != "" || o.appendTo != "") {
		return o.writeVLLM(res, recs, opts)
	}
	var b bytes.Buffer
	if err := export.Write(&b, o.to, res, recs, opts); err != nil {
		return usageErr(err)
	}
	if o.out == "" {
		_, err := cmd.OutOrStdout().Write(b.Bytes())
		return err
	}
	return writeOut("--out", o.out, b.Bytes())
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

// onlyRun is res with just the run named name.
func onlyRun(res *result.Results, name string) (*result.Results, error) {
	var names []string
	for _, r := range res.Runs {
		if r.Name == name {
			one := *res
			one.Runs = []result.Run{r}
			return &one, nil
		}
		names = append(names, r.Name)
	}
	return nil, fmt.Errorf("--run %q: no such run (the results hold %s)", name, strings.Join(names, ", "))
}

// writeVLLM writes one vLLM result object per run to --out or --append
// (stdout goes through export.Write, one object per line): vLLM's
// files and its readers (e.g. .buildkite/performance-benchmarks/scripts/
// convert-results-json-to-markdown.py, which json.loads each file and
// updates it as a dict) hold one object per file, or one per line when
// appended.
func (o *exportOptions) writeVLLM(res *result.Results, recs []result.Record, opts export.Options) error {
	runs, err := export.VLLMRuns(res, recs, opts)
	if err != nil {
		return usageErr(err)
	}
	switch {
	case o.appendTo != "":
		return appendVLLM(o.appendTo, runs)
	case outIsDir(o.out):
		seen := map[string]string{}
		for _, r := range runs {
			name := fileSafe(r.Name) + ".json"
			if prev, ok := seen[name]; ok {
				return usageErr(fmt.Errorf("--out %s: runs %q and %q would both be written to %s: export them one at a time with --run NAME --out FILE", o.out, prev, r.Name, name))
			}
			seen[name] = r.Name
			if err := writeOut("--out", filepath.Join(o.out, name), r.JSON); err != nil {
				return err
			}
		}
		return nil
	case len(runs) > 1:
		names := make([]string, len(runs))
		for i, r := range runs {
			names[i] = r.Name
		}
		return usageErr(fmt.Errorf("--out %s: %s holds %d runs (%s) and a vLLM result file holds one: give --out DIR for one <run>.json each, --run NAME for one of them, or --append FILE for one object per line",
			o.out, o.dir, len(runs), strings.Join(names, ", ")))
	default:
		// As vLLM's --save-result: the object, no newline after it.
		return writeOut("--out", o.out, runs[0].JSON)
	}
}

// outIsDir reports whether --out names a directory: an existing one, a
// path ending in a separator, or one without a .json/.jsonl extension
// that is not an existing file.
func outIsDir(p string) bool {
	if fi, err := os.Stat(p); err == nil {
		return fi.IsDir()
	}
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator)) {
		return true
	}
	ext := strings.ToLower(filepath.Ext(p))
	return ext != ".json" && ext != ".jsonl"
}

// fileSafe keeps a run name's letters, digits and . _ = + -, and turns
// anything else (a / of a path, a space) into _.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._=+-", r)) {
			return r
		}
		return '_'
	}, name)
}

// writeOut writes a file, creating its folder; errors name the flag.
func writeOut(flag, path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return usageErr(fmt.Errorf("%s: %w", flag, err))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return usageErr(fmt.Errorf("%s: %w", flag, err))
	}
	return nil
}

// appendVLLM appends runs to path as vLLM's --append-result does,
// creating the file and its folder.
func appendVLLM(path string, runs []export.VLLMRun) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return usageErr(fmt.Errorf("--append: %w", err))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return usageErr(fmt.Errorf("--append: %w", err))
	}
	var tail []byte
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		tail = make([]byte, 1)
		if _, err := f.ReadAt(tail, fi.Size()-1); err != nil {
			f.Close()
			return fmt.Errorf("--append %s: %w", path, err)
		}
	}
	if _, err := f.Write(export.Appended(tail, runs)); err != nil {
		f.Close()
		return fmt.Errorf("--append %s: %w", path, err)
	}
	return f.Close()
}
