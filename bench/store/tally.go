package store

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/client"
)

// Tally accumulates a run's (or one window's) figures one record at a time,
// keeping compact samples (8 bytes per request and quantity, so
// request-level figures are exact; on disk after Spill) and, for the gaps
// between tokens, a bounded histogram (stats.Hist: quantiles within 0.1%)
// instead of the records themselves. ClientSummary, the run's
// counts and every --interval window are computed by it, so they agree.
// It is not safe for concurrent use.
type Tally struct {
	Requests, OK, Retried, tokens int
	errors                        map[string]int
	// Client-clock samples of successful measured requests.
	fv, ft, e2e, ttfb, tpot, out, fvI, e2eI Column
	// Reasoning requests' first reasoning token, thinking time, reasoning
	// and answer tokens, answer TPOT (empty when nothing reasoned).
	fr, think, rtok, atok, atpot Column
	// A structured workload's time to usable output, and the answers
	// that never became usable.
	usable         Column
	unusable       int
	otherReasoning []string // fields that looked like reasoning, uncounted (a few)
	anyLag         bool
	// Per-token and per-event gaps: too many to keep, so histograms.
	itl, itlEv stats.Hist
	// How streamed tokens arrived: pooled counts and the gaps between
	// arrivals (a histogram, like the ITL's).
	stutter     result.RunStutter
	burstTokens int
	compressed  int
	arrivalGaps stats.Hist
}

// selectLimit is the summaries' stats.Selector.Limit (Tally's, EngineAcc's):
// 0, its default. Only the tests lower it (setSelectLimit, export_test.go),
// to select over files by radix with few samples.
var selectLimit int

// Spill sends t's samples to files in dir ("": the system's temporary
// directory) as they come, for a run of any length (Runner.Bounded);
// Close releases them. t must be empty. On failure t keeps its samples in
// memory and the error says why.
func (t *Tally) Spill(dir string) error {
	if err := t.columns().spill(dir); err != nil {
		return fmt.Errorf("request samples: %w (kept in memory)", err)
	}
	return nil
}

// Close closes (and, where they kept a name, removes) t's sample files.
func (t *Tally) Close() { t.columns().close() }

func (t *Tally) columns() columns {
	return columns{&t.fv, &t.ft, &t.e2e, &t.ttfb, &t.tpot, &t.out, &t.fvI, &t.e2eI,
		&t.fr, &t.think, &t.rtok, &t.atok, &t.atpot, &t.usable}
}

// Add counts r: a warm-up request not at all; a retried attempt only in
// retried; every other record as a request's outcome.
func (t *Tally) Add(r *result.Record) {
	if r.Warmup {
		return
	}
	if r.Retried {
		t.Retried++
		return
	}
	t.Requests++
	if r.Error != "" {
		if t.errors == nil {
			t.errors = map[string]int{}
		}
		t.errors[r.Error]++
		return
	}
	t.OK++
	t.tokens += r.OutputTokens
	nfv, ne2e := t.fv.N, t.e2e.N // before this record
	spilled := t.fv.f != nil     // all columns are, or none (columns.spill)
	t.fv.AddPos(r.FirstVisibleS)
	t.ft.AddPos(r.FirstTokenS)
	t.e2e.AddPos(r.E2ES)
	t.ttfb.AddPos(r.TTFBS)
	t.out.Add(float64(r.OutputTokens))
	if r.IntendedLagS != 0 && !t.anyLag {
		// The first late send: the requests before it were on time, so
		// their figures from the intended send time are the plain ones.
		// Closed-loop runs never get here and keep no copies; spilled
		// samples have them written all along.
		t.anyLag = true
		if !spilled {
			t.fvI.xs, t.e2eI.xs = slices.Clone(t.fv.xs[:nfv]), slices.Clone(t.e2e.xs[:ne2e])
			t.fvI.N, t.e2eI.N = nfv, ne2e
		}
	}
	if t.anyLag || spilled {
		t.fvI.AddPos(r.FirstVisibleS + r.IntendedLagS)
		t.e2eI.AddPos(r.E2ES + r.IntendedLagS)
	}
	if tpot, ok := r.TPOT(); ok {
		t.tpot.Add(tpot)
	}
	t.addReasoning(r)
	t.usable.AddPos(r.UsableS)
	if r.UsableError != "" {
		t.unusable++
	}
	r.TokenGaps(func(g float64, k int) {
		t.itlEv.Record(g, 1)
		t.itl.Record(g/float64(k), k)
	})
	t.addStutter(r)
	if r.ContentEncoding != "" {
		t.compressed++
	}
}

// addStutter adds a successful request's arrivals, if it streamed.
func (t *Tally) addStutter(r *result.Record) {
	s := result.StutterOf(r)
	if s == nil {
		return
	}
	st := &t.stutter
	st.Requests++
	if s.Bursty() {
		st.BurstyRequests++
	}
	st.Arrivals += s.Arrivals
	st.Tokens += s.Tokens
	t.burstTokens += int(math.Round(s.BurstShare * float64(s.Tokens)))
	st.TokensPerArrivalMax = max(st.TokensPerArrivalMax, s.TokensPerArrivalMax)
	st.GapMaxS = max(st.GapMaxS, s.GapMaxS)
	prev := math.NaN()
	r.Events.Arrivals(0, func(firstS, lastS float64, _ int) {
		if !math.IsNaN(prev) {
			t.arrivalGaps.Record(firstS-prev, 1)
		}
		prev = lastS
	})
}

// runStutter is the run's stutter; nil when nothing streamed.
func (t *Tally) runStutter() *result.RunStutter {
	if t.stutter.Requests == 0 || t.stutter.Tokens == 0 {
		return nil
	}
	s := t.stutter
	s.TokensPerArrivalMean = math.Round(1e4*float64(s.Tokens)/float64(max(s.Arrivals, 1))) / 1e4
	s.BurstShare = math.Round(1e4*float64(t.burstTokens)/float64(s.Tokens)) / 1e4
	if g := t.arrivalGaps.Summary(); g != nil {
		s.GapP99S = g.P99
	}
	return &s
}

// addReasoning adds a successful request's reasoning figures, if it reasoned.
func (t *Tally) addReasoning(r *result.Record) {
	if f := r.OtherReasoning; f != "" && len(t.otherReasoning) < 4 && !slices.Contains(t.otherReasoning, f) {
		t.otherReasoning = append(t.otherReasoning, f)
	}
	if !r.Reasoned() {
		return
	}
	t.fr.AddPos(r.FirstReasoningS)
	if th, ok := r.Thinking(); ok {
		t.think.Add(th)
	}
	t.rtok.Add(float64(r.ReasoningTokens))
	t.atok.Add(float64(r.AnswerTokens))
	if v, ok := r.AnswerTPOT(); ok {
		t.atpot.Add(v)
	}
}

// fill sets run's counts, client summaries and throughput over
// run.DurationS from t, with the reasoning warning: what RunAcc.Fill and
// Recover's rebuild take from a run's tally alike.
func (t *Tally) fill(run *result.Run) {
	run.Requests, run.OK, run.Errors = t.Requests, t.OK, t.ErrorsMap()
	run.Client = t.Client()
	if w := t.ReasoningWarning(); w != "" {
		run.Warnings = append(run.Warnings, w)
	}
	run.Throughput = t.Throughput(run.DurationS)
}

// ReasoningWarning names, once per run, the fields that looked like
// reasoning but are not counted as such ("" when none).
func (t *Tally) ReasoningWarning() string {
	if len(t.otherReasoning) == 0 {
		return ""
	}
	return fmt.Sprintf("the server sent a field servebench does not count as reasoning: %s (known: %s); "+
		"its tokens count as answer tokens and its text is not output the client times",
		strings.Join(t.otherReasoning, ", "), strings.Join(client.ReasoningKeys(), ", "))
}

// Client summarises the samples (see ClientSummary). Spilled samples are
// read back in passes, one column at a time, through one Selector.
func (t *Tally) Client() result.ClientStats {
	sel := stats.Selector{Limit: selectLimit}
	cs := result.ClientStats{
		FirstVisibleS: t.fv.Summary(&sel),
		FirstTokenS:   t.ft.Summary(&sel),
		E2ES:          t.e2e.Summary(&sel),
		TTFBS:         t.ttfb.Summary(&sel),
		ITLS:          t.itl.Summary(),
		ITLEventS:     t.itlEv.Summary(),
		TPOTS:         t.tpot.Summary(&sel),
		OutputTokens:  t.out.Summary(&sel),
	}
	cs.FirstReasoningS, cs.ThinkingS = t.fr.Summary(&sel), t.think.Summary(&sel)
	cs.ReasoningTokens, cs.AnswerTokens, cs.AnswerTPOTS = t.rtok.Summary(&sel), t.atok.Summary(&sel), t.atpot.Summary(&sel)
	cs.UsableS, cs.Unusable = t.usable.Summary(&sel), t.unusable
	if cs.ITLS != nil || cs.ITLEventS != nil {
		cs.ITLRelativeError = stats.HistRelativeError
	}
	cs.Stutter, cs.Compressed = t.runStutter(), t.compressed
	if t.anyLag {
		cs.FirstVisibleFromIntendedS = t.fvI.Summary(&sel)
		cs.E2EFromIntendedS = t.e2eI.Summary(&sel)
	}
	return cs
}

// SpillErr is the first error writing or reading back spilled samples:
// the figures it concerns are absent.
func (t *Tally) SpillErr() error { return t.columns().err() }

// WriteErr is the first error writing spilled samples to their file (a
// full disk): the samples are kept in memory, the results folder is not
// writable.
func (t *Tally) WriteErr() error { return t.columns().writeErr() }

// ErrorsMap is the error counts by class, never nil (results.json writes {}).
func (t *Tally) ErrorsMap() map[string]int {
	if t.errors == nil {
		return map[string]int{}
	}
	return t.errors
}

// Throughput is the successful requests' and output tokens' rates over d
// seconds; zero when d is not positive.
func (t *Tally) Throughput(d float64) result.Throughput {
	if d <= 0 {
		return result.Throughput{}
	}
	return result.Throughput{RequestsPerS: float64(t.OK) / d, OutputTokensPerS: float64(t.tokens) / d}
}
