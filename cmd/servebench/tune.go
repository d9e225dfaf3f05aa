package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/tune"
	"github.com/servebench/servebench/report"
)

// tuneOptions are `servebench tune`'s flags: sweep's load flags, the grid,
// the repeats and the cost.
type tuneOptions struct {
	sweepOptions
	engineGrid, grid, envGrid []string
	repeats                   int
	resume                    string
	gpus                      int
	gpuHourPrice              float64
}

func newTuneCmd() *cobra.Command {
	var o tuneOptions
	o.serverClock = true
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Which server configuration to deploy: a grid of settings x load, repeated, with 95% intervals",
		Long: `tune crosses server settings (--engine-grid for the bundled engine's flags, --grid
for {NAME} placeholders in --server-cmd, --env-grid for the server's environment) and
runs each combination (a treatment) --repeats times, each on a fresh server (its start-up
phases and KV capacity recorded), with a warm-up and the load: --concurrency or --rate
levels, or --find-max-rate's search under --slo, re-checked at its answer with fresh
seeds. The repeats run in blocks, shuffled within each, so drift spreads across the
treatments. Every figure is a mean across runs with its 95% interval; the answer names
the best treatment under the SLO, its runner-up and whether they differ significantly.

DIR (--out) holds tune.json, report.md, report.html, pareto.png and one results directory
per unit under units/. tune.json is rewritten after every unit: after a kill,
--resume DIR with the same flags runs only the units not finished.`,
		Example: `  servebench tune --speedup 20 --engine-grid max-num-seqs=4,16 --concurrency 8 --requests 32
  servebench tune --engine-arg=--gpu=h100-80gb --engine-arg=--model=llama-3.1-70b-instruct \
    --engine-arg=--tensor-parallel-size=8 --speedup 10 --engine-grid max-num-seqs=64,128,256 \
    --input-tokens 1024 --max-tokens 256 --slo ttft.p99=2s,tpot=50ms --find-max-rate 99%
  servebench tune --server ollama --gguf tiny.gguf --env-grid OLLAMA_NUM_PARALLEL=1,4 --concurrency 4
  servebench tune --resume servebench-results/20261204T220000Z --engine-grid max-num-seqs=4,16 --concurrency 8`,
		Annotations: map[string]string{validatesItself: "session"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd)
		},
	}
	fs := cmd.Flags()
	o.sessionOptions.addFlags(fs, 256)
	o.workloadOptions.addFlags(fs, 0)
	fs.Lookup("requests").Usage = "requests per level (default: 4 x concurrency, rate: 10 s worth; at least 32)"
	fs.Lookup("warmup").DefValue, o.warmup = "8", 8
	fs.StringVar(&o.stream, "stream", "on", "streaming: on or off")
	fs.IntSliceVar(&o.levels, "concurrency", nil, "closed-loop levels, e.g. 8,32,128")
	fs.Float64SliceVar(&o.rates, "rate", nil, "open-loop levels in requests/s (with --find-max-rate: the first rate tried)")
	fs.Lookup("rate").DefValue = ""
	fs.Float64Var(&o.maxErrorRate, "max-error-rate", 10, "stop a treatment's ladder after a level with more failed requests than this percentage")
	fs.StringVar(&o.findMaxRate, "find-max-rate", "", "with --slo: search each treatment's highest rate whose attainment stays at or above this percentage, e.g. 99%")
	fs.IntVar(&o.maxSteps, "max-steps", bench.DefaultMaxRateSteps, "with --find-max-rate: most runs each search makes")
	fs.StringArrayVar(&o.engineGrid, "engine-grid", nil, "a bundled engine flag's values, NAME=V1,V2 (e.g. max-num-seqs=64,128,256; repeatable, crossed)")
	fs.StringArrayVar(&o.grid, "grid", nil, "values of a {NAME} placeholder in --server-cmd, NAME=V1,V2 (repeatable, crossed); tune fills {seed} with each repeat's seed")
	fs.StringArrayVar(&o.envGrid, "env-grid", nil, "values of an environment variable of the server, NAME=V1,V2 (e.g. OLLAMA_NUM_PARALLEL=1,4; repeatable, crossed)")
	fs.IntVar(&o.repeats, "repeats", tune.DefaultRepeats, "runs of each treatment, each on a fresh server")
	fs.StringVar(&o.resume, "resume", "", "continue the tune in this directory (same flags): skip its finished units")
	fs.IntVar(&o.gpus, "gpus", 0, "GPUs one server uses, for per-GPU figures and cost (default: the bundled engine's tensor x pipeline parallel size, else 1)")
	fs.Float64Var(&o.gpuHourPrice, "gpu-hour-price", 0, "USD per GPU-hour: gives $ per million output tokens per treatment")
	return cmd
}

// run checks the flags, runs the tune and shows its answer.
func (o *tuneOptions) run(cmd *cobra.Command) error {
	fs := cmd.Flags()
	opts, p, err := o.plan(fs)
	if err != nil {
		return usageErr(err)
	}
	if err := o.check(fs); err != nil {
		return usageErr(err)
	}
	if err := o.load(fs); err != nil {
		return usageErr(err)
	}
	if err := p.loadSource(fs); err != nil {
		return usageErr(err)
	}
	if opts.Session.Server, err = o.serverOptions(); err != nil {
		return usageErr(err)
	}
	if err := opts.Check(); err != nil {
		return usageErr(err)
	}
	if validating(fs) {
		return nil
	}
	cfg, err := o.config(cmd, p)
	if err != nil {
		return err
	}
	opts.Session = cfg
	if o.resume != "" {
		opts.Session.Dir, opts.Resume = o.resume, true
	}
	opts.Warn = cmd.ErrOrStderr()
	if !o.quiet {
		opts.Log = cmd.ErrOrStderr()
	}
	t, err := tune.Run(cmd.Context(), opts)
	if t != nil && !t.Incomplete {
		if terr := report.TuneText(cmd.OutOrStdout(), t); terr != nil {
			err = errors.Join(err, terr)
		}
		if werr := report.WriteTune(opts.Session.Dir, t); werr != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "servebench: report: %v\n", werr)
		}
	}
	if t != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "results: %s\n", opts.Session.Dir)
	}
	return mapBenchErr(err, false)
}

// plan reads the grid and the load into tune options (the session is
// filled by config, from the sweep's plan, once the shared flags are
// checked).
func (o *tuneOptions) plan(fs *pflag.FlagSet) (tune.Options, sessionPlan, error) {
	opts := tune.Options{Repeats: o.repeats, Seed: o.seed, GPUs: o.gpus, GPUHourPrice: o.gpuHourPrice}
	for _, g := range []struct {
		kind string
		vals []string
	}{{tune.KindEngine, o.engineGrid}, {tune.KindTemplate, o.grid}, {tune.KindEnv, o.envGrid}} {
		for _, v := range g.vals {
			f, err := tune.ParseFactor(g.kind, v)
			if err != nil {
				return opts, sessionPlan{}, err
			}
			opts.Grid = append(opts.Grid, f)
		}
	}
	p, err := o.sweepOptions.plan(fs, nil)
	if err != nil {
		return opts, p, err
	}
	if p.search == nil {
		if len(o.levels) == 0 && len(o.rates) == 0 {
			return opts, p, errors.New("tune: expected the load: --concurrency or --rate levels, or --find-max-rate with --slo")
		}
		opts.Session.Runs = p.runs
	} else {
		p.search.Recheck = true // the answer is re-run with fresh seeds before it is reported
		opts.Session.Search = p.search
	}
	if o.resume != "" && fs.Changed("out") {
		return opts, p, errors.New("--resume DIR and --out: the tune continues in DIR")
	}
	return opts, p, nil
}
