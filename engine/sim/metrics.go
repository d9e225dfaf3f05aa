package sim

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM V1's histogram bucket bounds (vllm/v1/metrics/loggers.py), as seen in
// the real scrape in testdata/fixtures/vllm_v1_metrics_qwen2.5-1.5b.txt.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	iterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// buckets125 is vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, ... <= max.
func buckets125(max int) []float64 {
	var out []float64
	for exp := 1; ; exp *= 10 {
		for _, m := range []int{1, 2, 5} {
			v := m * exp
			if v > max {
				return out
			}
			out = append(out, float64(v))
		}
	}
}

// Finish reasons, the request_success_total label values vLLM exports.
var finishReasons = []string{"stop", "length", "abort", "error", "repetition"}

// metrics holds the vLLM V1 families on a private registry (no Go runtime or
// process collectors: the exposition is the engine's, as vLLM's is). A fresh
// set replaces it on a metrics-reset fault, as after a server restart.
// Prometheus metrics are safe for concurrent use.
type metrics struct {
	reg *prometheus.Registry

	ttft, itl, tpot                          prometheus.Observer
	e2e, queue, prefill, decode, inference   prometheus.Observer
	reqPrompt, reqGen, reqMaxTokens, iterTok prometheus.Observer
	promptTokens, genTokens, preemptions     prometheus.Counter
	prefixQueries, prefixHits                prometheus.Counter
	success                                  map[string]prometheus.Counter
	running, waiting, kvUsage                prometheus.Gauge
	spec                                     *specMetrics // nil without speculative decoding
	xfer                                     *xferMetrics // nil unless --kv-role consumer
	lora                                     *loraGauge   // nil without --lora-modules
}

// cacheInfo is what vllm:cache_config_info labels describe.
type cacheInfo struct {
	numGPUBlocks, blockSize, kvTokens int
	maxConcurrency, gpuMemUtil        float64
	prefixCaching                     bool
}

func newMetrics(model string, maxModelLen int, ci cacheInfo) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), success: map[string]prometheus.Counter{}}
	labels := engineLabels(model)
	hist := func(name, help string, b []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b, ConstLabels: labels})
		m.reg.MustRegister(h)
		return h
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		m.reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		m.reg.MustRegister(g)
		return g
	}
	m.running = gauge("vllm:num_requests_running", "Number of requests in model execution batches.")
	m.waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
	m.kvUsage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")
	m.preemptions = counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.")
	m.promptTokens = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	m.genTokens = counter("vllm:generation_tokens_total", "Number of generation tokens processed.")
	// Registered whether or not caching is on, as vLLM does (then they stay 0).
	m.prefixQueries = counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.")
	m.prefixHits = counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.")
	// No KV connector: cross-instance sharing never hits.
	counter("vllm:external_prefix_cache_queries_total", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.")
	counter("vllm:external_prefix_cache_hits_total", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.")
	sv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
		Help: "Count of successfully processed requests.", ConstLabels: labels}, []string{"finished_reason"})
	m.reg.MustRegister(sv)
	for _, r := range finishReasons {
		m.success[r] = sv.WithLabelValues(r) // created up front so every label shows 0, as in vLLM
	}
	tok := buckets125(maxModelLen)
	m.reqPrompt = hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tok)
	m.reqGen = hist("vllm:request_generation_tokens", "Number of generation tokens processed.", tok)
	m.iterTok = hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterationTokenBuckets)
	m.reqMaxTokens = hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", tok)
	m.ttft = hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	m.itl = hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets)
	m.tpot = hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlBuckets)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestLatencyBuckets)
	m.queue = hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestLatencyBuckets)
	m.inference = hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", requestLatencyBuckets)
	m.prefill = hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestLatencyBuckets)
	m.decode = hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestLatencyBuckets)

	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig",
		ConstLabels: prometheus.Labels{
			"engine":                   "0",
			"block_size":               strconv.Itoa(ci.blockSize),
			"cache_dtype":              "auto",
			"enable_prefix_caching":    pyBool(ci.prefixCaching),
			"gpu_memory_utilization":   strconv.FormatFloat(ci.gpuMemUtil, 'g', -1, 64),
			"is_attention_free":        "False",
			"kv_cache_max_concurrency": strconv.FormatFloat(ci.maxConcurrency, 'g', -1, 64),
			"kv_cache_size_tokens":     strconv.Itoa(ci.kvTokens),
			"num_cpu_blocks":           "None",
			"num_gpu_blocks":           strconv.Itoa(ci.numGPUBlocks),
			"num_gpu_blocks_override":  "None",
			"sliding_window":           "None",
		},
	})
	info.Set(1)
	m.reg.MustRegister(info)
	return m
}

// engineLabels are the labels vLLM V1 puts on every engine metric.
func engineLabels(model string) prometheus.Labels {
	return prometheus.Labels{"model_name": model, "engine": "0"}
}

// finished records a request's end-of-life histograms and its finish reason,
// with vLLM V1's definitions (all on the engine's clock, in seconds):
// queue = queued->first scheduled (after the per-request
// overhead, as vLLM's engine core sees arrival), prefill = scheduled->first token,
// decode = first->last token, inference = scheduled->last token,
// e2e = arrival->finish, time per output token = decode/(tokens-1).
func (m *metrics) finished(r *request, finish int64) {
	sec := func(d int64) float64 {
		if d < 0 {
			return 0
		}
		return float64(d) / 1e9
	}
	var queue, prefill, decode, inference, tpot float64
	if r.scheduledAt > 0 {
		queue = sec(r.scheduledAt - r.queued)
		if r.firstAt > 0 {
			prefill = sec(r.firstAt - r.scheduledAt)
			decode = sec(r.lastAt - r.firstAt)
			inference = sec(r.lastAt - r.scheduledAt)
		}
	} else {
		queue = sec(finish - max(r.queued, r.arrival)) // never scheduled: it waited all its life
	}
	if r.output > 1 {
		tpot = decode / float64(r.output-1)
	}
	m.queue.Observe(queue)
	m.prefill.Observe(prefill)
	m.decode.Observe(decode)
	m.inference.Observe(inference)
	m.tpot.Observe(tpot)
	m.e2e.Observe(sec(finish - r.arrival))
	m.reqPrompt.Observe(float64(r.prompt))
	m.reqGen.Observe(float64(r.output))
	m.reqMaxTokens.Observe(float64(r.maxTokens))
	m.success[r.reason].Inc()
}
