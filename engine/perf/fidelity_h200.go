package perf

// Cited figures from vLLM's own CI performance benchmark (the
// "performance-benchmark" Buildkite pipeline, .buildkite/nightly-benchmarks
// in the vLLM repository), the only single-GPU vLLM figure found for the
// H200 with a profiled dense model.
//
// Its latency test is `benchmark_latency` (offline LLM.generate, no HTTP)
// with the script's defaults: 8 prompts of 32 tokens each, 128 output
// tokens each, ignore_eos, dummy weights (load_format dummy: the same
// shapes and bytes as the checkpoint), 5 warm-up and 15 timed iterations,
// mean end-to-end latency of the whole batch. So one iteration is one
// prefill step over 8 x 32 tokens (which also samples the first token)
// then 127 decode steps of 8 sequences whose context grows from 33 to 159
// tokens: a batch-8 decode figure, its prefill ~3% of it.

const (
	vllmPerfBenchSource = "buildkite.com/vllm/performance-benchmark/builds/9515 (\"Latency tests\" table: " +
		"input 32 tokens, output 128, batch size 8; latency_llama8B_tp1 mean latency)"
	vllmPerfBenchVersion = "vLLM main at performance-benchmark build 9515 (V1; the page prints no version)"
	vllmPerfBenchInput   = 32
	vllmPerfBenchOutput  = 128
	vllmPerfBenchBatch   = 8
)

// perfBenchLatency is benchmark_latency's mean batch latency in the model.
func perfBenchLatency(p *Perf) float64 {
	d := p.StepTime(Step{PrefillTokens: vllmPerfBenchBatch * vllmPerfBenchInput, PrefillSeqs: vllmPerfBenchBatch})
	for i := 1; i < vllmPerfBenchOutput; i++ {
		d += decodeStep(p, vllmPerfBenchBatch, vllmPerfBenchInput+i)
	}
	return millis(d)
}

func h200Figures() []CitedFigure {
	return []CitedFigure{
		{
			// The same test on an H100 (a copy of the pipeline's results
			// page stored under another Buildkite path; the page names the
			// GPU "8xH100", the test runs on one of them): the H100's twin of
			// the H200 figure below, so the pair shows what the H200's
			// extra bandwidth buys in vLLM, beside what the model gives it.
			GPU: "h100-80gb", Model: "llama-3.1-8b-instruct", Quantity: fitQuantityDecode,
			Config: "benchmark_latency,batch=8,input=32,output=128,mean-E2E", Real: 997.542, Unit: "ms",
			Source: "buildkite.com/elastic/enterprise-search-ruby/builds/571 (vLLM performance-benchmark \"Latency tests\" " +
				"table: input 32 tokens, output 128, batch size 8; latency_llama8B_tp1 on 8xH100, mean latency 997.542 ms)",
			VLLM:     "vLLM main (V1; the page prints no version)",
			Measured: "meta-llama/Meta-Llama-3.1-8B-Instruct architecture, bf16 (dtype auto), dummy weights, 1 GPU of an 8x H100 node",
			HeldOut:  true,
			Cfg:      Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9},
			Eval:     perfBenchLatency,
		},
		{
			GPU: "h200-141gb", Model: "llama-3.1-8b-instruct", Quantity: fitQuantityDecode,
			Config: "benchmark_latency,batch=8,input=32,output=128,mean-E2E", Real: 833.421, Unit: "ms",
			Source: vllmPerfBenchSource + " (833.421 ms)", VLLM: vllmPerfBenchVersion,
			Measured: "meta-llama/Meta-Llama-3.1-8B-Instruct architecture, bf16 (dtype auto), dummy weights, 1x H200",
			HeldOut:  true,
			Cfg:      Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9},
			Eval:     perfBenchLatency,
		},
	}
}
