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

// MemoryRelease names the vLLM releases whose start-up profile holds a
// different reserve than the seed's (Config.Release). The zero value is
// the seed's accounting; the fidelity replay sets a later one from the
// version a figure states.
type MemoryRelease int

const (
	// MemorySeed: the seed's accounting (NonTorchIncrease picks how
	// non-torch memory is counted): the forward's peak and a small
	// sampler term (bf16 logits and one fp32 copy), added. It meets the
	// seed's RTX 3060, vLLM 0.10.1.1's A100 logs and the V0 logs, which
	// leave no room for a sort of the profile's logits: 256 rows of
	// Qwen2's 152,064 at sortLogitBytes would be 1.38 GiB where the A100
	// logs keep 0.50-0.53 all told (FlashInfer's kernel,
	// vllm-project/vllm#11394, sampled without sorting where installed).
	MemorySeed MemoryRelease = iota
	// MemorySortSampler: the dummy sampler run sorts its logits, vLLM's
	// PyTorch top-k/top-p (vllm/v1/sample/ops/topk_topp_sampler.py
	// apply_top_k_top_p), which V1 runs wherever FlashInfer's kernel is
	// off: by default from vllm-project/vllm#26859 ("Disable FlashInfer
	// sampler by default", 2025-10-15) until the Triton kernel below.
	// llm-d's H100 table holds this profile: 4.76-7.38 GiB of activations,
	// ~38 bytes per logit. Its recipe names vllm/vllm-openai:v0.11.0,
	// released before #26859; the rows do not name their image, and an
	// install without FlashInfer sorts too (topk_topp_sampler.py falls
	// back to PyTorch's), so the boundary is the profile the table shows.
	MemorySortSampler
	// MemoryTritonSampler: vLLM 0.19: top-k/top-p by the Triton kernel of
	// vllm-project/vllm#33538 (merged 2026-02; FlashInfer's stays off by
	// default until vllm-project/vllm#40376, 2026-04-20: the 0.19 logs
	// print "FlashInfer top-p/top-k sampling is available but disabled by
	// default"), which masks the fp32 logits in place; and 0.19's larger
	// non-torch increase under tensor parallelism (NonTorchIncreaseTP019GiB).
	MemoryTritonSampler
	// MemoryModelRunnerV2: vLLM 0.28, whose dense models run Model Runner
	// V2 (vllm/v1/worker/gpu/, the default from vllm-project/vllm#44443)
	// and whose worker counts what the KV cache does not get as the drop in
	// free device memory since the worker's first snapshot (weights, every
	// persistent buffer, non-torch memory: "consumed memory (weights +
	// non-torch)" in its log) plus the transient peak, the torch peak less
	// what is still allocated after profiling ("peak activation";
	// memory_profiling's total_consumed and transient_peak_headroom in
	// vllm/utils/mem_utils.py, later vllm/foundation/utilities/, the
	// accounting vllm-project/vllm#37111 proposed; kvcached's PR 492
	// names 0.28 as the release whose worker reads them). Terms:
	//   - V2's sampler holds [max_num_seqs, vocab] int32 output token
	//     counts and a [max_num_seqs, vocab/32] int32 prompt bit mask from
	//     load time on (PenaltiesState, vllm/v1/worker/gpu/sample/
	//     penalties.py), persistent, so counted as consumed memory:
	//     v2PenaltyBytes.
	//   - profile_run runs the forward over max_num_batched_tokens, then
	//     the sampler over one row per request while still holding the
	//     forward's output (model_runner.py _dummy_run/_dummy_sampler_run):
	//     sequential, as the later V1 releases above; Sampler.sample copies
	//     the bf16 logits to fp32 (sampler.py), 6 bytes a logit, and the
	//     dummy run leaves top-k/top-p off ("disabled because of memory
	//     usage", states.py SamplingMetadata.make_dummy), so no sort or
	//     top-k kernel runs. Without the fp32 copy the term is smaller
	//     still: either way it stays below the forward's peak for a 7B
	//     model at 2,048 tokens.
	//   - the non-torch increase: no 0.28 log states it; 0.19's
	//     (NonTorchIncrease019GiB, NonTorchIncreaseTP019GiB) is kept.
	//   - a cold compile (Config.ColdCompile): coldCompilePeak028GiB.
	//   - no CUDA graph estimate: V1 takes one out of the cache by default
	//     from 0.21.0 (its log: "CUDA graph memory profiling is enabled
	//     (default since v0.21.0)", noonghunna/club-3090 issue 104), but
	//     V2's profile_cudagraph_memory returns 0 (vllm-project/vllm#36520,
	//     model_runner.py), and the L4 rows' cache is the budget less
	//     consumed memory and peak activation alone (9.92 - 5.58 - 1.04 =
	//     3.30 GiB), their 0.53 GiB of graphs coming out of the headroom.
	//     V1 releases 0.21-0.27 are not modelled: no KV row states one.
	// Marlin's 4-bit kernels (awq_marlin) add nothing that shows: the
	// repacked weights keep their size and the fp32 reduce scratch is SMs x
	// 64 x 256 floats a GEMM (3.6 MiB on an L4; csrc/quantization/
	// gptq_marlin/gptq_marlin.cu).
	MemoryModelRunnerV2
)

// coldCompilePeak028GiB is the transient peak a 0.28 profile charges when
// torch.compile and its Triton autotuning run cold inside the profiling
// window: their temporaries are freed before the profiled forward, yet
// the window's torch peak keeps them, so "peak activation" is the larger
// of the compile's peak and the forward's (vllm-project/vllm#54122, cold
// AOT compilation charged as peak activation; #54383, vLLM 0.28.0: a first
// boot of a shape gets a ~5% smaller KV cache than the same boot with a
// warm compile cache; the fixes proposed, #54209 and #54479, are open in
// the copies searched). Fitted (MEMFIT cold-compile-peak-0.28): the floSa L4 rows'
// reserve less the physical terms of MemoryModelRunnerV2 (weights,
// V2's sampler buffers, 0.19's non-torch increase); their log's own
// "peak activation" is 1.04 GiB. It holds for that model and those
// shapes only (Qwen2.5-7B-AWQ, 2,048 tokens, on an L4): the compile's
// scratch grows with what is compiled and autotuned.
const coldCompilePeak028GiB = 1.03

// v2PenaltyBytes is what Model Runner V2's PenaltiesState holds for the
// configuration's requests (output token counts and the prompt bit mask,
// int32).
func v2PenaltyBytes(seqs, vocab int) float64 {
	return float64(seqs) * 4 * float64(vocab+(vocab+31)/32)
}

// Bytes per logit element ([min(max_num_batched_tokens, max_num_seqs),
// vocab]) the dummy sampler run holds at its peak, by release. Every
// release holds the lm_head's bf16 logits (2) and the sampler's fp32 copy
// (4; vllm/v1/sample/sampler.py, logits.to(torch.float32)).
const (
	// sortLogitBytes: apply_top_k_top_p sorts the fp32 logits: the sorted
	// values (4) and their int64 indices (8); PyTorch's CUDA sort
	// (aten/src/ATen/native/cuda/SortStable.cu) sorts pairs with cub's
	// segmented radix sort from an int64 index input (8) and keeps an
	// alternate key and value buffer in cub's temporary storage (4 + 8).
	sortLogitBytes = 2 + 4 + 4 + 8 + 8 + 4 + 8
	// tritonLogitBytes: the Triton kernel masks the fp32 logits in place;
	// random_sample then holds the softmax's fp32 probabilities (4) and
	// the exponential noise it divides them by (4).
	tritonLogitBytes = 2 + 4 + 4 + 4
	// tritonBufferGiB: the Triton kernel's [programs, vocab] buffers,
	// "around ~80MiB of extra VRAM" (vllm-project/vllm#33538's
	// description).
	tritonBufferGiB = 80.0 / 1024
)

// NonTorchIncrease019GiB and NonTorchIncreaseTP019GiB are the non-torch
// increase vLLM 0.19.0 logs at DEBUG level on an H100 (llm-d-planner's
// logs, data/figures/llm-d-planner-logs.csv): 0.25 GiB on one GPU and 2.07
// per rank at tensor parallel 2 for Llama-3.1-8B (the two rows whose fits
// column names these constants); its other logs agree: 0.24-0.27 on one
// GPU, 2.06-2.21 at tensor parallel 2
// and 4 for every model, where 0.11 logged 0.13 and 0.55 and pipeline
// parallel 2 and 4 (no all-reduce) log 0.07. The increase is counted
// from the worker's first snapshot, taken after the communicators' own
// initialization (non_torch_memory 1.51 GiB at tensor parallel 2, 0.51
// on one GPU), to the end of profiling; in between 0.19 sets up what
// its all-reduces use (symmetric-memory all-reduce on by default,
// VLLM_ALLREDUCE_USE_SYMM_MEM; FlashInfer's fused all-reduce + RMSNorm
// workspace, "Initialized FlashInfer All Reduce workspace"; NCCL's
// lazily connected buffers) and captures its CUDA graphs once to
// estimate their memory ("Profiling CUDA graph memory"). Which of them
// holds the ~1.5 GiB more than 0.11 is not in the logs: the FlashInfer
// workspace is 64 MB a rank at tensor parallel 2 and 2 MB at 4, yet both
// log the same increase.
const (
	NonTorchIncrease019GiB   = 0.25
	NonTorchIncreaseTP019GiB = 2.07
)

// MemoryProfile is the reserve vLLM's profiling keeps out of the KV cache,
// by part, in GiB per GPU.
type MemoryProfile struct {
	Forward  float64 // the forward's peak over max_num_batched_tokens: MLP and hidden buffers (bf16)
	Sampler  float64 // the dummy sampler run over one logits row per profiled request (and, after the seed, the forward's output it still holds)
	NonTorch float64 // NonTorchDeviceGiB, or the increase the release logs
	// Persistent: buffers allocated after the weights and kept (0.28's
	// Model Runner V2 sampler state), which 0.28 counts as consumed memory.
	Persistent float64
	// Compile: the peak of a cold torch.compile inside the profiling
	// window (0.28, Config.ColdCompile), taken instead of the forward's
	// when larger.
	Compile float64
	// Sequential: the sampler runs after the forward has freed its
	// activations, so the torch peak is the larger of the two; the
	// seed's accounting (MemorySeed) adds them.
	Sequential bool
}

// Activations is the torch peak above the weights.
func (m MemoryProfile) Activations() float64 {
	if m.Sequential {
		return max(m.Forward, m.Sampler, m.Compile)
	}
	return m.Forward + m.Sampler
}

// Total is what the KV cache does not get beside the weights.
func (m MemoryProfile) Total() float64 { return m.Activations() + m.NonTorch + m.Persistent }

// MemoryProfile is this configuration's reserve by part. Per profiled
// token the forward holds the MLP's gate/up output and its activation
// (3 x the MLP width, split over tensor-parallel ranks) and four
// hidden-size buffers (residual, norm output, attention output, MLP
// output), all bf16: a 2,048-token profile of a 7B model peaks at 0.27
// GiB. The seed's sampler term holds logits for one row per profiled
// request (bf16 and fp32); fp32 logits for every profiled token would add
// 0.58 GiB there, which 0.10.1.1's A100 logs (0.50-0.53 GiB kept all
// told) leave no room for. Later releases (Config.Release) run the
// sampler after the forward, holding the forward's bf16 output
// ([max_num_batched_tokens, hidden], profile_run's hidden_states) and the
// release's bytes per logit: the logits are gathered whole on every
// tensor-parallel rank, so this term does not shrink with tensor
// parallelism, as 0.19's logs show (Llama-3.1-8B: 1.89 GiB of torch peak
// at tensor parallel 1, 2 and 4).
func (p *Perf) MemoryProfile() MemoryProfile {
	m, cfg := p.model, p.cfg
	tp := float64(cfg.TensorParallelSize)
	perToken := 2 * (3*float64(m.mlpWidth())/tp + float64(4*m.Hidden))
	logits := float64(min(cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs)) * float64(m.Vocab)
	mp := MemoryProfile{Forward: float64(cfg.MaxNumBatchedTokens) * perToken / gib}
	held := float64(cfg.MaxNumBatchedTokens) * float64(m.Hidden) * 2
	switch cfg.Release {
	case MemorySortSampler:
		mp.Sampler, mp.Sequential = (held+logits*sortLogitBytes)/gib, true
	case MemoryTritonSampler:
		mp.Sampler, mp.Sequential = (held+logits*tritonLogitBytes)/gib+tritonBufferGiB, true
	case MemoryModelRunnerV2:
		mp.Sampler, mp.Sequential = (held+logits*(2+4))/gib, true
		mp.Persistent = v2PenaltyBytes(cfg.MaxNumSeqs, m.Vocab) / gib
		if cfg.ColdCompile {
			mp.Compile = coldCompilePeak028GiB
		}
	default:
		mp.Sampler = logits * (2 + 4) / gib
	}
	mp.NonTorch = p.nonTorchGiB()
	return mp
}

// nonTorchGiB is the non-torch memory the configuration's vLLM counts.
func (p *Perf) nonTorchGiB() float64 {
	tp := p.cfg.TensorParallelSize > 1
	switch {
	case p.cfg.Release >= MemoryTritonSampler && tp:
		return NonTorchIncreaseTP019GiB
	case p.cfg.Release >= MemoryTritonSampler:
		return NonTorchIncrease019GiB
	case !p.cfg.NonTorchIncrease && p.cfg.Release == MemorySeed:
		return NonTorchDeviceGiB
	case tp:
		return NonTorchIncreaseTPGiB
	}
	return NonTorchIncreaseGiB
}

// reserveBytes is the non-KV, non-weight memory that vLLM's profiling
// keeps out of the KV cache (MemoryProfile).
func (p *Perf) reserveBytes() float64 { return p.MemoryProfile().Total() * gib }

// ReserveGiB is the activation and runtime reserve kept out of the KV cache.
func (p *Perf) ReserveGiB() float64 { return p.MemoryProfile().Total() }
