package bench

import (
	"context"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
)

// engineSource is where one run's engine figures come from: the engine's
// /metrics scraped before and after (scrapeSource), Prometheus over the
// run's window (promSource), the answers' own timings (ollamaSource), or
// nowhere (noEngine). Runner.Run calls before, start, after and windows in
// that order; a source lives for one run and holds only what it reads.
type engineSource interface {
	// before runs the warm-up (warm, which returns the warm-up requests
	// that succeeded) and takes the baseline the run's figures count from.
	before(ctx context.Context, run *result.Run, warm func() (ok int))
	// start wires the source into the run's windows (w, before they
	// begin) and starts what it reads while requests are sent; stop ends
	// that.
	start(ctx context.Context, run *result.Run, w *windower) (stop func())
	// after fills run.Engine once the last response is in, with rec, the
	// run's account of requests sent, succeeded and answered, against
	// which it sets the engine's count; it returns the scrape that closes
	// the last window (nil: none).
	after(ctx context.Context, run *result.Run, rec *result.Reconciliation) *scrape.Snapshot
	// windows fills the closed windows' engine figures that the source
	// reads only after the run.
	windows(ctx context.Context, run *result.Run, w *windower)
}

// engineSource picks the run's source; timings are the answers' own
// engine timings (kept per record), the source with --endpoint
// ollama-chat, when a Prometheus source still gives the windows theirs
// while /metrics is not scraped.
func (r *Runner) engineSource(spec *RunSpec, timings *store.EngineAcc) engineSource {
	warmup := spec.Workload.Warmup > 0
	var src engineSource = noEngine{why: r.NoMetrics}
	if m := r.Metrics; m != nil && m.Prom != nil {
		src = &promSource{m: m, warmup: warmup}
	} else if m != nil {
		src = &scrapeSource{m: m, wait: r.ReconcileWait, save: r.SaveSnapshot, warmup: warmup}
	}
	if spec.Request.Endpoint == EndpointOllamaChat {
		if p, ok := src.(*promSource); ok {
			return ollamaSource{p, timings}
		}
		return ollamaSource{noEngine{}, timings}
	}
	return src
}

// reconciliation starts the run's account of requests sent, succeeded and
// answered, against which a source sets the engine's count.
func reconciliation(run *result.Run, st *runState) *result.Reconciliation {
	return &result.Reconciliation{Sent: int(st.sent.Load()), OK: run.OK, Completed: st.coll.acc.Completed}
}

// noEngine is a run without engine figures; why, when set, is its warning.
type noEngine struct{ why string }

func (noEngine) before(_ context.Context, _ *result.Run, warm func() int) { warm() }

func (noEngine) start(context.Context, *result.Run, *windower) func() { return func() {} }

func (n noEngine) after(_ context.Context, run *result.Run, _ *result.Reconciliation) *scrape.Snapshot {
	if n.why != "" {
		run.Warnings = append(run.Warnings, "engine figures absent: "+n.why)
	}
	return nil
}

func (noEngine) windows(context.Context, *result.Run, *windower) {}

// scrapeSource reads the engine's /metrics (m.URLs) before and after the
// run, at each window's boundary, and (several replicas) their KV-cache
// usage meanwhile.
type scrapeSource struct {
	m      *Metrics
	wait   time.Duration                         // Runner.ReconcileWait
	save   func(name string, s *scrape.Snapshot) // Runner.SaveSnapshot; nil: not kept
	warmup bool
	base   snapshotResult // the before-run scrape
	gauges *gaugeSampler
}

func (s *scrapeSource) before(ctx context.Context, run *result.Run, warm func() int) {
	m := s.m
	var pre snapshotResult
	if s.warmup {
		pre = m.snapshot(ctx)
	}
	warmOK := warm()
	if ctx.Err() == nil {
		if pre.err == nil && pre.snap != nil {
			// The baseline must include the warm-up in the engine's counts, or
			// a late-counted warm-up request would pass for foreign traffic.
			s.base = m.settle(ctx, pre.snap, warmOK, s.wait)
		} else {
			s.base = m.snapshot(ctx)
		}
	}
	if s.save != nil && s.base.snap != nil {
		s.save(run.Name+".before", s.base.snap)
	}
}

func (s *scrapeSource) start(ctx context.Context, _ *result.Run, w *windower) func() {
	w.scrapeFrom(s.m, s.base.snap)
	s.gauges = s.m.startGauges(ctx, s.base.snap)
	return s.gauges.stop
}

// after takes the after-run snapshot, waiting (bounded by ReconcileWait)
// until the engine has counted at least the requests the client saw
// succeed, then fills run.Engine from the delta (and the replicas' KV
// usage from the gauges), with warnings whenever the figures cannot be
// trusted (no /metrics, unknown dialect, counter reset, foreign traffic).
func (s *scrapeSource) after(ctx context.Context, run *result.Run, rec *result.Reconciliation) *scrape.Snapshot {
	m := s.m
	run.Engine.Reconciliation = rec
	if s.base.err != nil || s.base.snap == nil {
		why := "not scraped"
		if s.base.err != nil {
			why = s.base.err.Error()
		}
		scrapeFailed(run, rec, "/metrics before the run: "+why)
		return nil
	}
	// Ctrl-C must not stop the after-run scrape: the delta is part of what
	// was measured. It stays bounded by ReconcileWait and the scrape timeout.
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	after := m.settle(ctx, s.base.snap, run.OK, s.wait)
	if s.save != nil && after.snap != nil {
		s.save(run.Name+".after", after.snap)
	}
	if after.err != nil {
		scrapeFailed(run, rec, "/metrics after the run: "+after.err.Error())
		return after.snap
	}
	if m.Dialect == nil {
		run.Warnings = append(run.Warnings, "engine figures absent: /metrics has no metric family servebench knows (vLLM, SGLang, TGI, llama.cpp)")
		return after.snap
	}
	rec.WaitedS = time.Since(start).Seconds()
	m.Figures(run, rec, s.base.snap, after.snap)
	s.gauges.fill(run.Engine.Replicas, after.snap)
	return after.snap
}

// scrapeFailed leaves the engine figures out because a scrape failed (a
// server that died mid-run), and says so in the reconciliation too, so the
// reports give that reason rather than "the server does not export" them.
func scrapeFailed(run *result.Run, rec *result.Reconciliation, why string) {
	run.Warnings = append(run.Warnings, "engine figures absent: "+why)
	rec.Note = why
	rec.EngineAbsent = true
}

// windows: each window's engine delta came from its boundary's scrape.
func (s *scrapeSource) windows(context.Context, *result.Run, *windower) {}

// promSource reads the engine's figures from Prometheus (Metrics.Prom):
// the run's window once it is over, each --interval window as Prometheus
// has scraped past its end.
type promSource struct {
	m      *Metrics
	warmup bool
	win    *promql.Window // the run's window, split into its windows at the end
}

func (s *promSource) before(ctx context.Context, run *result.Run, warm func() int) {
	warm()
	if s.warmup {
		s.m.promAfterWarmup(ctx, run)
	}
}

// start reads each window's engine deltas while the run goes on (promLoop).
func (s *promSource) start(_ context.Context, run *result.Run, w *windower) func() {
	w.readProm(func() *promql.Windows { return s.m.Prom.Windows(run.StartedAt) })
	return func() {}
}

func (s *promSource) after(ctx context.Context, run *result.Run, rec *result.Reconciliation) *scrape.Snapshot {
	run.Engine.Reconciliation = rec
	s.win = s.m.PromFigures(ctx, run, rec)
	return nil
}

func (s *promSource) windows(ctx context.Context, run *result.Run, w *windower) {
	w.promWindows(ctx, run, s.win)
}

// ollamaSource takes the engine's figures from each answer's own timings
// (Ollama's /api/chat, kept per record in store.RunAcc.Engine: timings,
// complete once the last response is in); the embedded source does the
// rest (Prometheus' windows, or nothing).
type ollamaSource struct {
	engineSource
	timings *store.EngineAcc
}

func (s ollamaSource) after(_ context.Context, run *result.Run, rec *result.Reconciliation) *scrape.Snapshot {
	s.timings.Fill(run, rec)
	return nil
}
