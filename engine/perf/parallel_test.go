package perf

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestParallelSplit: tensor parallelism divides one rank's weights by N,
// its KV heads by N until there is one per rank (then replicated), and
// adds all-reduce time that grows with N; more GPUs still decode a 70B
// model faster, and a MoE decode reads more experts as the batch grows.
func TestParallelSplit(t *testing.T) {
	g, m, err := Lookup("h100-80gb", "llama-3.1-70b-instruct")
	if err != nil {
		t.Fatal(err)
	}
	var prevDecode float64
	for _, c := range []struct{ tp, kvHeads int }{{2, 4}, {4, 2}, {8, 1}} {
		p, err := New(g, m, Config{MaxModelLen: 8192, GPUMemoryUtilization: 0.9, TensorParallelSize: c.tp})
		if err != nil {
			t.Fatal(err)
		}
		if p.KVHeadsPerGPU() != c.kvHeads || p.KVBytesPerTokenPerGPU() != m.KVBytesPerToken()/(8/c.kvHeads) {
			t.Errorf("tp=%d: %d KV heads, %d B/token per GPU; want %d heads", c.tp, p.KVHeadsPerGPU(), p.KVBytesPerTokenPerGPU(), c.kvHeads)
		}
		if got, want := p.WeightsGiB(), m.WeightBytes()/gib/float64(c.tp); got != want {
			t.Errorf("tp=%d: %.3f GiB of weights per GPU, want %.3f", c.tp, got, want)
		}
		b := p.Breakdown(Step{DecodeSeqs: 1, ContextTokens: 1000})
		ms := b.Total.Seconds() * 1000
		t.Logf("tp=%d: %.2f GiB weights/GPU, KV %d tokens, decode %.2f ms (all-reduce %.2f ms)", c.tp, p.WeightsGiB(), p.KVCacheTokens(), ms, b.AllReduce.Seconds()*1000)
		if b.AllReduce <= 0 {
			t.Errorf("tp=%d: no all-reduce time", c.tp)
		}
		if prevDecode > 0 && ms >= prevDecode {
			t.Errorf("tp=%d decodes in %.2f ms, no faster than half the GPUs (%.2f ms)", c.tp, ms, prevDecode)
		}
		prevDecode = ms
	}
	// Qwen3-30B-A3B has 4 KV heads: at TP 8 each is held by two ranks.
	g, m, _ = Lookup("h100-80gb", "qwen3-30b-a3b-instruct-2507")
	p, err := New(g, m, Config{MaxModelLen: 8192, GPUMemoryUtilization: 0.9, TensorParallelSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	if p.KVHeadsPerGPU() != 1 {
		t.Errorf("qwen3-30b tp=8: %d KV heads per GPU, want 1 (replicated)", p.KVHeadsPerGPU())
	}
}

// TestMoEExperts: the expected distinct experts per layer for B tokens
// under uniform routing is k at B = 1 and approaches E, and a decode step
// reads more bytes as the batch grows while a dense model's do not.
func TestMoEExperts(t *testing.T) {
	m, _ := LookupModel("mixtral-8x7b-instruct")
	if got := m.ExpectedExperts(1); got != 2 {
		t.Errorf("B=1: %.3f experts, want 2 (top-2)", got)
	}
	// 8 x (1 - (6/8)^4) = 5.47
	if got := m.ExpectedExperts(4); got < 5.46 || got > 5.48 {
		t.Errorf("B=4: %.3f experts, want 5.47", got)
	}
	if got := m.ExpectedExperts(512); got < 7.999 {
		t.Errorf("B=512: %.3f experts, want ~8", got)
	}
	q, _ := LookupModel("qwen3-235b-a22b-instruct-2507")
	if a := q.ActiveParams() / 1e9; a < 22.0 || a > 22.4 {
		t.Errorf("qwen3-235b: %.2fB active parameters, published 22B", a)
	}
	if m.readBytes(1) >= m.readBytes(8) || m.readBytes(8) > m.DecodeReadBytes() {
		t.Errorf("mixtral read bytes: B=1 %.2f GB, B=8 %.2f GB, all %.2f GB: want growing to all", m.readBytes(1)/1e9, m.readBytes(8)/1e9, m.DecodeReadBytes()/1e9)
	}
	d, _ := LookupModel("llama-3.1-70b-instruct")
	if d.readBytes(1) != d.readBytes(64) {
		t.Error("a dense model's read bytes depend on the batch")
	}
}

// TestParallelRefusals: what vLLM refuses is refused with vLLM's words and
// the memory needed and had.
func TestParallelRefusals(t *testing.T) {
	cases := []struct {
		name, gpu, model string
		tp, maxLen       int
		util             float64 // 0: 0.9
		want             []string
	}{
		{"heads not divisible", "h100-80gb", "llama-3.1-70b-instruct", 3, 8192, 0,
			[]string{"Total number of attention heads (64) must be divisible by tensor parallel size (3)."}},
		{"70B on one H100", "h100-80gb", "llama-3.1-70b-instruct", 1, 8192, 0,
			[]string{"torch.OutOfMemoryError: CUDA out of memory", "131.42 GiB per GPU", "79.18 GiB", "--tensor-parallel-size 2"}},
		// At 0.9 the profile's reserve (memory.go) leaves 0.75 GiB of KV
		// cache, short of 8,192 tokens; at 0.88 it leaves none.
		{"70B on two H100s: weights fit, no KV", "h100-80gb", "qwen2.5-72b-instruct", 2, 8192, 0.88,
			[]string{"No available memory for the cache blocks", "2x h100-80gb (--tensor-parallel-size 2)", "67.71 GiB weights"}},
		{"70B on two H100s, 32K context", "h100-80gb", "llama-3.1-70b-instruct", 2, 32768, 0,
			[]string{"To serve at least one request with the model's max seq len (32768), (5.00 GiB KV cache is needed",
				"estimated maximum model length is", "--max-model-len 32768"}},
	}
	for _, c := range cases {
		g, m, err := Lookup(c.gpu, c.model)
		if err != nil {
			t.Fatal(err)
		}
		util := c.util
		if util == 0 {
			util = 0.9
		}
		_, err = New(g, m, Config{MaxModelLen: c.maxLen, GPUMemoryUtilization: util, TensorParallelSize: c.tp})
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
		if c.tp != 3 && !errors.Is(err, ErrDoesNotFit) {
			t.Errorf("%s: %v is not ErrDoesNotFit", c.name, err)
		}
	}
}

// TestPipelineParallel: 70B on 8 H100s as TP=4 x PP=2 holds each GPU's
// share as TP=8 does (half the layers, two KV heads: the same 40 KiB per
// token and 16.4 GiB of weights), so about the same KV capacity, but a
// batch's step runs the two stages one after the other: a TP=4 step plus
// the hand-off, slower than TP=8's. More stages than layers is refused.
func TestPipelineParallel(t *testing.T) {
	g, m, _ := Lookup("h100-80gb", "llama-3.1-70b-instruct")
	cfg := Config{MaxModelLen: 8192, GPUMemoryUtilization: 0.9}
	mk := func(tp, pp int) *Perf {
		c := cfg
		c.TensorParallelSize, c.PipelineParallelSize = tp, pp
		p, err := New(g, m, c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tp8, tp4, tp4pp2 := mk(8, 1), mk(4, 1), mk(4, 2)
	if tp4pp2.KVBytesPerTokenPerGPU() != tp8.KVBytesPerTokenPerGPU() || tp4pp2.WeightsGiB() != tp8.WeightsGiB() {
		t.Errorf("TP4xPP2: %d B/token, %.2f GiB per GPU; TP8: %d, %.2f", tp4pp2.KVBytesPerTokenPerGPU(), tp4pp2.WeightsGiB(),
			tp8.KVBytesPerTokenPerGPU(), tp8.WeightsGiB())
	}
	if r := float64(tp4pp2.KVCacheTokens()) / float64(tp8.KVCacheTokens()); r < 0.95 || r > 1.0 {
		t.Errorf("TP4xPP2 holds %d KV tokens, TP8 %d (ratio %.3f)", tp4pp2.KVCacheTokens(), tp8.KVCacheTokens(), r)
	}
	s := Step{DecodeSeqs: 8, ContextTokens: 8000}
	a, b, c := tp8.StepTime(s), tp4.StepTime(s), tp4pp2.StepTime(s)
	t.Logf("decode step of 8: TP8 %v, TP4 %v, TP4xPP2 %v; KV tokens TP8 %d, TP4xPP2 %d", a, b, c, tp8.KVCacheTokens(), tp4pp2.KVCacheTokens())
	if c <= b || c >= b+time.Millisecond || c <= a {
		t.Errorf("TP4xPP2 step %v: want a TP4 step (%v) plus a hand-off under 1 ms, slower than TP8's %v", c, b, a)
	}
	cfg.PipelineParallelSize = 81
	if _, err := New(g, m, cfg); err == nil || !strings.Contains(err.Error(), "--pipeline-parallel-size 81") {
		t.Errorf("81 stages of 80 layers: %v", err)
	}
}

// TestGptOss: gpt-oss-20b's MXFP4 experts put its weights at the
// checkpoint's ~12.8 GiB (13.8 GB of safetensors), not the 39 GiB of bf16;
// only its 12 full-attention layers hold KV per token (24 KiB), and a
// long prefill's attention costs less than if all 24 layers attended over
// the whole prompt.
func TestGptOss(t *testing.T) {
	p := mustNew(t, "h100-80gb", "gpt-oss-20b", Config{GPUMemoryUtilization: 0.9})
	if w := p.WeightsGiB(); w < 12.5 || w > 13.1 {
		t.Errorf("weights %.2f GiB, want ~12.8", w)
	}
	if kv := p.Model().KVBytesPerToken(); kv != 2*12*8*64*2 {
		t.Errorf("KV %d B/token, want %d (12 full-attention layers)", kv, 2*12*8*64*2)
	}
	full := p.Model()
	full.SlidingLayers, full.SlidingWindow = 0, 0
	q, err := New(p.GPU(), full, p.Config())
	if err != nil {
		t.Fatal(err)
	}
	long := Step{PrefillTokens: 8192, PrefillSeqs: 1, ContextTokens: 24576}
	if a, b := p.Breakdown(long).Attention, q.Breakdown(long).Attention; a >= b {
		t.Errorf("8K chunk at 24K context: attention %v with sliding layers, %v without; want less", a, b)
	}
	t.Logf("gpt-oss-20b on H100: %.2f GiB, %d KV tokens, 8K chunk at 24K: %v (all layers full: %v)",
		p.WeightsGiB(), p.KVCacheTokens(), p.StepTime(long), q.StepTime(long))

	// Before Hopper vLLM runs its Marlin MXFP4 backend, whose padding of
	// 2,880 to 2,944 x 3,072 makes the experts 9.0% larger in memory:
	// vLLM 0.19 logs "Model loading took 13.72 GiB" on an A100.
	a := mustNew(t, "a100-80gb", "gpt-oss-20b", Config{GPUMemoryUtilization: 0.65})
	want := p.WeightsGiB() + p.Model().expertBytes()*(2944.0*3072/(2880*2880)-1)/gib
	if w := a.WeightsGiB(); math.Abs(w-want) > 1e-9 || math.Abs(w/13.72-1) > 0.01 {
		t.Errorf("A100 weights %.3f GiB, want %.3f (padded experts) within 1%% of vLLM's logged 13.72", w, want)
	}
	t.Logf("gpt-oss-20b weights: H100 %.2f GiB (Triton backend, unpadded), A100 %.2f GiB (Marlin, padded; vLLM 0.19 logs 13.72)",
		p.WeightsGiB(), a.WeightsGiB())
}

// TestFitHintFits: when a model does not fit, the tensor-parallel size the
// error suggests is the smallest on one node that does (so the user's next
// try starts), and none is suggested where no node of that GPU holds it.
func TestFitHintFits(t *testing.T) {
	cases := []struct {
		gpu, model string
		cfg        Config
	}{
		{"a10g-24gb", "llama-3.1-70b-instruct", Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9}},
		{"l4-24gb", "llama-3.1-70b-instruct", Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9, TensorParallelSize: 2}},
		{"a100-80gb", "llama-3.1-70b-instruct", Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9}},
		{"h100-80gb", "llama-3.1-70b-instruct", Config{MaxModelLen: 131072, GPUMemoryUtilization: 0.9}},
		{"h100-80gb", "qwen3-235b-a22b-instruct-2507", Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9}},
		{"rtx3060-12gb", "qwen3-235b-a22b-instruct-2507", Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9}},
	}
	hinted := 0
	for _, c := range cases {
		g, m, err := Lookup(c.gpu, c.model)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(g, m, c.cfg)
		if !errors.Is(err, ErrDoesNotFit) {
			t.Fatalf("%s on %s: %v, want ErrDoesNotFit", c.model, c.gpu, err)
		}
		fits := func(tp int) bool {
			cfg := c.cfg
			cfg.TensorParallelSize = tp
			_, err := New(g, m, cfg)
			return err == nil
		}
		from := max(c.cfg.TensorParallelSize, 1)
		smallest := 0
		for tp := 2 * from; tp <= 8; tp *= 2 {
			if fits(tp) {
				smallest = tp
				break
			}
		}
		hint := fmt.Sprintf("more GPUs (--tensor-parallel-size %d)", smallest)
		switch {
		case smallest > 0 && !strings.Contains(err.Error(), hint):
			t.Errorf("%s on %s: want the hint %q in %v", c.model, c.gpu, hint, err)
		case smallest == 0 && strings.Contains(err.Error(), "more GPUs"):
			t.Errorf("%s on %s: no node of 8 holds it, but the error suggests more GPUs: %v", c.model, c.gpu, err)
		}
		t.Logf("%s on %s: smallest fitting TP %d", c.model, c.gpu, smallest)
		if smallest > 0 {
			hinted++
		}
	}
	if hinted == 0 || hinted == len(cases) {
		t.Errorf("%d of %d cases fit at a larger tensor-parallel size: want both kinds, so both branches are checked", hinted, len(cases))
	}
}
