package perf

import (
	"math"
	"testing"
	"time"
)

// calibrationPrompt is the prompt length, in tokens, of the "short chat
// prompt" the calibration TTFT applies to: what engine/sim counts for
// bench.DefaultPrompt (78 bytes / 4 = 20 tokens + 7 of chat template,
// sim.ChatTokens). TTFT grows ~0.85 ms per prompt token on the 3060 (the
// prefill is compute-bound), so the engine's token count and this constant
// must agree; the test prints the sensitivity.
const calibrationPrompt = 27

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

// aloneTimes is TTFT and E2E for one request alone: RequestOverhead, one
// prefill step, then one decode step per further token, each reading the
// sequence's growing KV cache.
func aloneTimes(p *Perf, prompt, output int) (ttft, e2e time.Duration) {
	ttft = p.RequestOverhead() + p.StepTime(Step{PrefillTokens: prompt, PrefillSeqs: 1})
	e2e = ttft
	for i := 1; i < output; i++ {
		e2e += p.StepTime(Step{DecodeSeqs: 1, ContextTokens: prompt + i})
	}
	return ttft, e2e
}

// TestCalibration checks the seed lesson's real-hardware figures (RTX 3060,
// Qwen2.5-7B-Instruct-AWQ under vLLM) against the model and prints them:
// go test ./engine/perf -run Calibration -v
func TestCalibration(t *testing.T) {
	p := calibrationPerf(t)
	st := p.Startup()
	ttft, e2e := aloneTimes(p, calibrationPrompt, 256)
	rows := []struct {
		name           string
		got, want, tol float64 // tol: relative
		unit           string
	}{
		{"weights load (Loading weights took)", st.WeightsLoad.Seconds(), 23.4, 0.05, "s"},
		{"/health OK after spawn", st.Total().Seconds(), 90, 0.05, "s"},
		{"GPU KV cache size", float64(p.KVCacheTokens()), 77744, 0.01, "tokens"},
		{"maximum concurrency for 4,096 tokens", p.MaxConcurrency(4096), 18.98, 0.01, "x"},
		{"engine TTFT, 27-token chat prompt, alone", ttft.Seconds(), 0.028, 0.05, "s"},
		{"E2E, 256 output tokens, alone", e2e.Seconds(), 3.85, 0.05, "s"},
		{"mean decode step (E2E-TTFT)/255", (e2e - ttft).Seconds() / 255 * 1000, 15.0, 0.05, "ms"},
	}
	for _, r := range rows {
		dev := r.got/r.want - 1
		t.Logf("%-42s model %10.5g %-6s seed %10.5g  %+6.2f%% (tolerance %.0f%%)",
			r.name, r.got, r.unit, r.want, 100*dev, 100*r.tol)
		if math.Abs(dev) > r.tol {
			t.Errorf("%s: model %.4g %s, seed %.4g: off by %+.2f%%, over %.0f%%", r.name, r.got, r.unit, r.want, 100*dev, 100*r.tol)
		}
	}
	t.Logf("weights %.3f GiB, reserve %.3f GiB, KV %.3f GiB in %d blocks of %d; phases: pre-load %v, model load %v, "+
		"profile %v, compile %v, %d CUDA graphs %v, API %v",
		st.ModelGiB, p.ReserveGiB(), st.KVCacheGiB, p.NumGPUBlocks(), p.BlockSize(), st.PreLoad, st.ModelLoad,
		st.Profile.Round(time.Millisecond), st.Compile, st.GraphSizes, st.GraphCapture.Round(time.Millisecond), st.APIStart)
	for _, n := range []int{24, 30, 35, 48} {
		tt, _ := aloneTimes(p, n, 1)
		t.Logf("TTFT sensitivity: %d-token prompt -> %.4f s", n, tt.Seconds())
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
