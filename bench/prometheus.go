package bench

import (
	"context"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/scrape"
)

// promFigures fills run.Engine from Prometheus (Metrics.Prom) over the
// run's window: from its start to the end of its last response, read once
// Prometheus has scraped every replica after that end (bounded by the
// source's wait; see scrape/promql). Nothing here runs during the run.
func (r *Runner) promFigures(ctx context.Context, run *result.Run, rec *result.Reconciliation) {
	m := r.Metrics
	from := run.StartedAt
	to := from.Add(time.Duration(run.DurationS * float64(time.Second)))
	// As with /metrics, Ctrl-C must not lose the figures of what was measured.
	w, err := m.Prom.Window(context.WithoutCancel(ctx), from, to, rec.OK)
	if err != nil {
		run.Warnings = append(run.Warnings, "engine figures absent: "+err.Error())
		return
	}
	if m.Dialect == nil {
		m.Dialect, _ = m.Prom.Detect(ctx)
	}
	src := &result.EngineSource{Kind: result.SourcePrometheus, URL: launch.RedactURL(m.Prom.URL()), Version: m.Prom.Version,
		Selector: m.Prom.Selector().String(), Queries: w.Queries, ScrapeIntervalS: w.Interval.Seconds(),
		ScrapeLagS: w.Lag.Seconds(), CounterResets: w.Resets}
	rec.WaitedS = w.Waited.Seconds()
	n, counted := w.Total.Counter(scrape.EngineRequests)
	if counted {
		rec.EngineCount = n
	}
	for _, wn := range append(w.Warnings, w.Total.Warnings()...) {
		run.Warnings = append(run.Warnings, "prometheus: "+wn)
	}
	if reconcileNote(run, rec, m.Filter.Model, counted) {
		run.Engine.Source = src
		return
	}
	run.Engine = EngineSummary(w.Total)
	run.Engine.Reconciliation = rec
	run.Engine.Source = src
	run.Engine.Replicas = promReplicas(w)
	noteIdleReplicas(run, rec)
}

// promAfterWarmup waits (bounded) until Prometheus has scraped every
// replica after the warm-up, so that the run's window, which opens at the
// last scrape before the run, does not count warm-up requests.
func (r *Runner) promAfterWarmup(ctx context.Context, run *result.Run) {
	if err := r.Metrics.Prom.WaitScrape(ctx, time.Now()); err != nil && ctx.Err() == nil {
		run.Warnings = append(run.Warnings, "prometheus: waiting for a scrape after the warm-up: "+err.Error())
	}
}
