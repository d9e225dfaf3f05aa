package store

import (
	"fmt"
	"math"
	"sort"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/scrape"
)

// ClientSummary computes the client-clock statistics of a run from its
// measured records: successful, non-warm-up requests only, so failures never
// flatter the latencies (they are counted in Run.Errors instead). ITL is per
// token and pools every request: an event gap g over k tokens is k samples
// of g/k (result.Record.TokenGaps), from the events each record kept
// (client.MaxEvents cap); ITLEvent pools the event gaps themselves. TPOT is
// per request (result.Record.TPOT). The *FromIntended figures add each request's
// send lag (open loop), so a server that falls behind cannot hide it.
func ClientSummary(recs []result.Record) result.ClientStats {
	var t Tally
	for i := range recs {
		t.Add(&recs[i])
	}
	return t.Client()
}

// ExactAcc counts, one record at a time, the successful measured requests
// whose output token count differs from what they asked (max_tokens), for
// the warning that a server ignored ignore_eos/min_tokens.
type ExactAcc struct {
	off, n int
	seen   map[int]int // output token counts that differed (bounded by max_tokens)
}

func (a *ExactAcc) Add(r *result.Record, maxTokens int) {
	if r.Warmup || r.Error != "" {
		return
	}
	a.n++
	want := maxTokens
	if r.MaxTokens > 0 { // what this request asked: the source's length or a clipped one
		want = r.MaxTokens
	}
	if r.OutputTokens != want {
		a.off++
		if a.seen == nil {
			a.seen = map[int]int{}
		}
		a.seen[r.OutputTokens]++
	}
}

func (a *ExactAcc) Warning(maxTokens int) string {
	if a.off == 0 {
		return ""
	}
	counts := make([]int, 0, len(a.seen))
	for k := range a.seen {
		counts = append(counts, k)
	}
	sort.Ints(counts)
	if len(counts) > 5 {
		counts = counts[:5]
	}
	return fmt.Sprintf("exact length requested (max_tokens=%d, ignore_eos, min_tokens) but %d of %d requests "+
		"returned a different output token count (e.g. %v): the server ignores ignore_eos/min_tokens, "+
		"so per-request work differs and E2E is not comparable", maxTokens, a.off, a.n, counts)
}

// engineQuantities maps results.json's engine keys to canonical quantities.
var engineQuantities = []struct {
	q   scrape.Quantity
	get func(*result.EngineStats) *result.Hist
	set func(*result.EngineStats, *result.Hist)
}{
	{scrape.EngineTTFT, func(e *result.EngineStats) *result.Hist { return e.TTFTS }, func(e *result.EngineStats, h *result.Hist) { e.TTFTS = h }},
	{scrape.EngineE2E, func(e *result.EngineStats) *result.Hist { return e.E2ES }, func(e *result.EngineStats, h *result.Hist) { e.E2ES = h }},
	{scrape.EngineQueue, func(e *result.EngineStats) *result.Hist { return e.QueueS }, func(e *result.EngineStats, h *result.Hist) { e.QueueS = h }},
	{scrape.EnginePrefill, func(e *result.EngineStats) *result.Hist { return e.PrefillS }, func(e *result.EngineStats, h *result.Hist) { e.PrefillS = h }},
	{scrape.EngineDecode, func(e *result.EngineStats) *result.Hist { return e.DecodeS }, func(e *result.EngineStats, h *result.Hist) { e.DecodeS = h }},
	{scrape.EngineITL, func(e *result.EngineStats) *result.Hist { return e.ITLS }, func(e *result.EngineStats, h *result.Hist) { e.ITLS = h }},
}

// EngineSummary turns a /metrics delta into engine statistics. A quantity the
// server does not export, or that saw no observations, stays absent (nil).
func EngineSummary(d *scrape.Delta) result.EngineStats {
	var es result.EngineStats
	if d == nil {
		return es
	}
	for _, eq := range engineQuantities {
		h, ok := d.Hist(eq.q)
		if !ok || h.Count <= 0 {
			continue
		}
		eq.set(&es, &result.Hist{
			Mean:   stats.Finite(h.Mean()),
			Count:  h.Count,
			P50Est: stats.Finite(h.Quantile(0.50)),
			P90Est: stats.Finite(h.Quantile(0.90)),
			P99Est: stats.Finite(h.Quantile(0.99)),
			Bounds: quantileBounds(h),
		})
	}
	zeroQueue(d, &es)
	energy(d, &es)
	q, qok := d.Counter(scrape.EnginePrefixCacheQueries)
	h, hok := d.Counter(scrape.EnginePrefixCacheHits)
	if qok && hok {
		es.PrefixCacheQueries, es.PrefixCacheHits = &q, &h
		if q > 0 {
			rate := h / q
			es.PrefixCacheHitRate = &rate
		}
	}
	return es
}

// quantileBounds is the buckets of h's quantiles that h cannot place
// inside their bucket (scrape.HistDelta.QuantileBucket); nil when it
// places them all.
func quantileBounds(h scrape.HistDelta) map[string]result.QuantileBound {
	var bs map[string]result.QuantileBound
	for _, q := range []struct {
		key string
		q   float64
	}{{"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}} {
		lo, hi, placed, ok := h.QuantileBucket(q.q)
		if !ok || placed || math.IsInf(lo, -1) {
			continue
		}
		b := result.QuantileBound{Above: lo}
		if !math.IsInf(hi, 1) {
			b.AtMost = &hi
		}
		if bs == nil {
			bs = map[string]result.QuantileBound{}
		}
		bs[q.key] = b
	}
	return bs
}

// zeroQueue fills es.QueueS with zero wait when the server is known to
// export queue wait (its family is in the snapshot, or its dialect always
// exports it) but observed none over requests the engine did count: a
// server that creates the series on first observation has simply had no
// request wait yet. Count is the engine's count of those requests (TTFT's,
// else E2E's), so the figure says how much it rests on.
func zeroQueue(d *scrape.Delta, es *result.EngineStats) {
	if es.QueueS != nil || d.Dialect == nil {
		return
	}
	_, seen := d.Hist(scrape.EngineQueue)
	if m, ok := d.Dialect.Mapping(scrape.EngineQueue); !seen && !(ok && m.Always) {
		return
	}
	n := 0.0
	if es.TTFTS != nil {
		n = es.TTFTS.Count
	} else if es.E2ES != nil {
		n = es.E2ES.Count
	}
	if n > 0 {
		es.QueueS = &result.Hist{Count: n}
	}
}

// energy sets es's GPU energy over the delta, in J, and per generated
// token, from the DCGM energy counter (mJ).
func energy(d *scrape.Delta, es *result.EngineStats) {
	mj, ok := d.Counter(scrape.GPUEnergy)
	if !ok {
		return
	}
	j := mj / 1000
	es.GPUEnergyJ = &j
	if toks, ok := d.Counter(scrape.EngineGenerationTokens); ok && toks > 0 {
		per := j / toks
		es.JoulesPerOutputToken = &per
	}
}
