package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/engine/option"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
)

// Config is a whole benchmark session: one server, one or more runs, one
// results directory. table, run and sweep each build one.
type Config struct {
	Server   ServerOptions
	Runs     []RunSpec
	Dir      string   // results directory (created)
	Args     []string // command line, redacted before it is written
	Version  string   // servebench version
	Progress io.Writer
	// Notes gets what Execute decided that the user should know (an
	// Ollama met at --base-url, its endpoint switched); nil: not said.
	Notes io.Writer
	// Labels (--label) and Build (the commit and CI job) go into the
	// manifest as they are.
	Labels map[string]string
	Build  *result.Build

	RequestTimeout time.Duration
	StallTimeout   time.Duration
	// AcceptEncoding is the client's (client.Options.AcceptEncoding).
	AcceptEncoding string
	Retries        int
	// FailOnErrorRate, in percent (0-100), makes a run with more failed
	// requests than that invalid; negative disables the check.
	FailOnErrorRate float64
	// StopAfter, when set, is asked after each run whether to skip the rest
	// (sweep's early stop); a non-empty reason stops and is kept as a warning.
	StopAfter func(run *result.Run) string
	// Search, when set, adds runs after Runs until it is done and writes its
	// answer into results.json's max_rate (sweep --find-max-rate).
	Search *MaxRateSearch
	// Client, when set, sends the requests (Runner.Client: any Doer, e.g. a
	// caller's wrapper around a client.Client); nil builds a client.Client.
	Client Doer
	// DirectURL, when set, is the engine's own URL: every request is also
	// sent there (Runner.Direct), to set what the path to Server.BaseURL
	// adds against it (--direct-url).
	DirectURL string
	// Prometheus, when set, is where engine figures come from instead of
	// scraping Server.MetricsURLs (Filter is set from Server.Model).
	Prometheus *promql.Options
	// RequestIDs sends each request an X-Request-Id (Runner.RequestIDs) and
	// starts the bundled engine with --enable-log-requests, so server.log
	// names every request by that id.
	RequestIDs bool
	// Grace, ReconcileWait and RetryBackoff pass through to the Runner (0: defaults).
	Grace, ReconcileWait, RetryBackoff time.Duration
	// Interval splits every run into windows (Runner.Interval; 0: none);
	// each boundary also rewrites Dir/checkpoint.json.
	Interval time.Duration
	// GaugeEvery, with several --metrics-url, is how often each run scrapes
	// them for the replicas' KV-cache usage (Metrics.GaugeEvery; 0: not
	// sampled, DefaultGaugeEvery is the command's default).
	GaugeEvery time.Duration
	// ContinueOnServerExit: a request that cannot connect makes its
	// worker wait for the server's /health instead of failing on; for a
	// server servebench did not start (one it started ends the run when
	// it exits).
	ContinueOnServerExit bool
	// Bounded keeps no record in memory (Runner.Bounded): Execute returns
	// none; they are in Dir/requests.jsonl.
	Bounded bool
	// Clock is the time the session's inputs were given in and its results
	// are shown in (results.json "clock"; Clock.Annotate); the zero Clock
	// records none. Runs, SLOs and searches arrive already in wall time.
	Clock result.Clock
}

// Execute starts the server, runs every RunSpec, writes requests.jsonl as it
// goes and results.json at the end (also when interrupted or the server
// died), stops the server and returns what was measured. Errors: usage
// errors before anything ran; ErrInterrupted; ErrServerExited;
// ErrInvalidRun (every request failed, or the error rate passed
// FailOnErrorRate); launch errors when the server did not start.
func Execute(ctx context.Context, cfg Config) (*result.Results, []result.Record, error) {
	cfg = cfg.withDefaults()
	maxConns, prom, err := checkConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil { // once checked, before anything starts
		return nil, nil, fmt.Errorf("%w: %w", ErrUsage, &option.FieldError{Field: "Dir", Reason: "results directory ({Dir})", Err: err})
	}
	res := &result.Results{Schema: result.Schema, Manifest: NewManifest(cfg.Version, cfg.Args), Runs: []result.Run{}, Warnings: []string{}}
	res.Manifest.Labels, res.Manifest.Build = cfg.Labels, cfg.Build
	res.Warnings = append(res.Warnings, sourceInputWarnings(cfg.Runs)...)
	if cfg.Clock.Name != "" {
		cfg.Clock.Annotate(res) // the checkpoints carry it too
	}
	prog := newProgress(cfg.Progress)
	srv, err := StartServer(ctx, serverOptions(cfg, prog))
	if err != nil {
		if ctx.Err() != nil { // Ctrl-C during start-up: nothing measured yet
			return nil, nil, fmt.Errorf("%w during server start-up: %w", ErrInterrupted, err)
		}
		return startFailed(cfg.Dir, res, srv, err)
	}
	defer srv.Stop()
	if cfg, err = fitRuns(cfg, srv); err != nil {
		return nil, nil, err
	}
	res.Server = srv.Info
	if cfg.Clock, err = engineClock(cfg.Clock, srv.Info.Bundled, srv.Info.BaseURL); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUsage, err) // refused before any run: nothing measured
	}
	if prom != nil {
		res.Server.MetricsURL, res.Server.PrometheusURL = nil, launch.RedactURL(prom.URL())
	}
	prog.printf("server ready: %s, model %s\n", srv.Info.BaseURL, srv.Model)

	rw, err := store.CreateRecordFile(filepath.Join(cfg.Dir, result.RequestsFile))
	if err != nil {
		return nil, nil, err
	}
	defer rw.Close()
	runner, closeClients := sessionRunner(&cfg, srv, rw, prom, maxConns)
	defer closeClients()
	if srv.Info.Engine == result.EngineOllama && len(cfg.Server.MetricsURLs) == 0 && prom == nil {
		runner.Metrics = nil
		runner.NoMetrics = ollamaNoMetrics
		res.Server.MetricsURL = nil // none scraped
		cfg = ollamaEndpoint(cfg, srv, cfg.Notes)
	}
	res.Server.Dialect = detectDialect(ctx, runner.Metrics, res)
	cfg = calibrateTokens(ctx, cfg, srv, runner.Client, res)
	if slices.ContainsFunc(cfg.Runs, func(r RunSpec) bool { return r.Shard.sharded() }) {
		runner.SaveSnapshot = func(name string, s *scrape.Snapshot) {
			if err := s.WriteFile(filepath.Join(cfg.Dir, SnapshotFile(name))); err != nil {
				res.Warnings = append(res.Warnings, "saving the /metrics snapshot for merge: "+err.Error())
			}
		}
	}
	m := measured{why: map[string]string{}}
	runErr := runAll(ctx, cfg, srv, runner, prog, res, &m)
	recs := m.recs
	if err := rw.Err(); err != nil && !errors.Is(runErr, ErrResultsWrite) { // a run's error says it already
		res.Warnings = append(res.Warnings, err.Error())
		runErr = errors.Join(runErr, fmt.Errorf("%w: %w", ErrResultsWrite, err))
	}
	if cfg.Clock.Name != "" {
		cfg.Clock.Annotate(res)
	}
	if err := store.WriteResults(cfg.Dir, res); err != nil {
		return res, recs, errors.Join(runErr, fmt.Errorf("%w: %w", ErrResultsWrite, err))
	}
	_ = store.RemoveCheckpoint(cfg.Dir) // results.json is newer: report would not read it
	if runErr != nil {
		return res, recs, runErr
	}
	return res, recs, validate(res, m.why, cfg.FailOnErrorRate)
}

// sessionRunner is the Runner of a session's runs on srv: its settings
// from cfg, its records into rw, its engine figures from srv's /metrics
// (or prom), and the clients it sends with (cfg.Client, or one built for
// srv; the direct URL's), which closeClients closes.
func sessionRunner(cfg *Config, srv *Server, rw *store.RecordWriter, prom *promql.Source, maxConns int) (r *Runner, closeClients func()) {
	r = &Runner{
		Client:        cfg.Client,
		Records:       rw,
		ServerExited:  srv.Exited(),
		Retries:       cfg.Retries,
		RequestIDs:    cfg.RequestIDs,
		RetryBackoff:  cfg.RetryBackoff,
		Grace:         cfg.Grace,
		ReconcileWait: cfg.ReconcileWait,
		Interval:      cfg.Interval,
		Bounded:       cfg.Bounded,
		SpillDir:      cfg.Dir,
		Metrics: &Metrics{HTTP: &http.Client{Timeout: 10 * time.Second}, URLs: srv.MetricsURLs, Filter: scrape.Filter{Model: cfg.Server.Model},
			Prom: prom, GaugeEvery: cfg.GaugeEvery, Passes: srv.Passes},
	}
	if cfg.ContinueOnServerExit {
		r.WaitServer = newServerWaiter(srv.BaseURL).wait
	}
	newClient := func(baseURL string) *client.Client {
		return client.New(client.Options{BaseURL: baseURL, APIKey: cfg.Server.APIKey, MaxConns: maxConns,
			RequestTimeout: cfg.RequestTimeout, StallTimeout: cfg.StallTimeout, AcceptEncoding: cfg.AcceptEncoding})
	}
	var built []*client.Client
	if r.Client == nil {
		c := newClient(srv.BaseURL)
		built, r.Client = append(built, c), c
	}
	if cfg.DirectURL != "" {
		dc := newClient(cfg.DirectURL)
		built, r.Direct, r.DirectURL = append(built, dc), dc, launch.RedactURL(cfg.DirectURL)
	}
	return r, func() {
		for i := len(built) - 1; i >= 0; i-- { // as deferred, the last built first
			built[i].Close()
		}
	}
}

// engineClock is c with the speed-up (and start-up speed-up) the bundled
// engine states in its /version when c has none (the start-up speed-up
// also when servebench started it with --speedup): a bundled engine started
// by --server-cmd (or reached by --base-url) runs sped up without
// --speedup, so the session's inputs were wall-clock and stay so, but its
// figures can be shown in modelled time (c modelled: tune --server-cmd
// --clock modelled), its wall-clock tables say the engine ran K times
// faster, and table/compare --clock modelled can convert. The modelled
// clock of a server that states no speed-up (not the bundled engine, at
// baseURL) is refused: its time is the wall clock's.
func engineClock(c result.Clock, bd *result.Bundled, baseURL string) (result.Clock, error) {
	if c.Name == "" {
		return c, nil // none kept
	}
	if c.Speedup > 1 { // the --speedup servebench started the engine with
		if bd != nil && c.StartupSpeedup == 0 {
			c.StartupSpeedup = bd.StartupSpeedup // its --startup-speedup, as it states it
		}
		return c, nil
	}
	if bd == nil || bd.Speedup <= 0 {
		if c.Name == result.ClockModelled {
			return c, option.Errorf("Clock", c.Name, "the server at %s states no speed-up in its /version (it is not the bundled engine): its time is the wall clock's; expected wall", baseURL)
		}
		return c, nil
	}
	if bd.Speedup <= 1 {
		return c, nil // not sped up: both clocks are the wall clock
	}
	k, err := result.NewClock(c.Name, bd.Speedup)
	k.StartupSpeedup = cmp.Or(c.StartupSpeedup, bd.StartupSpeedup)
	return k, err
}

// ollamaNoMetrics is the warning of a run on an Ollama without engine
// figures: what gives them.
const ollamaNoMetrics = "Ollama has no /metrics and its /v1 endpoints carry no engine timings: --endpoint ollama-chat (its /api/chat) gives them per request"

// ollamaEndpoint is cfg with the runs whose endpoint the user did not
// choose sent to Ollama's /api/chat, the one source of its engine figures
// (on copies of its runs and search), and says so on notes: a server met at
// --base-url is an Ollama only once it answered.
func ollamaEndpoint(cfg Config, srv *Server, notes io.Writer) Config {
	switched := false
	cfg.Runs = slices.Clone(cfg.Runs)
	for i := range cfg.Runs {
		if r := &cfg.Runs[i].Request; r.AutoEndpoint && r.Endpoint != EndpointOllamaChat {
			r.Endpoint, switched = EndpointOllamaChat, true
		}
	}
	if cfg.Search != nil && cfg.Search.Base.Request.AutoEndpoint {
		s := *cfg.Search
		s.Base.Request.Endpoint, switched = EndpointOllamaChat, true
		cfg.Search = &s
	}
	if switched && notes != nil {
		fmt.Fprintf(notes, "servebench: %s is Ollama %s (it answered GET /api/version): requests go to its /api/chat "+
			"(--endpoint ollama-chat), whose answers carry its own timings for the engine columns; "+
			"--endpoint chat sends them to /v1/chat/completions, without engine figures (Ollama has no /metrics)\n",
			srv.Info.BaseURL, orUnknown(srv.Info.Version))
	}
	return cfg
}

func orUnknown(s string) string {
	if s == "" {
		return "(version unknown)"
	}
	return s
}

// MaxRetries bounds Config.Retries (--retries).
const MaxRetries = 100

// CheckLimits checks the session's own bounds, each error an
// option.FieldError naming the field: the retries, the window and gauge intervals, the timeouts,
// and ContinueOnServerExit, which is only for a server servebench did not
// start. Commands call it before anything starts; Execute checks them too.
func (cfg Config) CheckLimits() error {
	so := cfg.Server
	switch {
	case cfg.Retries < 0 || cfg.Retries > MaxRetries:
		return option.Errorf("Retries", cfg.Retries, "expected 0-%d", MaxRetries)
	case cfg.ContinueOnServerExit && (so.BaseURL == "" || so.ServerCmd != "" || so.Preset != ""):
		return option.Errorf("ContinueOnServerExit", nil, "only for a server servebench did not start ({BaseURL} without {ServerCmd} or {Preset}); one it starts ends the run when it exits")
	case cfg.GaugeEvery < 0:
		return option.Errorf("GaugeEvery", cfg.GaugeEvery, "expected a duration >= 0 (0: not sampled)")
	case cfg.Interval < 0:
		return option.Errorf("Interval", cfg.Interval, "expected a duration >= 0 (0: no windows)")
	case cfg.RequestTimeout < 0 || cfg.StallTimeout < 0:
		bad := "RequestTimeout"
		if cfg.StallTimeout < 0 {
			bad = "StallTimeout"
		}
		return option.Errorf(bad, nil, "{RequestTimeout} %v / {StallTimeout} %v: expected durations >= 0", cfg.RequestTimeout, cfg.StallTimeout)
	}
	return nil
}

// checkConfig checks what can be checked before a server starts, writing
// nothing: the session's limits, the runs (and the most requests any
// keeps in flight), the server options and the Prometheus source.
func checkConfig(cfg Config) (maxConns int, prom *promql.Source, err error) {
	if err := cfg.CheckLimits(); err != nil {
		return 0, nil, err
	}
	if maxConns, err = validateRuns(cfg.Runs, cfg.Search); err != nil {
		return 0, nil, err
	}
	if err := CheckServer(cfg.Server); err != nil {
		return 0, nil, err
	}
	if err := checkDirectURL(&cfg); err != nil {
		return 0, nil, err
	}
	if cfg.Prometheus != nil {
		po := *cfg.Prometheus
		po.Filter = scrape.Filter{Model: cfg.Server.Model}
		if prom, err = promql.New(po); err != nil {
			return 0, nil, option.Wrap("Prometheus", nil, err)
		}
	}
	return maxConns, prom, nil
}

// serverOptions are the server's options for this session: its results
// directory, progress, and the bundled engine's flags the records need.
func serverOptions(cfg Config, prog *progress) ServerOptions {
	so := cfg.Server
	so.Dir = cfg.Dir
	so.Phase = prog.phase
	if cfg.RequestIDs && so.Bundled() {
		so.EngineArgs = append(slices.Clip(so.EngineArgs), "--enable-log-requests")
	}
	if so.Bundled() {
		// Each record's cached_tokens: vLLM reports them only with this flag.
		so.EngineArgs = append(slices.Clip(so.EngineArgs), "--enable-prompt-tokens-details")
	}
	return so
}

// fitRuns checks every run's --max-tokens against the server's context
// and returns cfg with each run (and the search's base) given its
// max_model_len, on copies: the runs and search cfg holds stay as given.
func fitRuns(cfg Config, srv *Server) (Config, error) {
	if cfg.Search != nil {
		s := *cfg.Search
		if err := srv.CheckMaxTokens(s.Base.Request.MaxTokens); err != nil {
			return cfg, err
		}
		s.Base.Request.MaxModelLen = srv.MaxModelLen
		cfg.Search = &s
	}
	cfg.Runs = slices.Clone(cfg.Runs)
	for i := range cfg.Runs {
		if err := srv.CheckMaxTokens(cfg.Runs[i].Request.MaxTokens); err != nil {
			return cfg, err
		}
		cfg.Runs[i].Request.MaxModelLen = srv.MaxModelLen
	}
	return cfg, nil
}

// withDefaults is cfg with its runs and search completed (RunSpec and
// MaxRateSearch WithDefaults), on copies: the caller's stay as given.
// Execute completes its Config once, here, before checking it.
func (cfg Config) withDefaults() Config {
	runs := make([]RunSpec, len(cfg.Runs))
	for i := range cfg.Runs {
		runs[i] = cfg.Runs[i].WithDefaults()
	}
	cfg.Runs = runs
	if cfg.Search != nil {
		s := cfg.Search.WithDefaults()
		cfg.Search = &s
	}
	return cfg
}

// startFailed keeps, in results.json, what a server servebench started
// measured before it failed to become ready (an Ollama refusing its model
// has passed port open and health OK), with the error as a warning; res has
// no runs. Without a started server there is nothing to keep: res is nil.
func startFailed(dir string, res *result.Results, srv *Server, err error) (*result.Results, []result.Record, error) {
	if srv == nil || srv.Info.Startup == nil {
		return nil, nil, err
	}
	res.Server = srv.Info
	res.Warnings = append(res.Warnings, "the server did not become ready: "+err.Error())
	if werr := store.WriteResults(dir, res); werr != nil {
		return nil, nil, errors.Join(err, werr)
	}
	return res, nil, err
}

// validateRuns checks every spec, and the search's first, and returns the
// most requests any run keeps in flight, to size the client's connection pool.
func validateRuns(runs []RunSpec, search *MaxRateSearch) (int, error) {
	if search != nil {
		if err := search.Validate(); err != nil {
			return 0, err
		}
		first, _ := search.spec(search.Start)
		runs = append(runs[:len(runs):len(runs)], first)
	}
	if len(runs) == 0 {
		return 0, errors.New("no runs to do")
	}
	maxConns := 1
	for i := range runs {
		if err := runs[i].Validate(); err != nil {
			return 0, err
		}
		w := runs[i].Workload
		c := w.Concurrency
		if w.Mode == workload.ModeRate || w.Mode == workload.ModeTrace {
			c = min(w.MaxWorkers, 4096)
		}
		maxConns = max(maxConns, c)
	}
	return maxConns, nil
}

// detectDialect takes a first /metrics snapshot to learn the server's
// dialect; without one the engine columns stay absent, with a warning.
func detectDialect(ctx context.Context, m *Metrics, res *result.Results) string {
	if m == nil {
		return "none"
	}
	if m.Prom != nil {
		// Prometheus may not have scraped a server servebench just started:
		// each run's window detects again.
		dl, err := m.Prom.Detect(ctx)
		if err != nil {
			res.Warnings = append(res.Warnings, err.Error())
			return "none"
		}
		m.Dialect = dl
		return dl.Name
	}
	s := m.snapshot(ctx)
	switch {
	case s.err != nil:
		res.Warnings = append(res.Warnings, fmt.Sprintf("/metrics unavailable (%v): engine figures absent, client figures still reported", s.err))
	case m.Dialect == nil:
		res.Warnings = append(res.Warnings, "/metrics has no metric family of a known server (vLLM, SGLang, TGI, llama.cpp): engine figures absent")
	default:
		return m.Dialect.Name
	}
	return "none"
}

// measured is what a session's runs returned besides results.json's
// runs: their records, and each run's commonest error text by name (the
// runs' Outcome.Commonest), for validate.
type measured struct {
	recs []result.Record
	why  map[string]string
}

// keep adds out, one run's outcome, to res and m: the run and its direct
// side, their warnings (named), records and commonest errors.
func (m *measured) keep(res *result.Results, out *Outcome) {
	for _, run := range []*result.Run{out.Run, out.Direct} {
		if run == nil {
			continue
		}
		res.Runs = append(res.Runs, *run)
		for _, w := range run.Warnings {
			res.Warnings = append(res.Warnings, run.Name+": "+w)
		}
	}
	m.recs = append(m.recs, out.Records...)
	m.recs = append(m.recs, out.DirectRecords...)
	maps.Copy(m.why, out.Commonest)
}

// nextSpec is the session's run i: cfg's runs, then the search's steps;
// false once there is none.
func nextSpec(cfg *Config, i int, done []result.Run) (RunSpec, bool) {
	switch {
	case i < len(cfg.Runs):
		return cfg.Runs[i], true
	case cfg.Search != nil:
		return cfg.Search.Next(done)
	}
	return RunSpec{}, false
}

// runAll does the runs in order, then the search's, stopping at the first
// that ends early; each run reports to its progress bar and checkpoint.
func runAll(ctx context.Context, cfg Config, srv *Server, runner *Runner, prog *progress, res *result.Results, m *measured) error {
	if cfg.Search != nil {
		defer func() { res.MaxRate = cfg.Search.Result(res.Runs) }()
	}
	for i := 0; ; i++ {
		spec, ok := nextSpec(&cfg, i, res.Runs)
		if !ok {
			return nil
		}
		if spec.Request.Model == "" {
			spec.Request.Model = srv.Model
		}
		bar := prog.start(spec)
		cp := &checkpointer{dir: cfg.Dir, res: res, bar: bar}
		out, err := runner.Measure(ctx, spec, Reporter{Record: bar.add, Window: cp.window})
		bar.finish()
		if w := cp.warning(); w != "" {
			res.Warnings = append(res.Warnings, w)
		}
		m.keep(res, &out)
		run := out.Run
		if err == nil && run != nil && serverGone(srv, run) {
			err = ErrServerExited
		}
		if errors.Is(err, ErrServerExited) {
			res.Warnings = append(res.Warnings, serverExitWarning(srv))
			return fmt.Errorf("%w (%v); partial results saved", ErrServerExited, srv.ExitErr())
		}
		if err != nil {
			return err
		}
		if cfg.StopAfter != nil {
			if why := cfg.StopAfter(run); why != "" && i+1 < len(cfg.Runs) {
				res.Warnings = append(res.Warnings, fmt.Sprintf("stopped after run %s: %s", run.Name, why))
				return nil
			}
		}
	}
}

// serverGone reports whether a server servebench started exited during a
// run that otherwise ended normally: once it is gone, the remaining requests
// fail at once (connection refused), often before the exit is noticed.
func serverGone(srv *Server, run *result.Run) bool {
	exited := srv.Exited()
	if exited == nil {
		return false
	}
	wait := time.Duration(0)
	if run.OK < run.Requests {
		wait = time.Second // failures: give the launcher time to reap the process
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-exited:
		return true
	case <-t.C:
		return false
	}
}

func serverExitWarning(srv *Server) string {
	w := fmt.Sprintf("server exited during the run (%v); in-flight requests recorded as failed", srv.ExitErr())
	if tail := srv.LogTail(5); len(tail) > 0 {
		w += "; last log lines: " + strings.Join(tail, " | ")
	}
	return w
}

// validate says whether results are a valid measurement: some request
// succeeded in every run, and no run's error rate passed failOnErrorRate
// percent (negative: no limit). It returns an error wrapping ErrInvalidRun
// that, given the run's records, also says why every request failed: the
// commonest error text (the server's own message).
func validate(res *result.Results, why map[string]string, failOnErrorRate float64) error {
	var errs []error
	for i := range res.Runs {
		r := &res.Runs[i]
		failed := r.Requests - r.OK
		switch {
		case r.Requests > 0 && r.OK == 0:
			errs = append(errs, fmt.Errorf("run %s: every request failed (%d of %d; %s)%s",
				r.Name, failed, r.Requests, result.ErrorCounts(r.Errors), why[r.Name]))
		case failOnErrorRate >= 0 && r.Requests > 0 && 100*float64(failed)/float64(r.Requests) > failOnErrorRate:
			errs = append(errs, fmt.Errorf("run %s: %d of %d requests failed (%.1f%%), over --fail-on-error-rate %g%%",
				r.Name, failed, r.Requests, 100*float64(failed)/float64(r.Requests), failOnErrorRate))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidRun, errors.Join(errs...))
}

// NewManifest describes this servebench and host; args are redacted.
func NewManifest(version string, args []string) result.Manifest {
	host, _ := os.Hostname()
	return result.Manifest{
		Version:     version,
		CommandLine: launch.RedactArgs(args),
		StartedAt:   time.Now().UTC(),
		Host: result.Host{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS,
			Arch: runtime.GOARCH, Hostname: host},
	}
}

// calibrateTokens measures, when a run generates its prompts, how the
// server counts them (CalibrateTokens) and returns cfg with every such run
// (and the search's base) given the answer and a calibrated copy of its
// source, so generated prompts are token-exact; the runs and sources cfg
// holds stay as they are. A failure is a warning: the runs go on with one
// word per token and report what the server counted.
func calibrateTokens(ctx context.Context, cfg Config, srv *Server, doer Doer, res *result.Results) Config {
	runs := slices.Clone(cfg.Runs)
	specs := make([]*RunSpec, 0, len(runs)+1)
	for i := range runs {
		specs = append(specs, &runs[i])
	}
	var search *MaxRateSearch
	if cfg.Search != nil {
		s := *cfg.Search
		search = &s
		specs = append(specs, &search.Base)
	}
	var cal *result.TokenCalibration
	sources := map[calibratedKey]workload.Source{} // a source shared by runs is calibrated once
	for _, spec := range specs {
		if spec.Source == nil || !generatesText(spec) {
			continue
		}
		if cal == nil || cal.Endpoint != spec.Request.Endpoint {
			model := cmp.Or(spec.Request.Model, srv.Model)
			c, err := CalibrateTokens(ctx, doer, srv.BaseURL, cfg.Server.APIKey, model, spec.Request.Endpoint)
			if err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("prompt token calibration failed (%v): generated prompts count one word per token", err))
				break // the runs before keep theirs
			}
			cal = c
			res.Server.PromptTokens = c
		}
		spec.Request.Tokens = cal
		if s, ok := spec.Source.(interface {
			Calibrated(*result.TokenCalibration) workload.Source
		}); ok {
			k := calibratedKey{spec.Source, cal}
			if sources[k] == nil {
				sources[k] = s.Calibrated(cal)
			}
			spec.Source = sources[k]
		}
	}
	cfg.Runs, cfg.Search = runs, search
	return cfg
}

// calibratedKey is a source calibrated by one calibration.
type calibratedKey struct {
	src workload.Source
	cal *result.TokenCalibration
}

// sourceInputWarnings are what the runs' sources say about their input
// (skipped dataset entries), once per source however many runs share it.
func sourceInputWarnings(runs []RunSpec) []string {
	var ws []string
	seen := map[workload.Source]bool{}
	for _, r := range runs {
		if w, ok := r.Source.(workload.Warner); ok && !seen[r.Source] {
			seen[r.Source] = true
			ws = append(ws, w.Warnings()...)
		}
	}
	return ws
}
