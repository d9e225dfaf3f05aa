package perf

import (
	"math"
	"time"
)

// gpt-oss (openai/gpt-oss-20b) differs from the other MoE profiles in
// four ways the model takes in, each zero for every other profile:
//
//   - Its experts are MXFP4 (quantization_config quant_method "mxfp4":
//     4-bit values with one 8-bit scale per 32, 4.25 bits a weight), while
//     attention, router, embeddings and lm_head stay bf16
//     (modules_to_not_convert): ExpertBytesPerWeight. On Hopper and Ampere
//     vLLM multiplies them with bf16 activations (weights dequantized in
//     the kernel), so their FLOPs run at the bf16 rate, times
//     MXFP4MoEGEMMRate.
//   - Every attention projection has a bias (attention_bias, q/k/v and o),
//     each head a learned sink logit, and the router and each expert's
//     projections biases: parameters only (AttnOutBias, AttentionSinks,
//     MoEBias), which TestArchitecture needs to recompute the published
//     20,914,757,184.
//   - Half its layers (layer_types: sliding_attention and full_attention
//     alternate) attend over the last SlidingWindow = 128 tokens only. The
//     KV cache's capacity counts the full-attention layers' KV per token;
//     a sliding layer holds at most 128 tokens a sequence, which is left
//     out of the capacity (vLLM's hybrid KV cache manager gives those
//     layers their own blocks; the engine does not model that split, so
//     its token capacity is an upper bound of what vLLM logs). A step
//     reads each sequence's window on the sliding layers (slidingKVBytes)
//     and its attention pairs there are capped by the window
//     (slidingAttentionFLOPs).
//   - The attention sinks add one logit per head to each softmax: no FLOP
//     or byte the model counts.

// MXFP4MoEGEMMRate is the share of the bf16 GEMM rate that vLLM's MXFP4
// expert GEMMs reach in a prefill on Hopper (the Triton matmul with
// in-kernel dequantization of the 4-bit weights, 32 experts of 2,880 x
// 5,760 and 2,880 x 2,880 each taking a few hundred tokens of a chunk).
// Fitted, not cited: the value (in steps of 0.02) that puts gpustack's
// gpt-oss-20b run on one H100 with 4,000-token prompts (data/figures/gpustack-performance-lab.csv,
// fits MXFP4MoEGEMMRate) within the same error on both its median TTFT
// (-5.0%) and median TPOT (+4.4%) beside the attention, the bf16 GEMMs
// and the step overheads (0.32: +0.2% and +10.1%; 0.36: -9.6% and -0.6%);
// the 2,000- and 32,000-token runs are held out against it. 0.34 of the
// H100's fitted MFU is ~19% of its bf16 peak.
const MXFP4MoEGEMMRate = 0.34

// expertBytesPerWeight is the bytes of one expert weight.
func (m Model) expertBytesPerWeight() float64 {
	if m.ExpertBytesPerWeight > 0 {
		return m.ExpertBytesPerWeight
	}
	return m.BytesPerWeight
}

// linearBytes is the linear layers' weights in memory: all at
// BytesPerWeight, or the experts apart at ExpertBytesPerWeight.
func (m Model) linearBytes() float64 {
	if m.ExpertBytesPerWeight == 0 {
		return m.LinearParams() * m.BytesPerWeight
	}
	experts := float64(m.Layers*m.Experts) * m.expertParams()
	return (m.LinearParams()-experts)*m.BytesPerWeight + experts*m.ExpertBytesPerWeight
}

// marlinExpertPadding is how much larger vLLM holds MXFP4 experts on a GPU
// before Hopper. vLLM's Triton MXFP4 MoE kernels need compute capability
// 9.0 to 10.x, so an A100, A10G, L4 or RTX 3060 runs the Marlin backend,
// whose kernel wants each GEMM's n a multiple of 256 and k of 128: its
// create_weights (vllm/model_executor/layers/quantization/mxfp4.py, the
// MARLIN branch) rounds each rank's expert intermediate size up to 128 and
// the hidden size up to 256 before loading. For gpt-oss-20b (2,880 both)
// that is 2,944 x 3,072 for 2,880 x 2,880, 9.0% more expert bytes: vLLM
// 0.19 logs 13.72 GiB of weights on an A100 (data/figures/vllm-startup-logs.csv) where
// the checkpoint's bytes are 12.82. Hopper's Triton path rounds the
// intermediate size to 64 only, which 2,880 already is. The padding is
// memory; the model's per-step weight reads stay the checkpoint's (no
// timed gpt-oss figure on a pre-Hopper GPU to hold them against).
func (p *Perf) marlinExpertPadding() float64 {
	m := p.model
	if m.Quantization != "mxfp4" || m.Experts == 0 || p.arch.MXFP4MoE == "triton" {
		return 1
	}
	inter := float64(m.MoEIntermediate) / float64(p.cfg.TensorParallelSize)
	roundUp := func(x, to float64) float64 { return math.Ceil(x/to) * to }
	return roundUp(inter, 128) / inter * roundUp(float64(m.Hidden), 256) / float64(m.Hidden)
}

// expertBytes is the experts' weights in the checkpoint, all layers.
func (m Model) expertBytes() float64 {
	return float64(m.Layers*m.Experts) * m.expertParams() * m.expertBytesPerWeight()
}

// extraAttnParams is one layer's o_proj bias and sink logits.
func (m Model) extraAttnParams() float64 {
	var n float64
	if m.AttnOutBias {
		n += float64(m.Hidden)
	}
	if m.AttentionSinks {
		n += float64(m.Heads)
	}
	return n
}

// moeBiasParams is one layer's router bias and expert biases (gate and up,
// 2 x MoEIntermediate, and down, Hidden, per expert).
func (m Model) moeBiasParams() float64 {
	if !m.MoEBias {
		return 0
	}
	return float64(m.Experts) * float64(1+2*m.MoEIntermediate+m.Hidden)
}

// fullAttentionLayers is how many of layers consecutive layers attend over
// the whole context: all, less the sliding-window share.
func (m Model) fullAttentionLayers(layers int) int {
	if m.SlidingLayers == 0 {
		return layers
	}
	return layers - layers*m.SlidingLayers/m.Layers
}

// slidingKVBytes is what a step reads of the sliding-window layers' KV on
// one rank: each sequence's window (or less, for a shorter context).
func (p *Perf) slidingKVBytes(s Step) float64 {
	m := p.model
	if m.SlidingLayers == 0 {
		return 0
	}
	seqs := s.DecodeSeqs + s.PrefillSeqs
	window := min(float64(m.SlidingWindow)*float64(seqs), float64(s.ContextTokens))
	return window * float64(2*m.SlidingLayers*p.KVHeadsPerGPU()*m.HeadDim*kvBytes)
}

// slidingAttentionFLOPs is attentionFLOPs for a model with sliding-window
// layers: the full layers over all pairs, the sliding ones over at most
// SlidingWindow keys per query.
func (p *Perf) slidingAttentionFLOPs(s Step, pairs float64) float64 {
	m := p.model
	queries := float64(s.PrefillTokens + s.DecodeSeqs + s.SpecTokens)
	sliding := float64(m.SlidingLayers)
	full := float64(m.Layers) - sliding
	return 4 * float64(m.Heads*m.HeadDim) * (full*pairs + sliding*min(pairs, queries*float64(m.SlidingWindow)))
}

// gemmSeconds is the compute time of a step's linear FLOPs on one rank at
// rate: all at the rate, or for MXFP4 experts theirs at MXFP4MoEGEMMRate
// of it.
func (p *Perf) gemmSeconds(linFLOPs float64, tokens int, rate float64) float64 {
	m := p.model
	if m.Quantization != "mxfp4" {
		return linFLOPs / rate
	}
	experts := 2 * float64(tokens) * float64(m.Layers*m.ExpertsPerToken) * m.expertParams() / float64(p.cfg.TensorParallelSize)
	return (linFLOPs-experts)/rate + experts/(rate*MXFP4MoEGEMMRate)
}

// MXFP4MoELayerLatency is what each layer's MoE adds to a memory-bound
// step of an MXFP4 model on Hopper, beside reading its routed experts: the
// fixed latency of the kernels vLLM's Triton MXFP4 path runs per layer
// whatever the step's few tokens. That path (the OAI triton_kernels
// backend vLLM picks on compute capability 9.x;
// vllm/model_executor/layers/fused_moe/gpt_oss_triton_kernels_moe.py,
// triton_kernel_moe_forward) runs triton_kernels' routing (top-k, then
// the per-expert histogram and gather/scatter indices, several small
// kernels) and two matmul_ogs launches (gate/up with the fused SwiGLU,
// down with the scatter and the router weights), each padding an expert's
// one to eight rows to a 16-row tile and dequantizing its 4-bit weights
// in the kernel. At one to eight sequences these are latency-bound, not
// bandwidth-bound: sariekr/gpu_conc's gpt-oss-20b run on an H200 takes
// 4.53, 5.41 and 6.17 ms a token at 1, 4 and 8 in flight, where the model
// without this gives 2.31, 3.19 and 3.98: the model's growth with the
// batch matches vLLM's (+0.88 and +0.79 ms against +0.88 and +0.76), the
// miss is a fixed ~2.2 ms a step; the same script on a B200 (1.7x the
// bandwidth) is as slow at one in flight (4.55 ms), and on an H100 PCIe
// (H100/benchmark_concurrency_1.json @dac6dc55: 6.71 ms; no profile, but
// the model's costs at its 2.0 TB/s and the H100's efficiencies come to
// ~3.7 ms) the miss is ~3.0 ms: larger on lower clocks and fewer SMs, as
// a latency-bound kernel's is. The rows alone would also fit a per-step
// host cost of that vLLM (~0.10.1, August 2025, no async scheduling),
// except for the H100 PCIe's larger miss; the kernels are where the
// Hopper path differs from the dense models the step's other costs are
// fitted on. It rides in the GEMM phase's memory-bound branch, so a
// compute-bound prefill hides it as a large kernel hides its latency.
// Fitted (fitMXFP4MoELatency, TestFidelity's "FIT mxfp4-moe-latency"
// line) to the batch-1 row alone, in 1 us steps; its 4 and 8 in flight
// are held out. It is the default path's of that release: SemiAnalysis'
// InferenceX runs gpt-oss on H100 and H200 with VLLM_MXFP4_USE_MARLIN=1
// from vLLM 0.12 on (its PR 327), and later releases reworked the MXFP4
// backends; no low-concurrency row of a later release on a profiled GPU
// was found to model a version boundary by. GPUs before Hopper run the
// Marlin backend (marlinExpertPadding): top-k, moe_align_block_size and
// two Marlin MoE GEMMs a layer, also a chain of small kernels at a few
// rows; no timed gpt-oss figure there says how long, so they pay the same
// rather than none, which would have an A100 decode a gpt-oss token
// faster than an H100.
const MXFP4MoELayerLatency = 92 * time.Microsecond

// mxfp4MoELatencySeconds is MXFP4MoELayerLatency over every layer, for an
// MXFP4 MoE model; 0 otherwise.
func (p *Perf) mxfp4MoELatencySeconds() float64 {
	m := p.model
	if m.Quantization != "mxfp4" || !m.IsMoE() {
		return 0
	}
	return float64(m.Layers) * p.mxfp4Latency.Seconds()
}
