package reporttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// RunSpec describes one run to build. Times are seconds.
type RunSpec struct {
	Name   string
	Stream bool
	N      int // measured requests
	Tokens int // output tokens per request
	// FirstVisible is the typical client first visible output when streaming
	// (ignored when not streaming: then first visible is E2E).
	FirstVisible float64
	PerToken     float64 // client gap between content events
	// Buffered delivers the stream in bursts of this many tokens (a proxy
	// that buffers); 0 or 1 delivers each token as it is made.
	Buffered int
	// Engine figures (means). NoEngine leaves them absent; NoTTFT only TTFT.
	EngineTTFT, EngineQueue float64
	NoEngine, NoTTFT        bool
	Concurrency             int
	Rate                    float64
	// OutputTokensPerS overrides the throughput computed for a sequential run.
	OutputTokensPerS float64
	// Speedup divides every duration (times and jitter), as the bundled
	// engine's --speedup does; 0 means 1.
	Speedup float64
}

// scaled returns sp with every duration divided by its Speedup.
func (sp RunSpec) scaled() RunSpec {
	k := sp.Speedup
	if k <= 0 {
		return sp
	}
	sp.FirstVisible /= k
	sp.PerToken /= k
	sp.EngineTTFT /= k
	sp.EngineQueue /= k
	sp.OutputTokensPerS *= k
	return sp
}

// Bundled returns the seed's runs as the bundled engine plays them at
// speedup: every duration divided by it, and Server.Bundled set.
func Bundled(speedup float64) (*result.Results, []result.Record) {
	specs := SeedSpecs()
	for i := range specs {
		specs[i].Speedup = speedup
	}
	res, recs := Build("vllm", specs...)
	res.Server.Bundled = &result.Bundled{GPU: "rtx3060-12gb", Model: "qwen2.5-7b-instruct-awq", Speedup: speedup, Seed: 1}
	res.Server.Command = ""
	st := res.Server.Startup
	for _, v := range []*float64{st.WeightsLoadS, st.WeightsLoadedAtS, st.InitEngineS, st.PortOpenS,
		st.HealthOKS, st.ModelListedS, st.FirstTokenS} {
		*v /= speedup
	}
	*st.PollIntervalS = 0.01
	res.Server.BaseURL = "http://127.0.0.1:41234"
	return res, recs
}

// Base is the wall time every fixture starts at (a fixed instant keeps
// outputs deterministic).
var Base = time.Date(2026, 9, 9, 10, 0, 0, 0, time.UTC)

// SeedSpecs are the seed lesson's two runs: 20 sequential requests of 256
// tokens, streaming and not (RTX 3060, Qwen2.5-7B-Instruct-AWQ).
func SeedSpecs() []RunSpec {
	return []RunSpec{
		{Name: "streaming", Stream: true, N: 20, Tokens: 256, FirstVisible: 0.026, PerToken: 0.01500,
			EngineTTFT: 0.0284},
		{Name: "non-streaming", Stream: false, N: 20, Tokens: 256, FirstVisible: 0.026, PerToken: 0.01499,
			EngineTTFT: 0.0281},
	}
}

// Seed returns the seed lesson's table as results plus records.
func Seed() (*result.Results, []result.Record) { return Build("vllm", SeedSpecs()...) }

// SweepSpecs is a concurrency sweep on the seed's server: past 16 slots the
// queue wait, and with it TTFT, grows while throughput flattens.
func SweepSpecs() []RunSpec {
	var specs []RunSpec
	for _, c := range []int{1, 2, 4, 8, 16, 32, 64} {
		queue := 0.0
		if c > 16 {
			queue = 3.85 * float64(c-16) / 16
		}
		perToken := 0.0150 * (1 + 0.02*float64(min(c, 16)-1))
		tps := float64(min(c, 16)) * 256 / (0.028 + 255*perToken)
		specs = append(specs, RunSpec{
			Name: string(result.ConcurrencyRun(c)), Stream: true, N: 20, Tokens: 256,
			FirstVisible: 0.026 + queue, PerToken: perToken,
			EngineTTFT: 0.028 + queue, EngineQueue: queue, Concurrency: c, OutputTokensPerS: tps,
		})
	}
	return specs
}

// Build makes results and records for specs, against a server of dialect
// ("vllm", "tgi", "none", ...). It is deterministic.
func Build(dialect string, specs ...RunSpec) (*result.Results, []result.Record) {
	res := &result.Results{
		Schema: result.Schema,
		Manifest: result.Manifest{
			Version:     "0.1.0-test",
			CommandLine: []string{"servebench", "table", "--requests", "20", "--max-tokens", "256"},
			StartedAt:   Base,
			Host:        result.Host{CPUs: 2, GoVersion: "go1.26", OS: "linux", Arch: "amd64"},
		},
		Server: result.Server{
			BaseURL: "http://127.0.0.1:8011", Model: "Qwen/Qwen2.5-7B-Instruct-AWQ", Dialect: dialect,
			Command: "vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --max-model-len 4096 --port 8011",
			Startup: SeedStartup(),
		},
		Warnings: []string{},
	}
	var recs []result.Record
	start := Base.Add(100 * time.Second)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sp := range specs {
		run, rr := buildRun(sp, start, rng, dialect)
		res.Runs = append(res.Runs, run)
		recs = append(recs, rr...)
		start = start.Add(time.Duration(run.DurationS*float64(time.Second)) + time.Second)
	}
	return res, recs
}

func ptr[T any](v T) *T { return &v }

// SeedStartup is the seed's start-up: weights load 23.4 s, /health OK at 90 s,
// 77,744 KV tokens, 18.98x concurrency at 4,096 tokens.
func SeedStartup() *result.Startup {
	return &result.Startup{
		WeightsLoadS: ptr(23.4), WeightsLoadedAtS: ptr(41.2), ModelGiB: ptr(5.2), InitEngineS: ptr(38.5),
		PortOpenS: ptr(89.6), HealthOKS: ptr(90.0), ModelListedS: ptr(90.02), FirstTokenS: ptr(90.11),
		KVCacheTokens: ptr(int64(77744)), MaxConcurrency: ptr(18.98), MaxConcurrencyTokens: ptr(int64(4096)),
		PollIntervalS: ptr(0.25),
	}
}

func buildRun(sp RunSpec, start time.Time, rng *rand.Rand, dialect string) (result.Run, []result.Record) {
	k := max(sp.Speedup, 1)
	sp = sp.scaled()
	var recs []result.Record
	var fv, e2e, ttfb, toks []float64
	t := start
	for i := range sp.N {
		rec := buildRecord(sp, i, t, rng, k)
		recs = append(recs, rec)
		fv = append(fv, rec.FirstVisibleS)
		e2e = append(e2e, rec.E2ES)
		ttfb = append(ttfb, rec.TTFBS)
		toks = append(toks, float64(rec.OutputTokens))
		if sp.Concurrency <= 1 {
			t = t.Add(time.Duration((rec.E2ES + 0.002/k) * float64(time.Second)))
		}
	}
	dur := t.Sub(start).Seconds()
	if sp.Concurrency > 1 {
		dur = stats.Summarize(e2e).Max * float64(sp.N) / float64(sp.Concurrency)
	}
	tps := sp.OutputTokensPerS
	if tps == 0 {
		tps = float64(sp.N*sp.Tokens) / dur
	}
	mode := result.ModeSequential
	if sp.Concurrency > 1 {
		mode = result.ModeConcurrent
	}
	run := result.Run{
		Name: sp.Name, Stream: sp.Stream, Requests: sp.N, OK: sp.N, Errors: map[string]int{},
		Workload: result.Workload{Mode: mode, Concurrency: sp.Concurrency, Rate: sp.Rate, Requests: sp.N,
			Warmup: 1, Stream: sp.Stream, Endpoint: "chat", Model: "Qwen/Qwen2.5-7B-Instruct-AWQ",
			MaxTokens: sp.Tokens, ExactLength: true, PromptKind: "fixed"},
		StartedAt: start, DurationS: dur,
		Throughput: result.Throughput{RequestsPerS: float64(sp.N) / dur, OutputTokensPerS: tps},
		Client: result.ClientStats{FirstVisibleS: stats.Summarize(fv), FirstTokenS: stats.Summarize(fv),
			E2ES: stats.Summarize(e2e), TTFBS: stats.Summarize(ttfb), OutputTokens: stats.Summarize(toks)},
	}
	if !sp.NoEngine && dialect != "none" {
		engE2E := sp.EngineTTFT + float64(sp.Tokens-1)*sp.PerToken*0.9995
		run.Engine = result.EngineStats{
			E2ES:   hist(engE2E, sp.N),
			QueueS: hist(sp.EngineQueue, sp.N),
			Reconciliation: &result.Reconciliation{Sent: sp.N, OK: sp.N, Completed: sp.N,
				EngineCount: float64(sp.N)},
		}
		if !sp.NoTTFT {
			run.Engine.TTFTS = hist(sp.EngineTTFT, sp.N)
		}
	}
	return run, recs
}

func hist(mean float64, n int) *result.Hist {
	return &result.Hist{Mean: mean, Count: float64(n), P50Est: mean, P90Est: mean * 1.05, P99Est: mean * 1.1}
}

// buildRecord makes request i: content events one token at a time (or in
// bursts when Buffered), or one event carrying the whole answer when not
// streaming.
func buildRecord(sp RunSpec, i int, start time.Time, rng *rand.Rand, k float64) result.Record {
	jit := func(scale float64) float64 { return (rng.Float64() - 0.5) * scale / k }
	fv := sp.FirstVisible + jit(0.004)
	rec := result.Record{
		Run: sp.Name, Index: i, Stream: sp.Stream, Start: start.UTC(),
		WrittenS: 0.0004/k + jit(0.0002), PromptTokens: 24, OutputTokens: sp.Tokens,
		TokensFrom: "usage", FinishReason: "length", Status: 200,
	}
	if !sp.Stream {
		e2e := sp.FirstVisible + float64(sp.Tokens-1)*sp.PerToken + jit(0.01)
		rec.TTFBS, rec.FirstTokenS, rec.FirstVisibleS, rec.E2ES = e2e-0.0005/k, e2e, e2e, e2e
		rec.Events = [][2]float64{{e2e, float64(sp.Tokens)}}
		return rec
	}
	made := fv // when the engine's tokens reach the client, unbuffered
	burst := max(sp.Buffered, 1)
	var pending int
	for k := range sp.Tokens {
		if k > 0 {
			made += sp.PerToken + jit(0.002)
		}
		pending++
		if pending == burst || k == sp.Tokens-1 {
			rec.Events = append(rec.Events, [2]float64{made, float64(pending)})
			pending = 0
		}
	}
	rec.TTFBS = fv - 0.004/k
	rec.FirstTokenS = rec.Events[0][0]
	rec.FirstVisibleS = rec.Events[0][0]
	rec.E2ES = made + 0.0008/k
	return rec
}

// Save writes res and recs into dir as a run does: results.json indented,
// requests.jsonl one record per line.
func Save(dir string, res *result.Results, recs []result.Record) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, result.ResultsFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var lines bytes.Buffer
	enc := json.NewEncoder(&lines)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("encoding record %d: %w", i, err)
		}
	}
	return os.WriteFile(filepath.Join(dir, result.RequestsFile), lines.Bytes(), 0o644)
}

// Buffered is the seed's streaming run behind a buffering proxy: the engine
// makes the first token after 0.03 s, the client sees text after about 1.2 s.
func Buffered() RunSpec {
	return RunSpec{Name: "streaming", Stream: true, N: 20, Tokens: 256, FirstVisible: 0.026, PerToken: 0.0150,
		Buffered: 80, EngineTTFT: 0.03}
}

// Queued is a streaming run on an overloaded server: 2 s of queue wait in a
// 2.1 s engine TTFT.
func Queued() RunSpec {
	return RunSpec{Name: "streaming", Stream: true, N: 20, Tokens: 256, FirstVisible: 2.1, PerToken: 0.0150,
		EngineTTFT: 2.1, EngineQueue: 2.0}
}
