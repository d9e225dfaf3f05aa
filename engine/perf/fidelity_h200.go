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
	return millis(d + decodeAfter(p, vllmPerfBenchBatch, vllmPerfBenchInput, vllmPerfBenchOutput))
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

// gpuConcSource is sariekr/gpu_conc's H200 run: `vllm serve
// openai/gpt-oss-20b` on one H200 (RunPod; RUNPOD_GUIDE.md installs vLLM
// with `pip install vllm`, no version pinned, and the run's summary is
// dated 2025-08-14, around vLLM 0.10.1, the first release to serve
// gpt-oss; the server's flags are not recorded: the guide's full command
// is for Llama-3.1-8B, and the run's 129.07 GiB peak of 140.4 fits the
// default --gpu-memory-utilization 0.9 rather than the guide's 0.85),
// driven by concurrency.py: streaming chat requests, each a synthetic
// prompt of about 1,000 tokens (the script pads a question to 750 words,
// its own 0.75 words a token) with
// max_tokens 1000, a fixed number in flight for 180 s after a 30 s
// warm-up. Its TTFT is the first chunk with content; its output speed is
// content chunks over (end - first chunk), one token a chunk at one
// request. The same repository's other H200 levels are not used: from 32
// in flight up, every level completes ~2.1-2.6 requests a second at ~105
// tokens a second each, so the client, not the GPU, sets them.
const gpuConcSource = "github.com/sariekr/gpu_conc H200/benchmark_concurrency_1.json @995b1948 (concurrency.py: streaming chat, " +
	"~1,000-token synthetic prompts, max_tokens 1000, 180 s at 1 in flight, 46 requests)"

func h200GptOSSFigures() []CitedFigure {
	const prompt, out = 1000, 1000
	base := CitedFigure{
		GPU: "h200-141gb", Model: "gpt-oss-20b", Unit: "ms", HeldOut: true,
		Source: gpuConcSource, VLLM: "not stated (RUNPOD_GUIDE.md: pip install vllm, unpinned; the run is of 2025-08-14)",
		Measured: "openai/gpt-oss-20b (MXFP4 experts, bf16 rest), 1x H200 141GB, server flags not recorded " +
			"(taken as defaults), client on the same pod",
		Cfg: Config{GPUMemoryUtilization: 0.9},
	}
	ttft, decode := base, base
	ttft.Quantity, ttft.Real = fitQuantityTTFT, 38.999
	ttft.Config = "prompt~1000,concurrency=1,client-side,median-of-46"
	// The prompt's length is the script's target, not counted (o200k
	// tokens of its padded text, under gpt-oss's chat template): the model
	// gives 35.8 ms at 800 tokens and 46.9 at 1,200 (-8% and +20%), so this
	// holds the H200's prefill only as well as that length is known.
	ttft.Eval = func(p *Perf) float64 { return millis(requestTTFT(p, prompt, 0)) }
	decode.Quantity, decode.Real = fitQuantityDecode, 1000/220.788
	decode.Config = "batch=1,context~1000+0..999,1/median-output-speed," + mxfp4LatencyFit
	decode.Source += " (median_output_speed_per_query 220.79 tokens/s)"
	decode.Eval = func(p *Perf) float64 { return millis(decodeStep(p, 1, prompt+out/2)) }
	// Without MXFP4MoELayerLatency, fitted to this row alone, the model
	// gave 2.31 ms (-49%); its 4 and 8 in flight (fidelity_moe2.go) hold
	// it out.
	return []CitedFigure{ttft, decode}
}
