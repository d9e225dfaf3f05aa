package scrape

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Filter selects the series a Diff or Gauge reads.
type Filter struct {
	Model string // "" = sum over all models; else only series whose model label equals it
	// Replica "" = sum over replicas; else only series whose ReplicaLabel
	// (FetchAll's index of the URL) equals it: one replica's figures.
	Replica string
}

// Bucket is one cumulative histogram bucket: Count observations <= UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// HistDelta is a histogram's change over a run, summed over label sets.
// Buckets are cumulative and sorted, ending with +Inf; nil when the server
// exports no buckets (a summary) or the bucket layouts could not be matched.
type HistDelta struct {
	Count, Sum float64
	Buckets    []Bucket
}

// Mean returns Sum/Count, the exact mean of the observations in the delta;
// NaN when there were none.
func (h HistDelta) Mean() float64 {
	if h.Count <= 0 {
		return math.NaN()
	}
	return h.Sum / h.Count
}

// Quantile returns an estimate of the q-quantile (0 <= q <= 1) from the
// bucket counts, interpolating linearly inside the bucket that holds the
// rank, as Prometheus' histogram_quantile does: observations are assumed
// spread evenly within a bucket, the lowest bucket starts at 0 (if its upper
// bound is positive), and a rank in the +Inf bucket returns the highest
// finite bound. The estimate is only as fine as the buckets: when every
// observation sits in the lowest bucket (vLLM's queue-time buckets start at
// 0.3 s, so sub-millisecond waits all land there) the median comes out at
// half that bound whatever the true values; compare with Mean. It is NaN
// when there are no buckets or no observations, or q is out of range.
//
// This is deliberately not bench/stats: there are no samples here, only
// bucket counts, and the estimate must match what Prometheus would show.
func (h HistDelta) Quantile(q float64) float64 {
	bs, counts, i, rank, ok := h.locate(q)
	if !ok {
		return math.NaN()
	}
	if i == len(bs)-1 {
		return bs[len(bs)-2].UpperBound
	}
	if i == 0 && bs[0].UpperBound <= 0 {
		return bs[0].UpperBound
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = bs[i-1].UpperBound, counts[i-1]
	}
	inBucket := counts[i] - below
	if inBucket <= 0 {
		return bs[i].UpperBound
	}
	// Fraction first, then clamp: found by FuzzParse, (ub-lo)*rank/n can
	// round past ub (0.1*3/3 = 0.10000000000000002).
	v := lo + (bs[i].UpperBound-lo)*((rank-below)/inBucket)
	return min(max(v, lo), bs[i].UpperBound)
}

// QuantileBucket returns the bucket that holds the q-quantile's rank: the
// quantile lies in (lo, hi] (hi is +Inf for the overflow bucket; lo is 0
// for the lowest bucket when its bound is positive). placed says whether
// Quantile's interpolation inside it means anything: not when every
// observation sits in that one bucket (the histogram then knows nothing of
// their spread: a 0.9 ms mean beside a median "estimated" at 0.15 s in a
// [0, 0.3] bucket), nor in the overflow bucket (no upper bound to
// interpolate to). ok is false where Quantile is NaN.
func (h HistDelta) QuantileBucket(q float64) (lo, hi float64, placed, ok bool) {
	bs, counts, i, _, ok := h.locate(q)
	if !ok {
		return 0, 0, false, false
	}
	below := 0.0
	if i > 0 {
		lo, below = bs[i-1].UpperBound, counts[i-1]
	} else if bs[0].UpperBound <= 0 {
		lo = math.Inf(-1)
	}
	hi = bs[i].UpperBound
	all := counts[i]-below >= counts[len(counts)-1]
	return lo, hi, !all && !math.IsInf(hi, 1), true
}

// locate finds the bucket i holding the q-quantile's rank, with the
// counts made monotonic; ok is false when there are no buckets or no
// observations, or q is out of range.
func (h HistDelta) locate(q float64) (bs []Bucket, counts []float64, i int, rank float64, ok bool) {
	bs = h.Buckets
	if math.IsNaN(q) || q < 0 || q > 1 || len(bs) < 2 || !math.IsInf(bs[len(bs)-1].UpperBound, 1) {
		return nil, nil, 0, 0, false
	}
	// Counts must not fall as bounds rise; floating-point noise in deltas
	// could make them, so clamp like Prometheus' ensureMonotonic.
	counts = make([]float64, len(bs))
	maxc := 0.0
	for i, b := range bs {
		maxc = max(maxc, b.Count)
		counts[i] = maxc
	}
	total := counts[len(counts)-1]
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, nil, 0, 0, false
	}
	rank = q * total
	i = sort.Search(len(counts)-1, func(i int) bool { return counts[i] >= rank })
	return bs, counts, i, rank, true
}

// Delta is the engine's account of one run: histogram and counter changes
// between two snapshots, per canonical quantity, plus warnings about what
// could not be trusted. It is read-only once Diff returns it.
type Delta struct {
	Dialect  *Dialect
	Filter   Filter
	From, To time.Time // the snapshots' times; From is zero for Diff(nil, s)

	hists    map[Quantity]HistDelta
	counters map[Quantity]float64
	names    map[Quantity]string
	warnings []string
}

// Hist returns the histogram delta for q; false when the server does not
// export q, or it was omitted (see Warnings).
func (d *Delta) Hist(q Quantity) (HistDelta, bool) {
	h, ok := d.hists[q]
	return h, ok
}

// Counter returns the counter delta for q; false when the server does not
// export q, or it was omitted (see Warnings).
func (d *Delta) Counter(q Quantity) (float64, bool) {
	v, ok := d.counters[q]
	return v, ok
}

// MetricName returns the metric family q was read from.
func (d *Delta) MetricName(q Quantity) (string, bool) {
	n, ok := d.names[q]
	return n, ok
}

// Warnings returns why quantities were omitted or may mislead: counter
// resets, changed bucket layouts, a model filter that matched nothing.
func (d *Delta) Warnings() []string { return slices.Clone(d.warnings) }

func (d *Delta) warnf(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	if !slices.Contains(d.warnings, w) {
		d.warnings = append(d.warnings, w)
	}
}

// Diff computes after - before for every histogram and counter quantity of
// dialect dl (detected from after when nil), over the series f selects. A
// nil before means "since the server started": a single snapshot's totals.
// A series absent from before counts as zero; a series that went down or
// vanished is a reset, and its quantity is omitted with a warning.
func Diff(before, after *Snapshot, dl *Dialect, f Filter) *Delta {
	d := &Delta{Dialect: dl, Filter: f, hists: map[Quantity]HistDelta{}, counters: map[Quantity]float64{}, names: map[Quantity]string{}}
	if before != nil {
		d.From = before.At
	}
	if after == nil {
		d.warnf("no /metrics snapshot after the run: engine figures unavailable")
		return d
	}
	d.To = after.At
	if dl == nil {
		var ok bool
		if dl, ok = Detect(after); !ok {
			d.warnf("%s: no vLLM, SGLang, TGI or llama.cpp metrics found: engine figures unavailable", sourceName(after))
			return d
		}
		d.Dialect = dl
	}
	d.checkModel(after)
	for _, m := range dl.Mappings {
		kind := m.Quantity.Kind()
		if kind != KindHistogram && kind != KindCounter {
			continue
		}
		name, ok := dl.MetricName(after, m.Quantity)
		if !ok {
			if bn, inBefore := dl.MetricName(before, m.Quantity); inBefore {
				d.warnf("%s: %s was in the snapshot before the run but not after (server restarted?); omitted", m.Quantity, bn)
			}
			continue
		}
		d.names[m.Quantity] = name
		var bfam *dto.MetricFamily
		if before != nil {
			bfam = before.Families[name]
		}
		sd := seriesDiff{d: d, q: m.Quantity, name: name, dl: dl.forMapping(m), f: f, before: before, after: after}
		if kind == KindHistogram && m.Field == FieldValue {
			if h, ok := sd.hist(bfam, after.Families[name]); ok {
				d.hists[m.Quantity] = h
			}
		} else if v, ok := sd.counter(bfam, after.Families[name], m.Field); ok {
			d.counters[m.Quantity] = v
		}
	}
	return d
}

// checkModel warns when Filter.Model cannot select anything.
func (d *Delta) checkModel(after *Snapshot) {
	if d.Filter.Model == "" {
		return
	}
	if len(d.Dialect.ModelLabels) == 0 {
		d.warnf("%s metrics carry no model label (one model per server): model filter %q not applied", d.Dialect.Name, d.Filter.Model)
		return
	}
	models := map[string]bool{}
	for _, m := range d.Dialect.Mappings {
		name, ok := d.Dialect.MetricName(after, m.Quantity)
		if !ok {
			continue
		}
		for _, s := range after.Families[name].GetMetric() {
			for _, l := range d.Dialect.ModelLabels {
				if v, ok := labelValue(s, l); ok {
					models[v] = true
					break
				}
			}
		}
	}
	if !models[d.Filter.Model] {
		seen := make([]string, 0, len(models))
		for m := range models {
			seen = append(seen, fmt.Sprintf("%q", m))
		}
		sort.Strings(seen)
		d.warnf("model filter %q matches no series; models in %s: %s", d.Filter.Model, sourceName(after), strings.Join(seen, ", "))
	}
}

// Gauge returns the current value of gauge quantity q in s over the series
// f selects: summed over label sets, or averaged for ratios (KV usage).
// False when the dialect has no such gauge or s has no matching series.
func (s *Snapshot) Gauge(dl *Dialect, f Filter, q Quantity) (float64, bool) {
	if s == nil || dl == nil || q.Kind() != KindGauge {
		return 0, false
	}
	m, ok := dl.Mapping(q)
	if !ok {
		return 0, false
	}
	name, ok := dl.MetricName(s, q)
	if !ok {
		return 0, false
	}
	sum, n := 0.0, 0
	mdl := dl.forMapping(m)
	for _, series := range s.Families[name].GetMetric() {
		if !matches(mdl, f, series) {
			continue
		}
		v, ok := scalar(s.Families[name].GetType(), series, m.Field)
		if !ok {
			continue
		}
		sum += v
		n++
	}
	if n == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return 0, false
	}
	if m.Agg == AggMean {
		return sum / float64(n), true
	}
	return sum, true
}

// matches reports whether series passes f under dialect dl. A dialect
// without model labels serves one model, so every series passes the model
// filter.
func matches(dl *Dialect, f Filter, series *dto.Metric) bool {
	if f.Replica != "" {
		if v, _ := labelValue(series, ReplicaLabel); v != f.Replica {
			return false
		}
	}
	if f.Model == "" || len(dl.ModelLabels) == 0 {
		return true
	}
	for _, l := range dl.ModelLabels {
		if v, ok := labelValue(series, l); ok {
			return v == f.Model
		}
	}
	return false
}

func sourceName(s *Snapshot) string {
	if s == nil || s.Source == "" {
		return "/metrics"
	}
	return s.Source
}

// forMapping is dl as m's series are filtered: a GPU's series (PerGPU)
// carry no model label, so the model filter does not apply to them.
func (d *Dialect) forMapping(m Mapping) *Dialect {
	if !m.PerGPU || len(d.ModelLabels) == 0 {
		return d
	}
	c := *d
	c.ModelLabels = nil
	return &c
}
