package perf

// largeModels are the 70B-class and mixture-of-experts profiles, for
// tensor-parallel nodes (parallel.go, moe.go). They live apart from the
// 7-8B table of profiles.go and join it at init, after it, so its order
// (and the calibration profile first) is unchanged.
//
// Facts from each checkpoint's config.json on Hugging Face
// (huggingface.co/<served name>/blob/main/config.json): num_hidden_layers,
// hidden_size, intermediate_size, num_attention_heads, num_key_value_heads,
// head_dim (hidden / heads where absent), vocab_size,
// max_position_embeddings, tie_word_embeddings, attention_bias, and for MoE
// num_experts / num_local_experts, num_experts_per_tok and
// moe_intermediate_size. ParamsB is the published total, which
// TestArchitecture recomputes from those facts (to 1e-4).
//
// fp8 checkpoints hold their linear layers in fp8 (1 byte a weight; the
// scales are per output channel for RedHatAI's Llama, one fp32 per 128x128
// block for Qwen's, 4/16384 byte a weight) and leave embeddings, lm_head
// and norms in bf16, as WeightBytes assumes; vLLM serves them as they are
// ("quantization": "fp8" in their config). The KV cache stays bf16 (vLLM's
// --kv-cache-dtype auto).
var largeModels = []Model{
	{
		// meta-llama/Llama-3.1-70B-Instruct: 80 layers, hidden 8192, 64
		// heads, 8 KV heads of 128, intermediate 28672, vocab 128256, 131072
		// positions, untied: 70,553,706,496 parameters.
		Name: "llama-3.1-70b-instruct", ServedName: "meta-llama/Llama-3.1-70B-Instruct",
		ParamsB: 70.553706496, BytesPerWeight: 2,
		Layers: 80, Hidden: 8192, Intermediate: 28672, Heads: 64, KVHeads: 8, HeadDim: 128,
		Vocab: 128256, MaxContext: 131072,
	},
	{
		// RedHatAI (neuralmagic) Meta-Llama-3.1-70B-Instruct-FP8: the same
		// architecture, linear weights fp8 with per-channel scales.
		Name: "llama-3.1-70b-instruct-fp8", ServedName: "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
		ParamsB: 70.553706496, BytesPerWeight: 1, Quantization: "fp8",
		Layers: 80, Hidden: 8192, Intermediate: 28672, Heads: 64, KVHeads: 8, HeadDim: 128,
		Vocab: 128256, MaxContext: 131072,
	},
	{
		// Qwen/Qwen2.5-72B-Instruct: 80 layers, hidden 8192, 64 heads, 8 KV
		// heads of 128, intermediate 29568, vocab 152064, 32768 positions,
		// q/k/v biases, untied: 72,706,203,648 parameters.
		Name: "qwen2.5-72b-instruct", ServedName: "Qwen/Qwen2.5-72B-Instruct",
		ParamsB: 72.706203648, BytesPerWeight: 2,
		Layers: 80, Hidden: 8192, Intermediate: 29568, Heads: 64, KVHeads: 8, HeadDim: 128,
		Vocab: 152064, MaxContext: 32768, QKVBias: true,
	},
	{
		// Qwen/Qwen3-30B-A3B-Instruct-2507: 48 layers, hidden 2048, 32 heads,
		// 4 KV heads, head_dim 128, 128 experts of moe_intermediate 768, 8 per
		// token, vocab 151936, 262144 positions, q/k norms, untied:
		// 30,532,122,624 parameters, 3.35B active.
		Name: "qwen3-30b-a3b-instruct-2507", ServedName: "Qwen/Qwen3-30B-A3B-Instruct-2507",
		ParamsB: 30.532122624, BytesPerWeight: 2,
		Layers: 48, Hidden: 2048, Intermediate: 6144, Heads: 32, KVHeads: 4, HeadDim: 128,
		Vocab: 151936, MaxContext: 262144, QKNorm: true,
		Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 768,
	},
	{
		// Qwen/Qwen3-30B-A3B-Instruct-2507-FP8: block-wise fp8 (128x128).
		Name: "qwen3-30b-a3b-instruct-2507-fp8", ServedName: "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8",
		ParamsB: 30.532122624, BytesPerWeight: 1 + 4.0/16384, Quantization: "fp8",
		Layers: 48, Hidden: 2048, Intermediate: 6144, Heads: 32, KVHeads: 4, HeadDim: 128,
		Vocab: 151936, MaxContext: 262144, QKNorm: true,
		Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 768,
	},
	{
		// Qwen/Qwen3-235B-A22B-Instruct-2507: 94 layers, hidden 4096, 64
		// heads, 4 KV heads, head_dim 128, 128 experts of 1536, 8 per token,
		// vocab 151936, 262144 positions, q/k norms, untied:
		// 235,093,634,560 parameters, 22.19B active.
		Name: "qwen3-235b-a22b-instruct-2507", ServedName: "Qwen/Qwen3-235B-A22B-Instruct-2507",
		ParamsB: 235.09363456, BytesPerWeight: 2,
		Layers: 94, Hidden: 4096, Intermediate: 12288, Heads: 64, KVHeads: 4, HeadDim: 128,
		Vocab: 151936, MaxContext: 262144, QKNorm: true,
		Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 1536,
	},
	{
		// Qwen/Qwen3-235B-A22B-Instruct-2507-FP8: block-wise fp8 (128x128).
		Name: "qwen3-235b-a22b-instruct-2507-fp8", ServedName: "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8",
		ParamsB: 235.09363456, BytesPerWeight: 1 + 4.0/16384, Quantization: "fp8",
		Layers: 94, Hidden: 4096, Intermediate: 12288, Heads: 64, KVHeads: 4, HeadDim: 128,
		Vocab: 151936, MaxContext: 262144, QKNorm: true,
		Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 1536,
	},
	{
		// mistralai/Mixtral-8x7B-Instruct-v0.1: 32 layers, hidden 4096, 32
		// heads, 8 KV heads of 128, 8 experts of intermediate 14336, 2 per
		// token, vocab 32000, 32768 positions, untied: 46,702,792,704
		// parameters, 12.9B active. Here for the fidelity test's public
		// figures (fidelity_test.go); its prompts are counted with the
		// Qwen2.5 tokenizer (engine/tok has no Mistral one).
		Name: "mixtral-8x7b-instruct", ServedName: "mistralai/Mixtral-8x7B-Instruct-v0.1",
		ParamsB: 46.702792704, BytesPerWeight: 2,
		Layers: 32, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128,
		Vocab: 32000, MaxContext: 32768,
		Experts: 8, ExpertsPerToken: 2, MoEIntermediate: 14336,
	},
	{
		// openai/gpt-oss-20b: 24 layers, hidden 2880, 64 heads and 8 KV
		// heads of head_dim 64, 32 experts (num_local_experts) of
		// intermediate 2880, 4 per token, vocab 201088, 131072 positions,
		// biases on every attention projection, the router and the experts,
		// a sink per head, layer_types alternating sliding_attention (window
		// 128) and full_attention, untied; experts MXFP4, the rest bf16:
		// 20,914,757,184 parameters, 3.6B active (gptoss.go).
		Name: "gpt-oss-20b", ServedName: "openai/gpt-oss-20b",
		ParamsB: 20.914757184, BytesPerWeight: 2, ExpertBytesPerWeight: 4.25 / 8, Quantization: "mxfp4",
		Layers: 24, Hidden: 2880, Intermediate: 2880, Heads: 64, KVHeads: 8, HeadDim: 64,
		Vocab: 201088, MaxContext: 131072, QKVBias: true, AttnOutBias: true, AttentionSinks: true,
		Experts: 32, ExpertsPerToken: 4, MoEIntermediate: 2880, MoEBias: true,
		SlidingWindow: 128, SlidingLayers: 12,
	},
}

func init() { models = append(models, largeModels...) }
