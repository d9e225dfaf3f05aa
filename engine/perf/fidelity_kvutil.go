package perf

// KV-cache sizes vLLM logged at start-up at more than one
// --gpu-memory-utilization on the same GPU and model, for the profiles
// the A100 logs of memoryFigures leave at one setting.
//
// RTX 3060 (aifredSource): a RAG assistant's notes on serving
// Qwen/Qwen3-8B-AWQ with `vllm serve ... --quantization awq_marlin` on the
// developer's 12 GB RTX 3060 (the README's "Hauptrechner/WSL mit RTX
// 3060"), at 0.85 (--max-model-len 16384) and at 0.90 (--max-model-len
// 26608). The notes quote the log lines, "INFO:" prefixed and without
// timestamps; each pair agrees with Qwen3-8B's 144 KiB a token (22,256
// tokens are 3.06 GiB; 32,768 need the 4.50 GiB the error names). The
// notes name a Tesla P40 beside the 3060 in one place, but a P40 cannot
// run awq_marlin (compute 6.1) and its 24 GB would leave ~12 GiB of cache,
// not 3; at 0.85 and 0.90 of the 3060's 11.76 GiB both logs leave the
// same ~1.25 GiB beside the weights and the cache, so both are the 3060.
// vLLM was `pip install vllm`, unpinned; CHANGELOG.md's entry for these
// tests says "Use vLLM v0.11.0 defaults". KV memory in V1 is set by the
// profile over max_num_batched_tokens (2,048 for `vllm serve` on this
// GPU), not by --max-model-len, so the two contexts do not matter.

const (
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
	lo.Eval = func(p *Perf) float64 { return float64(p.KVCacheTokens()) }
	hi.Quantity, hi.Config, hi.Real, hi.Unit = fitQuantityKVGiB, "util=0.90,max-model-len=26608", 3.66, "GiB"
	hi.Source = aifredSource + "docs/vllm/VLLM_RTX3060_CONFIG.md (\"26,608 tokens + 90% GPU + awq_marlin\": \"Available KV " +
		"cache memory: 3.66 GiB\"; at 32,768, \"4.50 GiB KV cache is needed, which is larger than available KV cache " +
		"memory (3.66 GiB)\", \"Maximum model length is 26608 for this GPU\")"
	hi.Cfg = at(0.90, 26608)
	hi.Eval = func(p *Perf) float64 { return p.KVCacheGiB() }
	return []CitedFigure{lo, hi}
}
