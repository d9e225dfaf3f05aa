package scrape

import (
	"cmp"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// seriesDiff computes one quantity's delta series by series.
type seriesDiff struct {
	d             *Delta
	q             Quantity
	name          string
	dl            *Dialect
	f             Filter
	before, after *Snapshot

	createdB, createdA map[string]float64 // _created timestamps by series key; nil when not exported
	createdLoaded      bool
}

// histVals is one series' histogram (or summary) reading.
type histVals struct {
	count, sum float64
	buckets    []Bucket // sorted, ending with +Inf; nil for a summary
}

// counter sums after - before of field over the selected series.
func (sd *seriesDiff) counter(bfam, afam *dto.MetricFamily, field Field) (float64, bool) {
	bidx := index(bfam)
	seen := make(map[string]bool, len(afam.GetMetric()))
	total, any := 0.0, false
	for _, am := range afam.GetMetric() {
		if !matches(sd.dl, sd.f, am) {
			continue
		}
		av, ok := scalar(afam.GetType(), am, field)
		if !ok {
			continue
		}
		key := seriesKey(am)
		seen[key] = true
		bv := 0.0
		if bm := bidx[key]; bm != nil {
			bv, _ = scalar(bfam.GetType(), bm, field)
		}
		if sd.createdChanged(afam.GetType(), key) {
			sd.d.warnf("%s: %s%s was re-created during the run (counter reset: server restarted?); omitted", sd.q, sd.name, labelString(am))
			return 0, false
		}
		if av < bv {
			sd.d.warnf("%s: %s%s went down from %g to %g (counter reset: server restarted?); omitted", sd.q, sd.name, labelString(am), bv, av)
			return 0, false
		}
		total += av - bv
		any = true
	}
	if !any || sd.vanished(bfam, seen, func(m *dto.Metric) float64 { v, _ := scalar(bfam.GetType(), m, field); return v }) {
		return 0, false
	}
	if math.IsNaN(total) || math.IsInf(total, 0) {
		sd.d.warnf("%s: %s has a NaN or infinite value; omitted", sd.q, sd.name)
		return 0, false
	}
	return total, true
}

// hist sums after - before of the selected histogram series.
func (sd *seriesDiff) hist(bfam, afam *dto.MetricFamily) (HistDelta, bool) {
	bidx := index(bfam)
	seen := make(map[string]bool, len(afam.GetMetric()))
	var acc HistDelta
	any, noBuckets := false, false
	for _, am := range afam.GetMetric() {
		if !matches(sd.dl, sd.f, am) {
			continue
		}
		av, ok := histOf(afam.GetType(), am)
		if !ok {
			continue
		}
		key := seriesKey(am)
		seen[key] = true
		var bv histVals
		if bm := bidx[key]; bm != nil {
			bv, _ = histOf(bfam.GetType(), bm)
		}
		if sd.createdChanged(afam.GetType(), key) {
			sd.d.warnf("%s: %s%s was re-created during the run (counter reset: server restarted?); omitted", sd.q, sd.name, labelString(am))
			return HistDelta{}, false
		}
		dv, reset, layout := subtractHist(av, bv)
		if reset {
			sd.d.warnf("%s: %s%s count or buckets went down (from %g to %g observations; counter reset: server restarted?); omitted", sd.q, sd.name, labelString(am), bv.count, av.count)
			return HistDelta{}, false
		}
		if layout {
			sd.d.warnf("%s: %s%s changed its buckets during the run; quantile estimates unavailable", sd.q, sd.name, labelString(am))
		}
		acc.Count += dv.count
		acc.Sum += dv.sum
		switch {
		case noBuckets:
		case dv.buckets == nil:
			acc.Buckets, noBuckets = nil, true
		case !any:
			acc.Buckets = dv.buckets
		case sameBounds(acc.Buckets, dv.buckets):
			for i := range acc.Buckets {
				acc.Buckets[i].Count += dv.buckets[i].Count
			}
		default:
			sd.d.warnf("%s: %s series have different bucket layouts; quantile estimates unavailable", sd.q, sd.name)
			acc.Buckets, noBuckets = nil, true
		}
		any = true
	}
	if !any || sd.vanished(bfam, seen, func(m *dto.Metric) float64 { h, _ := histOf(bfam.GetType(), m); return h.count }) {
		return HistDelta{}, false
	}
	if math.IsNaN(acc.Count+acc.Sum) || math.IsInf(acc.Count, 0) || math.IsInf(acc.Sum, 0) {
		sd.d.warnf("%s: %s has a NaN or infinite count or sum; omitted", sd.q, sd.name)
		return HistDelta{}, false
	}
	return acc, true
}

// vanished reports (and warns about) a selected series that had counted
// something before the run but is gone after it: a restart, not a zero.
func (sd *seriesDiff) vanished(bfam *dto.MetricFamily, inAfter map[string]bool, value func(*dto.Metric) float64) bool {
	for _, bm := range bfam.GetMetric() {
		if !matches(sd.dl, sd.f, bm) || inAfter[seriesKey(bm)] {
			continue
		}
		if value(bm) > 0 {
			sd.d.warnf("%s: %s%s disappeared during the run (server restarted?); omitted", sd.q, sd.name, labelString(bm))
			return true
		}
	}
	return false
}

// createdChanged reports whether the series' _created timestamp differs
// between the snapshots: the series was re-created, so its counts restarted
// even if they have since climbed past the old ones.
func (sd *seriesDiff) createdChanged(t dto.MetricType, key string) bool {
	if sd.before == nil {
		return false
	}
	if !sd.createdLoaded {
		sd.createdLoaded = true
		cn := createdName(sd.name, t)
		sd.createdB = createdIndex(sd.before.Families[cn])
		sd.createdA = createdIndex(sd.after.Families[cn])
	}
	b, okB := sd.createdB[key]
	a, okA := sd.createdA[key]
	return okB && okA && a != b
}

// createdName is the family prometheus_client exports a series' creation
// time in: foo_total -> foo_created for counters, foo -> foo_created else.
func createdName(name string, t dto.MetricType) string {
	if t == dto.MetricType_COUNTER {
		name = strings.TrimSuffix(name, "_total")
	}
	return name + "_created"
}

func createdIndex(fam *dto.MetricFamily) map[string]float64 {
	if fam == nil {
		return nil
	}
	out := make(map[string]float64, len(fam.GetMetric()))
	for _, m := range fam.GetMetric() {
		if v, ok := scalar(fam.GetType(), m, FieldValue); ok {
			out[seriesKey(m)] = v
		}
	}
	return out
}

// subtractHist returns a - b. reset: a count or bucket went down. layout:
// the bucket bounds differ, so the delta keeps count and sum only.
func subtractHist(a, b histVals) (d histVals, reset, layout bool) {
	if a.count < b.count {
		return histVals{}, true, false
	}
	d = histVals{count: a.count - b.count, sum: a.sum - b.sum}
	switch {
	case a.buckets == nil:
	case b.buckets == nil && b.count == 0: // series new in after: all its buckets are the delta
		d.buckets = slices.Clone(a.buckets)
	case sameBounds(a.buckets, b.buckets):
		d.buckets = make([]Bucket, len(a.buckets))
		for i := range a.buckets {
			c := a.buckets[i].Count - b.buckets[i].Count
			if c < 0 {
				return histVals{}, true, false
			}
			d.buckets[i] = Bucket{UpperBound: a.buckets[i].UpperBound, Count: c}
		}
	default:
		layout = true
	}
	return d, false, layout
}

func sameBounds(a, b []Bucket) bool {
	return slices.EqualFunc(a, b, func(x, y Bucket) bool { return x.UpperBound == y.UpperBound })
}

// histOf reads a histogram or summary series.
func histOf(t dto.MetricType, m *dto.Metric) (histVals, bool) {
	switch t {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := m.GetHistogram()
		if h == nil {
			return histVals{}, false
		}
		v := histVals{count: h.GetSampleCountFloat(), sum: h.GetSampleSum()}
		if v.count == 0 {
			v.count = float64(h.GetSampleCount())
		}
		for _, b := range h.GetBucket() {
			c := b.GetCumulativeCountFloat()
			if c == 0 {
				c = float64(b.GetCumulativeCount())
			}
			v.buckets = append(v.buckets, Bucket{UpperBound: b.GetUpperBound(), Count: c})
		}
		slices.SortStableFunc(v.buckets, func(x, y Bucket) int { return cmp.Compare(x.UpperBound, y.UpperBound) })
		if n := len(v.buckets); n == 0 || !math.IsInf(v.buckets[n-1].UpperBound, 1) {
			v.buckets = append(v.buckets, Bucket{UpperBound: math.Inf(1), Count: v.count})
		}
		return v, true
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		if s == nil {
			return histVals{}, false
		}
		return histVals{count: float64(s.GetSampleCount()), sum: s.GetSampleSum()}, true
	}
	return histVals{}, false
}

// scalar reads one number from a series: its value, or a histogram's or
// summary's sum or count.
func scalar(t dto.MetricType, m *dto.Metric, f Field) (float64, bool) {
	if f == FieldSum || f == FieldCount {
		h, ok := histOf(t, m)
		if !ok {
			return 0, false
		}
		if f == FieldSum {
			return h.sum, true
		}
		return h.count, true
	}
	switch t {
	case dto.MetricType_COUNTER:
		if c := m.GetCounter(); c != nil {
			return c.GetValue(), true
		}
	case dto.MetricType_GAUGE:
		if g := m.GetGauge(); g != nil {
			return g.GetValue(), true
		}
	case dto.MetricType_UNTYPED:
		if u := m.GetUntyped(); u != nil {
			return u.GetValue(), true
		}
	}
	return 0, false
}

// index maps a family's series by label set.
func index(fam *dto.MetricFamily) map[string]*dto.Metric {
	if fam == nil {
		return nil
	}
	out := make(map[string]*dto.Metric, len(fam.GetMetric()))
	for _, m := range fam.GetMetric() {
		out[seriesKey(m)] = m
	}
	return out
}
