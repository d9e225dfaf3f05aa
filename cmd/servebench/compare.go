package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/compare"
)

// compareOptions are the flags of `servebench compare`.
type compareOptions struct {
	base, new     string
	bases, news   []string // several runs a side: BASE... -- NEW...
	test          string   // --test: auto or requests
	limitsFrom    string   // --limits-from FILE (servebench calibrate)
	alpha         float64
	maxRegression []string
	force         bool
	format        string
	drift         bool   // one directory: its runs' last window against their first
	incomplete    bool   // --allow-incomplete
	clock         string // --clock
	html          string // --html FILE: the report also as a web page
}

func newCompareCmd() *cobra.Command {
	return newCompareCmdWith(runCompare)
}

// newCompareCmdWith lets tests capture the parsed options.
func newCompareCmdWith(runF func(cmd *cobra.Command, o *compareOptions) error) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BASE NEW | compare BASE... -- NEW...",
		Short: "Compare two result sets and fail on a significant regression (CI gate)",
		Long: `compare matches the runs of two result sets by name and, for each quantity,
prints base, new, the relative change and the verdict. The run is the unit of
evidence: requests of one run share its batch schedule, so whole runs shift
together and a test that treats them as independent cries wolf between runs of
one build. Which test stands behind a verdict (--test auto, the default):

  several runs a side   Welch's two-sided t-test across runs: each run's median,
                        p90, mean, throughput... is one observation (n=5+5),
                        with the change's 95% interval. A side has several
                        runs when it is a directory of --repeats N
                        (DIR/repeat-1..N) or several directories:
                        compare BASE1 BASE2 BASE3 -- NEW1 NEW2 NEW3.
  several base runs,    the new run against the base runs' 95% prediction
  one new run           interval (Student t, N-1 degrees of freedom).
  one run a side        no test: run-to-run noise is unknown, so the verdict
                        uses the limits alone; repeat runs (--repeats 5) or
                        measure the noise (servebench calibrate, --limits-from).
A regression is a change that is significant at --alpha (where there is a
test), worse, and past its limit. The per-request two-sided Mann-Whitney U
test (requests.jsonl, successful measured requests, warm-up excluded) is shown
beside as p/req, not gating; --test requests makes it gate as before run-level
statistics (one run a side, or each side's runs' requests pooled). Under it
engine figures (/metrics aggregates, no samples to test) regress when past
their limit and the client figure containing them is significantly worse;
across runs they get a test of their own.

Runs whose workloads differ (model, mode, stream, max tokens, prompt, concurrency,
rate) are refused unless --force; server-side differences (engine version, flags,
--speedup) are what a comparison is for: they are printed, never refused.

Either side may also be a vLLM benchmark result: a directory (without results.json)
holding the JSON of 'vllm bench serve --save-result --save-detailed', or that file.
Its per-request arrays are the samples (its TTFT is the client's first token); its
workload is checked where both record it, and the report names what could not be
checked. A vLLM result saved without --save-detailed is refused (exit 2).

--drift DIR compares, within one results directory, each run's last complete
--interval window (new) with its first (base): has the server degraded over the
soak? A side marked incomplete (results rebuilt after servebench stopped mid-run)
is refused unless --allow-incomplete.

Exit status: 0 no regression, 1 regression, 2 unusable input or workloads differ,
3 a side is an invalid run (server failed, every request failed, too few samples).

` + compare.Help(),
		Example: `  servebench compare baseline/ servebench-results/
  servebench run --repeats 5 --out new/ ... && servebench compare baseline/ new/   # 5+5 runs: test across runs
  servebench compare base1/ base2/ base3/ -- new1/ new2/ new3/
  servebench compare --limits-from limits.txt baseline/ new/   # limits from servebench calibrate
  servebench compare --max-regression client.e2e.p90=15% --max-regression engine.ttft.mean=+5ms base/ new/
  servebench compare --format junit base/results.json new/results.json > compare.xml
  servebench compare vllm-baseline/ servebench-results/   # a 'vllm bench serve --save-detailed' JSON as the base
  servebench compare --drift servebench-results/20261201T120000Z`,
		Args: func(cmd *cobra.Command, args []string) error {
			if drift, _ := cmd.Flags().GetBool("drift"); drift {
				if len(args) != 1 {
					return usageErr(fmt.Errorf("compare --drift takes one results directory, got %d arguments", len(args)))
				}
				return nil
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash == 0 || dash == len(args) {
					return usageErr(fmt.Errorf("compare BASE... -- NEW...: expected at least one result set each side of --, got %d before and %d after", dash, len(args)-dash))
				}
				return nil
			}
			if len(args) != 2 {
				return usageErr(fmt.Errorf("compare takes two arguments, BASE and NEW (results directories or results.json files), or BASE... -- NEW...; got %d", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 0 {
				o.bases, o.news = args[:dash], args[dash:]
			} else if len(args) == 2 {
				o.bases, o.news = args[:1], args[1:]
			} else {
				o.bases = args
			}
			o.base = strings.Join(o.bases, " ")
			o.new = strings.Join(o.news, " ")
			return runF(cmd, o)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.alpha, "alpha", compare.DefaultAlpha, "significance level of the Mann-Whitney U test, in (0, 1)")
	f.StringArrayVar(&o.maxRegression, "max-regression", nil, "limit QUANTITY.STAT=LIMIT, e.g. client.e2e.median=10% or engine.ttft.mean=+5ms or 10%,+2ms or off (repeatable; replaces the default of that key)")
	f.StringVar(&o.test, "test", compare.TestAuto, "which test gates: "+strings.Join(compare.Tests, ", ")+" (auto: across runs with several runs a side, limits only with one; requests: per-request Mann-Whitney, as before)")
	f.StringVar(&o.limitsFrom, "limits-from", "", "take limits from this file (servebench calibrate writes one; --max-regression overrides it key by key)")
	f.BoolVar(&o.force, "force", false, "compare runs even when their workloads differ (the differences are reported)")
	f.StringVar(&o.format, "format", "text", "output format: "+strings.Join(compare.Formats, ", "))
	f.BoolVar(&o.drift, "drift", false, "compare DIR's runs' last --interval window with their first (one directory)")
	f.StringVar(&o.html, "html", "", "also write the comparison as one self-contained web page to this file (verdicts coloured, tables sortable)")
	f.StringVar(&o.clock, "clock", "", "compare in this time: "+strings.Join(result.ClockNames, " or ")+
		", each side converted with its own --speedup (default modelled when a side was recorded in it, else wall)")
	f.BoolVar(&o.incomplete, "allow-incomplete", false, "compare a side marked incomplete (rebuilt after servebench stopped mid-run)")
	return cmd
}

// compareOpts turns the flags into compare.Options; errors are usage errors.
func (o *compareOptions) compareOpts() (compare.Options, error) {
	if !(o.alpha > 0 && o.alpha < 1) {
		return compare.Options{}, fmt.Errorf("--alpha %v: want a significance level in (0, 1), e.g. 0.05", o.alpha)
	}
	if !slices.Contains(compare.Tests, o.test) {
		return compare.Options{}, fmt.Errorf("--test %q: want one of %s", o.test, strings.Join(compare.Tests, ", "))
	}
	if o.clock != "" && !slices.Contains(result.ClockNames, o.clock) {
		return compare.Options{}, fmt.Errorf("--clock %q: expected one of %s", o.clock, strings.Join(result.ClockNames, ", "))
	}
	opts := compare.Options{Alpha: o.alpha, Force: o.force, Test: o.test, Clock: o.clock}
	th, err := gateThresholds(o.limitsFrom, o.maxRegression)
	opts.Thresholds = th
	return opts, err
}

// gateThresholds are the limits of --limits-from FILE overlaid with
// --max-regression's, key by key (compare and --baseline).
func gateThresholds(limitsFrom string, maxRegression []string) ([]compare.Threshold, error) {
	var out []compare.Threshold
	if limitsFrom != "" {
		th, err := compare.ReadLimits(limitsFrom)
		if err != nil {
			return nil, fmt.Errorf("--limits-from: %w", err)
		}
		out = th
	}
	for _, s := range maxRegression {
		th, err := compare.ParseThreshold(s)
		if err != nil {
			return nil, err // names the flag and the value itself
		}
		out = append(out, th)
	}
	return out, nil
}

func runCompare(cmd *cobra.Command, o *compareOptions) error {
	opts, err := o.compareOpts()
	if err != nil {
		return usageErr(err)
	}
	wr, err := compare.WriterFor(o.format)
	if err != nil {
		return usageErr(err)
	}
	base, nw, err := o.sides()
	if err != nil {
		return usageErr(err)
	}
	rep, err := compare.Compare(base, nw, opts)
	if err != nil {
		return compareExit(err)
	}
	if err := wr(cmd.OutOrStdout(), rep); err != nil {
		return err
	}
	if o.html != "" {
		if err := writeHTMLFile(o.html, rep); err != nil {
			return err
		}
	}
	if regs := rep.Regressions(); len(regs) > 0 {
		return withExit(exitRegression, fmt.Errorf("%d regressed: %s", len(regs), strings.Join(regs, "; ")))
	}
	return nil
}

// sides loads BASE and NEW, or with --drift DIR's first and last windows;
// a side marked incomplete is refused unless --allow-incomplete.
func (o *compareOptions) sides() (base, nw *compare.Side, err error) {
	if base, err = o.loadAll(o.bases); err != nil {
		return nil, nil, err
	}
	if o.drift {
		return compare.Drift(base)
	}
	if nw, err = o.loadAll(o.news); err != nil {
		return nil, nil, err
	}
	return base, nw, nil
}

// loadAll loads one side of one or several result sets.
func (o *compareOptions) loadAll(paths []string) (*compare.Side, error) {
	sides := make([]*compare.Side, len(paths))
	for i, p := range paths {
		s, err := o.load(p)
		if err != nil {
			return nil, err
		}
		sides[i] = s
	}
	return compare.Group(strings.Join(paths, " "), sides), nil
}

// load loads one side, refusing an incomplete one unless allowed.
func (o *compareOptions) load(path string) (*compare.Side, error) {
	s, err := compare.Load(path)
	if err != nil {
		return nil, err
	}
	for _, r := range append([]*compare.Side{s}, s.Repeats...) {
		if r.Results.Incomplete && !o.incomplete {
			return nil, fmt.Errorf("%s: results marked incomplete (servebench stopped mid-run; rebuilt from %s): expected complete results, or --allow-incomplete",
				r.Path, result.CheckpointFile)
		}
	}
	return s, nil
}

// compareExit maps compare's errors to exit codes; table, run and sweep
// use it for --baseline too.
func compareExit(err error) error {
	if errors.Is(err, compare.ErrInvalidRun) && !errors.Is(err, compare.ErrInput) && !errors.Is(err, compare.ErrMismatch) {
		return withExit(exitInvalidRun, err)
	}
	return usageErr(err)
}

// writeHTMLFile writes rep as a web page to path (compare --html).
func writeHTMLFile(path string, rep *compare.Report) error {
	var page bytes.Buffer
	if err := compare.WriteHTML(&page, rep); err != nil {
		return err
	}
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}
