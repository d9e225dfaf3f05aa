package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
)

// PromFigures fills run.Engine from Prometheus (Metrics.Prom) over the
// run's window: from its start to the end of its last response, read once
// Prometheus has scraped every replica after that end (bounded by the
// source's wait; see scrape/promql). Nothing here runs during the run. It
// returns the run's window (nil: not read), which promWindows splits.
func (m *Metrics) PromFigures(ctx context.Context, run *result.Run, rec *result.Reconciliation) *promql.Window {
	from := run.StartedAt
	to := from.Add(time.Duration(run.DurationS * float64(time.Second)))
	// As with /metrics, Ctrl-C must not lose the figures of what was measured.
	w, err := m.Prom.Window(context.WithoutCancel(ctx), from, to, rec.OK)
	if err != nil {
		run.Warnings = append(run.Warnings, "engine figures absent: "+err.Error())
		return nil
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
	if reconcileNote(run, rec, m.Filter.Model, counted, m.Passes) {
		run.Engine.Source = src
		return w
	}
	run.Engine = store.EngineSummary(w.Total)
	run.Engine.Reconciliation = rec
	run.Engine.Source = src
	run.Engine.Replicas = promReplicas(w)
	noteIdleReplicas(run, rec)
	return w
}

// promAfterWarmup waits (bounded) until Prometheus has scraped every
// replica after the warm-up, so that the run's window, which opens at the
// last scrape before the run, does not count warm-up requests.
func (m *Metrics) promAfterWarmup(ctx context.Context, run *result.Run) {
	if err := m.Prom.WaitScrape(ctx, time.Now()); err != nil && ctx.Err() == nil {
		run.Warnings = append(run.Warnings, "prometheus: waiting for a scrape after the warm-up: "+err.Error())
	}
}

// promWindows fills each window's engine deltas from Prometheus, when w
// read them (readProm) and the run has several: those promLoop read while
// the run went on, then the rest (promql.Windows.Rest, up to the run's
// window, all, as promFigures read it), so that they add up to the run's
// figures. Without the run's window only those read already have figures.
func (w *windower) promWindows(ctx context.Context, run *result.Run, all *promql.Window) {
	if w.prom == nil || len(run.Windows) <= 1 {
		return
	}
	ws := w.promRead
	if all != nil {
		rest, err := w.prom.Rest(context.WithoutCancel(ctx), all, w.cuts[len(ws):])
		if err != nil {
			run.Warnings = append(run.Warnings, "window engine figures absent: "+err.Error())
		}
		ws = append(ws, rest...)
	}
	for i, pw := range ws {
		if pw.Total == nil {
			run.Warnings = append(run.Warnings, fmt.Sprintf("window %d: engine figures absent: %s", run.Windows[i].Index, strings.Join(pw.Warnings, "; ")))
			continue
		}
		run.Windows[i].Engine = promWindowEngine(pw)
	}
}

// promWindowEngine is one window's engine account from Prometheus. Its
// gauges are means over the window (summed over the replicas; KV usage
// averaged), not values at its end as with /metrics.
func promWindowEngine(w *promql.Window) *result.WindowEngine {
	we := &result.WindowEngine{EngineStats: store.EngineSummary(w.Total)}
	if w.Resets > 0 {
		we.CounterReset = true
	}
	we.Warnings = w.Warnings
	if v, ok := w.Total.Counter(scrape.EngineRequests); ok {
		we.Requests = &v
	}
	if v, ok := w.Total.Counter(scrape.EnginePreemptions); ok {
		we.Preemptions = &v
	}
	gauge := func(q scrape.Quantity, mean bool) *float64 {
		var sum float64
		n := 0
		for _, rep := range w.Replicas {
			if g, ok := rep.Gauges[q]; ok {
				sum += g.Mean
				n++
			}
		}
		if n == 0 {
			return nil
		}
		if mean {
			sum /= float64(n)
		}
		return &sum
	}
	we.KVUsage, we.Running, we.Waiting = gauge(scrape.EngineKVUsage, true), gauge(scrape.EngineRunning, false), gauge(scrape.EngineWaiting, false)
	return we
}
