package promql

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/servebench/servebench/scrape"
)

// Snapshot reads, at t, the latest sample Prometheus holds of every series
// the dialect maps under the selector, as a scrape.Snapshot: what /metrics
// showed at the last scrape before t, histograms reassembled from their
// _bucket, _sum and _count series. Series keep their labels (instance and
// pod too), so replicas stay apart and Diff and Gauge sum them. Its time
// is t; the samples are up to a scrape interval older.
func (s *Source) Snapshot(ctx context.Context, t time.Time) (*scrape.Snapshot, error) {
	dl, err := s.Detect(ctx)
	if err != nil {
		return nil, err
	}
	kinds := map[string]dto.MetricType{} // family -> type
	var names []string                   // series names to ask for
	for _, m := range dl.Mappings {
		name, ok := dl.MetricName(s.names, m.Quantity)
		if !ok {
			continue
		}
		switch k := m.Quantity.Kind(); {
		case k == scrape.KindHistogram || m.Field != scrape.FieldValue:
			kinds[name] = dto.MetricType_HISTOGRAM
			names = append(names, name+"_bucket", name+"_sum", name+"_count")
		case k == scrape.KindCounter:
			kinds[name] = dto.MetricType_COUNTER
			names = append(names, name)
		default:
			kinds[name] = dto.MetricType_GAUGE
			names = append(names, name)
		}
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	q := s.opts.Selector.With("", Matcher{"__name__", "=~", strings.Join(quoted, "|")})
	v, err := s.query(ctx, q, t)
	if err != nil {
		return nil, err
	}
	b := snapshotBuilder{kinds: kinds, fams: map[string]*dto.MetricFamily{}, series: map[string]*dto.Metric{}}
	for _, smp := range v {
		b.add(smp)
	}
	return &scrape.Snapshot{At: t, Families: b.fams, Source: s.opts.URL}, nil
}

// snapshotBuilder turns Prometheus samples back into metric families.
type snapshotBuilder struct {
	kinds  map[string]dto.MetricType
	fams   map[string]*dto.MetricFamily
	series map[string]*dto.Metric // by family and labels (le left out)
}

func (b *snapshotBuilder) add(smp *model.Sample) {
	name := string(smp.Metric[model.MetricNameLabel])
	fam, part := name, ""
	if _, ok := b.kinds[name]; !ok {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suf); ok && b.kinds[base] == dto.MetricType_HISTOGRAM {
				fam, part = base, suf
			}
		}
	}
	typ, ok := b.kinds[fam]
	if !ok {
		return
	}
	var lps []*dto.LabelPair
	for k, val := range smp.Metric {
		if k != model.MetricNameLabel && (k != "le" || part != "_bucket") {
			lps = append(lps, &dto.LabelPair{Name: proto.String(string(k)), Value: proto.String(string(val))})
		}
	}
	slices.SortFunc(lps, func(x, y *dto.LabelPair) int { return strings.Compare(x.GetName(), y.GetName()) })
	key := fam
	for _, lp := range lps {
		key += "\xff" + lp.GetName() + "\xfe" + lp.GetValue()
	}
	m := b.series[key]
	if m == nil {
		m = &dto.Metric{Label: lps}
		b.series[key] = m
		f := b.fams[fam]
		if f == nil {
			f = &dto.MetricFamily{Name: proto.String(fam), Type: typ.Enum()}
			b.fams[fam] = f
		}
		f.Metric = append(f.Metric, m)
	}
	val := float64(smp.Value)
	switch {
	case typ == dto.MetricType_COUNTER:
		m.Counter = &dto.Counter{Value: proto.Float64(val)}
	case typ == dto.MetricType_GAUGE:
		m.Gauge = &dto.Gauge{Value: proto.Float64(val)}
	default:
		if m.Histogram == nil {
			m.Histogram = &dto.Histogram{}
		}
		h := m.Histogram
		switch part {
		case "_sum":
			h.SampleSum = proto.Float64(val)
		case "_count":
			h.SampleCountFloat = proto.Float64(val)
		case "_bucket":
			ub, err := strconv.ParseFloat(string(smp.Metric["le"]), 64)
			if err == nil {
				h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(ub), CumulativeCountFloat: proto.Float64(val)})
			}
		}
	}
}

// ScrapeInterval is the longest scrape interval of the targets under the
// selector (from the targets API; 1 m when it does not say).
func (s *Source) ScrapeInterval(ctx context.Context) (time.Duration, error) {
	dl, err := s.Detect(ctx)
	if err != nil {
		return 0, err
	}
	ref, ok := s.refSeries(dl)
	if !ok {
		return 0, fmt.Errorf("prometheus %s: %s exports no counter or histogram servebench reads", s.opts.URL, dl.Title)
	}
	reps, _, err := s.latest(ctx, ref, time.Now())
	if err != nil {
		return 0, err
	}
	return s.interval(ctx, reps), nil
}
