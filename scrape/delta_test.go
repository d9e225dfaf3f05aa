package scrape

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func mustParse(tb testing.TB, text string) *Snapshot {
	tb.Helper()
	s, err := ParseSource(strings.NewReader(text), tb.Name())
	if err != nil {
		tb.Fatalf("parse: %v\n%s", err, text)
	}
	return s
}

// series is one histogram series for expo: its labels and cumulative
// bucket counts (last one is +Inf) plus sum.
type series struct {
	labels string // `engine="0",model_name="m"`
	counts []float64
	sum    float64
}

// histFamily renders a vLLM-style histogram family.
func histFamily(name string, bounds []float64, ss ...series) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
	for _, s := range ss {
		for i, c := range s.counts {
			le := "+Inf"
			if i < len(bounds) {
				le = fmt.Sprint(bounds[i])
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %g\n", name, s.labels, le, c)
		}
		fmt.Fprintf(&b, "%s_sum{%s} %g\n%s_count{%s} %g\n", name, s.labels, s.sum, name, s.labels, s.counts[len(s.counts)-1])
	}
	return b.String()
}

// counterFamily renders a counter family, one line per labels=value pair.
func counterFamily(name string, kv ...any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE %s counter\n", name)
	for i := 0; i < len(kv); i += 2 {
		fmt.Fprintf(&b, "%s{%s} %v\n", name, kv[i], kv[i+1])
	}
	return b.String()
}

func gaugeFamily(name string, kv ...any) string {
	return strings.Replace(counterFamily(name, kv...), " counter\n", " gauge\n", 1)
}

var ttftBounds = []float64{0.1, 1}

const m0 = `engine="0",model_name="m"`

// TestDiffHistogramMean: mean is delta sum / delta count, buckets are
// per-bucket deltas.
func TestDiffHistogramMean(t *testing.T) {
	before := mustParse(t, histFamily("vllm:time_to_first_token_seconds", ttftBounds, series{m0, []float64{4, 10, 10}, 1.0}))
	after := mustParse(t, histFamily("vllm:time_to_first_token_seconds", ttftBounds, series{m0, []float64{4, 25, 30}, 5.0}))
	d := Diff(before, after, nil, Filter{})
	h, ok := d.Hist(EngineTTFT)
	if !ok {
		t.Fatalf("TTFT missing; warnings %q", d.Warnings())
	}
	if h.Count != 20 || h.Sum != 4 || math.Abs(h.Mean()-0.2) > 1e-15 {
		t.Errorf("delta count/sum/mean = %g/%g/%g, want 20/4/0.2", h.Count, h.Sum, h.Mean())
	}
	want := []Bucket{{0.1, 0}, {1, 15}, {math.Inf(1), 20}}
	if !slices.Equal(h.Buckets, want) {
		t.Errorf("delta buckets = %v, want %v", h.Buckets, want)
	}
	if len(d.Warnings()) != 0 {
		t.Errorf("unexpected warnings %q", d.Warnings())
	}
	// No observations in the run: count 0, mean NaN, not an error.
	z := Diff(after, after, nil, Filter{})
	if h, ok := z.Hist(EngineTTFT); !ok || h.Count != 0 || !math.IsNaN(h.Mean()) || !math.IsNaN(h.Quantile(0.5)) {
		t.Errorf("self-diff = %+v, %v; want count 0 and NaN mean/quantile", h, ok)
	}
}

// uniformHist buckets n observations spread evenly over (lo, hi] into
// bounds 1, 2, ..., 10 and +Inf.
func uniformHist(lo, hi float64, n int) ([]float64, float64) {
	counts := make([]float64, 11)
	sum := 0.0
	for i := range n {
		x := lo + (hi-lo)*(float64(i)+0.5)/float64(n)
		sum += x
		for b := range counts {
			if b == 10 || x <= float64(b+1) {
				counts[b]++
			}
		}
	}
	return counts, sum
}

// TestQuantileKnownDistribution: for observations spread evenly inside
// each bucket, linear interpolation is exact, so the estimates must equal
// the true quantiles; a delta must reflect only the run's observations.
func TestQuantileKnownDistribution(t *testing.T) {
	bounds := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	c1, s1 := uniformHist(0, 10, 1000)
	before := mustParse(t, histFamily("vllm:e2e_request_latency_seconds", bounds, series{m0, c1, s1}))
	all := Diff(nil, before, nil, Filter{})
	h, _ := all.Hist(EngineE2E)
	for _, q := range []float64{0.1, 0.25, 0.5, 0.9, 0.95, 0.99} {
		if got := h.Quantile(q); math.Abs(got-10*q) > 1e-9 {
			t.Errorf("uniform(0,10] p%g estimate = %g, want %g", q*100, got, 10*q)
		}
	}
	if math.Abs(h.Mean()-5) > 1e-9 {
		t.Errorf("mean = %g, want 5", h.Mean())
	}
	// The run adds 1000 observations uniform on (0,1]: its delta's median is
	// 0.5 although the cumulative histogram's is about 2.75.
	c2, s2 := uniformHist(0, 1, 1000)
	for i := range c2 {
		c2[i] += c1[i]
	}
	after := mustParse(t, histFamily("vllm:e2e_request_latency_seconds", bounds, series{m0, c2, s1 + s2}))
	h, _ = Diff(before, after, nil, Filter{}).Hist(EngineE2E)
	if got := h.Quantile(0.5); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("run-only median = %g, want 0.5", got)
	}
	if math.Abs(h.Mean()-0.5) > 1e-9 {
		t.Errorf("run-only mean = %g, want 0.5", h.Mean())
	}
}

// TestQuantileBucket: a histogram places a quantile inside its bucket only
// when the observations spread over more than one bucket; with all of them
// in one (the seed's 20 requests of 3.857 s in vLLM's (2.5, 5] E2E bucket,
// sub-millisecond prefills in a [0, 0.3] bucket) or past the last bound,
// the bucket is all it knows.
func TestQuantileBucket(t *testing.T) {
	inf := math.Inf(1)
	spread := HistDelta{Count: 10, Buckets: []Bucket{{0.5, 2}, {1, 6}, {inf, 10}}}
	oneMid := HistDelta{Count: 20, Sum: 20 * 3.857, Buckets: []Bucket{{1, 0}, {2.5, 0}, {5, 20}, {10, 20}, {inf, 20}}}
	oneLow := HistDelta{Count: 20, Sum: 20 * 0.0009, Buckets: []Bucket{{0.3, 20}, {0.5, 20}, {inf, 20}}}
	cases := []struct {
		name       string
		h          HistDelta
		q          float64
		lo, hi     float64
		placed     bool
		estimateIn bool // Quantile's value lies in (lo, hi]
	}{
		{"spread, rank in (0.5, 1]", spread, 0.5, 0.5, 1, true, true},
		{"spread, rank past the last bound", spread, 0.99, 1, inf, false, false},
		{"one bucket (2.5, 5]: median", oneMid, 0.5, 2.5, 5, false, true},
		{"one bucket (2.5, 5]: p99", oneMid, 0.99, 2.5, 5, false, true},
		{"one bucket [0, 0.3]: median", oneLow, 0.5, 0, 0.3, false, true},
	}
	for _, c := range cases {
		lo, hi, placed, ok := c.h.QuantileBucket(c.q)
		if !ok || lo != c.lo || hi != c.hi || placed != c.placed {
			t.Errorf("%s: (%g, %g] placed %v ok %v, want (%g, %g] placed %v", c.name, lo, hi, placed, ok, c.lo, c.hi, c.placed)
		}
		if v := c.h.Quantile(c.q); c.estimateIn && !(v > c.lo && v <= c.hi) {
			t.Errorf("%s: Quantile %g outside its bucket", c.name, v)
		}
	}
	if _, _, _, ok := (HistDelta{}).QuantileBucket(0.5); ok {
		t.Error("no buckets: ok")
	}
}

// TestQuantileEdges follows Prometheus' histogram_quantile on the edges.
func TestQuantileEdges(t *testing.T) {
	inf := math.Inf(1)
	h := HistDelta{Count: 10, Buckets: []Bucket{{0.5, 2}, {1, 6}, {inf, 10}}}
	cases := []struct {
		q, want float64
		why     string
	}{
		{0.1, 0.25, "rank 1 of 2 in (0, 0.5]: the lowest bucket starts at 0"},
		{0.4, 0.75, "rank 4: 2 of the 4 in (0.5, 1]"},
		{0.6, 1, "rank 6: top of (0.5, 1]"},
		{0.9, 1, "rank 9 in +Inf: the highest finite bound"},
		{0, 0, "q=0: start of the first bucket"},
		{-0.1, math.NaN(), "q below 0"},
		{1.1, math.NaN(), "q above 1"},
	}
	for _, c := range cases {
		got := h.Quantile(c.q)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("Quantile(%g) = %g, want %g (%s)", c.q, got, c.want, c.why)
		}
	}
	if got := (HistDelta{Count: 3, Sum: 1}).Quantile(0.5); !math.IsNaN(got) {
		t.Errorf("no buckets (a summary): Quantile = %g, want NaN", got)
	}
	// Found by FuzzParse: +Inf below a finite bucket (no _count line) is
	// clamped, and rounding must not carry the estimate past the bound.
	odd := HistDelta{Buckets: []Bucket{{0.1, 3}, {inf, 0}}}
	if got := odd.Quantile(1); got != 0.1 {
		t.Errorf("non-monotonic buckets: Quantile(1) = %.17g, want 0.1", got)
	}
	// Negative-bound first bucket returns its bound, as Prometheus does.
	neg := HistDelta{Count: 4, Buckets: []Bucket{{-1, 2}, {1, 4}, {inf, 4}}}
	if got := neg.Quantile(0.25); got != -1 {
		t.Errorf("negative first bound: Quantile(0.25) = %g, want -1", got)
	}
}

// TestDiffCounterReset: a counter or histogram that went down, or was
// re-created, is reported as a warning and omitted; other quantities stay.
func TestDiffCounterReset(t *testing.T) {
	before := mustParse(t, counterFamily("vllm:prompt_tokens_total", m0, 1000)+
		counterFamily("vllm:generation_tokens_total", m0, 500)+
		histFamily("vllm:time_to_first_token_seconds", ttftBounds, series{m0, []float64{4, 10, 10}, 1}))
	after := mustParse(t, counterFamily("vllm:prompt_tokens_total", m0, 50)+
		counterFamily("vllm:generation_tokens_total", m0, 700)+
		histFamily("vllm:time_to_first_token_seconds", ttftBounds, series{m0, []float64{1, 3, 3}, 0.2}))
	d := Diff(before, after, nil, Filter{})
	if v, ok := d.Counter(EnginePromptTokens); ok {
		t.Errorf("prompt tokens went 1000 -> 50 but Counter reported %g", v)
	}
	if h, ok := d.Hist(EngineTTFT); ok {
		t.Errorf("TTFT count went 10 -> 3 but Hist reported %+v", h)
	}
	if v, ok := d.Counter(EngineGenerationTokens); !ok || v != 200 {
		t.Errorf("generation tokens = %g, %v; want 200 (unaffected by the other resets)", v, ok)
	}
	w := strings.Join(d.Warnings(), "\n")
	for _, want := range []string{"engine.prompt_tokens: vllm:prompt_tokens_total", "went down from 1000 to 50", "engine.ttft: vllm:time_to_first_token_seconds", "counter reset"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
}

// TestDiffCreatedReset: a restart that has already counted past the old
// value is caught by the _created timestamp prometheus_client exports.
func TestDiffCreatedReset(t *testing.T) {
	created := func(ts float64) string {
		return gaugeFamily("vllm:prompt_tokens_created", m0, ts)
	}
	before := mustParse(t, counterFamily("vllm:prompt_tokens_total", m0, 100)+created(1.7e9))
	after := mustParse(t, counterFamily("vllm:prompt_tokens_total", m0, 400)+created(1.7e9+60))
	d := Diff(before, after, nil, Filter{})
	if v, ok := d.Counter(EnginePromptTokens); ok {
		t.Errorf("re-created counter reported %g", v)
	}
	if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(w, "re-created") {
		t.Errorf("warnings %q do not mention the re-creation", w)
	}
	same := mustParse(t, counterFamily("vllm:prompt_tokens_total", m0, 400)+created(1.7e9))
	if v, ok := Diff(before, same, nil, Filter{}).Counter(EnginePromptTokens); !ok || v != 300 {
		t.Errorf("same _created: delta = %g, %v; want 300", v, ok)
	}
}

// TestDiffMissingBefore: a series the server creates on first observation
// (SGLang) counts as zero before the run.
func TestDiffMissingBefore(t *testing.T) {
	before := mustParse(t, counterFamily("sglang:prompt_tokens_total", `model_name="a"`, 10)+
		gaugeFamily("sglang:num_running_reqs", `model_name="a"`, 0))
	after := mustParse(t, counterFamily("sglang:prompt_tokens_total", `model_name="a"`, 30, `model_name="b"`, 7)+
		gaugeFamily("sglang:num_running_reqs", `model_name="a"`, 2)+
		histFamily("sglang:time_to_first_token_seconds", ttftBounds, series{`model_name="a"`, []float64{1, 4, 5}, 1.5}))
	d := Diff(before, after, nil, Filter{})
	if d.Dialect.Name != "sglang" {
		t.Fatalf("dialect %s", d.Dialect.Name)
	}
	h, ok := d.Hist(EngineTTFT)
	if !ok || h.Count != 5 || h.Sum != 1.5 || h.Buckets[1].Count != 4 {
		t.Errorf("TTFT absent before: delta = %+v, %v; want the whole after histogram", h, ok)
	}
	if v, ok := d.Counter(EnginePromptTokens); !ok || v != 27 {
		t.Errorf("prompt tokens = %g, %v; want 20 (model a) + 7 (model b, new)", v, ok)
	}
	if len(d.Warnings()) != 0 {
		t.Errorf("new series are not resets: warnings %q", d.Warnings())
	}
}

// TestDiffVanishedSeries: a series that had counted and is gone after the
// run is a restart, not a zero.
func TestDiffVanishedSeries(t *testing.T) {
	before := mustParse(t, counterFamily("vllm:prompt_tokens_total", `engine="0",model_name="m"`, 10, `engine="1",model_name="m"`, 5))
	after := mustParse(t, counterFamily("vllm:prompt_tokens_total", `engine="0",model_name="m"`, 12))
	d := Diff(before, after, nil, Filter{})
	if v, ok := d.Counter(EnginePromptTokens); ok {
		t.Errorf("engine 1 vanished, yet prompt tokens = %g", v)
	}
	if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(w, `engine="1"`) || !strings.Contains(w, "disappeared") {
		t.Errorf("warnings %q do not name the vanished series", w)
	}
}

// multi is two engines serving two models.
func multi(t *testing.T, scale float64) *Snapshot {
	var ss []series
	var kv []any
	for e := range 2 {
		for i, m := range []string{"a", "b"} {
			n := scale * float64(1+e+2*i) // a/e0 1, a/e1 2, b/e0 3, b/e1 4
			l := fmt.Sprintf(`engine="%d",model_name="%s"`, e, m)
			ss = append(ss, series{l, []float64{0, n, n}, n * 0.5})
			kv = append(kv, l, 100*n)
		}
	}
	return mustParse(t, histFamily("vllm:request_queue_time_seconds", ttftBounds, ss...)+
		counterFamily("vllm:request_success_total", kv...)+
		gaugeFamily("vllm:num_requests_running", kv...)+
		gaugeFamily("vllm:kv_cache_usage_perc", `engine="0",model_name="a"`, 0.2, `engine="1",model_name="a"`, 0.4,
			`engine="0",model_name="b"`, 0.6, `engine="1",model_name="b"`, 0.8))
}

// TestDiffSumsEnginesAndModels: sums over engine and model_name; Filter
// selects one model; an unknown model warns.
func TestDiffSumsEnginesAndModels(t *testing.T) {
	before, after := multi(t, 1), multi(t, 3)
	cases := []struct {
		model           string
		count, requests float64
		running, kv     float64
	}{
		{"", 20, 2000, 3000, 0.5},  // all four: (1+2+3+4)*(3-1) observations
		{"a", 6, 600, 900, 0.3},    // a/e0 + a/e1 = (1+2)*2
		{"b", 14, 1400, 2100, 0.7}, // b/e0 + b/e1 = (3+4)*2
	}
	for _, c := range cases {
		f := Filter{Model: c.model}
		d := Diff(before, after, nil, f)
		h, _ := d.Hist(EngineQueue)
		r, _ := d.Counter(EngineRequests)
		if h.Count != c.count || h.Sum != c.count*0.5 || h.Buckets[1].Count != c.count || r != c.requests {
			t.Errorf("model %q: queue count %g sum %g, requests %g; want %g, %g, %g", c.model, h.Count, h.Sum, r, c.count, c.count*0.5, c.requests)
		}
		if v, _ := after.Gauge(d.Dialect, f, EngineRunning); v != c.running {
			t.Errorf("model %q: running = %g, want %g (sum)", c.model, v, c.running)
		}
		if v, _ := after.Gauge(d.Dialect, f, EngineKVUsage); math.Abs(v-c.kv) > 1e-12 {
			t.Errorf("model %q: KV usage = %g, want %g (mean over engines)", c.model, v, c.kv)
		}
		if len(d.Warnings()) != 0 {
			t.Errorf("model %q: warnings %q", c.model, d.Warnings())
		}
	}
	d := Diff(before, after, nil, Filter{Model: "zzz"})
	if _, ok := d.Counter(EngineRequests); ok {
		t.Error("unknown model: requests reported")
	}
	if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(w, `"zzz" matches no series`) || !strings.Contains(w, `"a", "b"`) {
		t.Errorf("unknown model: warnings %q should name the filter and the models present", w)
	}
}

// TestDiffBucketLayoutChanged: count and sum survive, quantiles do not.
func TestDiffBucketLayoutChanged(t *testing.T) {
	before := mustParse(t, histFamily("vllm:e2e_request_latency_seconds", []float64{1}, series{m0, []float64{1, 2}, 1}))
	after := mustParse(t, histFamily("vllm:e2e_request_latency_seconds", []float64{2}, series{m0, []float64{3, 5}, 4}))
	d := Diff(before, after, nil, Filter{})
	h, ok := d.Hist(EngineE2E)
	if !ok || h.Count != 3 || h.Sum != 3 || h.Buckets != nil || !math.IsNaN(h.Quantile(0.5)) {
		t.Errorf("layout change: %+v, %v; want count 3, sum 3, no buckets", h, ok)
	}
	if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(w, "changed its buckets") {
		t.Errorf("warnings %q", w)
	}
}

// TestDiffUnknownServer: no dialect, no figures, one warning naming it.
func TestDiffUnknownServer(t *testing.T) {
	s := mustParse(t, "# TYPE foo_total counter\nfoo_total 1\n")
	d := Diff(nil, s, nil, Filter{})
	if _, ok := d.Counter(EngineRequests); ok || len(d.Warnings()) != 1 || !strings.Contains(d.Warnings()[0], t.Name()) {
		t.Errorf("unknown server: warnings %q", d.Warnings())
	}
	if d := Diff(s, nil, nil, Filter{}); len(d.Warnings()) != 1 {
		t.Errorf("nil after: warnings %q", d.Warnings())
	}
}

// TestSummaryAndUntyped: an exporter without bucket config writes TGI's
// durations as summaries (count and sum, no quantile estimate), and an
// exposition without TYPE lines is untyped; both are still read.
func TestSummaryAndUntyped(t *testing.T) {
	before := mustParse(t, "# TYPE tgi_request_duration summary\ntgi_request_duration{quantile=\"0.5\"} 1\n"+
		"tgi_request_duration_sum 4\ntgi_request_duration_count 3\ntgi_request_success 3\ntgi_queue_size 2\n")
	after := mustParse(t, "# TYPE tgi_request_duration summary\ntgi_request_duration{quantile=\"0.5\"} 1\n"+
		"tgi_request_duration_sum 10\ntgi_request_duration_count 7\ntgi_request_success 7\ntgi_queue_size 5\n")
	d := Diff(before, after, nil, Filter{})
	if d.Dialect == nil || d.Dialect.Name != "tgi" {
		t.Fatalf("dialect %v, warnings %q", d.Dialect, d.Warnings())
	}
	h, ok := d.Hist(EngineE2E)
	if !ok || h.Count != 4 || h.Sum != 6 || h.Buckets != nil || !math.IsNaN(h.Quantile(0.5)) {
		t.Errorf("summary E2E = %+v, %v; want count 4, sum 6, no buckets, NaN quantile", h, ok)
	}
	if v, ok := d.Counter(EngineRequests); !ok || v != 4 {
		t.Errorf("untyped tgi_request_success delta = %g, %v; want 4", v, ok)
	}
	if v, ok := after.Gauge(d.Dialect, Filter{}, EngineWaiting); !ok || v != 5 {
		t.Errorf("untyped tgi_queue_size = %g, %v; want 5", v, ok)
	}
	if w := strings.Join(d.Warnings(), "\n"); w != "" {
		t.Errorf("warnings %q", w)
	}
	// TGI serves one model: a model filter is reported as not applied.
	if w := strings.Join(Diff(before, after, nil, Filter{Model: "x"}).Warnings(), "\n"); !strings.Contains(w, "not applied") {
		t.Errorf("model filter on TGI: warnings %q", w)
	}
}
