package perf

// vLLM's memory profile: how much of --gpu-memory-utilization x the GPU's
// memory the KV cache gets. V1's Worker.determine_available_memory
// (vllm/v1/worker/gpu_worker.py) runs GPUModelRunner.profile_run, one
// forward over max_num_batched_tokens dummy tokens spread over
// min(max_num_batched_tokens, max_num_seqs) requests followed by the
// sampler over one logits row per request, and gives the KV cache
//
//	budget - weights - torch peak above the weights - non-torch memory
//
// CUDA graphs are captured after the KV cache is allocated and come out of
// the (1 - utilization) headroom (graphGiB, startup.go).
//
// What counts as non-torch changed with vllm-project/vllm#19312 ("[V1]
// Reuse V0's memory_profiling util for gpu worker memory profiling",
// opened 2025-06-07, merged): before it, V1 took everything on the device
// that torch had not allocated (total - free - torch's allocated bytes),
// which holds the process's own CUDA context and library workspaces and
// any other process's memory; after it, only what non-torch memory grew
// by while profiling. The seed's V1 (version not stated) needs the first
// (its KV cache leaves 1.24 GiB beside weights and KV, twice what vLLM
// 0.10.1.1 leaves for the same architecture and batch on an A100); the
// A100 logs (0.10.1.1) and llm-d's H100 table (0.11) the second.
// Config.NonTorchIncrease picks between them; the engine runs the seed's.
const (
	// NonTorchDeviceGiB is the seed's non-torch memory, counted device-wide
	// (before #19312): fitted, what its KV cache (77,744 tokens) leaves
	// beside the weights and the profile's activations below
	// (TestFidelity's MEMFIT line).
	NonTorchDeviceGiB = 0.755
	// NonTorchIncreaseGiB and NonTorchIncreaseTPGiB are the increase
	// vLLM logs ("non-torch forward increase memory") on an H100: 0.13 GiB
	// on one GPU, 0.54-0.55 per GPU at tensor parallel 2 (the all-reduce's
	// buffers), in llm-d/llm-d-benchmark
	// config_explorer/empirical-vllm-memory-results.md (its later revision,
	// whose recipe runs vllm/vllm-openai:v0.11.0).
	NonTorchIncreaseGiB   = 0.13
	NonTorchIncreaseTPGiB = 0.55
)

// MemoryProfile is the reserve vLLM's profiling keeps out of the KV cache,
// by part, in GiB per GPU.
type MemoryProfile struct {
	Forward  float64 // the forward's peak over max_num_batched_tokens: MLP and hidden buffers (bf16)
	Sampler  float64 // logits for one row per profiled request: bf16 from lm_head and the sampler's fp32 copy
	NonTorch float64 // NonTorchDeviceGiB, or NonTorchIncreaseGiB / NonTorchIncreaseTPGiB
}

// Activations is the torch peak above the weights.
func (m MemoryProfile) Activations() float64 { return m.Forward + m.Sampler }

// Total is what the KV cache does not get beside the weights.
func (m MemoryProfile) Total() float64 { return m.Activations() + m.NonTorch }

// MemoryProfile is this configuration's reserve by part. Per profiled
// token the forward holds the MLP's gate/up output and its activation
// (3 x the MLP width, split over tensor-parallel ranks) and four
// hidden-size buffers (residual, norm output, attention output, MLP
// output), all bf16: a 2,048-token profile of a 7B model peaks at 0.27
// GiB. Logits for every profiled token (bf16, as this model held before;
// fp32 would be twice that) would add 0.58 GiB there, which 0.10.1.1's A100
// logs (0.50-0.53 GiB kept all told) leave no room for.
func (p *Perf) MemoryProfile() MemoryProfile {
	m, cfg := p.model, p.cfg
	tp := float64(cfg.TensorParallelSize)
	perToken := 2 * (3*float64(m.mlpWidth())/tp + float64(4*m.Hidden))
	rows := min(cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs)
	mp := MemoryProfile{
		Forward: float64(cfg.MaxNumBatchedTokens) * perToken / gib,
		Sampler: float64(rows) * float64(m.Vocab) * (2 + 4) / gib,
	}
	switch {
	case !cfg.NonTorchIncrease:
		mp.NonTorch = NonTorchDeviceGiB
	case cfg.TensorParallelSize > 1:
		mp.NonTorch = NonTorchIncreaseTPGiB
	default:
		mp.NonTorch = NonTorchIncreaseGiB
	}
	return mp
}

// reserveBytes is the non-KV, non-weight memory that vLLM's profiling
// keeps out of the KV cache (MemoryProfile).
func (p *Perf) reserveBytes() float64 { return p.MemoryProfile().Total() * gib }

// ReserveGiB is the activation and runtime reserve kept out of the KV cache.
func (p *Perf) ReserveGiB() float64 { return p.MemoryProfile().Total() }
