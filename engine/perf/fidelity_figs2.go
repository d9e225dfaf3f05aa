package perf

// No figures: this file records a fifth search (2026-12-02, engineer figs2)
// for one request's TTFT or prefill time at several prompt lengths (128 to
// 8k tokens, batch 1, max-concurrency 1, vLLM) on the A10G, the L4 (which
// has only ~1,460 tokens, fidelity_lengths7b.go), the H200, and for a 7-8B
// dense model on one A100 or H100. Nothing usable was found, so no row is
// registered. Besides the lists in fidelity_figures.go, fidelity_figs.go,
// fidelity_dc.go, fidelity_small.go, fidelity_h200b.go and docs/engine.md,
// these were read and rejected:
//
//   - GuideLLM outputs: vllm-project/guidellm issue 136 (an H100 sweep whose
//     synchronous run is one prompt length, ~957 tokens); ai.wmx.dev's L4
//     page (Qwen2.5-0.5B, vLLM 0.23.0, one 256-token prompt at concurrency 1
//     to 32; its GuideLLM ADR page has no results); wangzheng422's RHAI
//     report (Qwen3.6-27B-FP8 at tensor parallel 4 on four L4s, 8k prompts
//     at concurrency 4, no profile); modal-labs/stopwatch's README (no
//     results, rejected before).
//   - `vllm bench serve` / benchmark_serving.py outputs by "max_concurrency":
//     1 and "Maximum request concurrency: 1": vLLM issue 13412 (8 H200s,
//     Llama-3.3-70B at concurrency 32); SGLang PR 5360 and
//     datacrunch-research/h200-benchmarks (SGLang, not vLLM);
//     vllm-project/vllm-ascend issues 1886 and 12582 (Ascend NPUs);
//     tenstorrent/tt-inference-server issues and its
//     benchmarking/benchmark_targets/model_performance_reference.json
//     (Tenstorrent hardware targets; its GPU tables were rejected before);
//     noonghunna/club-3090 bench issues (RTX 3090/5090, no profile).
//   - Repositories with committed runs: dennislee22/vLLM-benchmarking (A100
//     80GB, Qwen2-7B-Instruct, 10 to 50 random prompts sent at once: no
//     single-request TTFT); Nicolas-Richard/vllm-on-eks (two L4s,
//     Qwen2.5-7B-Instruct, vLLM 0.19.1: scenario YAMLs, no results committed;
//     its blog's figures are two workers under sustained load); an A10G
//     Qwen2.5-3B TensorRT-LLM-against-vLLM summary (ShareGPT by batch size,
//     no prompt lengths); Kaito's GPU benchmark page (an A10, not the A10G,
//     and phi-4-mini, no profile); "GPU Benchmark Comparison Report" files
//     with TTFT by prompt tokens on an A6000/A100 (Ollama model tags, not
//     vLLM); the hungchun0201 course's weeks 5, 10 and 15 and its lmcache
//     pages (ShareGPT under load, a 480-token prefix's whole-request latency
//     with a 64-token answer, static 500-token prefixes: no length sweep).
//   - vLLM issues and PRs pasting benchmark_latency at --output-len 1 or TTFT
//     by input length (PR tables are kernel-level or throughput; issue 1805,
//     rejected before, is the only A10G one); arXiv and blog pages (Hathora's
//     H100 PCIe, Azure's ND-H100, Ori: rejected before; no stored page gives
//     vLLM's TTFT by prompt length on these GPUs); on the L4, a Gemma 2 9B
//     write-up (rsher60/resume-gen-benchmark: TTFT by persona complexity
//     bucket, not by a stated token count; Gemma has no profile) and Google
//     Cloud's vLLM rightsizing and Gemma 3 on GKE posts (Gemma 3 27B, by
//     concurrency).
