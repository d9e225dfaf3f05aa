package bench

import "github.com/servebench/servebench/bench/result"

// runAcc is what a run keeps of its records for its figures, fed one
// record at a time as each completes (Runner.keep, under runState.mu):
// compact samples and counters, never the records. With Runner.Bounded
// the records themselves are not kept at all, so a run's memory does not
// grow with its length beyond the samples' 8 bytes per request and
// quantity (see tally).
type runAcc struct {
	t         tally
	completed int // measured attempts that got an HTTP response
	warmOK    int // successful warm-up requests
	prompt    promptAcc
	exact     exactAcc
	goodput   *result.Goodput // nil without an SLO
	engine    engineAcc       // per-request engine timings (ollama-chat)
}

func (a *runAcc) add(rec *result.Record, spec *RunSpec) {
	if rec.Warmup {
		if rec.Error == "" {
			a.warmOK++
		}
		return
	}
	a.t.add(rec)
	if rec.Status != 0 {
		a.completed++
	}
	a.prompt.add(rec)
	a.engine.add(rec)
	if spec.Request.ExactLength {
		a.exact.add(rec, spec.Request.MaxTokens)
	}
	if !spec.SLO.IsZero() {
		if a.goodput == nil {
			a.goodput = spec.SLO.EmptyGoodput()
		}
		a.goodput.Add(spec.SLO, rec)
	}
}
