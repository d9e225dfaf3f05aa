package perf

import "testing"

// expectedChunk is the mean tokens a sequence emits per step with k drafts
// each accepted with probability a until the first rejection, plus the
// bonus token: (1 - a^(k+1)) / (1 - a).
func expectedChunk(k int, a float64) float64 {
	sum, p := 0.0, 1.0
	for i := 0; i <= k; i++ {
		sum += p
		p *= a
	}
	return sum
}

// TestSpecDecodeStep: verifying k drafts costs more than a plain decode
// step (k more tokens' FLOPs and logits, k draft passes) but far less than
// k+1 steps, so speculation pays when enough drafts are accepted and loses
// when none are: the time per emitted token is printed for both.
func TestSpecDecodeStep(t *testing.T) {
	for _, c := range []struct{ gpu, model string }{
		{DefaultGPU, DefaultModel}, {"h100-80gb", "llama-3.1-8b-instruct"},
	} {
		p := mustNew(t, c.gpu, c.model, DefaultConfig())
		for _, seqs := range []int{1, 32} {
			plain := p.StepTime(Step{DecodeSeqs: seqs, ContextTokens: seqs * 500})
			prev := plain
			for _, k := range []int{1, 3, 5} {
				b := p.Breakdown(Step{DecodeSeqs: seqs, ContextTokens: seqs * 500, SpecTokens: seqs * k})
				perToken := func(a float64) float64 { return ms(b.Total) / expectedChunk(k, a) }
				t.Logf("%s %s, %2d seqs, K=%d: step %.2f ms (plain %.2f, drafting %.2f); per token at acceptance 0.8: %.2f ms, at 0: %.2f ms",
					c.gpu, c.model, seqs, k, ms(b.Total), ms(plain), ms(b.Draft), perToken(0.8), perToken(0))
				if b.Total <= prev || b.Total >= plain*(1+1) && seqs == 1 {
					t.Errorf("%s %d seqs K=%d: step %v, previous %v, plain %v: want longer than the previous, under two plain steps alone", c.gpu, seqs, k, b.Total, prev, plain)
				}
				if seqs == 1 && perToken(0.8) >= ms(plain) {
					t.Errorf("%s K=%d: %.2f ms per token at acceptance 0.8, not faster than plain decode %.2f ms", c.gpu, k, perToken(0.8), ms(plain))
				}
				if perToken(0) <= ms(plain) {
					t.Errorf("%s K=%d: %.2f ms per token with every draft rejected, not slower than plain %.2f ms", c.gpu, k, perToken(0), ms(plain))
				}
				prev = b.Total
			}
		}
	}
	p := calibrationPerf(t)
	if p.StepTime(Step{PrefillTokens: 27, PrefillSeqs: 1, SpecTokens: 3}) != p.StepTime(Step{PrefillTokens: 27, PrefillSeqs: 1}) {
		t.Errorf("drafts without decoding sequences changed a prefill step")
	}
}
