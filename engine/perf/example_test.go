package perf_test

import (
	"fmt"

	"github.com/servebench/servebench/engine/perf"
)

// ExampleNew builds the default profile and prints what the bundled engine
// logs at start-up and how long one request alone takes.
func ExampleNew() {
	g, m, err := perf.Lookup(perf.DefaultGPU, perf.DefaultModel)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := perf.New(g, m, perf.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	s := p.Startup()
	fmt.Printf("Loading weights took %.2f seconds\n", s.WeightsLoad.Seconds())
	fmt.Printf("GPU KV cache size: %d tokens\n", p.KVCacheTokens())
	fmt.Printf("Maximum concurrency for 4,096 tokens per request: %.2fx\n", p.MaxConcurrency(4096))
	fmt.Printf("health OK after %.1f s\n", s.Total().Seconds())

	// One request alone: 27 prompt tokens, 256 output tokens.
	ttft := p.RequestOverhead() + p.StepTime(perf.Step{PrefillTokens: 27, PrefillSeqs: 1})
	e2e := ttft
	for i := 1; i < 256; i++ {
		e2e += p.StepTime(perf.Step{DecodeSeqs: 1, ContextTokens: 27 + i})
	}
	fmt.Printf("TTFT %.3f s, E2E %.2f s\n", ttft.Seconds(), e2e.Seconds())
	// Output:
	// Loading weights took 23.38 seconds
	// GPU KV cache size: 77696 tokens
	// Maximum concurrency for 4,096 tokens per request: 18.97x
	// health OK after 90.0 s
	// TTFT 0.028 s, E2E 3.85 s
}
