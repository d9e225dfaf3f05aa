package perf_test

import (
	"fmt"

	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/tok"
)

// ExampleNew builds the default profile and prints what the bundled engine
// logs at start-up and how long one request alone takes, first with its
// whole prompt to prefill, then repeated with its prefix cached.
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

	// servebench's default prompt under Qwen2.5's chat template; a repeat
	// finds its whole blocks in the prefix cache (all tokens but the last at
	// most) and prefills only the rest.
	tk, err := tok.For(m.Name)
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt := tk.ChatCount([]tok.Message{{Role: "user", Content: perf.CalibrationPrompt}})
	cached := (prompt - 1) / p.BlockSize() * p.BlockSize()
	for _, c := range []int{0, cached} {
		ttft := p.RequestOverhead() + p.StepTime(perf.Step{PrefillTokens: prompt - c, PrefillSeqs: 1, ContextTokens: c})
		e2e := ttft
		for i := 1; i < 256; i++ {
			e2e += p.StepTime(perf.Step{DecodeSeqs: 1, ContextTokens: prompt + i})
		}
		fmt.Printf("%d prompt tokens, %d cached: TTFT %.4f s, E2E %.3f s\n", prompt, c, ttft.Seconds(), e2e.Seconds())
	}
	// Output:
	// Loading weights took 23.38 seconds
	// GPU KV cache size: 77744 tokens
	// Maximum concurrency for 4,096 tokens per request: 18.98x
	// health OK after 90.0 s
	// 46 prompt tokens, 0 cached: TTFT 0.0443 s, E2E 3.873 s
	// 46 prompt tokens, 32 cached: TTFT 0.0276 s, E2E 3.857 s
}
