package perf

import "fmt"

// Cited figures for the kinds issue 21 still lacked per profile: the KV
// cache at several --gpu-memory-utilization values on the L4, and a dense
// model's batch-1 decode on one H200 (and its larger batches up to 512, with
// the H100 twin from the same runs).
//
// H200 and H100 (pacesource): a graduate course's hands-on lab pages
// (github.com/hungchun0201/agentic-ai-survey, ai-infra-basics/hands-on/,
// "real GPU experiment data" added in c2d11c0, 2026-04-12), run on Georgia
// Tech's PACE Phoenix cluster. Week 2's "Latency vs Batch Size (in=512,
// out=128)" table is vLLM's benchmark_latency (offline LLM.generate, the
// page's step 3: `benchmark_latency.py --model
// meta-llama/Llama-3.1-8B-Instruct --input-len 512 --output-len 128
// --batch-size B`), Llama-3.1-8B-Instruct in bf16, --max-model-len 4096,
// on one "NVIDIA H200 141GB HBM3e" and one "NVIDIA H100 80GB HBM3". The
// page's text reads the batch-1 rows as 5.86 and 7.06 ms a token, i.e.
// the latency over the 128 output tokens. The vLLM the labs ran is not
// pinned: the setup page tells students to `pip install vllm==0.6.3`,
// but every results page reads its code from "vllm-continuum", the
// cluster's vLLM fork (week 0: torch 2.8.0, transformers < 5; the code
// excerpts are V1's vllm/v1/worker/gpu_model_runner.py), so the rows say
// "not stated" and the model keeps its V1 defaults.
//
// How the model prices a row: benchmark_latency repeats the same dummy
// prompts every iteration, and V1 keeps prefix caching on by default, so
// after the warm-up iterations every prompt is found in the prefix cache
// and its prefill step computes one token per sequence. The same labs show
// it: week 3's "prefill" sweep (batch 1, output 1) takes 12.14 ms for
// 4,096 tokens on the H200, which would need ~5.4 PFLOP/s for the 66
// TFLOP of a real prefill, over five times the GPU's 989 dense; those
// rows are not used. So a row is one step of B one-token prefills at 511
// cached tokens, then 127 decode steps of B sequences at context 513 to
// 639 (pacesLatency). Uncached, the prefill would add 0.8% at batch 1 and
// 4.6% at batch 32 on the H200.
//
// Week 3's "Decode Batch Sweep (real, in=128, out=64)" is the same
// benchmark_latency at batch 1 to 512, printed as ms a token: the latency
// over the 64 output tokens, as week 2's text reads its own table (750.6
// ms / 128 = 5.86). Its batch 1, 64, 128, 256 and 512 rows are read
// (pacesSweepFigures; 4 and 16 repeat week 2's). At 512 the prompts' 65k
// tokens, uncached, would take longer than the whole row's 1.9 s, so
// those too were prefix-cached. What they show (go test ./engine/perf
// -run Fidelity -v): within 5% up to batch 64 and within 8% at 128 to
// 512 on both GPUs, at a context of ~160 tokens where KV reads are a few
// percent of the step, so the decode GEMMs' FLOP time at large batches
// (DecodeGEMMShare, fitted to batch-64 rows, and the architecture's MFU)
// sets them, not the weights' reads. At the share of 0.79 they were +8%
// to +17% there, before V0SeqOverhead (version.go) took the V0 rows'
// per-sequence host cost off the share's fit.
//
// Not used from the same pages: the A100 rows (an A100 80GB PCIe, 1.935
// TB/s, which has no profile; the a100-80gb profile is the SXM part) and
// the L40S (no profile); week 3's "prefill" sweep (prefix-cached, above);
// week 13's tensor-parallel tables (Llama-3.1-70B at TP 2 on two H100s
// and two H200s and at TP 4 on four H100s, per-token latency at batch 1,
// 4 and 8, the H200's beside its iteration latency, 1.56 s at batch 1;
// Llama-3.1-8B at TP 2 on two H100s, 448.7-542.5 ms at batch 1-32): no
// table states its input length, and the output, 64, follows only from
// latency over per-token latency (1.56 s / 24.43 ms), not read.
// L4 (l4KVSource): a data-analysis agent's notes on moving from Ollama
// to vLLM (github.com/floSa/data-analyst-agent docs/VLLM.md, "Banc
// d'essai du 2026-09-03"): `vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ
// --max-model-len 32768 --enable-auto-tool-choice --tool-call-parser
// hermes` from vllm/vllm-openai:latest (vLLM 0.28.0) on an "NVIDIA L4
// 23 034 Mio" at three --gpu-memory-utilization values: 0.45 and 0.60
// start with 61,776 and 123,664 tokens of KV cache (3.3 and 6.6 GiB, at
// this model's 56 KiB a token), 0.35 refuses to start because "the
// available KV cache memory (1.1 GiB)" cannot hold one 32,768-token
// request. The seed's model (the default profile's) on the L4. Another
// process (an Ollama server) held 4,902 MiB of the GPU throughout
// ("inchangés du début à la fin", §6); 0.28 sizes the budget from the
// device's total (utilization x 22.04 GiB, the notes' 9.92 and 13.22 GiB)
// and counts what free memory dropped by since its worker's first
// snapshot, taken with the other process already there, so that process
// moves nothing but the free-memory check (17.05 GiB free, above every
// budget tried), as the engine has it. The notes give the
// profile's parts: 5.58 GiB of weights and non-torch, 1.04 GiB peak
// activation, 0.53 GiB of CUDA graphs, and the caches equal the budget
// less the first two (9.92 - 5.58 - 1.04 = 3.30): V1 captures the graphs
// after sizing the cache, as the engine does (memory.go). Their 0.35
// row's budget reads 8.06 GiB where 0.35 x 22.04 is 7.71 and 7.71 - 6.62
// is the 1.1 GiB the error names (8.06 is 0.35 x 23.034, the card's
// 23,034 MiB read as GiB), so the budget cell is not used. The
// 0.35 start-up failed at this context, so its row is evaluated at
// 16,384, which does not change the cache (the profile's batch is 2,048
// tokens whatever the context).
const l4KVSource = "github.com/floSa/data-analyst-agent @430a10cc docs/VLLM.md (§3.4 \"Ce que --max-model-len tient " +
	"réellement\": L4 23 034 Mio, vLLM 0.28.0, Qwen/Qwen2.5-7B-Instruct-AWQ, --max-model-len 32768; %s)"

// coldCompileFit marks, in their Config, the L4 rows
// coldCompilePeak028GiB (memory.go) is fitted to. What 0.28 keeps out of
// their cache, 6.62 GiB, splits in its log as 5.58 GiB "consumed memory
// (weights + non-torch)" and a 1.04 GiB "peak activation"
// (MemoryModelRunnerV2's accounting). The first is met from physical
// terms: 5.19 GiB of weights, 0.15 of V2's sampler buffers (256 requests x
// 152,064 token counts) and 0.19's 0.25 non-torch increase make 5.59. The
// second is not: Model Runner V2's profile peaks at 0.27 GiB (the
// forward over 2,048 tokens; its sampler after it, 0.23), the sort,
// Triton and FlashInfer samplers memory.go weighed do not run there, and
// awq_marlin adds a few MiB. What is left, 0.77 GiB over the forward, is
// a cold compile's scratch (vllm-project/vllm#54122, #54383 at 0.28.0):
// the notes' container mounts only the Hugging Face cache
// (`-v /home/ubuntu/.cache/huggingface:/root/.cache/huggingface`), so
// vLLM's torch.compile cache (/root/.cache/vllm) starts empty at every
// `docker run`, and each start took 80-110 s with the weights already on
// disk (§5.6). Its size is not derived: it is fitted to these three rows,
// which are then const-fit, not held out.
const coldCompileFit = "cold-compile-fit"

func l4KVFigures() []CitedFigure {
	cfg := func(util float64, maxLen int) Config {
		return Config{MaxModelLen: maxLen, GPUMemoryUtilization: util, MaxNumBatchedTokens: 2048, MaxNumSeqs: 256,
			NonTorchIncrease: true, Release: MemoryModelRunnerV2, ColdCompile: true}
	}
	base := CitedFigure{
		GPU: "l4-24gb", Model: DefaultModel, VLLM: "0.28.0",
		Measured: "Qwen/Qwen2.5-7B-Instruct-AWQ (awq_marlin), 1x L4 24GB shared with a 4,902 MiB process, vllm serve " +
			"--max-model-len 32768 --enable-auto-tool-choice --tool-call-parser hermes",
		HeldOut: true,
	}
	lo, mid, hi := base, base, base
	lo.Quantity, lo.Config, lo.Real, lo.Unit = fitQuantityKVGiB, "util=0.35,max-model-len=32768(refused),evaluated-at-16384,"+coldCompileFit, 1.1, "GiB"
	lo.Source = fmt.Sprintf(l4KVSource, "0,35: \"the available KV cache memory (1.1 GiB)\", start refused")
	lo.Cfg, lo.Eval = cfg(0.35, 16384), (*Perf).KVCacheGiB
	mid.Quantity, mid.Config, mid.Real, mid.Unit = fitQuantityKVTokens, "util=0.45,max-model-len=32768,"+coldCompileFit, 61776, "tokens"
	mid.Source = fmt.Sprintf(l4KVSource, "0,45: budget 9,92 Gio, cache KV 3,3 Gio, 61 776 tokens, 1,89x")
	mid.Cfg, mid.Eval = cfg(0.45, 32768), kvTokens
	hi.Quantity, hi.Config, hi.Real, hi.Unit = fitQuantityKVTokens, "util=0.60,max-model-len=32768,"+coldCompileFit, 123664, "tokens"
	hi.Source = fmt.Sprintf(l4KVSource, "0,60: budget 13,22 Gio, cache KV 6,6 Gio, 123 664 tokens, 3,77x")
	hi.Cfg, hi.Eval = cfg(0.60, 32768), kvTokens
	return []CitedFigure{lo, mid, hi}
}

const (
	pacesCommit = "c2d11c026caa815574326701a9a29b9fb508fbed"
	pacesSource = "github.com/hungchun0201/agentic-ai-survey @" + pacesCommit + " ai-infra-basics/hands-on/week-02.html " +
		"(\"Latency vs Batch Size (in=512, out=128)\" table, benchmark_latency.py; row \"%s (ms)\", bs=%d: %s)"
	pacesVLLM = "not stated (vllm-continuum, the cluster's vLLM fork: V1 engine, torch 2.8.0; the setup page pins 0.6.3)"
	// pacesInput and pacesOutput are the table's in and out.
	pacesInput, pacesOutput = 512, 128
)

// pacesLatencyAt is one benchmark_latency iteration, in ms, of batch
// prompts of input tokens whose tokens, all but the last, are in the
// prefix cache: one step of batch one-token prefills, then the decode
// steps of the rest of the output tokens.
func pacesLatencyAt(batch, input, output int) func(*Perf) float64 {
	return func(p *Perf) float64 {
		var s Step
		for range batch {
			s.AddPrefill(1, input-1)
		}
		return millis(p.StepTime(s) + decodeAfter(p, batch, input, output))
	}
}

// pacesGPU is one of the course's machines: the profile, the tables'
// row label and what the pages say ran.
type pacesGPU struct{ gpu, label, measured string }

var (
	pacesH200 = pacesGPU{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e"}
	pacesH100 = pacesGPU{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3"}
)

// pacesRow is one cell of a course table: a machine, the batch and the
// figure as printed, in ms.
type pacesRow struct {
	pacesGPU
	batch int
	ms    string
}

// pacesFigure is the held-out Llama-3.1-8B decode figure of row r; config
// and source are the table's, with the batch and the printed cell filled
// in from r, measured's suffix what the table adds to the machine.
func pacesFigure(r pacesRow, config, source, measured string, eval func(*Perf) float64) CitedFigure {
	return CitedFigure{
		GPU: r.gpu, Model: "llama-3.1-8b-instruct", Quantity: fitQuantityDecode,
		Config: config, Real: argonneSeconds(r.ms), Unit: "ms",
		Source:   fmt.Sprintf(source, r.label, r.batch, r.ms),
		VLLM:     pacesVLLM,
		Measured: "meta-llama/Llama-3.1-8B-Instruct bf16, 1x " + r.measured + " (PACE Phoenix)" + measured,
		HeldOut:  true,
		Cfg:      Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9},
		Eval:     eval,
	}
}

func pacesFigures() []CitedFigure {
	rows := []pacesRow{
		{pacesH200, 1, "750.6"}, {pacesH200, 4, "776.8"}, {pacesH200, 16, "838.4"}, {pacesH200, 32, "1012.1"},
		{pacesH100, 1, "903.4"}, {pacesH100, 16, "1016.5"}, {pacesH100, 32, "1176.7"},
	}
	figs := make([]CitedFigure, 0, len(rows))
	for _, r := range rows {
		config := fmt.Sprintf("benchmark_latency,batch=%d,input=%d(prefix-cached),output=%d,mean-E2E", r.batch, pacesInput, pacesOutput)
		figs = append(figs, pacesFigure(r, config, pacesSource, ", --max-model-len 4096",
			pacesLatencyAt(r.batch, pacesInput, pacesOutput)))
	}
	return figs
}

// pacesSweepSource is week 3's table at the commit of week 2's.
const pacesSweepSource = "github.com/hungchun0201/agentic-ai-survey @" + pacesCommit + " ai-infra-basics/hands-on/week-03.html " +
	"(\"Decode Batch Sweep (real, in=128, out=64)\" table, benchmark_latency; row \"%s ms/tok\", bs=%d: %s)"

// pacesSweepFigures are week 3's per-token rows: the model's value is its
// benchmark_latency iteration (pacesLatencyAt) over the 64 tokens out.
func pacesSweepFigures() []CitedFigure {
	const input, output = 128, 64
	rows := []pacesRow{
		{pacesH200, 1, "5.78"}, {pacesH200, 64, "8.37"}, {pacesH200, 128, "10.91"}, {pacesH200, 256, "16.47"}, {pacesH200, 512, "29.39"},
		{pacesH100, 1, "7.06"}, {pacesH100, 64, "9.81"}, {pacesH100, 128, "12.42"}, {pacesH100, 256, "17.87"}, {pacesH100, 512, "30.81"},
	}
	figs := make([]CitedFigure, 0, len(rows))
	for _, r := range rows {
		iteration := pacesLatencyAt(r.batch, input, output)
		config := fmt.Sprintf("benchmark_latency,batch=%d,input=%d(prefix-cached),output=%d,mean-E2E/%d", r.batch, input, output, output)
		figs = append(figs, pacesFigure(r, config, pacesSweepSource, "",
			func(p *Perf) float64 { return iteration(p) / output }))
	}
	return figs
}

// Searched on 2026-12-02, in vain (beside the lists in fidelity_figures.go,
// fidelity_dc.go, fidelity_small.go, fidelity_h200b.go and docs/engine.md):
//
//   - One request's TTFT at several prompt lengths (A10G, L4, H200, a 7-8B
//     model on the A100/H100): the same course's week-3 "prefill" sweep
//     (prefix-cached, above); its week-5/8/13 tables (whole-request
//     latencies at unstated output lengths, ShareGPT at 6 requests/s);
//     aws-samples/foundation-model-benchmarking-tool's reports (an A10G
//     g5.2xlarge run gives 0.64 s for a 3,424-token prompt and 15 tokens
//     out, under what the prompt's 55 TFLOP alone need on the card; the
//     serving container is DJL's, not always vLLM); Tenstorrent's GPU
//     reference tables (Llama-3.2-90B-Vision on 4 H100s, no profile;
//     DeepSeek-R1 on 8 H100s; the rest were rejected before);
//     crazyguitar/pysheeet's vLLM prefill sweep (commands, no results);
//     ArianFotouhi/inferenceOptimizationLLMs (opt-125m, one prompt);
//     datacrunch-research/h200-benchmarks (SGLang only); vLLM issues on
//     V1-vs-V0 TTFT (ShareGPT or 70B at tensor parallel 4); blog and
//     vendor pages (Modal, Azure, Ori, gpustack, Lambda: one length or
//     concurrency sweeps).
//   - KV cache at several utilizations on the A10G and the H200: vLLM's V0
//     "total_gpu_memory" and V1 "Free memory on device (X/Y GiB) on
//     startup" lines by each card's total and budget. The H200 hits are
//     DeepSeek-R1/V4, Qwen3.5 and Nemotron-H (hybrid or MLA models without
//     a profile) or refused starts; the L4's besides the rows above are a
//     Qwen3.5-4B hybrid (vLLM 0.29) and a Qwen3-8B under a custom
//     quantization plugin beside a memory hog; a V0 log at 22.06 GiB
//     (Qwen2.5-Math-1.5B, vLLM 0.7.2) names no GPU.

// figsFigures are this file's rows.
func figsFigures() []CitedFigure {
	return append(append(pacesFigures(), pacesSweepFigures()...), l4KVFigures()...)
}
