package perf

import "fmt"

// Decode with long contexts on the RTX 3060 from aerlabsAI/nano-vllm's
// vLLM 0.15.1 sweep (nanoSource, fidelity_small.go), for the tile cost of
// FlashAttention-2's split-KV decode kernel (SplitKVMMAShare, step.go).
//
// Qwen3-0.6B, --max-num-seqs 8 run (batch_8_t1024,
// openai-1.0qps-Qwen3-0.6B-20260223-213235.json): request 0 (2,973-token
// prompt, 512 out) decodes alone at ~6.5 ms a token, then shares six steps
// with request 1's 4,845-token prefill (ITLs of 25.5 to 89.3 ms, the last
// 79.3 ms), then decodes beside request 1 alone until its last token: its
// last 95 ITLs are steps of exactly two sequences (request 1's ITL list
// opens with the same values, 9.69, 10.17, 8.64 ms ..., and falls to ~7 ms
// once request 0 is done), at contexts 3,390..3,484 and 4,846..4,940.
// Their median is 9.085 ms (a value of the list: 95 values), where the
// model without the split-KV tiles gave 7.4 ms: the two sequences' 0.96
// GB of KV take 2.9 ms at the bandwidth the weights get, and the step
// costs ~4.6 ms beside its 4.4 ms of weights and layers.
func attFigures() []CitedFigure {
	f := CitedFigure{
		GPU: "rtx3060-12gb", Model: qwen3_06B.Name, Quantity: fitQuantityDecode, Unit: "ms", VLLM: nanoVLLM,
		Measured: "Qwen/Qwen3-0.6B bf16, 1x RTX 3060 12GB, random dataset 4,096+-33% in / 512+-33% out, 1 request/s",
		HeldOut:  true,
		Real:     9.085,
		Cfg:      Config{MaxModelLen: 40960, GPUMemoryUtilization: 0.9, MaxNumBatchedTokens: 1024, MaxNumSeqs: 8},
		Config:   "batch=2,context=3390..3484+4846..4940,ITL-median-of-95," + splitKVFit,
		Source: fmt.Sprintf("github.com/aerlabsAI/nano-vllm docs/data/vllm-gpu/qwen3-0.6b/%s @1427ec7 (vllm bench serve "+
			"--save-detailed; case %s, docs/data/vllm-gpu/README.md; request 0: median of its last 95 itls, "+
			"0.009084903000257327 s)", "openai-1.0qps-Qwen3-0.6B-20260223-213235.json", "batch_8_t1024"),
		Eval: func(p *Perf) float64 {
			return millis(p.StepTime(Step{DecodeSeqs: 2, ContextTokens: 3437 + 4893}))
		},
	}
	return []CitedFigure{f}
}
