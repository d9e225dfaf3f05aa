package perf

import (
	"math"
	"time"
)

// Step describes one scheduler step: the tokens prefilled this step (new
// prompt tokens, possibly a chunk), the sequences decoding one token, and the
// KV tokens those sequences attend over (read from memory).
//
// ContextTokens counts, for every sequence in the step, the tokens already
// in its KV cache before this step: a decoding sequence's prompt plus the
// tokens generated so far; a prefilling sequence's earlier chunks (0 for a
// first chunk). It is what the step reads from the KV cache.
type Step struct {
	PrefillTokens int
	PrefillSeqs   int
	DecodeSeqs    int
	ContextTokens int // total KV tokens read by all sequences in the step
}

// Breakdown is one step's time split into its causes (before --speedup).
type Breakdown struct {
	Compute   time.Duration // FLOPs at MFU x TFLOPs
	Memory    time.Duration // weight + KV bytes at BandwidthEfficiency x bandwidth
	Overhead  time.Duration // StepOverhead + Layers x LayerOverhead
	Total     time.Duration // Overhead + max(Compute, Memory)
	ReadBytes float64       // bytes streamed from GPU memory
	FLOPs     float64
}

// StepTime is how long one scheduler step takes on the modelled GPU
// (before --speedup). An empty step takes no time.
//
// The step streams the weights once (however many sequences it serves),
// reads the KV cache of every sequence, and does 2 FLOPs per weight per
// token plus attention; compute and memory traffic overlap, so the step
// takes the larger of the two, plus fixed overheads. A pure decode step of
// a small batch is memory-bound (~weights / bandwidth); a prefill chunk or
// a large batch is compute-bound; a mixed step pays for both in one.
func (p *Perf) StepTime(s Step) time.Duration { return p.Breakdown(s).Total }

// Breakdown explains StepTime: compute, memory and overhead parts.
func (p *Perf) Breakdown(s Step) Breakdown {
	tokens := s.PrefillTokens + s.DecodeSeqs
	if tokens <= 0 {
		return Breakdown{}
	}
	m := p.model
	kv := float64(m.KVBytesPerToken())
	read := m.DecodeReadBytes() + float64(s.ContextTokens)*kv + float64(tokens)*kv // + KV writes
	// Logits are computed only for each sequence's last token.
	logitRows := s.PrefillSeqs + s.DecodeSeqs
	if logitRows > tokens {
		logitRows = tokens
	}
	flops := 2*m.LinearParams()*float64(tokens) +
		2*float64(m.Vocab)*float64(m.Hidden)*float64(logitRows) +
		p.attentionFLOPs(s)
	b := Breakdown{
		Compute:   seconds(flops / (p.gpu.TFLOPs * 1e12 * MFU)),
		Memory:    seconds(read / (p.gpu.BandwidthGBs * 1e9 * BandwidthEfficiency)),
		Overhead:  StepOverhead + time.Duration(m.Layers)*LayerOverhead,
		ReadBytes: read,
		FLOPs:     flops,
	}
	b.Total = b.Overhead + max(b.Compute, b.Memory)
	return b
}

// attentionFLOPs counts QK^T and PV (2 x 2 FLOPs per query-key pair per
// head dim per query head per layer). Pairs: each sequence's new tokens
// against its cached context (ContextTokens, once per sequence: exact for
// decodes, a floor for later prefill chunks) plus the causal triangle of
// the prefill tokens, assumed split evenly over PrefillSeqs.
func (p *Perf) attentionFLOPs(s Step) float64 {
	m := p.model
	pairs := float64(s.ContextTokens) + float64(s.DecodeSeqs)
	if s.PrefillTokens > 0 {
		seqs := float64(max(s.PrefillSeqs, 1))
		pairs += float64(s.PrefillTokens) * float64(s.PrefillTokens) / (2 * seqs)
	}
	return 4 * float64(m.Layers*m.Heads*m.HeadDim) * pairs
}

// reserveBytes is the non-KV, non-weight memory that vLLM's profiling run
// measures and keeps out of the KV cache. The profiling forward pass runs
// MaxNumBatchedTokens tokens; its peak holds, per token, the MLP's gate/up
// and activation outputs plus a few hidden-size buffers (bf16) and a row of
// bf16 logits (the dummy run computes logits for every token), then the
// sampler's fp32 logits for MaxNumSeqs rows; plus the non-torch part.
// CUDA graphs are captured after the KV cache is allocated and come out of
// the (1 - utilization) headroom, as in vLLM.
func (p *Perf) reserveBytes() float64 {
	m := p.model
	perToken := 2*float64(3*m.Intermediate+4*m.Hidden) + 2*float64(m.Vocab)
	sampler := float64(p.cfg.MaxNumSeqs) * float64(m.Vocab) * 4
	return float64(p.cfg.MaxNumBatchedTokens)*perToken + sampler + NonTorchReserveGiB*gib
}

// ReserveGiB is the activation and runtime reserve kept out of the KV cache.
func (p *Perf) ReserveGiB() float64 { return p.reserveBytes() / gib }

func seconds(s float64) time.Duration {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}
