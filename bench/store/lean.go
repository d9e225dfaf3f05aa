package store

import (
	"cmp"
	"fmt"
	"math"

	"github.com/servebench/servebench/bench/result"
)

// RunAcc is what a run keeps of its records for its figures, fed one
// record at a time as each completes (bench's collector.keep, under its mu):
// compact samples and counters, never the records. With Runner.Bounded
// the records themselves are not kept at all, so a run's memory does not
// grow with its length beyond the samples' 8 bytes per request and
// quantity (see Tally).
type RunAcc struct {
	Tally     Tally
	Completed int // measured attempts that got an HTTP response
	WarmOK    int // successful warm-up requests
	Prompt    PromptAcc
	Exact     ExactAcc
	Goodput   *result.Goodput // nil without an SLO
	Engine    EngineAcc       // per-request engine timings (ollama-chat)
	Fails     Failures
	Adapters  AdapterAcc // per LoRA adapter
	Sessions  SessionAcc // multi-turn and tool-calling sessions
}

// WriteErr is the first error writing the spilled samples or engine
// timings to their files (see Tally.WriteErr): nothing is lost, but the
// results folder takes no more.
func (a *RunAcc) WriteErr() error {
	if err := a.Tally.WriteErr(); err != nil {
		return err
	}
	return a.Engine.WriteErr()
}

// Add keeps rec's figures: exactTokens is the output length every request
// was asked to reach (--exact-length; 0: not asked), slo the goodput's.
func (a *RunAcc) Add(rec *result.Record, exactTokens int, slo result.SLO) {
	if rec.Warmup {
		if rec.Error == "" {
			a.WarmOK++
		}
		return
	}
	a.Tally.Add(rec)
	a.Adapters.Add(rec)
	a.Sessions.Add(rec)
	a.Fails.Add(rec)
	if rec.Status != 0 {
		a.Completed++
	}
	a.Prompt.Add(rec)
	a.Engine.Add(rec)
	if exactTokens > 0 {
		a.Exact.Add(rec, exactTokens)
	}
	if !slo.IsZero() {
		if a.Goodput == nil {
			a.Goodput = slo.EmptyGoodput()
		}
		a.Goodput.Add(slo, rec)
	}
}

// Fill sets run's counts, client summaries and throughput from a, and
// what its records decide against what was asked (judged), with their
// warnings: the figures Runner.Run and the fleet's merge compute alike
// once run.DurationS is known.
func (a *RunAcc) Fill(run *result.Run, slo result.SLO) {
	a.Tally.fill(run)
	run.Adapters = a.Adapters.Stats()
	run.Sessions = a.Sessions.Stats()
	judged(run, &a.Prompt, a.Goodput, slo)
}

// maxErrorTexts bounds the distinct error texts failures keeps: a server
// that puts a request id in every message cannot make it grow.
const maxErrorTexts = 64

// Failures counts a run's failed measured requests by error text, so that
// a run whose every request failed can say why (validate) without keeping
// its records. Texts past maxErrorTexts count only in the total.
type Failures struct {
	count map[string]int
	class map[string]string
	total int
}

func (f *Failures) Add(r *result.Record) {
	if !r.Outcome() || r.Error == "" {
		return
	}
	f.total++
	text := cmp.Or(r.ErrorText, r.Error)
	if _, ok := f.count[text]; !ok {
		if len(f.count) >= maxErrorTexts {
			return
		}
		if f.count == nil {
			f.count, f.class = map[string]int{}, map[string]string{}
		}
		f.class[text] = r.Error
	}
	f.count[text]++
}

// Commonest is ": CLASS: TEXT (N of M failures)" for the error text most
// failures share (the lowest text among equals), or "" without failures;
// the text is the client's, already redacted and shortened.
func (f *Failures) Commonest() string {
	best, n := "", 0
	for text, c := range f.count {
		if c > n || c == n && text < best {
			best, n = text, c
		}
	}
	if best == "" {
		return ""
	}
	s := ": " + f.class[best]
	if best != f.class[best] {
		s += ": " + best
	}
	if n < f.total {
		s += fmt.Sprintf(" (%d of %d failures)", n, f.total)
	}
	return s
}

// PromptAcc compares, one record at a time, the prompt tokens requested
// with those the server counted over successful measured requests; Result
// gives the figures and a warning when their means differ by more than 1%.
type PromptAcc struct {
	req, got float64
	n, exact int
}

func (a *PromptAcc) Add(r *result.Record) {
	if !r.Outcome() || r.Error != "" || r.PromptTokensRequested <= 0 || r.PromptTokens <= 0 {
		return
	}
	a.n++
	a.req += float64(r.PromptTokensRequested)
	a.got += float64(r.PromptTokens)
	if r.PromptTokens == r.PromptTokensRequested {
		a.exact++
	}
}

func (a *PromptAcc) Result() (*result.PromptTokenStats, string) {
	if a.n == 0 {
		return nil, ""
	}
	n := float64(a.n)
	ps := &result.PromptTokenStats{N: a.n, RequestedMean: a.req / n, CountedMean: a.got / n, Exact: a.exact}
	if d := ps.CountedMean/ps.RequestedMean - 1; math.Abs(d) > 0.01 {
		return ps, fmt.Sprintf("prompt tokens: requested %.1f on average, the server counted %.1f (%+.1f%%): "+
			"generated prompts are not token-exact on this server (see server.prompt_tokens_calibration)",
			ps.RequestedMean, ps.CountedMean, 100*d)
	}
	return ps, ""
}

// judged fills the figures a run's measured records decide against what
// was asked, from their accumulators (RunAcc.Fill): prompt tokens
// requested against counted (with the 1% warning) and, with an SLO,
// goodput; g is nil when no record was judged.
func judged(run *result.Run, p *PromptAcc, g *result.Goodput, slo result.SLO) {
	if ps, w := p.Result(); ps != nil {
		run.PromptTokens = ps
		if w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	if slo.IsZero() {
		return
	}
	if g == nil {
		g = slo.EmptyGoodput()
	}
	g.Finish(run.DurationS)
	run.Goodput = g
	if !run.Stream && (slo.TPOT > 0 || slo.ITL > 0) {
		run.Warnings = append(run.Warnings, "SLO "+slo.String()+": a non-streaming request has no gap between tokens, so tpot and itl are not judged; ttft is the whole response here")
	}
}
