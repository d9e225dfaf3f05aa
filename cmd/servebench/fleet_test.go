package main

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
	"github.com/servebench/servebench/scrape/promql/promtest"
)

// fleet is bundled engines behind a round-robin proxy on loopback: the
// replicas behind one endpoint that --metrics-url and --prometheus-url
// tell apart.
type fleet struct {
	engines []string // base URLs
	proxy   string   // base URL sending request i to engine i mod len(behind)
}

// startFleet starts n engines; the first behind of them sit behind the proxy,
// the others receive no traffic.
func startFleet(t *testing.T, n, behind int) fleet {
	t.Helper()
	if testing.Short() {
		t.Skip("starts bundled engines")
	}
	var f fleet
	var targets []*url.URL
	for i := range n {
		e := simtest.Start(t, func(o *sim.Options) { o.ServedModelName = "fleet-model" })
		f.engines = append(f.engines, e.BaseURL())
		if i < behind {
			u, _ := url.Parse(e.BaseURL())
			targets = append(targets, u)
		}
	}
	var next atomic.Int64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			if r.In.URL.Path == "/v1/models" || r.In.URL.Path == "/health" {
				r.SetURL(targets[0])
				return
			}
			r.SetURL(targets[int(next.Add(1)-1)%len(targets)])
		},
		FlushInterval: -1, // SSE: pass every event on at once
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	f.proxy = srv.URL
	return f
}

func hostOf(base string) string {
	u, _ := url.Parse(base)
	return u.Host
}

// TestPrometheusSource: run reads its engine figures from a real Prometheus
// scraping two engines behind a round-robin proxy; results.json names the
// source, its queries and the scrape lag, and the engine's count of the
// run's requests (summed over the replicas) equals what was sent.
func TestPrometheusSource(t *testing.T) {
	f := startFleet(t, 2, 2)
	prom := promtest.Start(t, f.engines...)
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runMain("run", "--base-url", f.proxy, "--prometheus-url", prom,
		"--prometheus-selector", `{namespace="llm",job="vllm"}`, "--requests", "6", "--concurrency", "2",
		"--stream", "on", "--warmup", "1", "--max-tokens", "8", "--quiet", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res, _ := loadSaved(t, dir)
	run := res.Runs[0]
	src, rec := run.Engine.Source, run.Engine.Reconciliation
	if src == nil || src.Kind != result.SourcePrometheus || src.URL != prom || src.Selector != `{namespace="llm",job="vllm"}` {
		t.Fatalf("engine source %+v: want prometheus %s with the selector", src, prom)
	}
	if len(src.Queries) == 0 || src.ScrapeLagS <= 0 || src.ScrapeIntervalS != 1 || src.CounterResets != 0 {
		t.Errorf("source %+v: want queries, a positive lag, a 1 s interval and no reset", src)
	}
	if rec == nil || rec.EngineCount != 6 || rec.Foreign || run.Engine.TTFTS == nil || run.Engine.TTFTS.Count != 6 {
		t.Errorf("reconciliation %+v, TTFT %+v: want the engines' count 6 (warm-up outside the window)", rec, run.Engine.TTFTS)
	}
	if res.Server.PrometheusURL != prom || len(res.Server.MetricsURL) != 0 || res.Server.Dialect != "vllm" {
		t.Errorf("server %+v: want the Prometheus URL, no /metrics URL, dialect vllm", res.Server)
	}
	t.Logf("scrape lag %.3f s, waited %.3f s, %d queries", src.ScrapeLagS, rec.WaitedS, len(src.Queries))
	if !strings.Contains(strings.Join(src.Queries, "\n"), `instance="`+hostOf(f.engines[1])+`"`) {
		t.Errorf("queries %q: want one per replica", src.Queries)
	}
}
