package sim

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Speculative decoding (--speculative-tokens K --acceptance-rate A), as
// vLLM V1 runs it with a drafter (EAGLE, a draft model, n-grams): each
// decode step a sequence carries up to K draft tokens, the target model
// verifies them in the same forward pass, and the sequence keeps the drafts
// up to the first rejected one plus one token of its own (the bonus
// token), so a step emits 1 to K+1 tokens, sent to the client as one
// chunk. engine/perf prices the step (verification of the drafts, draft
// passes).
//
// Acceptance is drawn per token, seeded by the request's text key and the
// token's position in the output, so a request's chunking does not depend
// on what else is running: draft i of a step is accepted with probability A
// if drafts 0..i-1 were. A step drafts at most the tokens the request has
// left minus its bonus token, so the stream never passes max_tokens (vLLM
// drafts K and drops what passes it) and the counters below equal what
// the stream carried: accepted drafts = tokens sent - steps.

// drafts is how many draft tokens r carries in a step that computes n of
// its tokens with budget left: K for a decode, fewer near its last token or
// when the step's token budget runs out, 0 for prefill chunks or off.
func (s *scheduler) drafts(r *request, n, budget int) int {
	if s.spec == 0 || n != 1 || !decoding(r) {
		return 0
	}
	return max(0, min(s.spec, r.target-r.output-1, budget-n))
}

// verify decides how many of r's draft drafts this step accepted, counts
// them in vLLM's spec-decoding counters, marks the step's chunk for the
// stream and keeps the accepted drafts' KV (the rejected ones' is dropped).
func (s *scheduler) verify(r *request, draft int) int {
	if s.spec == 0 {
		return 0
	}
	a := 0
	if draft > 0 {
		a = acceptedDrafts(r.key, r.output, draft, s.accept)
		s.e.m().spec.observe(draft, a)
		s.specLog.add(draft, a)
		r.computed += a
	}
	if r.chunks == nil {
		r.chunks = make([]uint8, r.target) // set before emitted is raised past it
	}
	r.chunks[r.output] = uint8(1 + a)
	return a
}

// specSalt separates acceptance draws from the other draws on a request's
// key (text, natural length).
const specSalt = 0x8f1bbcdc5a827999

// acceptedDrafts is how many of k drafts, the first standing for output
// token start, are accepted: each with probability rate until the first
// rejection. It depends only on the request's key and the positions.
func acceptedDrafts(key uint64, start, k int, rate float64) int {
	a := 0
	for ; a < k; a++ {
		u := float64(splitmix64(key^specSalt+uint64(start+a))>>11) / (1 << 53) // [0,1)
		if u >= rate {
			break
		}
	}
	return a
}

// chunkLen is how many tokens, from output token i on, one step emitted
// together (i must be the first token of a chunk, and below emitted): 1
// without speculative decoding.
func (r *request) chunkLen(i int) int {
	if r.chunks == nil || r.chunks[i] == 0 {
		return 1
	}
	return int(r.chunks[i])
}

// specMetrics are vLLM V1's speculative-decoding counters, with its names,
// help texts and labels (vllm/v1/spec_decode/metrics.py, SpecDecodingProm):
// per step and request that carried drafts, one draft, its draft tokens,
// the accepted ones, and per draft position (label position="0".."K-1")
// how often it was accepted. vLLM registers them only with speculative
// decoding on; so does the engine (spec is nil otherwise).
type specMetrics struct {
	drafts, draftTokens, accepted prometheus.Counter
	perPos                        []prometheus.Counter
}

func newSpecMetrics(reg *prometheus.Registry, labels prometheus.Labels, k int) *specMetrics {
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(c)
		return c
	}
	m := &specMetrics{
		drafts:      counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts."),
		draftTokens: counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens."),
		accepted:    counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens."),
	}
	pos := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:spec_decode_num_accepted_tokens_per_pos_total",
		Help: "Accepted tokens per draft position.", ConstLabels: labels}, []string{"position"})
	reg.MustRegister(pos)
	for i := range k {
		m.perPos = append(m.perPos, pos.WithLabelValues(strconv.Itoa(i))) // created up front, as vLLM does
	}
	return m
}

// observe counts one draft of draft tokens of which the first accepted
// were accepted (vLLM's SpecDecodingStats.observe_draft).
func (m *specMetrics) observe(draft, accepted int) {
	m.drafts.Inc()
	m.draftTokens.Add(float64(draft))
	m.accepted.Add(float64(accepted))
	for _, c := range m.perPos[:accepted] {
		c.Inc()
	}
}

// specCounts are running totals of the drafts for the stats log: the engine
// loop adds, the stats goroutine reads (atomics). Unlike /metrics, a
// metrics-reset fault leaves them alone.
type specCounts struct {
	drafts, draftTokens, accepted atomic.Int64
	perPos                        []atomic.Int64 // len K
}

func (c *specCounts) add(draft, accepted int) {
	c.drafts.Add(1)
	c.draftTokens.Add(int64(draft))
	c.accepted.Add(int64(accepted))
	for i := range accepted {
		c.perPos[i].Add(1)
	}
}

// specTotals is a snapshot of specCounts.
type specTotals struct {
	drafts, draftTokens, accepted int64
	perPos                        []int64
}

func (c *specCounts) snapshot() specTotals {
	t := specTotals{drafts: c.drafts.Load(), draftTokens: c.draftTokens.Load(), accepted: c.accepted.Load(),
		perPos: make([]int64, len(c.perPos))}
	for i := range c.perPos {
		t.perPos[i] = c.perPos[i].Load()
	}
	return t
}

// logSpec prints vLLM's SpecDecoding metrics line (SpecDecodingLogging.log,
// vllm/v1/spec_decode/metrics.py) for the drafts since last, with
// throughputs over el seconds, and moves last on; nothing when no step
// drafted since (or speculation is off).
func (e *Engine) logSpec(last *specTotals, el float64) {
	s := e.sched
	if s.spec == 0 {
		return
	}
	now := s.specLog.snapshot()
	d, dt, acc := now.drafts-last.drafts, now.draftTokens-last.draftTokens, now.accepted-last.accepted
	if d == 0 {
		*last = now
		return
	}
	rates := make([]string, len(now.perPos))
	for i := range rates {
		prev := int64(0)
		if i < len(last.perPos) {
			prev = last.perPos[i]
		}
		rates[i] = strconv.FormatFloat(float64(now.perPos[i]-prev)/float64(d), 'f', 3, 64)
	}
	e.logf(apiPrefix, "metrics.py", 96, "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, "+
		"Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance rate: %s, "+
		"Avg Draft acceptance rate: %.1f%%", 1+float64(acc)/float64(d), float64(acc)/el, float64(dt)/el, acc, dt,
		strings.Join(rates, ", "), 100*float64(acc)/float64(dt))
	*last = now
}
