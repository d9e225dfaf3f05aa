package perf

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// GPU is a GPU's public physical specs, as data/gpus.json holds them
// (data.go loads and checks them; the record's datasheet, power and load
// sources stay in the file).
type GPU struct {
	Name       string `json:"name"`        // profile name, e.g. "rtx3060-12gb"
	Arch       string `json:"arch"`        // architecture (data/archs.json), e.g. "gh100": its kernels' efficiencies and features
	DeviceName string `json:"device_name"` // what the driver names it (NVML, torch.cuda.get_device_name), e.g. "NVIDIA H100 80GB HBM3"
	// MemoryGiB is the capacity the driver exposes to the framework (what
	// torch.cuda.mem_get_info reports as total), a little under the
	// marketing figure: vLLM's --gpu-memory-utilization applies to it.
	MemoryGiB    float64 `json:"memory_gib"`
	BandwidthGBs float64 `json:"bandwidth_gbs"` // HBM/GDDR bandwidth, GB/s
	// TFLOPs is dense fp16/bf16 tensor throughput with fp32 accumulation,
	// what PyTorch and Marlin kernels use (GeForce parts run it at half
	// their fp16-accumulate rate).
	TFLOPs float64 `json:"tflops"`
	// LoadGBs is the rate at which the host such a GPU usually sits in
	// gets safetensors from disk into GPU memory (the record's
	// load_source says whose).
	LoadGBs float64 `json:"load_gbs"`
	// BoardPowerW is the board's rated power (TDP/TGP, the record's
	// power_source), what the engine's DCGM series draw while a step runs;
	// IdlePowerW between steps, an assumption for every profile (no
	// datasheet gives it): roughly a tenth of board power, what an idle GPU
	// holding a loaded model (memory clocks up) draws.
	BoardPowerW  float64 `json:"board_power_w"`
	IdlePowerW   float64 `json:"idle_power_w"`
	Interconnect string  `json:"interconnect"` // the node's GPU link (a record of data/links.json), e.g. "nvlink4"
}

// Model is a model's architecture facts, as data/models.json holds them:
// the JSON names are config.json's where it has one.
type Model struct {
	Name           string  `json:"name"`                   // profile name, e.g. "qwen2.5-7b-instruct-awq"
	ServedName     string  `json:"served_name"`            // name listed in /v1/models, e.g. "Qwen/Qwen2.5-7B-Instruct-AWQ"
	ParamsB        float64 `json:"params_b"`               // parameters, billions
	BytesPerWeight float64 `json:"bytes_per_weight"`       // of the linear layers: 2 for bf16, ~0.52 for AWQ int4 (scales, zeros)
	Quantization   string  `json:"quantization,omitempty"` // "" (bf16) or the vLLM quantization method, e.g. "awq_marlin"
	Layers         int     `json:"num_hidden_layers"`
	Hidden         int     `json:"hidden_size"`
	Intermediate   int     `json:"intermediate_size"`   // MLP
	Heads          int     `json:"num_attention_heads"` // query heads
	KVHeads        int     `json:"num_key_value_heads"`
	HeadDim        int     `json:"head_dim"`
	Vocab          int     `json:"vocab_size"`
	MaxContext     int     `json:"max_position_embeddings"`
	QKVBias        bool    `json:"qkv_bias,omitempty"`            // q/k/v projections have biases (Qwen2)
	TiedEmbeddings bool    `json:"tie_word_embeddings,omitempty"` // lm_head shares the embedding matrix

	// Mixture of experts (moe.go); zero for a dense model. Every layer's
	// MLP is Experts experts of MoEIntermediate, ExpertsPerToken of them
	// routed per token, plus a router (hidden x Experts).
	Experts         int  `json:"num_experts,omitempty"`           // num_experts / num_local_experts
	ExpertsPerToken int  `json:"num_experts_per_tok,omitempty"`   // num_experts_per_tok
	MoEIntermediate int  `json:"moe_intermediate_size,omitempty"` // moe_intermediate_size (Mixtral: intermediate_size)
	QKNorm          bool `json:"qk_norm,omitempty"`               // per-head RMSNorm on q and k (Qwen3)

	// gpt-oss's extras (gptoss.go); zero for every other profile.
	ExpertBytesPerWeight float64 `json:"expert_bytes_per_weight,omitempty"` // the experts' bytes per weight when quantized apart (MXFP4: 4.25 bits); 0: BytesPerWeight
	AttnOutBias          bool    `json:"attn_out_bias,omitempty"`           // o_proj has a bias too (attention_bias on every projection)
	AttentionSinks       bool    `json:"attention_sinks,omitempty"`         // one learned sink logit per query head per layer
	MoEBias              bool    `json:"moe_bias,omitempty"`                // the router and every expert projection have biases
	SlidingWindow        int     `json:"sliding_window,omitempty"`          // sliding_window of the layers that use one
	SlidingLayers        int     `json:"sliding_layers,omitempty"`          // layers whose attention is sliding_attention (layer_types)
}

// Config is the engine's serving configuration (vLLM flag names). Zero
// fields take vLLM's defaults, filled in by New (read them back with
// (*Perf).Config), except GPUMemoryUtilization, which must be set.
type Config struct {
	MaxModelLen          int     // --max-model-len (0: the model's MaxContext)
	GPUMemoryUtilization float64 // --gpu-memory-utilization, in (0, 1]
	BlockSize            int     // KV block size in tokens (0: 16)
	MaxNumSeqs           int     // --max-num-seqs (0: 256, or 1024 on H100-class GPUs)
	MaxNumBatchedTokens  int     // --max-num-batched-tokens (0: 2048, or 8192 on H100-class GPUs)
	TensorParallelSize   int     // --tensor-parallel-size: GPUs of the node the model is split over (0: 1); parallel.go
	PipelineParallelSize int     // --pipeline-parallel-size: stages of consecutive layers, each on TensorParallelSize GPUs (0: 1); parallel.go
	// NonTorchIncrease selects how vLLM counts non-torch memory in its
	// memory profile (memory.go): false, the seed's V1 (device-wide, as
	// before vllm-project/vllm#19312); true, later releases (only the
	// increase while profiling). A Release past MemorySeed counts the
	// increase whatever this says (memory.go nonTorchGiB).
	NonTorchIncrease bool
	// Release selects a later vLLM release's memory profile (memory.go:
	// how its dummy sampler run holds the logits; 0.19's non-torch
	// increase; 0.28's Model Runner V2); the zero value is the seed's.
	// It is not derived from VLLMVersion: the profiles are known at the
	// releases rows show (0.19, 0.28, and llm-d's sorting table, whose
	// stated 0.11.0 predates the sort), not at boundaries; the changes
	// between them (vllm-project/vllm#26859, #33538, #40376, 0.21's CUDA
	// graph estimate) fall in releases no row states, so a boundary would
	// give those releases a profile nothing checks.
	// TestMemoryReleaseMatchesStatedVersion keeps the rows' two statements
	// in step.
	Release MemoryRelease
	// ColdCompile: the start-up compiled with an empty torch.compile
	// cache, whose scratch 0.28's profile charges as peak activation
	// (MemoryModelRunnerV2 only; memory.go coldCompilePeak028GiB).
	ColdCompile bool
	// VLLMVersion is the vLLM release whose step loop the engine
	// emulates, "MAJOR.MINOR[.PATCH]" (version.go); "" is the seed's.
	VLLMVersion string
}

// DefaultConfig is the seed's `vllm serve` configuration: --max-model-len
// 4096 --gpu-memory-utilization 0.9, block size 16; MaxNumSeqs and
// MaxNumBatchedTokens are left 0 so New picks vLLM's per-GPU defaults.
func DefaultConfig() Config {
	return Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9, BlockSize: 16}
}

// DefaultBatching is vLLM's default --max-num-seqs and
// --max-num-batched-tokens for `vllm serve` on g: 1024 and 8192 on GPUs
// with at least 70 GiB whose device name does not contain "a100" (H100,
// H200), else 256 and 2048 (vllm/engine/arg_utils.py, _set_default_args).
func DefaultBatching(g GPU) (maxNumSeqs, maxNumBatchedTokens int) {
	if g.MemoryGiB >= 70 && !strings.Contains(strings.ToLower(g.DeviceName), "a100") {
		return 1024, 8192
	}
	return 256, 2048
}

// ErrDoesNotFit is wrapped by New's error when the weights and the
// activation reserve leave no room for a KV cache that holds one request.
var ErrDoesNotFit = errors.New("model does not fit the GPU")

// Perf is the performance model for one GPU, model and config. It is
// immutable and safe for concurrent use.
type Perf struct {
	gpu   GPU
	model Model
	cfg   Config

	kvBlocks int     // whole KV blocks that fit
	kvBytes  float64 // bytes available to the KV cache before rounding
	eff      Efficiency
	link     Link       // LinkOf(gpu), looked up once: every step's all-reduce reads it
	arch     archRecord // the GPU's architecture, looked up once: every step's GEMM rate reads it
	loop     stepLoop   // how the release's step loop meets the GPU (version.go)
	// mxfp4Latency is MXFP4MoELayerLatency, a field so that
	// fitMXFP4MoELatency (fit_test.go) can try other values.
	mxfp4Latency time.Duration
}

const gib = 1 << 30

// New builds the model, refusing a bad config and a model that does not
// fit the GPU. Errors name the value, the GPU and the model.
func New(gpu GPU, model Model, cfg Config) (*Perf, error) {
	cfg = withDefaults(cfg, model, gpu)
	if err := validate(gpu, model, cfg); err != nil {
		return nil, err
	}
	loop, err := stepLoopOf(cfg.VLLMVersion)
	if err != nil {
		return nil, err
	}
	p := &Perf{gpu: gpu, model: model, cfg: cfg, eff: EfficiencyFor(gpu), link: LinkOf(gpu), arch: archOfGPU(gpu), loop: loop, mxfp4Latency: MXFP4MoELayerLatency}
	if !p.sizeKV() {
		need, budget := p.need(), p.budget()
		return nil, fmt.Errorf("perf: %w: %s: %s on %s needs %.2f GiB per GPU (%.2f GiB weights + %.2f GiB activation and runtime reserve) "+
			"but --gpu-memory-utilization %.2f of %.2f GiB gives %.2f GiB; %s",
			ErrDoesNotFit, p.vllmNoMemoryError(), model.Name, p.node(), need/gib, p.weightBytesPerGPU()/gib, p.reserveBytes()/gib,
			cfg.GPUMemoryUtilization, gpu.MemoryGiB, budget/gib, p.fitHint())
	}
	if p.KVCacheTokens() < cfg.MaxModelLen {
		return nil, fmt.Errorf("perf: %w: --max-model-len %d: %s (%s on %s: %d tokens of KV cache); %s",
			ErrDoesNotFit, cfg.MaxModelLen, p.vllmMaxLenError(), model.Name, p.node(), p.KVCacheTokens(), p.fitHint())
	}
	return p, nil
}

// sizeKV gives the KV cache what the memory budget leaves after the weights
// and the reserve; false when nothing is left.
func (p *Perf) sizeKV() bool {
	need, budget := p.need(), p.budget()
	if need >= budget {
		return false
	}
	p.kvBytes = budget - need
	// vLLM: num_gpu_blocks = available // (block_size * bytes per token, all
	// layers), on each rank, for the KV heads that rank holds.
	p.kvBlocks = int(p.kvBytes / float64(p.cfg.BlockSize*p.KVBytesPerTokenPerGPU()))
	return true
}

func withDefaults(cfg Config, m Model, g GPU) Config {
	seqs, tokens := DefaultBatching(g)
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = m.MaxContext
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = DefaultConfig().BlockSize
	}
	if cfg.MaxNumSeqs == 0 {
		cfg.MaxNumSeqs = seqs
	}
	if cfg.MaxNumBatchedTokens == 0 {
		cfg.MaxNumBatchedTokens = max(tokens, cfg.MaxNumSeqs)
	}
	if cfg.TensorParallelSize == 0 {
		cfg.TensorParallelSize = 1
	}
	if cfg.PipelineParallelSize == 0 {
		cfg.PipelineParallelSize = 1
	}
	return cfg
}

// budget is what --gpu-memory-utilization lets vLLM use, in bytes.
func (p *Perf) budget() float64 { return p.gpu.MemoryGiB * gib * p.cfg.GPUMemoryUtilization }

// need is the memory taken before the KV cache: weights and reserve.
func (p *Perf) need() float64 { return p.weightBytesPerGPU() + p.reserveBytes() }

func validate(g GPU, m Model, cfg Config) error {
	if err := validateParallel(m, cfg); err != nil {
		return err
	}
	switch {
	case !g.positive():
		return fmt.Errorf("perf: GPU profile %q has a non-positive spec: %+v", g.Name, g)
	case !m.positive():
		return fmt.Errorf("perf: model profile %q has a non-positive field: %+v", m.Name, m)
	}
	return validateConfig(m, cfg)
}

// positive reports whether every figure of the GPU's spec is > 0.
func (g GPU) positive() bool {
	return g.MemoryGiB > 0 && g.BandwidthGBs > 0 && g.TFLOPs > 0 && g.LoadGBs > 0
}

// positive reports whether every size of the model is > 0.
func (m Model) positive() bool {
	return m.ParamsB > 0 && m.BytesPerWeight > 0 && m.Layers > 0 && m.KVHeads > 0 && m.HeadDim > 0 &&
		m.Hidden > 0 && m.Intermediate > 0 && m.Heads > 0 && m.Vocab > 0 && m.MaxContext > 0
}

// validateConfig checks the configuration (defaults filled in) against m.
func validateConfig(m Model, cfg Config) error {
	switch {
	case math.IsNaN(cfg.GPUMemoryUtilization) || cfg.GPUMemoryUtilization <= 0 || cfg.GPUMemoryUtilization > 1:
		return fmt.Errorf("perf: --gpu-memory-utilization %g: expected a fraction in (0, 1]", cfg.GPUMemoryUtilization)
	case cfg.MaxModelLen < 0:
		return fmt.Errorf("perf: --max-model-len %d: expected a positive number of tokens", cfg.MaxModelLen)
	case cfg.MaxModelLen > m.MaxContext:
		return fmt.Errorf("perf: --max-model-len %d is larger than %s's max_position_embeddings %d",
			cfg.MaxModelLen, m.Name, m.MaxContext)
	case cfg.BlockSize < 1:
		return fmt.Errorf("perf: block size %d: expected a positive number of tokens", cfg.BlockSize)
	case cfg.MaxNumSeqs < 1:
		return fmt.Errorf("perf: --max-num-seqs %d: expected at least 1", cfg.MaxNumSeqs)
	case cfg.MaxNumBatchedTokens < cfg.MaxNumSeqs:
		return fmt.Errorf("perf: --max-num-batched-tokens %d: expected at least --max-num-seqs (%d)",
			cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs)
	}
	return nil
}

// GPU returns the GPU profile.
func (p *Perf) GPU() GPU { return p.gpu }

// Model returns the model profile.
func (p *Perf) Model() Model { return p.model }

// Config returns the configuration with defaults filled in.
func (p *Perf) Config() Config { return p.cfg }

// BlockSize is the KV block size in tokens.
func (p *Perf) BlockSize() int { return p.cfg.BlockSize }

// NumGPUBlocks is the number of KV cache blocks (vLLM's num_gpu_blocks).
func (p *Perf) NumGPUBlocks() int { return p.kvBlocks }

// KVCacheTokens is the KV cache capacity in tokens, as vLLM logs it
// ("GPU KV cache size: N tokens"): NumGPUBlocks * BlockSize.
func (p *Perf) KVCacheTokens() int { return p.kvBlocks * p.cfg.BlockSize }

// KVCacheGiB is the memory left for the KV cache ("Available KV cache
// memory: X GiB").
func (p *Perf) KVCacheGiB() float64 { return p.kvBytes / gib }

// WeightsGiB is the memory the weights take on each GPU ("Model loading
// took X GiB", which every tensor-parallel rank logs for its own shard).
func (p *Perf) WeightsGiB() float64 { return p.weightBytesPerGPU() / gib }

// MaxConcurrency is how many requests of tokensPerRequest tokens the KV
// cache holds at once ("Maximum concurrency for N tokens per request: Xx"),
// counting whole blocks per request as vLLM does.
func (p *Perf) MaxConcurrency(tokensPerRequest int) float64 {
	if tokensPerRequest <= 0 {
		return 0
	}
	bs := p.cfg.BlockSize
	blocks := (tokensPerRequest + bs - 1) / bs
	return float64(p.kvBlocks) / float64(blocks)
}

// KVBlocksFor is the number of KV blocks a sequence of n tokens holds.
func (p *Perf) KVBlocksFor(n int) int {
	bs := p.cfg.BlockSize
	return (n + bs - 1) / bs
}
