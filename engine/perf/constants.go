package perf

import "time"

// The efficiency constants, shared by every GPU and model profile. The
// seed's real-hardware figures (rtx3060-12gb + qwen2.5-7b-instruct-awq)
// follow from the specs and these; no profile has its own knob.
const (
	// BandwidthEfficiency is the fraction of peak memory bandwidth that
	// decode GEMVs sustain (well-tuned kernels reach ~90% of peak in
	// streaming reads on GDDR6 and HBM alike).
	BandwidthEfficiency = 0.92

	// MFU is the fraction of dense tensor throughput that prefill and
	// large-batch GEMMs sustain (0.6-0.8 is typical for large matmuls;
	// the short-prompt TTFT of the seed needs ~0.7 on the 3060).
	MFU = 0.72

	// StepOverhead is the fixed cost of one scheduler step: scheduling,
	// input preparation, sampling and output processing that the GPU does
	// not hide.
	StepOverhead = 600 * time.Microsecond

	// LayerOverhead is the per-layer latency floor of one forward pass:
	// ~10 kernels per layer at ~3 us of launch, ramp-up and tail each
	// (inside a CUDA graph), paid on top of the bytes and FLOPs.
	LayerOverhead = 30 * time.Microsecond

	// RequestOverheadConst is paid once per request between arrival and
	// scheduling: tokenizing, the API server to engine core hand-off, and
	// detokenizing the first token.
	RequestOverheadConst = 1600 * time.Microsecond

	// NonTorchReserveGiB is the memory vLLM's profiling run sees outside
	// the weights and the activations it models: cuBLAS and Marlin
	// workspaces, NCCL buffers, allocator fragmentation. vLLM logs
	// 0.13-0.55 GiB for it on H100 (llm-d-benchmark's empirical table).
	NonTorchReserveGiB = 0.25
)

// Start-up constants: fixed times that do not depend on the GPU's speed
// (they are CPU-bound or I/O latency), plus the per-size graph capture cost.
const (
	// PreLoadTime covers process start, importing torch and vLLM, config
	// and tokenizer loading, and spawning the engine core process (which
	// imports everything again) before weights start loading.
	PreLoadTime = 14200 * time.Millisecond

	// WeightLoadFixed is the part of weight loading that is not bytes:
	// opening safetensors shards, building the module tree.
	WeightLoadFixed = 1100 * time.Millisecond

	// PostLoadTime is process_weights_after_loading (e.g. Marlin repacking)
	// and moving the model into place, between "Loading weights took" and
	// "Model loading took".
	PostLoadTime = 600 * time.Millisecond

	// ProfileFixed is memory profiling bookkeeping and KV cache tensor
	// allocation, on top of the profiling forward pass itself.
	ProfileFixed = 2 * time.Second

	// CompileTime is torch.compile (Dynamo bytecode transform plus Inductor
	// compilation of the piecewise graphs), CPU-bound.
	CompileTime = 30 * time.Second

	// GraphCaptureFixed is the per-batch-size cost of capturing one CUDA
	// graph, on top of one warm-up forward pass at that size.
	GraphCaptureFixed = 50 * time.Millisecond

	// APIStartTime is from engine ready to "Application startup complete."
	APIStartTime = 2 * time.Second
)

// RequestOverhead is the fixed per-request time between arrival and
// joining the waiting queue (see the package doc for how the engine
// applies it). It is the same for every profile.
func (p *Perf) RequestOverhead() time.Duration { return RequestOverheadConst }
