package bench

import (
	"cmp"
	"fmt"

	"github.com/servebench/servebench/bench/result"
)

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
	fails     failures
}

func (a *runAcc) add(rec *result.Record, spec *RunSpec) {
	if rec.Warmup {
		if rec.Error == "" {
			a.warmOK++
		}
		return
	}
	a.t.add(rec)
	a.fails.add(rec)
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

// maxErrorTexts bounds the distinct error texts failures keeps: a server
// that puts a request id in every message cannot make it grow.
const maxErrorTexts = 64

// failures counts a run's failed measured requests by error text, so that
// a run whose every request failed can say why (validate) without keeping
// its records. Texts past maxErrorTexts count only in the total.
type failures struct {
	count map[string]int
	class map[string]string
	total int
}

func (f *failures) add(r *result.Record) {
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

// commonest is ": CLASS: TEXT (N of M failures)" for the error text most
// failures share (the lowest text among equals), or "" without failures;
// the text is the client's, already redacted and shortened.
func (f *failures) commonest() string {
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
