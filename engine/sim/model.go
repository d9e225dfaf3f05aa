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
	RequestOverhead() time.Duration
	Startup() perf.Startup
}

// blockSize is vLLM's default KV block size in tokens.
const blockSize = 16

// buildPerf looks the profiles up and builds the performance model, filling
// in o's zero fields with what the model resolved (vLLM's defaults).
func buildPerf(o *Options) (*perf.Perf, perf.GPU, perf.Model, error) {
	g, m, err := perf.Lookup(o.GPU, o.Model)
	if err != nil {
		return nil, g, m, err
	}
	p, err := perf.New(g, m, perf.Config{MaxModelLen: o.MaxModelLen, GPUMemoryUtilization: o.GPUMemoryUtilization,
		BlockSize: blockSize, MaxNumSeqs: o.MaxNumSeqs, MaxNumBatchedTokens: o.MaxNumBatchedTokens})
	if err != nil {
		return nil, g, m, err
	}
	cfg := p.Config()
	o.MaxModelLen, o.MaxNumSeqs, o.MaxNumBatchedTokens = cfg.MaxModelLen, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens
	return p, g, m, nil
}
