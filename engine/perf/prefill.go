package perf

import "time"

// PrefillTTFT is the TTFT of len(prompts) requests that arrive together,
// are admitted at once and prefilled in one step (their sum within the
// step's token budget): each pays RequestOverhead in parallel, then the
// shared step. With one prompt it is a request alone.
func (p *Perf) PrefillTTFT(prompts ...int) time.Duration {
	total := 0
	for _, n := range prompts {
		total += n
	}
	return p.RequestOverhead() + p.StepTime(Step{PrefillTokens: total, PrefillSeqs: len(prompts)})
}
