package perf

import "fmt"

// Batch-1 and larger-batch vLLM runs of a 7-8B model on one A100 40GB and
// one H100 80GB, from Argonne's LLM-Inference-Bench (Chitty-Venkata et
// al., arXiv 2411.00136; argonneRepo): offline LLM.generate over a batch
// of random-token prompts, every prompt of n tokens answered with n tokens
// (ignore_eos), the whole batch timed end to end after warm-up runs.
//
// What was run. A100: vLLM/A100/Throughput_measurement/benchmark_throughput.py
// (despite its name a latency script: it builds LLM(...) with the
// script's defaults, --dtype float16, --gpu-memory-utilization 0.9, block
// size 16, chunked prefill and prefix caching off; three warm-up
// generate calls, then one timed call), on ALCF's Polaris (the PBS script
// asks for the eagle and grand filesystems; Polaris's nodes hold four
// A100s on an HGX board, 40 GiB HBM2 and 1.6 TB/s each: argonne-lcf/user-guides
// docs/polaris/hardware-overview/machine-overview.md). vLLM's version is
// not stated: the directory's requirements files, committed 2024-09-20
// (ccc281d) with the results (Plots/, 2024-09-20 to 27), are a vLLM
// release's own of the torch 2.4 era (torch 2.4.0, xformers 0.0.27.post2,
// vllm-flash-attn 2.6.1; a 2025-06-10 edit, in the commit cited, pins
// torch 2.6.0 beside the same xformers line). H100:
// vLLM/H100/benchmark_throughput.py, vLLM's benchmarks/benchmark_latency.py
// with a CSV writer added (the same LLM defaults and --dtype float16; the
// mean of its timed iterations, 30 after 10 warm-up by default), under
// `pip install vllm` of a version not stated, before the script's commit
// (2024-09-20, so before 0.6.2, released 2024-09-25), on JLSE's H100
// nodes (queue gpu_h100); those nodes' GPUs are "NVIDIA H100 80GB HBM3"
// with 132 SMs, i.e. the SXM5 part (jtchilders/floptic
// results/jlse_gpu_h100.md, host hopper00), whose datasheet the h100-80gb
// profile holds.
//
// How vLLM of that generation runs such a batch, and so the model: the V0
// engine without chunked prefill batches whole prompts up to
// max_num_batched_tokens, max(max_model_len, 2048) = 8,192 for
// Meta-Llama-3-8B (its 8,192 positions), and schedules every waiting
// prefill before any decode, so the batch's prompts are prefilled in
// steps of 8,192 / n prompts, their first tokens sampled there, then n - 1
// decode steps run over all b sequences (argonneE2E). The offline class
// has no HTTP request to pay for (RequestOverhead is left out). Rows are
// taken where the batch's KV cache (b x 2n tokens) fits what the model
// keeps at these flags, so vLLM did not preempt (it does past that: the
// file's Llama-2-7B rows, whose KV is 4x larger, jump 3.6x from batch 16
// to 64 at n = 2,048).
//
// Meta-Llama-3-8B (base) has Llama-3.1-8B-Instruct's shapes and
// vocabulary (llama-3.1-8b-instruct profile); the fp16 weights are the
// same bytes as bf16.
//
// Not used from the same files: Llama-2-7B (no profile, and a KV cache
// 4x Llama-3-8B's, so vLLM preempts in its larger rows); Mistral-7B-v0.1,
// whose H100 runs at batch 32 take up to 1.7x Llama-3-8B's at the same
// shapes (21.97 against 13.06 s at n = 1,024), which nothing in two
// near-identical 7-8B models explains; Qwen2-7B on the H100, which takes
// as long as Meta-Llama-3-8B at batch 1 (1.009 against 0.994 s at n = 128,
// 16.31 against 16.30 s at 2,048) with 5% fewer weight bytes and 28
// layers to 32, so those steps are not set by what the model prices (it
// is 13.7% under them, and 15.5-33.2% under its batch 16-64 rows). That
// equality says the H100's batch-1 steps here are bound by something
// other than the GPU's weight reads (the model is 7% under its
// Llama-3-8B rows, and within 1% of vLLM 0.6.0's batch-1 decode on an
// H100 SXM, lambdaFigures).
//
// Searched for one request's TTFT at several prompt lengths on the A100
// and H100 (issue 21 item 1a), in vain, besides the lists in
// fidelity_figures.go and docs/engine.md: this repository (TTFT only at
// batch 16 and 1,024 tokens, above); modal-labs/stopwatch (configurations
// and harness, no results committed); dstackai/benchmarks (Llama-3.1-405B
// on 8 GPUs, DeepSeek-R1, P/D ratios: no 7-8B model on one GPU);
// llm-d/llm-d-benchmark data/k8s LMBench runs of Llama-3.1-8B at 0.1
// requests/s (one prompt length, 21,073 tokens, TTFT ~1.92 s; no GPU
// named in the data); tyler-griggs/melange-release (no profiles
// committed); gpustack's quantization reference page (1,000 ShareGPT
// prompts at once); seungrokj/ootb_vllm (a latency table with no values);
// vLLM issue 1805 (benchmark_latency --output-len 1, vLLM 0.2.0 on four
// A10G).

// argonneRepo is the repository at the commit the rows were read at.
const argonneRepo = "github.com/argonne-lcf/LLM-Inference-Bench @4211f5d4e9bc0145ed541b6d372d5d8223b44235 "

// argonneAllSource is the file of the E2E rows.
const argonneAllSource = argonneRepo + "Plots/All_results.csv (row \"%s,1,vLLM,%s,%d,%d,%s,...\": " +
	"Hardware, Num of Hardware, Framework, Model, Input Output Length, Batch Size, Latency in s)"

const (
	argonneA100 = "Nvidia A100 GPU"
	argonneH100 = "Nvidia H100 GPU"
)

// argonneVLLM stands for the release, which neither GPU's files state: the
// A100's requirements are a torch 2.4 release's (0.5.4 to 0.6.3), the
// H100's pip install predates 0.6.2. Every one of them runs V0, and V0 is
// all the engine's step loop tells apart there (version.go).
const argonneVLLM = "0.6.1"

// argonneConfig is the LLM class's configuration for a model of maxLen
// positions: max_model_len maxLen and, chunked prefill off,
// max_num_batched_tokens max(max_model_len, 2048).
func argonneConfig(maxLen int) Config {
	return Config{MaxModelLen: maxLen, GPUMemoryUtilization: 0.9, MaxNumSeqs: 256,
		MaxNumBatchedTokens: max(maxLen, 2048), VLLMVersion: argonneVLLM}
}

// argonnePrefill is the prefill steps of batch prompts of n tokens: whole
// prompts, as many as fit the step budget, each step's first tokens
// sampled in it.
func argonnePrefill(p *Perf, batch, n int) float64 {
	per := max(1, p.cfg.MaxNumBatchedTokens/n)
	var ms float64
	for left := batch; left > 0; left -= per {
		k := min(per, left)
		ms += millis(p.StepTime(Step{PrefillTokens: k * n, PrefillSeqs: k}))
	}
	return ms
}

// argonneE2E is the batch's end-to-end time in ms: its prefill steps,
// then the n - 1 decode steps of all batch sequences.
func argonneE2E(p *Perf, batch, n int) float64 {
	return argonnePrefill(p, batch, n) + millis(decodeAfter(p, batch, n, n))
}

// argonneRun is one row of Plots/All_results.csv.
type argonneRun struct {
	n, batch int
	latency  string // the file's Latency, in seconds, as printed
}

// argonneSet is one GPU's and one model's rows.
type argonneSet struct {
	gpu, model string // profile and architecture
	hfModel    string // the file's Model column
	maxLen     int    // the model's max_position_embeddings: the LLM class's max_model_len
	runs       []argonneRun
}

// argonneSets are the rows used: batch 1 at three lengths, and batches
// 16, 32 and 64 at a short and a long one. Each GPU's batch-64 run at 128
// tokens is one of the figures DecodeGEMMShare is fitted to
// (decodeShareFit); the H100's batch-64 rows were known gaps before it
// (-22.8% and -24.8%).
var argonneSets = []argonneSet{
	{"a100-40gb", "llama-3.1-8b-instruct", "meta-llama/Meta-Llama-3-8B", 8192, []argonneRun{
		{128, 1, "1.8262675674632192"}, {512, 1, "7.386440095491707"}, {2048, 1, "30.065415356308222"},
		{128, 16, "2.1914984323084354"}, {128, 32, "2.611632961779833"}, {128, 64, "3.288689749315381"},
		{1024, 16, "19.914405192248523"}, {1024, 32, "26.35549126006663"}, {1024, 64, "36.16201884392649"},
	}},
	{"h100-80gb", "llama-3.1-8b-instruct", "meta-llama/Meta-Llama-3-8B", 8192, []argonneRun{
		{128, 1, "0.9939330658666686"}, {512, 1, "4.026788353533334"}, {2048, 1, "16.3022289824"},
		{128, 16, "1.1650919041333434"}, {128, 32, "1.3065569956999903"},
		{1024, 16, "11.024687729899984"}, {1024, 32, "13.05667387020006"},
		{128, 64, "1.6882608920667432"}, {1024, 64, "18.808667415499894"},
	}},
}

func argonneMeasured(gpu, hfModel string) (hardware, measured, version string) {
	if gpu == "a100-40gb" {
		return argonneA100, hfModel + " fp16, 1x A100 40GB (ALCF Polaris, HGX), offline LLM class",
			"not stated (the directory's requirements: a torch-2.4-era release, committed 2024-09-20)"
	}
	return argonneH100, hfModel + " fp16, 1x H100 80GB HBM3 SXM (ALCF JLSE), vLLM's benchmark_latency.py",
		"not stated (pip install vllm before 2024-09-20, so before 0.6.2)"
}

// argonneTTFTSource is the file of the prefill rows: the runs with one
// output token, whose end_latency column is the same configuration's
// 1,024-token answer (All_results.csv's row, to the digit).
const argonneTTFTSource = argonneRepo + "Plots/Fig_22/all_results_TTFT_ITL.csv (row \"%s,1,vLLM,meta-llama/Meta-Llama-3-8B," +
	"1024,1,16,%s,...\": Input Length, Output Length, Batch Size, TTFT Latency in s)"

// argonneTTFT is the batch's time to its first tokens: 16 prompts of 1,024
// tokens answered with one token each, i.e. the prefill steps alone.
var argonneTTFT = map[string]string{"a100-40gb": "1.0420479719759896", "h100-80gb": "0.42566500790417194"}

// dcFigures are the rows, all held out but the two 16 x 1,024-token
// prefills: run offline, they pay no HTTP request overhead, so they
// measure the GEMMs' rate with the least of the fitted CPU costs, and the
// efficiency fit (archEfficiency) takes them beside LambdaLabs' rows. What
// they say (go test ./engine/perf -run Fidelity -v): batch 1 is within
// 1.8% on the A100 at every length and 5.9-6.7% under on the H100 (0.5
// ms a step); the A100's prefill alone is 74% of 312 TFLOP/s where
// LambdaLabs' vLLM 0.6.0 rows on the 80 GB card alone give 63% (+16.6%
// at 63%, +8.2% at the fitted 68%), the H100's +2.2%. Before V0's
// per-sequence cost (version.go) the model fell short by a
// step cost that grows with the batch: 1.1 ms a step at batch 16 to 4.7
// (n = 128) and 5.1 ms (1,024) at batch 64 on the A100, 1.2-1.9 ms at 16
// to 3.0 and 4.6 ms at 64 on the H100, i.e. ~40-110 us per sequence per
// decode step, the model 6-25% under. The same shape is in vLLM 0.20.1's
// A100 40GB runs (a100v2Figures: 12.4 ms at batch 1, 15.2 at 64, where
// the model moves 0.3 ms), so it is not only this V0 generation's host
// work: the model's decode step grows too little with the batch.
func dcFigures() []CitedFigure {
	var figs []CitedFigure
	for _, gpu := range []string{"a100-40gb", "h100-80gb"} {
		hw, measured, version := argonneMeasured(gpu, "meta-llama/Meta-Llama-3-8B")
		figs = append(figs, CitedFigure{
			GPU: gpu, Model: "llama-3.1-8b-instruct", Quantity: fitQuantityTTFT,
			Config: "LLM.generate,batch=16,input=1024,output=1,two-8192-token-prefill-steps",
			Real:   argonneSeconds(argonneTTFT[gpu]) * 1000, Unit: "ms",
			Source: fmt.Sprintf(argonneTTFTSource, hw, argonneTTFT[gpu]),
			VLLM:   version, Measured: measured, HeldOut: false,
			Cfg:  argonneConfig(8192),
			Eval: func(p *Perf) float64 { return argonnePrefill(p, 16, 1024) },
		})
	}
	for _, set := range argonneSets {
		hw, measured, version := argonneMeasured(set.gpu, set.hfModel)
		for _, r := range set.runs {
			n, batch := r.n, r.batch
			config := fmt.Sprintf("LLM.generate,batch=%d,input=%d,output=%d,E2E", batch, n, n)
			if batch == 64 && n == 128 {
				config += "," + decodeShareFit
			}
			if set.gpu == "a100-40gb" && batch == 32 && n == 128 {
				config += "," + v0SeqFit
			}
			figs = append(figs, CitedFigure{
				GPU: set.gpu, Model: set.model, Quantity: fitQuantityDecode,
				Config: config,
				Real:   argonneSeconds(r.latency) * 1000, Unit: "ms",
				Source: fmt.Sprintf(argonneAllSource, hw, set.hfModel, n, batch, r.latency),
				VLLM:   version, Measured: measured, HeldOut: true,
				Cfg:  argonneConfig(set.maxLen),
				Eval: func(p *Perf) float64 { return argonneE2E(p, batch, n) },
			})
		}
	}
	return figs
}

// argonneSeconds parses a latency as the files print it.
func argonneSeconds(s string) float64 {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		panic(err) // a typo in the tables above
	}
	return v
}
