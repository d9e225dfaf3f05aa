// Package perf is the bundled engine's physics: GPU and model profiles (data)
// and a performance model that turns them into KV cache capacity, start-up
// phase durations and per-step times. One set of efficiency constants is
// shared by every profile. The scheduler in engine/sim asks it how long each
// step takes; it never sleeps itself.
//
// CONTRACT (used by engine/sim; keep these signatures):
//
//	Lookup(gpu, model string) (GPU, Model, error)
//	New(gpu GPU, model Model, cfg Config) (*Perf, error)   // error when the model does not fit
//	(*Perf).KVCacheTokens() int; NumGPUBlocks() int; BlockSize() int
//	(*Perf).MaxConcurrency(tokensPerRequest int) float64
//	(*Perf).StepTime(Step) time.Duration
//	(*Perf).Startup() Startup
//	GPUs() []GPU; Models() []Model
package perf

import (
	"fmt"
	"time"
)

// GPU is a GPU's public physical specs.
type GPU struct {
	Name         string  // profile name, e.g. "rtx3060-12gb"
	MemoryGiB    float64 // device memory
	BandwidthGBs float64 // HBM/GDDR bandwidth, GB/s
	TFLOPs       float64 // dense bf16/fp16 tensor TFLOP/s
	LoadGBs      float64 // effective weight-load bandwidth from disk/host, GB/s
}

// Model is a model's architecture facts.
type Model struct {
	Name           string  // profile name, e.g. "qwen2.5-7b-instruct-awq"
	ServedName     string  // name listed in /v1/models, e.g. "Qwen/Qwen2.5-7B-Instruct-AWQ"
	ParamsB        float64 // parameters, billions
	BytesPerWeight float64 // 2 for bf16, ~0.5+ for AWQ int4
	Layers         int
	KVHeads        int
	HeadDim        int
	Vocab          int
	MaxContext     int // max_position_embeddings
}

// Config is the engine's serving configuration (vLLM flag names).
type Config struct {
	MaxModelLen          int     // --max-model-len
	GPUMemoryUtilization float64 // --gpu-memory-utilization
	BlockSize            int     // KV block size in tokens (16)
}

// Step describes one scheduler step: the tokens prefilled this step (new
// prompt tokens, possibly a chunk), the sequences decoding one token, and the
// KV tokens those sequences attend over (read from memory).
type Step struct {
	PrefillTokens int
	PrefillSeqs   int
	DecodeSeqs    int
	ContextTokens int // total KV tokens read by all sequences in the step
}

// Startup holds modelled start-up phase durations (before --speedup).
type Startup struct {
	WeightsLoad  time.Duration // "Loading weights took"
	ModelLoad    time.Duration // "Model loading took ... and %f seconds" (>= WeightsLoad)
	ModelGiB     float64       // weights in GiB
	Profile      time.Duration // memory profiling + KV cache reservation
	Compile      time.Duration // torch.compile
	GraphCapture time.Duration // CUDA graph capture
	APIStart     time.Duration // API server start after engine init
	PreLoad      time.Duration // process start, imports, config, before weight load
}

// Perf is the performance model for one GPU, model and config. It is
// immutable and safe for concurrent use.
type Perf struct {
	gpu   GPU
	model Model
	cfg   Config
}

// New builds the model, refusing a model that does not fit the GPU.
func New(gpu GPU, model Model, cfg Config) (*Perf, error) {
	return nil, fmt.Errorf("perf: not implemented")
}
