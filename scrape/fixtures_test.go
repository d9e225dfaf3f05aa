package scrape

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const fixtureDir = "../testdata/fixtures"

// loadFixture parses one file of testdata/fixtures and returns it with its
// raw text, so a test can check the parse against the text.
func loadFixture(tb testing.TB, name string) (*Snapshot, string) {
	tb.Helper()
	path := filepath.Join(fixtureDir, name)
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := ParseFile(path)
	if err != nil {
		tb.Fatalf("ParseFile(%s): %v", name, err)
	}
	return s, string(raw)
}

// textSum adds up every sample line of metric name in text whose labels
// contain all of want (e.g. `model_name="m"`). It reads the exposition with
// plain string handling, independently of expfmt, so the package's figures
// are checked against the file itself.
func textSum(tb testing.TB, text, name string, want ...string) (sum float64, lines int) {
	tb.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		labels := ""
		if i := strings.IndexByte(line, '}'); i > 0 {
			labels = line[len(name):i]
		}
		if !allIn(labels, want) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			tb.Fatalf("fixture line %q: %v", line, err)
		}
		sum += v
		lines++
	}
	if lines == 0 {
		tb.Fatalf("no sample of %s in fixture", name)
	}
	return sum, lines
}

func allIn(labels string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(labels, w) {
			return false
		}
	}
	return true
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// fixtureCase is what one fixture must yield: its dialect, the metric each
// exported quantity is read from, and the quantities it must not report.
type fixtureCase struct {
	file, dialect string
	from          map[Quantity]string // quantity -> family the text says it comes from
	absent        []Quantity
}

var fixtureCases = []fixtureCase{
	// Real vLLM V1 scrape: every canonical quantity, new names
	// (inter_token_latency_seconds, kv_cache_usage_perc).
	{file: "vllm_v1_metrics_qwen2.5-1.5b.txt", dialect: "vllm", from: map[Quantity]string{
		EngineTTFT: "vllm:time_to_first_token_seconds", EngineE2E: "vllm:e2e_request_latency_seconds",
		EngineQueue: "vllm:request_queue_time_seconds", EnginePrefill: "vllm:request_prefill_time_seconds",
		EngineDecode: "vllm:request_decode_time_seconds", EngineITL: "vllm:inter_token_latency_seconds",
		EnginePromptTokens: "vllm:prompt_tokens_total", EngineGenerationTokens: "vllm:generation_tokens_total",
		EngineRequests: "vllm:request_success_total", EngineRunning: "vllm:num_requests_running",
		EngineWaiting: "vllm:num_requests_waiting", EngineKVUsage: "vllm:kv_cache_usage_perc",
		EnginePrefixCacheQueries: "vllm:prefix_cache_queries_total", EnginePrefixCacheHits: "vllm:prefix_cache_hits_total",
	}, absent: []Quantity{EnginePrefixCacheHitRate}},
	// SGLang docs example: old names (time_per_output_token_seconds), no
	// queue histogram, no request counter, no prefill/decode at all.
	{file: "sglang_metrics_docs_example.txt", dialect: "sglang", from: map[Quantity]string{
		EngineTTFT: "sglang:time_to_first_token_seconds", EngineE2E: "sglang:e2e_request_latency_seconds",
		EngineITL:          "sglang:time_per_output_token_seconds",
		EnginePromptTokens: "sglang:prompt_tokens_total", EngineGenerationTokens: "sglang:generation_tokens_total",
		EngineRunning: "sglang:num_running_reqs", EngineWaiting: "sglang:num_queue_reqs", EngineKVUsage: "sglang:token_usage",
		EnginePrefixCacheQueries: "sglang:prompt_tokens_total", EnginePrefixCacheHitRate: "sglang:cache_hit_rate",
	}, absent: []Quantity{EngineQueue, EnginePrefill, EngineDecode, EngineRequests, EnginePrefixCacheHits}},
	// llama.cpp: counters and gauges only.
	{file: "llamacpp_metrics.txt", dialect: "llamacpp", from: map[Quantity]string{
		EnginePromptTokens: "llamacpp:prompt_tokens_total", EngineGenerationTokens: "llamacpp:tokens_predicted_total",
		EngineRunning: "llamacpp:requests_processing", EngineWaiting: "llamacpp:requests_deferred",
	}, absent: []Quantity{EngineTTFT, EngineE2E, EngineQueue, EnginePrefill, EngineDecode, EngineITL, EngineRequests, EngineKVUsage,
		EnginePrefixCacheQueries, EnginePrefixCacheHits, EnginePrefixCacheHitRate}},
}

// TestFixtures parses every fixture, checks the detected dialect, and
// checks each quantity against sums computed from the file's text.
func TestFixtures(t *testing.T) {
	for _, fc := range fixtureCases {
		t.Run(fc.file, func(t *testing.T) {
			s, text := loadFixture(t, fc.file)
			dl, ok := Detect(s)
			if !ok || dl.Name != fc.dialect {
				t.Fatalf("Detect = %v, %v; want %s", dl, ok, fc.dialect)
			}
			d := Diff(nil, s, dl, Filter{})
			if w := d.Warnings(); len(w) > 0 {
				t.Errorf("warnings on a clean fixture: %q", w)
			}
			for q, fam := range fc.from {
				checkQuantity(t, s, d, text, q, fam)
			}
			for _, q := range fc.absent {
				if _, ok := d.Hist(q); ok {
					t.Errorf("%s: reported, but %s does not export it", q, fc.file)
				}
				if _, ok := d.Counter(q); ok {
					t.Errorf("%s: reported, but %s does not export it", q, fc.file)
				}
				if _, ok := s.Gauge(dl, Filter{}, q); ok {
					t.Errorf("%s: reported, but %s does not export it", q, fc.file)
				}
			}
		})
	}
}

func checkQuantity(t *testing.T, s *Snapshot, d *Delta, text string, q Quantity, fam string) {
	t.Helper()
	switch q.Kind() {
	case KindHistogram:
		h, ok := d.Hist(q)
		if !ok {
			t.Errorf("%s: not reported, want it from %s", q, fam)
			return
		}
		wantCount, _ := textSum(t, text, fam+"_count")
		wantSum, _ := textSum(t, text, fam+"_sum")
		if !near(h.Count, wantCount) || !near(h.Sum, wantSum) {
			t.Errorf("%s: count %g sum %g; the file's %s says %g and %g", q, h.Count, h.Sum, fam, wantCount, wantSum)
		}
		if inf, _ := textSum(t, text, fam+"_bucket", `le="+Inf"`); h.Buckets[len(h.Buckets)-1].Count != inf {
			t.Errorf("%s: +Inf bucket %g, file says %g", q, h.Buckets[len(h.Buckets)-1].Count, inf)
		}
	case KindCounter:
		v, ok := d.Counter(q)
		want, _ := textSum(t, text, fam)
		if !ok || !near(v, want) {
			t.Errorf("%s = %g, %v; the file's %s sums to %g", q, v, ok, fam, want)
		}
	case KindGauge:
		v, ok := s.Gauge(d.Dialect, Filter{}, q)
		want, _ := textSum(t, text, fam)
		if !ok || !near(v, want) {
			t.Errorf("%s = %g, %v; the file's %s says %g", q, v, ok, fam, want)
		}
	}
	if name, _ := d.MetricName(q); q.Kind() != KindGauge && name != fam {
		t.Errorf("%s read from %q, want %q", q, name, fam)
	}
}

// TestVLLMFixtureByEye pins figures read off the vLLM fixture by hand, so a
// shared misreading in textSum and the package would still be caught.
func TestVLLMFixtureByEye(t *testing.T) {
	s, _ := loadFixture(t, "vllm_v1_metrics_qwen2.5-1.5b.txt")
	d := Diff(nil, s, nil, Filter{})
	if d.Dialect == nil || d.Dialect.Name != "vllm" {
		t.Fatalf("dialect %v", d.Dialect)
	}
	ttft, _ := d.Hist(EngineTTFT)
	// Lines 292-293: _count 10.0, _sum 1.4721317291259766.
	if ttft.Count != 10 || ttft.Sum != 1.4721317291259766 {
		t.Errorf("TTFT count/sum = %g/%g, want 10/1.4721317291259766", ttft.Count, ttft.Sum)
	}
	// TTFT buckets, lines 273-281: le=0.04 -> 1, le=0.06 -> 9, le=1.0 -> 9, le=2.5 -> 10.
	// p50: rank 5 in (0.04, 0.06], 4 of its 8 -> 0.05. p90: rank 9 is the
	// top of (0.04, 0.06] -> 0.06. p99: rank 9.9 in (1.0, 2.5], 0.9 of its 1
	// -> 1.0 + 1.5*0.9 = 2.35.
	for _, c := range []struct{ q, want float64 }{{0.5, 0.05}, {0.9, 0.06}, {0.99, 2.35}} {
		if got := ttft.Quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("TTFT p%g estimate = %g, want %g", c.q*100, got, c.want)
		}
	}
	// request_success_total, lines 145-149: finished_reason="length" 10, others 0.
	if v, _ := d.Counter(EngineRequests); v != 10 {
		t.Errorf("requests = %g, want 10", v)
	}
	// inter_token_latency_seconds_count 574 (10 requests, 584 tokens: the
	// first token of each has no gap before it).
	if itl, _ := d.Hist(EngineITL); itl.Count != 574 {
		t.Errorf("ITL count = %g, want 574", itl.Count)
	}
	if v, _ := d.Counter(EngineGenerationTokens); v != 584 {
		t.Errorf("generation tokens = %g, want 584", v)
	}
}

// TestTGIConstructed checks the hand-written TGI exposition: no TTFT, and
// the dialect says so; tokens come from histogram sums.
func TestTGIConstructed(t *testing.T) {
	s, text := loadFixture(t, "tgi_metrics_constructed.txt")
	dl, ok := Detect(s)
	if !ok || dl.Name != "tgi" {
		t.Fatalf("Detect = %v, %v; want tgi", dl, ok)
	}
	d := Diff(nil, s, dl, Filter{})
	if _, ok := d.Hist(EngineTTFT); ok {
		t.Error("TGI has no TTFT metric, but Hist(EngineTTFT) reported one")
	}
	if !slices.Contains(dl.Unavailable(), EngineTTFT) {
		t.Errorf("Unavailable() = %v, want engine.ttft in it", dl.Unavailable())
	}
	saysTTFT := false
	for _, n := range dl.Notes {
		saysTTFT = saysTTFT || strings.Contains(n, "engine.ttft is unavailable")
	}
	if !saysTTFT {
		t.Errorf("TGI notes do not say TTFT is unavailable: %q", dl.Notes)
	}
	for q, fam := range map[Quantity]string{
		EngineE2E: "tgi_request_duration", EngineQueue: "tgi_request_queue_duration",
		EngineITL: "tgi_request_mean_time_per_token_duration", EngineRequests: "tgi_request_success",
		EngineRunning: "tgi_batch_current_size", EngineWaiting: "tgi_queue_size",
	} {
		checkQuantity(t, s, d, text, q, fam)
	}
	for q, fam := range map[Quantity]string{EnginePromptTokens: "tgi_request_input_length", EngineGenerationTokens: "tgi_request_generated_tokens"} {
		want, _ := textSum(t, text, fam+"_sum")
		if v, ok := d.Counter(q); !ok || v != want {
			t.Errorf("%s = %g, %v; want %s_sum = %g", q, v, ok, fam, want)
		}
	}
}

// TestDetect covers the fallbacks: prefix-only detection, and nothing.
func TestDetect(t *testing.T) {
	only := mustParse(t, "# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\"} 1\n")
	if dl, ok := Detect(only); !ok || dl.Name != "vllm" {
		t.Errorf("prefix-only vLLM: Detect = %v, %v", dl, ok)
	}
	none := mustParse(t, "# TYPE process_open_fds gauge\nprocess_open_fds 55\n")
	if dl, ok := Detect(none); ok {
		t.Errorf("no server metrics: Detect = %s, want false", dl.Name)
	}
	if _, err := Read(none, nil, Filter{}); err == nil || !strings.Contains(err.Error(), "no vLLM, SGLang, TGI or llama.cpp metrics") {
		t.Errorf("Read on unknown metrics: err = %v", err)
	}
	// Older vLLM names are picked when the new ones are absent.
	old := mustParse(t, "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n"+
		"# TYPE vllm:time_per_output_token_seconds histogram\nvllm:time_per_output_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3\n"+
		"vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.3\nvllm:time_per_output_token_seconds_count{model_name=\"m\"} 3\n")
	dl, _ := Detect(old)
	if v, ok := old.Gauge(dl, Filter{}, EngineKVUsage); !ok || v != 0.5 {
		t.Errorf("gpu_cache_usage_perc: KV usage = %g, %v; want 0.5", v, ok)
	}
	if h, ok := Diff(nil, old, dl, Filter{}).Hist(EngineITL); !ok || h.Count != 3 {
		t.Errorf("time_per_output_token_seconds: ITL = %+v, %v; want count 3", h, ok)
	}
	for _, name := range Dialects {
		if d, ok := Lookup(name); !ok || d.Name != name {
			t.Errorf("Lookup(%q) = %v, %v", name, d, ok)
		}
	}
}

// BenchmarkParseDiff is one scrape's cost in a run: parse the real vLLM V1
// exposition (51 KB, 592 lines) and diff it against a "before" snapshot.
func BenchmarkParseDiff(b *testing.B) {
	before, raw := loadFixture(b, "vllm_v1_metrics_qwen2.5-1.5b.txt")
	dl, _ := Detect(before)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		after, err := Parse(strings.NewReader(raw))
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := Diff(before, after, dl, Filter{}).Hist(EngineTTFT); !ok {
			b.Fatal("no TTFT")
		}
	}
}

// BenchmarkDiff is the delta alone, on already parsed snapshots.
func BenchmarkDiff(b *testing.B) {
	before, raw := loadFixture(b, "vllm_v1_metrics_qwen2.5-1.5b.txt")
	after, err := Parse(strings.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	dl, _ := Detect(before)
	b.ReportAllocs()
	for b.Loop() {
		Diff(before, after, dl, Filter{})
	}
}

// TestTTFTQueueFixtures checks each dialect's TTFTQueue against the real
// scrapes: where a fixture has TTFT and queue wait (and prefill), a TTFT
// that includes the queue must be at least queue + prefill on average,
// since each request's TTFT is. Dialects with TTFT must say which; those
// without must not claim either.
func TestTTFTQueueFixtures(t *testing.T) {
	checked := 0
	for _, fc := range fixtureCases {
		s, _ := loadFixture(t, fc.file)
		dl, _ := Lookup(fc.dialect)
		d := Diff(nil, s, dl, Filter{})
		ttft, hasTTFT := d.Hist(EngineTTFT)
		queue, hasQueue := d.Hist(EngineQueue)
		if !hasTTFT || !hasQueue {
			continue
		}
		floor := queue.Mean()
		if p, ok := d.Hist(EnginePrefill); ok {
			floor += p.Mean()
		}
		included := ttft.Mean() >= floor
		if (dl.TTFTQueue == QueueInTTFTIncluded) != included {
			t.Errorf("%s: dialect %s says queue wait is %s in TTFT, but mean TTFT %.4g s vs queue (+ prefill) %.4g s",
				fc.file, dl.Name, dl.TTFTQueue, ttft.Mean(), floor)
		}
		t.Logf("%s: mean TTFT %.4g s >= queue + prefill %.4g s: %v (dialect says %s)", fc.file, ttft.Mean(), floor, included, dl.TTFTQueue)
		checked++
	}
	if checked == 0 {
		t.Error("no fixture has both TTFT and queue wait to check against")
	}
	for _, name := range Dialects {
		dl, _ := Lookup(name)
		_, hasTTFT := dl.Mapping(EngineTTFT)
		if hasTTFT == (dl.TTFTQueue == QueueInTTFTUnknown) {
			t.Errorf("%s: has TTFT %v but TTFTQueue %s", name, hasTTFT, dl.TTFTQueue)
		}
	}
}

// TestDCGMFixture (issue 31, item 5): a public dcgm-exporter scrape gives
// its GPU's energy counter and power gauge through any dialect, the
// model filter notwithstanding (GPU series carry no model label), and
// does not make a DCGM-only scrape look like a server's.
func TestDCGMFixture(t *testing.T) {
	s, raw := loadFixture(t, "dcgm_exporter_a100_docs_example.txt")
	wantMJ, _ := textSum(t, raw, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
	wantW, _ := textSum(t, raw, "DCGM_FI_DEV_POWER_USAGE")
	vllm, _ := Lookup("vllm")
	f := Filter{Model: "Qwen/Qwen2.5-1.5B-Instruct"}
	d := Diff(nil, s, vllm, f)
	if mj, ok := d.Counter(GPUEnergy); !ok || mj != wantMJ || mj != 319159391 {
		t.Errorf("energy since boot %g mJ (%v), want the fixture's %g", mj, ok, wantMJ)
	}
	if w, ok := s.Gauge(vllm, f, GPUPower); !ok || w != wantW || w != 409.692 {
		t.Errorf("power %g W (%v), want the fixture's %g", w, ok, wantW)
	}
	if dl, ok := Detect(s); ok {
		t.Errorf("a DCGM-only scrape detected as %s", dl.Name)
	}
	// A later scrape 120 J on: the delta is the run's energy.
	later, err := Parse(strings.NewReader(strings.Replace(raw, "} 319159391", "} 319279391", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if mj, ok := Diff(s, later, vllm, f).Counter(GPUEnergy); !ok || mj != 120000 {
		t.Errorf("energy delta %g mJ (%v), want 120000", mj, ok)
	}
}
