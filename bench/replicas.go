package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
)

// replicaFigures is one replica's engine figures from its own delta, with
// its KV-cache usage over the window when the source has it (Prometheus).
func replicaFigures(name string, d *scrape.Delta, kv *result.Gauge) result.Replica {
	es := store.EngineSummary(d)
	r := result.Replica{Name: name, TTFTS: es.TTFTS, E2ES: es.E2ES, QueueS: es.QueueS,
		PrefillS: es.PrefillS, DecodeS: es.DecodeS, ITLS: es.ITLS, KVUsage: kv, PrefixCacheHitRate: es.PrefixCacheHitRate}
	for _, c := range []struct {
		q   scrape.Quantity
		dst **float64
	}{
		{scrape.EngineRequests, &r.Requests},
		{scrape.EnginePromptTokens, &r.PromptTokens},
		{scrape.EngineGenerationTokens, &r.GenerationTokens},
	} {
		if v, ok := d.Counter(c.q); ok {
			*c.dst = &v
		}
	}
	return r
}

// metricsReplicas are the replicas of several --metrics-url, each from its
// own series (scrape.FetchAll tags them by URL index); nil for one URL.
func metricsReplicas(m *Metrics, before, after *scrape.Snapshot) []result.Replica {
	if len(m.URLs) < 2 {
		return nil
	}
	out := make([]result.Replica, len(m.URLs))
	for i, u := range m.URLs {
		f := m.Filter
		f.Replica = strconv.Itoa(i)
		out[i] = replicaFigures(launch.RedactURL(u), scrape.Diff(before, after, m.Dialect, f), nil)
	}
	return out
}

// promReplicas are Prometheus' replicas (by pod or instance label).
func promReplicas(w *promql.Window) []result.Replica {
	out := make([]result.Replica, len(w.Replicas))
	for i, r := range w.Replicas {
		var kv *result.Gauge
		if g, ok := r.Gauges[scrape.EngineKVUsage]; ok {
			kv = &result.Gauge{Mean: stats.Finite(g.Mean), Max: stats.Finite(g.Max)}
		}
		out[i] = replicaFigures(r.Name, r.Delta, kv)
	}
	return out
}

// noteIdleReplicas names, in the reconciliation and a warning, the
// replicas whose engine finished none of the run's requests.
func noteIdleReplicas(run *result.Run, rec *result.Reconciliation) {
	if rec.Sent == 0 {
		return
	}
	for _, r := range run.Engine.Replicas {
		if r.Requests != nil && *r.Requests == 0 {
			rec.IdleReplicas = append(rec.IdleReplicas, r.Name)
		}
	}
	if n := len(rec.IdleReplicas); n > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("%d of %d replicas finished none of the %d requests sent: %s (does the router reach them?)",
			n, len(run.Engine.Replicas), rec.Sent, strings.Join(rec.IdleReplicas, ", ")))
	}
}
