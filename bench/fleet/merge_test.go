package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
)

// TestMergeRecords: records of several shards, each in its own completion
// order, come out in one completion order, each exactly once, ties in the
// shards' order.
func TestMergeRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var shards []*shardDir
	for k := range 3 {
		var recs []result.Record
		for m := range 200 {
			r := result.Record{Run: "r", Index: k + 3*m, Start: t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond), E2ES: float64(rng.IntN(3))}
			recs = append(recs, r)
		}
		slices.SortStableFunc(recs, func(a, b result.Record) int { return done(&a).Compare(done(&b)) })
		s := &shardDir{dir: t.TempDir(), res: &result.Results{Runs: []result.Run{{Name: "r"}}}}
		if err := writeRecords(filepath.Join(s.dir, result.RequestsFile), recs); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, s)
	}
	out, err := mergeRecords(shards, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for i := range out {
		if seen[out[i].Index] {
			t.Fatalf("record %d twice", out[i].Index)
		}
		seen[out[i].Index] = true
		if i > 0 {
			a, b := done(&out[i-1]), done(&out[i])
			if b.Before(a) || (b.Equal(a) && out[i].Index%3 < out[i-1].Index%3) {
				t.Fatalf("out of order at %d: %v (%d) after %v (%d)", i, b, out[i].Index, a, out[i-1].Index)
			}
		}
	}
	if len(seen) != 600 {
		t.Errorf("%d records, want 600", len(seen))
	}
}

// writeShard writes a results directory of shard k/n with per records,
// as `servebench run --shard k/n` would (no /metrics snapshots).
func writeShard(tb testing.TB, dir string, k, n, per int) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f, err := os.Create(filepath.Join(dir, result.RequestsFile))
	if err != nil {
		tb.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for m := range per {
		i := k + m*n
		start := t0.Add(time.Duration(i) * time.Millisecond)
		r := result.Record{Run: "non-streaming", Index: i, Start: start, TTFBS: 0.9, FirstTokenS: 0.9, FirstVisibleS: 0.9,
			E2ES: 0.9 + float64(i%97)/100, Status: 200, PromptTokens: 27, OutputTokens: 256, TokensFrom: "usage", FinishReason: "length",
			RequestID: fmt.Sprintf("sb-non-streaming-%d-5f3a9c", i), MaxTokens: 256}
		if err := enc.Encode(&r); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	res := &result.Results{Schema: result.Schema, Runs: []result.Run{{Name: "non-streaming", StartedAt: t0,
		DurationS: float64(per*n) / 1000, Workload: result.Workload{Mode: workload.ModeConcurrent, Concurrency: 64, Requests: per * n, MaxTokens: 256},
		Shard: &result.Shard{Index: k, Count: n}}}, Warnings: []string{}}
	if err := store.WriteResults(dir, res); err != nil {
		tb.Fatal(err)
	}
}

// writeShardDirs writes shard k's records (after edit) and runs(k) as
// results directories root/K, as `servebench run` or `sweep --shard`
// would, and returns them.
func writeShardDirs(t *testing.T, root string, shardRecs [][]result.Record, edit func(k int, recs []result.Record), runs func(k int) []result.Run) []string {
	t.Helper()
	var dirs []string
	for k := range shardRecs {
		dir := filepath.Join(root, fmt.Sprint(k))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		recs := slices.Clone(shardRecs[k])
		edit(k, recs)
		if err := writeRecords(filepath.Join(dir, result.RequestsFile), recs); err != nil {
			t.Fatal(err)
		}
		if err := store.WriteResults(dir, &result.Results{Schema: result.Schema, Runs: runs(k), Warnings: []string{}}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// loadDirs loads and checks the shards in dirs, as Merge does.
func loadDirs(t *testing.T, dirs []string) []*shardDir {
	t.Helper()
	inputs, _, err := shardInputs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := loadShards(inputs)
	if err != nil {
		t.Fatal(err)
	}
	return shards
}

// BenchmarkMerge1M merges 4 shards of 250,000 non-streaming records each
// and prints the time per merge and the peak heap in use (sampled every
// 10 ms), against the targets of 10 s and 500 MB. The floor in the
// same run is reading the same four requests.jsonl files once
// (floor-s/op): what any merge of the raw records must spend.
//
//	go test ./bench -run '^$' -bench Merge1M -benchtime 1x
func BenchmarkMerge1M(b *testing.B) {
	const n, per = 4, 250_000
	root := b.TempDir()
	dirs := make([]string, n)
	for k := range n {
		dirs[k] = filepath.Join(root, fmt.Sprintf("shard-%d", k))
		writeShard(b, dirs[k], k, n, per)
	}
	var floor time.Duration
	for _, d := range dirs {
		t := time.Now()
		if _, _, _, err := result.Load(d); err != nil {
			b.Fatal(err)
		}
		floor += time.Since(t)
	}
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, err := Merge(context.Background(), MergeOptions{Dirs: dirs, Out: filepath.Join(root, fmt.Sprintf("merged-%d", i))})
		if err != nil || res.Runs[0].Requests != n*per {
			b.Fatalf("merge: %v", err)
		}
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(floor.Seconds(), "floor-s/op")
}

// TestMergeStream: the streaming merge gives the completion order and the
// statistics of the union of the shards' records, the same whether each
// shard's file is a few records out of order (merged within the window)
// or far out (merged in memory): identical requests.jsonl and run block.
func TestMergeStream(t *testing.T) {
	const n, per = 3, 700
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	shardRecs := make([][]result.Record, n)
	var union []result.Record
	for k := range n {
		for m := range per {
			i := k + n*m
			r := result.Record{Run: "r", Index: i, Attempt: 1, Start: t0.Add(time.Duration(i) * 10 * time.Millisecond),
				IntendedLagS: float64(rng.IntN(3)) / 1000, TTFBS: 0.1, FirstTokenS: 0.1, FirstVisibleS: 0.1,
				E2ES: 0.2 + float64(rng.IntN(2000))/1000, Status: 200, OutputTokens: 16, MaxTokens: 16}
			if m%50 == 0 {
				r.Status, r.Error, r.E2ES = 503, "http 503", 0.01
			}
			r.E2ES += float64(i) * 1e-7 // no two complete together: one order whatever the files' order
			shardRecs[k] = append(shardRecs[k], r)
			union = append(union, r)
		}
		slices.SortStableFunc(shardRecs[k], func(a, b result.Record) int { return done(&a).Compare(done(&b)) })
	}
	merge := func(name string, disorder func([]result.Record)) ([]*shardDir, *result.Results, []result.Record) {
		root := filepath.Join(t.TempDir(), name)
		dirs := writeShardDirs(t, root, shardRecs, func(_ int, recs []result.Record) { disorder(recs) }, func(k int) []result.Run {
			return []result.Run{{Name: "r", StartedAt: t0, DurationS: float64(n*per) / 100,
				Workload: result.Workload{Mode: workload.ModeRate, Rate: 100, Requests: n * per, MaxTokens: 16},
				Rate:     &result.RateStats{TargetPerS: 100.0 / n}, Shard: &result.Shard{Index: k, Count: n}}}
		})
		out := filepath.Join(root, "merged")
		res, err := Merge(t.Context(), MergeOptions{Dirs: dirs, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		_, recs, _, err := result.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		return loadDirs(t, dirs), res, recs
	}
	near := func(recs []result.Record) { // neighbours swapped: within the window
		for i := 0; i+1 < len(recs); i += 7 {
			recs[i], recs[i+1] = recs[i+1], recs[i]
		}
	}
	shards, res, recs := merge("near", near)
	if err := mergeRuns(shards, func(int, *result.Record, []byte) error { return nil }); err != nil {
		t.Fatalf("a shard a record out of order: %v, want a streaming merge", err)
	}
	farShards, farRes, farRecs := merge("far", slices.Reverse[[]result.Record])
	if err := mergeRuns(farShards, func(int, *result.Record, []byte) error { return nil }); !errors.Is(err, errDisorder) {
		t.Fatalf("shards in reverse order: %v, want errDisorder (merged in memory)", err)
	}
	if len(recs) != n*per {
		t.Fatalf("%d merged records, want %d", len(recs), n*per)
	}
	for i := 1; i < len(recs); i++ {
		if done(&recs[i]).Before(done(&recs[i-1])) {
			t.Fatalf("merged requests.jsonl out of completion order at line %d", i+1)
		}
	}
	if !reflect.DeepEqual(recs, farRecs) {
		t.Error("requests.jsonl differs between the streaming and the in-memory merge")
	}
	run, far := res.Runs[0], farRes.Runs[0]
	if len(run.Warnings) != 2 || len(far.Warnings) != 2 { // late sends; no /metrics snapshots (naming the directory)
		t.Errorf("warnings %q and %q: want the late sends and the absent engine figures", run.Warnings, far.Warnings)
	}
	run.Warnings, far.Warnings = nil, nil
	if !reflect.DeepEqual(run, far) {
		t.Errorf("run differs between the streaming and the in-memory merge:\n%+v\n%+v", run, far)
	}
	want := store.ClientSummary(union)
	if g, w := run.Client.E2ES, want.E2ES; g == nil || g.N != w.N || g.Median != w.Median || g.P99 != w.P99 || run.Requests != n*per ||
		run.OK != n*per-n*per/50 || run.Errors["http 503"] != n*per/50 {
		t.Errorf("merged run %d requests %d ok %v errors, E2E %+v: want the union's %+v", run.Requests, run.OK, run.Errors, g, w)
	}
	if rs := run.Rate; rs == nil || rs.SendLagS == nil || rs.SendLagS.N != n*per || rs.TargetPerS != 100 {
		t.Errorf("merged rate %+v: want every first attempt's lag against 100 req/s", rs)
	}
}

// TestMergeSweep: shards of a sweep (two levels each) merge level by level:
// requests.jsonl holds the first level's records, then the second's, each
// in completion order, each level's statistics are its union's, and the
// streamed and the in-memory merge agree; shards that ran different levels,
// and a record of a run results.json does not list, are refused.
func TestMergeSweep(t *testing.T) {
	const n, per = 3, 40
	levels := []string{"rate=20", "rate=40"}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(5, 6))
	shardRecs := make([][]result.Record, n)
	unions := make([][]result.Record, len(levels))
	for L, name := range levels {
		at := t0.Add(time.Duration(L) * time.Minute)
		for k := range n {
			var recs []result.Record
			for m := range per {
				i := k + n*m
				r := result.Record{Run: name, Index: i, Attempt: 1, Start: at.Add(time.Duration(i) * 10 * time.Millisecond),
					TTFBS: 0.1, FirstTokenS: 0.1, FirstVisibleS: 0.1, E2ES: 0.2 + float64(rng.IntN(2000))/1000 + float64(i)*1e-7,
					Status: 200, OutputTokens: 16, MaxTokens: 16}
				recs = append(recs, r)
				unions[L] = append(unions[L], r)
			}
			slices.SortStableFunc(recs, func(a, b result.Record) int { return done(&a).Compare(done(&b)) })
			shardRecs[k] = append(shardRecs[k], recs...)
		}
	}
	write := func(name string, runs int, edit func(k int, recs []result.Record)) []string {
		return writeShardDirs(t, filepath.Join(t.TempDir(), name), shardRecs, edit, func(k int) []result.Run {
			var rs []result.Run
			for L, lv := range levels[:runs] {
				startAt := t0.Add(time.Duration(L) * time.Minute)
				rs = append(rs, result.Run{Name: lv, StartedAt: startAt, DurationS: 3,
					Workload: result.Workload{Mode: workload.ModeRate, Rate: float64(20 * (L + 1)), Requests: n * per, MaxTokens: 16},
					Rate:     &result.RateStats{TargetPerS: float64(20*(L+1)) / n},
					Shard:    &result.Shard{Index: k, Count: n, StartAt: &startAt, StartSkewS: float64(k) / 1000}})
			}
			return rs
		})
	}
	merge := func(dirs []string) (*result.Results, []result.Record, string, error) {
		out := filepath.Join(filepath.Dir(dirs[0]), "merged")
		var log strings.Builder
		res, err := Merge(t.Context(), MergeOptions{Dirs: dirs, Out: out, Log: &log})
		if err != nil {
			return nil, nil, "", err
		}
		_, recs, _, err := result.Load(out)
		return res, recs, log.String(), err
	}
	res, recs, log, err := merge(write("near", 2, func(int, []result.Record) {}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || len(recs) != 2*n*per {
		t.Fatalf("%d runs, %d records: want 2 levels of %d", len(res.Runs), len(recs), n*per)
	}
	for i, r := range recs {
		if L := i / (n * per); r.Run != levels[L] || (i%(n*per) > 0 && done(&r).Before(done(&recs[i-1]))) {
			t.Fatalf("merged line %d: run %s at %v: want level %s's records in completion order, then the next level's", i+1, r.Run, done(&r), levels[L])
		}
	}
	for L, run := range res.Runs {
		want := store.ClientSummary(unions[L])
		if g, w := run.Client.E2ES, want.E2ES; run.Name != levels[L] || run.Shard != nil || run.Requests != n*per || g == nil ||
			g.N != w.N || g.Median != w.Median || g.P99 != w.P99 || run.Rate == nil || run.Rate.TargetPerS != float64(20*(L+1)) {
			t.Errorf("merged level %s: %d requests, E2E %+v, rate %+v: want the union's %+v at %d req/s", run.Name, run.Requests, g, run.Rate, w, 20*(L+1))
		}
		if !strings.Contains(log, "start skew "+levels[L]) || !strings.Contains(log, "2/3 +0.002 s") {
			t.Errorf("skew log %q: want each level's skew per shard", log)
		}
	}
	// Each shard's file reversed: levels out of order, merged in memory.
	farDirs := write("far", 2, func(_ int, recs []result.Record) { slices.Reverse(recs) })
	far, farRecs, _, err := merge(farDirs)
	if err != nil {
		t.Fatal(err)
	}
	if err := mergeRuns(loadDirs(t, farDirs), func(int, *result.Record, []byte) error { return nil }); !errors.Is(err, errDisorder) {
		t.Fatalf("levels in reverse order: %v, want errDisorder (merged in memory)", err)
	}
	if !reflect.DeepEqual(recs, farRecs) {
		t.Error("requests.jsonl differs between the streaming and the in-memory merge")
	}
	for L := range res.Runs {
		a, b := res.Runs[L], far.Runs[L]
		a.Warnings, b.Warnings = nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Errorf("level %s differs between the streaming and the in-memory merge:\n%+v\n%+v", levels[L], a, b)
		}
	}
	short := write("short", 2, func(int, []result.Record) {})
	shortOne := write("one", 1, func(int, []result.Record) {})
	if _, _, _, err := merge([]string{short[0], short[1], shortOne[2]}); !errors.Is(err, bench.ErrUsage) ||
		!strings.Contains(err.Error(), `ran "rate=20", `) || !strings.Contains(err.Error(), `ran "rate=20, rate=40": not the same run`) {
		t.Errorf("a shard that ran one level of two: %v, want a usage error naming its levels", err)
	}
	apart := write("apart", 2, func(int, []result.Record) {})
	res1, _, _, err := result.Load(apart[1])
	if err != nil {
		t.Fatal(err)
	}
	later := res1.Runs[1].Shard.StartAt.Add(time.Second)
	res1.Runs[1].Shard.StartAt = &later
	if err := store.WriteResults(apart[1], res1); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := merge(apart); !errors.Is(err, bench.ErrUsage) || !strings.Contains(err.Error(), "run rate=40: different starts") {
		t.Errorf("a shard that planned level 2 a second later: %v, want a usage error naming the level", err)
	}
	stray := write("stray", 2, func(k int, recs []result.Record) {
		if k == 1 {
			recs[5].Run = "rate=80"
		}
	})
	if _, _, _, err := merge(stray); !errors.Is(err, bench.ErrUsage) || !strings.Contains(err.Error(), `:6: a record of run "rate=80"`) {
		t.Errorf("a record of an unlisted run: %v, want a usage error naming its line", err)
	}
}

// TestMergeGauges: a merged replica's KV usage is its shards' samples
// together: the means weighted by their scrapes, the larger maximum.
func TestMergeGauges(t *testing.T) {
	shard := func(g *result.Gauge) *shardDir {
		return &shardDir{res: &result.Results{Runs: []result.Run{{Engine: result.EngineStats{Replicas: []result.Replica{{Name: "a", KVUsage: g}, {Name: "b"}}}}}}}
	}
	shards := []*shardDir{shard(&result.Gauge{Mean: 0.2, Max: 0.5, Samples: 10}), shard(&result.Gauge{Mean: 0.4, Max: 0.3, Samples: 30})}
	reps := []result.Replica{{Name: "a"}, {Name: "b"}}
	mergeGauges(shards, 0, reps)
	if g := reps[0].KVUsage; g == nil || math.Abs(g.Mean-0.35) > 1e-12 || g.Max != 0.5 || g.Samples != 40 {
		t.Errorf("merged a: %+v, want mean 0.35 (0.2x10 + 0.4x30 over 40), max 0.5, 40 samples", g)
	}
	if reps[1].KVUsage != nil {
		t.Errorf("merged b: %+v, want none (no shard had it)", reps[1].KVUsage)
	}
}

// TestMergeOtherEngines: shards that read different /metrics
// (server.metrics_urls) or counted a request's passes differently
// (server.engine_passes) merge without engine figures, the note naming both
// shards' engines, before a snapshot or Prometheus is read; the same URLs
// in another order or with a trailing slash are the same engines; shards
// that each started their server say that instead.
func TestMergeOtherEngines(t *testing.T) {
	const p, d = "http://127.0.0.1:41001/metrics", "http://127.0.0.1:41002/metrics"
	shard := func(name string, srv result.Server) *shardDir {
		return &shardDir{dir: filepath.Join(t.TempDir(), name), name: name,
			res: &result.Results{Server: srv, Runs: []result.Run{{Name: "streaming"}}}}
	}
	pd := result.Server{MetricsURL: []string{p, d}, EnginePasses: 2}
	for _, c := range []struct {
		name string
		b    result.Server
		note string // "" : the engines agree (the missing snapshots are the warning)
	}{
		{"the same instances, reordered", result.Server{MetricsURL: []string{d + "/", p}, EnginePasses: 2}, ""},
		{"the decode instance only", result.Server{MetricsURL: []string{d}}, "s1 read the engines at " + d + " (engine_passes 1), s0 at " + p + ", " + d + " (engine_passes 2): not the same engines"},
		{"the instances, passes not recorded", result.Server{MetricsURL: []string{p, d}}, "(engine_passes 1), s0 at"},
		{"Prometheus, passes differ", result.Server{PrometheusURL: "http://127.0.0.1:9"}, "s1 read the engines at none (Prometheus)"},
		{"own servers", result.Server{MetricsURL: []string{d}, Command: "servebench engine --pd-prefill 1 --pd-decode 1"}, "each shard started its own server (s1: servebench engine"},
	} {
		a := pd
		if c.b.PrometheusURL != "" {
			a = result.Server{PrometheusURL: c.b.PrometheusURL, EnginePasses: 2}
		}
		run := &result.Run{OK: 4}
		mergeEngine(t.Context(), []*shardDir{shard("s0", a), shard("s1", c.b)}, 0, run, &mergeAcc{})
		rec := run.Engine.Reconciliation
		warned := strings.Join(run.Warnings, "\n")
		if c.note == "" {
			if rec.EngineAbsent || !strings.Contains(warned, "saved /metrics snapshots") {
				t.Errorf("%s: reconciliation %+v, warnings %q: want the engines taken as one (then the missing snapshots)", c.name, rec, run.Warnings)
			}
			continue
		}
		if !rec.EngineAbsent || !strings.Contains(rec.Note, c.note) || !strings.Contains(warned, c.note) || run.Engine.TTFTS != nil {
			t.Errorf("%s: reconciliation %+v, warnings %q: want the engine figures absent, saying %q", c.name, rec, run.Warnings, c.note)
		}
	}
}
