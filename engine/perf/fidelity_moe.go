package perf

import (
	"fmt"
	"sort"
	"time"
)

// gpustackSource is gpustack's performance-lab page for gpt-oss-20b on
// H100: vLLM v0.11.0 started as `vllm serve openai/gpt-oss-20b` (every
// flag at its default: one GPU, --gpu-memory-utilization 0.9, chunked
// prefill of 8,192 tokens a step, 1,024 sequences), then `vllm bench serve
// --backend openai-chat --endpoint /v1/chat/completions --dataset-name
// random --random-input-len L --random-output-len O --num-prompts N` (no
// --request-rate: all N sent at once; no --ignore-eos, so answers end at
// the model's end of text), its "Baseline benchmark results" block.
const gpustackSource = "github.com/gpustack/gpustack docs/performance-lab/gpt-oss-20b/h100.md (commit 7b50d506, " +
	"\"Other Benchmark Cases\", baseline `vllm serve openai/gpt-oss-20b`, random dataset, Median TTFT and Median TPOT)"

// burstRun is one of those runs: N requests of the same prompt length at
// once; its generated tokens over N is each request's answer here (the
// page gives no distribution).
type burstRun struct {
	requests, inputTokens, generated int // N, "Total input tokens", "Total generated tokens"
	ttft, tpot                       float64
	fit                              bool // the run MXFP4MoEGEMMRate is fitted to
}

var burstRuns = []burstRun{
	{500, 1999249, 52309, 30820.97, 225.55, true},
	{500, 999120, 47022, 16363.96, 159.20, false},
	{100, 3200000, 9350, 53539.25, 273.86, false},
}

// moeBurstFigures are gpt-oss-20b's judged TTFT and TPOT: both are set by
// how fast one H100 prefills the burst (the TTFT median is the time to
// prefill half the prompts, the TPOT median a decode step that carries a
// full chunk of someone else's prompt), so they hold the MoE prefill
// (MXFP4 experts, sliding-window attention) and the scheduler's chunking
// against vLLM, not batch-1 decode.
func moeBurstFigures() []CitedFigure {
	var figs []CitedFigure
	for _, r := range burstRuns {
		in := (r.inputTokens + r.requests/2) / r.requests
		out := (r.generated + r.requests/2) / r.requests
		n := r.requests
		fit := ""
		if r.fit {
			fit = "," + mxfp4Fit
		}
		base := CitedFigure{
			GPU: "h100-80gb", Model: "gpt-oss-20b", Unit: "ms", HeldOut: true,
			Source: gpustackSource, VLLM: "0.11.0",
			Measured: "openai/gpt-oss-20b (MXFP4 experts, bf16 attention), 1x H100, vllm serve defaults",
			Cfg:      Config{GPUMemoryUtilization: 0.9},
		}
		ttft, tpot := base, base
		ttft.Quantity, ttft.Real = fitQuantityTTFT, r.ttft
		ttft.Config = fmt.Sprintf("%d-at-once,input=%d,output~%d,median%s", n, in, out, fit)
		ttft.Eval = func(p *Perf) float64 { t, _ := burstMedians(p, n, in, out); return millis(t) }
		tpot.Quantity, tpot.Real = fitQuantityDecode, r.tpot
		tpot.Config = fmt.Sprintf("%d-at-once,input=%d,output~%d,median-TPOT%s", n, in, out, fit)
		tpot.Eval = func(p *Perf) float64 { _, t := burstMedians(p, n, in, out); return millis(t) }
		figs = append(figs, ttft, tpot)
	}
	return figs
}

// burstReq is one request of a burst replay.
type burstReq struct {
	left, gen       int // prompt tokens not yet prefilled, tokens generated
	admitted        bool
	first, finished time.Duration
}

// burstMedians replays n requests of in prompt tokens and out answer
// tokens arriving together, as vLLM V1's scheduler runs them: each step
// decodes every running request that has its first token, then fills the
// rest of MaxNumBatchedTokens with prompt chunks, first-come first-served,
// admitting a request while MaxNumSeqs and the KV cache (its prompt and
// answer) allow. A request's first token comes with the step that ends
// its prompt; TPOT is (finish - first) / (out - 1), as vllm bench
// reports it. It returns the median TTFT and median TPOT.
func burstMedians(p *Perf, n, in, out int) (ttft, tpot time.Duration) {
	reqs := make([]burstReq, n)
	for i := range reqs {
		reqs[i].left = in
	}
	cfg := p.Config()
	now, done, running, kvFree := p.RequestOverhead(), 0, 0, p.KVCacheTokens()
	for done < n {
		var s Step
		var decoding, ending []int
		for i := range reqs {
			if r := &reqs[i]; r.admitted && r.left == 0 && r.gen < out {
				decoding = append(decoding, i)
				s.DecodeSeqs++
				s.ContextTokens += in + r.gen
			}
		}
		budget := cfg.MaxNumBatchedTokens - s.DecodeSeqs
		for i := range reqs {
			r := &reqs[i]
			if budget <= 0 {
				break
			}
			if r.left == 0 {
				continue
			}
			if !r.admitted {
				if running >= cfg.MaxNumSeqs || kvFree < in+out {
					break
				}
				r.admitted, running, kvFree = true, running+1, kvFree-(in+out)
			}
			c := min(r.left, budget)
			s.AddPrefill(c, in-r.left)
			r.left -= c
			budget -= c
			if r.left == 0 {
				ending = append(ending, i)
			}
		}
		now += p.StepTime(s)
		for _, i := range ending {
			reqs[i].first, reqs[i].gen = now, 1
		}
		for _, i := range decoding {
			r := &reqs[i]
			if r.gen++; r.gen == out {
				r.finished, running, kvFree, done = now, running-1, kvFree+in+out, done+1
			}
		}
		if out <= 1 {
			done += len(ending)
		}
	}
	ttfts := make([]float64, n)
	tpots := make([]float64, n)
	for i, r := range reqs {
		ttfts[i] = float64(r.first)
		tpots[i] = float64(r.finished-r.first) / float64(max(out-1, 1))
	}
	return time.Duration(median(ttfts)), time.Duration(median(tpots))
}

// median is the middle of xs (the mean of the two middle ones for an even
// count); it sorts xs.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}
