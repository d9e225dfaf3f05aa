package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/probe"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/launch/launchtest"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql/promtest"
)

// engineFleet is bundled engines behind a round-robin proxy on loopback: the
// replicas behind one endpoint that --metrics-url and --prometheus-url
// tell apart.
type engineFleet struct {
	engines []string // base URLs
	proxy   string   // base URL sending request i to engine i mod len(behind)
}

// startFleet starts n engines; the first behind of them sit behind the proxy,
// the others receive no traffic.
func startFleet(t *testing.T, n, behind int) engineFleet {
	t.Helper()
	if testing.Short() {
		t.Skip("starts bundled engines")
	}
	var f engineFleet
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

// engineCount is the engines' finished requests so far, summed.
func (f engineFleet) engineCount(t *testing.T) float64 {
	t.Helper()
	total := 0.0
	for _, e := range f.engines {
		s, err := scrape.Fetch(t.Context(), nil, e+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := scrape.Diff(nil, s, nil, scrape.Filter{}).Counter(scrape.EngineRequests)
		total += v
	}
	return total
}

func hostOf(base string) string {
	u, _ := url.Parse(base)
	return u.Host
}

// TestPrometheusSource: run reads its engine figures from a real Prometheus
// scraping three engines, two behind a round-robin proxy; results.json
// names the source, its queries and the scrape lag, the engines' count of
// the run's requests (summed over the replicas) equals what was sent, each
// replica has its own figures, and the idle third is named.
func TestPrometheusSource(t *testing.T) {
	f := startFleet(t, 3, 2)
	prom := promtest.Start(t, f.engines...)
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runMain("run", "--base-url", f.proxy, "--prometheus-url", prom,
		"--prometheus-selector", `{namespace="llm",job="vllm"}`, "--prometheus-wait", "10s", "--requests", "6", "--concurrency", "2",
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
	hosts := []string{hostOf(f.engines[0]), hostOf(f.engines[1]), hostOf(f.engines[2])}
	checkReplicas(t, dir, hosts, true)

	// Two shards reading Prometheus without a selector, merged: one query
	// over the merged window counts both shards' requests.
	startAt := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339)
	dirs := []string{filepath.Join(t.TempDir(), "s0"), filepath.Join(t.TempDir(), "s1")}
	var wg sync.WaitGroup
	for k, d := range dirs {
		wg.Go(func() {
			code, stdout, stderr := runMain("run", "--base-url", f.proxy, "--prometheus-url", prom, "--prometheus-wait", "10s", "--rate", "20",
				"--requests", "8", "--stream", "off", "--max-tokens", "4", "--quiet", "--out", d,
				"--shard", fmt.Sprintf("%d/2", k), "--start-at", startAt)
			if code != 0 {
				t.Errorf("shard %d: exit %d\n%s\n%s", k, code, stdout, stderr)
			}
		})
	}
	wg.Wait()
	out := filepath.Join(t.TempDir(), "merged")
	if code, stdout, stderr := runMain("merge", dirs[0], dirs[1], "--out", out); code != 0 {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	merged, _ := loadSaved(t, out)
	mr := merged.Runs[0]
	if rc := mr.Engine.Reconciliation; rc == nil || rc.EngineCount != 8 || rc.Sent != 8 || mr.Engine.Source == nil ||
		mr.Engine.Source.Kind != result.SourcePrometheus || mr.Engine.E2ES == nil || mr.Engine.E2ES.Count != 8 {
		t.Errorf("merged engine %+v, reconciliation %+v: want Prometheus' count of the 8 requests over the merged window", mr.Engine, rc)
	}
}

// checkReplicas checks per-replica figures of a run sent 6 requests through
// the proxy of startFleet(t, 3, 2): 3 each on the replicas named names[0]
// and names[1], none on names[2], which the reconciliation and report.md name.
func checkReplicas(t *testing.T, dir string, names []string, kv bool) {
	t.Helper()
	res, _ := loadSaved(t, dir)
	run := res.Runs[0]
	reps := run.Engine.Replicas
	if len(reps) != 3 {
		t.Fatalf("replicas %+v: want 3", reps)
	}
	for _, rp := range reps {
		i := slices.Index(names, rp.Name)
		want := 3.0
		if i == 2 {
			want = 0
		}
		if i < 0 || rp.Requests == nil || *rp.Requests != want {
			t.Errorf("replica %s with %v requests: want one of %q, with %g", rp.Name, rp.Requests, names, want)
		}
		if want > 0 && (rp.TTFTS == nil || rp.TTFTS.Count != want || rp.E2ES == nil || (rp.KVUsage != nil) != kv || rp.PrefixCacheHitRate == nil) {
			t.Errorf("replica %s: TTFT %+v, E2E %+v, KV %+v, prefix cache hit rate %v: want %g observations each (KV usage: %v) and a hit rate",
				rp.Name, rp.TTFTS, rp.E2ES, rp.KVUsage, rp.PrefixCacheHitRate, want, kv)
		}
	}
	rec := run.Engine.Reconciliation
	if rec.EngineCount != 6 || len(rec.IdleReplicas) != 1 || rec.IdleReplicas[0] != names[2] {
		t.Errorf("reconciliation %+v: want 6 counted and %s idle", rec, names[2])
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "finished none of the 6 requests sent: "+names[2]) {
		t.Errorf("warnings %q: want the idle replica named", res.Warnings)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| "+names[0]+" | 3 |") || !strings.Contains(string(md), "![Engine means by replica](replicas.png)") {
		t.Errorf("report.md lacks the per-replica table or chart:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(dir, "replicas.png")); err != nil {
		t.Error(err)
	}
}

// TestMetricsURLReplicas: several --metrics-url keep each replica's figures
// beside their sum, named by URL, with each replica's KV-cache usage over
// the scrapes of the run (--gauge-interval): above zero on the two that
// served requests (each holds a 1024-token stream's blocks all through
// the run), zero on the idle one.
func TestMetricsURLReplicas(t *testing.T) {
	f := startFleet(t, 3, 2)
	dir := filepath.Join(t.TempDir(), "out")
	args := []string{"run", "--base-url", f.proxy, "--requests", "6", "--concurrency", "2",
		"--stream", "on", "--max-tokens", "1024", "--gauge-interval", "10ms", "--quiet", "--out", dir}
	var names []string
	for _, e := range f.engines {
		args = append(args, "--metrics-url", e+"/metrics")
		names = append(names, e+"/metrics")
	}
	if code, stdout, stderr := runMain(args...); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkReplicas(t, dir, names, true)
	res, _ := loadSaved(t, dir)
	run := res.Runs[0]
	// The run's own scrapes: before, one every 10 ms, after.
	minSamples := 3 // at least one during the run (at 10 ms, scrapes of 3 servers on a loaded machine take longer)
	for i, rp := range run.Engine.Replicas {
		kv := rp.KVUsage
		if kv == nil {
			t.Errorf("replica %s: no KV usage", rp.Name)
			continue
		}
		t.Logf("replica %s: KV usage mean %.4f max %.4f over %d scrapes in %.3f s", rp.Name, kv.Mean, kv.Max, kv.Samples, run.DurationS)
		busy := i < 2
		if kv.Samples < minSamples || kv.Mean < 0 || kv.Mean > kv.Max || kv.Max > 1 || (kv.Max > 0) != busy {
			t.Errorf("replica %s: KV usage %+v: want at least %d scrapes, 0 <= mean <= max <= 1, max above zero only if it served requests (%v)",
				rp.Name, kv, minSamples, busy)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "KV usage mean / max") {
		t.Errorf("report.md has no KV usage column:\n%s", md)
	}
}

// TestShards: three shard processes (in-process here) of one open-loop run
// against two engines behind a proxy send exactly the whole run between
// them: shard K sends request i when i mod 3 = K, at the send time the
// whole run's seeded schedule gives i, all starting at --start-at; the
// engines counted every request once.
func TestShards(t *testing.T) {
	f := startFleet(t, 2, 2)
	const n, requests, rate = 3, 12, 40.0
	before := f.engineCount(t)
	startAt := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	dirs, _ := runShards(t, n, func(k int, dir string) []string {
		return []string{"run", "--base-url", f.proxy, "--rate", fmt.Sprint(rate), "--arrival", "poisson",
			"--seed", "7", "--requests", fmt.Sprint(requests), "--stream", "on", "--max-tokens", "4", "--quiet",
			"--shard", fmt.Sprintf("%d/%d", k, n), "--start-at", startAt.UTC().Format(time.RFC3339), "--out", dir,
			"--metrics-url", f.engines[0] + "/metrics", "--metrics-url", f.engines[1] + "/metrics"}
	})
	if t.Failed() {
		return
	}
	// The whole run's schedule, as one process would draw it.
	wl := workload.Workload{Mode: workload.ModeRate, Rate: rate, Arrival: workload.ArrivalPoisson, Requests: requests, Seed: 7}
	if err := wl.Validate(); err != nil {
		t.Fatal(err)
	}
	pacer, offsets := workload.NewPacer(wl), make([]time.Duration, requests)
	for i := 1; i < requests; i++ {
		offsets[i] = offsets[i-1] + pacer.Next()
	}
	seen := map[int]int{}
	for k, dir := range dirs {
		res, recs := loadSaved(t, dir)
		sh := res.Runs[0].Shard
		if sh == nil || sh.Index != k || sh.Count != n || sh.StartAt == nil || !sh.StartAt.Equal(startAt) ||
			sh.StartSkewS < 0 || sh.StartSkewS > 2 {
			t.Errorf("shard %d: results' shard block %+v: want %d/%d at %v with a small skew", k, sh, k, n, startAt)
		}
		if w := res.Runs[0].Workload; w.Requests != requests || w.Rate != rate {
			t.Errorf("shard %d: workload %+v: want the whole run's totals", k, w)
		}
		// The other shards' requests are expected in this shard's engine
		// count, not foreign traffic.
		if rc := res.Runs[0].Engine.Reconciliation; rc == nil || rc.Foreign || !strings.Contains(rc.Note, "other shards' requests") ||
			slices.ContainsFunc(res.Runs[0].Warnings, func(w string) bool { return strings.Contains(w, "foreign") }) {
			t.Errorf("shard %d: reconciliation %+v, warnings %q: want the other shards' requests noted, no foreign-traffic warning", k, rc, res.Runs[0].Warnings)
		}
		for _, r := range recs {
			if !r.Outcome() {
				continue
			}
			seen[r.Index]++
			intended := r.Start.Add(-time.Duration(r.IntendedLagS * float64(time.Second)))
			if r.Index%n != k || r.Error != "" {
				t.Errorf("shard %d sent request %d (error %q): want only i mod %d = %d", k, r.Index, r.Error, n, k)
			}
			// The schedule runs from the shard's actual start (its skew after startAt).
			start := startAt.Add(time.Duration(sh.StartSkewS * float64(time.Second)))
			if d := intended.Sub(start) - offsets[r.Index]; d < -2*time.Millisecond || d > 2*time.Millisecond {
				t.Errorf("request %d intended at +%v, the whole run's schedule says +%v", r.Index, intended.Sub(start), offsets[r.Index])
			}
		}
	}
	for i := range requests {
		if seen[i] != 1 {
			t.Errorf("request %d sent %d times over the shards, want once", i, seen[i])
		}
	}
	if got := f.engineCount(t) - before; got != requests {
		t.Errorf("engines counted %g requests, want %d", got, requests)
	}
	checkMerge(t, f, dirs, requests)
}

// runShards runs n shard commands at once (in-process), each with the
// arguments args gives for shard k and its new results directory, and
// returns the directories and the commands' stderr; a shard that does not
// exit 0 fails the test.
func runShards(t *testing.T, n int, args func(k int, dir string) []string) (dirs, stderrs []string) {
	t.Helper()
	dirs, stderrs = make([]string, n), make([]string, n)
	var wg sync.WaitGroup
	for k := range n {
		dirs[k] = filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d", k))
		wg.Go(func() {
			code, stdout, stderr := runMain(args(k, dirs[k])...)
			if stderrs[k] = stderr; code != 0 {
				t.Errorf("shard %d: exit %d\n%s\n%s", k, code, stdout, stderr)
			}
		})
	}
	wg.Wait()
	return dirs, stderrs
}

// mergeShards runs `servebench merge` on the shards' directories and
// returns the merged results directory.
func mergeShards(t *testing.T, dirs []string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "merged")
	code, stdout, stderr := runMain(append(append([]string{"merge"}, dirs...), "--out", out)...)
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	return out
}

// checkMerge merges the shards' directories and checks the result against
// the union of their records, the engines' count, and the keys of a
// one-machine run of the same workload; then that merge refuses a missing
// or doubled shard.
func checkMerge(t *testing.T, f engineFleet, dirs []string, requests int) {
	t.Helper()
	out := mergeShards(t, dirs)
	res, recs := loadSaved(t, out)
	run := res.Runs[0]
	var union []result.Record
	for _, d := range dirs {
		_, rs := loadSaved(t, d)
		union = append(union, rs...)
	}
	if len(recs) != len(union) || run.Shard != nil || run.Requests != requests || run.OK != requests {
		t.Errorf("merged %d records (shards %d), run %d requests %d ok, shard %+v: want the union, %d ok, no shard block",
			len(recs), len(union), run.Requests, run.OK, run.Shard, requests)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Start.Add(time.Duration(recs[i].E2ES * 1e9)).Before(recs[i-1].Start.Add(time.Duration(recs[i-1].E2ES * 1e9))) {
			t.Errorf("merged requests.jsonl not in completion order at line %d", i+1)
			break
		}
	}
	want := store.ClientSummary(union)
	if g, w := run.Client.E2ES, want.E2ES; g == nil || g.N != w.N || g.Median != w.Median || g.P99 != w.P99 {
		t.Errorf("merged E2E %+v, want the statistics of the union %+v", g, w)
	}
	if rc := run.Engine.Reconciliation; rc == nil || rc.EngineCount != float64(requests) || rc.Sent != requests || rc.Foreign ||
		run.Engine.TTFTS == nil || run.Engine.TTFTS.Count != float64(requests) {
		t.Errorf("merged engine %+v reconciliation %+v: want the engines' %d over the merged window", run.Engine, rc, requests)
	}
	if _, err := os.Stat(filepath.Join(out, "report.md")); err != nil {
		t.Error(err)
	}

	// A one-machine run of the same workload has exactly the same keys
	// (runs[].warnings is there only when something, such as a late send
	// on a loaded machine, was warned about).
	single := filepath.Join(t.TempDir(), "single")
	code, stdout, stderr := runMain("run", "--base-url", f.proxy, "--rate", "40", "--arrival", "poisson", "--seed", "7",
		"--requests", fmt.Sprint(requests), "--stream", "on", "--max-tokens", "4", "--quiet", "--out", single,
		"--metrics-url", f.engines[0]+"/metrics", "--metrics-url", f.engines[1]+"/metrics")
	if code != 0 {
		t.Fatalf("single run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if a, b := jsonKeys(t, filepath.Join(out, "results.json")), jsonKeys(t, filepath.Join(single, "results.json")); !slices.Equal(a, b) {
		t.Errorf("merged results.json keys differ from a one-machine run's:\nmerged: %q\nsingle: %q", a, b)
	}

	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{dirs[:2], "shard 2/3 missing"},
		{[]string{dirs[0], dirs[1], dirs[1]}, "shard 1/3 given twice"},
		{[]string{dirs[0], dirs[1], single}, single + ": not one shard"},
	} {
		code, _, stderr := runMain(append(append([]string{"merge"}, tc.dirs...), "--out", filepath.Join(t.TempDir(), "m"))...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("merge %q: exit %d, %q; want 2 naming %q", tc.dirs, code, stderr, tc.want)
		}
	}
}

// jsonKeys lists every key path of a JSON file (array elements as []),
// sorted and without duplicates, leaving out runs[].warnings.
func jsonKeys(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				keys = append(keys, prefix+"."+k)
				walk(prefix+"."+k, c)
			}
		case []any:
			for _, c := range x {
				walk(prefix+"[]", c)
			}
		}
	}
	walk("", v)
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == ".runs[].warnings" })
	slices.Sort(keys)
	return slices.Compact(keys)
}

// TestShardLate: a shard whose --start-at is already past is refused
// before anything starts.
func TestShardLate(t *testing.T) {
	past := time.Now().Add(-5 * time.Second).UTC().Format(time.RFC3339)
	code, _, stderr := runMain("run", "--base-url", "http://127.0.0.1:1", "--stream", "on", "--rate", "5",
		"--shard", "1/2", "--start-at", past)
	if code != 2 || !strings.Contains(stderr, "--start-at "+past) || !strings.Contains(stderr, "past") {
		t.Errorf("exit %d, %q: want 2 naming --start-at", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "3/3", "--rate", "5", "--stream", "on"}, `--shard "3/3"`},
		{[]string{"--shard", "0/2", "--rate", "5"}, "--stream on or off"},
		{[]string{"--shard", "0/4", "--concurrency", "2", "--stream", "on"}, "at least 4"},
		{[]string{"--start-at", past, "--rate", "5", "--stream", "on"}, "--start-at without --shard"},
	} {
		code, _, stderr := runMain(append([]string{"run", "--base-url", "http://127.0.0.1:1"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestShardKilled: one of three shards is killed (SIGKILL, a real process)
// mid-run; merge refuses (exit 2) both its directory, which has no
// results.json, and the other two alone, naming the missing shard.
func TestShardKilled(t *testing.T) {
	f := startFleet(t, 2, 2)
	bin := launchtest.Servebench(t)
	startAt := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
	args := func(k int, dir string) []string {
		return []string{"run", "--base-url", f.proxy, "--rate", "6", "--requests", "24", "--stream", "off", "--max-tokens", "4",
			"--quiet", "--shard", fmt.Sprintf("%d/3", k), "--start-at", startAt, "--out", dir,
			"--metrics-url", f.engines[0] + "/metrics", "--metrics-url", f.engines[1] + "/metrics"}
	}
	dirs := []string{filepath.Join(t.TempDir(), "s0"), filepath.Join(t.TempDir(), "s1"), filepath.Join(t.TempDir(), "s2")}
	victim := exec.Command(bin, args(2, dirs[2])...)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		at, _ := time.Parse(time.RFC3339, startAt)
		time.Sleep(time.Until(at) + time.Second)
		_ = victim.Process.Kill()
	}()
	var wg sync.WaitGroup
	for k := range 2 {
		wg.Go(func() {
			if code, stdout, stderr := runMain(args(k, dirs[k])...); code != 0 {
				t.Errorf("shard %d: exit %d\n%s\n%s", k, code, stdout, stderr)
			}
		})
	}
	wg.Wait()
	if err := victim.Wait(); err == nil {
		t.Fatal("the killed shard exited normally")
	}
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{dirs, dirs[2] + "/results.json"},
		{dirs[:2], "shard 2/3 missing"},
	} {
		code, _, stderr := runMain(append(append([]string{"merge"}, tc.dirs...), "--out", filepath.Join(t.TempDir(), "m"))...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("merge %q: exit %d, %q; want 2 naming %q", tc.dirs, code, stderr, tc.want)
		}
	}
}

// TestProbePrometheus: probe cancel reads the engine through a real
// Prometheus (--prometheus-url) and reaches the same verdict, to the
// token, as from /metrics (TestProbeCommand): an engine that ignores the
// disconnect wastes 496 of 512 tokens.
func TestProbePrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a bundled engine and Prometheus")
	}
	e := simtest.Start(t, func(o *sim.Options) { o.IgnoreDisconnect = true })
	prom := promtest.Start(t, e.BaseURL())
	code, stdout, stderr := runMain("probe", "cancel", "--base-url", e.BaseURL(), "--prometheus-url", prom,
		"--prometheus-selector", `{job="vllm"}`, "--prometheus-wait", "10s", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var rs []probe.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if len(rs) != 1 || rs[0].Verdict != probe.Fail || !strings.HasPrefix(rs[0].Summary, "keeps generating, 496 tokens wasted") {
		t.Errorf("results %+v; want cancel: fail, keeps generating, 496 tokens wasted", rs)
	}
}

// TestPrometheusWindows: with --prometheus-url and --interval every window
// has engine deltas read from Prometheus over its range, and the windows'
// engine counts (finished requests, TTFT observations) add up to the run's
// and to what the client saw succeed.
func TestPrometheusWindows(t *testing.T) {
	f := startFleet(t, 2, 2)
	prom := promtest.Start(t, f.engines...)
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runMain("run", "--base-url", f.proxy, "--prometheus-url", prom, "--prometheus-wait", "10s",
		"--rate", "8", "--duration", "6s", "--interval", "1500ms", "--stream", "on", "--max-tokens", "8", "--quiet", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res, _ := loadSaved(t, dir)
	run := res.Runs[0]
	if run.Engine.Reconciliation == nil || run.Engine.TTFTS == nil {
		t.Fatalf("engine %+v: want run-level figures from Prometheus (warnings %q)", run.Engine, run.Warnings)
	}
	if len(run.Windows) < 3 {
		t.Fatalf("%d windows: want at least 3 of 1.5 s in 6 s", len(run.Windows))
	}
	var reqs, ttft float64
	ok := 0
	for _, w := range run.Windows {
		ok += w.OK
		if w.Engine == nil || w.Engine.Requests == nil || w.Engine.TTFTS == nil {
			t.Fatalf("window %d engine %+v: want deltas from Prometheus (warnings %q)", w.Index, w.Engine, run.Warnings)
		}
		reqs += *w.Engine.Requests
		ttft += w.Engine.TTFTS.Count
		t.Logf("window %d [%.2f, %.2f] s: client %d ok, engine %.2f requests", w.Index, w.StartS, w.EndS, w.OK, *w.Engine.Requests)
	}
	// The engine finishes every request the client saw succeed; one the
	// client saw fail (a loaded host's cut stream, run.Errors) may still
	// have been finished by the engine, so only then may it count more.
	want := run.Engine.Reconciliation.EngineCount
	failed := run.Requests - run.OK
	if math.Round(reqs) != math.Round(want) || ok != run.OK || reqs < float64(run.OK)-0.5 || reqs > float64(run.OK+failed)+0.5 {
		t.Errorf("windows' engine requests %.2f, client ok %d: want the run's engine count %.2f, ok %d, and between ok and ok + failed %d (errors %v)",
			reqs, ok, want, run.OK, failed, run.Errors)
	}
	if math.Round(ttft) != math.Round(run.Engine.TTFTS.Count) {
		t.Errorf("windows' TTFT counts %.2f: want the run's %.2f", ttft, run.Engine.TTFTS.Count)
	}
}

// TestShardsFromLogs: two shards run with --results-to-log, their stdout
// saved as a pod log is (the table before the block, other lines around
// it); merge reads the logs as it reads the directories, to the byte; a
// log cut short inside its block is refused (exit 2) naming the file and
// the line.
func TestShardsFromLogs(t *testing.T) {
	f := startFleet(t, 2, 2)
	startAt := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	root := t.TempDir()
	dirs, logs := make([]string, 2), make([]string, 2)
	var wg sync.WaitGroup
	for k := range 2 {
		dirs[k] = filepath.Join(root, fmt.Sprintf("shard-%d", k))
		logs[k] = filepath.Join(root, fmt.Sprintf("shard-%d.log", k))
		wg.Go(func() {
			code, stdout, stderr := runMain("run", "--base-url", f.proxy, "--rate", "20", "--seed", "3", "--requests", "10",
				"--stream", "on", "--max-tokens", "4", "--quiet", "--results-to-log",
				"--shard", fmt.Sprintf("%d/2", k), "--start-at", startAt.UTC().Format(time.RFC3339), "--out", dirs[k],
				"--metrics-url", f.engines[0]+"/metrics", "--metrics-url", f.engines[1]+"/metrics")
			if code != 0 {
				t.Errorf("shard %d: exit %d\n%s\n%s", k, code, stdout, stderr)
				return
			}
			log := "container started\n" + stdout + "results: " + dirs[k] + "\nservebench exited 0\n"
			if err := os.WriteFile(logs[k], []byte(log), 0o644); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	merge := func(name string, inputs ...string) string {
		out := filepath.Join(root, name)
		if code, stdout, stderr := runMain(append(append([]string{"merge"}, inputs...), "--out", out)...); code != 0 {
			t.Fatalf("merge %q: exit %d\n%s\n%s", inputs, code, stdout, stderr)
		}
		return out
	}
	fromDirs, fromLogs := merge("from-dirs", dirs...), merge("from-logs", logs[1], logs[0])
	for _, name := range []string{result.RequestsFile} {
		a, _ := os.ReadFile(filepath.Join(fromDirs, name))
		b, _ := os.ReadFile(filepath.Join(fromLogs, name))
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("%s merged from logs (%d bytes) differs from the one merged from directories (%d bytes)", name, len(b), len(a))
		}
	}
	rd, _ := loadSaved(t, fromDirs)
	rl, _ := loadSaved(t, fromLogs)
	jd, _ := json.Marshal(rd.Runs)
	jl, _ := json.Marshal(rl.Runs)
	if string(jd) != string(jl) || rd.Server.BaseURL != rl.Server.BaseURL {
		t.Errorf("runs merged from logs differ from those merged from directories:\nlogs: %s\ndirs: %s", jl, jd)
	}
	if run := rl.Runs[0]; run.Requests != 10 || run.Engine.Reconciliation == nil || run.Engine.Reconciliation.EngineCount != 10 ||
		len(run.Engine.Replicas) != 2 {
		t.Errorf("merged from logs: %d requests, engine %+v: want 10 counted by both replicas", run.Requests, run.Engine)
	}
	st, _ := os.Stat(logs[0])
	rs, _ := os.Stat(filepath.Join(dirs[0], result.RequestsFile))
	t.Logf("shard 0's log: %d bytes for %d bytes of requests.jsonl (5 records)", st.Size(), rs.Size())

	// Cut shard 1's log in the middle of its block, as a rotated or
	// --tail'ed log would be.
	b, _ := os.ReadFile(logs[1])
	lines := strings.SplitAfter(string(b), "\n")
	begin := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "-----BEGIN SERVEBENCH RESULTS shard-1-----") })
	if begin < 0 || len(lines) < begin+4 {
		t.Fatalf("shard 1's log has no block:\n%s", b)
	}
	cut := filepath.Join(root, "cut.log")
	os.WriteFile(cut, []byte(strings.Join(lines[:begin+3], "")), 0o644)
	code, _, stderr := runMain("merge", logs[0], cut, "--out", filepath.Join(root, "m"))
	want := fmt.Sprintf("%s:%d: block shard-1 begun at line %d is cut short", cut, begin+3, begin+1)
	if code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("merge with a cut log: exit %d, %q; want 2 naming %q", code, stderr, want)
	}
	// A log with no block (the run was not given --results-to-log).
	noBlock := filepath.Join(root, "table.log")
	os.WriteFile(noBlock, []byte(lines[0]), 0o644)
	if code, _, stderr := runMain("merge", logs[0], noBlock, "--out", filepath.Join(root, "m2")); code != 2 || !strings.Contains(stderr, noBlock+": no SERVEBENCH RESULTS block") {
		t.Errorf("merge with a log without a block: exit %d, %q; want 2 naming it", code, stderr)
	}
}

// TestPrometheusCheckpoint: with --prometheus-url and --interval each
// closed window's engine deltas are read from Prometheus while the run
// goes on, so a checkpoint carries them: servebench killed with SIGKILL
// once three windows have them, `report DIR` rebuilds windows whose
// engine counts are the change in the engines' finished-request counters
// between the scrapes bounding each window, read raw from Prometheus. It
// logs the lag from each boundary to its engine figures in checkpoint.json.
func TestPrometheusCheckpoint(t *testing.T) {
	f := startFleet(t, 2, 2)
	prom := promtest.Start(t, f.engines...)
	dir := t.TempDir()
	const filled = 3
	var lags []time.Duration // by window, from its end to the first checkpoint with its engine figures
	killWhen(t, dir, func(cp *result.Results) bool {
		run := lastRun(cp)
		for _, w := range run.Windows[len(lags):] {
			if w.Engine == nil {
				break
			}
			lags = append(lags, time.Since(run.StartedAt.Add(time.Duration(w.EndS*float64(time.Second)))))
		}
		return len(lags) >= filled
	}, nil, "run", "--base-url", f.proxy, "--prometheus-url", prom, "--prometheus-wait", "10s", "--rate", "8", "--duration", "120s",
		"--interval", "1500ms", "--stream", "on", "--max-tokens", "8", "--out", dir, "--quiet")
	for i, l := range lags {
		t.Logf("window %d: engine figures in %s %.0f ms after its end (scrape interval %s)", i+1, result.CheckpointFile, l.Seconds()*1000, promtest.Interval)
	}
	if code, _, errOut := runMain("report", dir); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	res, _ := loadSaved(t, dir)
	run := res.Runs[0]
	if !run.Incomplete || len(run.Windows) <= filled {
		t.Fatalf("rebuilt run: incomplete %v, %d windows: want an incomplete run of more than %d", run.Incomplete, len(run.Windows), filled)
	}
	cuts := []time.Time{run.StartedAt}
	for _, w := range run.Windows[:filled] {
		cuts = append(cuts, run.StartedAt.Add(time.Duration(w.EndS*float64(time.Second))))
	}
	want := counterSteps(t, prom, "vllm:request_success_total", cuts)
	for i, w := range run.Windows[:filled] {
		e := w.Engine
		if e == nil || e.Requests == nil || *e.Requests <= 0 || math.Round(*e.Requests) != want[i] || e.TTFTS == nil || e.TTFTS.Count <= 0 {
			t.Errorf("rebuilt window %d engine %+v: want %g finished requests (Prometheus' samples) and TTFT observations", w.Index, e, want[i])
			continue
		}
		t.Logf("window %d [%.2f, %.2f] s: client %d ok, engine %.2f requests, Prometheus' samples %g", w.Index, w.StartS, w.EndS, w.OK, *e.Requests, want[i])
	}
	if run.Engine.TTFTS == nil || run.Engine.TTFTS.Count <= 0 {
		t.Errorf("rebuilt run's engine TTFT %+v: want the windows' combined", run.Engine.TTFTS)
	}
}

// counterSteps reads counter's raw samples from Prometheus and returns,
// summed over its series and replicas, its change over each window
// between consecutive cuts: each replica's window starting at its last
// scrape at or before cuts[0] and at its first scrape after each later cut.
func counterSteps(t *testing.T, prom, counter string, cuts []time.Time) []float64 {
	t.Helper()
	u := prom + "/api/v1/query?query=" + url.QueryEscape(fmt.Sprintf("%s[5m]", counter))
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var qr struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	sums := map[string]map[float64]float64{} // instance -> scrape time (s) -> value summed over series
	for _, r := range qr.Data.Result {
		inst := r.Metric["instance"]
		if sums[inst] == nil {
			sums[inst] = map[float64]float64{}
		}
		for _, p := range r.Values {
			v, _ := strconv.ParseFloat(p[1].(string), 64)
			sums[inst][p[0].(float64)] += v
		}
	}
	if len(sums) == 0 {
		t.Fatalf("%s: no samples", u)
	}
	steps := make([]float64, len(cuts)-1)
	for _, byTime := range sums {
		ts := slices.Sorted(maps.Keys(byTime))
		at := func(i int) float64 { // the value at the scrape bounding a window at cuts[i]
			j, _ := slices.BinarySearch(ts, math.Nextafter(float64(cuts[i].UnixNano())/1e9, math.Inf(1))) // first after the cut
			if i == 0 {
				j = max(j-1, 0) // last at or before it
			} else if j == len(ts) {
				t.Fatalf("no scrape after %s", cuts[i])
			}
			return byTime[ts[j]]
		}
		for i := range steps {
			steps[i] += at(i+1) - at(i)
		}
	}
	return steps
}
