package store

import (
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// engineRecords are n synthetic Ollama answers: timings drawn at random,
// with failed requests, answers without timings and a zero load among them.
func engineRecords(n int) []result.Record {
	r := rand.New(rand.NewPCG(5, 6))
	recs := make([]result.Record, n)
	for i := range recs {
		e := &result.EngineRecord{LoadS: r.ExpFloat64() * 0.001, PromptEvalS: 0.005 + r.ExpFloat64()*0.02, EvalS: 0.1 + r.Float64()}
		e.TotalS = e.LoadS + e.PromptEvalS + e.EvalS + r.ExpFloat64()*0.05
		recs[i] = result.Record{Run: "r", E2ES: e.TotalS + 0.001, Engine: e}
		switch {
		case i%89 == 0:
			recs[i] = result.Record{Run: "r", Error: "timeout", Engine: e}
		case i%37 == 0:
			recs[i].Engine = nil
		case i%11 == 0:
			e.LoadS = 0
		}
	}
	return recs
}

// memoryEngineHists is the engine figures as EngineAcc computed them when
// it kept its timings in slices: stats.Summarize of each quantity.
func memoryEngineHists(recs []result.Record) []*result.Hist {
	var xs [5][]float64
	for _, r := range recs {
		if e := r.Engine; e != nil && r.Error == "" {
			for i, x := range []float64{e.TTFTS(), e.TotalS, e.QueueS(), e.PromptEvalS, e.EvalS} {
				xs[i] = append(xs[i], x)
			}
		}
	}
	var hs []*result.Hist
	for _, q := range xs {
		s := stats.Summarize(q)
		hs = append(hs, &result.Hist{Mean: s.Mean, Count: float64(s.N), P50Est: s.Median, P90Est: s.P90, P99Est: s.P99, Exact: true})
	}
	return hs
}

// TestEngineAccSpillEqualsMemory: engine timings spilled to files (a
// bounded Ollama run's) give the same figures, bit for bit, as the
// in-memory computation over 5,000 synthetic answers, read back whole
// (the default selection limit) or by radix selection (a limit of 100);
// the files are unlinked once created (where the system allows it) and
// gone after Close.
func TestEngineAccSpillEqualsMemory(t *testing.T) {
	recs := engineRecords(5000)
	want := memoryEngineHists(recs)
	for _, limit := range []int{0, 100} {
		dir := t.TempDir()
		var a EngineAcc
		setSelectLimit(t, limit)
		if err := a.Spill(dir); err != nil {
			t.Fatal(err)
		}
		if files, _ := os.ReadDir(dir); len(files) != 0 && runtime.GOOS != "windows" {
			t.Errorf("%d timing files named in %s, want them unlinked once created", len(files), dir)
		}
		for i := range recs {
			a.Add(&recs[i])
		}
		for _, c := range a.columns() {
			if c.f == nil || cap(c.xs) != 0 {
				t.Fatalf("a column kept %d samples in memory after spill", cap(c.xs))
			}
		}
		run := result.Run{OK: 5000 - 57}
		a.Fill(&run, &result.Reconciliation{})
		if err := a.SpillErr(); err != nil || len(run.Warnings) != 0 {
			t.Fatalf("limit %d: %v %q", limit, err, run.Warnings)
		}
		e := run.Engine
		got := []*result.Hist{e.TTFTS, e.E2ES, e.QueueS, e.PrefillS, e.DecodeS}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("limit %d: spilled timings give\n%+v\nin memory\n%+v", limit, got, want)
		}
		if n := e.Reconciliation.EngineCount; n != want[0].Count || n < 4800 || e.Reconciliation.Note == "" {
			t.Errorf("limit %d: engine count %v, note %q; want %v and a note on the answers without timings", limit, n, e.Reconciliation.Note, want[0].Count)
		}
		a.Close()
		if files, _ := os.ReadDir(dir); len(files) != 0 {
			t.Errorf("%d timing files left after close", len(files))
		}
	}
}

// TestEngineAccSpillBounded: a spilled EngineAcc allocates next to nothing
// per answer, where one in memory allocates at least its 40 bytes: over
// the same 50,000 answers the spilled one's heap allocations stay under a
// hundredth of the in-memory one's (the floor, measured in the same run).
func TestEngineAccSpillBounded(t *testing.T) {
	recs := engineRecords(50000)
	allocated := func(a *EngineAcc) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range recs {
			a.Add(&recs[i])
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var mem, disk EngineAcc
	if err := disk.Spill(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	floor, spilled := allocated(&mem), allocated(&disk)
	t.Logf("50,000 answers: in memory %d bytes allocated, spilled %d", floor, spilled)
	if floor < 40*uint64(mem.e2e.N) || spilled*100 > floor {
		t.Errorf("in memory %d bytes for %d answers, spilled %d: want the spilled under 1%% of the in-memory", floor, mem.e2e.N, spilled)
	}
}
