package perf

import "testing"

// TestArgonneRunsFitKV holds argonneSets to runs vLLM could keep whole:
// every sequence's prompt and answer in the KV cache the model sizes at
// those flags, so no row prices a preemption the model does not run.
func TestArgonneRunsFitKV(t *testing.T) {
	for _, set := range argonneSets {
		g, err := LookupGPU(set.gpu)
		if err != nil {
			t.Fatal(err)
		}
		m, err := lookupFidelityModel(set.model)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(g, m, argonneConfig(set.maxLen))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range set.runs {
			if need := r.batch * 2 * r.n; need > p.KVCacheTokens() {
				t.Errorf("%s %s batch %d x (%d+%d) tokens = %d, over the %d-token KV cache",
					set.gpu, set.model, r.batch, r.n, r.n, need, p.KVCacheTokens())
			}
		}
		t.Logf("%s %s: KV cache %d tokens at the runs' flags", set.gpu, set.model, p.KVCacheTokens())
	}
}
