package promql

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/scrape"
)

// read fills w with every replica's figures over its aligned window: from
// its last scrape at or before w.From (before) to its first after w.To
// (ends), and their sum.
func (s *Source) read(ctx context.Context, dl *scrape.Dialect, ref string, w *Window, before, ends map[replicaKey]time.Time) error {
	keys := make([]replicaKey, 0, len(ends))
	for k := range ends {
		keys = append(keys, k)
	}
	for k := range before {
		if _, ok := ends[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b replicaKey) int { return cmp.Compare(a.name(), b.name()) })
	reps := make([]Replica, len(keys))
	queries := make([][]string, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		from, okB := before[k]
		to, okE := ends[k]
		reps[i] = Replica{Name: k.name(), Instance: k.instance, Pod: k.pod, From: from, To: to}
		switch {
		case !okE:
			w.Warnings = append(w.Warnings, fmt.Sprintf("replica %s: no scrape after the run's start: left out", k.name()))
			continue
		case !okB:
			reps[i].From = w.From
			w.Warnings = append(w.Warnings, fmt.Sprintf("replica %s: no scrape at or before the run's start (new replica?): its window starts at the run's start and increase() extrapolates", k.name()))
		}
		if !to.After(w.To) {
			w.Warnings = append(w.Warnings, fmt.Sprintf("replica %s: no scrape after the run's end within the wait (last %s before it): its figures miss the run's tail", k.name(), w.To.Sub(to).Round(time.Millisecond)))
		} else {
			w.Lag = max(w.Lag, to.Sub(w.To))
		}
		wg.Go(func() { queries[i], errs[i] = s.readReplica(ctx, dl, ref, &reps[i], k) })
	}
	wg.Wait()
	var deltas []*scrape.Delta
	for i := range reps {
		if errs[i] != nil {
			return errs[i]
		}
		if reps[i].Delta == nil {
			continue
		}
		w.Queries = append(w.Queries, queries[i]...)
		w.Resets += reps[i].Resets
		if reps[i].Resets > 0 {
			w.Warnings = append(w.Warnings, fmt.Sprintf("replica %s: %d counter reset(s) in the window (restart?): increase() counted across them", reps[i].Name, reps[i].Resets))
		}
		w.Replicas = append(w.Replicas, reps[i])
		deltas = append(deltas, reps[i].Delta)
	}
	if len(deltas) == 0 {
		return fmt.Errorf("prometheus %s: no replica under %s had a scrape inside the run's window", s.opts.URL, s.opts.Selector)
	}
	w.Total = scrape.Sum(deltas)
	return nil
}

// replicaQuery builds one replica's queries over its window.
type replicaQuery struct {
	s   *Source
	ctx context.Context
	m   []Matcher // replica and model matchers, after the selector's
	rng string    // "[Rms] @ T"
	at  time.Time
	qs  []string
}

// readReplica queries every quantity of dl over r's window.
func (s *Source) readReplica(ctx context.Context, dl *scrape.Dialect, ref string, r *Replica, k replicaKey) ([]string, error) {
	ms := r.To.Sub(r.From).Milliseconds()
	if s.prom3 {
		ms++ // left-open ranges: keep the scrape at From inside
	}
	if ms <= 0 {
		return nil, nil // one scrape only: no change to read
	}
	rq := &replicaQuery{s: s, ctx: ctx, at: r.To,
		m:   []Matcher{{"instance", "=", k.instance}, {"pod", "=", k.pod}},
		rng: fmt.Sprintf("[%dms] @ %s", ms, strconv.FormatFloat(float64(r.To.UnixMilli())/1000, 'f', 3, 64))}
	if f := s.opts.Filter.Model; f != "" && len(dl.ModelLabels) > 0 {
		rq.m = append(rq.m, Matcher{dl.ModelLabels[0], "=", f})
	}
	d := scrape.NewDelta(dl, s.opts.Filter, r.From, r.To)
	r.Gauges = map[scrape.Quantity]Gauge{}
	for _, mp := range dl.Mappings {
		name, ok := dl.MetricName(s.names, mp.Quantity)
		if !ok {
			continue
		}
		switch kind := mp.Quantity.Kind(); {
		case kind == scrape.KindHistogram && mp.Field == scrape.FieldValue:
			h, ok, err := rq.hist(name)
			if err != nil {
				return nil, err
			}
			if ok {
				d.SetHist(mp.Quantity, name, h)
			}
		case kind == scrape.KindHistogram || kind == scrape.KindCounter:
			v, ok, err := rq.scalar("sum(increase(%s%s))", name+fieldSuffix(mp.Field))
			if err != nil {
				return nil, err
			}
			if ok {
				d.SetCounter(mp.Quantity, name, v)
			}
		case kind == scrape.KindGauge:
			g, ok, err := rq.gauge(name, mp.Agg)
			if err != nil {
				return nil, err
			}
			if ok {
				r.Gauges[mp.Quantity] = g
			}
		}
	}
	resets, _, err := rq.scalar("sum(resets(%s%s))", ref)
	if err != nil {
		return nil, err
	}
	r.Resets = int(resets)
	r.Delta = d
	return rq.qs, nil
}

func fieldSuffix(f scrape.Field) string {
	switch f {
	case scrape.FieldSum:
		return "_sum"
	case scrape.FieldCount:
		return "_count"
	}
	return ""
}

// vector runs format (with the series and range filled in) and records it.
func (rq *replicaQuery) vector(format, series string) (model.Vector, error) {
	q := fmt.Sprintf(format, rq.s.opts.Selector.With(series, rq.m...), rq.rng)
	rq.qs = append(rq.qs, q)
	return rq.s.query(rq.ctx, q, rq.at)
}

// scalar runs a query that yields at most one number; false when it
// yields none (no such series) or NaN.
func (rq *replicaQuery) scalar(format, series string) (float64, bool, error) {
	v, err := rq.vector(format, series)
	if err != nil || len(v) == 0 {
		return 0, false, err
	}
	f := float64(v[0].Value)
	return f, !math.IsNaN(f) && !math.IsInf(f, 0), nil
}

// hist reads a histogram's count, sum and cumulative buckets.
func (rq *replicaQuery) hist(name string) (scrape.HistDelta, bool, error) {
	count, ok, err := rq.scalar("sum(increase(%s%s))", name+"_count")
	if err != nil || !ok {
		return scrape.HistDelta{}, false, err
	}
	sum, _, err := rq.scalar("sum(increase(%s%s))", name+"_sum")
	if err != nil {
		return scrape.HistDelta{}, false, err
	}
	v, err := rq.vector("sum by (le) (increase(%s%s))", name+"_bucket")
	if err != nil {
		return scrape.HistDelta{}, false, err
	}
	h := scrape.HistDelta{Count: count, Sum: sum}
	for _, smp := range v {
		ub, err := strconv.ParseFloat(string(smp.Metric["le"]), 64)
		if err != nil {
			continue
		}
		h.Buckets = append(h.Buckets, scrape.Bucket{UpperBound: ub, Count: float64(smp.Value)})
	}
	slices.SortFunc(h.Buckets, func(a, b scrape.Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
	if n := len(h.Buckets); n == 0 || !math.IsInf(h.Buckets[n-1].UpperBound, 1) {
		h.Buckets = nil // a summary, or buckets without +Inf: no quantile estimate
	}
	return h, true, nil
}

// gauge reads a gauge's mean and maximum over the window, combined over
// the replica's series by agg (sum for counts, mean for ratios).
func (rq *replicaQuery) gauge(name string, agg scrape.Agg) (Gauge, bool, error) {
	op, maxOp := "sum", "sum"
	if agg == scrape.AggMean {
		op, maxOp = "avg", "max"
	}
	mean, ok, err := rq.scalar(op+"(avg_over_time(%s%s))", name)
	if err != nil || !ok {
		return Gauge{}, false, err
	}
	// With several series (rare within one replica) a sum of maxima bounds
	// the maximum of the sum.
	mx, _, err := rq.scalar(maxOp+"(max_over_time(%s%s))", name)
	return Gauge{Mean: mean, Max: mx}, true, err
}
