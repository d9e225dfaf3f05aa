package scrape

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Readout is one snapshot read in canonical quantities: histogram and
// counter totals since the server started, and gauges' current values.
// It is what `servebench scrape` prints.
type Readout struct {
	Source  string
	Dialect *Dialect
	Totals  *Delta               // Diff(nil, s): cumulative since server start
	Gauges  map[Quantity]float64 // current values
	LoRA    *LoRAInfo            // vLLM's LoRA gauge (LoRA); nil without one
	gaugeOf map[Quantity]string  // metric family each gauge came from
}

// Read builds the Readout of s under dialect dl (detected when nil; an
// error when no dialect fits) and filter f.
func Read(s *Snapshot, dl *Dialect, f Filter) (*Readout, error) {
	if dl == nil {
		var ok bool
		if dl, ok = Detect(s); !ok {
			return nil, fmt.Errorf("%s: no vLLM, SGLang, TGI or llama.cpp metrics found (looked for families named %s...)", sourceName(s), strings.Join(prefixes(), "..., "))
		}
	}
	r := &Readout{Source: sourceName(s), Dialect: dl, Totals: Diff(nil, s, dl, f), Gauges: map[Quantity]float64{}, gaugeOf: map[Quantity]string{},
		LoRA: LoRA(s)}
	for _, q := range Quantities {
		if v, ok := s.Gauge(dl, f, q); ok {
			r.Gauges[q] = v
			r.gaugeOf[q], _ = dl.MetricName(s, q)
		}
	}
	return r, nil
}

func prefixes() []string {
	out := make([]string, len(dialects))
	for i, d := range dialects {
		out[i] = d.Prefix
	}
	return out
}

// JSONKey is q's key in JSON output: histogram quantities (in seconds) get
// an "_s" suffix, as in results.json ("engine.ttft_s").
func JSONKey(q Quantity) string {
	if q.Kind() == KindHistogram {
		return string(q) + "_s"
	}
	return string(q)
}

// quantityJSON is {"count","sum","mean"} for a histogram, {"value"} else.
type quantityJSON struct {
	Count *float64 `json:"count,omitempty"`
	Sum   *float64 `json:"sum,omitempty"`
	Mean  *float64 `json:"mean,omitempty"`
	Value *float64 `json:"value,omitempty"`
}

// WriteJSON writes {"dialect": NAME, "quantities": {KEY: {...}}}. A
// histogram is {"count", "sum", "mean"} (mean left out with no
// observations); a counter or gauge is {"value"}. Quantities the server
// does not export are left out. Warnings are not part of it (see Totals).
func (r *Readout) WriteJSON(w io.Writer) error {
	qs := map[string]quantityJSON{}
	for _, q := range Quantities {
		switch q.Kind() {
		case KindHistogram:
			if h, ok := r.Totals.Hist(q); ok {
				count, sum := h.Count, h.Sum
				j := quantityJSON{Count: &count, Sum: &sum}
				if m := h.Mean(); !math.IsNaN(m) && !math.IsInf(m, 0) {
					j.Mean = &m
				}
				qs[JSONKey(q)] = j
			}
		case KindCounter:
			if v, ok := r.Totals.Counter(q); ok {
				qs[JSONKey(q)] = quantityJSON{Value: &v}
			}
		case KindGauge:
			if v, ok := r.Gauges[q]; ok {
				qs[JSONKey(q)] = quantityJSON{Value: &v}
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Dialect    string                  `json:"dialect"`
		Quantities map[string]quantityJSON `json:"quantities"`
		LoRA       *LoRAInfo               `json:"lora,omitempty"`
	}{r.Dialect.Name, qs, r.LoRA})
}

// WriteText writes a human-readable table: the dialect, each quantity with
// the metric it came from, quantile estimates, what is not exported, the
// dialect's notes and any warnings.
func (r *Readout) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "source:  %s\n", r.Source)
	fmt.Fprintf(&b, "dialect: %s (%s)\n", r.Dialect.Name, r.Dialect.Title)
	if r.Totals.Filter.Model != "" {
		fmt.Fprintf(&b, "model:   %s\n", r.Totals.Filter.Model)
	}
	b.WriteString("Cumulative totals since the server started (one snapshot; `servebench run` reports the change over a run).\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "histogram (s)\tcount\tsum\tmean\tp50~\tp90~\tp99~\tmetric")
	var missing []string
	nh := 0
	for _, q := range Quantities {
		if q.Kind() != KindHistogram {
			continue
		}
		h, ok := r.Totals.Hist(q)
		if !ok {
			missing = append(missing, JSONKey(q))
			continue
		}
		nh++
		name, _ := r.Totals.MetricName(q)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", JSONKey(q), num(h.Count), num(h.Sum), num(h.Mean()),
			quantileText(h, 0.5), quantileText(h, 0.9), quantileText(h, 0.99), name)
	}
	if nh == 0 {
		fmt.Fprintln(tw, "(none exported)\t\t\t\t\t\t\t")
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "counter / gauge\tvalue\t\t\t\t\t\tmetric")
	for _, q := range Quantities {
		var v float64
		var ok bool
		var name string
		switch q.Kind() {
		case KindCounter:
			v, ok = r.Totals.Counter(q)
			name, _ = r.Totals.MetricName(q)
		case KindGauge:
			v, ok = r.Gauges[q]
			name = r.gaugeOf[q] + " (gauge, now)"
		}
		if q.Kind() == KindHistogram {
			continue
		}
		if !ok {
			missing = append(missing, JSONKey(q))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t%s\n", JSONKey(q), num(v), name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n~ quantiles are estimates: linear interpolation inside the server's histogram buckets; " +
		"where every observation sits in one bucket (or past the last bound) the bucket is given instead (<= 0.3: at most 0.3).\n")
	if l := r.LoRA; l != nil {
		fmt.Fprintf(&b, "lora: max_lora %d, running [%s], waiting [%s] (%s, its latest series)\n",
			l.MaxLoRA, strings.Join(l.Running, ","), strings.Join(l.Waiting, ","), LoRAFamily)
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "not exported: %s\n", strings.Join(missing, ", "))
	}
	for _, q := range Quantities {
		if m, ok := r.Dialect.Mapping(q); ok && m.Note != "" {
			if _, used := r.Totals.MetricName(q); used || r.gaugeOf[q] != "" {
				fmt.Fprintf(&b, "note: %s: %s\n", JSONKey(q), m.Note)
			}
		}
	}
	for _, n := range r.Dialect.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, wn := range r.Totals.Warnings() {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num formats a figure: integers in full (token counts), else 4 significant
// digits; "-" for NaN (no data).
// quantileText is h's q-quantile as the table prints it: the estimate, or
// the bucket where h cannot place it (HistDelta.QuantileBucket).
func quantileText(h HistDelta, q float64) string {
	lo, hi, placed, ok := h.QuantileBucket(q)
	switch {
	case !ok || placed || math.IsInf(lo, -1):
		return num(h.Quantile(q))
	case math.IsInf(hi, 1):
		return "> " + num(lo)
	case lo <= 0:
		return "<= " + num(hi)
	}
	return num(lo) + "-" + num(hi)
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
