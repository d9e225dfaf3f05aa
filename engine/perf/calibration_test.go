package perf

import (
	"math"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/tok"
)

// seedRequests and seedOutput are the seed table's runs: 20 sequential
// requests of 256 output tokens each, streaming and then non-streaming.
const seedRequests, seedOutput = 20, 256

// seedPrompt is the seed table as servebench sends it to the calibration
// profile: prompt, the tokens of CalibrationPrompt as one user message under
// the model's chat template (engine/tok, Qwen2.5's ChatML with its default
// system turn), and cached, the tokens every repeat finds in vLLM V1's
// automatic prefix cache (on by default, as in the seed's vLLM): whole
// blocks, at most all the prompt's tokens but the last (vLLM's
// get_computed_blocks).
func seedPrompt(t testing.TB, p *Perf) (prompt, cached int) {
	t.Helper()
	tk, err := tok.For(p.Model().Name)
	if err != nil {
		t.Fatal(err)
	}
	prompt = tk.ChatCount([]tok.Message{{Role: "user", Content: CalibrationPrompt}})
	bs := p.BlockSize()
	return prompt, (prompt - 1) / bs * bs
}

// calibrationPerf is the seed's real-hardware setup: rtx3060-12gb +
// qwen2.5-7b-instruct-awq, --max-model-len 4096
// --gpu-memory-utilization 0.9.
func calibrationPerf(t testing.TB) *Perf {
	t.Helper()
	g, m, err := Lookup(DefaultGPU, DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(g, m, Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// requestTimes is TTFT and E2E for one request alone whose first cached
// prompt tokens are in the prefix cache: RequestOverhead, one prefill step
// over the rest (reading the cached KV), then one decode step per further
// token, each reading the sequence's growing KV cache.
func requestTimes(p *Perf, prompt, cached, output int) (ttft, e2e time.Duration) {
	ttft = p.RequestOverhead() + p.StepTime(Step{PrefillTokens: prompt - cached, PrefillSeqs: 1, ContextTokens: cached})
	e2e = ttft
	for i := 1; i < output; i++ {
		e2e += p.StepTime(Step{DecodeSeqs: 1, ContextTokens: prompt + i})
	}
	return ttft, e2e
}

// TestCalibration checks the seed lesson's real-hardware figures (RTX 3060,
// Qwen2.5-7B-Instruct-AWQ under vLLM V1) against the model and prints them:
//
//	go test ./engine/perf -run Calibration -v
//
// The seed's table is what servebench's table sends: seedRequests
// sequential requests of one prompt, streaming then non-streaming, with
// prefix caching on. Only the streaming run's first request prefills the
// whole prompt; the other 19 and all 20 non-streaming ones prefill the
// uncached tail, so the rows' engine means differ by a twentieth of what the
// cached blocks save (the seed's rows: 0.0284 and 0.0281 s).
func TestCalibration(t *testing.T) {
	p := calibrationPerf(t)
	st := p.Startup()
	prompt, cached := seedPrompt(t, p)
	fullTTFT, fullE2E := requestTimes(p, prompt, 0, seedOutput)
	hitTTFT, hitE2E := requestTimes(p, prompt, cached, seedOutput)
	streamMean := func(full, hit time.Duration) float64 {
		return (full + (seedRequests-1)*hit).Seconds() / seedRequests
	}
	rows := []struct {
		name           string
		got, want, tol float64 // tol: relative
		unit           string
	}{
		{"weights load (Loading weights took)", st.WeightsLoad.Seconds(), 23.4, 0.05, "s"},
		{"/health OK after spawn", st.Total().Seconds(), 90, 0.05, "s"},
		{"GPU KV cache size", float64(p.KVCacheTokens()), 77744, 0.01, "tokens"},
		{"maximum concurrency for 4,096 tokens", p.MaxConcurrency(4096), 18.98, 0.01, "x"},
		// The seed's table, engine side (/metrics means over each run).
		{"engine TTFT, streaming (1 full + 19 cached)", streamMean(fullTTFT, hitTTFT), 0.0284, 0.05, "s"},
		{"engine TTFT, non-streaming (20 cached)", hitTTFT.Seconds(), 0.0281, 0.05, "s"},
		{"engine E2E, streaming", streamMean(fullE2E, hitE2E), 3.847, 0.05, "s"},
		{"engine E2E, non-streaming", hitE2E.Seconds(), 3.850, 0.05, "s"},
		{"mean decode step (E2E-TTFT)/255", (hitE2E - hitTTFT).Seconds() / (seedOutput - 1) * 1000, 15.0, 0.05, "ms"},
	}
	for _, r := range rows {
		dev := r.got/r.want - 1
		t.Logf("%-44s model %10.5g %-6s seed %10.5g  %+6.2f%% (tolerance %.0f%%)",
			r.name, r.got, r.unit, r.want, 100*dev, 100*r.tol)
		if math.Abs(dev) > r.tol {
			t.Errorf("%s: model %.4g %s, seed %.4g: off by %+.2f%%, over %.0f%%", r.name, r.got, r.unit, r.want, 100*dev, 100*r.tol)
		}
	}
	t.Logf("prompt %d tokens (CalibrationPrompt under the chat template), %d cached in %d-token blocks: "+
		"TTFT %.4f s full, %.4f s cached (%v of fixed cost per request: %v request, %v step and layers, %v prefilling sequence)",
		prompt, cached, p.BlockSize(), fullTTFT.Seconds(), hitTTFT.Seconds(),
		RequestOverheadConst+StepOverhead+time.Duration(p.Model().Layers)*LayerOverhead+PrefillSeqOverhead,
		RequestOverheadConst, StepOverhead+time.Duration(p.Model().Layers)*LayerOverhead, PrefillSeqOverhead)
	t.Logf("weights %.3f GiB, reserve %.3f GiB, KV %.3f GiB in %d blocks of %d; phases: pre-load %v, model load %v, "+
		"profile %v, compile %v, %d CUDA graphs %v, API %v",
		st.ModelGiB, p.ReserveGiB(), st.KVCacheGiB, p.NumGPUBlocks(), p.BlockSize(), st.PreLoad, st.ModelLoad,
		st.Profile.Round(time.Millisecond), st.Compile, st.GraphSizes, st.GraphCapture.Round(time.Millisecond), st.APIStart)
	for _, n := range []int{prompt - 8, prompt + 8, 2 * prompt} {
		full, _ := requestTimes(p, n, 0, 1)
		hit, _ := requestTimes(p, n, (n-1)/p.BlockSize()*p.BlockSize(), 1)
		t.Logf("TTFT sensitivity: %d-token prompt -> %.4f s full, %.4f s cached", n, full.Seconds(), hit.Seconds())
	}
}

// TestCrossCheckH100 compares with vLLM's own memory log for
// Llama-3.1-8B-Instruct on an H100 (llm-d-benchmark's empirical table:
// weights 14.99 GiB, available KV cache 51.38 GiB at utilization 0.9,
// max-model-len 16000): a second real data point, on other hardware and
// vLLM defaults (8192 batched tokens), that no constant was fitted to.
func TestCrossCheckH100(t *testing.T) {
	g, m, err := Lookup("h100-80gb", "llama-3.1-8b-instruct")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(g, m, Config{MaxModelLen: 16000, GPUMemoryUtilization: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("H100 Llama-3.1-8B: weights %.2f GiB (vLLM 14.99), KV %.2f GiB (vLLM 51.38), %d tokens",
		p.WeightsGiB(), p.KVCacheGiB(), p.KVCacheTokens())
	if d := p.WeightsGiB()/14.99 - 1; math.Abs(d) > 0.01 {
		t.Errorf("weights %.2f GiB, vLLM logs 14.99: off by %+.1f%%", p.WeightsGiB(), 100*d)
	}
	if d := p.KVCacheGiB()/51.38 - 1; math.Abs(d) > 0.05 {
		t.Errorf("KV cache %.2f GiB, vLLM logs 51.38: off by %+.1f%%", p.KVCacheGiB(), 100*d)
	}
}
