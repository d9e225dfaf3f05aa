package compare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report/reporttest"
)

// synthRun describes one synthetic run: n measured requests whose
// latencies are the calibration figures (26 ms first visible, 15 ms per
// token) times scale, with lognormal noise.
type synthRun struct {
	name   string
	n      int
	scale  float64
	stream bool
	failed int // the first failed requests fail
	// clump > 0: the tokens reach the client clump at a time, when the
	// last of them was made, 2 us apart (a buffering proxy's reads).
	clump    int
	workload func(*result.Workload)
}

var fixedStart = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// synthSide builds a Side from a seeded RNG, the way bench would write it:
// records with events, and results.json figures summarized from them.
func synthSide(t testing.TB, path string, seed uint64, speedup float64, runs ...synthRun) *Side {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	res := &result.Results{
		Schema: result.Schema,
		Manifest: result.Manifest{
			Version: "0.1.0-test", CommandLine: []string{"servebench", "table", "--speedup", fmtFloat(speedup)},
			StartedAt: fixedStart, Host: result.Host{CPUs: 2, GoVersion: "go1.26", OS: "linux", Arch: "amd64"},
		},
		Server: result.Server{BaseURL: "http://127.0.0.1:8000", Model: "qwen2.5-7b-instruct-awq", Dialect: "vllm",
			Command: "servebench engine --speedup " + fmtFloat(speedup), Version: "0.1.0-test",
			Bundled: &result.Bundled{GPU: "rtx3060-12gb", Model: "qwen2.5-7b-instruct-awq", Speedup: speedup, Seed: 1}},
	}
	var recs []result.Record
	for _, sr := range runs {
		run, rr := synthOne(rng, sr)
		res.Runs = append(res.Runs, run)
		recs = append(recs, rr...)
	}
	return &Side{Path: path, Results: res, Records: recs}
}

func synthOne(rng *rand.Rand, sr synthRun) (result.Run, []result.Record) {
	const tokens = 32
	w := result.Workload{Mode: "sequential", Requests: sr.n, Warmup: 1, Stream: sr.stream, Endpoint: "chat",
		Model: "qwen2.5-7b-instruct-awq", MaxTokens: tokens, ExactLength: true, PromptKind: "fixed"}
	if sr.workload != nil {
		sr.workload(&w)
	}
	run := result.Run{Name: sr.name, Stream: w.Stream, Workload: w, Requests: sr.n, Errors: map[string]int{}, StartedAt: fixedStart}
	noise := func() float64 { return math.Exp(0.05 * rng.NormFloat64()) }
	var recs []result.Record
	var e2es []float64
	var outTok int
	for i := -1; i < sr.n; i++ { // i = -1 is the warm-up
		rec := result.Record{Run: sr.name, Index: i + 1, Warmup: i < 0, Stream: w.Stream, Start: fixedStart, Status: 200}
		if i >= 0 && i < sr.failed {
			rec.Status, rec.Error, rec.E2ES = 503, "http_status", 0.001*sr.scale
			run.Errors["http_status"]++
			recs = append(recs, rec)
			continue
		}
		first := 0.026 * sr.scale * noise()
		tpot := 0.015 * sr.scale * noise()
		rec.TTFBS = first * 0.5
		rec.FirstTokenS = first
		rec.OutputTokens = tokens
		t := first
		for k := 0; k < tokens; k++ {
			if k > 0 {
				t += tpot * noise()
			}
			rec.Events = append(rec.Events, [2]float64{t, 1})
		}
		clumpEvents(rec.Events, sr.clump)
		rec.FirstVisibleS = max(first, rec.Events[0][0])
		rec.E2ES = t + 0.0002
		if !w.Stream {
			rec.FirstVisibleS, rec.Events, rec.TTFBS = rec.E2ES, nil, rec.E2ES
		}
		recs = append(recs, rec)
		if i >= 0 {
			e2es = append(e2es, rec.E2ES)
			outTok += tokens
			run.OK++
		}
	}
	run.DurationS = sum(e2es)
	if run.DurationS > 0 {
		run.Throughput = result.Throughput{RequestsPerS: float64(run.OK) / run.DurationS, OutputTokensPerS: float64(outTok) / run.DurationS}
	}
	run.Client.E2ES = stats.Summarize(e2es)
	n := float64(run.OK + 1)
	run.Engine = result.EngineStats{
		TTFTS:  &result.Hist{Mean: 0.028 * sr.scale, Count: n, P50Est: 0.027 * sr.scale, P90Est: 0.03 * sr.scale, P99Est: 0.031 * sr.scale},
		E2ES:   &result.Hist{Mean: 0.028*sr.scale + 31*0.015*sr.scale, Count: n, P50Est: 0.49 * sr.scale, P90Est: 0.5 * sr.scale, P99Est: 0.51 * sr.scale},
		QueueS: &result.Hist{Mean: 0, Count: n},
	}
	return run, recs
}

// clumpEvents moves each group of size events to when its last one was
// made, 2 us apart (size 0: unchanged).
func clumpEvents(evs result.Events, size int) {
	for g := 0; size > 0 && g < len(evs); g += size {
		last := min(g+size, len(evs)) - 1
		at := evs[last][0]
		for k := g; k <= last; k++ {
			evs[k][0] = at + float64(k-g)*2e-6
		}
	}
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// saveSide writes s as a results directory and returns its path.
func saveSide(t testing.TB, s *Side) string {
	t.Helper()
	dir := t.TempDir()
	if err := reporttest.Save(dir, s.Results, s.Records); err != nil {
		t.Fatal(err)
	}
	return dir
}

// BenchmarkCompare measures a comparison of two runs of 10,000 streaming
// requests (32 events each) per side: ranks, summaries and the report.
func BenchmarkCompare(b *testing.B) {
	base := synthSide(b, "base", 1, 100, synthRun{name: "r", n: 10000, scale: 1, stream: true})
	nw := synthSide(b, "new", 2, 100, synthRun{name: "r", n: 10000, scale: 1.02, stream: true})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compare(base, nw, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad measures reading a results directory of 10,000 records.
func BenchmarkLoad(b *testing.B) {
	dir := saveSide(b, synthSide(b, "x", 1, 100, synthRun{name: "r", n: 10000, scale: 1, stream: true}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
