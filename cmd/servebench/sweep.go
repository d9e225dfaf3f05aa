package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/servebench/servebench/bench"
)

// sweepOptions are `servebench sweep`'s flags beyond the shared ones.
type sweepOptions struct {
	sessionOptions
	workloadOptions
	levels       []int
	rates        []float64
	maxErrorRate float64
	maxP99E2E    time.Duration
}

func newSweepCmd() *cobra.Command {
	var o sweepOptions
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "The same workload at rising load (concurrency or rate), to find the knee",
		Long: `sweep runs one workload at several load levels, each its own run with its own
/metrics delta, named "c=N" (closed loop, --concurrency) or "rate=R" (open loop, --rate).
It stops early once a level's error rate passes --max-error-rate or its client p99 E2E
passes --max-p99-e2e. report draws sweep.png from the runs in results.json.`,
		Example: `  servebench sweep --speedup 20
  servebench sweep --base-url http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests 64
  servebench sweep --base-url http://127.0.0.1:8000 --rate 1,2,4,8 --duration 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, err := o.base(cmd.Flags())
			if err != nil {
				return usageErr(err)
			}
			sw := bench.Sweep{Concurrencies: o.levels, Rates: o.rates, MaxErrorRate: o.maxErrorRate, MaxP99E2E: o.maxP99E2E}
			runs, err := sw.Runs(base)
			if err != nil {
				return usageErr(err)
			}
			return o.session(cmd, runs, sw.StopAfter())
		},
	}
	o.sessionOptions.addFlags(cmd.Flags(), 256)
	o.workloadOptions.addFlags(cmd.Flags(), 0)
	cmd.Flags().Lookup("requests").Usage = "requests per level (default: 4 x concurrency, rate: 10 s worth; at least 32)"
	cmd.Flags().StringVar(&o.stream, "stream", "on", "streaming: on or off")
	cmd.Flags().IntSliceVar(&o.levels, "concurrency", nil, "closed-loop levels (default "+intsString(bench.DefaultSweepConcurrencies)+")")
	cmd.Flags().Float64SliceVar(&o.rates, "rate", nil, "open-loop levels in requests/s, instead of --concurrency")
	cmd.Flags().Float64Var(&o.maxErrorRate, "max-error-rate", 10, "stop after a level with more failed requests than this percentage")
	cmd.Flags().DurationVar(&o.maxP99E2E, "max-p99-e2e", 0, "stop after a level whose client p99 E2E passes this (0: never)")
	return cmd
}

// base is the workload every level shares; Sweep.Runs sets the mode and level.
func (o *sweepOptions) base(fs *pflag.FlagSet) (bench.RunSpec, error) {
	if o.stream != "on" && o.stream != "off" {
		return bench.RunSpec{}, fmt.Errorf("--stream %q: expected on or off (a sweep compares load levels in one mode)", o.stream)
	}
	if !(o.maxErrorRate >= 0 && o.maxErrorRate <= 100) {
		return bench.RunSpec{}, fmt.Errorf("--max-error-rate %g: expected a percentage from 0 to 100", o.maxErrorRate)
	}
	if o.maxP99E2E < 0 {
		return bench.RunSpec{}, fmt.Errorf("--max-p99-e2e %v: expected a duration >= 0 (0: no bound)", o.maxP99E2E)
	}
	w := o.workloadOptions
	wl, err := w.baseWorkload(fs)
	if err != nil {
		return bench.RunSpec{}, err
	}
	wl.Arrival, wl.Burstiness = w.arrival, w.burstiness // for --rate levels
	src, think, err := w.source(fs)
	if err != nil {
		return bench.RunSpec{}, err
	}
	wl.ThinkTime = think
	return bench.RunSpec{Workload: wl, Request: o.request(o.stream == "on"), Source: src}, nil
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
