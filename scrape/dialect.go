package scrape

import (
	"fmt"
	"strings"
)

// Quantity is a canonical engine-side quantity, named as in DESIGN.md.
// Histogram quantities are in seconds; results.json adds an "_s" suffix.
type Quantity string

// The canonical quantities. Each has one Kind.
const (
	EngineTTFT    Quantity = "engine.ttft"    // histogram: arrival -> first token (includes queue wait in vLLM)
	EngineE2E     Quantity = "engine.e2e"     // histogram: arrival -> finished
	EngineQueue   Quantity = "engine.queue"   // histogram: time waiting to be scheduled
	EnginePrefill Quantity = "engine.prefill" // histogram: time in prefill
	EngineDecode  Quantity = "engine.decode"  // histogram: time in decode
	EngineITL     Quantity = "engine.itl"     // histogram: inter-token latency

	EnginePromptTokens     Quantity = "engine.prompt_tokens"     // counter
	EngineGenerationTokens Quantity = "engine.generation_tokens" // counter
	EngineRequests         Quantity = "engine.requests"          // counter: finished requests
	EnginePreemptions      Quantity = "engine.preemptions"       // counter: sequences preempted (KV cache full)

	// Prefix caching, in prompt tokens: looked up in the cache, and found
	// there (their KV reused, not prefilled again).
	EnginePrefixCacheQueries Quantity = "engine.prefix_cache_queries" // counter
	EnginePrefixCacheHits    Quantity = "engine.prefix_cache_hits"    // counter

	EngineRunning Quantity = "engine.running"  // gauge: requests being computed
	EngineWaiting Quantity = "engine.waiting"  // gauge: requests queued
	EngineKVUsage Quantity = "engine.kv_usage" // gauge: KV-cache usage, 0..1
	// EnginePrefixCacheHitRate is a server's own recent hit rate, 0..1, for
	// servers without the two counters above (SGLang before
	// sglang:cached_tokens_total).
	EnginePrefixCacheHitRate Quantity = "engine.prefix_cache_hit_rate" // gauge

	// A DCGM exporter's GPU series, read beside any dialect's (a
	// --metrics-url of dcgm-exporter, or the bundled engine's own): per
	// GPU, summed; not in Quantities, which are the engine's.
	GPUEnergy Quantity = "gpu.energy_mj" // counter: energy since boot, mJ
	GPUPower  Quantity = "gpu.power_w"   // gauge: power draw, W
)

// Quantities lists every canonical quantity in report order.
var Quantities = []Quantity{
	EngineTTFT, EngineE2E, EngineQueue, EnginePrefill, EngineDecode, EngineITL,
	EnginePromptTokens, EngineGenerationTokens, EngineRequests, EnginePreemptions,
	EnginePrefixCacheQueries, EnginePrefixCacheHits,
	EngineRunning, EngineWaiting, EngineKVUsage, EnginePrefixCacheHitRate,
}

// Kind says how a quantity is read: a histogram delta, a counter delta, or
// a gauge's current value.
type Kind int

// The kinds of quantity.
const (
	KindHistogram Kind = iota + 1
	KindCounter
	KindGauge
)

// String returns "histogram", "counter" or "gauge".
func (k Kind) String() string {
	switch k {
	case KindHistogram:
		return "histogram"
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Kind returns q's kind; 0 for a name that is not canonical.
func (q Quantity) Kind() Kind {
	switch q {
	case EngineTTFT, EngineE2E, EngineQueue, EnginePrefill, EngineDecode, EngineITL:
		return KindHistogram
	case EnginePromptTokens, EngineGenerationTokens, EngineRequests, EnginePrefixCacheQueries, EnginePrefixCacheHits, EnginePreemptions, GPUEnergy:
		return KindCounter
	case EngineRunning, EngineWaiting, EngineKVUsage, EnginePrefixCacheHitRate, GPUPower:
		return KindGauge
	}
	return 0
}

// Field says which number of a series a Mapping reads.
type Field int

// Fields. FieldSum lets a counter quantity come from a histogram's _sum
// (TGI exports generated tokens only as a per-request histogram).
const (
	FieldValue Field = iota // counter, gauge or untyped value; histogram/summary as is
	FieldSum                // _sum of a histogram or summary
	FieldCount              // _count of a histogram or summary
)

// Agg says how a gauge combines several label sets (engines, models,
// replicas).
type Agg int

// Aggregations. Counts add up; ratios such as KV-cache usage are averaged.
const (
	AggSum Agg = iota
	AggMean
)

// Mapping ties one Quantity to a server's metric families.
type Mapping struct {
	Quantity Quantity
	Names    []string // candidate family names, preferred first; the first present is used
	Field    Field
	Agg      Agg    // gauges only
	Note     string // caveat on what the server's metric measures, "" if it is the canonical meaning
	// Always: this server family exports the quantity whenever it serves
	// (it observes it for every request), so when its family is missing
	// from a snapshot no request was observed yet: a server that creates
	// series on first observation has simply had none. Readers count it
	// as zero observations rather than "not exported".
	Always bool
	// PerGPU: the series are a GPU's (DCGM), labelled by GPU, not by
	// model: the model filter does not apply, and Detect does not count
	// them.
	PerGPU bool
}

// QueueInTTFT says whether a server's engine.ttft histogram counts the
// request's queue wait: whether it measures from arrival (as vLLM does) or
// from when the scheduler took the request up.
type QueueInTTFT int

// The answers. QueueInTTFTUnknown also covers dialects with no TTFT.
const (
	QueueInTTFTUnknown QueueInTTFT = iota
	QueueInTTFTIncluded
	QueueInTTFTExcluded
)

// String returns "included", "excluded" or "unknown".
func (q QueueInTTFT) String() string {
	switch q {
	case QueueInTTFTIncluded:
		return "included"
	case QueueInTTFTExcluded:
		return "excluded"
	}
	return "unknown"
}

// Dialect is one server family's metric vocabulary. Dialects are values
// built once in this package; Detect and Lookup return copies.
type Dialect struct {
	Name        string   // vllm | sglang | tgi | llamacpp
	Title       string   // human name
	Prefix      string   // family-name prefix shared by its metrics
	ModelLabels []string // labels naming the served model, tried in order; none: one model per server
	Mappings    []Mapping
	// TTFTQueue says whether engine.ttft includes engine.queue, read from
	// the server's source (cited in dialects); a server that reuses these
	// metric names (a simulator) may differ, which report.DiagnoseOn checks
	// against the figures.
	TTFTQueue QueueInTTFT
	Notes     []string // what this server does not export, and other caveats
}

// Mapping returns the mapping for q, if the dialect has one.
func (d *Dialect) Mapping(q Quantity) (Mapping, bool) {
	for _, m := range d.Mappings {
		if m.Quantity == q {
			return m, true
		}
	}
	return Mapping{}, false
}

// Unavailable lists the canonical quantities this server has no metric for
// at all (as opposed to ones it has but did not export in a snapshot).
func (d *Dialect) Unavailable() []Quantity {
	var out []Quantity
	for _, q := range Quantities {
		if _, ok := d.Mapping(q); !ok {
			out = append(out, q)
		}
	}
	return out
}

// MetricName returns the family q is read from in s: the first of the
// mapping's candidate names that s has.
func (d *Dialect) MetricName(s *Snapshot, q Quantity) (string, bool) {
	m, ok := d.Mapping(q)
	if !ok || s == nil {
		return "", false
	}
	for _, n := range m.Names {
		if _, ok := s.Families[n]; ok {
			return n, true
		}
	}
	return "", false
}

func (d *Dialect) clone() *Dialect {
	c := *d
	c.ModelLabels = append([]string(nil), d.ModelLabels...)
	c.Mappings = append([]Mapping(nil), d.Mappings...)
	c.Notes = append([]string(nil), d.Notes...)
	return &c
}

// Dialects lists the dialect names Lookup knows.
var Dialects = []string{"vllm", "sglang", "tgi", "llamacpp"}

// Lookup returns the dialect called name (see Dialects).
func Lookup(name string) (*Dialect, bool) {
	for _, d := range dialects {
		if d.Name == name {
			return d.clone(), true
		}
	}
	return nil, false
}

// Detect picks the dialect whose metric names s uses most: first counting
// the families its mappings name, then, if no mapped family is present,
// any family with its prefix. It returns false when s has neither.
func Detect(s *Snapshot) (*Dialect, bool) {
	if s == nil {
		return nil, false
	}
	var best *Dialect
	bestScore := 0
	for _, d := range dialects {
		if sc := mappedScore(d, s); sc > bestScore {
			best, bestScore = d, sc
		}
	}
	if best == nil {
		for _, d := range dialects {
			if sc := prefixScore(d, s); sc > bestScore {
				best, bestScore = d, sc
			}
		}
	}
	if best == nil {
		return nil, false
	}
	return best.clone(), true
}

func mappedScore(d *Dialect, s *Snapshot) int {
	n := 0
	for _, m := range d.Mappings {
		if m.PerGPU {
			continue
		}
		for _, name := range m.Names {
			if _, ok := s.Families[name]; ok {
				n++
			}
		}
	}
	return n
}

func prefixScore(d *Dialect, s *Snapshot) int {
	n := 0
	for name := range s.Families {
		if strings.HasPrefix(name, d.Prefix) {
			n++
		}
	}
	return n
}

// dialects are the built-in vocabularies. Names were checked against each
// project's source or docs: vLLM vllm/v1/metrics/loggers.py and the real
// V1 scrape in testdata/fixtures, SGLang srt/metrics/collector.py, TGI
// docs/source/reference/metrics.md, llama.cpp tools/server.
//
// Queue wait inside TTFT: vLLM V1 (vllm/v1/metrics/stats.py,
// IterationStats) observes time_to_first_token as the first token's time
// minus the request's arrival_time at the front end, and
// request_queue_time as scheduled minus queued, so TTFT contains the
// queue wait; the real scrape in testdata/fixtures agrees (mean TTFT
// 0.147 s >= mean queue + prefill 0.119 s, TestTTFTQueueFixtures). SGLang
// (srt/managers/tokenizer_manager.py) observes TTFT from the request's
// created_time in the tokenizer manager, before the scheduler's waiting
// queue, so it contains sglang:queue_time_seconds too; its docs example in
// testdata/fixtures has no queue histogram to check against. TGI exports no
// TTFT and llama.cpp no histograms: unknown.
var dialects = withDCGM([]*Dialect{
	{
		Name:        "vllm",
		Title:       "vLLM (V1 engine metrics)",
		Prefix:      "vllm:",
		ModelLabels: []string{"model_name"},
		Mappings: []Mapping{
			{Quantity: EngineTTFT, Names: []string{"vllm:time_to_first_token_seconds"}},
			{Quantity: EngineE2E, Names: []string{"vllm:e2e_request_latency_seconds"}},
			// V1 observes it for every finished request, waited or not.
			{Quantity: EngineQueue, Names: []string{"vllm:request_queue_time_seconds"}, Always: true},
			{Quantity: EnginePrefill, Names: []string{"vllm:request_prefill_time_seconds"}},
			{Quantity: EngineDecode, Names: []string{"vllm:request_decode_time_seconds"}},
			// inter_token_latency_seconds replaced time_per_output_token_seconds
			// (same measurement, per token gap) in vLLM 0.11.
			{Quantity: EngineITL, Names: []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}},
			{Quantity: EnginePromptTokens, Names: []string{"vllm:prompt_tokens_total"}},
			{Quantity: EngineGenerationTokens, Names: []string{"vllm:generation_tokens_total"}},
			// Summed over finished_reason (stop, length, abort, error, ...).
			{Quantity: EngineRequests, Names: []string{"vllm:request_success_total"}},
			// V1 named them gpu_prefix_cache_* until vLLM 0.10.
			{Quantity: EnginePrefixCacheQueries, Names: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}},
			{Quantity: EnginePrefixCacheHits, Names: []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}},
			{Quantity: EnginePreemptions, Names: []string{"vllm:num_preemptions_total"}},
			{Quantity: EngineRunning, Names: []string{"vllm:num_requests_running"}},
			{Quantity: EngineWaiting, Names: []string{"vllm:num_requests_waiting"}},
			// gpu_cache_usage_perc is the V0 / pre-0.10 name; both are 0..1.
			{Quantity: EngineKVUsage, Names: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, Agg: AggMean},
		},
		TTFTQueue: QueueInTTFTIncluded,
		Notes: []string{
			"engine.ttft counts from arrival, so it includes engine.queue",
			"engine.requests sums vllm:request_success_total over every finished_reason (stop, length, abort, error)",
		},
	},
	{
		Name:        "sglang",
		Title:       "SGLang",
		Prefix:      "sglang:",
		ModelLabels: []string{"model_name", "name"}, // "name" in releases before 0.4
		Mappings: []Mapping{
			{Quantity: EngineTTFT, Names: []string{"sglang:time_to_first_token_seconds"}},
			{Quantity: EngineE2E, Names: []string{"sglang:e2e_request_latency_seconds"}},
			{Quantity: EngineQueue, Names: []string{"sglang:queue_time_seconds"}},
			// Older releases named the per-token gap time_per_output_token_seconds.
			{Quantity: EngineITL, Names: []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}},
			{Quantity: EnginePromptTokens, Names: []string{"sglang:prompt_tokens_total"}},
			{Quantity: EngineGenerationTokens, Names: []string{"sglang:generation_tokens_total"}},
			{Quantity: EngineRequests, Names: []string{"sglang:num_requests_total"}},
			// SGLang looks every prompt token up in its radix cache;
			// cached_tokens_total sums its cache_source labels (device, host, storage).
			{Quantity: EnginePrefixCacheQueries, Names: []string{"sglang:prompt_tokens_total"},
				Note: "prompt_tokens_total: every prompt token is looked up in the radix cache"},
			{Quantity: EnginePrefixCacheHits, Names: []string{"sglang:cached_tokens_total"}},
			{Quantity: EnginePrefixCacheHitRate, Names: []string{"sglang:cache_hit_rate"}, Agg: AggMean,
				Note: "cache_hit_rate: the most recent prefill batches' hit rate, not the run's"},
			{Quantity: EngineRunning, Names: []string{"sglang:num_running_reqs"}},
			{Quantity: EngineWaiting, Names: []string{"sglang:num_queue_reqs"}},
			{Quantity: EngineKVUsage, Names: []string{"sglang:token_usage"}, Agg: AggMean,
				Note: "token_usage: share of the KV token pool in use"},
		},
		TTFTQueue: QueueInTTFTIncluded,
		Notes: []string{
			"engine.ttft counts from the request's arrival at the tokenizer manager, so it includes engine.queue",
			"SGLang has no per-request prefill/decode time histograms like vLLM's (sglang:per_stage_req_latency_seconds times scheduler stages): engine.prefill and engine.decode are unavailable",
			"older SGLang releases export no sglang:queue_time_seconds or sglang:num_requests_total",
		},
	},
	{
		Name:   "tgi",
		Title:  "Hugging Face TGI",
		Prefix: "tgi_",
		Mappings: []Mapping{
			{Quantity: EngineE2E, Names: []string{"tgi_request_duration"}},
			{Quantity: EngineQueue, Names: []string{"tgi_request_queue_duration"}},
			{Quantity: EngineITL, Names: []string{"tgi_request_mean_time_per_token_duration"},
				Note: "one observation per request (its mean time per token), not one per token gap"},
			{Quantity: EnginePromptTokens, Names: []string{"tgi_request_input_length"}, Field: FieldSum,
				Note: "sum of the tgi_request_input_length histogram"},
			{Quantity: EngineGenerationTokens, Names: []string{"tgi_request_generated_tokens"}, Field: FieldSum,
				Note: "sum of the tgi_request_generated_tokens histogram"},
			{Quantity: EngineRequests, Names: []string{"tgi_request_success"},
				Note: "successful requests only (tgi_request_count counts every request received)"},
			{Quantity: EngineRunning, Names: []string{"tgi_batch_current_size"}},
			{Quantity: EngineWaiting, Names: []string{"tgi_queue_size"}},
		},
		Notes: []string{
			"TGI exports no time-to-first-token metric: engine.ttft is unavailable and is not derived from other metrics",
			"TGI exports no per-request prefill/decode split (tgi_request_inference_duration is both): engine.prefill and engine.decode are unavailable",
			"TGI exports no KV-cache usage gauge",
		},
	},
	{
		Name:   "llamacpp",
		Title:  "llama.cpp server",
		Prefix: "llamacpp:",
		Mappings: []Mapping{
			{Quantity: EnginePromptTokens, Names: []string{"llamacpp:prompt_tokens_total"},
				Note: "recent builds count prompt tokens excluding those reused from the cache"},
			{Quantity: EngineGenerationTokens, Names: []string{"llamacpp:tokens_predicted_total"}},
			{Quantity: EngineRunning, Names: []string{"llamacpp:requests_processing"}},
			{Quantity: EngineWaiting, Names: []string{"llamacpp:requests_deferred"}},
			// Removed from recent builds; read when present.
			{Quantity: EngineKVUsage, Names: []string{"llamacpp:kv_cache_usage_ratio"}, Agg: AggMean},
		},
		Notes: []string{
			"llama.cpp exports gauges and counters only, no histograms: engine.ttft, engine.e2e, engine.queue, engine.prefill, engine.decode and engine.itl are unavailable",
			"llama.cpp exports no finished-request counter: engine.requests is unavailable",
		},
	},
})

// dcgmMappings read dcgm-exporter's power and energy series (its
// etc/default-counters.csv: DCGM_FI_DEV_POWER_USAGE, gauge, W;
// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, mJ since boot) in every
// dialect: a DCGM exporter sits beside any server.
var dcgmMappings = []Mapping{
	{Quantity: GPUEnergy, Names: []string{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"}, PerGPU: true},
	{Quantity: GPUPower, Names: []string{"DCGM_FI_DEV_POWER_USAGE"}, PerGPU: true},
}

// withDCGM adds dcgmMappings to every dialect of ds.
func withDCGM(ds []*Dialect) []*Dialect {
	for _, d := range ds {
		d.Mappings = append(d.Mappings, dcgmMappings...)
	}
	return ds
}
