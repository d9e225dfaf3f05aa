package sim

// TEMPORARY: until engine/perf implements Lookup/New, the engine runs on this
// rough stand-in so its own tests can run. Removed once perf lands.

import (
	"fmt"
	"math"
	"time"

	"github.com/servebench/servebench/engine/perf"
)

type fakePerf struct {
	gpu    perf.GPU
	model  perf.Model
	blocks int
}

func buildPerf(o *Options) (perfModel, perf.GPU, perf.Model, error) {
	g := perf.GPU{Name: o.GPU, MemoryGiB: 12, BandwidthGBs: 360, TFLOPs: 101, LoadGBs: 0.24}
	m := perf.Model{Name: o.Model, ServedName: "Qwen/Qwen2.5-7B-Instruct-AWQ", ParamsB: 7.6, BytesPerWeight: 0.7,
		Layers: 28, KVHeads: 4, HeadDim: 128, Vocab: 152064, MaxContext: 32768}
	if o.GPU != "rtx3060-12gb" || o.Model != "qwen2.5-7b-instruct-awq" {
		return nil, g, m, fmt.Errorf("unknown profile %s/%s", o.GPU, o.Model)
	}
	if o.MaxModelLen == 0 {
		o.MaxModelLen = m.MaxContext
	}
	tokens := int(77744 * o.GPUMemoryUtilization / 0.9)
	return &fakePerf{gpu: g, model: m, blocks: tokens / blockSize}, g, m, nil
}

func (f *fakePerf) KVCacheTokens() int { return f.blocks * blockSize }
func (f *fakePerf) NumGPUBlocks() int  { return f.blocks }
func (f *fakePerf) BlockSize() int     { return blockSize }
func (f *fakePerf) MaxConcurrency(n int) float64 {
	return math.Round(float64(f.blocks*blockSize)/float64(n)*100) / 100
}
func (f *fakePerf) StepTime(s perf.Step) time.Duration {
	sec := 0.0148 + float64(s.ContextTokens)*57344/360e9 + float64(s.PrefillTokens)*2*7.6e9/101e12/0.5
	return time.Duration(sec * 1e9)
}
func (f *fakePerf) Startup() perf.Startup {
	return perf.Startup{PreLoad: 8 * time.Second, WeightsLoad: 23400 * time.Millisecond, ModelLoad: 24 * time.Second,
		ModelGiB: 5.2, Profile: 10 * time.Second, Compile: 30 * time.Second, GraphCapture: 15 * time.Second,
		APIStart: 3 * time.Second}
}
