package perf

import (
	"math"
	"time"
)

// The efficiency constants, shared by every GPU and model profile. The
// seed's real-hardware figures (rtx3060-12gb + qwen2.5-7b-instruct-awq)
// follow from the specs and these; no profile has its own knob:
//
//	decode: (3.39 GB AWQ linears + 1.09 GB bf16 lm_head; the embedding is
//	        gathered, not streamed) / (360 GB/s x 0.92) = 13.5 ms
//	        + 0.6 ms + 28 x 30 us = 15.0 ms/token (seed: ~15.0)
//	TTFT:   the seed's table as servebench sends it: 20 sequential
//	        requests of one 46-token prompt (bench.DefaultPrompt under
//	        Qwen2.5's chat template) with prefix caching on, as in the
//	        seed's vLLM V1. A repeat finds 32 tokens (two blocks) cached and
//	        prefills 14: too few to be compute-bound, so its step streams
//	        the weights (13.5 ms) + 1.44 ms step and layers + 1.6 ms
//	        prefilling sequence + 11.0 ms request = 27.6 ms. The streaming
//	        run's first request prefills all 46 tokens: 46 x 2 x 6.53e9
//	        FLOP / (25.5 TFLOP/s x 0.60) = 39.2 ms + the same 14.0 ms.
//	        Means: streaming (1 full + 19 repeats) 28.9 ms (seed: 28.4),
//	        non-streaming (20 repeats) 27.6 ms (seed: 28.1), each within 2%.
//	KV:     0.9 x 11.76 GiB - 5.19 GiB weights - 1.24 GiB reserve
//	        (memory.go) = 4.15 GiB / 56 KiB per token = 77,744 tokens
//	        (seed: 77,744)
//
// The split of decode time between bandwidth and fixed latency is pinned by
// a second fact: a 7-8B bf16 model decodes at 6-7 ms/token on an H100,
// where the bytes alone take ~4.6 ms. The TTFT's fixed part is pinned by
// two facts together. On the 3060 a short prompt's step costs about what
// reading the weights costs, so the seed's 28 ms leaves ~14 ms per request
// outside the GPU: the request overhead, the step's, and one prefilling
// sequence's. The public A100 and H100 figures in prefill.go (10 prompts,
// 1,369 tokens, one step) leave 24-30 ms beside their FLOPs at MFU 0.60:
// one request overhead (the ten arrive together and pay it in parallel)
// plus ten prefilling sequences. Solving both: ~11 ms per request and
// ~1.6 ms per prefilling sequence; the public figures then hold within 6%.
const (
	// BandwidthEfficiency is the fraction of peak memory bandwidth that
	// decode GEMVs sustain (well-tuned kernels reach ~90% of peak in
	// streaming reads on GDDR6 and HBM alike).
	BandwidthEfficiency = 0.92

	// MFU is the fraction of dense tensor throughput that prefill and
	// large-batch GEMMs sustain (0.5-0.7 is typical of vLLM prefill; it
	// makes an H100 prefill a 7-8B model at ~40k tokens/s). The seed's
	// 46-token first prefill on the 3060 and 1,369 tokens per step on an
	// A100 and an H100 (prefill.go) all agree with this one value. The
	// fitted per-architecture MFUs (data/archs.json) are flat over a step's
	// tokens too: the one source that seemed to show a step-size effect
	// shows it for one model, in one run that is slow throughout
	// (data/figures/nano-vllm-rtx3060.csv), and every curve tried broke
	// other cited rows (docs/engine-sources.md).
	MFU = 0.60

	// StepOverhead is the fixed cost of one scheduler step: scheduling,
	// input preparation, sampling and output processing that the GPU does
	// not hide. From vLLM 0.14.0 (async scheduling by default,
	// version.go) it overlaps the GPU's previous step and costs a step
	// only what it outlasts the GPU's work.
	StepOverhead = 600 * time.Microsecond

	// LayerOverhead is the per-layer latency floor of one forward pass:
	// ~10 kernels per layer at ~3 us of launch, ramp-up and tail each
	// (inside a CUDA graph), paid on top of the bytes and FLOPs.
	LayerOverhead = 30 * time.Microsecond

	// RequestOverheadConst is paid once per request between arrival and
	// scheduling, in parallel for simultaneous requests: what vLLM V1's
	// TTFT holds outside the engine core's steps. V1 stamps arrival in the
	// API server (frontend) process as it hands the request on, and the
	// first token when that process gets it back (vllm/v1/metrics/stats.py:
	// arrival_time and the iteration timestamp are frontend wall-clock
	// times), so TTFT includes the msgpack/ZMQ hand-off to the engine core
	// process and back, the core's busy loop picking it up, and output
	// processing: the CPU costs vLLM's V1 alpha post (blog.vllm.ai,
	// 2025-01-27) names as what dominates once a GPU step is short. Its size
	// is not measured part by part: it is what the seed's short-prompt TTFT
	// leaves on the 3060 beside the weight reads, the step's overheads and
	// PrefillSeqOverhead (see above), on the seed's desktop CPU.
	RequestOverheadConst = 11000 * time.Microsecond

	// PrefillSeqOverhead is paid in a step once per sequence with prompt
	// tokens in it: the engine core adding the request, preparing its
	// inputs and, at its last chunk, sampling its first token, one
	// sequence after another. So a burst of N requests admitted together
	// pays it N times in one step: the public figures for ten simultaneous
	// requests (prefill.go) pin RequestOverheadConst + 10 x this at ~27 ms;
	// the seed's TTFT pins RequestOverheadConst + this at 12.6 ms.
	PrefillSeqOverhead = 1600 * time.Microsecond

	// DraftCostFraction is what one forward pass of the draft model costs,
	// as a fraction of the target's plain decode step over the same batch,
	// for speculative decoding (Step.SpecTokens). An assumption, not a
	// measurement: an EAGLE head is one decoder layer plus the lm_head of a
	// 28-32-layer target, a 0.5-1B draft model about a tenth of a 7-8B
	// target's bytes; both come to ~0.1 of its memory-bound decode step.
	DraftCostFraction = 0.10
)

// DecodeGEMMShare is the share of its decode tokens' GEMM FLOP time, the
// first token's excepted, that a memory-bound step pays on top of
// streaming the weights: the GEMM phase takes max(FLOPs, bytes + this x
// the further decode tokens' FLOPs), at the architecture's fitted rate.
// vLLM's decode step grows with the batch by far more than its KV reads:
// per sequence and step ~270 us on an L4 (Qwen2.5-7B, whose GEMMs take
// 304 us at the L4's rate; data/figures/ree2raz-inference-bench.csv),
// 44-49 us on an A100 (7-8B, 66-71 us; the same repository's A100 40GB
// runs, Argonne's Meta-Llama-3-8B batches,
// data/figures/argonne-llm-inference-bench.csv, LambdaLabs' batch 10
// against 1), 21 us on an H100 (8B, 26 us; LambdaLabs): 0.6-0.9
// of the FLOPs' time, scaling with each GPU's tensor rate rather than its
// host, so GPU work: a GEMM of a few rows does not hide its tensor-core
// work under its weight reads. The first token's does: batch-1 figures
// (the seed's decode, the A100's and H100's fitted rows) are met by the
// bytes alone, so a batch-1 step is unchanged. Prefill tokens are not
// charged: a chunk large enough to matter is compute-bound, and the
// seed's 14-token repeat prefill is met by the bytes. Fitted
// (fitDecodeGEMMShare; TestFidelity's "FIT decode-gemm-share" line) to
// the largest short-context batch of each of the four sources: the A100
// 40GB at 64 in flight (Qwen2.5-7B on vLLM 0.20.1, 15.2 ms; Llama-3-8B's
// 128/128 batch, 3.289 s), the H100's 128/128 batch of 64 (1.688 s) and
// the L4 at 64 in flight (75.71 ms), each at its release (version.go:
// Argonne's V0 runs pay V0SeqOverhead per sequence beside it, which is
// fitted with this in place, and this with it); every other batch figure
// is held out against it. Every figure it was fitted to or judged on is
// bf16/fp16 (or fp8); the seed's AWQ model pays it too, untested:
// Marlin's int4 kernels claim close to their ideal 4x over fp16 up to
// 16-32 rows (github.com/IST-DASLab/marlin README), and 16 sequences on
// the RTX 3060 take 21.5 ms a step (15.9 without the share; both with the
// split-KV tiles). With it a decode batch reaches the plain compute-bound
// time only at ~2x the ridge batch: 256 sequences of 200 tokens of an 8B
// model on an H100 take 13.3 ms a step where the roofline alone gives
// 10.8.
const DecodeGEMMShare = 0.53

// RequestOverhead is the fixed per-request time between arrival and
// joining the waiting queue (see the package doc for how the engine
// applies it). It is the same for every profile.
func (p *Perf) RequestOverhead() time.Duration { return RequestOverheadConst }

// Step describes one scheduler step: the tokens prefilled this step (new
// prompt tokens, possibly a chunk), the sequences decoding one token, and the
// KV tokens those sequences attend over (read from memory).
//
// ContextTokens counts, for every sequence in the step, the tokens already
// in its KV cache before this step: a decoding sequence's prompt plus the
// tokens generated so far; a prefilling sequence's earlier chunks (0 for a
// first chunk). It is what the step reads from the KV cache. Counting the
// step's own new tokens too changes a step by far less than 1%.
//
// SpecTokens are speculative decoding's draft tokens verified this step,
// summed over the decoding sequences (each drafts up to K, fewer near its
// max_tokens). The model's assumption: verification is one target forward
// over each decoding sequence's last token plus its drafts (their linear
// FLOPs, logits and KV writes; the weights and the sequence's KV are read
// once for all of them), and drafting is one draft-model pass per draft
// position, each DraftCostFraction of a plain decode step of the batch.
type Step struct {
	PrefillTokens int
	PrefillSeqs   int
	DecodeSeqs    int
	ContextTokens int // total KV tokens read by all sequences in the step
	SpecTokens    int // draft tokens verified by the decoding sequences
	// ChunkPairs are the query-key pairs that prefilling sequences' new
	// tokens make with their cached context (earlier chunks, prefix-cache
	// hits) beyond the one pass ContextTokens counts: (new - 1) x cached,
	// summed over them. Every query of a later chunk attends to all of
	// the cached tokens, so a long prompt's attention grows with its
	// length squared however it is chunked.
	ChunkPairs int
}

// AddPrefill adds one sequence's prefill chunk of tokens new tokens after
// cached ones already in its KV cache: the one place ChunkPairs is
// counted, for the scheduler and for the figures' replays alike.
func (s *Step) AddPrefill(tokens, cached int) {
	s.PrefillTokens += tokens
	s.PrefillSeqs++
	s.ContextTokens += cached
	s.ChunkPairs += (tokens - 1) * cached
}

// Breakdown is one step's time split into its causes (before --speedup).
type Breakdown struct {
	Weights   time.Duration // GEMM phase: max(linear FLOPs, weight bytes + DecodeGEMMShare x further decode tokens' FLOPs + MXFP4 MoE kernels' fixed latency)
	Attention time.Duration // attention phase: max(attention FLOPs, KV bytes)
	Overhead  time.Duration // StepOverhead (not under async scheduling) + Layers x LayerOverhead + PrefillSeqs x PrefillSeqOverhead + DecodeSeqs x V0SeqOverhead (V0 only)
	Draft     time.Duration // speculative decoding's draft passes (0 without SpecTokens)
	AllReduce time.Duration // tensor parallel: two all-reduces per layer; pipeline stages' hand-offs (0 on one GPU; parallel.go)
	Total     time.Duration // Overhead + Weights + Attention + Draft + AllReduce, at least StepOverhead
	Compute   time.Duration // all FLOPs at MFU x TFLOPs (for explanation)
	Memory    time.Duration // all bytes at BandwidthEfficiency x bandwidth
	ReadBytes float64       // bytes moved in one GPU's memory (weights, KV reads and writes)
	FLOPs     float64       // one GPU's FLOPs
}

// ComputeBound reports whether the GEMM phase is limited by FLOPs rather
// than by streaming the weights (past the GPU's ridge point).
func (b Breakdown) ComputeBound() bool { return b.Compute > b.Memory }

// StepTime is how long one scheduler step takes on the modelled GPU
// (before --speedup). An empty step takes no time.
//
// Each layer runs its GEMMs, then attention, as separate kernels. The GEMMs
// stream the weights once however many tokens the step holds and do 2 FLOPs
// per weight per token; compute and traffic overlap, so they take the
// larger of the two: a prefill chunk is compute-bound (grows with tokens),
// a decode batch memory-bound, ~weights / bandwidth plus DecodeGEMMShare
// of its further tokens' FLOP time (so batching is cheap, not free). Attention reads every sequence's
// KV cache, so it grows with the batch's total context whatever the GEMMs
// do. Fixed per-step and per-layer overheads come on top. A mixed step
// (prefill chunk + decodes) pays for all its tokens in one step, which is
// why running streams stall while a newcomer is prefilled.
func (p *Perf) StepTime(s Step) time.Duration { return p.Breakdown(s).Total }

// Breakdown explains StepTime: its phases and overheads.
func (p *Perf) Breakdown(s Step) Breakdown {
	if s.DecodeSeqs == 0 {
		s.SpecTokens = 0 // drafts belong to decoding sequences
	}
	tokens := s.PrefillTokens + s.DecodeSeqs + s.SpecTokens
	if tokens <= 0 {
		return Breakdown{}
	}
	m := p.model
	prefillSeqs := s.PrefillSeqs
	if s.PrefillTokens > 0 {
		prefillSeqs = max(prefillSeqs, 1) // prompt tokens belong to some sequence
	}
	flopRate := p.flopRate()
	byteRate := p.gpu.BandwidthGBs * 1e9 * p.eff.Bandwidth
	// Each tensor-parallel rank holds 1/TP of every weight matrix and of
	// the query heads and does 1/TP of their FLOPs (parallel.go); the ranks
	// run in lockstep, so a step lasts as long as one rank's share.
	tp := float64(p.cfg.TensorParallelSize)
	// Logits are computed only for each sequence's last token, and for
	// every draft token being verified.
	logitRows := min(s.PrefillSeqs+s.DecodeSeqs+s.SpecTokens, tokens)
	linFLOPs := (2*m.ActiveLinearParams()*float64(tokens) + 2*float64(m.Vocab)*float64(m.Hidden)*float64(logitRows)) / tp
	kv := float64(p.kvBytesPerTokenAllStages())
	kvBytes := float64(s.ContextTokens+tokens)*kv + p.slidingKVBytes(s) // reads, plus this step's writes
	attFLOPs := p.attentionFLOPs(s) / tp
	weightBytes := m.readBytes(tokens) / tp
	b := Breakdown{
		Weights:   max(seconds(p.gemmSeconds(linFLOPs, tokens, flopRate)), seconds(weightBytes/byteRate+p.decodeGEMMSeconds(s, flopRate)+p.mxfp4MoELatencySeconds())),
		Attention: max(seconds(attFLOPs/flopRate), seconds(kvBytes/byteRate), seconds(p.splitKVDecodeSeconds(s)/tp)),
		Overhead:  StepOverhead + time.Duration(m.Layers)*LayerOverhead + time.Duration(prefillSeqs)*PrefillSeqOverhead + p.loop.seqOverhead(s.DecodeSeqs),
		AllReduce: p.allReduceTime(tokens) + p.stageHandoffTime(tokens),
		Compute:   seconds((linFLOPs + attFLOPs) / flopRate),
		Memory:    seconds((weightBytes + kvBytes) / byteRate),
		ReadBytes: weightBytes + kvBytes,
		FLOPs:     linFLOPs + attFLOPs,
	}
	if s.SpecTokens > 0 {
		passes := (s.SpecTokens + s.DecodeSeqs - 1) / s.DecodeSeqs // the longest draft
		plain := p.Breakdown(Step{DecodeSeqs: s.DecodeSeqs, ContextTokens: s.ContextTokens}).Total
		b.Draft = time.Duration(float64(passes) * DraftCostFraction * float64(plain))
	}
	b.Total = b.Overhead + b.Weights + b.Attention + b.Draft + b.AllReduce
	return p.loop.overlap(b)
}

// decodeGEMMSeconds is what a memory-bound step's decode tokens beyond
// the first (speculative drafts included) add to its weight reads:
// DecodeGEMMShare of their linear FLOPs' time, logits included, at the
// architecture's rate.
func (p *Perf) decodeGEMMSeconds(s Step, rate float64) float64 {
	extra := s.DecodeSeqs + s.SpecTokens - 1
	if extra <= 0 || p.eff.decodeGEMMShare <= 0 {
		return 0
	}
	m := p.model
	flops := 2 * (m.ActiveLinearParams() + float64(m.Vocab)*float64(m.Hidden)) * float64(extra) / float64(p.cfg.TensorParallelSize)
	return p.eff.decodeGEMMShare * p.gemmSeconds(flops, extra, rate)
}

// attentionFLOPs counts QK^T and PV (2 x 2 FLOPs per query-key pair per
// head dim per query head per layer). Pairs: each sequence's new tokens
// against its cached context (ContextTokens once per sequence, plus
// ChunkPairs for prefills' further queries) plus the causal triangle of
// the prefill tokens, assumed split evenly over PrefillSeqs; each draft
// token attends over an average sequence's context.
func (p *Perf) attentionFLOPs(s Step) float64 {
	m := p.model
	pairs := float64(s.ContextTokens) + float64(s.ChunkPairs) + float64(s.DecodeSeqs)
	if s.SpecTokens > 0 {
		pairs += float64(s.SpecTokens) * float64(s.ContextTokens) / float64(max(s.DecodeSeqs+s.PrefillSeqs, 1))
	}
	if s.PrefillTokens > 0 {
		seqs := float64(max(s.PrefillSeqs, 1))
		pairs += float64(s.PrefillTokens) * float64(s.PrefillTokens) / (2 * seqs)
	}
	if m.SlidingLayers > 0 {
		return p.slidingAttentionFLOPs(s, pairs)
	}
	return 4 * float64(m.Layers*m.Heads*m.HeadDim) * pairs
}

// SplitKVMMAShare is the share of a GPU's dense tensor peak (GPU.TFLOPs)
// that the matrix multiplies of FlashAttention-2's split-KV decode kernel
// reach. vLLM V1 runs FlashAttention 2 on compute capability 8.x (3 on
// Hopper: vllm/v1/attention/backends/fa_utils.py, get_flash_attn_version),
// one flash_attn_varlen_func call per layer over a paged cache. With
// one-token queries, vllm-project/flash-attention's mha_varlen_fwd swaps
// the query heads that share a KV head into the rows of one query block
// (seqlenq_ngroups_swapped) and runs the split-KV kernel, whose block is
// 64 rows (set_params_splitkv), so every KV head's keys and values meet 64
// query rows however few are real: QK^T and PV cost 64 FLOPs per byte of
// bf16 K and V, for any model with at most 64 query heads per KV head. A
// GeForce Ampere card multiplies bf16 with fp32 accumulation at half its
// fp16 rate, so on the RTX 3060 those tiles take 1.6x the time the KV
// reads take at the bandwidth the weights get; on the A100, A10G and L4
// they take 25-60% of it and hide under the reads (the attention phase is
// the larger of the two). A mixed step (a prefill chunk beside decodes)
// swaps no heads and is not modelled: no cited row has enough decodes in
// a mixed step to price it by (docs/engine-sources.md, what was tried).
//
// Fitted (fitSplitKVMMAShare; TestFidelity's "FIT split-kv-mma-share"
// line) to Qwen3-0.6B decoding two sequences of ~3,440 and ~4,890 tokens
// on the RTX 3060 (data/figures/nano-vllm-rtx3060.csv); held out against
// Qwen2.5-3B's 8 sequences of ~4,350 tokens and its one of ~3,000 in the
// same runs. It sits below the 3060's 0.78 GEMM MFU: a 4-warp tile that
// also runs the softmax of every padded row, at one or two blocks per SM.
const SplitKVMMAShare = 0.52

// splitKVShare is SplitKVMMAShare on an architecture whose vLLM decode
// runs FlashAttention 2 (data/archs.json), else 0: Hopper runs
// FlashAttention 3, whose decode tiles this does not model.
func splitKVShare(arch string) float64 {
	if mustFacts().archs[arch].FlashAttention == 2 {
		return SplitKVMMAShare
	}
	return 0
}

// splitKVDecodeSeconds is the tensor time of FlashAttention-2's split-KV
// tiles in a decode-only step (see SplitKVMMAShare): 64 query rows per
// KV head (more past 64 heads per KV head) against every sequence's
// context, at SplitKVMMAShare of the peak; 0 off FlashAttention 2, in a
// mixed or speculative step, and for sliding-window models (no swap).
func (p *Perf) splitKVDecodeSeconds(s Step) float64 {
	m := p.model
	share := p.eff.splitKVMMAShare
	if share <= 0 || s.PrefillTokens > 0 || s.SpecTokens > 0 || s.DecodeSeqs == 0 || m.SlidingLayers > 0 || m.KVHeads == 0 {
		return 0
	}
	rows := (m.Heads/m.KVHeads + 63) / 64 * 64
	flops := 4 * float64(m.Layers*m.KVHeads*rows*m.HeadDim) * float64(s.ContextTokens+s.DecodeSeqs)
	return flops / (p.gpu.TFLOPs * 1e12 * share)
}

func seconds(s float64) time.Duration {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}

// CalibrationPrompt is the user message of the seed table's requests as
// servebench sends them: its default prompt (bench.DefaultPrompt, which
// engine packages may not import; bench's TestDefaultPromptCalibrated holds
// the two equal). TestCalibration tokenizes it with the model's chat
// template to get the prompt the seed's TTFT is met for.
const CalibrationPrompt = "Write a short story about a lighthouse keeper who finds a message in a bottle."
