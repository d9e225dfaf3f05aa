package perf

import "testing"

// TestArgonneRunsFitKV holds argonneRuns to runs vLLM could keep whole:
// every sequence's prompt and answer in the KV cache the model sizes at
// those flags, so no row prices a preemption the model does not run.
func TestArgonneRunsFitKV(t *testing.T) {
	m, err := LookupModel("llama-3.1-8b-instruct")
	if err != nil {
		t.Fatal(err)
	}
	for gpu, runs := range argonneRuns {
		g, err := LookupGPU(gpu)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(g, m, argonneConfig())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if need := r.batch * 2 * r.n; need > p.KVCacheTokens() {
				t.Errorf("%s batch %d x (%d+%d) tokens = %d, over the %d-token KV cache", gpu, r.batch, r.n, r.n, need, p.KVCacheTokens())
			}
		}
		t.Logf("%s: KV cache %d tokens at the runs' flags", gpu, p.KVCacheTokens())
	}
}
