package report

import (
	"cmp"
	"slices"

	"github.com/servebench/servebench/bench/result"
)

// measured returns run's successful, non-warm-up records, by index; an
// attempt that was retried is not an outcome and is left out.
func measured(run string, recs []result.Record) []result.Record {
	var out []result.Record
	for _, r := range recs {
		if r.Run == run && isMeasured(&r) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b result.Record) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// isMeasured reports whether r is a successful measured outcome, what the
// per-request charts draw.
func isMeasured(r *result.Record) bool { return r.Outcome() && r.Error == "" && r.E2ES > 0 }

// medianRecord is the run's representative request: the one whose E2E is
// the (lower) median, ties broken by index. ok is false when there is none.
func medianRecord(rs []result.Record) (result.Record, bool) {
	if len(rs) == 0 {
		return result.Record{}, false
	}
	byE2E := slices.Clone(rs)
	slices.SortStableFunc(byE2E, func(a, b result.Record) int { return cmp.Compare(a.E2ES, b.E2ES) })
	return byE2E[(len(byE2E)-1)/2], true
}

// visibleSteps returns a record's cumulative visible tokens as (time,
// tokens) points, starting at (0, 0). A record without events (a
// non-streaming client that kept none) shows all its tokens at first
// visible output.
func visibleSteps(r result.Record) [][2]float64 {
	pts := [][2]float64{{0, 0}}
	total := 0.0
	if len(r.Events) == 0 {
		at := r.FirstVisibleS
		if at == 0 {
			at = r.E2ES
		}
		return append(pts, [2]float64{at, 0}, [2]float64{at, float64(r.OutputTokens)})
	}
	for _, ev := range r.Events {
		pts = append(pts, [2]float64{ev[0], total})
		total += ev[1]
		pts = append(pts, [2]float64{ev[0], total})
	}
	return pts
}

// eventTimes returns when a record's content arrived; without events, its
// first visible output.
func eventTimes(r result.Record) []float64 {
	if len(r.Events) == 0 {
		return []float64{max(r.FirstVisibleS, 0)}
	}
	ts := make([]float64, len(r.Events))
	for i, ev := range r.Events {
		ts[i] = ev[0]
	}
	return ts
}

// isSweep reports whether res's runs are a sweep: at least two runs, all
// named "c=N" with a concurrency set, or all "rate=R" with a rate set.
func isSweep(res *result.Results) bool {
	if len(res.Runs) < 2 {
		return false
	}
	_, ok := sweepLoads(res)
	return ok
}

// sweepLoads returns each run's load (concurrency or rate) and whether the
// runs form a sweep.
func sweepLoads(res *result.Results) ([]float64, bool) {
	var loads []float64
	kind := ""
	for _, r := range res.Runs {
		var k string
		var v float64
		switch {
		case result.RunName(r.Name).IsConcurrencyLevel() && r.Workload.Concurrency > 0:
			k, v = "c", float64(r.Workload.Concurrency)
		case result.RunName(r.Name).IsRateLevel() && r.Workload.Rate > 0:
			k, v = "rate", r.Workload.Rate
		default:
			return nil, false
		}
		if kind != "" && k != kind {
			return nil, false
		}
		kind = k
		loads = append(loads, v)
	}
	return loads, len(loads) >= 2
}

// sweepKind is "c" or "rate" for a sweep.
func sweepKind(res *result.Results) string {
	if len(res.Runs) > 0 && res.Runs[0].Workload.Concurrency > 0 && result.RunName(res.Runs[0].Name).IsConcurrencyLevel() {
		return "c"
	}
	return "rate"
}
