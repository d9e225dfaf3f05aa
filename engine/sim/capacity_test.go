package sim

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/perf"
)

// TestCapacityArithmetic is the seed's 70B question as the engine answers
// it: `servebench engine --model llama-3.1-70b-instruct --gpu h100-80gb
// --tensor-parallel-size 8 --max-model-len 32768`. The test recomputes the
// back-of-the-envelope arithmetic from the profile facts alone and checks
// the engine's logged KV capacity and maximum concurrency against it:
//
//	KV per token  = 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 320 KiB
//	one 32K session = 32,768 x 320 KiB = 10 GiB
//	weights       = 70.55e9 x 2 bytes = 131.4 GiB, 16.4 GiB on each of 8 GPUs
//	per GPU       = 1 KV head (8 / 8) = 40 KiB per token
//	KV tokens     = (0.9 x 79.18 GiB - 16.4 GiB - activation reserve) / 40 KiB
//	concurrency   = KV tokens / 32,768
func TestCapacityArithmetic(t *testing.T) {
	log := &SyncBuffer{}
	o := DefaultOptions()
	o.GPU, o.Model, o.TensorParallelSize, o.MaxModelLen, o.Port, o.Log = "h100-80gb", "llama-3.1-70b-instruct", 8, 32768, 0, log
	quickStart(&o)
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.startup(t.Context()); err != nil {
		t.Fatal(err)
	}
	out := log.String()

	g, m, err := perf.Lookup(o.GPU, o.Model)
	if err != nil {
		t.Fatal(err)
	}
	const gib = 1 << 30
	kvPerToken := 2 * m.Layers * m.KVHeads * m.HeadDim * 2
	if kvPerToken != 320<<10 {
		t.Errorf("KV per token %d bytes, want 320 KiB", kvPerToken)
	}
	if session := float64(32768*kvPerToken) / gib; session != 10 {
		t.Errorf("one 32K session holds %.2f GiB of KV, want 10", session)
	}
	weights := m.ParamsB * 1e9 * 2 / gib
	if weights < 131 || weights > 132 {
		t.Errorf("weights %.1f GiB, want ~131", weights)
	}
	perGPU := kvPerToken / 8 // 8 KV heads over 8 GPUs: one each
	p, err := perf.New(g, m, perf.Config{MaxModelLen: 32768, GPUMemoryUtilization: 0.9, TensorParallelSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	avail := 0.9*g.MemoryGiB*gib - weights*gib/8 - p.ReserveGiB()*gib
	wantTokens := int(avail/float64(16*perGPU)) * 16
	// The envelope without the (modelled) activation reserve: within 8%.
	rough := (0.9*g.MemoryGiB*gib - weights*gib/8) / float64(perGPU)

	tokens := logged(t, out, `GPU KV cache size: ([0-9,]+) tokens`)
	conc := logged(t, out, `Maximum concurrency for 32,768 tokens per request: ([0-9.]+)x`)
	t.Logf("weights %.1f GiB (%.2f per GPU), KV %d B/token/GPU, logged %.0f tokens (arithmetic %d, without reserve %.0f), %.2fx at 32K; 256 sessions need %.0f GiB of KV, the node holds %.0f",
		weights, weights/8, perGPU, tokens, wantTokens, rough, conc, 256*10.0, 8*avail/gib)
	if int(tokens) != wantTokens {
		t.Errorf("logged %.0f KV tokens, arithmetic gives %d", tokens, wantTokens)
	}
	if d := tokens/rough - 1; d > 0 || d < -0.08 {
		t.Errorf("logged %.0f tokens, %.1f%% from the reserve-free envelope %.0f", tokens, d*100, rough)
	}
	if want := float64(wantTokens) / 32768; conc < want-0.01 || conc > want+0.01 {
		t.Errorf("logged concurrency %.2fx, arithmetic %.2fx", conc, want)
	}
	// The seed's answer: 256 full 32K sessions need 2,560 GiB of KV; the
	// node holds a sixth of it, so KV memory binds, not compute.
	if conc >= 256 || 256*10 <= 8*avail/gib {
		t.Errorf("256 x 32K sessions should not fit: %.1fx, %.0f GiB of KV", conc, 8*avail/gib)
	}
	if n := strings.Count(out, "Model loading took 16.4271 GiB"); n != 8 {
		t.Errorf("%d ranks logged loading a 16.43 GiB shard, want 8", n)
	}
}

// logged returns the number the first match of re's group captures.
func logged(t *testing.T, log, re string) float64 {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no %q in the log:\n%s", re, log)
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
