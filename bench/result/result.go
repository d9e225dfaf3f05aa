package result

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/stats"
)

// Schema is the value of Results.Schema.
const Schema = "servebench/v1"

// File names inside a results directory.
const (
	ResultsFile  = "results.json"
	RequestsFile = "requests.jsonl"
	ServerLog    = "server.log"
	ReportFile   = "report.md"
)

// Results is the whole of results.json.
type Results struct {
	Schema   string   `json:"schema"`
	Manifest Manifest `json:"manifest"`
	Server   Server   `json:"server"`
	Runs     []Run    `json:"runs"`
	Warnings []string `json:"warnings"`
	// MaxRate is set by sweep --find-max-rate.
	MaxRate *MaxRate `json:"max_rate,omitempty"`
	// Clock is the time the session was given and printed in; absent in
	// results older than it (wall clock). Under the modelled clock
	// MaxRateModelled is MaxRate in that time.
	Clock           *Clock   `json:"clock,omitempty"`
	MaxRateModelled *MaxRate `json:"max_rate_modelled,omitempty"`
	// Incomplete: rebuilt from CheckpointFile after servebench stopped
	// mid-run (kill -9, a machine lost); compare refuses it unless asked.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Manifest says what produced the results, so two result sets can be compared knowingly.
type Manifest struct {
	Version     string    `json:"servebench_version"`
	CommandLine []string  `json:"command_line"` // secrets redacted
	StartedAt   time.Time `json:"started_at"`
	Host        Host      `json:"host"`
	// Labels are the --label KEY=VALUE pairs the results were run with
	// (a commit's name, a nightly's flavour), kept with them and in the
	// history.
	Labels map[string]string `json:"labels,omitempty"`
	// Build is the code the results came from, read from the CI's
	// environment or the working directory's git; nil when unknown.
	Build *Build `json:"build,omitempty"`
}

// Build says which commit, branch and CI job produced results. Every
// field is optional: a field unknown to the source that filled it is "".
type Build struct {
	Commit  string `json:"commit,omitempty"`
	Branch  string `json:"branch,omitempty"`
	CIRunID string `json:"ci_run_id,omitempty"`
	CIURL   string `json:"ci_url,omitempty"`
	// Source names where the fields came from: github-actions, gitlab-ci,
	// env (GIT_COMMIT, BUILD_ID) or git (git rev-parse in the working
	// directory).
	Source string `json:"source"`
}

// Host facts of the machine that ran the client.
type Host struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Hostname  string `json:"hostname,omitempty"`
}

// Server describes the server under test.
type Server struct {
	BaseURL    string   `json:"base_url"`
	MetricsURL []string `json:"metrics_urls,omitempty"`
	// EnginePasses is how many of the engines behind MetricsURL finish
	// each request: 2 when they are a P/D deployment's prefill and decode
	// instances; absent, one. A run's reconciliation expects that many
	// counts per request, and so does merge, which has only this file.
	EnginePasses int    `json:"engine_passes,omitempty"`
	Model        string `json:"model"`
	Dialect      string `json:"dialect"` // scrape dialect: vllm, sglang, tgi, llamacpp, none
	// PromptTokens is how the server counts servebench's generated
	// prompts, measured before the runs (token-exact prompts); nil when no
	// run generates prompt text or the calibration failed (a warning says).
	PromptTokens *TokenCalibration `json:"prompt_tokens_calibration,omitempty"`
	// PrometheusURL is set when engine figures come from Prometheus
	// (--prometheus-url) instead of scraping MetricsURL.
	PrometheusURL string `json:"prometheus_url,omitempty"`
	Command       string `json:"command,omitempty"` // server command line when servebench started it
	Preset        string `json:"preset,omitempty"`
	Version       string `json:"version,omitempty"` // from GET /version when the server has one
	// Engine names the server's software where servebench recognised it
	// by more than /metrics: EngineOllama when it answered Ollama's GET
	// /api/version (or servebench started it as --server ollama).
	Engine string `json:"engine,omitempty"`
	// Environment is what a started server's environment says of its
	// speed: OLLAMA_*, VLLM_* and CUDA_VISIBLE_DEVICES, as the server got
	// them (servebench's own environment, then what it set), secrets as
	// REDACTED. Absent for a server servebench did not start.
	Environment map[string]string `json:"environment,omitempty"`
	// Bundled is set when the server is servebench's bundled engine.
	Bundled *Bundled `json:"bundled,omitempty"`
	// Startup is set whenever servebench started the server itself.
	Startup *Startup `json:"startup,omitempty"`
}

// EngineOllama is Server.Engine of an Ollama server.
const EngineOllama = "ollama"

// Bundled describes a bundled-engine server: what it emulates and how fast.
//
// The parallel sizes and the KV role are the engine's own (its /version),
// present only when set: more than one GPU or stage, a prefill
// ("producer") or decode ("consumer") instance.
//
// Every field but Args mirrors engine/sim.BundledVersion on purpose (bench's
// recordBundled copies them): report imports this package and must not
// depend on an engine package, even transitively. bench's
// TestRecordBundledCopiesEveryField keeps the two in step.
type Bundled struct {
	GPU                  string   `json:"gpu"`
	Model                string   `json:"model"`
	Speedup              float64  `json:"speedup"`
	StartupSpeedup       float64  `json:"startup_speedup,omitempty"` // --startup-speedup (0: Speedup)
	Seed                 int64    `json:"seed"`
	TensorParallelSize   int      `json:"tensor_parallel_size,omitempty"`
	PipelineParallelSize int      `json:"pipeline_parallel_size,omitempty"`
	KVRole               string   `json:"kv_role,omitempty"`
	VLLMVersion          string   `json:"vllm_version,omitempty"`
	Args                 []string `json:"args,omitempty"`
}

// Startup is the start-up measurement (issue 4). Times are seconds since the
// process was spawned unless the name says otherwise; nil means unknown.
type Startup struct {
	PortOpenS            *float64 `json:"port_open_s,omitempty"`
	HealthOKS            *float64 `json:"health_ok_s,omitempty"`
	ModelListedS         *float64 `json:"model_listed_s,omitempty"`
	FirstTokenS          *float64 `json:"first_token_s,omitempty"`
	WeightsLoadS         *float64 `json:"weights_load_s,omitempty"` // a duration, from the log
	WeightsLoadedAtS     *float64 `json:"weights_loaded_at_s,omitempty"`
	ModelGiB             *float64 `json:"model_gib,omitempty"`
	InitEngineS          *float64 `json:"init_engine_s,omitempty"` // a duration, from the log
	KVCacheTokens        *int64   `json:"kv_cache_tokens,omitempty"`
	MaxConcurrency       *float64 `json:"max_concurrency,omitempty"`
	MaxConcurrencyTokens *int64   `json:"max_concurrency_tokens,omitempty"`
	PollIntervalS        *float64 `json:"poll_interval_s,omitempty"`
	// ModelLoadS is the engine's own account of a model loaded on first use
	// (Ollama's load_duration); ModelLoadedAtS when that load ended.
	ModelLoadS     *float64 `json:"model_load_s,omitempty"`
	ModelLoadedAtS *float64 `json:"model_loaded_at_s,omitempty"`
}

// Workload is what a run asked of the server. compare refuses to compare
// runs whose workloads differ.
type Workload struct {
	Mode Mode `json:"mode"` // ModeSequential, ModeConcurrent, ModeRate or ModeTrace
	// AcceptEncoding is what the client asked of the path: "gzip" (as the
	// OpenAI SDKs and browsers do; the default) or "identity"; absent in
	// results from before servebench asked for gzip (they sent none).
	AcceptEncoding string  `json:"accept_encoding,omitempty"`
	Concurrency    int     `json:"concurrency,omitempty"`
	Rate           float64 `json:"rate,omitempty"`    // requests/s for mode rate
	Arrival        string  `json:"arrival,omitempty"` // constant | poisson | gamma
	Burstiness     float64 `json:"burstiness,omitempty"`
	Requests       int     `json:"requests,omitempty"`
	DurationS      float64 `json:"duration_s,omitempty"`
	Warmup         int     `json:"warmup"`
	Stream         bool    `json:"stream"`
	Endpoint       string  `json:"endpoint"` // chat | completions | ollama-chat | messages | responses
	Model          string  `json:"model"`
	MaxTokens      int     `json:"max_tokens"`
	ExactLength    bool    `json:"exact_length"` // ignore_eos + min_tokens sent
	PromptKind     string  `json:"prompt_kind"`  // fixed | synthetic | file
	PromptTokens   int     `json:"prompt_tokens,omitempty"`
	PromptFile     string  `json:"prompt_file,omitempty"`

	// What traffic produced the run (issue 11): the source, its file's
	// SHA-256, the distributions, sessions, shared prefixes, trace and seed.
	Source         string `json:"source,omitempty"` // fixed | synthetic | file | sharegpt | jsonl | mooncake | azure
	SourceFile     string `json:"source_file,omitempty"`
	SourceSHA256   string `json:"source_sha256,omitempty"`
	SkippedEntries int    `json:"skipped_entries,omitempty"` // malformed or empty dataset entries left out
	// SourceEntries is the number of conversations a dataset holds; a run
	// of more starts over from the first (reuse).
	SourceEntries int `json:"source_entries,omitempty"`
	// OutputTokensFrom is where requests' output lengths came from when the
	// source set them per request: "dataset" (a reply's length or a line's
	// output_tokens) or "trace"; "" for --output-tokens or max_tokens.
	// OutputTokensRange is the [min, max] asked, max_tokens standing for
	// entries that give none (before clipping to max_model_len).
	OutputTokensFrom   string         `json:"output_tokens_from,omitempty"`
	OutputTokensRange  []int          `json:"output_tokens_range,omitempty"`
	InputTokens        string         `json:"input_tokens,omitempty"`  // distribution, e.g. lognormal:512,256
	OutputTokens       string         `json:"output_tokens,omitempty"` // distribution; "" = max_tokens
	Turns              string         `json:"turns,omitempty"`         // turns per session: N or all; "" = single requests
	ThinkTimeS         string         `json:"think_time_s,omitempty"`  // distribution in seconds between a reply and the next turn
	SharedPrefixTokens int            `json:"shared_prefix_tokens,omitempty"`
	PrefixGroups       int            `json:"prefix_groups,omitempty"`
	PrefixPick         string         `json:"prefix_pick,omitempty"` // uniform | zipf:S
	Trace              *TraceWorkload `json:"trace,omitempty"`
	Seed               int64          `json:"seed"`
	// A structured workload, whose reader is a program (--response-format
	// json | json-schema:FILE, --tools FILE and its tool_choice as sent):
	// each record's usable_s times when its answer became usable.
	ResponseFormat string `json:"response_format,omitempty"`
	ToolsFile      string `json:"tools_file,omitempty"`
	ToolChoice     string `json:"tool_choice,omitempty"`
	// Arrivals: each record keeps its response's reads (--arrivals).
	Arrivals bool `json:"arrivals,omitempty"`
	// With --direct-url every request went twice, one after the other in
	// alternating order: Path "proxied" through the server's base URL (a
	// proxy, a gateway), "direct" to DirectURL (the engine itself);
	// PairedWith names the other side's run (same requests, by index).
	Path       Path   `json:"path,omitempty"`
	PairedWith string `json:"paired_with,omitempty"`
	DirectURL  string `json:"direct_url,omitempty"`
	// LoRA is the adapter mix (--lora, --lora-dist): the distribution and
	// each adapter's share; "" without one.
	LoRA string `json:"lora,omitempty"`
	// ToolRounds: every conversation was a tool-calling session of this
	// many rounds (--tool-rounds), each call answered by the client.
	ToolRounds int `json:"tool_rounds,omitempty"`
}

// OpenLoop reports whether the run sent on a schedule (rate, trace), so
// latency is also measured from the intended send time.
func (w *Workload) OpenLoop() bool { return w.Mode.OpenLoop() }

// TraceWorkload is how a trace was replayed.
type TraceWorkload struct {
	Format          string  `json:"format"` // mooncake | azure
	Speed           float64 `json:"speed"`  // K times faster than recorded
	WindowStartS    float64 `json:"window_start_s,omitempty"`
	WindowDurationS float64 `json:"window_duration_s,omitempty"`
	Entries         int     `json:"entries"` // requests in the trace (or window)
	SpanS           float64 `json:"span_s"`  // first to last send time, after --trace-speed
}

// Run is one named run (e.g. "streaming", "non-streaming", "c=16").
type Run struct {
	Name       string         `json:"name"`
	Stream     bool           `json:"stream"`
	Workload   Workload       `json:"workload"`
	Requests   int            `json:"requests"` // measured requests sent (warm-up excluded)
	OK         int            `json:"ok"`
	Errors     map[string]int `json:"errors"` // by client.ErrorClass
	Retries    int            `json:"retries,omitempty"`
	StartedAt  time.Time      `json:"started_at"`
	DurationS  float64        `json:"duration_s"`
	Throughput Throughput     `json:"throughput"`
	Client     ClientStats    `json:"client"`
	Engine     EngineStats    `json:"engine"`
	Rate       *RateStats     `json:"rate,omitempty"`    // open-loop runs only
	Goodput    *Goodput       `json:"goodput,omitempty"` // runs with an SLO (--slo) only
	Shard      *Shard         `json:"shard,omitempty"`   // one slice of a sharded run (--shard K/N)
	// PromptTokens: generated prompts, requested against counted tokens.
	PromptTokens *PromptTokenStats `json:"prompt_tokens,omitempty"`
	Warnings     []string          `json:"warnings,omitempty"`
	Windows      []Window          `json:"windows,omitempty"`    // --interval slices, in order
	Incomplete   bool              `json:"incomplete,omitempty"` // see Results.Incomplete
	// Steady and Saturation: the run's steady-state window and figures,
	// and the open-loop test for a queue growing without bound.
	Steady     *Steady     `json:"steady_state,omitempty"`
	Saturation *Saturation `json:"saturation,omitempty"`
	// Modelled repeats the run's figures in the emulated hardware's time
	// when the session's clock is modelled (Clock.Annotate).
	Modelled *ModelledRun `json:"modelled,omitempty"`
	// Adapters are the client figures per LoRA adapter, when requests went
	// to adapters (--lora, a dataset's "lora"): the base model's as "".
	Adapters []AdapterStats `json:"adapters,omitempty"`
	// Sessions are the run's session figures when it sent multi-turn or
	// tool-calling sessions (per turn: the records' turn).
	Sessions *SessionStats `json:"sessions,omitempty"`
}

// SessionStats are a run's sessions: how many were sent, how many had
// every measured turn succeed, and those whole sessions' lengths in
// seconds (first send to last answer, think time included) and turns.
type SessionStats struct {
	Sessions int            `json:"sessions"`
	Whole    int            `json:"whole"`
	LengthS  *stats.Summary `json:"length_s,omitempty"`
	Turns    *stats.Summary `json:"turns,omitempty"`
}

// LoRAInfo is what a server's LoRA gauge said (scrape.LoRAInfo).
type LoRAInfo struct {
	MaxLoRA int      `json:"max_lora"`
	Running []string `json:"running,omitempty"`
	Waiting []string `json:"waiting,omitempty"`
}

// AdapterStats are one LoRA adapter's requests of a run: how many, how
// many succeeded, and their client figures. Requests of one run share its
// batches, adapters included: compare adapters within a run, and runs
// across repeats.
type AdapterStats struct {
	Name     string      `json:"name"` // "" : the base model
	Requests int         `json:"requests"`
	OK       int         `json:"ok"`
	Client   ClientStats `json:"client"`
}

// Throughput over the measured part of a run.
type Throughput struct {
	RequestsPerS     float64 `json:"requests_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
}

// ClientStats are client-clock figures over successful requests.
type ClientStats struct {
	FirstVisibleS *stats.Summary `json:"first_visible_s,omitempty"`
	FirstTokenS   *stats.Summary `json:"first_token_s,omitempty"`
	E2ES          *stats.Summary `json:"e2e_s,omitempty"`
	TTFBS         *stats.Summary `json:"ttfb_s,omitempty"`
	// ITLS is per token: an event gap g over k tokens is k samples of g/k
	// (Record.TokenGaps). ITLEventS are the gaps between events themselves.
	ITLS      *stats.Summary `json:"itl_s,omitempty"`
	ITLEventS *stats.Summary `json:"itl_event_s,omitempty"`
	// ITLRelativeError bounds the error of ITLS' and ITLEventS' median,
	// p90 and p99 (relative): they come from an HdrHistogram, so that
	// memory stays bounded whatever the number of tokens (n, mean, min and
	// max are exact).
	ITLRelativeError float64 `json:"itl_quantiles_relative_error,omitempty"`
	// Compressed counts the successful answers that came compressed
	// (Record.ContentEncoding), timed as their decompressed content arrived.
	Compressed int `json:"compressed,omitempty"`
	// Stutter is how streamed tokens arrived (absent: nothing streamed).
	Stutter      *RunStutter    `json:"stutter,omitempty"`
	TPOTS        *stats.Summary `json:"tpot_s,omitempty"`
	OutputTokens *stats.Summary `json:"output_tokens,omitempty"`
	// Reasoning models, over the requests that reasoned (absent when none
	// did): first reasoning token, thinking (first to last reasoning
	// token), reasoning and answer tokens, answer TPOT. The first answer
	// token is FirstVisibleS; the first token of any kind FirstTokenS.
	FirstReasoningS *stats.Summary `json:"first_reasoning_s,omitempty"`
	ThinkingS       *stats.Summary `json:"thinking_s,omitempty"`
	ReasoningTokens *stats.Summary `json:"reasoning_tokens,omitempty"`
	AnswerTokens    *stats.Summary `json:"answer_tokens,omitempty"`
	AnswerTPOTS     *stats.Summary `json:"answer_tpot_s,omitempty"`
	// UsableS is the time to usable output of a structured workload's
	// answers (Record.UsableS) over those that became usable; Unusable
	// counts the successful requests whose answer never did.
	UsableS  *stats.Summary `json:"usable_s,omitempty"`
	Unusable int            `json:"unusable,omitempty"`
	// Measured from the intended send time (open loop): no coordinated omission.
	FirstVisibleFromIntendedS *stats.Summary `json:"first_visible_from_intended_s,omitempty"`
	E2EFromIntendedS          *stats.Summary `json:"e2e_from_intended_s,omitempty"`
}

// EngineStats are engine-clock figures from /metrics deltas over the run.
// A quantity the server does not export is nil (absent), never zero.
type EngineStats struct {
	TTFTS    *Hist `json:"ttft_s,omitempty"`
	E2ES     *Hist `json:"e2e_s,omitempty"`
	QueueS   *Hist `json:"queue_s,omitempty"`
	PrefillS *Hist `json:"prefill_s,omitempty"`
	DecodeS  *Hist `json:"decode_s,omitempty"`
	ITLS     *Hist `json:"itl_s,omitempty"`
	// Prefix caching over the run, in prompt tokens: looked up and found
	// cached (vLLM's prefix_cache_queries/hits, SGLang's prompt_tokens and
	// cached_tokens), and their ratio; absent when the server does not
	// count them (or looked nothing up). Without the counters, SGLang's own
	// recent cache_hit_rate gauge at the run's end is the hit rate.
	PrefixCacheQueries *float64        `json:"prefix_cache_queries,omitempty"`
	PrefixCacheHits    *float64        `json:"prefix_cache_hits,omitempty"`
	PrefixCacheHitRate *float64        `json:"prefix_cache_hit_rate,omitempty"`
	Reconciliation     *Reconciliation `json:"reconciliation,omitempty"`
	Source             *EngineSource   `json:"source,omitempty"`
	// GPUEnergyJ is the GPUs' energy over the run, summed, from a DCGM
	// exporter's counter delta (a --metrics-url of dcgm-exporter, or the
	// bundled engine's own series); JoulesPerOutputToken divides it by
	// the engine's generated-token delta. Absent without the series.
	GPUEnergyJ           *float64 `json:"gpu_energy_j,omitempty"`
	JoulesPerOutputToken *float64 `json:"joules_per_output_token,omitempty"`
	// Replicas are each replica's figures beside the sum above, when the
	// engine figures come from several --metrics-url or from Prometheus.
	Replicas []Replica `json:"replicas,omitempty"`
	// LoRA is vllm:lora_requests_info after the run: the server's adapter
	// slots and the adapters it last saw running and waiting (after a
	// run, usually none); absent when the server serves no adapters.
	LoRA *LoRAInfo `json:"lora,omitempty"`
}

// Replica is one replica's engine figures over a run. A quantity the
// server does not export is nil; Requests 0 means it finished none.
type Replica struct {
	Name             string   `json:"name"` // its --metrics-url, or Prometheus' pod or instance label
	Requests         *float64 `json:"requests,omitempty"`
	PromptTokens     *float64 `json:"prompt_tokens,omitempty"`
	GenerationTokens *float64 `json:"generation_tokens,omitempty"`
	TTFTS            *Hist    `json:"ttft_s,omitempty"`
	E2ES             *Hist    `json:"e2e_s,omitempty"`
	QueueS           *Hist    `json:"queue_s,omitempty"`
	PrefillS         *Hist    `json:"prefill_s,omitempty"`
	DecodeS          *Hist    `json:"decode_s,omitempty"`
	ITLS             *Hist    `json:"itl_s,omitempty"`
	// KVUsage is the KV-cache usage (0..1) over the run's scrapes: from
	// Prometheus, or from several --metrics-url sampled during the run
	// (--gauge-interval).
	KVUsage *Gauge `json:"kv_usage,omitempty"`
	// PrefixCacheHitRate is hits / queries of the prefix cache over the run
	// (0..1), where the server counts them.
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"`
}

// Gauge is a gauge over a run: the mean and the maximum of its scrapes in
// the run's window, as Prometheus' avg_over_time and max_over_time read
// them (at a steady scrape interval the mean is time-weighted).
type Gauge struct {
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
	// Samples is how many scrapes they are over (servebench's own
	// sampling of --metrics-url; Prometheus' are not counted).
	Samples int `json:"samples,omitempty"`
}

// Engine sources (EngineSource.Kind).
const (
	SourceMetrics    = "metrics"    // servebench scraped /metrics before and after the run
	SourcePrometheus = "prometheus" // the Prometheus HTTP API over the run's window
	// SourceOllama: each request's own timings from Ollama's /api/chat
	// (Record.Engine), summarised exactly: the quantiles are the samples'.
	SourceOllama = "ollama"
)

// EngineSource says where a run's engine figures came from and, for
// Prometheus, exactly what was asked.
type EngineSource struct {
	Kind     string `json:"kind"` // SourceMetrics, SourcePrometheus or SourceOllama
	URL      string `json:"url,omitempty"`
	Version  string `json:"version,omitempty"`  // the Prometheus server's
	Selector string `json:"selector,omitempty"` // matchers added to every query
	// Queries are every PromQL query the figures come from, each pinned to
	// its evaluation time with @.
	Queries         []string `json:"queries,omitempty"`
	ScrapeIntervalS float64  `json:"scrape_interval_s,omitempty"`
	// ScrapeLagS is the longest time from the run's end to a replica's
	// first scrape after it (the window ends there).
	ScrapeLagS    float64 `json:"scrape_lag_s,omitempty"`
	CounterResets int     `json:"counter_resets,omitempty"` // seen by Prometheus' resets() in the window
}

// Hist is a histogram delta: the mean is exact (delta sum / delta count);
// the quantiles are estimated from bucket deltas by linear interpolation,
// unless Exact (per-request engine timings: the requests' own quantiles).
type Hist struct {
	Mean   float64 `json:"mean"`
	Count  float64 `json:"count"`
	P50Est float64 `json:"p50_est"`
	P90Est float64 `json:"p90_est"`
	P99Est float64 `json:"p99_est"`
	// Exact: the quantiles are the observations' own (Ollama's per-request
	// timings), not estimates from buckets.
	Exact bool `json:"exact,omitempty"`
	// Bounds holds, by quantile ("p50", "p90", "p99"), the bucket a
	// quantile lies in where the histogram cannot place it inside: every
	// observation sits in that one bucket, or it is the overflow (+Inf)
	// bucket. The _est figure is then an artefact of interpolation, and
	// reports print the bound instead.
	Bounds map[string]QuantileBound `json:"quantile_bounds,omitempty"`
}

// QuantileBound is the histogram bucket a quantile lies in: above Above,
// at most AtMost (absent for the overflow bucket).
type QuantileBound struct {
	Above  float64  `json:"above"`
	AtMost *float64 `json:"at_most,omitempty"`
}

// Quantile is the p ("p50", "p90", "p99") quantile of h and its bound,
// when the histogram places it only in a bucket (bound non-nil).
func (h *Hist) Quantile(p string) (float64, *QuantileBound) {
	var v float64
	switch p {
	case "p50":
		v = h.P50Est
	case "p90":
		v = h.P90Est
	case "p99":
		v = h.P99Est
	}
	if b, ok := h.Bounds[p]; ok {
		return v, &b
	}
	return v, nil
}

// Reconciliation compares what the client sent with what the engine counted.
type Reconciliation struct {
	Sent        int     `json:"sent"`      // measured requests sent, retries included (warm-up is scraped apart)
	OK          int     `json:"ok"`        // of which succeeded: the engine must count at least these
	Completed   int     `json:"completed"` // client saw an HTTP response (ok or error)
	EngineCount float64 `json:"engine_count"`
	WaitedS     float64 `json:"waited_s"` // how long we waited for the engine count to catch up
	Foreign     bool    `json:"foreign_traffic"`
	// IdleReplicas name the replicas whose engine finished none of the
	// run's requests (a router that skips them, a dead replica).
	IdleReplicas []string `json:"idle_replicas,omitempty"`
	Note         string   `json:"note,omitempty"`
	// EngineAbsent: the engine figures were left out because the counts
	// cannot be trusted (a counter reset) or could not be read (a failed
	// scrape: the server died); Note says why.
	EngineAbsent bool `json:"engine_figures_absent,omitempty"`
}

// Shard says which slice of a sharded run this is: conversation i was sent
// by shard i mod Count. The workload block holds the whole run's totals.
type Shard struct {
	Index   int        `json:"index"`
	Count   int        `json:"count"`
	StartAt *time.Time `json:"start_at,omitempty"` // the shards' common start (--start-at)
	// StartSkewS is how late this shard started after StartAt.
	StartSkewS float64 `json:"start_skew_s,omitempty"`
}

// RateStats describe how well an open-loop run kept its schedule.
type RateStats struct {
	TargetPerS   float64        `json:"target_per_s"`
	AchievedPerS float64        `json:"achieved_per_s"`
	LateSends    int            `json:"late_sends"` // sent more than 1 ms after the intended time
	SendLagS     *stats.Summary `json:"send_lag_s,omitempty"`
}

// Record is one line of requests.jsonl, written as each request completes.
// Offsets are seconds from the request's start; 0/absent means not reached.
type Record struct {
	Run           string    `json:"run"`
	Index         int       `json:"index"`
	Warmup        bool      `json:"warmup,omitempty"`
	Stream        bool      `json:"stream"`
	Start         time.Time `json:"start"`
	IntendedLagS  float64   `json:"intended_lag_s,omitempty"` // start - intended send time (open loop)
	WrittenS      float64   `json:"written_s,omitempty"`
	TTFBS         float64   `json:"ttfb_s,omitempty"`
	FirstTokenS   float64   `json:"first_token_s,omitempty"`
	FirstVisibleS float64   `json:"first_visible_s,omitempty"`
	E2ES          float64   `json:"e2e_s,omitempty"`
	// UsableS is when a structured answer became usable by a program: its
	// JSON, or its tool call's arguments, first parsed complete (and valid
	// for the schema given); absent when not structured or never usable,
	// and UsableError then says why not.
	UsableS     float64 `json:"usable_s,omitempty"`
	UsableError string  `json:"usable_error,omitempty"`
	// FirstReasoningS and LastReasoningS bound a reasoning model's
	// thinking as streamed (first and last reasoning event); the answer's
	// first token is FirstVisibleS. Absent when nothing reasoned.
	FirstReasoningS float64 `json:"first_reasoning_s,omitempty"`
	LastReasoningS  float64 `json:"last_reasoning_s,omitempty"`
	Status          int     `json:"status,omitempty"`
	PromptTokens    int     `json:"prompt_tokens,omitempty"`
	CachedTokens    int     `json:"cached_tokens,omitempty"` // usage.prompt_tokens_details.cached_tokens (prefix-cache hits)
	// PromptTokensRequested is the prompt length the workload asked for
	// when servebench generated the whole prompt (token-exact prompts);
	// PromptTokens is what the server counted.
	PromptTokensRequested int `json:"prompt_tokens_requested,omitempty"`
	OutputTokens          int `json:"output_tokens"`
	// ReasoningTokens are the output tokens that were thinking;
	// AnswerTokens the rest (OutputTokens - ReasoningTokens: the answer and
	// any marker tokens the server's parser swallowed). Both absent when
	// nothing reasoned.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	AnswerTokens    int `json:"answer_tokens,omitempty"`
	// OtherReasoning names a field the server put its answer's reasoning
	// in, by the look of its name, that servebench does not count as
	// reasoning (it knows client.ReasoningKeys: reasoning_content and
	// reasoning, vLLM's, SGLang's and OpenAI-compatible servers' names).
	OtherReasoning string `json:"other_reasoning_field,omitempty"`
	TokensFrom     string `json:"tokens_from,omitempty"`
	// ContentEncoding is the answer's Content-Encoding ("gzip": timed as
	// its decompressed content arrived); absent when not compressed.
	ContentEncoding string `json:"content_encoding,omitempty"`
	FinishReason    string `json:"finish_reason,omitempty"`
	Error           string `json:"error,omitempty"`
	ErrorText       string `json:"error_text,omitempty"`
	Attempt         int    `json:"attempt,omitempty"` // retries: 1-based attempt number when > 1
	// RequestID is the X-Request-Id the request carried ("sb-RUN-INDEX-RANDOM"),
	// which vLLM and SGLang take as their own request id; "" with --request-id=false.
	RequestID string `json:"request_id,omitempty"`
	// Retried marks an attempt that got 429/503 and was retried (--retries):
	// kept as data, counted in Run.Retries, not as the request's outcome.
	Retried bool   `json:"retried,omitempty"`
	Events  Events `json:"events,omitempty"` // [seconds from start, tokens] per content event
	// Stutter is how the events arrived (Events.Stutter over the request's
	// own pace); absent unless two or more token events streamed.
	Stutter       *Stutter `json:"stutter,omitempty"`
	EventsDropped int      `json:"events_dropped,omitempty"`
	// Arrivals are the response's reads, with --arrivals (client.Arrival):
	// [seconds from start, bytes, tokens] each, at most client.MaxArrivals
	// of them; ArrivalsDropped counts the reads past that cap.
	Arrivals        [][3]float64 `json:"arrivals,omitempty"`
	ArrivalsDropped int          `json:"arrivals_dropped,omitempty"`
	// Session and Turn (1-based) place a request in a multi-turn session;
	// PrefixGroup (1-based) is its shared-prefix group. Absent: none.
	Session     string `json:"session,omitempty"`
	Turn        int    `json:"turn,omitempty"`
	PrefixGroup int    `json:"prefix_group,omitempty"`
	// LoRA is the adapter the request was sent to (its model); absent: the
	// base model.
	LoRA string `json:"lora,omitempty"`
	// MaxTokens is the output length asked of this request when a source
	// sets it per request (--output-tokens, a dataset, a trace) or it was
	// clipped below the run's max_tokens to fit the server's context.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Window is the 1-based --interval window the request completed in
	// (Run.Windows); absent without --interval.
	Window int `json:"window,omitempty"`
	// Engine is the engine's own account of this request, where the API
	// gives one (Ollama's /api/chat, --endpoint ollama-chat).
	Engine *EngineRecord `json:"engine,omitempty"`
}

// EngineRecord is one request's timings as the engine reports them
// (Ollama's names, in seconds): total from receiving the request to the
// answer's end, load (getting a runner, loading the model on first use),
// prompt eval (prefill), eval (decode), and the tokens of each.
type EngineRecord struct {
	TotalS          float64 `json:"total_duration_s"`
	LoadS           float64 `json:"load_duration_s"`
	PromptEvalS     float64 `json:"prompt_eval_duration_s"`
	EvalS           float64 `json:"eval_duration_s"`
	PromptEvalCount int     `json:"prompt_eval_count"`
	EvalCount       int     `json:"eval_count"`
}

// TTFTS is the engine's time to first token: load + prompt eval.
func (e *EngineRecord) TTFTS() float64 { return e.LoadS + e.PromptEvalS }

// QueueS is what the engine's total holds beyond load, prompt eval and eval:
// waiting for a free slot, templating, tokenizing (never below 0).
func (e *EngineRecord) QueueS() float64 { return max(0, e.TotalS-e.LoadS-e.PromptEvalS-e.EvalS) }

// Outcome reports whether r is a measured request's outcome: neither a
// warm-up request nor an attempt retried after a 429/503.
func (r *Record) Outcome() bool { return !r.Warmup && !r.Retried }

// TPOT is the request's time per output token after the first visible
// one, (e2e - first_visible) / (output_tokens - 1); ok is false where it
// is undefined: not streaming, fewer than two tokens, no visible output.
func (r *Record) TPOT() (tpot float64, ok bool) { return r.tpotOver(r.OutputTokens) }

// tpotOver is (e2e - first_visible) / (n - 1), TPOT's formula over n
// tokens, with its conditions.
func (r *Record) tpotOver(n int) (float64, bool) {
	if !r.Stream || n < 2 || r.FirstVisibleS <= 0 || r.E2ES <= r.FirstVisibleS {
		return 0, false
	}
	return (r.E2ES - r.FirstVisibleS) / float64(n-1), true
}

// Reasoned reports whether the request's output began with reasoning.
func (r *Record) Reasoned() bool { return r.ReasoningTokens > 0 }

// Thinking is the time from the first to the last reasoning event: how
// long a streaming reasoning model thought in the client's view; ok is
// false where nothing reasoned or it was not streamed.
func (r *Record) Thinking() (float64, bool) {
	if r.FirstReasoningS <= 0 || r.LastReasoningS < r.FirstReasoningS {
		return 0, false
	}
	return r.LastReasoningS - r.FirstReasoningS, true
}

// AnswerTPOT is TPOT over the answer alone, (e2e - first_visible) /
// (answer_tokens - 1): a reasoning model's pace once the user sees output
// (TPOT divides by every output token, thinking included). ok is false
// where nothing reasoned or TPOT's conditions fail.
func (r *Record) AnswerTPOT() (float64, bool) {
	if !r.Reasoned() {
		return 0, false
	}
	return r.tpotOver(r.AnswerTokens)
}

// ErrorCounts lists a run's error classes with their counts in a stable
// order, "http_status: 2, timeout: 1" (classes counted 0 left out), for
// messages and report.md.
func ErrorCounts(errs map[string]int) string {
	keys := make([]string, 0, len(errs))
	for k, n := range errs {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "no error class recorded"
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, errs[k])
	}
	return strings.Join(parts, ", ")
}
