package scrape

import (
	"slices"
	"time"
)

// NewDelta returns an empty Delta for a source other than two snapshots
// (scrape/promql reads the same quantities from Prometheus). Fill it with
// SetHist, SetCounter and Warn before sharing it; it is read-only after.
func NewDelta(dl *Dialect, f Filter, from, to time.Time) *Delta {
	return &Delta{Dialect: dl, Filter: f, From: from, To: to,
		hists: map[Quantity]HistDelta{}, counters: map[Quantity]float64{}, names: map[Quantity]string{}}
}

// SetHist records histogram quantity q, read from metric family metric.
func (d *Delta) SetHist(q Quantity, metric string, h HistDelta) {
	d.hists[q] = h
	d.names[q] = metric
}

// SetCounter records counter quantity q, read from metric family metric.
func (d *Delta) SetCounter(q Quantity, metric string, v float64) {
	d.counters[q] = v
	d.names[q] = metric
}

// Warn adds a warning (once) about what the figures leave out.
func (d *Delta) Warn(w string) { d.warnf("%s", w) }

// Sum adds several replicas' deltas of one dialect into one: counters,
// histogram counts and sums add up; buckets add up when every replica has
// the same layout, else the sum keeps none (and says so). A quantity some
// replicas lack counts as zero there, as a missing series does in Diff.
// From and To span every replica's window; warnings are kept.
func Sum(ds []*Delta) *Delta {
	if len(ds) == 0 {
		return nil
	}
	out := NewDelta(ds[0].Dialect, ds[0].Filter, ds[0].From, ds[0].To)
	noBuckets := map[Quantity]bool{}
	for _, d := range ds {
		if d.From.Before(out.From) {
			out.From = d.From
		}
		if d.To.After(out.To) {
			out.To = d.To
		}
		for _, w := range d.warnings {
			out.Warn(w)
		}
		for q, v := range d.counters {
			out.SetCounter(q, d.names[q], out.counters[q]+v)
		}
		for q, h := range d.hists {
			acc, seen := out.hists[q]
			switch {
			case !seen:
				acc = HistDelta{Count: h.Count, Sum: h.Sum, Buckets: slices.Clone(h.Buckets)}
			case noBuckets[q] || h.Buckets == nil || !sameBounds(acc.Buckets, h.Buckets):
				if !noBuckets[q] {
					out.warnf("%s: replicas have different bucket layouts; quantile estimates of the sum unavailable", q)
				}
				acc = HistDelta{Count: acc.Count + h.Count, Sum: acc.Sum + h.Sum}
				noBuckets[q] = true
			default:
				acc.Count, acc.Sum = acc.Count+h.Count, acc.Sum+h.Sum
				for i := range acc.Buckets {
					acc.Buckets[i].Count += h.Buckets[i].Count
				}
			}
			out.SetHist(q, d.names[q], acc)
		}
	}
	return out
}
