package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// source says where a quantity's figures come from, and so how it is judged.
type source int

const (
	fromSamples    source = iota // per-request samples: Mann-Whitney test + threshold
	fromEngine                   // /metrics histogram delta: threshold only
	fromThroughput               // one figure per run; tested on per-request token rates
	fromErrors                   // failure fraction; tested on 0/1 per request
	fromGoodput                  // SLO attainment; tested on 0/1 per request
)

// quantity describes one comparable quantity.
type quantity struct {
	Name     string
	src      source
	Unit     string // "s", "tokens/s", "req/s", "fraction"
	Headline string // the statistic always shown
	Stats    []string
	Doc      string
	// Aspect names what a regression of q is a regression of, where its
	// name does not say ("smoothness").
	Aspect string
}

var (
	clientStats = []string{"median", "mean", "p90", "p99"}
	engineStats = []string{"mean", "p50", "p90", "p99"}
)

// quantities lists every quantity compare knows, in report order.
var quantities = []quantity{
	{Name: "client.first_visible", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "request sent -> first visible content (non-streaming: whole body)"},
	{Name: "client.first_token", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "request sent -> first generated token (content or reasoning)"},
	{Name: "client.first_reasoning", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "reasoning models: request sent -> first reasoning token (streaming only)"},
	{Name: "client.thinking", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "reasoning models: first -> last reasoning token (streaming only)"},
	{Name: "client.reasoning_tokens", src: fromSamples, Unit: "tokens", Headline: "median", Stats: clientStats, Doc: "reasoning models: output tokens that were thinking"},
	{Name: "client.answer_tokens", src: fromSamples, Unit: "tokens", Headline: "median", Stats: clientStats, Doc: "reasoning models: output tokens after the thinking"},
	{Name: "client.answer_tpot", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "reasoning models: per request (e2e - first_visible) / (answer_tokens - 1); streaming only"},
	{Name: "client.usable", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "structured workloads (--response-format, --tools): request sent -> the answer's JSON, or its tool call's arguments, parse complete and valid (time to usable output)"},
	{Name: "client.ttfb", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "request written -> first response byte"},
	{Name: "client.e2e", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "request sent -> end of response"},
	{Name: "client.tpot", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "per request (e2e - first_visible) / (output_tokens - 1); streaming only"},
	{Name: "client.itl", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "per request median per-token gap (an event gap g over k tokens counts k times g/k); streaming only; not judged when either side's tokens arrived in bursts (it then measures the bursts)"},
	{Name: "client.burst_share", src: fromSamples, Unit: "fraction", Headline: "median", Stats: clientStats, Aspect: "smoothness", Doc: "per request share of tokens that arrived 4 or more at once (0 token by token, 1 all in bursts); streaming only"},
	{Name: "client.tokens_per_arrival", src: fromSamples, Unit: "tokens", Headline: "median", Stats: clientStats, Aspect: "smoothness", Doc: "per request mean tokens per arrival (events that reached the client together); streaming only"},
	{Name: "client.arrival_gap_max", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Aspect: "smoothness", Doc: "per request largest gap between arrivals (the longest the text stood still); streaming only"},
	{Name: "client.first_visible_from_intended", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "open-loop (rate) runs: first visible measured from the intended send time"},
	{Name: "client.e2e_from_intended", src: fromSamples, Unit: "s", Headline: "median", Stats: clientStats, Doc: "open-loop (rate) runs: E2E measured from the intended send time (no coordinated omission)"},
	{Name: "engine.ttft", src: fromEngine, Unit: "s", Headline: "mean", Stats: engineStats, Doc: "engine TTFT from /metrics (includes queue wait)"},
	{Name: "engine.e2e", src: fromEngine, Unit: "s", Headline: "mean", Stats: engineStats, Doc: "engine E2E from /metrics"},
	{Name: "engine.queue", src: fromEngine, Unit: "s", Headline: "mean", Stats: engineStats, Doc: "engine queue wait from /metrics"},
	{Name: "engine.itl", src: fromEngine, Unit: "s", Headline: "mean", Stats: engineStats, Doc: "engine inter-token latency from /metrics (its decode pace, on the engine's clock)"},
	{Name: "throughput", src: fromThroughput, Unit: "tokens/s", Headline: "output_tokens_per_s", Stats: []string{"output_tokens_per_s", "requests_per_s"}, Doc: "run throughput; tested on per-request output tokens/s, whose median must pass the limit too"},
	{Name: "goodput", src: fromGoodput, Unit: "fraction", Headline: "attainment", Stats: []string{"attainment", "rate_per_s"}, Doc: "runs with an SLO: share of measured requests meeting every threshold (failures never do), and those requests per second; both sides judged against one SLO"},
	{Name: "errors", src: fromErrors, Unit: "fraction", Headline: "rate", Stats: []string{"rate"}, Doc: "failed / measured requests"},
}

func lookupQuantity(name string) (quantity, bool) {
	for _, q := range quantities {
		if q.Name == name {
			return q, true
		}
	}
	return quantity{}, false
}

// isTime says whether absolute thresholds of q take a time unit.
func (q quantity) isTime() bool { return q.Unit == "s" }

// higherIsWorse: latencies and error rates; throughput and goodput are the exceptions.
func (q quantity) higherIsWorse() bool { return q.src != fromThroughput && q.src != fromGoodput }

func (q quantity) hasStat(s string) bool { return slices.Contains(q.Stats, s) }

// past reports whether row's change passes t. The burst share passes its
// limit only where the stream became clumped (runSamples.clumped: the new
// side is, the base side is not): two smooth runs differ by a few clumped
// tokens, and an engine sped up to tens of microseconds per token joins a
// few now and then.
func (q quantity) past(t Threshold, row *Row) bool {
	if q.Name == "client.burst_share" && !row.becameClumped {
		return false
	}
	return t.past(row.Base, row.New, q.higherIsWorse())
}

// unitOf is the unit of one statistic of q.
func (q quantity) unitOf(stat string) string {
	if stat == "requests_per_s" || stat == "rate_per_s" {
		return "req/s"
	}
	return q.Unit
}

// runSamples holds the per-request samples of one run on one side.
type runSamples struct {
	measured  int                  // measured (non-warm-up) requests
	failed    int                  // of which failed
	byName    map[string][]float64 // client.* quantity -> one value per successful request
	rates     []float64            // output tokens/s per successful request
	failures  []float64            // 1 failed, 0 ok, per measured request
	attained  []float64            // 1 met the SLO, 0 not, per measured request (nil without an SLO)
	nAttained int

	summaries map[string]*stats.Summary // summary's memo: several rows read one quantity's summary
}

// samples are the per-request values quantity name is tested on.
func (s *runSamples) samples(name string) []float64 {
	switch name {
	case "throughput":
		return s.rates
	case "errors":
		return s.failures
	case "goodput":
		return s.attained
	}
	return s.byName[name]
}

// stat is one statistic of quantity name's samples, NaN when there are none.
func (s *runSamples) stat(name, stat string) float64 {
	sum, ok := s.summaries[name]
	if !ok {
		sum = stats.Summarize(s.samples(name))
		s.summaries[name] = sum
	}
	if sum == nil {
		return math.NaN()
	}
	return statOf(sum, stat)
}

func (s *runSamples) ok() int { return s.measured - s.failed }

// clumped says whether the side's streams came in clumps, by the median
// request's burst share and tokens per arrival (result.Clumped).
func (s *runSamples) clumped() bool {
	return result.Clumped(s.stat("client.burst_share", "median"), s.stat("client.tokens_per_arrival", "median"))
}

// samplesOf extracts run's samples from recs. Only successful, measured
// requests give latency samples; ITL is one median per request, not the
// pooled gaps, because gaps within a request are correlated and pooling
// them would make the test see thousands of "independent" samples where
// there are tens, and cry wolf.
//
// Open-loop runs also get latencies from each request's intended send
// time, which include the time a late send waited: the figures that do
// not hide a server falling behind. With an SLO, every measured request
// is judged against it (result.SLO.Judge).
func samplesOf(recs []result.Record, run string, openLoop bool, slo *result.SLO) *runSamples {
	s := &runSamples{byName: map[string][]float64{}, summaries: map[string]*stats.Summary{}}
	add := func(name string, v float64) { s.byName[name] = append(s.byName[name], v) }
	for i := range recs {
		r := &recs[i]
		// A retried attempt is superseded by the next one: only each
		// request's final attempt counts, as in results.json.
		if r.Run != run || !r.Outcome() {
			continue
		}
		s.measured++
		if slo != nil {
			ok, _ := slo.Judge(r)
			s.attained = append(s.attained, b2f(ok))
			if ok {
				s.nAttained++
			}
		}
		if r.Error != "" {
			s.failed++
			s.failures = append(s.failures, 1)
			continue
		}
		s.failures = append(s.failures, 0)
		if r.FirstVisibleS > 0 {
			add("client.first_visible", r.FirstVisibleS)
		}
		if r.FirstTokenS > 0 {
			add("client.first_token", r.FirstTokenS)
		}
		if r.TTFBS > 0 {
			add("client.ttfb", r.TTFBS)
		}
		if r.UsableS > 0 {
			add("client.usable", r.UsableS)
		}
		if openLoop && r.FirstVisibleS > 0 {
			add("client.first_visible_from_intended", r.FirstVisibleS+r.IntendedLagS)
		}
		if openLoop && r.E2ES > 0 {
			add("client.e2e_from_intended", r.E2ES+r.IntendedLagS)
		}
		if r.E2ES > 0 {
			add("client.e2e", r.E2ES)
			s.rates = append(s.rates, float64(r.OutputTokens)/r.E2ES)
		}
		if v, ok := r.TPOT(); ok {
			add("client.tpot", v)
		}
		addReasoning(r, add)
		if itl, ok := medianTokenGap(r); ok {
			add("client.itl", itl)
		}
		if st := result.StutterOf(r); st != nil {
			add("client.burst_share", st.BurstShare)
			add("client.tokens_per_arrival", st.TokensPerArrivalMean)
			add("client.arrival_gap_max", st.GapMaxS)
		}
	}
	return s
}

// addReasoning adds the reasoning quantities of a request that reasoned.
func addReasoning(r *result.Record, add func(string, float64)) {
	if !r.Reasoned() {
		return
	}
	if r.FirstReasoningS > 0 {
		add("client.first_reasoning", r.FirstReasoningS)
	}
	if v, ok := r.Thinking(); ok {
		add("client.thinking", v)
	}
	add("client.reasoning_tokens", float64(r.ReasoningTokens))
	add("client.answer_tokens", float64(r.AnswerTokens))
	if v, ok := r.AnswerTPOT(); ok {
		add("client.answer_tpot", v)
	}
}

// medianTokenGap is the median per-token inter-token latency of r: an event
// gap g over k tokens is k samples of g/k (result.Record.TokenGaps).
func medianTokenGap(r *result.Record) (float64, bool) {
	var gaps []float64
	r.TokenGaps(func(g float64, k int) {
		for range k {
			gaps = append(gaps, g/float64(k))
		}
	})
	if len(gaps) == 0 {
		return 0, false
	}
	return stats.Median(gaps), true
}

// statOf picks one statistic out of a summary.
func statOf(s *stats.Summary, stat string) float64 {
	switch stat {
	case "mean":
		return s.Mean
	case "p90":
		return s.P90
	case "p99":
		return s.P99
	default:
		return s.Median
	}
}

// engineHist picks an engine histogram out of a run.
func engineHist(e *result.EngineStats, name string) *result.Hist {
	switch name {
	case "engine.ttft":
		return e.TTFTS
	case "engine.e2e":
		return e.E2ES
	case "engine.queue":
		return e.QueueS
	case "engine.itl":
		return e.ITLS
	}
	return nil
}

// histStat picks one statistic out of an engine histogram.
func histStat(h *result.Hist, stat string) float64 {
	switch stat {
	case "p50":
		return h.P50Est
	case "p90":
		return h.P90Est
	case "p99":
		return h.P99Est
	default:
		return h.Mean
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// commonSLO is the SLO both sides of a run are judged against: the new
// side's, else the base side's (its records are judged again, so a baseline
// measured before --slo still compares); nil when neither has one. note
// says when the sides' SLOs differ.
func commonSLO(b, n *result.Run) (slo *result.SLO, note string) {
	pick := n.Goodput
	if pick == nil {
		pick = b.Goodput
	}
	if pick == nil {
		return nil, ""
	}
	s, err := result.ParseSLO(pick.SLO)
	if err != nil {
		return nil, ""
	}
	if b.Goodput != nil && n.Goodput != nil && b.Goodput.SLO != n.Goodput.SLO {
		note = fmt.Sprintf("both sides judged against the new side's SLO %s (base ran with %s)", n.Goodput.SLO, b.Goodput.SLO)
	} else if b.Goodput == nil || n.Goodput == nil {
		note = "both sides judged against the SLO " + pick.SLO + " (one side ran without it)"
	}
	return &s, note
}
