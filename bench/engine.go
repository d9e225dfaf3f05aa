package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
)

// Metrics says where and how to scrape the engine's /metrics. Several URLs
// (replicas behind one endpoint) are summed by scrape.FetchAll.
type Metrics struct {
	HTTP    *http.Client
	URLs    []string
	Dialect *scrape.Dialect // nil: detected from the first snapshot
	Filter  scrape.Filter   // model_name filter ("" = all)
	Timeout time.Duration   // per scrape (default 5 s)
	// Prom, when set, is the source instead of URLs: the Prometheus HTTP
	// API over each run's window (see prometheus.go).
	Prom *promql.Source
	// GaugeEvery, with several URLs, is how often a run scrapes them for
	// each replica's KV-cache usage (gaugeSampler); 0: not sampled.
	GaugeEvery time.Duration
	// Passes is how many of the engines finish each request (Server.Passes;
	// 0 means 1): the reconciliation expects Passes x sent.
	Passes int
}

type snapshotResult struct {
	snap *scrape.Snapshot
	err  error
}

func (m *Metrics) snapshot(ctx context.Context) snapshotResult {
	s, err := m.fetch(ctx)
	if err == nil && m.Dialect == nil {
		if d, ok := scrape.Detect(s); ok {
			m.Dialect = d
		}
	}
	return snapshotResult{snap: s, err: err}
}

// fetch scrapes every URL once, bounded by Timeout (default 5 s).
func (m *Metrics) fetch(ctx context.Context) (*scrape.Snapshot, error) {
	t := m.Timeout
	if t <= 0 {
		t = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	hc := m.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return scrape.FetchAll(ctx, hc, m.URLs)
}

// reconcilePoll is how often the after-run scrape is retried while the
// engine's finished-request count catches up.
const reconcilePoll = 50 * time.Millisecond

// Figures fills run.Engine from the delta between two snapshots (with the
// reconciliation rec), or leaves them out with warnings when the counters
// cannot be trusted. A run and a merge of shards (from their saved
// snapshots) share it.
func (m *Metrics) Figures(run *result.Run, rec *result.Reconciliation, before, after *scrape.Snapshot) {
	delta := scrape.Diff(before, after, m.Dialect, m.Filter)
	n, counted := delta.Counter(scrape.EngineRequests) // false: the dialect exports no finished-request counter
	if counted {
		rec.EngineCount = n
	}
	if ws := delta.Warnings(); len(ws) > 0 {
		for _, w := range ws {
			run.Warnings = append(run.Warnings, "engine figures absent: "+w)
		}
		rec.Note = "counter reset during the run: engine figures left out"
		rec.EngineAbsent = true
		return
	}
	if reconcileNote(run, rec, m.Filter.Model, counted, m.Passes) {
		return // run.Engine holds only the reconciliation
	}
	run.Engine = store.EngineSummary(delta)
	if run.Engine.PrefixCacheHitRate == nil {
		if v, ok := after.Gauge(m.Dialect, m.Filter, scrape.EnginePrefixCacheHitRate); ok {
			run.Engine.PrefixCacheHitRate = &v
		}
	}
	run.Engine.Reconciliation = rec
	run.Engine.Source = &result.EngineSource{Kind: result.SourceMetrics}
	run.Engine.Replicas = metricsReplicas(m, before, after)
	if l := scrape.LoRA(after); l != nil {
		run.Engine.LoRA = &result.LoRAInfo{MaxLoRA: l.MaxLoRA, Running: l.Running, Waiting: l.Waiting}
	}
	noteIdleReplicas(run, rec)
}

// reconcileNote explains a mismatch between the client's and the engine's
// request counts (counted: the server exports the finished-request
// counter) and reports whether the engine figures must be left out.
//
// The engine must count at least the requests the client saw succeed. If,
// after the bounded wait, it counted fewer, its counters went back during
// the run (a server restart) and climbed again without going below their
// pre-run values, so scrape.Diff saw no reset: figures over such a delta
// describe only part of the run, unlabelled, so they are left out.
// Foreign traffic only adds to the count, so it cannot explain a shortfall.
// With passes > 1 (a P/D deployment) each request is finished by that many
// engines, and the count is compared per pass.
func reconcileNote(run *result.Run, rec *result.Reconciliation, model string, counted bool, passes int) (drop bool) {
	if passes > 1 && counted {
		defer func(total float64) {
			rec.EngineCount = total
			if rec.Note == "" {
				rec.Note = fmt.Sprintf("P/D deployment: every request is finished by a prefill and a decode instance; "+
					"the engine's %.0f finished requests are %d passes of %.0f", total, passes, total/float64(passes))
			}
		}(rec.EngineCount)
		rec.EngineCount /= float64(passes)
	}
	switch {
	case !counted:
	case rec.EngineCount == 0 && rec.OK > 0 && model != "":
		rec.Note = fmt.Sprintf("/metrics counted no finished request with model_name=%q although %d succeeded: "+
			"--model must match the server's model_name label; engine figures absent", model, rec.OK)
		run.Warnings = append(run.Warnings, rec.Note)
	case rec.EngineCount > float64(rec.Sent) && run.Shard != nil && run.Shard.Count > 1:
		// The other shards' requests: expected, and no one else's can be
		// told apart from them here; merge reconciles the whole run.
		rec.Note = fmt.Sprintf("engine finished %.0f requests, this shard (%d/%d) sent %d: the count includes the other shards' requests; "+
			"servebench merge reconciles the whole run against it", rec.EngineCount, run.Shard.Index, run.Shard.Count, rec.Sent)
	case rec.EngineCount > float64(rec.Sent):
		rec.Foreign = true
		rec.Note = fmt.Sprintf("engine finished %.0f requests, servebench sent %d: foreign traffic; engine figures mix in other clients' requests", rec.EngineCount, rec.Sent)
		run.Warnings = append(run.Warnings, rec.Note)
	case rec.EngineCount < float64(rec.OK):
		rec.Note = fmt.Sprintf("engine counted %.0f finished requests after waiting %.1f s, the client saw %d succeed: "+
			"/metrics counters were reset during the run (server restart?) or lag more than the wait; engine figures absent", rec.EngineCount, rec.WaitedS, rec.OK)
		run.Warnings = append(run.Warnings, rec.Note)
		rec.EngineAbsent = true
		return true
	case rec.EngineCount < float64(rec.Sent):
		rec.Note = fmt.Sprintf("engine counted %.0f of %d requests sent; the others failed before the engine finished them", rec.EngineCount, rec.Sent)
	}
	return false
}

// settle scrapes until the engine has counted at least target finished
// requests since base (bounded by wait, Runner.ReconcileWait) and returns
// the last snapshot. It returns at once on a scrape error, an unknown
// dialect or one without a finished-request counter. In a P/D deployment
// (Passes) each request is finished once per pass: the prefill instances
// alone reach target before the decode instances have counted theirs.
func (m *Metrics) settle(ctx context.Context, base *scrape.Snapshot, target int, wait time.Duration) snapshotResult {
	target *= max(1, m.Passes)
	start := time.Now()
	for {
		s := m.snapshot(ctx)
		if s.err != nil || m.Dialect == nil || time.Since(start) >= wait {
			return s
		}
		n, ok := scrape.Diff(base, s.snap, m.Dialect, m.Filter).Counter(scrape.EngineRequests)
		if !ok || n >= float64(target) {
			return s
		}
		time.Sleep(reconcilePoll)
	}
}
