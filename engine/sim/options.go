package sim

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/servebench/servebench/engine/option"
)

// Options configures the bundled engine. Field names follow vLLM's flags
// (--max-model-len is MaxModelLen, and so on).
type Options struct {
	GPU                  string   // perf GPU profile, e.g. "rtx3060-12gb"
	Model                string   // perf model profile, e.g. "qwen2.5-7b-instruct-awq"
	MaxModelLen          int      // --max-model-len; 0: the model's context length
	GPUMemoryUtilization float64  // --gpu-memory-utilization, (0, 1]
	MaxNumSeqs           int      // --max-num-seqs; 0: vLLM's default for the GPU (perf.DefaultBatching: 256, 1024 on H100/H200)
	MaxNumBatchedTokens  int      // --max-num-batched-tokens; 0: vLLM's default (2048, 8192 on H100/H200)
	NumGPUBlocksOverride int      // --num-gpu-blocks-override; 0: from the performance model
	TensorParallelSize   int      // --tensor-parallel-size: GPUs of one node the model is split over; 0 or 1: one GPU
	PipelineParallelSize int      // --pipeline-parallel-size: stages of consecutive layers, each on TensorParallelSize GPUs; 0 or 1: none
	VLLMVersion          string   // --vllm-version: the release whose step loop is emulated (perf.Config.VLLMVersion); "": the seed's
	NoPrefixCaching      bool     // --no-enable-prefix-caching: vLLM V1 caches prefixes unless told not to
	KVRole               string   // --kv-role: "" (serves whole requests), "producer" (prefill instance) or "consumer" (decode instance); kvrole.go
	KVLinkGbps           float64  // --kv-link-gbps: the consumer's KV link (0: DefaultKVLinkGbps)
	KVAllocation         string   // --kv-allocation: "paged" (vLLM's; "" too) or "contiguous" (prompt + max_tokens reserved at admission; kvalloc.go)
	PromptTokensDetails  bool     // --enable-prompt-tokens-details: usage.prompt_tokens_details.cached_tokens
	DebugRequests        bool     // --debug-requests: keep each request's record, served on GET /debug/requests
	Speedup              float64  // divides every modelled duration; 1 is real time
	StartupSpeedup       float64  // divides start-up phases instead, when > 0 (tests: real-time steps, quick start)
	Seed                 int64    // --seed: generated text and lengths
	Host                 string   // bind address; "127.0.0.1" unless said otherwise
	Port                 int      // 0 picks a free port
	APIKey               string   // --api-key: /v1 endpoints need "Authorization: Bearer KEY"
	HealthDuringLoad     string   // "refuse" (not listening until ready, like vLLM) or "503" (like llama.cpp)
	IgnoreDisconnect     bool     // keep generating for clients that left (to show what it costs)
	LogRequests          bool     // --enable-log-requests: log each request's receipt, finish and abort by id
	ServedModelName      string   // name in /v1/models; "": the model profile's served name
	SpeculativeTokens    int      // --speculative-tokens K: drafts verified per decode step; 0 is off
	AcceptanceRate       float64  // --acceptance-rate: chance each draft is accepted (given the ones before it were)
	ReasoningParser      string   // --reasoning-parser: deepseek_r1, qwen3 or openai (reasoning.go); "" is off
	ReasoningTokens      string   // --reasoning-tokens: thinking length per chat request, a dist grammar spec
	ReasoningField       string   // --reasoning-field: reasoning_content (vLLM 0.11, the default) or reasoning (newer)
	EnableAutoToolChoice bool     // --enable-auto-tool-choice: tool_choice "auto" allowed (needs ToolCallParser)
	ToolCallParser       string   // --tool-call-parser: one of ToolCallParsers
	AutoToolCallRate     float64  // --auto-tool-call-rate: share of tool_choice "auto" answers that call a tool
	LoRAModules          []string // --lora-modules name=path ...: LoRA adapters served beside the base model (lora.go)
	MaxLoRAs             int      // --max-loras: distinct adapters in a batch, and GPU slots (0: vLLM's default, 1)
	MaxLoRARank          int      // --max-lora-rank: sizes an adapter's swap (0: vLLM's default, 16)
	Faults               []string
	Log                  io.Writer // vLLM-format log lines; nil discards them

	// LogStatsInterval is vLLM's VLLM_LOG_STATS_INTERVAL: the stats log
	// line's period, in wall time; 0 or less: vLLM's 10 s.
	LogStatsInterval time.Duration
}

// Health-during-load modes.
const (
	HealthRefuse = "refuse"
	Health503    = "503"
)

// MaxBodyBytes bounds request bodies; larger ones get 413. It is far above
// what --max-model-len allows, so over-long prompts still get vLLM's 400.
const MaxBodyBytes = 8 << 20

// DefaultOptions is the seed lesson's set-up: Qwen2.5-7B-Instruct-AWQ on an
// RTX 3060 12 GB, --max-model-len 4096 --gpu-memory-utilization 0.9, port 8000,
// and vLLM's scheduler defaults for that GPU (256 sequences, 2048 tokens a step).
func DefaultOptions() Options {
	return Options{
		GPU:                  "rtx3060-12gb",
		Model:                "qwen2.5-7b-instruct-awq",
		MaxModelLen:          4096,
		GPUMemoryUtilization: 0.9,
		Speedup:              1,
		Host:                 "127.0.0.1",
		Port:                 8000,
		HealthDuringLoad:     HealthRefuse,
		AcceptanceRate:       DefaultAcceptanceRate,
		AutoToolCallRate:     DefaultAutoToolCallRate,
	}
}

// DefaultAcceptanceRate is --acceptance-rate's default: about what EAGLE
// drafts reach on chat prompts for 7-8B targets.
const DefaultAcceptanceRate = 0.7

// MaxSpeculativeTokens bounds --speculative-tokens (vLLM's EAGLE and n-gram
// drafters are used with 1-10).
const MaxSpeculativeTokens = 16

// MaxSpeedup is the largest Speedup (and StartupSpeedup) the engine takes.
const MaxSpeedup = 1e6

// SpeedupOK reports whether v is a speed-up factor the engine takes: in
// (0, MaxSpeedup]; false for NaN and Inf. Commands that pass --speedup on to
// the bundled engine check it with this, before starting it.
func SpeedupOK(v float64) bool { return v > 0 && v <= MaxSpeedup }

// validate checks the fields that do not need the performance model, each
// error an option.FieldError naming its field, and fills the defaults of HealthDuringLoad, Host
// and Log.
func (o *Options) validate() error {
	var c optionErrors
	c.check(o.MaxModelLen < 0, option.Errorf("MaxModelLen", o.MaxModelLen, "want a positive token count (or 0 for the model's context length)"))
	c.check(!(o.GPUMemoryUtilization > 0 && o.GPUMemoryUtilization <= 1), option.Errorf("GPUMemoryUtilization", o.GPUMemoryUtilization, "want a fraction in (0, 1]"))
	c.check(o.MaxNumSeqs < 0, option.Errorf("MaxNumSeqs", o.MaxNumSeqs, "want a positive count (or 0 for the default)"))
	c.check(o.MaxNumBatchedTokens < 0, option.Errorf("MaxNumBatchedTokens", o.MaxNumBatchedTokens, "want a positive count (or 0 for the default)"))
	c.add(validateKVAllocation(o))
	c.add(validateKVRole(o))
	c.check(o.TensorParallelSize < 0, option.Errorf("TensorParallelSize", o.TensorParallelSize, "want a positive number of GPUs"))
	c.check(o.PipelineParallelSize < 0, option.Errorf("PipelineParallelSize", o.PipelineParallelSize, "want a positive number of stages"))
	c.check(o.NumGPUBlocksOverride < 0, option.Errorf("NumGPUBlocksOverride", o.NumGPUBlocksOverride, "want a positive count (or 0 for none)"))
	c.check(o.SpeculativeTokens < 0 || o.SpeculativeTokens > MaxSpeculativeTokens, option.Errorf("SpeculativeTokens", o.SpeculativeTokens, "want 0 (off) to %d draft tokens per step", MaxSpeculativeTokens))
	c.check(!(o.AcceptanceRate >= 0 && o.AcceptanceRate <= 1), option.Errorf("AcceptanceRate", o.AcceptanceRate, "want a probability in [0, 1]"))
	c.check(!SpeedupOK(o.Speedup), option.Errorf("Speedup", o.Speedup, "want a factor in (0, 1e6]"))
	c.check(o.StartupSpeedup != 0 && !SpeedupOK(o.StartupSpeedup), option.Errorf("StartupSpeedup", o.StartupSpeedup, "want a factor in (0, 1e6], or 0 for {Speedup}"))
	c.check(o.Port < 0 || o.Port > 65535, option.Errorf("Port", o.Port, "want 0-65535"))
	c.add(o.validateHealthDuringLoad())
	c.add(o.validateTools())
	c.add(o.validateHost())
	if o.Log == nil {
		o.Log = io.Discard
	}
	return errors.Join(c...)
}

// optionErrors collects every bad option's error, in the order checked, so
// one start-up names them all.
type optionErrors []error

// check adds err when bad holds.
func (c *optionErrors) check(bad bool, err *option.FieldError) {
	if bad {
		*c = append(*c, err)
	}
}

// add adds err unless it is nil.
func (c *optionErrors) add(err error) {
	if err != nil {
		*c = append(*c, err)
	}
}

// validateHealthDuringLoad checks --health-during-load ("": HealthRefuse).
func (o *Options) validateHealthDuringLoad() error {
	switch o.HealthDuringLoad {
	case HealthRefuse, Health503:
	case "":
		o.HealthDuringLoad = HealthRefuse
	default:
		return option.Errorf("HealthDuringLoad", o.HealthDuringLoad, "want %q or %q", HealthRefuse, Health503)
	}
	return nil
}

// validateHost checks --host ("": 127.0.0.1). The real listen comes only
// after the start-up phases (90 s at speed 1): a host that cannot be bound
// is found now, by a trial listen.
func (o *Options) validateHost() error {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	l, err := net.Listen("tcp", net.JoinHostPort(o.Host, "0"))
	if err != nil {
		return option.Errorf("Host", o.Host, "cannot listen there: %v", err)
	}
	l.Close()
	return nil
}
