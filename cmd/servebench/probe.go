package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/probe"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
)

// probeOptions are `servebench probe`'s flags.
type probeOptions struct {
	serverFlags
	prom             promFlags
	promOpts         *promql.Options // from prom, by check
	metricsURLs      []string
	model, endpoint  string
	maxModelLen      int
	after, maxTokens int
	watch, settle    time.Duration
	requestTimeout   time.Duration
	format           string
}

func newProbeCmd() *cobra.Command {
	var o probeOptions
	cmd := &cobra.Command{
		Use:   "probe {" + strings.Join(probe.Names, "|") + "|all}",
		Short: "Check a server before deploying: cancellation, mid-stream errors, buffering, input limits",
		Long: `probe runs the checks the seed lesson says to make on any server before deploying it.
Each prints a verdict (PASS, FAIL or INCONCLUSIVE), a one-line summary and the evidence.

  cancel           open a stream, read --after tokens, disconnect, then watch /metrics:
                   does the running count drop and do generated tokens stop growing?
                   "stops generating" or "keeps generating, N tokens wasted"
  midstream-error  how is an error reported once streaming may have begun: a prompt over
                   the context limit sent streaming, and a plain stream; HTTP status
                   before the stream, error event in an HTTP 200 stream, or a silent cut
  buffering        compare the client's inter-arrival gaps with the engine's inter-token
                   latency (/metrics); bursts mean something buffers the stream, and the
                   engine TTFT vs the client's first visible output says where time is lost
  limits           a prompt over max_model_len (/v1/models) must be rejected with 400

Probe an idle server: other traffic mixes into the /metrics evidence. Without
--base-url, --server-cmd or --server, probe starts the bundled engine like table does
(--engine-arg=--ignore-disconnect or --engine-arg=--fault=buffer-stream=32 show failures).

Exit status: 0 when the probes ran (whatever the verdicts), 2 on bad input, 3 when
the server is unreachable or failed to start.`,
		Example: `  servebench probe all --base-url http://127.0.0.1:8000
  servebench probe cancel --base-url http://127.0.0.1:8000 --after 32 --format json
  servebench probe cancel --speedup 10 --engine-arg=--ignore-disconnect
  servebench probe buffering --speedup 10 --engine-arg=--fault=buffer-stream=32`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr(fmt.Errorf("expected one probe name (%s or all), got %d arguments", strings.Join(probe.Names, ", "), len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runProbe(cmd, args[0], &o) },
	}
	f := cmd.Flags()
	o.serverFlags.add(f)
	f.StringArrayVar(&o.metricsURLs, "metrics-url", nil, "scrape these /metrics URLs (repeatable, summed; default BASE_URL/metrics, or a P/D router's instances from its GET /pd/instances)")
	o.prom.add(f)
	f.StringVar(&o.model, "model", "", "model to request (default: the first /v1/models lists); also filters /metrics")
	f.StringVar(&o.endpoint, "endpoint", "chat", "API: chat or completions")
	f.IntVar(&o.maxModelLen, "max-model-len", 0, "context length to test against (default: /v1/models' max_model_len)")
	f.IntVar(&o.after, "after", 16, "cancel: tokens to read before disconnecting")
	f.IntVar(&o.maxTokens, "max-tokens", 0, "output tokens asked for (default: cancel 512, buffering 128, midstream-error 64)")
	f.DurationVar(&o.watch, "watch", 30*time.Second, "cancel: watch /metrics at most this long after the disconnect")
	f.DurationVar(&o.settle, "settle", time.Second, "cancel: generated tokens unchanged this long counts as stopped")
	f.DurationVar(&o.requestTimeout, "request-timeout", 2*time.Minute, "give up on a probe request after this long")
	f.StringVar(&o.format, "format", "text", "output: "+strings.Join(probe.Formats, ", "))
	return cmd
}

// check validates the flags before anything starts; errors are usage errors.
func (o *probeOptions) check(name string, fs *pflag.FlagSet) error {
	if name != probe.All && !slices.Contains(probe.Names, name) {
		return fmt.Errorf("probe %q: expected one of %s, all", name, strings.Join(probe.Names, ", "))
	}
	if !slices.Contains(probe.Formats, o.format) {
		return fmt.Errorf("--format %q: expected one of %s", o.format, strings.Join(probe.Formats, ", "))
	}
	if o.endpoint != "chat" && o.endpoint != "completions" {
		return fmt.Errorf("--endpoint %q: expected chat or completions", o.endpoint)
	}
	if o.after < 1 {
		return fmt.Errorf("--after %d: expected at least 1 token", o.after)
	}
	if o.maxTokens < 0 || o.maxModelLen < 0 {
		return fmt.Errorf("--max-tokens %d / --max-model-len %d: expected counts >= 0 (0: the default)", o.maxTokens, o.maxModelLen)
	}
	if o.maxTokens > 0 && o.after >= o.maxTokens {
		return fmt.Errorf("--after %d: expected fewer than --max-tokens %d", o.after, o.maxTokens)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--watch", o.watch}, {"--settle", o.settle}, {"--request-timeout", o.requestTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("%s %v: expected a positive duration", d.name, d.v)
		}
	}
	if err := o.serverFlags.check(fs); err != nil {
		return err
	}
	if err := checkMetricsURLs(o.metricsURLs); err != nil { // the server flags: bench.CheckServer in runProbe
		return err
	}
	var err error
	o.promOpts, err = o.prom.options(fs, o.metricsURLs)
	return err
}

func runProbe(cmd *cobra.Command, name string, o *probeOptions) error {
	if err := o.check(name, cmd.Flags()); err != nil {
		return usageErr(err)
	}
	ctx := cmd.Context()
	so, err := o.options()
	if err != nil {
		return err
	}
	so.MetricsURLs, so.Model = o.metricsURLs, o.model
	bundled := o.bundled()
	if err := bench.CheckServer(so); err != nil {
		return usageErr(err)
	}
	if bundled {
		stderr := cmd.ErrOrStderr()
		fmt.Fprintln(stderr, "starting the bundled engine (--base-url probes a running server)...")
		so.Phase = func(phase string, at time.Duration) { fmt.Fprintf(stderr, "  %s at %.1f s\n", phase, at.Seconds()) }
	}
	srv, err := bench.StartServer(ctx, so)
	if err != nil {
		if errors.Is(err, bench.ErrUsage) || bundled && engineRefusedFlags(err) {
			return mapBenchErr(err, bundled)
		}
		return withExit(exitInvalidRun, fmt.Errorf("server unreachable or not started: %w", err))
	}
	defer srv.Stop()
	po := probe.Options{BaseURL: srv.BaseURL, MetricsURLs: srv.MetricsURLs,
		Model: o.model, APIKey: so.APIKey, Endpoint: o.endpoint, MaxModelLen: o.maxModelLen,
		After: o.after, MaxTokens: o.maxTokens, Watch: o.watch, Settle: o.settle, RequestTimeout: o.requestTimeout}
	if o.promOpts != nil {
		if err := o.promSource(ctx, cmd.Flags(), &po); err != nil {
			return withExit(exitInvalidRun, err)
		}
	}
	rs, err := probe.Run(ctx, name, po)
	if werr := probe.Write(cmd.OutOrStdout(), rs, o.format); werr != nil && err == nil {
		err = werr
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, probe.ErrUsage):
		return usageErr(err)
	case errors.Is(err, probe.ErrUnreachable):
		return withExit(exitInvalidRun, err)
	case ctx.Err() != nil:
		return withExit(exitInterrupted, err)
	}
	return withExit(exitInvalidRun, err)
}

// promSource makes the probes read the engine through Prometheus: each
// reading is Prometheus' latest scrape, so a counter "unchanged for
// --settle" must span scrapes: without --settle, it is 2.5 scrape
// intervals, and readings come every quarter interval.
func (o *probeOptions) promSource(ctx context.Context, fs *pflag.FlagSet, po *probe.Options) error {
	opts := *o.promOpts
	opts.Filter.Model = o.model
	src, err := promql.New(opts)
	if err != nil {
		return err
	}
	iv, err := src.ScrapeInterval(ctx)
	if err != nil {
		return err
	}
	if !fs.Changed("settle") {
		po.Settle = iv * 5 / 2
	}
	po.Poll = iv / 4
	po.Snapshot = func(ctx context.Context) (*scrape.Snapshot, error) { return src.Snapshot(ctx, time.Now()) }
	return nil
}
