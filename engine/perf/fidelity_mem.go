package perf

// More of llm-d-planner's vLLM 0.19.0 start-up logs (plannerSource, the
// same campaign as plannerFigures: H100 SXM, `vllm serve MODEL
// --max-model-len 8192 --gpu-memory-utilization 0.95
// --no-enable-prefix-caching`, DEBUG level), held against 0.19's memory
// profile (MemoryTritonSampler in memory.go) after it was modelled:
// moonshotai/Kimi-Dev-72B at tensor parallel 2 and 4, the one other
// model of the campaign whose architecture the engine has. Its logs
// resolve it to Qwen2ForCausalLM with Qwen2.5-72B's footprint: 67.82 GiB
// of weights a rank at tensor parallel 2 (Qwen2.5-72B-Instruct's log:
// 67.8) and the same 2.29 GiB torch peak (which the vocabulary and hidden
// size set, memory.go), so it is evaluated as qwen2.5-72b-instruct. At
// tensor parallel 4 its non-torch increase is 2.21 GiB where the engine
// keeps the 2.07 the Llama-3.1-8B logs give (NonTorchIncreaseTP019GiB).
// The campaign's other logs are of architectures the engine lacks
// (Gemma 2/3/4, Granite, Phi, Mistral-Small-24B, CodeLlama, Qwen1.5-MoE,
// DeepSeek-V2, Llama-4-Scout, Kimi-VL) or of dtypes it does not model
// (fp32, fp16, fp8 KV cache), or repeat a cited model at another
// --max-model-len (the same cache).

func memFigures() []CitedFigure {
	const measured = "moonshotai/Kimi-Dev-72B bf16 (Qwen2ForCausalLM; evaluated as Qwen2.5-72B's architecture)"
	runs := []plannerRun{
		{"moonshotai-kimi-dev-72b--h100-80gb--tp2pp1dp1--8192.log", "qwen2.5-72b-instruct", measured,
			2, 0.95, 19776, 3.02, 67.82, 2.29, 2.09, false, false},
		{"moonshotai-kimi-dev-72b--h100-80gb--tp4pp1dp1--8192.log", "qwen2.5-72b-instruct", measured,
			4, 0.95, 481296, 36.72, 34.01, 2.29, 2.21, false, false},
	}
	figs := make([]CitedFigure, 0, len(runs))
	for _, r := range runs {
		f := r.figure()
		f.Config += ",Kimi-Dev-72B"
		figs = append(figs, f)
	}
	return figs
}
