package perf

// fidelityModels are architectures measured in the cited figures that
// have no engine profile, from each model's config.json.
var fidelityModels = []Model{
	{
		// mistralai/Mistral-7B-Instruct-v0.3: 7,248,023,552 parameters.
		Name: "mistral-7b-instruct-v0.3", ServedName: "mistralai/Mistral-7B-Instruct-v0.3",
		ParamsB: 7.248023552, BytesPerWeight: 2,
		Layers: 32, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128,
		Vocab: 32768, MaxContext: 32768,
	},
	{
		// Qwen/Qwen2.5-0.5B-Instruct: 494,032,768 parameters, lm_head tied.
		Name: "qwen2.5-0.5b-instruct", ServedName: "Qwen/Qwen2.5-0.5B-Instruct",
		ParamsB: 0.494032768, BytesPerWeight: 2,
		Layers: 24, Hidden: 896, Intermediate: 4864, Heads: 14, KVHeads: 2, HeadDim: 64,
		Vocab: 151936, MaxContext: 32768, QKVBias: true, TiedEmbeddings: true,
	},
	{
		// TinyLlama/TinyLlama-1.1B-Chat-v1.0/config.json: 22 layers,
		// hidden 2,048, MLP 5,632, 32 heads, 4 KV heads (head 64),
		// vocabulary 32,000, 2,048 positions, lm_head untied; 1,100,048,384
		// parameters. realtreetune/rho-1b-sft-GSM8K (vllm-startup-logs.csv) is this
		// architecture: its H200 log's 122.71 GiB over 365,549 blocks of 16
		// is 22,528 bytes a token, 22 x 4 x 64 x 2 (K, V) x 2 bytes.
		Name: "tinyllama-1.1b", ServedName: "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
		ParamsB: 1.100048384, BytesPerWeight: 2,
		Layers: 22, Hidden: 2048, Intermediate: 5632, Heads: 32, KVHeads: 4, HeadDim: 64,
		Vocab: 32000, MaxContext: 2048,
	},
	{
		// Qwen/Qwen3-8B: 36 layers, hidden 4,096, MLP 12,288, 32 heads,
		// 8 KV heads (head 128), vocabulary 151,936, 40,960 positions,
		// lm_head untied, no QKV bias (config.json; the Base model's,
		// github.com/Chen-Oliver/qwen3-8b-base config.json, differs only in
		// its 32,768 positions); 8,190,735,360 parameters by those shapes
		// (36 x 192,946,432 per layer with its norms, two 622 M
		// embeddings, the final norm). Its bf16 KV cache is 144 KiB a token:
		// 40,960 tokens are 5.62 GiB, the figure vLLM's error names
		// (ree2raz-inference-bench.csv).
		Name: "qwen3-8b", ServedName: "Qwen/Qwen3-8B",
		ParamsB: 8.19073536, BytesPerWeight: 2,
		Layers: 36, Hidden: 4096, Intermediate: 12288, Heads: 32, KVHeads: 8, HeadDim: 128,
		Vocab: 151936, MaxContext: 40960,
	},
	llama2_70B,
	qwen3_8B_AWQ,
	qwen25_3B,
	qwen3_06B,
}

// llama2_70B is meta-llama/Llama-2-70b-hf's architecture (config.json:
// 68,976,648,192 parameters, untied embeddings), with MaxContext widened
// to the 8,192-token prompts and 128-token answers of
// splitwise-sim's runs (docs/engine-sources.md).
var llama2_70B = Model{
	Name: "llama2-70b", ServedName: "meta-llama/Llama-2-70b-hf",
	ParamsB: 68.976648192, BytesPerWeight: 2,
	Layers: 80, Hidden: 8192, Intermediate: 28672, Heads: 64, KVHeads: 8, HeadDim: 128,
	Vocab: 32000, MaxContext: 8192 + 128,
}

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

// qwen25_3B is Qwen/Qwen2.5-3B-Instruct (config.json: 36 layers, hidden
// 2,048, MLP 11,008, 16 heads, 2 KV heads of 128, vocabulary 151,936,
// 32,768 positions, QKV biases, lm_head tied): 3,085,938,688 parameters,
// Qwen's published 3.09 B.
var qwen25_3B = Model{
	Name: "qwen2.5-3b-instruct", ServedName: "Qwen/Qwen2.5-3B-Instruct",
	ParamsB: 3.085938688, BytesPerWeight: 2,
	Layers: 36, Hidden: 2048, Intermediate: 11008, Heads: 16, KVHeads: 2, HeadDim: 128,
	Vocab: 151936, MaxContext: 32768, QKVBias: true, TiedEmbeddings: true,
}

// qwen3_06B is Qwen/Qwen3-0.6B (config.json: 28 layers, hidden 1,024,
// MLP 3,072, 16 heads and 8 KV heads of 128, q/k RMSNorm, vocabulary
// 151,936, 40,960 positions, lm_head tied): 596,049,920 parameters, of
// which 440 M outside the embedding, Qwen's published 0.6 B and 0.44 B.
var qwen3_06B = Model{
	Name: "qwen3-0.6b", ServedName: "Qwen/Qwen3-0.6B",
	ParamsB: 0.59604992, BytesPerWeight: 2,
	Layers: 28, Hidden: 1024, Intermediate: 3072, Heads: 16, KVHeads: 8, HeadDim: 128,
	Vocab: 151936, MaxContext: 40960, QKNorm: true, TiedEmbeddings: true,
}
