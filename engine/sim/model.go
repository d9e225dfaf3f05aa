package sim

import (
	"time"

	"github.com/servebench/servebench/engine/perf"
)

// perfModel is what the engine asks engine/perf: capacity, step times and
// start-up phases. *perf.Perf implements it.
type perfModel interface {
	KVCacheTokens() int
	NumGPUBlocks() int
	BlockSize() int
	MaxConcurrency(tokensPerRequest int) float64
	StepTime(perf.Step) time.Duration
	Startup() perf.Startup
}

// blockSize is vLLM's default KV block size in tokens.
const blockSize = 16

// bigGPUGiB is where vLLM switches to its larger scheduler defaults
// (max_num_seqs 1024, max_num_batched_tokens 8192 for the API server).
const bigGPUGiB = 70
