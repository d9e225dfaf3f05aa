package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/fleet"
	"github.com/servebench/servebench/bench/history"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/compare"
	"github.com/servebench/servebench/scrape/promql"
)

// Stream choices for --stream.
var streamChoices = []string{"on", "off", "both"}

// sessionOptions are the flags table, run and sweep share: the server, the
// requests, the output and the gate.
type sessionOptions struct {
	serverFlags
	pushFlags
	historyFlags
	prom            promFlags
	promOpts        *promql.Options // from prom, by load
	metricsURLs     []string
	model, endpoint string
	maxTokens       int
	exactLength     bool
	exact           bool // what requests take of --exact-length, by load
	out, format     string
	quiet           bool
	requestTimeout  time.Duration
	stallTimeout    time.Duration
	acceptEncoding  string
	retries         int
	failOnErrorRate float64
	requestID       bool
	interval        time.Duration
	gaugeEvery      time.Duration
	continueOnExit  bool
	baseline        string
	maxRegression   []string
	limitsFrom      string              // --limits-from FILE (servebench calibrate)
	repeats         int                 // --repeats N: the session N times, DIR/repeat-1..N
	toolRounds      int                 // --tool-rounds N
	loraSpec        string              // --lora NAME[:WEIGHT],...
	loraDist        string              // --lora-dist
	lora            *workload.LoRAMix   // from loraSpec and loraDist, by load
	hasRepeats      bool                // the command has --repeats
	calibrate       *calibrateOptions   // servebench calibrate: limits after the repeats
	thresholds      []compare.Threshold // from maxRegression and limitsFrom, by load
	base            *compare.Side       // --baseline, loaded by load
	sloText         string
	slo             result.SLO // parsed from sloText by load
	resultsToLog    bool       // run and sweep --results-to-log
	arrivals        bool
	directURL       string // run --direct-url
	structuredOpts  workload.StructuredOptions
	structured      *workload.Structured // loaded from structuredOpts by load
	loadColumns     bool                 // run's and sweep's table: p99 and throughput columns
	clockName       string
	clock           result.Clock // from clockName and --speedup, by load
	// serverClock: --clock modelled with --server-cmd takes the speed-up
	// the started server states (bench refuses a server stating none): tune.
	serverClock bool
}

func (o *sessionOptions) addFlags(fs *pflag.FlagSet, maxTokens int) {
	o.serverFlags.add(fs)
	o.pushFlags.add(fs)
	o.historyFlags.add(fs)
	fs.StringArrayVar(&o.metricsURLs, "metrics-url", nil, "scrape these /metrics URLs (repeatable; summed, for replicas; default BASE_URL/metrics, or a P/D router's instances from its GET /pd/instances)")
	fs.DurationVar(&o.gaugeEvery, "gauge-interval", bench.DefaultGaugeEvery, "with several --metrics-url: scrape them this often during each run for each replica's KV-cache usage (mean and max of the scrapes; 0: not sampled)")
	o.prom.add(fs)
	fs.StringVar(&o.model, "model", "", "model name to request (default: the first model /v1/models lists); also filters /metrics by model_name")
	fs.StringVar(&o.endpoint, "endpoint", "", "API: chat (/v1/chat/completions), completions (/v1/completions), ollama-chat (Ollama's /api/chat, with the engine's own timings per request), messages (Anthropic's /v1/messages) or responses (OpenAI's /v1/responses) (default chat; ollama-chat with --server ollama)")
	fs.IntVar(&o.maxTokens, "max-tokens", maxTokens, "output tokens per request")
	fs.BoolVar(&o.exactLength, "exact-length", true, "ask for exactly --max-tokens tokens (ignore_eos, min_tokens); warn when the server ignores it")
	fs.StringVar(&o.out, "out", "", "results directory (default servebench-results/<UTC time>/)")
	fs.StringVar(&o.format, "format", "text", "table format: "+strings.Join(report.Formats, ", "))
	fs.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 10*time.Minute, "give up on a request after this long (0: never)")
	fs.DurationVar(&o.stallTimeout, "stall-timeout", time.Minute, "give up on a stream with no event for this long (0: never)")
	fs.StringVar(&o.acceptEncoding, "accept-encoding", client.EncodingGzip, "Accept-Encoding to send: "+strings.Join(client.AcceptEncodings, " (as the OpenAI SDKs and browsers; answers are timed decompressed, as they arrive) or ")+" (no compression: the path's pace without a compressing proxy's holding)")
	fs.IntVar(&o.retries, "retries", 0, "retry requests answered 429 or 503 up to this many times, with backoff (counted apart)")
	fs.Float64Var(&o.failOnErrorRate, "fail-on-error-rate", 0, "exit 3 when more than this percentage of a run's requests failed (default: only when all failed)")
	fs.BoolVar(&o.requestID, "request-id", true, "send each request an X-Request-Id: sb-RUN-INDEX-RANDOM (kept in requests.jsonl; vLLM and SGLang log it as the request's id)")
	fs.BoolVar(&o.continueOnExit, "continue-on-server-exit", false, "with --base-url alone: when the server goes away (a restart), wait for its /health and go on instead of failing every request meanwhile")
	fs.DurationVar(&o.interval, "interval", 0, "split each run into windows this long, each with client figures, engine deltas and a checkpoint (default: none, 1m when --duration is over 10m)")
	fs.StringVar(&o.baseline, "baseline", "", "compare with the results in this directory after the run, or judge each run against a history: history:DB[?branch=main&last=20] (exit 1 on a regression)")
	fs.StringArrayVar(&o.maxRegression, "max-regression", nil, "with --baseline: QUANTITY.STAT=LIMIT, e.g. client.e2e.median=10% or =+5ms (repeatable)")
	fs.StringVar(&o.limitsFrom, "limits-from", "", "with --baseline: take limits from this file (servebench calibrate writes one; --max-regression overrides it key by key)")
	fs.BoolVar(&o.arrivals, "arrivals", false, fmt.Sprintf("keep each response's reads in requests.jsonl as arrivals, [seconds, bytes, tokens] each (at most %d per request; more are counted in arrivals_dropped), for plotting clumping elsewhere; export --to csv writes them too", client.MaxArrivals))
	fs.StringVar(&o.structuredOpts.ResponseFormat, "response-format", "", "structured output, for a reader that is a program: json (response_format json_object) or json-schema:FILE (a JSON schema); each request's time to usable output (its JSON parses complete and valid) is recorded beside first visible output and E2E; --exact-length defaults to false")
	fs.StringVar(&o.structuredOpts.ToolsFile, "tools", "", "send these tools (a JSON file: OpenAI's tools array) with every chat request; time to usable output is when the call's arguments parse complete (and valid for its parameters); --exact-length defaults to false")
	fs.StringVar(&o.structuredOpts.ToolChoice, "tool-choice", "", "with --tools: tool_choice "+strings.Join(workload.ToolChoices, ", ")+", or a function's name (default required)")
	fs.StringVar(&o.clockName, "clock", "", "the time SLOs, rates, durations and every printed figure are in: "+strings.Join(result.ClockNames, " or ")+
		" (the emulated hardware's, or this machine's); default modelled with --speedup, else wall (results.json keeps both)")
	fs.IntVar(&o.toolRounds, "tool-rounds", 0, "with --tools: tool-calling sessions of N rounds; the model calls a tool, the client answers it after --think-time, the conversation goes on, and a last turn asks for text; per-turn records with time to usable output (the call's arguments complete)")
	fs.StringVar(&o.loraSpec, "lora", "", "send each conversation to one of these LoRA adapters (served as models: vLLM's --lora-modules), NAME[:WEIGHT],...; per-adapter figures in results and report (a dataset line's \"lora\" field names its own)")
	fs.StringVar(&o.loraDist, "lora-dist", "", "with --lora: how adapters are picked, "+strings.Join(workload.LoRADists, ", ")+" (default weighted when --lora gives weights, else uniform; zipf favours the first listed)")
	fs.StringVar(&o.sloText, "slo", "", "service-level objective for goodput: any of ttft, tpot, itl, e2e, ttfo (first answer token), e.g. ttft=200ms,tpot=50ms (client figures; a request counts when it meets all)")
}

// addRepeatsFlag adds --repeats (run, table, sweep and calibrate; tune has
// its own).
func (o *sessionOptions) addRepeatsFlag(fs *pflag.FlagSet) {
	o.hasRepeats = true
	fs.IntVar(&o.repeats, "repeats", 1, "run the same workload this many times (a fresh server each time it starts one), into DIR/repeat-1..N, with a run-level summary (DIR/repeats.json); --baseline then tests across runs")
}

// check validates the shared flags before anything starts, from the flags
// alone: it reads no file and sets nothing (load does both, after it).
// Errors are usage errors. A flag given explicitly is checked even where
// its zero value would mean "default".
func (o *sessionOptions) check(fs *pflag.FlagSet) error {
	if err := o.checkValues(fs); err != nil {
		return err
	}
	if err := o.serverFlags.check(fs); err != nil {
		return err
	}
	if err := o.checkServer(); err != nil {
		return err
	}
	if err := checkMetricsURLs(o.metricsURLs); err != nil {
		return err
	}
	if _, err := o.pushOptions(fs); err != nil {
		return err
	}
	if _, err := parseLabels(o.labelArgs, "--label"); err != nil {
		return err
	}
	if _, err := o.prom.options(fs, o.metricsURLs); err != nil {
		return err
	}
	if _, err := o.loraMix(fs); err != nil {
		return err
	}
	clock, err := o.sessionClock(fs)
	if err != nil {
		return err
	}
	if _, err := o.sessionSLO(fs, clock); err != nil {
		return err
	}
	return o.checkGate(fs)
}

// load derives, once, what the checked flags make (the push, labels, the
// Prometheus options, the adapter mix, the clock, the SLO) and reads the
// files they name (the server's, --response-format's and --tools',
// --limits-from, --baseline), where the command runs: after check, and
// before --validate stops, so that a file that is there must parse (one
// missing here is the reader's, under --validate). Errors are usage
// errors.
func (o *sessionOptions) load(fs *pflag.FlagSet) error {
	if err := o.loadServer(fs); err != nil {
		return err
	}
	var err error
	if o.pushOpts, err = o.pushOptions(fs); err != nil {
		return err
	}
	if o.labels, err = parseLabels(o.labelArgs, "--label"); err != nil {
		return err
	}
	if o.promOpts, err = o.prom.options(fs, o.metricsURLs); err != nil {
		return err
	}
	if o.lora, err = o.loraMix(fs); err != nil {
		return err
	}
	if o.clock, err = o.sessionClock(fs); err != nil {
		return err
	}
	if o.slo, err = o.sessionSLO(fs, o.clock); err != nil {
		return err
	}
	if err := o.loadStructured(fs); err != nil {
		return err
	}
	return o.loadGate(fs)
}

// sessionSLO is --slo, in wall-clock time (the runs judge wall-clock
// records); the zero SLO when not given.
func (o *sessionOptions) sessionSLO(fs *pflag.FlagSet, clock result.Clock) (result.SLO, error) {
	if !fs.Changed("slo") {
		return result.SLO{}, nil
	}
	slo, err := result.ParseSLO(o.sloText)
	if err != nil {
		return slo, fmt.Errorf("--slo %q: %w", o.sloText, err)
	}
	return clock.SLOFromModelled(slo), nil
}

// loadStructured loads --response-format's and --tools' files. A
// structured answer is as long as its JSON: padding it to --max-tokens
// would put E2E past the moment it became usable, so --exact-length is off
// unless given.
func (o *sessionOptions) loadStructured(fs *pflag.FlagSet) error {
	s, err := o.structuredOpts.Load()
	if err = missingOnValidate(fs, err); err != nil {
		return err
	}
	o.structured = s
	o.exact = o.exactLength && (s == nil || fs.Changed("exact-length"))
	return nil
}

// structure gives req what load derived (the runs are built before it
// reads the files): the structured output, --exact-length as it applies,
// and the adapter mix.
func (o *sessionOptions) structure(req *bench.RequestSpec) {
	req.Structured, req.ExactLength = o.structured, o.exact
	req.LoRA = o.lora
	req.ToolRounds = o.toolRounds
}

// loraMix is the adapter mix --lora and --lora-dist make (nil: none),
// once --tool-rounds is checked (it needs --tools, on chat).
func (o *sessionOptions) loraMix(fs *pflag.FlagSet) (*workload.LoRAMix, error) {
	if n := o.toolRounds; n < 0 || n > 0 && (o.structuredOpts.ToolsFile == "" || o.endpoint != "" && o.endpoint != bench.EndpointChat) {
		return nil, fmt.Errorf("--tool-rounds %d: expected 0, or rounds with --tools on the chat endpoint", n)
	}
	if o.loraSpec == "" {
		if fs.Changed("lora-dist") {
			return nil, fmt.Errorf("--lora-dist %q needs --lora", o.loraDist)
		}
		return nil, nil
	}
	return workload.ParseLoRA(o.loraSpec, o.loraDist)
}

// sessionClock is the clock --clock and --speedup make: modelled by default
// when the bundled engine is sped up; modelled is refused for a server
// that is not the bundled engine (its time is the wall clock's), but for a
// --server-cmd under serverClock, whose engine states its speed-up once
// started (the inputs stay wall-clock: the speed-up is unknown until then).
func (o *sessionOptions) sessionClock(fs *pflag.FlagSet) (result.Clock, error) {
	if o.clockName == result.ClockModelled && fs.Changed("clock") && o.speedup == 0 && !o.bundled() && !(o.serverClock && o.serverCmd != "") {
		what := "(--speedup)"
		if o.serverClock {
			what = "(--speedup, or a --server-cmd that starts it)"
		}
		return result.Clock{}, fmt.Errorf("--clock modelled: only for the bundled engine %s: another server runs in wall-clock time", what)
	}
	c, err := result.NewClock(o.clockName, o.speedup)
	if err != nil {
		return c, fmt.Errorf("--clock %w", err)
	}
	return c, nil
}

// checkServer refuses, before --validate stops and before anything runs,
// the server flags bench would refuse at start (an unknown --server, a P/D
// pool of 0, --server-cmd with --server), from the flags alone
// (bench.CheckServerOptions); loadServer looks at the files they name.
func (o *sessionOptions) checkServer() error {
	so, err := o.serverOptions()
	if err != nil {
		return err
	}
	return bench.CheckServerOptions(so)
}

// loadServer checks what the server flags name on this machine (the
// --server-dir, the ollama binary, the --gguf file): bench.CheckServer, as
// probe asks it. A file the flags name that is missing here is the
// reader's, under --validate.
func (o *sessionOptions) loadServer(fs *pflag.FlagSet) error {
	so, err := o.serverOptions()
	if err != nil {
		return err
	}
	return missingOnValidate(fs, bench.CheckServer(so))
}

// serverOptions are the server the flags name, its /metrics URLs and the
// model: what checkServer checks is what config runs.
func (o *sessionOptions) serverOptions() (bench.ServerOptions, error) {
	so, err := o.options()
	so.MetricsURLs, so.Model = o.metricsURLs, o.model
	return so, err
}

// checkValues checks the flags that stand alone, in this order: --format,
// --fail-on-error-rate (when given), then the session's limits (bench's
// CheckLimits). The first one wrong is the error.
func (o *sessionOptions) checkValues(fs *pflag.FlagSet) error {
	if !slices.Contains(report.Formats, o.format) {
		return fmt.Errorf("--format %q: expected one of %s", o.format, strings.Join(report.Formats, ", "))
	}
	if err := client.CheckAcceptEncoding(o.acceptEncoding); err != nil {
		return fmt.Errorf("--accept-encoding %w", err)
	}
	if fs.Changed("fail-on-error-rate") && !(o.failOnErrorRate >= 0 && o.failOnErrorRate <= 100) {
		return fmt.Errorf("--fail-on-error-rate %g: expected a percentage from 0 to 100", o.failOnErrorRate)
	}
	return o.limits().CheckLimits()
}

// limits is the bench.Config of the flags that bound the session (retries,
// timeouts, intervals, --continue-on-server-exit with the server flags it
// depends on); config completes it.
func (o *sessionOptions) limits() bench.Config {
	return bench.Config{
		Server:         bench.ServerOptions{BaseURL: o.baseURL, ServerCmd: o.serverCmd, Preset: o.preset},
		RequestTimeout: o.requestTimeout, StallTimeout: o.stallTimeout, Retries: o.retries,
		AcceptEncoding: o.acceptEncoding, Interval: o.interval, GaugeEvery: o.gaugeEvery, ContinueOnServerExit: o.continueOnExit,
	}
}

// checkGate checks the gate's flags (--max-regression, --limits-from,
// --repeats, --baseline's form) so that a typo fails before the run and
// not after it; loadGate reads their files.
func (o *sessionOptions) checkGate(fs *pflag.FlagSet) error {
	if len(o.maxRegression) > 0 && o.baseline == "" {
		return errors.New("--max-regression without --baseline: expected a baseline to compare with")
	}
	if o.limitsFrom != "" && o.baseline == "" {
		return errors.New("--limits-from without --baseline: expected a baseline to compare with")
	}
	if o.hasRepeats && o.repeats < 1 {
		return fmt.Errorf("--repeats %d: expected 1 or more runs of the workload", o.repeats)
	}
	if _, err := gateThresholds("", o.maxRegression); err != nil {
		return err
	}
	if history.IsBaseline(o.baseline) {
		_, err := o.historyBaseline()
		return err
	}
	return nil
}

// loadGate reads --limits-from and --baseline (a results directory, or a
// history it opens), once check has passed their flags.
func (o *sessionOptions) loadGate(fs *pflag.FlagSet) error {
	limitsFrom := o.limitsFrom
	if _, err := os.Stat(limitsFrom); limitsFrom != "" && err != nil && missingOnValidate(fs, err) == nil {
		limitsFrom = "" // --validate: the reader's limits file, not this machine's
	}
	var err error
	if o.thresholds, err = gateThresholds(limitsFrom, o.maxRegression); err != nil {
		return err
	}
	o.base, o.histBase = nil, nil
	if o.baseline == "" {
		return nil
	}
	if history.IsBaseline(o.baseline) {
		return o.loadHistoryBaseline(fs)
	}
	if _, err := os.Stat(o.baseline); missingOnValidate(fs, err) == nil && err != nil {
		return nil // --validate: the reader's baseline, not this machine's
	}
	base, err := compare.Load(o.baseline)
	if err != nil {
		return fmt.Errorf("--baseline %q: %w", o.baseline, err)
	}
	o.base = base
	return nil
}

func (o *sessionOptions) request(stream bool) bench.RequestSpec {
	endpoint := o.endpoint
	if endpoint == "" && o.preset == launch.PresetOllama {
		endpoint = bench.EndpointOllamaChat // so the table's engine columns fill
	}
	return bench.RequestSpec{Endpoint: endpoint, Model: o.model, MaxTokens: o.maxTokens,
		Stream: stream, Arrivals: o.arrivals, AutoEndpoint: o.endpoint == ""} // config completes it (structure)
}

// session runs cfg's runs and does what every benchmark command does after:
// the table on stdout, report.md and charts, the baseline gate, and the
// mapping of errors to exit codes.
func (o *sessionOptions) session(cmd *cobra.Command, p sessionPlan) error {
	if err := o.check(cmd.Flags()); err != nil {
		return usageErr(err)
	}
	if err := o.load(cmd.Flags()); err != nil {
		return usageErr(err)
	}
	if err := p.loadSource(cmd.Flags()); err != nil {
		return usageErr(err)
	}
	if validating(cmd.Flags()) {
		return nil
	}
	cfg, err := o.config(cmd, p)
	if err != nil {
		return err
	}
	if o.repeats > 1 {
		return o.repeatSession(cmd, cfg)
	}
	res, recs, err := o.once(cmd, cfg)
	if err != nil {
		return err
	}
	return o.record(cmd, cfg.Dir, res, o.gateAny(cmd, cfg.Dir, res, recs))
}

// once executes cfg and shows and saves what it measured; errors are
// mapped to exit codes.
func (o *sessionOptions) once(cmd *cobra.Command, cfg bench.Config) (*result.Results, []result.Record, error) {
	res, recs, err := execute(cmd.Context(), cfg)
	if res == nil {
		return nil, nil, mapBenchErr(err, o.bundled())
	}
	recs, err = o.results(cmd, cfg, res, recs, err)
	if err != nil { // no runs: the server did not start (what it measured is saved)
		return nil, nil, mapBenchErr(err, o.bundled() && len(res.Runs) == 0)
	}
	return res, recs, nil
}

// repeatSession runs the session --repeats times, each into its own
// results directory DIR/repeat-K with its own server start when
// servebench starts one: the same workload (same seed) each time, so what
// differs between repeats is run-to-run noise, the runs being the unit of
// evidence. Then the run-level summary (stdout, DIR/repeats.json) and the
// gate across runs. A failed repeat stops the session; the repeats before
// it are saved.
func (o *sessionOptions) repeatSession(cmd *cobra.Command, cfg bench.Config) error {
	dir, stderr := cfg.Dir, cmd.ErrOrStderr()
	for k := 1; k <= o.repeats; k++ {
		c := cfg
		c.Dir, c.Runs = result.RepeatDir(dir, k), slices.Clone(cfg.Runs)
		if !o.quiet {
			fmt.Fprintf(stderr, "repeat %d/%d\n", k, o.repeats)
		}
		res, _, err := o.once(cmd, c)
		if err != nil {
			return fmt.Errorf("repeat %d of %d: %w", k, o.repeats, err)
		}
		if err := o.storeRepeat(cmd, c.Dir, res); err != nil {
			return err
		}
	}
	side, err := compare.Load(dir)
	if err != nil {
		return compareExit(err)
	}
	sum := compare.SummarizeRepeats(side, thresholdKeys(o.thresholds))
	if err := compare.WriteRepeatSummary(cmd.OutOrStdout(), sum); err != nil {
		return err
	}
	if err := compare.WriteRepeatsFile(dir, sum); err != nil {
		return fmt.Errorf("--repeats: %w", err)
	}
	fmt.Fprintf(stderr, "results: %s (%d repeats)\n", dir, o.repeats)
	if o.calibrate != nil {
		return o.calibrate.finish(cmd, dir, side)
	}
	return o.gateSide(cmd.OutOrStdout(), dir, side)
}

func thresholdKeys(th []compare.Threshold) []string {
	keys := make([]string, len(th))
	for i, t := range th {
		keys[i] = t.Key()
	}
	return keys
}

// sessionPlan is what a session command's own flags make, checked before
// the shared flags: the runs, or a sweep's levels of base, their rates and
// durations in the time the flags give them; config builds the session's
// runs from it in the clock load derived.
type sessionPlan struct {
	runs   []bench.RunSpec // run's and table's; a sweep's levels as checked
	sweep  *bench.Sweep    // sweep's and tune's levels of base, instead of runs
	base   bench.RunSpec
	stop   bool                 // the sweep's early stops apply (not on a shard)
	search *bench.MaxRateSearch // sweep --find-max-rate, instead of levels
	// source is the checked source flags of runs, base and search, which
	// loadSource reads into them (nil: the runs carry their source: table).
	source *workload.SourceOptions
}

// loadSource builds p's source from its flags, reading the file they name
// (--prompt-file, --dataset, --trace; under --validate one missing is
// forgiven), and gives it and the think time to p's runs, base and search.
func (p *sessionPlan) loadSource(fs *pflag.FlagSet) error {
	if p.source == nil {
		return nil
	}
	src, think, err := workload.NewSource(*p.source)
	if err != nil {
		return missingOnValidate(fs, err)
	}
	set := func(s *bench.RunSpec) { s.Source, s.Workload.ThinkTime = src, think }
	for i := range p.runs {
		set(&p.runs[i])
	}
	set(&p.base)
	if p.search != nil {
		set(&p.search.Base)
	}
	return nil
}

// timed is p's runs and search in the session's clock, the one place
// the clock turns what the flags gave into wall-clock rates and
// durations; stopAfter is the sweep's early stop, when it has one.
func (o *sessionOptions) timed(p sessionPlan) (runs []bench.RunSpec, search *bench.MaxRateSearch, stopAfter func(*result.Run) string, err error) {
	if p.search != nil {
		s := *p.search
		s.Base.Workload, s.Clock = wallTime(o.clock, s.Base.Workload), o.clock
		return nil, &s, nil, nil
	}
	if p.sweep == nil {
		runs = slices.Clone(p.runs)
		for i := range runs {
			runs[i].Workload = wallTime(o.clock, runs[i].Workload)
		}
		return runs, nil, nil, nil
	}
	sw, base := *p.sweep, p.base
	sw.Clock, base.Workload = o.clock, wallTime(o.clock, base.Workload)
	if runs, err = sw.Runs(base); err != nil || !p.stop {
		return runs, nil, nil, err
	}
	return runs, nil, sw.StopAfter(), nil
}

// wallTime is w with the rate and duration the flags gave, in clock's
// time, as the wall clock's.
func wallTime(clock result.Clock, w workload.Workload) workload.Workload {
	w.Rate, w.Duration = clock.RateFromModelled(w.Rate), clock.DurationFromModelled(w.Duration)
	return w
}

// config is the session's bench.Config: the checked and loaded flags,
// with the clock, the SLO, the structured output and the adapter mix on
// copies of the plan's runs and of the search (the options and plan given
// stay as they are).
func (o *sessionOptions) config(cmd *cobra.Command, p sessionPlan) (bench.Config, error) {
	stderr := cmd.ErrOrStderr()
	runs, search, stopAfter, err := o.timed(p)
	if err != nil {
		return bench.Config{}, err
	}
	for i := range runs {
		runs[i].SLO = o.slo
		o.structure(&runs[i].Request)
		if err := runs[i].CheckToolSessions(); err != nil {
			return bench.Config{}, err
		}
	}
	if search != nil {
		search.Base.SLO = o.slo
		o.structure(&search.Base.Request)
		if !o.quiet {
			search.Log = stderr // the search's steps, as it goes
		}
	}
	dir := o.out
	if dir == "" {
		dir = filepath.Join("servebench-results", time.Now().UTC().Format("20060102T150405Z"))
	}
	server, err := o.serverOptions()
	if err != nil {
		return bench.Config{}, err
	}
	cfg := o.limits()
	cfg.Server, cfg.Runs, cfg.Dir = server, runs, dir
	cfg.Args, cfg.Version = os.Args, version
	cfg.Labels, cfg.Build = o.labels, o.build(cmd.Context())
	cfg.StopAfter, cfg.Search = stopAfter, search
	cfg.Clock = o.clock
	cfg.Interval = o.clock.DurationFromModelled(cfg.Interval)
	cfg.Prometheus, cfg.RequestIDs = o.promOpts, o.requestID
	cfg.DirectURL = o.directURL
	cfg.FailOnErrorRate = -1
	if cmd.Flags().Changed("fail-on-error-rate") {
		cfg.FailOnErrorRate = o.failOnErrorRate
	}
	if !cmd.Flags().Changed("interval") {
		cfg.Interval = bench.DefaultInterval(runs)
	}
	// Every run, windows or not: memory bounded, records on disk only (the
	// samples spilled, the charts read back from requests.jsonl).
	cfg.Bounded = !keepRecords
	if !o.quiet && isTerminal(stderr) {
		cfg.Progress = stderr
	}
	if !o.quiet {
		cfg.Notes = stderr
	}
	return cfg, nil
}

// results shows and saves what the session measured, also after a failed
// run: the table and the max-rate answer on stdout, report.md, report.html
// and the charts, where the results are, the push and the log block. It
// returns the records (read back for the charts when the run kept none)
// and err with any failure of its own joined.
func (o *sessionOptions) results(cmd *cobra.Command, cfg bench.Config, res *result.Results, recs []result.Record, err error) ([]result.Record, error) {
	stdout, stderr, dir := cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg.Dir
	// No table when the server did not start: no runs, the error says why.
	if len(res.Runs) > 0 || err == nil {
		if terr := report.TableWith(stdout, res, o.format, report.TableOptions{Load: o.loadColumns}); terr != nil {
			err = errors.Join(err, terr)
		}
	}
	if res.MaxRate != nil && (o.format == "text" || o.format == "markdown") {
		fmt.Fprintf(stdout, "\n%s\n", result.Shown(res).MaxRate)
	}
	var sample *report.Sample
	if cfg.Bounded { // the run kept no records: the charts read them back
		var notes []string
		var rerr error
		recs, sample, notes, rerr = report.ChartRecords(dir, res, report.MaxChartBytes)
		for _, n := range notes {
			fmt.Fprintf(stderr, "servebench: %s\n", n)
		}
		err = errors.Join(err, readBackErr(res, rerr))
	}
	if werr := writeReport(dir, res, recs, sample); werr != nil {
		fmt.Fprintf(stderr, "servebench: report: %v\n", werr)
	}
	// Also with --quiet, and after a failed run (what it measured is saved):
	// where the results are is the answer. The error does not repeat it.
	fmt.Fprintf(stderr, "results: %s\n", dir)
	o.push(cmd.Context(), stderr, res)
	if o.resultsToLog {
		if lerr := fleet.WriteLogBlock(stdout, dir); lerr != nil {
			err = errors.Join(err, fmt.Errorf("--results-to-log: %w", lerr))
		}
	}
	return recs, err
}

// errResultsRead: the records just written could not be read back.
var errResultsRead = errors.New("the results could not be read back")

// readBackErr is a failure to read requests.jsonl back for the charts: a
// results error (exit 5), also a warning of the report, so that report.md
// says why its charts have no records. A run that sent nothing has no file
// to read.
func readBackErr(res *result.Results, err error) error {
	if err == nil || (errors.Is(err, fs.ErrNotExist) && !slices.ContainsFunc(res.Runs, func(r result.Run) bool { return r.Requests > 0 })) {
		return nil
	}
	err = fmt.Errorf("reading %s back for the charts: %w", result.RequestsFile, err)
	res.Warnings = append(res.Warnings, err.Error())
	return fmt.Errorf("%w: %w", errResultsRead, err)
}

// execute runs the session (a variable so that tests can see the Config
// the flags make).
var execute = bench.Execute

// keepRecords keeps every record in memory instead (memory grows with the
// run): the path every run took before runs were bounded by default. No
// flag sets it; BenchmarkSoakRSSNoInterval's stand-in process does, to
// compare that path's cost with the bounded one's.
var keepRecords = false

// writeReport writes report.md, report.html and the charts next to results.json.
var writeReport = report.WriteSampled

// gate compares with --baseline (loaded by load), if given.
func (o *sessionOptions) gate(w io.Writer, dir string, res *result.Results, recs []result.Record) error {
	if o.base == nil {
		return nil
	}
	if recs == nil && len(res.Runs) > 0 { // a bounded run: the test needs every sample
		side, err := compare.Load(dir)
		if err != nil {
			return compareExit(err)
		}
		recs = side.Records
	}
	return o.gateSide(w, dir, &compare.Side{Path: "this run", Results: res, Records: recs})
}

// gateSide compares side, the session's results, with --baseline; the
// comparison goes to w and beside the results as a web page.
func (o *sessionOptions) gateSide(w io.Writer, dir string, side *compare.Side) error {
	if o.base == nil {
		return nil
	}
	fmt.Fprintln(w)
	rep, err := compare.Compare(o.base, side, compare.Options{Thresholds: o.thresholds})
	if err != nil {
		return compareExit(err)
	}
	if err := compare.WriteText(w, rep); err != nil {
		return err
	}
	if err := writeHTMLFile(filepath.Join(dir, compare.FileHTML), rep); err != nil {
		return err
	}
	if rep.Regressed() {
		return withExit(exitRegression, errors.New("regression against the baseline "+o.baseline))
	}
	return nil
}

// mapBenchErr maps bench's errors to exit codes; bundled says the server
// was the bundled engine and err came before any run (bench.Execute gave no
// results), when its exit status 2 means it refused its flags.
func mapBenchErr(err error, bundled bool) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bench.ErrUsage):
		return usageErr(err)
	case bundled && engineRefusedFlags(err):
		return engineRefusal(err)
	case errors.Is(err, bench.ErrInterrupted):
		return withExit(exitInterrupted, err)
	case errors.Is(err, bench.ErrResultsWrite) || errors.Is(err, errResultsRead):
		return withExit(exitResultsIO, err) // a full disk is not a dead server
	}
	return withExit(exitInvalidRun, err) // server failed or died, every request failed, error rate
}

// checkMetricsURLs checks each --metrics-url before anything starts.
func checkMetricsURLs(urls []string) error {
	for _, u := range urls {
		if _, err := launch.ParseBaseURL(u); err != nil {
			return fmt.Errorf("--metrics-url: %w", err)
		}
	}
	return nil
}

// isTerminal reports whether w is a terminal (progress is shown only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// workloadOptions are the workload flags of run and sweep.
type workloadOptions struct {
	requests     int
	duration     time.Duration
	warmup       int
	concurrency  int
	rate         float64
	arrival      string
	burstiness   float64
	seed         int64
	prompt       string
	promptTokens int
	promptFile   string
	stream       string
	src          workload.SourceOptions // the source flags beyond --prompt*, --seed
	shard        string                 // --shard K/N (addShardFlags)
	startAt      string                 // --start-at RFC3339
}

func (w *workloadOptions) addFlags(fs *pflag.FlagSet, requests int) {
	fs.IntVar(&w.requests, "requests", requests, "measured requests per run; with --duration the run stops at whichever comes first, and --duration alone (or --requests 0) sends until the duration")
	fs.DurationVar(&w.duration, "duration", 0, "stop sending after this long, e.g. 30s (default: no limit; with --requests: whichever comes first)")
	fs.IntVar(&w.warmup, "warmup", 1, "warm-up requests before each run, left out of every statistic and of the engine's deltas "+
		"(default 1 where prompts are fixed or generated, so that a model loaded on first use, a cold cache or a new connection stays out of the figures; "+
		"0 with --dataset, --trace, --prompt-file or --shard, whose every request is measured; --warmup 0: none)")
	fs.StringVar(&w.arrival, "arrival", workload.ArrivalPoisson, "with --rate: "+strings.Join(workload.Arrivals, ", "))
	fs.Float64Var(&w.burstiness, "burstiness", 1, "with --arrival gamma: shape (1 = Poisson, < 1 burstier)")
	fs.Int64Var(&w.seed, "seed", 0, "seed for arrivals and synthetic prompts")
	fs.StringVar(&w.prompt, "prompt", workload.DefaultPrompt, "fixed prompt text")
	fs.IntVar(&w.promptTokens, "prompt-tokens", 0, "synthetic prompts of N tokens as the server counts them, chat template included (measured by /tokenize or usage before the runs)")
	fs.StringVar(&w.promptFile, "prompt-file", "", `JSONL file of {"prompt": ...} or {"messages": [...]} lines, used in order`)
	fs.StringVar(&w.src.InputTokens, "input-tokens", "", "synthetic prompt lengths in tokens as the server counts them (token-exact, template included): "+workload.DistGrammar)
	fs.StringVar(&w.src.OutputTokens, "output-tokens", "", "output lengths in tokens, requested exactly (overrides --max-tokens and a dataset's): "+workload.DistGrammar)
	fs.StringVar(&w.src.Turns, "turns", "", "turns per session: N (synthetic), or all/N of each --dataset conversation; each turn sends the whole history")
	fs.StringVar(&w.src.ThinkTime, "think-time", "", "seconds between a reply and the session's next turn: "+workload.DistGrammar)
	fs.IntVar(&w.src.SharedPrefixTokens, "shared-prefix-tokens", 0, "a shared system prompt of P tokens before each synthetic prompt")
	fs.IntVar(&w.src.PrefixGroups, "prefix-groups", 0, "G distinct shared prefixes (default 1 with --shared-prefix-tokens)")
	fs.StringVar(&w.src.PrefixPick, "prefix-pick", "", "how a request picks its prefix group: uniform (default) or zipf:S")
	fs.StringVar(&w.src.Dataset, "dataset", "", "prompts from a dataset: sharegpt:FILE (ShareGPT JSON) or jsonl:FILE (prompt-file lines plus output_tokens, session, turn; tool_result and think_s replay recorded tool-calling sessions, with --tools)")
}

// addTraceFlags adds run's trace replay flags (a sweep sets its own load).
func (w *workloadOptions) addTraceFlags(fs *pflag.FlagSet) {
	fs.StringVar(&w.src.Trace, "trace", "", "replay a trace's send times and lengths (open loop; the whole trace unless --requests or --duration cut it)")
	fs.StringVar(&w.src.TraceFormat, "trace-format", "", "trace format: "+strings.Join(workload.TraceFormats, ", ")+" (default: from the extension, .jsonl or .csv)")
	fs.Float64Var(&w.src.TraceSpeed, "trace-speed", 1, "replay K times faster than recorded")
	fs.StringVar(&w.src.TraceWindow, "trace-window", "", "replay only START,DURATION of the trace (e.g. 10m,5m; seconds or Go durations)")
}

// sourceOptions reads the source flags and checks them, reading no file:
// sessionPlan.loadSource builds the source from them once every flag is
// checked.
func (w *workloadOptions) sourceOptions(fs *pflag.FlagSet) (workload.SourceOptions, error) {
	o := w.src
	o.Seed = w.seed
	if !fs.Changed("trace-speed") {
		o.TraceSpeed = 0 // not given: refused without --trace only when given
	}
	if fs.Changed("prompt") {
		if _, err := workload.FixedPrompt(w.prompt); err != nil { // blank
			return o, err
		}
		o.Prompt = w.prompt
	}
	if fs.Changed("prompt-tokens") {
		if _, err := workload.SyntheticPrompts(w.promptTokens, 0); err != nil { // 0 would read as not given
			return o, err
		}
		o.PromptTokens = w.promptTokens
	}
	o.PromptFile = w.promptFile
	for _, f := range []string{"shared-prefix-tokens", "prefix-groups"} {
		if v, _ := fs.GetInt(f); fs.Changed(f) && v < 1 {
			return o, fmt.Errorf("--%s %d: expected at least 1", f, v)
		}
	}
	o.ToolRounds, _ = fs.GetInt("tool-rounds")
	return o, o.Validate()
}

// baseWorkload is what run's and sweep's workloads share, before the mode:
// how many requests, for how long, the warm-up and the seed.
func (w *workloadOptions) baseWorkload(fs *pflag.FlagSet) (workload.Workload, error) {
	wl := workload.Workload{Requests: w.requests, Duration: w.duration, Warmup: w.warmup, Seed: w.seed}
	if !fs.Changed("warmup") && !w.warmupHelps(fs) {
		wl.Warmup = 0
	}
	if fs.Changed("duration") && !fs.Changed("requests") {
		wl.Requests = 0 // --duration alone: until the duration, not run's default count
	}
	return wl, w.checkArrival(fs)
}

// warmupHelps reports whether the default warm-up applies: not when the
// requests come from a file (--dataset, --trace, --prompt-file: a warm-up
// would take the first entry out of the measured ones) or the run is one
// shard of several (each shard's slice of the schedule is measured whole).
func (w *workloadOptions) warmupHelps(fs *pflag.FlagSet) bool {
	return w.src.Dataset == "" && w.src.Trace == "" && w.promptFile == "" && !fs.Changed("shard")
}

// workload builds the workload: --rate makes it open loop, --concurrency
// above 1 closed loop, otherwise sequential.
func (w *workloadOptions) workload(fs *pflag.FlagSet) (workload.Workload, error) {
	wl, err := w.baseWorkload(fs)
	if err != nil {
		return wl, err
	}
	switch {
	case w.src.Trace != "" && (fs.Changed("rate") || fs.Changed("concurrency")):
		return wl, errors.New("--trace with --rate or --concurrency: a trace sets its own send times")
	case w.src.Trace != "":
		wl.Mode = workload.ModeTrace
		if !fs.Changed("requests") {
			wl.Requests = 0 // the whole trace (or window)
		}
	case fs.Changed("rate") && fs.Changed("concurrency"):
		return wl, errors.New("--rate and --concurrency: expected one of them (open or closed loop)")
	case fs.Changed("rate"):
		wl.Mode, wl.Rate, wl.Arrival, wl.Burstiness = workload.ModeRate, w.rate, w.arrival, w.burstiness
	case w.concurrency > 1:
		wl.Mode, wl.Concurrency = workload.ModeConcurrent, w.concurrency
	case w.concurrency < 1:
		return wl, fmt.Errorf("--concurrency %d: expected at least 1", w.concurrency)
	default:
		wl.Mode = workload.ModeSequential
	}
	return wl, wl.Validate()
}

// checkArrival checks --arrival and --burstiness even when --rate does not
// use them: a typo, or a forgotten --rate, must not silently run another
// workload.
func (w *workloadOptions) checkArrival(fs *pflag.FlagSet) error {
	if !slices.Contains(workload.Arrivals, w.arrival) {
		return fmt.Errorf("--arrival %q: expected one of %s", w.arrival, strings.Join(workload.Arrivals, ", "))
	}
	if !(w.burstiness > 0) || math.IsInf(w.burstiness, 0) {
		return fmt.Errorf("--burstiness %g: expected a gamma shape > 0 (1 = Poisson)", w.burstiness)
	}
	if !fs.Changed("rate") && (fs.Changed("arrival") || fs.Changed("burstiness")) {
		return errors.New("--arrival and --burstiness shape an open-loop schedule: expected --rate too")
	}
	return nil
}

// streams expands --stream into the runs' stream modes.
func streams(s string) ([]bool, error) {
	switch s {
	case "on":
		return []bool{true}, nil
	case "off":
		return []bool{false}, nil
	case "both":
		return []bool{true, false}, nil
	}
	return nil, fmt.Errorf("--stream %q: expected one of %s", s, strings.Join(streamChoices, ", "))
}

func newRunCmd() *cobra.Command { return runCmdFor(&sessionOptions{}) }

// runCmdFor is run's command over o (calibrate is run with its own ending).
func runCmdFor(o *sessionOptions) *cobra.Command {
	var w workloadOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run any workload (sequential, concurrent, rate) and report client and engine latency",
		Long: `run sends a workload to a server (the bundled engine unless --base-url, --server-cmd
or --server says otherwise), scrapes /metrics before and after each run, and prints the
latency table. Records go to DIR/requests.jsonl as each request completes, the summary
to DIR/results.json.

Workloads: sequential (default); --concurrency N keeps N requests in flight (closed
loop); --rate R sends R requests/s on a schedule (open loop, --arrival constant,
poisson or gamma with --burstiness), measuring latency also from the intended send time;
--trace FILE replays a recorded trace's send times and lengths (open loop too).

Traffic: a fixed prompt (default), --prompt-tokens, --prompt-file, length distributions
(--input-tokens, --output-tokens), shared system prompts (--shared-prefix-tokens,
--prefix-groups), multi-turn sessions (--turns, --think-time: --requests then counts
sessions, --concurrency sessions in flight, --rate session starts), --dataset or --trace.`,
		Example: `  servebench run --speedup 20 --requests 50 --stream both
  servebench run --base-url http://127.0.0.1:8000 --concurrency 16 --requests 200
  servebench run --base-url http://127.0.0.1:8000 --rate 5 --duration 60s --arrival gamma --burstiness 0.5
  servebench run --prompt-file prompts.jsonl --endpoint completions --stream off
  servebench run --input-tokens lognormal:512,256 --output-tokens uniform:64-256 --concurrency 8 --requests 100
  servebench run --turns 4 --think-time uniform:0.5-2 --shared-prefix-tokens 1024 --prefix-groups 8 --concurrency 4
  servebench run --dataset sharegpt:ShareGPT_V3.json --turns all --concurrency 16 --requests 100
  servebench run --trace mooncake_trace.jsonl --trace-speed 2 --trace-window 0,10m`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{validatesItself: "session"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.loadColumns = true
			p, err := w.runs(cmd.Flags(), o, "")
			if err != nil {
				return usageErr(err)
			}
			return o.session(cmd, p)
		},
	}
	o.addFlags(cmd.Flags(), 256)
	o.addRepeatsFlag(cmd.Flags())
	w.addFlags(cmd.Flags(), 20)
	cmd.Flags().StringVar(&w.stream, "stream", "both", "streaming: "+strings.Join(streamChoices, ", ")+" (run's default both: the workload twice, streaming then non-streaming; sweep's default is on)")
	cmd.Flags().IntVar(&w.concurrency, "concurrency", 1, "requests in flight (closed loop)")
	cmd.Flags().Float64Var(&w.rate, "rate", 0, "requests per second, open loop (default: none: sequential, or closed loop with --concurrency)")
	w.addTraceFlags(cmd.Flags())
	o.addResultsToLog(cmd.Flags())
	w.addShardFlags(cmd.Flags(), "the run", "start at this RFC 3339 instant, as every shard does")
	cmd.Flags().StringVar(&o.directURL, "direct-url", "", "the engine's own URL: send every request there too, one after the other with --base-url's (a proxy, a gateway) in alternating order, and report what the path adds (run NAME"+bench.DirectSuffix+" beside each run, report.md's 'What the path adds', path.png)")
	return cmd
}

// addResultsToLog adds --results-to-log (run and sweep: a shard's way to
// hand its results over without a shared volume).
func (o *sessionOptions) addResultsToLog(fs *pflag.FlagSet) {
	fs.BoolVar(&o.resultsToLog, "results-to-log", false, "at the end, write the results files merge reads to stdout as one checksummed text block (for kubectl logs; servebench merge reads the saved log)")
}

// addShardFlags adds --shard and --start-at; what names the sharded thing,
// when what --start-at starts.
func (w *workloadOptions) addShardFlags(fs *pflag.FlagSet, what, when string) {
	fs.StringVar(&w.shard, "shard", "", "K/N: send shard K of N of "+what+" (request i when i mod N = K); --requests, --rate and --concurrency are the totals")
	fs.StringVar(&w.startAt, "start-at", "", "with --shard: "+when+" (refused when already over 1 s past)")
}

// runs builds one RunSpec per stream mode, its rate and duration in the
// time the flags give them (modelled with --speedup: config puts them in
// the session's clock); prefix names sweep levels.
// Their source is left to sessionPlan.loadSource.
func (w *workloadOptions) runs(fs *pflag.FlagSet, o *sessionOptions, prefix string) (sessionPlan, error) {
	wl, err := w.workload(fs)
	if err != nil {
		return sessionPlan{}, err
	}
	if _, err := o.sessionClock(fs); err != nil { // checked here; config applies the clock load derives
		return sessionPlan{}, err
	}
	src, err := w.sourceOptions(fs)
	if err != nil {
		return sessionPlan{}, err
	}
	modes, err := streams(w.stream)
	if err != nil {
		return sessionPlan{}, err
	}
	sh, err := w.shardFlags(fs, len(modes))
	if err != nil {
		return sessionPlan{}, err
	}
	p := sessionPlan{source: &src}
	for _, s := range modes {
		spec := bench.RunSpec{Name: prefix + string(result.StreamRun(s)), Workload: wl, Request: o.request(s), Shard: sh}
		if err := spec.Validate(); err != nil {
			return sessionPlan{}, err
		}
		p.runs = append(p.runs, spec)
	}
	return p, nil
}

// shardFlags reads --shard and --start-at. A sharded run is one run (the
// shards start it together): nruns must be 1.
func (w *workloadOptions) shardFlags(fs *pflag.FlagSet, nruns int) (bench.Shard, error) {
	if fs.Lookup("shard") == nil || (!fs.Changed("shard") && !fs.Changed("start-at")) {
		return bench.Shard{}, nil
	}
	if !fs.Changed("shard") {
		return bench.Shard{}, errors.New("--start-at without --shard: expected the shard this process sends (K/N)")
	}
	if n, err := fs.GetInt("repeats"); err == nil && n > 1 {
		// A shard is a slice of one run that every machine starts together
		// and merge joins: repeats would start each shard's next run alone.
		return bench.Shard{}, fmt.Errorf("--repeats %d with --shard: expected one of them: a shard sends its slice of one run, started with the other shards; repeat by starting the shards again, each into its own directory, and merge each", n)
	}
	sh, err := bench.ParseShard(w.shard)
	if err != nil {
		return sh, err
	}
	if nruns != 1 {
		return sh, errors.New("--shard: expected one run (--stream on or off): the shards start one run together")
	}
	if fs.Changed("start-at") {
		if sh.StartAt, err = time.Parse(time.RFC3339, w.startAt); err != nil {
			return sh, fmt.Errorf("--start-at %q: expected an RFC 3339 time such as 2026-12-01T12:00:00Z", w.startAt)
		}
		if late := time.Since(sh.StartAt); late > bench.MaxStartLate && !validating(fs) {
			return sh, fmt.Errorf("--start-at %s: already %v past: refusing to start a shard late", w.startAt, late.Round(time.Millisecond))
		}
	}
	return sh, nil
}
