package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// tally accumulates a run's (or one window's) figures one record at a time,
// keeping compact samples (8 bytes per request and quantity, so
// request-level figures are exact; on disk after spill) and, for the gaps
// between tokens, a bounded histogram (stats.Hist: quantiles within 0.1%)
// instead of the records themselves. ClientSummary, the run's
// counts and every --interval window are computed by it, so they agree.
// It is not safe for concurrent use.
type tally struct {
	requests, ok, retried, tokens int
	errors                        map[string]int
	// Client-clock samples of successful measured requests.
	fv, ft, e2e, ttfb, tpot, out, fvI, e2eI column
	// Reasoning requests' first reasoning token, thinking time, reasoning
	// and answer tokens, answer TPOT (empty when nothing reasoned).
	fr, think, rtok, atok, atpot column
	otherReasoning               []string // fields that looked like reasoning, uncounted (a few)
	anyLag                       bool
	spilled                      bool
	// Per-token and per-event gaps: too many to keep, so histograms.
	itl, itlEv stats.Hist
	// selectLimit is the summaries' stats.Selector.Limit (0: its default;
	// tests set it small to select over files by radix).
	selectLimit int
}

// spill sends t's samples to files in dir ("": the system's temporary
// directory) as they come, for a run of any length (Runner.Bounded);
// close releases them. t must be empty. On failure t keeps its samples in
// memory and the error says why.
func (t *tally) spill(dir string) error {
	for _, c := range t.columns() {
		if err := c.spill(dir); err != nil {
			t.close()
			return fmt.Errorf("request samples: %w (kept in memory)", err)
		}
	}
	t.spilled = true
	return nil
}

// close closes (and, where they kept a name, removes) t's sample files.
func (t *tally) close() {
	for _, c := range t.columns() {
		c.close()
	}
}

func (t *tally) columns() []*column {
	return []*column{&t.fv, &t.ft, &t.e2e, &t.ttfb, &t.tpot, &t.out, &t.fvI, &t.e2eI,
		&t.fr, &t.think, &t.rtok, &t.atok, &t.atpot}
}

// add counts r: a warm-up request not at all; a retried attempt only in
// retried; every other record as a request's outcome.
func (t *tally) add(r *result.Record) {
	if r.Warmup {
		return
	}
	if r.Retried {
		t.retried++
		return
	}
	t.requests++
	if r.Error != "" {
		if t.errors == nil {
			t.errors = map[string]int{}
		}
		t.errors[r.Error]++
		return
	}
	t.ok++
	t.tokens += r.OutputTokens
	nfv, ne2e := t.fv.n, t.e2e.n // before this record
	t.fv.addPos(r.FirstVisibleS)
	t.ft.addPos(r.FirstTokenS)
	t.e2e.addPos(r.E2ES)
	t.ttfb.addPos(r.TTFBS)
	t.out.add(float64(r.OutputTokens))
	if r.IntendedLagS != 0 && !t.anyLag {
		// The first late send: the requests before it were on time, so
		// their figures from the intended send time are the plain ones.
		// Closed-loop runs never get here and keep no copies; spilled
		// samples have them written all along.
		t.anyLag = true
		if !t.spilled {
			t.fvI.xs, t.e2eI.xs = slices.Clone(t.fv.xs[:nfv]), slices.Clone(t.e2e.xs[:ne2e])
			t.fvI.n, t.e2eI.n = nfv, ne2e
		}
	}
	if t.anyLag || t.spilled {
		t.fvI.addPos(r.FirstVisibleS + r.IntendedLagS)
		t.e2eI.addPos(r.E2ES + r.IntendedLagS)
	}
	if tpot, ok := r.TPOT(); ok {
		t.tpot.add(tpot)
	}
	t.addReasoning(r)
	r.TokenGaps(func(g float64, k int) {
		t.itlEv.Record(g, 1)
		t.itl.Record(g/float64(k), k)
	})
}

// addReasoning adds a successful request's reasoning figures, if it reasoned.
func (t *tally) addReasoning(r *result.Record) {
	if f := r.OtherReasoning; f != "" && len(t.otherReasoning) < 4 && !slices.Contains(t.otherReasoning, f) {
		t.otherReasoning = append(t.otherReasoning, f)
	}
	if !r.Reasoned() {
		return
	}
	t.fr.addPos(r.FirstReasoningS)
	if th, ok := r.Thinking(); ok {
		t.think.add(th)
	}
	t.rtok.add(float64(r.ReasoningTokens))
	t.atok.add(float64(r.AnswerTokens))
	if v, ok := r.AnswerTPOT(); ok {
		t.atpot.add(v)
	}
}

// reasoningWarning names, once per run, the fields that looked like
// reasoning but are not counted as such ("" when none).
func (t *tally) reasoningWarning() string {
	if len(t.otherReasoning) == 0 {
		return ""
	}
	return fmt.Sprintf("the server sent a field servebench does not count as reasoning: %s (known: reasoning_content, reasoning); "+
		"its tokens count as answer tokens and its text is not output the client times", strings.Join(t.otherReasoning, ", "))
}

// client summarises the samples (see ClientSummary). Spilled samples are
// read back in passes, one column at a time, through one Selector.
func (t *tally) client() result.ClientStats {
	sel := stats.Selector{Limit: t.selectLimit}
	cs := result.ClientStats{
		FirstVisibleS: t.fv.summary(&sel),
		FirstTokenS:   t.ft.summary(&sel),
		E2ES:          t.e2e.summary(&sel),
		TTFBS:         t.ttfb.summary(&sel),
		ITLS:          t.itl.Summary(),
		ITLEventS:     t.itlEv.Summary(),
		TPOTS:         t.tpot.summary(&sel),
		OutputTokens:  t.out.summary(&sel),
	}
	cs.FirstReasoningS, cs.ThinkingS = t.fr.summary(&sel), t.think.summary(&sel)
	cs.ReasoningTokens, cs.AnswerTokens, cs.AnswerTPOTS = t.rtok.summary(&sel), t.atok.summary(&sel), t.atpot.summary(&sel)
	if cs.ITLS != nil || cs.ITLEventS != nil {
		cs.ITLRelativeError = stats.HistRelativeError
	}
	if t.anyLag {
		cs.FirstVisibleFromIntendedS = t.fvI.summary(&sel)
		cs.E2EFromIntendedS = t.e2eI.summary(&sel)
	}
	return cs
}

// spillErr is the first error writing or reading back spilled samples:
// the figures it concerns are absent.
func (t *tally) spillErr() error {
	for _, c := range t.columns() {
		if c.err != nil {
			return c.err
		}
	}
	return nil
}

// errorsMap is the error counts by class, never nil (results.json writes {}).
func (t *tally) errorsMap() map[string]int {
	if t.errors == nil {
		return map[string]int{}
	}
	return t.errors
}

// throughput is the successful requests' and output tokens' rates over d
// seconds; zero when d is not positive.
func (t *tally) throughput(d float64) result.Throughput {
	if d <= 0 {
		return result.Throughput{}
	}
	return result.Throughput{RequestsPerS: float64(t.ok) / d, OutputTokensPerS: float64(t.tokens) / d}
}
