package bench

import (
	"slices"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// tally accumulates a run's (or one window's) figures one record at a time,
// keeping compact samples (8 bytes per request and quantity, so
// request-level figures are exact) and, for the gaps between tokens, a
// bounded histogram (stats.Hist: quantiles within 0.1%) instead of the
// records themselves. ClientSummary, the run's
// counts and every --interval window are computed by it, so they agree.
// It is not safe for concurrent use.
type tally struct {
	requests, ok, retried, tokens int
	errors                        map[string]int
	// Client-clock samples of successful measured requests.
	fv, ft, e2e, ttfb, tpot, out, fvI, e2eI []float64
	anyLag                                  bool
	// Per-token and per-event gaps: too many to keep, so histograms.
	itl, itlEv stats.Hist
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
	nfv, ne2e := len(t.fv), len(t.e2e) // before this record
	t.fv = appendPos(t.fv, r.FirstVisibleS)
	t.ft = appendPos(t.ft, r.FirstTokenS)
	t.e2e = appendPos(t.e2e, r.E2ES)
	t.ttfb = appendPos(t.ttfb, r.TTFBS)
	t.out = append(t.out, float64(r.OutputTokens))
	if r.IntendedLagS != 0 && !t.anyLag {
		// The first late send: the requests before it were on time, so
		// their figures from the intended send time are the plain ones.
		// Closed-loop runs never get here and keep no copies.
		t.anyLag = true
		t.fvI, t.e2eI = slices.Clone(t.fv[:nfv]), slices.Clone(t.e2e[:ne2e])
	}
	if t.anyLag {
		t.fvI = appendPos(t.fvI, r.FirstVisibleS+r.IntendedLagS)
		t.e2eI = appendPos(t.e2eI, r.E2ES+r.IntendedLagS)
	}
	if tpot, ok := r.TPOT(); ok {
		t.tpot = append(t.tpot, tpot)
	}
	r.TokenGaps(func(g float64, k int) {
		t.itlEv.Record(g, 1)
		t.itl.Record(g/float64(k), k)
	})
}

// client summarises the samples (see ClientSummary).
func (t *tally) client() result.ClientStats {
	cs := result.ClientStats{
		FirstVisibleS: stats.Summarize(t.fv),
		FirstTokenS:   stats.Summarize(t.ft),
		E2ES:          stats.Summarize(t.e2e),
		TTFBS:         stats.Summarize(t.ttfb),
		ITLS:          t.itl.Summary(),
		ITLEventS:     t.itlEv.Summary(),
		TPOTS:         stats.Summarize(t.tpot),
		OutputTokens:  stats.Summarize(t.out),
	}
	if cs.ITLS != nil || cs.ITLEventS != nil {
		cs.ITLRelativeError = stats.HistRelativeError
	}
	if t.anyLag {
		cs.FirstVisibleFromIntendedS = stats.Summarize(t.fvI)
		cs.E2EFromIntendedS = stats.Summarize(t.e2eI)
	}
	return cs
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
