package perf

import "fmt"

// KV-cache sizes vLLM logged at start-up at more than one
// --gpu-memory-utilization on the same GPU and model, for the profiles
// the A100 logs of memoryFigures leave at one setting.
//
// H100 at 0.95 (plannerSource): the start-up logs of llm-d-planner's
// memory validation campaign, one `vllm serve MODEL --max-model-len 8192
// --gpu-memory-utilization 0.95 --no-enable-prefix-caching` per model
// and tensor-parallel size on H100 SXM GPUs (the logs' total_memory
// 79.19 GiB, fused-MoE configs for NVIDIA_H100_80GB_HBM3), vLLM 0.19.0
// at DEBUG level, so each log also names the profile's parts: weights,
// "torch peak memory increase", "non-torch forward increase memory".
// vLLM defaulted to 8,192 batched tokens and 1,024 sequences, as the
// engine does on an H100. The llm-d H100 table in memoryFigures is at
// 0.9 (vLLM 0.11); these are the H100's second utilization. Runs at
// --max-model-len 2048 to 32768 of the same models log the same cache
// (Llama-3.1-8B: 58.11 GiB at each), so one context is cited. The
// engine evaluates them with 0.19's profile (MemoryTritonSampler in
// memory.go): the torch peak is the dummy sampler run's, the same at
// every tensor-parallel size (Llama-3.1-8B: 1.89 GiB at 1, 2 and 4), and
// the non-torch increase is ~2.1 GiB per rank under tensor parallelism
// where 0.11 logged 0.55. The two Llama-3.1-8B logs at tensor parallel 1
// and 2 give the engine's 0.19 non-torch constants (nonTorchLogFit).
//
// RTX 3060 (aifredSource): a RAG assistant's notes on serving
// Qwen/Qwen3-8B-AWQ with `vllm serve ... --quantization awq_marlin` on the
// developer's 12 GB RTX 3060 (the README's "Hauptrechner/WSL mit RTX
// 3060"), at 0.85 (--max-model-len 16384) and at 0.90 (--max-model-len
// 26608). The notes quote the log lines, "INFO:" prefixed and without
// timestamps; each pair agrees with Qwen3-8B's 144 KiB a token (22,256
// tokens are 3.06 GiB; 32,768 need the 4.50 GiB the error names). The
// 0.85 notes are titled and "Tested on RTX 3060", yet their second half
// speaks of a Tesla P40 ("Tesla P40 Hardware Limits (Measured)": 24 GB,
// 3.06 GiB of cache at 85%); but a P40 cannot run awq_marlin (compute
// 6.1; the README: vLLM/AWQ is not supported on the P40, which runs
// Ollama) and its 24 GB would leave ~12 GiB of cache, not 3; at 0.85 and
// 0.90 of the 3060's 11.76 GiB both logs leave the same ~1.25 GiB beside
// the weights and the cache, so both are the 3060. The 0.90 notes'
// "GPU KV cache size" line reads "~27K tokens", not a count, so that row
// is judged by its GiB.
// vLLM was `pip install vllm`, unpinned; CHANGELOG.md's entry for these
// tests says "Use vLLM v0.11.0 defaults". KV memory in V1 is set by the
// profile over max_num_batched_tokens (2,048 for `vllm serve` on this
// GPU), not by --max-model-len, so the two contexts do not matter.

const (
	plannerCommit = "d3121e059da88662db39a926a3ead964be97359b"
	plannerSource = "github.com/llm-d-incubation/llm-d-planner @" + plannerCommit + " accuracy/results/v0.19.0/logs/"

	aifredCommit = "1fc1a4ab28afb390a2a00b8a8babeb9d7fc4827c"
	aifredSource = "github.com/Peuqui/AIfred-Intelligence @" + aifredCommit + " "
	aifredVLLM   = "not pinned (pip install vllm; CHANGELOG.md: \"Use vLLM v0.11.0 defaults\")"
	aifredModel  = "Qwen/Qwen3-8B-AWQ (4-bit AWQ, awq_marlin; bf16 embeddings and lm_head), 1x RTX 3060 12GB " +
		"under WSL2 (README), vllm serve defaults beside the flags named"
	// aifredWhy: the two figures leave ~1.25 GiB beside weights and cache
	// (the seed's RTX 3060 log leaves 1.24 GiB), where 0.11's
	// increase-only non-torch count leaves the engine 0.55.
	aifredWhy = "vLLM version not pinned and the host is WSL2 on a Windows desktop (the repository's README): " +
		"evaluated as 0.11 (increase-only non-torch, vllm-project/vllm#19312); the seed's device-wide count " +
		"(NonTorchDeviceGiB) meets both within 3%"
)

// qwen3_8B_AWQ is Qwen/Qwen3-8B-AWQ: qwen3-8b's shapes (fidelityModels,
// from Qwen/Qwen3-8B's config.json) with its linear layers in 4-bit AWQ
// (group size 128, zero points), which vLLM keeps at that size under
// awq_marlin, and its embeddings and lm_head in bf16.
var qwen3_8B_AWQ = Model{
	Name: "qwen3-8b-awq", ServedName: "Qwen/Qwen3-8B-AWQ",
	ParamsB: 8.19073536, BytesPerWeight: awqBytesPerWeight, Quantization: "awq_marlin",
	Layers: 36, Hidden: 4096, Intermediate: 12288, Heads: 32, KVHeads: 8, HeadDim: 128,
	Vocab: 151936, MaxContext: 40960,
}

func kvutilFigures() []CitedFigure {
	return append(aifredFigures(), plannerFigures()...)
}

// plannerRun is one llm-d-planner start-up log: the KV cache it logged
// and the profile's parts it printed at DEBUG level (GiB per GPU).
type plannerRun struct {
	log, model, measured string
	tp                   int
	util                 float64
	tokens               int
	kvGiB                float64
	weights, torch, nt   float64
	// byGiB: judge the GiB, not the tokens; gpt-oss's sliding-window
	// layers make vLLM's token count a different quantity from the
	// engine's (gptoss.go), as the other gpt-oss KV rows do.
	byGiB bool
	// ntFit: the engine's 0.19 non-torch constant is this log's
	// (nonTorchLogFit).
	ntFit bool
}

// nonTorchLogFit marks, in its Config, the llm-d-planner logs whose
// non-torch increase NonTorchIncrease019GiB and NonTorchIncreaseTP019GiB
// are read from (memory.go).
const nonTorchLogFit = "non-torch-log-fit"

func plannerFigures() []CitedFigure {
	runs := []plannerRun{
		{"qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--8192.log", "qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct bf16",
			1, 0.95, 1096000, 58.53, 14.25, 2.21, 0.24, false, false},
		{"qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log", "qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct bf16",
			2, 0.95, 2390592, 63.84, 7.12, 2.21, 2.06, false, false},
		{"qwen-qwen2-5-7b-instruct--h100-80gb--tp4pp1dp1--8192.log", "qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct bf16",
			4, 0.95, 5043280, 67.34, 3.55, 2.21, 2.13, false, false},
		{"meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192.log", "llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct bf16",
			1, 0.95, 476016, 58.11, 14.99, 1.89, 0.25, false, true},
		{"meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192.log", "llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct bf16",
			2, 0.95, 1044688, 63.76, 7.51, 1.89, 2.07, false, true},
		{"meta-llama-llama-3-1-8b---h100-80gb--tp4pp1dp1--8192.log", "llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct bf16",
			4, 0.95, 2209792, 67.44, 3.77, 1.89, 2.13, false, false},
		{"qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log", "qwen3-8b", "Qwen/Qwen3-8B bf16",
			1, 0.95, 418688, 57.5, 15.27, 2.21, 0.25, false, false},
		{"qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192.log", "qwen3-30b-a3b-instruct-2507",
			"Qwen/Qwen3-30B-A3B bf16 (the 2507 Instruct profile's architecture)", 1, 0.95, 168288, 15.41, 56.88, 2.68, 0.27, false, false},
		{"mistralai-mixtral-8x7b-i--h100-80gb--tp2pp1dp1--8192.log", "mixtral-8x7b-instruct", "mistralai/Mixtral-8x7B-Instruct-v0.1 bf16",
			2, 0.95, 465936, 28.44, 43.51, 1.21, 2.07, false, false},
		{"fp8dyn-llama-3-3-70b--h100-80gb--tp2pp1dp1--8192.log", "llama-3.1-70b-instruct-fp8",
			"RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic (Llama-3.1-70B's architecture, fp8 weights)", 2, 0.95, 244304, 37.28, 33.88, 1.96, 2.1, false, false},
		{"fp8dyn-llama-3-3-70b--h100-80gb--tp4pp1dp1--8192.log", "llama-3.1-70b-instruct-fp8",
			"RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic (Llama-3.1-70B's architecture, fp8 weights)", 4, 0.95, 708992, 54.09, 16.96, 1.97, 2.21, false, false},
		{"openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.log", "gpt-oss-20b", "openai/gpt-oss-20b (MXFP4 experts, bf16 rest)",
			2, 0.9, 2591776, 59.32, 7.01, 2.87, 2.07, true, false},
		{"qwen-qwen2-5-72b-instruc--h100-80gb--tp2pp1dp1--8192.log", "qwen2.5-72b-instruct", "Qwen/Qwen2.5-72B-Instruct bf16",
			2, 0.95, 19920, 3.04, 67.8, 2.29, 2.09, false, false},
	}
	figs := make([]CitedFigure, 0, len(runs))
	for _, r := range runs {
		figs = append(figs, r.figure())
	}
	return figs
}

// figure is the run's KV-cache figure, held out, evaluated with 0.19's
// memory profile.
func (r plannerRun) figure() CitedFigure {
	utilArg := "--gpu-memory-utilization 0.95"
	if r.util != 0.95 {
		utilArg = "no --gpu-memory-utilization (default 0.9: \"Requested memory: 0.900000 (util)\")"
	}
	f := CitedFigure{
		GPU: "h100-80gb", Model: r.model, Quantity: fitQuantityKVTokens,
		Config: fmt.Sprintf("util=%.2f,max-model-len=8192,tp=%d", r.util, r.tp), Real: float64(r.tokens), Unit: "tokens",
		Source: fmt.Sprintf("%s%s (\"Available KV cache memory: %.4g GiB\", \"GPU KV cache size: %s tokens\"; DEBUG: weights "+
			"%.4g GiB, torch peak memory increase %.4g GiB, non-torch forward increase memory %.4g GiB)",
			plannerSource, r.log, r.kvGiB, Commas(r.tokens), r.weights, r.torch, r.nt),
		VLLM:     "0.19.0",
		Measured: fmt.Sprintf("%s, %dx H100 80GB HBM3, tensor parallel %d, --max-model-len 8192, %s, prefix caching off", r.measured, r.tp, r.tp, utilArg),
		HeldOut:  true,
		Cfg: Config{MaxModelLen: 8192, GPUMemoryUtilization: r.util, TensorParallelSize: r.tp, NonTorchIncrease: true,
			Release: MemoryTritonSampler},
		Eval: kvTokens,
	}
	if r.ntFit {
		f.Config += "," + nonTorchLogFit
	}
	if r.byGiB {
		f.Quantity, f.Real, f.Unit = fitQuantityKVGiB, r.kvGiB, "GiB"
		f.Eval = (*Perf).KVCacheGiB
	}
	return f
}

func aifredFigures() []CitedFigure {
	base := CitedFigure{
		GPU: "rtx3060-12gb", Model: qwen3_8B_AWQ.Name, VLLM: aifredVLLM, Measured: aifredModel,
		HeldOut: true, Why: aifredWhy,
	}
	at := func(util float64, maxLen int) Config {
		return Config{MaxModelLen: maxLen, GPUMemoryUtilization: util, NonTorchIncrease: true}
	}
	lo, hi := base, base
	lo.Quantity, lo.Config, lo.Real, lo.Unit = fitQuantityKVTokens, "util=0.85,max-model-len=16384", 22256, "tokens"
	lo.Source = aifredSource + "docs/vllm/VLLM_FIX_SUMMARY.md (\"16K + 0.85 + awq_marlin\": \"Available KV cache memory: " +
		"3.06 GiB\", \"GPU KV cache size: 22,256 tokens\", \"Maximum concurrency for 16,384 tokens per request: 1.36x\")"
	lo.Cfg = at(0.85, 16384)
	lo.Eval = kvTokens
	hi.Quantity, hi.Config, hi.Real, hi.Unit = fitQuantityKVGiB, "util=0.90,max-model-len=26608", 3.66, "GiB"
	hi.Source = aifredSource + "docs/vllm/VLLM_RTX3060_CONFIG.md (\"26,608 tokens + 90% GPU + awq_marlin\": \"Available KV " +
		"cache memory: 3.66 GiB\"; at 32,768, \"4.50 GiB KV cache is needed, which is larger than available KV cache " +
		"memory (3.66 GiB)\", \"Maximum model length is 26608 for this GPU\")"
	hi.Cfg = at(0.90, 26608)
	hi.Eval = (*Perf).KVCacheGiB
	return []CitedFigure{lo, hi}
}
