package perf

import (
	"fmt"
	"strings"
	"time"
)

// Tensor parallelism, as vLLM splits a model over --tensor-parallel-size
// N GPUs of one node (Megatron-style): every linear layer's weights are cut
// in N (column-parallel q/k/v, gate/up; row-parallel o, down; the
// vocabulary-parallel embedding and lm_head; a MoE model's experts each cut
// the same way), the query heads are split N ways, and the KV heads too
// when there are at least N of them; with fewer KV heads than GPUs each
// rank holds one KV head, replicated N / KVHeads times (vLLM's
// QKVParallelLinear), so KV bytes per token per GPU stop shrinking past
// TP = KVHeads. Each rank sizes its own KV cache from its own memory, and
// the engine's capacity is one rank's tokens (they all hold the same
// tokens, each for its heads). Every layer ends its attention and its MLP
// with an all-reduce of the step's hidden states (tokens x hidden x 2
// bytes) over the N GPUs: allReduceTime.

// Link is the GPU-to-GPU interconnect of a node of one GPU profile, as an
// all-reduce sees it. vLLM reduces a step's hidden states one of two ways
// (allReduceTime): a step small enough for a CUDA graph uses its custom
// all-reduce, Latency plus the bytes at BusGBs; a larger step runs eagerly
// and hands NCCL messages past the custom all-reduce's limit, which pay
// NCCL's mid-size cost (EagerLatency, EagerBusGBs) and wait for the slowest
// rank (RankSkew).
type Link struct {
	Name string
	// BusGBs is nccl-tests' all_reduce_perf bus bandwidth (busbw) at large
	// messages: an all-reduce of S bytes over N GPUs moves 2(N-1)/N x S per
	// GPU, so it takes 2(N-1)/N x S / BusGBs.
	BusGBs float64
	// Latency is the fixed cost of one small all-reduce inside a CUDA
	// graph, which decode steps are made of (vLLM's custom all-reduce on
	// NVLink, NCCL on PCIe).
	Latency time.Duration
	// EagerLatency and EagerBusGBs are NCCL's all-reduce at the 8-64 MB a
	// prefill step reduces: a fixed cost plus 2(N-1)/N x S at this bus
	// bandwidth, below the large-message BusGBs.
	EagerLatency time.Duration
	EagerBusGBs  float64
}

// RankSkew is what each eager all-reduce waits, per rank beyond the first,
// for the slowest rank to arrive. Outside a CUDA graph every rank's process
// launches its own kernels, so the ranks reach each all-reduce apart and
// all wait for the last; nccl-tests, which runs all-reduces back to back
// with nothing between, never sees it. Fitted, not cited: it is what
// LambdaLabs' Llama-3-70B TP=8 median TTFT (data/figures/lambdalabs-vllm-benchmark.csv, Config
// fits RankSkew) leaves beside the FLOPs, NCCL's time and the step
// overheads; the TP=2 and TP=4 runs, the FP8 runs and Llama-3-8B at TP=2,
// 4 and 8 are held out against it. Linear in the ranks beyond the first
// because those runs, each priced at NCCL's own times, leave per
// all-reduce roughly 25-60 us at TP=2, 45-85 at TP=4 and 170-240 at TP=8.
const RankSkew = 25 * time.Microsecond

// Eager all-reduces: a step of more tokens than vLLM's largest CUDA graph
// (cudaGraphMaxTokens) runs eagerly, and a message past customAllReduceMax
// (vLLM's custom all-reduce buffer, 8 MiB) goes to NCCL.
const (
	cudaGraphMaxTokens = 512
	customAllReduceMax = 8 << 20
)

// LinkOf is the interconnect of a node of g: its record in data/links.json,
// which names each figure's source (nccl-tests bus bandwidths, NCCL's small
// and mid-size all-reduce costs, the fitted NVLink latency).
func LinkOf(g GPU) Link { return mustFacts().links[g.Interconnect] }

// FP8GEMMSpeedup is how much faster than bf16 vLLM's fp8 GEMM path runs a
// prefill on an architecture with fp8 tensor cores (Hopper, Ada:
// data/archs.json fp8_tensor_cores), whose peak is twice the bf16 one
// (H100 SXM: 1,979 vs 989 dense TFLOP/s; L4: 242 vs 121, NVIDIA's data
// sheets); elsewhere vLLM runs fp8 checkpoints as weight-only fp8
// (Marlin), at the bf16 rate. Far from the peaks' 2x: each linear layer first quantizes its
// input to fp8 per token (a kernel that reads and writes the activations)
// and the scaled GEMM's epilogue applies the per-token and per-channel
// scales. Fitted, not cited: it is what LambdaLabs' 70B-FP8 TTFT on one
// H100 (data/figures/lambdalabs-vllm-benchmark.csv, Config "fp8-rate-fit"; no all-reduce there)
// leaves beside the step overheads; the same checkpoint at TP=4 and 8 is
// held out against it.
const FP8GEMMSpeedup = 1.33

// flopRate is the sustained FLOP/s of one GPU for this model's GEMMs.
func (p *Perf) flopRate() float64 {
	r := p.gpu.TFLOPs * 1e12 * p.eff.MFU
	if p.model.Quantization == "fp8" && p.arch.FP8TensorCores {
		r *= FP8GEMMSpeedup
	}
	return r
}

// Pipeline parallelism (--pipeline-parallel-size P): the layers are cut
// into P stages of consecutive layers, each stage on TensorParallelSize
// GPUs, so a node of TP x P GPUs. Each GPU holds its stage's layers'
// weights and KV cache (the largest stage, ceil(Layers / P) layers, sets
// the capacity; the embedding and lm_head are spread as a layer's share,
// an approximation). A step runs the stages one after another, so one
// batch's step time is the whole model's at TP (each stage streams 1/P
// of the bytes), plus P - 1 hand-offs of the hidden states between stages
// at the link's latency and bandwidth. vLLM overlaps micro-batches across
// stages for throughput; the model does not: it gives the latency of one
// batch, and the capacity.

// validateParallel refuses a tensor-parallel size vLLM refuses, with
// vLLM's own message where it has one.
func validateParallel(m Model, cfg Config) error {
	if pp := cfg.PipelineParallelSize; pp < 0 || pp > m.Layers {
		return fmt.Errorf("perf: --pipeline-parallel-size %d: expected 1 to the model's %d layers", pp, m.Layers)
	}
	tp := cfg.TensorParallelSize
	switch {
	case tp < 0:
		return fmt.Errorf("perf: --tensor-parallel-size %d: expected a positive number of GPUs", tp)
	case tp <= 1:
		return nil
	case m.Heads%tp != 0:
		// vllm/config: ModelConfig.verify_with_parallel_config.
		return fmt.Errorf("perf: --tensor-parallel-size %d: Total number of attention heads (%d) must be divisible by tensor parallel size (%d).",
			tp, m.Heads, tp)
	case m.KVHeads%tp != 0 && tp%m.KVHeads != 0:
		// QKVParallelLinear replicates KV heads only by a whole factor.
		return fmt.Errorf("perf: --tensor-parallel-size %d: %s's %d KV heads can be neither split nor replicated evenly over %d GPUs",
			tp, m.Name, m.KVHeads, tp)
	}
	return nil
}

// TensorParallelSize is the number of GPUs the model is split over.
func (p *Perf) TensorParallelSize() int { return p.cfg.TensorParallelSize }

// KVHeadsPerGPU is the KV heads each rank holds: KVHeads / TP, or one
// (replicated) when there are fewer KV heads than GPUs.
func (p *Perf) KVHeadsPerGPU() int { return max(1, p.model.KVHeads/p.cfg.TensorParallelSize) }

// KVBytesPerTokenPerGPU is one token's KV cache on one rank, all the
// layers of its pipeline stage.
func (p *Perf) KVBytesPerTokenPerGPU() int { return p.kvBytesPerTokenOver(p.stageLayers()) }

// kvBytesPerTokenAllStages is one token's KV on one tensor-parallel rank
// over all layers: what a step reads going through every pipeline stage
// in turn (KVBytesPerTokenPerGPU without stages).
func (p *Perf) kvBytesPerTokenAllStages() int { return p.kvBytesPerTokenOver(p.model.Layers) }

// kvBytesPerTokenOver is one token's K and V on one tensor-parallel rank
// over layers layers (their full-attention share; gptoss.go).
func (p *Perf) kvBytesPerTokenOver(layers int) int {
	return 2 * p.model.fullAttentionLayers(layers) * p.KVHeadsPerGPU() * p.model.HeadDim * kvBytes
}

// stageLayers is the layers of the largest pipeline stage (all of them
// without pipeline parallelism).
func (p *Perf) stageLayers() int {
	pp := p.cfg.PipelineParallelSize
	return (p.model.Layers + pp - 1) / pp
}

// weightBytesPerGPU is one rank's shard of the weights as vLLM holds them
// (MXFP4 experts padded on GPUs before Hopper, marlinExpertPadding): its
// stage's share split TP ways.
func (p *Perf) weightBytesPerGPU() float64 {
	w := (p.model.WeightBytes() + p.model.expertBytes()*(p.marlinExpertPadding()-1)) / float64(p.cfg.TensorParallelSize)
	if p.cfg.PipelineParallelSize > 1 {
		w = w * float64(p.stageLayers()) / float64(p.model.Layers)
	}
	return w
}

// stageHandoffTime is the P - 1 sends of a step's hidden states (tokens x
// hidden x 2 bytes) from one pipeline stage to the next; 0 without stages.
func (p *Perf) stageHandoffTime(tokens int) time.Duration {
	pp := p.cfg.PipelineParallelSize
	if pp <= 1 || tokens <= 0 {
		return 0
	}
	return time.Duration(pp-1) * p.linkTime(p.hiddenBytes(tokens))
}

// allReduceTime is a step's tensor-parallel communication: two all-reduces
// per layer of tokens x hidden bf16 values, each moving 2(n-1)/n of them
// per GPU, in a CUDA graph or eagerly through NCCL (see Link). Zero on one
// GPU.
func (p *Perf) allReduceTime(tokens int) time.Duration {
	n := p.cfg.TensorParallelSize
	if n <= 1 || tokens <= 0 {
		return 0
	}
	l, bytes := p.link, p.hiddenBytes(tokens)
	bus := 2 * float64(n-1) / float64(n) * bytes
	one := p.linkTime(bus) // in a CUDA graph: the custom all-reduce
	if tokens > cudaGraphMaxTokens || bytes > customAllReduceMax {
		one = l.EagerLatency + seconds(bus/(l.EagerBusGBs*1e9)) + time.Duration(n-1)*RankSkew
	}
	return time.Duration(2*p.model.Layers) * one
}

// hiddenBytes is tokens' hidden states in bf16: what crosses the link.
func (p *Perf) hiddenBytes(tokens int) float64 {
	return float64(tokens) * float64(p.model.Hidden) * 2
}

// linkTime is one send of bytes over the GPUs' link: its latency plus the
// bytes at its bus bandwidth.
func (p *Perf) linkTime(bytes float64) time.Duration {
	return p.link.Latency + seconds(bytes/(p.link.BusGBs*1e9))
}

// node names the hardware: "h100-80gb" or "8x h100-80gb (--tensor-parallel-size 8)".
func (p *Perf) node() string {
	tp, pp := p.cfg.TensorParallelSize, p.cfg.PipelineParallelSize
	switch {
	case pp > 1:
		return fmt.Sprintf("%dx %s (--tensor-parallel-size %d --pipeline-parallel-size %d)", tp*pp, p.gpu.Name, tp, pp)
	case tp > 1:
		return fmt.Sprintf("%dx %s (--tensor-parallel-size %d)", tp, p.gpu.Name, tp)
	}
	return p.gpu.Name
}

// vllmNoMemoryError is what vLLM says when the weights and activations
// leave no KV cache: a CUDA out-of-memory while loading when one rank's
// weights exceed the whole GPU, else the KV cache check's ValueError
// (vllm/v1/core/kv_cache_utils.py).
func (p *Perf) vllmNoMemoryError() string {
	if w := p.weightBytesPerGPU(); w > p.gpu.MemoryGiB*gib {
		return fmt.Sprintf("torch.OutOfMemoryError: CUDA out of memory while loading the weights (%.2f GiB per GPU). "+
			"GPU 0 has a total capacity of %.2f GiB", w/gib, p.gpu.MemoryGiB)
	}
	return "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
}

// vllmMaxLenError is vLLM V1's refusal when one request of --max-model-len
// does not fit the KV cache (vllm/v1/core/kv_cache_utils.py,
// check_enough_kv_cache_memory), with this rank's figures.
func (p *Perf) vllmMaxLenError() string {
	need := float64(p.cfg.MaxModelLen) * float64(p.KVBytesPerTokenPerGPU())
	return fmt.Sprintf("ValueError: To serve at least one request with the model's max seq len (%d), (%.2f GiB KV cache is needed, "+
		"which is larger than the available KV cache memory (%.2f GiB). Based on the available memory, the estimated maximum "+
		"model length is %d. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
		p.cfg.MaxModelLen, need/gib, p.kvBytes/gib, p.KVCacheTokens())
}

// fitHint says what would make the model fit: the tensor-parallel size on
// one node that would, if one does.
func (p *Perf) fitHint() string {
	var hints []string
	if tp := p.fittingTP(); tp > 0 {
		hints = append(hints, fmt.Sprintf("more GPUs (--tensor-parallel-size %d)", tp))
	}
	hints = append(hints, "a larger GPU", "a quantized model", "a lower --max-model-len")
	return "use " + strings.Join(hints, ", or ")
}

// nodeGPUs is the most GPUs of one node fitHint suggests (an 8-GPU HGX
// board).
const nodeGPUs = 8

// fittingTP is the smallest tensor-parallel size above the current one, up
// to one node, at which the weights, the reserve and one --max-model-len
// request fit each GPU; 0 when none does.
func (p *Perf) fittingTP() int {
	for tp := 2 * p.cfg.TensorParallelSize; tp <= nodeGPUs; tp *= 2 {
		cfg := p.cfg
		cfg.TensorParallelSize = tp
		if validate(p.gpu, p.model, cfg) != nil {
			continue
		}
		q := *p
		q.cfg = cfg
		if q.sizeKV() && q.KVCacheTokens() >= cfg.MaxModelLen {
			return tp
		}
	}
	return 0
}
