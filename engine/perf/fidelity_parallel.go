package perf

import (
	"fmt"
	"strings"
	"time"
)

// parallelRun is one of LambdaLabsML/vllm-benchmark's prompt_10 runs of a
// 70B-class model or of one split over several H100s (vLLM 0.6.0,
// September 2024, --max-num-seqs 1024 --gpu-memory-utilization 0.95,
// --tensor-parallel-size the GPU count, ten ShareGPT prompts sent at once):
// its median TTFT and median TPOT ((latency - TTFT) / (output - 1) per
// request, as benchmark_serving.py reports them). A request with no output
// has TTFT 0 in the file and sits in the median, as it does here (one
// shared step prefills it with the rest).
type parallelRun struct {
	checkpoint, model, measured string // file name's model, profile, as published
	tp                          int
	prompts, outputs            []int // input_lens, output_lens
	ttft, tpot                  float64
	fit                         string // the constant the run is fitted to: "", tpotFit, skewFit or fp8Fit
	noTTFT                      string // why the TTFT is exempt, "" when judged
}

// The runs the link's constants are fitted to, named in their Config.
const (
	tpotFit = "link-latency-fit" // nvlinkLatency (parallel.go), by the TPOT
	skewFit = "rank-skew-fit"    // RankSkew (parallel.go), by the TTFT
	fp8Fit  = "fp8-rate-fit"     // FP8GEMMSpeedup (parallel.go), by the TTFT
)

// moeWarmup is why Mixtral's TTFT is left unjudged.
const moeWarmup = "1.73-1.85 s on 2, 4 and 8 GPUs alike (and 1.76 s again in the 8-GPU --max-model-len 4096 rerun) while its " +
	"TPOT is 7-17 ms: a first-batch warm-up of vLLM 0.6's fused-MoE kernels, not a prefill"

const (
	llama3_70B = "Meta-Llama-3-70B-Instruct"
	llama31FP8 = "Meta-Llama-3.1-70B-Instruct-FP8"
	llama3_8B  = "Meta-Llama-3-8B-Instruct"
	mixtral    = "Mixtral-8x7B-Instruct-v0.1"
)

var parallelRuns = []parallelRun{
	{llama3_70B, "llama-3.1-70b-instruct", "Meta-Llama-3-70B-Instruct bf16", 8,
		lambdaPrompts, []int{120, 624, 233, 194, 101, 741, 0, 0, 6, 35}, 122.280, 12.179, tpotFit + "," + skewFit, ""},
	{llama3_70B, "llama-3.1-70b-instruct", "Meta-Llama-3-70B-Instruct bf16", 4,
		lambdaPrompts, []int{120, 661, 233, 194, 101, 741, 0, 0, 6, 35}, 140.562, 18.117, "", ""},
	{llama3_70B, "llama-3.1-70b-instruct", "Meta-Llama-3-70B-Instruct bf16", 2,
		lambdaPrompts, []int{120, 661, 233, 194, 101, 741, 0, 0, 6, 35}, 218.924, 29.538, "", ""},
	{llama31FP8, "llama-3.1-70b-instruct-fp8", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", 8,
		lambdaPrompts, []int{120, 658, 233, 194, 101, 741, 0, 0, 6, 69}, 108.670, 10.195, "", ""},
	{llama31FP8, "llama-3.1-70b-instruct-fp8", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", 4,
		lambdaPrompts, []int{120, 770, 233, 194, 101, 741, 0, 0, 6, 63}, 125.185, 13.116, "", ""},
	{llama31FP8, "llama-3.1-70b-instruct-fp8", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", 1,
		lambdaPrompts, []int{120, 655, 92, 194, 101, 741, 0, 0, 6, 78}, 280.370, 32.093, fp8Fit, ""},
	{llama3_8B, "llama-3.1-8b-instruct", "Meta-Llama-3-8B-Instruct bf16", 8,
		lambdaPrompts, []int{120, 425, 233, 194, 101, 741, 9, 3, 6, 31}, 55.882, 3.260, "", ""},
	{llama3_8B, "llama-3.1-8b-instruct", "Meta-Llama-3-8B-Instruct bf16", 4,
		lambdaPrompts, []int{120, 414, 233, 194, 101, 741, 9, 3, 6, 31}, 47.918, 3.882, "", ""},
	{llama3_8B, "llama-3.1-8b-instruct", "Meta-Llama-3-8B-Instruct bf16", 2,
		lambdaPrompts, []int{120, 510, 233, 194, 101, 741, 9, 3, 6, 31}, 53.506, 5.257, "", ""},
	{mixtral, "mixtral-8x7b-instruct", "Mixtral-8x7B-Instruct-v0.1 bf16", 4,
		lambdaMistralPrompts, []int{129, 529, 273, 207, 118, 928, 0, 26, 9, 49}, 1749.992, 9.898, "", moeWarmup},
	{mixtral, "mixtral-8x7b-instruct", "Mixtral-8x7B-Instruct-v0.1 bf16", 8,
		lambdaMistralPrompts, []int{129, 717, 273, 207, 118, 928, 0, 26, 9, 48}, 1731.287, 6.799, "", moeWarmup},
	{mixtral, "mixtral-8x7b-instruct", "Mixtral-8x7B-Instruct-v0.1 bf16", 2,
		lambdaMistralPrompts, []int{129, 971, 273, 207, 118, 928, 0, 26, 9, 48}, 1846.133, 16.926, "", moeWarmup},
}

// parallelFigures are the tensor-parallel, 70B-class and MoE figures of the
// fidelity table, on 1 to 8 H100s (Meta-Llama-3-70B and -8B have
// Llama-3.1's architectures; only RoPE scaling and context differ). All
// are held out of the per-architecture efficiency fit (they would move the
// single-GPU rows' MFU); the few that parallel.go's constants are fitted
// to say so in their Config.
func parallelFigures() []CitedFigure {
	var figs []CitedFigure
	for _, r := range parallelRuns {
		cfg := Config{MaxModelLen: 2048, GPUMemoryUtilization: lambdaUtil, MaxNumSeqs: lambdaSeqs, TensorParallelSize: r.tp}
		gpus := fmt.Sprintf("%dxH100-80GB-SXM", r.tp)
		src := fmt.Sprintf("%s%s/%s_tp%d_len2048.json", lambdaRepo, gpus, r.checkpoint, r.tp)
		measured := fmt.Sprintf("%s, %s, tensor parallel %d", r.measured, gpus, r.tp)
		ttftTag, tpotTag := fitTags(r.fit)
		prompts, outputs := r.prompts, r.outputs
		figs = append(figs,
			CitedFigure{
				GPU: "h100-80gb", Model: r.model, Quantity: fitQuantityTTFT,
				Config: fmt.Sprintf("tp=%d,10-prompts-at-once(%d-tokens),one-step,max-model-len=2048,median%s", r.tp, sum(prompts), ttftTag),
				Real:   r.ttft, Unit: "ms", Source: src + " (median_ttft_ms)", VLLM: "0.6.0", Measured: measured,
				HeldOut: true, Why: r.noTTFT, Cfg: cfg,
				Eval: func(p *Perf) float64 { return millis(p.PrefillTTFT(prompts...)) },
			},
			CitedFigure{
				GPU: "h100-80gb", Model: r.model, Quantity: fitQuantityDecode,
				Config: fmt.Sprintf("tp=%d,10-at-once,median-TPOT%s", r.tp, tpotTag),
				Real:   r.tpot, Unit: "ms", Source: src + " (median_tpot_ms)", VLLM: "0.6.0", Measured: measured,
				HeldOut: true, Cfg: cfg,
				Eval: func(p *Perf) float64 { return millis(medianTPOT(p, prompts, outputs)) },
			})
	}
	return figs
}

// fitTags splits a run's fit into its TTFT's and its TPOT's Config suffix.
func fitTags(fit string) (ttft, tpot string) {
	for _, f := range strings.Split(fit, ",") {
		switch f {
		case tpotFit:
			tpot = "," + f
		case skewFit, fp8Fit:
			ttft = "," + f
		}
	}
	return ttft, tpot
}

// medianTPOT replays a run's decode: every request starts decoding after
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
	return time.Duration(median(tpots))
}

// ttMoESource is the only MoE TTFT found that is a prefill rather than
// Mixtral's warm-up: Tenstorrent's A100 reference sweep of Qwen3-30B-A3B
// through vLLM, one request at a time over prompts of a fixed length
// (Qwen3-30B-A3B-Instruct-2507 is the same architecture; only the context
// differs, 40,960 there). The comment names the GPU "A100" and gives
// vLLM's version and flags as "n/a"; the bf16 weights (56.9 GiB) fit one
// A100 only in its 80 GB form, which is how the model is set up here.
const ttMoESource = "github.com/tenstorrent/tt-inference-server/issues/340 (comment 2025-07-18, \"Performance Benchmark " +
	"Sweeps for Qwen3-30B-A3B on A100\": ISL, OSL 128, concurrency 1, TTFT (ms), TPOT (ms))"

// ttUnknownSetup is why that sweep is printed but not judged: its rows
// cannot all come from the setup the comment implies.
const ttUnknownSetup = "setup not stated and not one A100 without a prefix cache: the 4,096-token row (75.2 ms, 2 " +
	"requests) is below the 2,048 one (81.0) and needs ~330 TFLOP/s (4,096 x 2 x ~3.0B active, non-embedding), over one A100's 312 " +
	"dense bf16 peak, so the run used more GPUs or repeated prompts; the 128-token row (35.7 ms) is under one GPU's " +
	"read of all 128 experts (56.9 GiB at 2 TB/s: 30 ms, the model: 54 ms). The model's 2,048 row lands at -1%, " +
	"its 4,096 one at +98%"

// moeFigures are rows of that sweep: TTFT at 2,048 and 4,096 prompt
// tokens and TPOT at 2,048, all exempt (ttUnknownSetup); then gpt-oss-20b's
// judged ones (fidelity_moe.go).
func moeFigures() []CitedFigure {
	base := CitedFigure{
		GPU: "a100-80gb", Model: "qwen3-30b-a3b-instruct-2507", Unit: "ms", HeldOut: true, Why: ttUnknownSetup,
		Source: ttMoESource, VLLM: "not stated (mid-2025)",
		Measured: "Qwen/Qwen3-30B-A3B (dtype not stated; bf16 is its checkpoint's), \"A100\" (count and memory not stated)",
		// Qwen3-30B-A3B's own context (vLLM's default max-model-len).
		Cfg: Config{MaxModelLen: 40960, GPUMemoryUtilization: 0.9},
	}
	var figs []CitedFigure
	for _, r := range []struct {
		isl, req int
		ttft     float64
	}{{2048, 4, 81.0}, {4096, 2, 75.2}} {
		n, f := r.isl, base
		f.Quantity, f.Real = fitQuantityTTFT, r.ttft
		f.Config = fmt.Sprintf("concurrency=1,isl=%d,osl=128,mean-of-%d", n, r.req)
		f.Eval = func(p *Perf) float64 { return millis(requestTTFT(p, n, 0)) }
		figs = append(figs, f)
	}
	tpot := base
	tpot.Quantity, tpot.Real, tpot.Config = fitQuantityDecode, 9.9, "batch=1,context=2048..2176,mean-TPOT"
	tpot.Eval = func(p *Perf) float64 { return millis(decodeStep(p, 1, 2048+64)) }
	figs = append(figs, tpot)
	return append(figs, moeBurstFigures()...)
}
