package perf

import (
	"math"
	"testing"
	"time"
)

// TestStepTimeGrowsWithBatch: a decode step never gets shorter as the batch
// or its KV context grows, and grows clearly once KV reads or compute
// matter (this is why inter-token latency rises under load).
func TestStepTimeGrowsWithBatch(t *testing.T) {
	p := calibrationPerf(t)
	prev := time.Duration(0)
	for _, n := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256} {
		d := p.StepTime(Step{DecodeSeqs: n, ContextTokens: n * 300})
		if d < prev {
			t.Errorf("%d seqs: step %v shorter than with fewer seqs (%v)", n, d, prev)
		}
		prev = d
	}
	one := p.StepTime(Step{DecodeSeqs: 1, ContextTokens: 300})
	b64 := p.Breakdown(Step{DecodeSeqs: 64, ContextTokens: 64 * 300})
	t.Logf("3060 AWQ decode step: 1 seq %v; 64 seqs %v (compute %v, memory %v)", one, b64.Total, b64.Compute, b64.Memory)
	if b64.Total < 2*one {
		t.Errorf("64-seq step %v, want well over the 1-seq step %v (compute-bound)", b64.Total, one)
	}
	short := p.StepTime(Step{DecodeSeqs: 16, ContextTokens: 16 * 100})
	long := p.StepTime(Step{DecodeSeqs: 16, ContextTokens: 16 * 4000})
	t.Logf("16 seqs: context 100 each %v, 4000 each %v", short, long)
	if long <= short {
		t.Errorf("KV reads: 16 seqs at 4000 tokens %v not slower than at 100 tokens %v", long, short)
	}
	// Past the ridge point the GEMMs are compute-bound, but attention still
	// reads every sequence's KV cache after them: context still costs.
	c1, c2 := p.Breakdown(Step{DecodeSeqs: 64, ContextTokens: 64 * 100}), p.Breakdown(Step{DecodeSeqs: 64, ContextTokens: 64 * 1000})
	if !c1.ComputeBound() || c2.Total-c1.Total < (c2.Attention-c1.Attention)*9/10 || c2.Attention <= c1.Attention {
		t.Errorf("compute-bound batch: context 100 %+v vs 1000 %+v: KV reads not paid", c1, c2)
	}
	// On an H100 a 16-seq bf16 batch stays memory-bound: longer contexts
	// must cost in proportion to the extra KV bytes.
	h := mustNew(t, "h100-80gb", "llama-3.1-8b-instruct", DefaultConfig())
	a, b := h.Breakdown(Step{DecodeSeqs: 16, ContextTokens: 16 * 100}), h.Breakdown(Step{DecodeSeqs: 16, ContextTokens: 16 * 4000})
	extra := float64(16*3900*h.Model().KVBytesPerToken()) / (h.GPU().BandwidthGBs * 1e9 * h.Efficiency().Bandwidth)
	if got := (b.Total - a.Total).Seconds(); got < 0.9*extra || got > 1.1*extra {
		t.Errorf("H100 KV read cost %.3f ms, want %.3f ms", got*1000, extra*1000)
	}
}

// TestDecodeGEMMShare: a memory-bound decode step of B sequences pays
// DecodeGEMMShare of B - 1 tokens' GEMM FLOP time on top of the weight
// reads; one sequence's step and a prefill chunk pay nothing for it.
func TestDecodeGEMMShare(t *testing.T) {
	h := mustNew(t, "h100-80gb", "llama-3.1-8b-instruct", DefaultConfig())
	plain := *h
	plain.eff.decodeGEMMShare = 0
	for _, s := range []Step{{DecodeSeqs: 1, ContextTokens: 500}, {PrefillTokens: 2048, PrefillSeqs: 1}} {
		if got, want := h.StepTime(s), plain.StepTime(s); got != want {
			t.Errorf("%+v: %v with the share, %v without", s, got, want)
		}
	}
	s := Step{DecodeSeqs: 16, ContextTokens: 16 * 500}
	with, without := h.Breakdown(s), plain.Breakdown(s)
	m := h.Model()
	perToken := 2 * (m.ActiveLinearParams() + float64(m.Vocab)*float64(m.Hidden)) / h.flopRate()
	want := DecodeGEMMShare * 15 * perToken
	if got := (with.Weights - without.Weights).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Errorf("batch 16: the share adds %.4f ms, want %.4f ms", got*1000, want*1000)
	}
	if with.Attention != without.Attention || with.Overhead != without.Overhead {
		t.Errorf("the share moved more than the GEMM phase: %+v vs %+v", with, without)
	}
}

// TestMixedStep: a step that prefills a chunk and decodes a batch costs at
// least as much as either part alone and no more than both.
func TestMixedStep(t *testing.T) {
	p := calibrationPerf(t)
	pre := Step{PrefillTokens: 512, PrefillSeqs: 1}
	dec := Step{DecodeSeqs: 32, ContextTokens: 32 * 500}
	mixed := Step{PrefillTokens: 512, PrefillSeqs: 1, DecodeSeqs: 32, ContextTokens: 32 * 500}
	a, b, m := p.StepTime(pre), p.StepTime(dec), p.StepTime(mixed)
	t.Logf("prefill 512 %v, decode 32 %v, mixed %v", a, b, m)
	if m < a || m < b || m > a+b {
		t.Errorf("mixed %v outside [max(%v, %v), sum]", m, a, b)
	}
	if p.StepTime(Step{}) != 0 {
		t.Errorf("empty step takes time")
	}
}

// TestKVLimitUnderLoad: 64 concurrent 256-token streams fit the 3060's KV
// cache with short prompts but not with long ones; the scheduler must then
// queue or preempt, which is what drives queue wait and TTFT up.
func TestKVLimitUnderLoad(t *testing.T) {
	p := calibrationPerf(t)
	prompt, _ := seedPrompt(t, p)
	const streams, output = 64, 256
	need := func(prompt int) int { return streams * p.KVBlocksFor(prompt+output) * p.BlockSize() }
	short, long := need(prompt), need(2048)
	t.Logf("64 x (prompt+256): short prompts need %d KV tokens, 2048-token prompts %d; available %d (%d streams of 2304 fit)",
		short, long, p.KVCacheTokens(), p.NumGPUBlocks()/p.KVBlocksFor(2048+output))
	if short > p.KVCacheTokens() {
		t.Errorf("short prompts need %d tokens, over the %d available", short, p.KVCacheTokens())
	}
	if long <= p.KVCacheTokens() {
		t.Errorf("long prompts need %d tokens, within the %d available: no KV pressure", long, p.KVCacheTokens())
	}
	// A newcomer's first step is a mixed step: its TTFT is far above its
	// TTFT on an idle engine when 63 streams are decoding.
	busy := p.RequestOverhead() + p.StepTime(Step{PrefillTokens: prompt, PrefillSeqs: 1, DecodeSeqs: 63, ContextTokens: 63 * 160})
	idle, _ := requestTimes(p, prompt, 0, 1)
	t.Logf("TTFT of a newcomer: idle %v, beside 63 decoding streams %v", idle, busy)
	if busy < 2*idle {
		t.Errorf("busy TTFT %v, want well over idle %v", busy, idle)
	}
}

// TestStartup: phases are positive, ordered as vLLM logs them, and a GPU
// host with faster loading starts the same model sooner.
func TestStartup(t *testing.T) {
	s := calibrationPerf(t).Startup()
	for name, d := range map[string]time.Duration{"pre-load": s.PreLoad, "weights": s.WeightsLoad,
		"profile": s.Profile, "compile": s.Compile, "graphs": s.GraphCapture, "api": s.APIStart} {
		if d <= 0 {
			t.Errorf("phase %s: %v", name, d)
		}
	}
	if s.ModelLoad < s.WeightsLoad || s.InitEngine() != s.Profile+s.Compile+s.GraphCapture {
		t.Errorf("phase relations broken: %+v", s)
	}
	if s.GraphSizes != 67 || s.KVCacheTokens != calibrationPerf(t).KVCacheTokens() {
		t.Errorf("graph sizes %d (want 67 for max_num_seqs 256), KV %d", s.GraphSizes, s.KVCacheTokens)
	}
	h := mustNew(t, "h100-80gb", DefaultModel, DefaultConfig()).Startup()
	t.Logf("start-up: 3060 %v, H100 %v", s.Total(), h.Total())
	if h.WeightsLoad >= s.WeightsLoad || h.Total() >= s.Total() {
		t.Errorf("H100 start-up %v not faster than 3060 %v", h.Total(), s.Total())
	}
}

// BenchmarkStepTime: the scheduler calls StepTime once per step, so it must
// be cheap and allocation-free.
func BenchmarkStepTime(b *testing.B) {
	p := calibrationPerf(b)
	s := Step{PrefillTokens: 512, PrefillSeqs: 1, DecodeSeqs: 64, ContextTokens: 64 * 500}
	b.ReportAllocs()
	for b.Loop() {
		_ = p.StepTime(s)
	}
}
