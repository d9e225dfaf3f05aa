package perf

import "fmt"

// Low-concurrency MoE decode figures: what one, two, four or eight
// sequences of a mixture-of-experts model cost a step in vLLM, the regime
// where a step reads only the routed experts and its fixed costs weigh
// most. All held out.
//
// Mixtral-8x7B on 2, 4 and 8 H100s and on 2 A100s: LambdaLabsML/vllm-benchmark's
// prompt_10 runs (vLLM 0.6.0, the same files as fidelity_parallel.go's
// median-TPOT rows). vLLM 0.6.0 streamed ten tokens a chunk
// (fidelityFigures' doc), so a stretch of one request's ITLs after every
// other request has ended is its batch-1 decode, ITL/10, as lambdaFigures
// reads the dense models'. At TP 4 and 8 request 5 (prompt 29 tokens, 928
// generated) runs on alone after request 1 ends (529 tokens at TP 4, 717
// at TP 8); before that the two run together (a batch of 2). At TP 2 (H100
// and A100 alike) request 1 generates 971 tokens and request 5 928, so the
// two run together from request 2's end (273) to request 5's (a batch of
// 2, read), and request 1 runs alone for four chunks only (not read).

// gpt-oss-20b on one H200 at 4 and 8 in flight: the same gpu_conc run as
// fidelity_h200.go's batch-1 row (gpuConcSource), its
// benchmark_concurrency_4.json and _8.json, read as that row is:
// 1 / median_output_speed_per_query. Each request streams ~1,000 tokens
// after a ~1,000-token prompt with 4 (8) in flight, so a step decodes 4
// (8) sequences at a mean context of ~1,500 tokens. The same repository's
// B200 run (b200/benchmark_concurrency_1.json and _4.json @31a1244: 4.55
// and 5.77 ms a token) is as fast at one in flight as the H200 (4.53) and
// slower at four (5.41), on a GPU with 1.7x its bandwidth: the run's step
// is not set by the GPU's bandwidth (see gptoss.go on what is modelled).

// Searched and not used (2026-12-02): gpustack's performance-lab pages for
// gpt-oss-20b and -120b on A100 and H100 (bursts of 100-1,000 requests
// only; the 20b H100 ones are fidelity_moe.go's); vLLM PRs quoting
// benchmark_moe.py kernel times at batch 1 (#39902 gpt-oss-120b shapes on
// an H100, 89 us; #31448 Qwen3 E=128 on a B200, 39.6 us; #44830
// Qwen3-Next FP8 on an H100, 29.5 us: one fused-MoE call of the bf16/fp8
// Triton kernel, not a serving step nor the MXFP4 path); SemiAnalysis
// InferenceX's gpt-oss runs (gpt-oss-120b, no profile; Hopper runs with
// VLLM_MXFP4_USE_MARLIN=1; its issue 828 sweep starts at 4 in flight and
// TP 2); gpu_conc's B200, H100 PCIe and MI300X runs (no profile; used as
// evidence in gptoss.go); vLLM issue 22331 (A100 gpt-oss with the Triton
// attention backend forced, a 120b figure only); Tenstorrent's
// Qwen3-30B-A3B "A100" sweep (already in the table, exempt); devforth.io's
// gpt-oss-20b L4/L40S/H100 write-ups (only their introductions are
// stored, no figure readable).

// lambdaMoEDecode is one read of a Mixtral run's ITLs.
type lambdaMoEDecode struct {
	gpu                string // profile; its LambdaLabs directory is gpuDir's
	tp, batch, context int
	itl                float64 // median ms per 10-token chunk
	read               string
	why                string
}

// lastChunkOut: a read that leaves out request 5's last ITL, the 8-token
// chunk that ends its 928 tokens.
const lastChunkOut = ", its last (an 8-token chunk) left out"

// tp8BatchOneWhy is why the TP 8 run's batch-1 stretch is printed, not
// judged: the same request's steps got slower when the other request left.
const tp8BatchOneWhy = "not a GPU-set step: request 5's 20 chunks alone (5.31 ms a token) are slower than its 44 chunks " +
	"just before beside request 1 (4.95 ms, a batch of 2 that reads more experts and KV); the model meets that batch-2 " +
	"stretch within 6.2%"

var lambdaMoEDecodes = []lambdaMoEDecode{
	{"h100-80gb", 4, 1, 29 + 729, 50.098, "median of the 39 ITLs of request 5 (928 tokens) after request 1 (529) ended" + lastChunkOut, ""},
	{"h100-80gb", 4, 2, 29 + 400, 68.280, "median of the 25 ITLs of requests 1 and 5 alone, after request 2 (273) ended", ""},
	{"h100-80gb", 8, 1, 29 + 823, 53.103, "median of the 20 ITLs of request 5 (928 tokens) after request 1 (717) ended" + lastChunkOut, tp8BatchOneWhy},
	{"h100-80gb", 8, 2, 29 + 500, 49.516, "median of request 5's 44 ITLs beside request 1 alone, after request 2 (273) ended", ""},
	{"h100-80gb", 2, 2, 29 + 600, 103.628, "median of request 5's 64 ITLs beside request 1 alone, after request 2 (273) ended" + lastChunkOut, ""},
	{"a100-80gb", 2, 2, 29 + 600, 152.880, "median of request 5's 64 ITLs beside request 1 alone, after request 2 (273) ended" + lastChunkOut, ""},
}

// gpuDir names a profile's GPU as LambdaLabs' result directories do.
var gpuDir = map[string]string{"h100-80gb": "H100-80GB-SXM", "a100-80gb": "A100-80GB-SXM"}

// gpuConcLevel is one concurrency level of the gpu_conc H200 run.
type gpuConcLevel struct {
	inFlight int
	speed    float64 // median_output_speed_per_query, tokens/s
}

var gpuConcLevels = []gpuConcLevel{{4, 184.7507}, {8, 162.0575}}

func moe2Figures() []CitedFigure {
	var figs []CitedFigure
	for _, d := range lambdaMoEDecodes {
		batch, context := d.batch, d.context
		gpus := fmt.Sprintf("%dx%s", d.tp, gpuDir[d.gpu])
		figs = append(figs, CitedFigure{
			GPU: d.gpu, Model: "mixtral-8x7b-instruct", Quantity: fitQuantityDecode,
			Config: fmt.Sprintf("tp=%d,batch=%d,context~%d,ITL/10", d.tp, batch, context),
			Real:   d.itl / 10, Unit: "ms",
			Source: fmt.Sprintf("%s%s/%s_tp%d_len2048.json (itls: %s)", lambdaRepo, gpus, mixtral, d.tp, d.read),
			VLLM:   "0.6.0", Measured: fmt.Sprintf("Mixtral-8x7B-Instruct-v0.1 bf16, %s, tensor parallel %d", gpus, d.tp),
			HeldOut: true, Why: d.why,
			Cfg: Config{MaxModelLen: 2048, GPUMemoryUtilization: lambdaUtil, MaxNumSeqs: lambdaSeqs,
				TensorParallelSize: d.tp},
			Eval: func(p *Perf) float64 { return millis(decodeStep(p, batch, context)) },
		})
	}
	for _, l := range gpuConcLevels {
		n := l.inFlight
		figs = append(figs, CitedFigure{
			GPU: "h200-141gb", Model: "gpt-oss-20b", Quantity: fitQuantityDecode,
			Config: fmt.Sprintf("batch=%d,context~1000+0..999,1/median-output-speed", n),
			Real:   1000 / l.speed, Unit: "ms",
			Source: fmt.Sprintf("github.com/sariekr/gpu_conc H200/benchmark_concurrency_%d.json @995b1948 (concurrency.py, "+
				"as the batch-1 row; %d in flight) (median_output_speed_per_query %.2f tokens/s)", n, n, l.speed),
			VLLM:     "not stated (RUNPOD_GUIDE.md: pip install vllm, unpinned; the run is of 2025-08-14)",
			Measured: "openai/gpt-oss-20b (MXFP4 experts, bf16 rest), 1x H200 141GB, server flags not recorded (taken as defaults), client on the same pod",
			HeldOut:  true,
			Cfg:      Config{GPUMemoryUtilization: 0.9},
			Eval:     func(p *Perf) float64 { return millis(decodeStep(p, n, 1500)) },
		})
	}
	return figs
}
