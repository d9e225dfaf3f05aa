package report

import (
	"github.com/servebench/servebench/bench/result"
)

// shownAll is res, recs and the sample s in the clock res was recorded in
// (result.Shown): every report figure, table and chart is drawn from them,
// so a bundled engine at --speedup reads in the emulated hardware's time.
func shownAll(res *result.Results, recs []result.Record, s *Sample) (*result.Results, []result.Record, *Sample) {
	v := result.Shown(res)
	if v == res { // the wall clock, or a view already
		return res, recs, s
	}
	c := result.ClockOf(res)
	recs = c.ViewRecords(recs, res.Runs)
	if s == nil {
		return v, recs, nil
	}
	vs := &Sample{Runs: make(map[string]*RunSample, len(s.Runs))}
	for name, rs := range s.Runs {
		r := *rs
		r.Thin = c.ViewRecords(rs.Thin, res.Runs)
		if rs.HasMedian {
			r.Median = c.ViewRecords([]result.Record{rs.Median}, res.Runs)[0]
		}
		r.median = c.ToModelled(rs.median)
		vs.Runs[name] = &r
	}
	for _, p := range s.Slowest {
		r := c.ViewRecords([]result.Record{*p}, res.Runs)[0]
		vs.Slowest = append(vs.Slowest, &r)
	}
	return v, recs, vs
}

// clockNote is the caption sentence saying which clock res's figures are
// in; "" for a server that is not sped up.
func clockNote(res *result.Results) string { return result.ClockOf(res).Caption() }
