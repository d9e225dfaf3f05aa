package perf

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"
)

// parallelFigure is a public vLLM measurement of a tensor-parallel run:
// ten requests sent at once (LambdaLabsML/vllm-benchmark's prompt_10,
// benchmark_serving.py at request rate inf, vLLM 0.6.0, --max-num-seqs
// 1024 --gpu-memory-utilization 0.95), with the median TTFT and the median
// TPOT ((latency - TTFT) / (output tokens - 1) per request) it reports.
type parallelFigure struct {
	path    string // results/prompt_10/<path>.json
	gpu     string
	model   string
	tp      int
	prompts []int // input_lens
	outputs []int // output_lens
	ttftMS  float64
	tpotMS  float64
	fitted  bool   // the figure nvlinkLatency is fitted to (the rest are held out)
	noTTFT  string // why the TTFT is not held against the model ("" when it is)
}

// Mixtral's prompts under its own (Mistral) tokenizer.
var mixtralPrompts = []int{14, 30, 28, 12, 375, 29, 487, 369, 5, 236}

// publicParallel are the figures. Source: https://github.com/LambdaLabsML/vllm-benchmark,
// results/prompt_10/<path>.json (September 2024). Meta-Llama-3-70B-Instruct
// has Llama-3.1-70B's architecture (only RoPE scaling and context differ).
// Mixtral's TTFT (1.73-1.75 s for 1,585 prompt tokens, on 4 and 8 GPUs
// alike, where its TPOT is 7-10 ms) is a first-batch warm-up of vLLM 0.6's
// fused-MoE kernels, not a prefill: printed, not held.
var publicParallel = []parallelFigure{
	{path: "8xH100-80GB-SXM/Meta-Llama-3-70B-Instruct_tp8_len2048", gpu: "h100-80gb", model: "llama-3.1-70b-instruct", tp: 8,
		prompts: lambdaPrompts, outputs: []int{120, 624, 233, 194, 101, 741, 0, 0, 6, 35}, ttftMS: 122.280, tpotMS: 12.179, fitted: true},
	{path: "4xH100-80GB-SXM/Meta-Llama-3-70B-Instruct_tp4_len2048", gpu: "h100-80gb", model: "llama-3.1-70b-instruct", tp: 4,
		prompts: lambdaPrompts, outputs: []int{120, 661, 233, 194, 101, 741, 0, 0, 6, 35}, ttftMS: 140.562, tpotMS: 18.117},
	{path: "8xH100-80GB-SXM/Meta-Llama-3.1-70B-Instruct-FP8_tp8_len2048", gpu: "h100-80gb", model: "llama-3.1-70b-instruct-fp8", tp: 8,
		prompts: lambdaPrompts, outputs: []int{120, 658, 233, 194, 101, 741, 0, 0, 6, 69}, ttftMS: 108.670, tpotMS: 10.195},
	{path: "4xH100-80GB-SXM/Mixtral-8x7B-Instruct-v0.1_tp4_len2048", gpu: "h100-80gb", model: "mixtral-8x7b-instruct", tp: 4,
		prompts: mixtralPrompts, outputs: []int{129, 529, 273, 207, 118, 928, 0, 26, 9, 49}, ttftMS: 1749.992, tpotMS: 9.898,
		noTTFT: "first-batch fused-MoE warm-up"},
	{path: "8xH100-80GB-SXM/Mixtral-8x7B-Instruct-v0.1_tp8_len2048", gpu: "h100-80gb", model: "mixtral-8x7b-instruct", tp: 8,
		prompts: mixtralPrompts, outputs: []int{129, 717, 273, 207, 118, 928, 0, 26, 9, 48}, ttftMS: 1731.287, tpotMS: 6.799,
		noTTFT: "first-batch fused-MoE warm-up"},
}

// Tolerances for the held figures. TPOT meets them within 10%. TTFT at
// TP=8 is under-modelled by 29-38% (TP=4: 12%), a known gap left visible
// rather than fitted away: the model gives each rank the one-GPU MFU, where
// a 1/8-wide shard of every GEMM runs less efficiently, and prices the
// prefill's 22 MB all-reduces at NCCL's large-message bus bandwidth,
// though they run eagerly and below the size where it is reached.
const (
	tpotTolerance = 0.15
	ttftTolerance = 0.40
)

// medianTPOT replays the run's decode: all requests start decoding after
// the shared prefill, each step decodes one token of every request still
// running, and a request's TPOT is the mean of the steps it took part in.
// It returns the median over requests with more than one output token, as
// benchmark_serving.py reports it.
func medianTPOT(p *Perf, prompts, outputs []int) time.Duration {
	longest := 0
	for _, o := range outputs {
		longest = max(longest, o)
	}
	sum := make([]time.Duration, len(outputs))
	for k := 1; k < longest; k++ {
		n, ctx := 0, 0
		for i, o := range outputs {
			if o > k {
				n++
				ctx += prompts[i] + k
			}
		}
		d := p.StepTime(Step{DecodeSeqs: n, ContextTokens: ctx})
		for i, o := range outputs {
			if o > k {
				sum[i] += d
			}
		}
	}
	var tpots []float64
	for i, o := range outputs {
		if o > 1 {
			tpots = append(tpots, float64(sum[i])/float64(o-1))
		}
	}
	sort.Float64s(tpots)
	m := len(tpots) / 2
	if len(tpots)%2 == 0 {
		return time.Duration((tpots[m-1] + tpots[m]) / 2)
	}
	return time.Duration(tpots[m])
}

// TestFidelityTensorParallel holds the tensor-parallel and MoE model
// against public vLLM figures for Llama-3-70B at TP=4 and 8 (bf16 and fp8)
// and Mixtral-8x7B at TP=4 and 8 on H100s, printing one FIDELITY line per
// quantity. The TP=8 bf16 run is the point nvlinkLatency is fitted to; the
// others are held out. Fails past tpotTolerance / ttftTolerance.
func TestFidelityTensorParallel(t *testing.T) {
	for _, f := range publicParallel {
		g, m, err := Lookup(f.gpu, f.model)
		if err != nil {
			t.Fatal(err)
		}
		// The runs' own settings: --max-model-len 2048 (so chunked prefill is
		// off in vLLM 0.6.0 and the ten prompts are prefilled in one step),
		// --max-num-seqs 1024, --gpu-memory-utilization 0.95.
		p, err := New(g, m, Config{MaxModelLen: 2048, GPUMemoryUtilization: 0.95, MaxNumSeqs: 1024,
			MaxNumBatchedTokens: 2048, TensorParallelSize: f.tp})
		if err != nil {
			t.Fatal(err)
		}
		role := "held-out"
		if f.fitted {
			role = "fitted"
		}
		config := fmt.Sprintf("tp=%d,10-requests-at-once,%s", f.tp, role)
		src := "LambdaLabsML/vllm-benchmark results/prompt_10/" + f.path + ".json"
		ttft := p.PrefillTTFT(f.prompts...).Seconds() * 1000
		tpot := medianTPOT(p, f.prompts, f.outputs).Seconds() * 1000
		for _, q := range []struct {
			name        string
			real, model float64
			skip        string
			tol         float64
		}{
			{"ttft_ms_median", f.ttftMS, ttft, f.noTTFT, ttftTolerance},
			{"tpot_ms_median", f.tpotMS, tpot, "", tpotTolerance},
		} {
			errPct := (q.model/q.real - 1) * 100
			note := ""
			if q.skip != "" {
				note = " (not held: " + q.skip + ")"
			}
			fmt.Printf("FIDELITY %s %s %s %s real=%.2f model=%.2f err=%+.1f%% source=%s%s\n",
				f.gpu, f.model, q.name, config, q.real, q.model, errPct, src, note)
			if q.skip == "" && math.Abs(errPct) > q.tol*100 {
				t.Errorf("%s %s tp=%d %s: model %.2f ms, public %.2f ms (%+.1f%%, tolerance %.0f%%)",
					f.gpu, f.model, f.tp, q.name, q.model, q.real, errPct, q.tol*100)
			}
		}
	}
}
