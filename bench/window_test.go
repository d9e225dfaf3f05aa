package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/sim"
)

// TestWindowsAddUp: a run split by --interval has windows whose request
// counts add up to the run's, whose records name them, and whose engine
// deltas (histogram counts, and sums as mean x count) add up to the run's
// /metrics delta; the checkpoint is gone once results.json is written.
func TestWindowsAddUp(t *testing.T) {
	e := startEngine(t, func(o *sim.Options) { o.Speedup = 500 })
	dir := t.TempDir()
	res, recs, err := Execute(context.Background(), Config{
		Server: ServerOptions{BaseURL: e.BaseURL()}, Dir: dir, Args: []string{"servebench", "test"}, Version: "test",
		FailOnErrorRate: -1, Interval: 300 * time.Millisecond,
		Runs: []RunSpec{{Name: "streaming", Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: 4, Duration: 1200 * time.Millisecond, Warmup: 2},
			Request: RequestSpec{MaxTokens: 16, ExactLength: true, Stream: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Runs[0]
	if len(run.Windows) < 4 {
		t.Fatalf("%d windows over %.2f s at 300 ms, want at least 4", len(run.Windows), run.DurationS)
	}
	reqs, ok, count, sum := 0, 0, 0.0, 0.0
	perWindow := map[int]int{}
	for _, r := range recs {
		if r.Outcome() {
			perWindow[r.Window]++
		}
		if r.Warmup && r.Window != 0 {
			t.Errorf("warm-up record in window %d", r.Window)
		}
	}
	for i, w := range run.Windows {
		if w.Index != i+1 || w.Requests != perWindow[w.Index] {
			t.Errorf("window %d (index %d) counts %d, its records %d", i+1, w.Index, w.Requests, perWindow[w.Index])
		}
		if i > 0 && w.StartS != run.Windows[i-1].EndS {
			t.Errorf("window %d starts at %.3f s, the previous ended at %.3f s", w.Index, w.StartS, run.Windows[i-1].EndS)
		}
		reqs += w.Requests
		ok += w.OK
		if w.Engine == nil {
			t.Fatalf("window %d has no engine figures", w.Index)
		}
		if h := w.Engine.TTFTS; h != nil {
			count += h.Count
			sum += h.Mean * h.Count
		}
		if w.Engine.KVUsage == nil || w.Engine.Running == nil || w.Engine.Preemptions == nil {
			t.Errorf("window %d lacks gauges or preemptions: %+v", w.Index, w.Engine)
		}
	}
	if reqs != run.Requests || ok != run.OK || run.Requests == 0 {
		t.Errorf("windows count %d requests (%d ok), the run %d (%d ok)", reqs, ok, run.Requests, run.OK)
	}
	h := run.Engine.TTFTS
	if h == nil || count != h.Count || !near(sum, h.Mean*h.Count, 1e-9) {
		t.Errorf("windows' engine TTFT: count %.0f sum %.6f; the run's: %+v", count, sum, h)
	}
	// The last window ends with the run and takes the requests in flight
	// at --duration: no boundary at 1.2 s leaves them a sliver of their own.
	if last := run.Windows[len(run.Windows)-1]; last.EndS != run.DurationS || last.StartS >= 1.2 {
		t.Errorf("last window %.3f-%.3f s, the run ends at %.3f s", last.StartS, last.EndS, run.DurationS)
	}
	if _, err := os.Stat(filepath.Join(dir, result.CheckpointFile)); err == nil {
		t.Error("checkpoint.json left next to a complete results.json")
	}
}

// TestBoundedRunExact: a bounded run (no record in memory, samples on
// disk) reports the same request-level figures as ClientSummary of its
// requests.jsonl, and leaves no sample file in its directory.
func TestBoundedRunExact(t *testing.T) {
	e := startEngine(t, func(o *sim.Options) { o.Speedup = 500 })
	dir := t.TempDir()
	res, recs, err := Execute(context.Background(), Config{
		Server: ServerOptions{BaseURL: e.BaseURL()}, Dir: dir, Args: []string{"servebench", "test"}, Version: "test",
		FailOnErrorRate: -1, Interval: 300 * time.Millisecond, Bounded: true,
		Runs: []RunSpec{{Name: "streaming", Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: 4, Duration: 700 * time.Millisecond},
			Request: RequestSpec{MaxTokens: 16, Stream: true}},
			{Name: "rate", Workload: workload.Workload{Mode: workload.ModeRate, Rate: 200, Arrival: workload.ArrivalPoisson, Seed: 1, Requests: 60},
				Request: RequestSpec{MaxTokens: 4, Stream: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Errorf("bounded run returned %d records, want none kept", len(recs))
	}
	_, onDisk, _, err := result.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lags []float64
	for _, r := range onDisk {
		if r.Run == "rate" && !r.Warmup && r.Attempt <= 1 {
			lags = append(lags, r.IntendedLagS)
		}
	}
	got, want := res.Runs[0].Client, store.ClientSummary(measuredOf(onDisk, "streaming"))
	pairs := []struct {
		name      string
		got, want *stats.Summary
	}{{"first visible", got.FirstVisibleS, want.FirstVisibleS}, {"first token", got.FirstTokenS, want.FirstTokenS},
		{"e2e", got.E2ES, want.E2ES}, {"ttfb", got.TTFBS, want.TTFBS}, {"tpot", got.TPOTS, want.TPOTS}, {"output tokens", got.OutputTokens, want.OutputTokens},
		{"send lag", res.Runs[1].Rate.SendLagS, stats.Summarize(lags)}}
	for _, p := range pairs {
		if p.got == nil || p.want == nil || p.got.N < 10 {
			t.Fatalf("%s: run %+v, from requests.jsonl %+v; want both, over 10 samples", p.name, p.got, p.want)
		}
		g, w := *p.got, *p.want
		// requests.jsonl may order records completing together differently: the mean's sum may differ in its last bits.
		if math.Abs(g.Mean-w.Mean) > 1e-12*w.Mean {
			t.Errorf("%s: mean %v, from requests.jsonl %v", p.name, g.Mean, w.Mean)
		}
		g.Mean = w.Mean
		if g != w {
			t.Errorf("%s: run %+v, from requests.jsonl %+v", p.name, g, w)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, ".servebench-samples-*"))
	if len(files) != 0 {
		t.Errorf("sample files left in the results directory: %v", files)
	}
}

// measuredOf is the records of the named run.
func measuredOf(recs []result.Record, run string) []result.Record {
	var out []result.Record
	for _, r := range recs {
		if r.Run == run {
			out = append(out, r)
		}
	}
	return out
}
