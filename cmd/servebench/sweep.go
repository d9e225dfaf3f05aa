package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/workload"
)

// sweepOptions are `servebench sweep`'s flags beyond the shared ones.
type sweepOptions struct {
	sessionOptions
	workloadOptions
	levels       []int
	rates        []float64
	maxErrorRate float64
	maxP99E2E    time.Duration
	findMaxRate  string
	maxSteps     int
	levelGap     time.Duration
}

func newSweepCmd() *cobra.Command {
	cmd, _ := sweepCommand()
	return cmd
}

// sweepCommand is the sweep command and the options its flags fill (k8s
// job checks a sharded sweep's flags with them before any pod runs).
func sweepCommand() (*cobra.Command, *sweepOptions) {
	var o sweepOptions
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "The same workload at rising load (concurrency or rate), to find the knee",
		Long: `sweep runs one workload at several load levels, each its own run with its own
/metrics delta, named "c=N" (closed loop, --concurrency) or "rate=R" (open loop, --rate).
It stops early once a level's error rate passes --max-error-rate or its client p99 E2E
passes --max-p99-e2e. report draws sweep.png from the runs in results.json.

Sharded (--shard K/N --start-at T, one process per machine, then 'servebench merge'):
every shard runs every level, sending its slice of each; level 0 starts at T, each next
level at the previous one's start + its planned span + --level-gap, on every shard. The
planned span is the level's --duration, or for --rate levels with a request count the
seeded schedule's last send time; closed-loop (--concurrency) levels need --duration.
The early stops and --find-max-rate judge from one shard's slice and are refused (the
default --max-error-rate is turned off, with a warning).`,
		Example: `  servebench sweep --speedup 20
  servebench sweep --base-url http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests 64
  servebench sweep --base-url http://127.0.0.1:8000 --rate 1,2,4,8 --duration 30s
  servebench sweep --base-url http://gateway:8000 --rate 50,100,200 --requests 2000 \
    --shard 0/4 --start-at 2026-12-01T12:00:00Z --level-gap 20s --out shard-0`,
		Annotations: map[string]string{validatesItself: "session"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.loadColumns = true
			p, err := o.plan(cmd.Flags(), cmd.ErrOrStderr())
			if err != nil {
				return usageErr(err)
			}
			return o.session(cmd, p)
		},
	}
	o.sessionOptions.addFlags(cmd.Flags(), 256)
	o.sessionOptions.addRepeatsFlag(cmd.Flags())
	o.workloadOptions.addFlags(cmd.Flags(), 0)
	cmd.Flags().Lookup("requests").Usage = "requests per level (default: 4 x concurrency, rate: 10 s worth; at least 32); with --duration each level stops at whichever comes first"
	cmd.Flags().StringVar(&o.stream, "stream", "on", "streaming: on or off (sweep's default on: one mode, so the levels compare; run's default is both)")
	cmd.Flags().IntSliceVar(&o.levels, "concurrency", nil, "closed-loop levels (default "+intsString(bench.DefaultSweepConcurrencies)+")")
	cmd.Flags().Float64SliceVar(&o.rates, "rate", nil, "open-loop levels in requests/s, e.g. 1,2,4,8, instead of --concurrency (default: none, the --concurrency levels)")
	cmd.Flags().Lookup("rate").DefValue = "" // the usage says it; pflag would print "(default [])"
	cmd.Flags().Float64Var(&o.maxErrorRate, "max-error-rate", 10, "stop after a level with more failed requests than this percentage")
	cmd.Flags().DurationVar(&o.maxP99E2E, "max-p99-e2e", 0, "stop after a level whose client p99 E2E passes this (0: never)")
	cmd.Flags().StringVar(&o.findMaxRate, "find-max-rate", "", "with --slo: search the highest request rate whose SLO attainment stays at or above this percentage, e.g. 90% (--rate R: start at R)")
	cmd.Flags().IntVar(&o.maxSteps, "max-steps", bench.DefaultMaxRateSteps, "with --find-max-rate: most runs the search makes")
	o.sessionOptions.addResultsToLog(cmd.Flags())
	o.addShardFlags(cmd.Flags(), "every level", "start the first level at this RFC 3339 instant, as every shard does; each next level at the previous one's start + its planned span + --level-gap")
	cmd.Flags().DurationVar(&o.levelGap, "level-gap", bench.DefaultLevelGap, "with --shard: pause between one level's planned end and the next level's start, for the drain, the engine read and the next warm-up")
	return cmd, &o
}

// plan checks the flags and plans the sweep's levels (checked in the time
// the flags give; config builds them in the session's clock); with
// --find-max-rate it plans the search instead (no levels). A sharded sweep
// refuses what judges from one shard's slice and warns on w that the
// default error stop is off.
func (o *sweepOptions) plan(fs *pflag.FlagSet, w io.Writer) (sessionPlan, error) {
	base, src, err := o.base(fs)
	if err != nil {
		return sessionPlan{}, err
	}
	if _, err := o.sessionClock(fs); err != nil { // checked here; config applies the clock load derives
		return sessionPlan{}, err
	}
	sharded := base.Shard.Count > 0
	if fs.Changed("find-max-rate") {
		if sharded {
			return sessionPlan{}, errors.New("--find-max-rate with --shard: the search picks each next rate from the last run's attainment, of which one shard sees only its slice; sweep fixed --rate levels on the shards and merge them")
		}
		s, err := o.maxRateSearch(fs, base)
		return sessionPlan{search: s, source: &src}, err
	}
	sw := bench.Sweep{Concurrencies: o.levels, Rates: o.rates, MaxErrorRate: o.maxErrorRate, MaxP99E2E: o.maxP99E2E, LevelGap: o.levelGap}
	switch {
	case !sharded && fs.Changed("level-gap"):
		return sessionPlan{}, errors.New("--level-gap without --shard: it separates a sharded sweep's levels")
	case sharded && !fs.Changed("max-error-rate"):
		// On by default; an explicit one is refused by Sweep.Runs.
		sw.MaxErrorRate = -1
		fmt.Fprintf(w, "servebench: sweep --shard: the early stop on errors (--max-error-rate, default %g%%) is off: one shard sees only its slice, and every shard must run every level\n", o.maxErrorRate)
	}
	runs, err := sw.Runs(base)
	return sessionPlan{runs: runs, sweep: &sw, base: base, stop: !sharded, source: &src}, err
}

// maxRateSearch is --find-max-rate from base; config gives it the clock,
// the SLO and the rest load derives.
func (o *sweepOptions) maxRateSearch(fs *pflag.FlagSet, base bench.RunSpec) (*bench.MaxRateSearch, error) {
	target, err := bench.ParseTarget(o.findMaxRate)
	if err != nil {
		return nil, fmt.Errorf("--find-max-rate %w", err)
	}
	switch {
	case !fs.Changed("slo"):
		return nil, fmt.Errorf("--find-max-rate %s needs --slo: the attainment it keeps is of an SLO", o.findMaxRate)
	case fs.Changed("concurrency"):
		return nil, errors.New("--find-max-rate and --concurrency: the search varies the request rate (open loop); give --rate R to start at R")
	case len(o.rates) > 1:
		return nil, fmt.Errorf("--find-max-rate with --rate %s: expected one starting rate", floatsString(o.rates))
	}
	s := &bench.MaxRateSearch{Target: target, MaxSteps: o.maxSteps, Base: base}
	if len(o.rates) == 1 {
		s.Start = o.rates[0]
	}
	if fs.Changed("max-steps") && o.maxSteps < 1 {
		return nil, fmt.Errorf("--max-steps %d: expected at least 1", o.maxSteps)
	}
	return s, nil
}

func floatsString(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

// base is the workload every level shares, and its checked source flags
// (sessionPlan.loadSource builds the source); Sweep.Runs sets the mode and
// level.
func (o *sweepOptions) base(fs *pflag.FlagSet) (bench.RunSpec, workload.SourceOptions, error) {
	if o.stream != "on" && o.stream != "off" {
		return bench.RunSpec{}, workload.SourceOptions{}, fmt.Errorf("--stream %q: expected on or off (a sweep compares load levels in one mode)", o.stream)
	}
	if !(o.maxErrorRate >= 0 && o.maxErrorRate <= 100) {
		return bench.RunSpec{}, workload.SourceOptions{}, fmt.Errorf("--max-error-rate %g: expected a percentage from 0 to 100", o.maxErrorRate)
	}
	if o.maxP99E2E < 0 {
		return bench.RunSpec{}, workload.SourceOptions{}, fmt.Errorf("--max-p99-e2e %v: expected a duration >= 0 (0: no bound)", o.maxP99E2E)
	}
	w := o.workloadOptions
	wl, err := w.baseWorkload(fs)
	if err != nil {
		return bench.RunSpec{}, workload.SourceOptions{}, err
	}
	wl.Arrival, wl.Burstiness = w.arrival, w.burstiness // for --rate levels
	src, err := w.sourceOptions(fs)
	if err != nil {
		return bench.RunSpec{}, src, err
	}
	sh, err := w.shardFlags(fs, 1)
	if err != nil {
		return bench.RunSpec{}, src, err
	}
	return bench.RunSpec{Workload: wl, Request: o.request(o.stream == "on"), Shard: sh}, src, nil
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
