package perf

import "time"

// Start-up constants: fixed times that do not depend on the GPU's speed
// (they are CPU-bound or I/O latency), plus the per-size graph capture cost.
const (
	// PreLoadTime covers process start, importing torch and vLLM, config
	// and tokenizer loading, and spawning the engine core process (which
	// imports everything again) before weights start loading.
	PreLoadTime = 11300 * time.Millisecond

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
	// graph, on top of one warm-up forward pass at that size. Fitted so
	// the seed's start-up comes to its 90 s (with its GPU's fitted MFU,
	// fidelity.go); of the order vLLM 0.6.4 shows on an H200, 8 s for 35
	// sizes of a 1.1B model whose forward passes take well under 10 ms
	// (suesie/grpocredit's log, data/figures/vllm-startup-logs.csv).
	GraphCaptureFixed = 109 * time.Millisecond

	// APIStartTime is from engine ready to "Application startup complete."
	APIStartTime = 2 * time.Second
)

// Startup holds modelled start-up phase durations (before --speedup), in
// the order vLLM runs them. Total is when /health first says OK.
type Startup struct {
	WeightsLoad  time.Duration // "Loading weights took"
	ModelLoad    time.Duration // "Model loading took ... and %f seconds" (>= WeightsLoad)
	ModelGiB     float64       // weights in GiB
	Profile      time.Duration // memory profiling + KV cache reservation
	Compile      time.Duration // torch.compile
	GraphCapture time.Duration // CUDA graph capture
	APIStart     time.Duration // API server start after engine init
	PreLoad      time.Duration // process start, imports, config, before weight load

	KVCacheGiB    float64 // "Available KV cache memory: %.2f GiB"
	KVCacheTokens int     // "GPU KV cache size: %s tokens"
	GraphSizes    int     // batch sizes captured ("Capturing CUDA graphs ... %d")
	GraphGiB      float64 // "Graph capturing finished in %.0f secs, took %.2f GiB"
}

// InitEngine is what vLLM logs as "init engine (profile, create kv cache,
// warmup model) took %.2f seconds": profiling, compile and graph capture.
func (s Startup) InitEngine() time.Duration { return s.Profile + s.Compile + s.GraphCapture }

// Total is the time from spawn to /health OK: the sum of all phases.
func (s Startup) Total() time.Duration {
	return s.PreLoad + s.ModelLoad + s.InitEngine() + s.APIStart
}

// Startup models vLLM's start-up phases. Weight loading is bytes over the
// host's load bandwidth; profiling runs one forward pass over
// MaxNumBatchedTokens tokens; graph capture runs one warm-up decode step at
// each capture size plus a fixed capture cost; the rest are fixed
// CPU-bound times (constants.go).
func (p *Perf) Startup() Startup {
	m := p.model
	weights := WeightLoadFixed + seconds(m.WeightBytes()/(p.gpu.LoadGBs*1e9))
	sizes := p.GraphCaptureSizes()
	var graph time.Duration
	for _, b := range sizes {
		graph += GraphCaptureFixed + p.StepTime(Step{DecodeSeqs: b, ContextTokens: b})
	}
	return Startup{
		PreLoad:       PreLoadTime,
		WeightsLoad:   weights,
		ModelLoad:     weights + PostLoadTime,
		ModelGiB:      p.WeightsGiB(),
		Profile:       ProfileFixed + p.StepTime(Step{PrefillTokens: p.cfg.MaxNumBatchedTokens, PrefillSeqs: 1}),
		Compile:       CompileTime,
		GraphCapture:  graph,
		APIStart:      APIStartTime,
		KVCacheGiB:    p.KVCacheGiB(),
		KVCacheTokens: p.KVCacheTokens(),
		GraphSizes:    len(sizes),
		GraphGiB:      graphGiB(len(sizes), m),
	}
}

// GraphCaptureSizes is vLLM V1's default cudagraph_capture_sizes: 1, 2, 4,
// then multiples of 8 up to min(2 x max_num_seqs, 512).
func (p *Perf) GraphCaptureSizes() []int {
	top := min(2*p.cfg.MaxNumSeqs, 512)
	var sizes []int
	for _, b := range []int{1, 2, 4} {
		if b <= top {
			sizes = append(sizes, b)
		}
	}
	for b := 8; b <= top; b += 8 {
		sizes = append(sizes, b)
	}
	return sizes
}

// graphGiB estimates the memory CUDA graphs take: a small pool per captured
// size that grows with the model's layer count (buffers are shared across
// sizes, so it stays well under a GiB for 7-8B models).
func graphGiB(sizes int, m Model) float64 {
	return float64(sizes) * float64(m.Layers) * 0.25 / 1024
}
