package perf

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A cited figure names how the model computes its quantity as a method
// and its parameters, "decode-step batch=8 context=1024": methods holds
// each method's parameters and function. Every method may also take
// per=K, which divides its value by K (a run's time over its K tokens).
var methods = map[string]method{
	// request-ttft: one prompt alone, its first cached tokens in the
	// prefix cache: RequestOverhead, then one step per chunk of the step
	// budget over the rest.
	"request-ttft": {[]string{"prompt", "cached"}, func(p *Perf, a methodArgs) float64 {
		return millis(requestTTFT(p, a.int("prompt"), a.int("cached")))
	}},
	// ttft-first-cold: the mean TTFT of requests repeats of one prompt,
	// the first uncached, the rest finding cached tokens in the cache.
	"ttft-first-cold": {[]string{"prompt", "cached", "requests"}, func(p *Perf, a methodArgs) float64 {
		n, r := a.int("prompt"), a.int("requests")
		return (millis(requestTTFT(p, n, 0)) + float64(r-1)*millis(requestTTFT(p, n, a.int("cached")))) / float64(r)
	}},
	// mean-ttft: the mean TTFT of prompts sent one at a time, each with
	// cached tokens in the cache.
	"mean-ttft": {[]string{"prompts", "cached"}, func(p *Perf, a methodArgs) float64 {
		c := a.int("cached")
		return meanTTFT(p, a.ints("prompts"), func(int) int { return c })
	}},
	// mean-ttft-full-blocks: as mean-ttft, each prompt's whole KV blocks
	// cached (a repeat of it; the last token is always computed).
	"mean-ttft-full-blocks": {[]string{"prompts"}, func(p *Perf, a methodArgs) float64 {
		return meanTTFT(p, a.ints("prompts"), fullBlocksCached)
	}},
	// prefill-ttft: prompts that arrive together and share one prefill
	// step (Perf.PrefillTTFT).
	"prefill-ttft": {[]string{"prompts"}, func(p *Perf, a methodArgs) float64 {
		return millis(p.PrefillTTFT(a.ints("prompts")...))
	}},
	// prefill-beside-decode: one prompt prefilled in chunks of the step
	// budget less one token, each step beside one decoding sequence of
	// rider-context tokens (a chunked-prefill run with a request ahead).
	"prefill-beside-decode": {[]string{"prompt", "rider-context"}, func(p *Perf, a methodArgs) float64 {
		return prefillBesideDecode(p, a.int("prompt"), a.int("rider-context"))
	}},
	// whole-prompt-prefill: batch prompts of input tokens, prefilled whole
	// as many per step as the step budget holds (V0 without chunked
	// prefill).
	"whole-prompt-prefill": {[]string{"batch", "input"}, func(p *Perf, a methodArgs) float64 {
		return wholePromptPrefill(p, a.int("batch"), a.int("input"))
	}},
	// offline-e2e: whole-prompt-prefill, then the output - 1 decode steps
	// of the whole batch (an offline LLM.generate call).
	"offline-e2e": {[]string{"batch", "input", "output"}, func(p *Perf, a methodArgs) float64 {
		b, n := a.int("batch"), a.int("input")
		return wholePromptPrefill(p, b, n) + millis(decodeAfter(p, b, n, a.int("output")))
	}},
	// bench-latency: one iteration of vLLM's benchmark_latency: one
	// prefill step of the batch's prompts, then its decode steps.
	"bench-latency": {[]string{"batch", "input", "output"}, func(p *Perf, a methodArgs) float64 {
		b, n := a.int("batch"), a.int("input")
		d := p.StepTime(Step{PrefillTokens: b * n, PrefillSeqs: b})
		return millis(d + decodeAfter(p, b, n, a.int("output")))
	}},
	// bench-latency-cached: bench-latency whose prompts are in the prefix
	// cache but their last token: one step of batch one-token prefills.
	"bench-latency-cached": {[]string{"batch", "input", "output"}, func(p *Perf, a methodArgs) float64 {
		b, n := a.int("batch"), a.int("input")
		var s Step
		for range b {
			s.AddPrefill(1, n-1)
		}
		return millis(p.StepTime(s) + decodeAfter(p, b, n, a.int("output")))
	}},
	// decode-step: one decode step of batch sequences of context tokens.
	"decode-step": {[]string{"batch", "context"}, func(p *Perf, a methodArgs) float64 {
		return millis(decodeStep(p, a.int("batch"), a.int("context")))
	}},
	// mean-decode-step: the mean of one-step decodes at each context.
	"mean-decode-step": {[]string{"batch", "contexts"}, func(p *Perf, a methodArgs) float64 {
		b, cs := a.int("batch"), a.ints("contexts")
		var sum float64
		for _, c := range cs {
			sum += millis(decodeStep(p, b, c))
		}
		return sum / float64(len(cs))
	}},
	// decode-mean: the mean step of a batch's output - 1 decode steps
	// after prompts of prompt tokens.
	"decode-mean": {[]string{"batch", "prompt", "output"}, func(p *Perf, a methodArgs) float64 {
		out := a.int("output")
		return millis(decodeAfter(p, a.int("batch"), a.int("prompt"), out)) / float64(out-1)
	}},
	// llmperf-itl: llmperf's inter-token latency, a request's E2E over
	// its output tokens, in a closed loop of batch users: its TTFT, one
	// prompt-sized prefill step of each other user's next request (no
	// chunked prefill), and its decode steps at the mid-answer context.
	"llmperf-itl": {[]string{"batch", "prompt", "output"}, func(p *Perf, a methodArgs) float64 {
		b, n, out := a.int("batch"), a.int("prompt"), a.int("output")
		others := p.StepTime(Step{PrefillTokens: n, PrefillSeqs: 1})
		e2e := millis(requestTTFT(p, n, 0)) + float64(b-1)*millis(others) +
			float64(out-1)*millis(decodeStep(p, b, n+out/2))
		return e2e / float64(out)
	}},
	// median-tpot: the median TPOT of requests sent at once, prompts[i]
	// in and outputs[i] out, every step decoding all unfinished ones.
	"median-tpot": {[]string{"prompts", "outputs"}, func(p *Perf, a methodArgs) float64 {
		return millis(medianTPOT(p, a.ints("prompts"), a.ints("outputs")))
	}},
	// burst-ttft and burst-tpot: the median TTFT and TPOT of requests
	// sent at once (burstMedians: admission by the KV cache and
	// --max-num-seqs, chunked prefill).
	"burst-ttft": {[]string{"requests", "input", "output"}, func(p *Perf, a methodArgs) float64 {
		t, _ := burstMedians(p, a.int("requests"), a.int("input"), a.int("output"))
		return millis(t)
	}},
	"burst-tpot": {[]string{"requests", "input", "output"}, func(p *Perf, a methodArgs) float64 {
		_, t := burstMedians(p, a.int("requests"), a.int("input"), a.int("output"))
		return millis(t)
	}},
	"kv-tokens":      {nil, func(p *Perf, _ methodArgs) float64 { return float64(p.KVCacheTokens()) }},
	"kv-gib":         {nil, func(p *Perf, _ methodArgs) float64 { return p.KVCacheGiB() }},
	"graph-gib":      {nil, func(p *Perf, _ methodArgs) float64 { return p.Startup().GraphGiB }},
	"activation-gib": {nil, func(p *Perf, _ methodArgs) float64 { return p.MemoryProfile().Activations() }},
}

// method is one way of computing a figure: its parameters, all required.
type method struct {
	params []string
	eval   func(*Perf, methodArgs) float64
}

// listParams are the parameters that take a comma list; the others take
// one integer, positive but for cached.
var listParams = map[string]bool{"prompts": true, "outputs": true, "contexts": true}

// methodArgs are a method's parameters: integers or lists of them.
type methodArgs map[string][]int

func (a methodArgs) int(k string) int    { return a[k][0] }
func (a methodArgs) ints(k string) []int { return a[k] }

// parseMethod reads "name k=v ..." (v an integer or a comma list of
// them) into the function that computes the figure.
func parseMethod(s string) (func(*Perf) float64, error) {
	name, kvs, err := splitFields(s)
	if err != nil {
		return nil, err
	}
	m, ok := methods[name]
	if !ok {
		return nil, fmt.Errorf("unknown method %q (known: %s)", name, strings.Join(sortedKeys(methods), ", "))
	}
	args := methodArgs{}
	for k, v := range kvs {
		if k != "per" && !slices.Contains(m.params, k) {
			return nil, fmt.Errorf("method %s: unknown parameter %q (takes %s)", name, k, strings.Join(append(m.params, "per"), ", "))
		}
		for _, x := range strings.Split(v, ",") {
			n, err := strconv.Atoi(x)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("method %s: %s=%s: want non-negative integers", name, k, v)
			}
			args[k] = append(args[k], n)
		}
		if !listParams[k] && len(args[k]) != 1 {
			return nil, fmt.Errorf("method %s: %s=%s: want one integer", name, k, v)
		}
		if !listParams[k] && k != "cached" && args[k][0] == 0 {
			return nil, fmt.Errorf("method %s: %s=0: want a positive integer", name, k)
		}
	}
	for _, k := range m.params {
		if _, ok := args[k]; !ok {
			return nil, fmt.Errorf("method %s: missing parameter %s", name, k)
		}
	}
	if o, ok := args["outputs"]; ok && len(o) != len(args["prompts"]) {
		return nil, fmt.Errorf("method %s: %d outputs for %d prompts", name, len(o), len(args["prompts"]))
	}
	if per, ok := args["per"]; ok {
		k := float64(per[0])
		return func(p *Perf) float64 { return m.eval(p, args) / k }, nil
	}
	return func(p *Perf) float64 { return m.eval(p, args) }, nil
}

// splitFields splits "name k=v k=v" into the name and its pairs; a key
// given twice is an error.
func splitFields(s string) (string, map[string]string, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return "", nil, fmt.Errorf("empty")
	}
	kvs := map[string]string{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" {
			return "", nil, fmt.Errorf("%q: want key=value", f)
		}
		if _, dup := kvs[k]; dup {
			return "", nil, fmt.Errorf("%s given twice", k)
		}
		kvs[k] = v
	}
	return fields[0], kvs, nil
}

func millis(d time.Duration) float64 { return d.Seconds() * 1000 }

// requestTTFT is TTFT for one prompt of n tokens alone, the first cached
// of them in the prefix cache: RequestOverhead, then one step per chunk of
// the step budget over the uncached rest, each reading the earlier KV.
func requestTTFT(p *Perf, n, cached int) time.Duration {
	d, budget := p.RequestOverhead(), p.cfg.MaxNumBatchedTokens
	for done := cached; done < n; done += budget {
		var s Step
		s.AddPrefill(min(budget, n-done), done)
		d += p.StepTime(s)
	}
	return d
}

// decodeStep is one decode step's time for batch sequences that each hold
// context tokens of KV.
func decodeStep(p *Perf, batch, context int) time.Duration {
	return p.StepTime(Step{DecodeSeqs: batch, ContextTokens: batch * context})
}

// decodeAfter is the decode steps of batch sequences' answers of out
// tokens after prompts of n: the out - 1 steps after the first token, at
// context n+1 to n+out-1.
func decodeAfter(p *Perf, batch, n, out int) time.Duration {
	var d time.Duration
	for i := 1; i < out; i++ {
		d += decodeStep(p, batch, n+i)
	}
	return d
}

// wholePromptPrefill is the prefill steps of batch prompts of n tokens: whole
// prompts, as many as fit the step budget, each step's first tokens
// sampled in it.
func wholePromptPrefill(p *Perf, batch, n int) float64 {
	per := max(1, p.cfg.MaxNumBatchedTokens/n)
	var ms float64
	for left := batch; left > 0; left -= per {
		k := min(per, left)
		ms += millis(p.StepTime(Step{PrefillTokens: k * n, PrefillSeqs: k}))
	}
	return ms
}

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

// prefillBesideDecode is a request's TTFT when it arrives while one other
// sequence of riderContext tokens decodes: vLLM V1 schedules the running
// decode first, so each step prefills budget - 1 tokens of the prompt
// beside one decode token.
func prefillBesideDecode(p *Perf, n, riderContext int) float64 {
	d, budget := p.RequestOverhead(), p.cfg.MaxNumBatchedTokens-1
	for done := 0; done < n; done += budget {
		s := Step{DecodeSeqs: 1, ContextTokens: riderContext}
		s.AddPrefill(min(budget, n-done), done)
		d += p.StepTime(s)
	}
	return millis(d)
}

// medianTPOT replays a run's decode: every request starts decoding after
// the shared prefill, each step decodes one token of every request still
// running, and a request's TPOT is the mean of the steps it took part in.
// It returns the median over requests with more than one output token, as
// benchmark_serving.py reports it.
func medianTPOT(p *Perf, prompts, outputs []int) time.Duration {
	longest := 0
	for _, o := range outputs {
		longest = max(longest, o)
	}
	sum := make([]time.Duration, len(outputs))
	for k := 1; k < longest; k++ {
		n, ctx := 0, 0
		for i, o := range outputs {
			if o > k {
				n++
				ctx += prompts[i] + k
			}
		}
		d := p.StepTime(Step{DecodeSeqs: n, ContextTokens: ctx})
		for i, o := range outputs {
			if o > k {
				sum[i] += d
			}
		}
	}
	var tpots []float64
	for i, o := range outputs {
		if o > 1 {
			tpots = append(tpots, float64(sum[i])/float64(o-1))
		}
	}
	return time.Duration(median(tpots))
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
