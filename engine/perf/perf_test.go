package perf

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func mustNew(t testing.TB, gpu, model string, cfg Config) *Perf {
	t.Helper()
	g, m, err := Lookup(gpu, model)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(g, m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func decodeMS(p *Perf) float64 {
	return p.StepTime(Step{DecodeSeqs: 1, ContextTokens: 256}).Seconds() * 1000
}

// TestArchitecture checks each model's architecture against its published
// parameter count, so a wrong layer or head figure shows up.
func TestArchitecture(t *testing.T) {
	for _, m := range Models() {
		if d := m.ArchParams()/(m.ParamsB*1e9) - 1; math.Abs(d) > 1e-4 {
			t.Errorf("%s: architecture gives %.0f parameters, published %.0f", m.Name, m.ArchParams(), m.ParamsB*1e9)
		}
	}
}

// TestAWQWeights checks the AWQ weight size against what vLLM reports for
// Qwen2.5-7B-Instruct-AWQ (~5.2 GiB), and that it is far from a naive
// 0.5 byte per parameter (3.5 GiB) or bf16 (14.2 GiB).
func TestAWQWeights(t *testing.T) {
	m, err := LookupModel("Qwen/Qwen2.5-7B-Instruct-AWQ") // by served name
	if err != nil {
		t.Fatal(err)
	}
	gib := m.WeightBytes() / (1 << 30)
	t.Logf("%s weights %.3f GiB, %.2f GB read per decode step", m.Name, gib, m.DecodeReadBytes()/1e9)
	if gib < 5.1 || gib > 5.6 {
		t.Errorf("AWQ weights %.3f GiB, expected 5.1-5.6 GiB as vLLM reports", gib)
	}
}

// TestOtherGPUs checks plausibility off the calibration point: H100 decode
// of a 7-8B bf16 model at 6-8 ms/token, H200 faster than H100.
func TestOtherGPUs(t *testing.T) {
	for _, model := range []string{"qwen2.5-7b-instruct", "llama-3.1-8b-instruct"} {
		h100 := decodeMS(mustNew(t, "h100-80gb", model, DefaultConfig()))
		h200 := decodeMS(mustNew(t, "h200-141gb", model, DefaultConfig()))
		t.Logf("%s decode: H100 %.2f ms/token, H200 %.2f ms/token", model, h100, h200)
		if h100 < 6 || h100 > 8 {
			t.Errorf("%s on H100: %.2f ms/token, expected 6-8", model, h100)
		}
		if h200 >= h100 {
			t.Errorf("%s: H200 %.2f ms/token not faster than H100 %.2f", model, h200, h100)
		}
	}
}

// TestFasterGPUFasterSteps: more bandwidth means faster decode steps and
// more TFLOP/s faster prefill, for every model on every pair of GPUs it fits.
func TestFasterGPUFasterSteps(t *testing.T) {
	decode := Step{DecodeSeqs: 1, ContextTokens: 512}
	prefill := Step{PrefillTokens: 2048, PrefillSeqs: 1}
	for _, m := range Models() {
		var fit []*Perf
		for _, g := range GPUs() {
			if p, err := New(g, m, DefaultConfig()); err == nil {
				fit = append(fit, p)
			}
		}
		for _, a := range fit {
			for _, b := range fit {
				ga, gb := a.GPU(), b.GPU()
				if ga.BandwidthGBs > gb.BandwidthGBs && a.StepTime(decode) >= b.StepTime(decode) {
					t.Errorf("%s: %s has more bandwidth than %s but decodes no faster", m.Name, ga.Name, gb.Name)
				}
				if ga.TFLOPs > gb.TFLOPs && a.StepTime(prefill) >= b.StepTime(prefill) {
					t.Errorf("%s: %s has more TFLOP/s than %s but prefills no faster", m.Name, ga.Name, gb.Name)
				}
			}
		}
	}
}

// TestBF16VersusAWQ: the bf16 model has more weight bytes, so on the same
// GPU it decodes slower and leaves less KV cache.
func TestBF16VersusAWQ(t *testing.T) {
	for _, g := range []string{"a10g-24gb", "l4-24gb", "a100-40gb", "h100-80gb"} {
		awq := mustNew(t, g, "qwen2.5-7b-instruct-awq", DefaultConfig())
		bf16 := mustNew(t, g, "qwen2.5-7b-instruct", DefaultConfig())
		if decodeMS(bf16) <= decodeMS(awq) {
			t.Errorf("%s: bf16 decode %.2f ms not slower than AWQ %.2f ms", g, decodeMS(bf16), decodeMS(awq))
		}
		if bf16.KVCacheTokens() >= awq.KVCacheTokens() {
			t.Errorf("%s: bf16 KV %d tokens not fewer than AWQ %d", g, bf16.KVCacheTokens(), awq.KVCacheTokens())
		}
	}
}

// TestDoesNotFit: a bf16 8B model on a 12 GB card is refused, and the
// error names the model, the GPU and the GiB needed and available.
func TestDoesNotFit(t *testing.T) {
	g, m, err := Lookup("rtx3060-12gb", "llama-3.1-8b-instruct")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(g, m, DefaultConfig())
	if !errors.Is(err, ErrDoesNotFit) {
		t.Fatalf("New = %v, want ErrDoesNotFit", err)
	}
	for _, want := range []string{"llama-3.1-8b-instruct", "rtx3060-12gb", "14.96 GiB weights", "needs", "10.58 GiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestBadConfig: every invalid configuration is refused with an error
// naming the flag and the value.
func TestBadConfig(t *testing.T) {
	g, m, err := Lookup(DefaultGPU, DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"utilization zero", Config{MaxModelLen: 4096}, []string{"--gpu-memory-utilization 0", "(0, 1]"}},
		{"utilization negative", Config{MaxModelLen: 4096, GPUMemoryUtilization: -0.5}, []string{"-0.5"}},
		{"utilization above 1", Config{MaxModelLen: 4096, GPUMemoryUtilization: 1.2}, []string{"1.2"}},
		{"utilization NaN", Config{MaxModelLen: 4096, GPUMemoryUtilization: math.NaN()}, []string{"NaN"}},
		{"max-model-len over model max", Config{MaxModelLen: 40000, GPUMemoryUtilization: 0.9},
			[]string{"--max-model-len 40000", "32768"}},
		{"max-model-len negative", Config{MaxModelLen: -1, GPUMemoryUtilization: 0.9}, []string{"--max-model-len -1"}},
		// At 0.6 the KV cache holds ~11k tokens, less than one 32k request.
		{"max-model-len over KV cache", Config{MaxModelLen: 32768, GPUMemoryUtilization: 0.6},
			[]string{"--max-model-len 32768", "tokens", "rtx3060-12gb"}},
		{"too little memory for weights", Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.4},
			[]string{"needs", "qwen2.5-7b-instruct-awq"}},
		{"batched tokens under seqs", Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9, MaxNumSeqs: 64, MaxNumBatchedTokens: 32},
			[]string{"--max-num-batched-tokens 32"}},
	}
	for _, c := range cases {
		_, err := New(g, m, c.cfg)
		if err == nil {
			t.Errorf("%s: New accepted %+v", c.name, c.cfg)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
}

// TestLookup: unknown names are refused with the list of valid ones.
func TestLookup(t *testing.T) {
	if _, _, err := Lookup("rtx9090", DefaultModel); err == nil || !strings.Contains(err.Error(), `"rtx9090"`) ||
		!strings.Contains(err.Error(), "h100-80gb") {
		t.Errorf("unknown GPU: %v", err)
	}
	if _, _, err := Lookup(DefaultGPU, "gpt-5"); err == nil || !strings.Contains(err.Error(), `"gpt-5"`) {
		t.Errorf("unknown model: %v", err)
	}
	if _, m, err := Lookup("H100-80GB", "meta-llama/Llama-3.1-8B-Instruct"); err != nil || m.Layers != 32 {
		t.Errorf("case-insensitive and served-name lookup: %v %+v", err, m)
	}
}

// TestDefaults: vLLM's per-GPU batching defaults and the default max model
// length (the model's own) are filled in.
func TestDefaults(t *testing.T) {
	h := mustNew(t, "h100-80gb", "llama-3.1-8b-instruct", DefaultConfig()).Config()
	a := mustNew(t, "a100-80gb", "llama-3.1-8b-instruct", DefaultConfig()).Config()
	if h.MaxNumSeqs != 1024 || h.MaxNumBatchedTokens != 8192 || a.MaxNumSeqs != 256 || a.MaxNumBatchedTokens != 2048 {
		t.Errorf("batching defaults: H100 %d/%d, A100 %d/%d", h.MaxNumSeqs, h.MaxNumBatchedTokens, a.MaxNumSeqs, a.MaxNumBatchedTokens)
	}
	c := mustNew(t, "a100-80gb", "llama-3.1-8b-instruct", Config{GPUMemoryUtilization: 0.9}).Config()
	if c.MaxModelLen != 131072 || c.BlockSize != 16 {
		t.Errorf("MaxModelLen %d, BlockSize %d: want the model's 131072 and 16", c.MaxModelLen, c.BlockSize)
	}
}

// TestMaxConcurrency counts whole blocks per request, as vLLM does.
func TestMaxConcurrency(t *testing.T) {
	p := calibrationPerf(t)
	if got, want := p.MaxConcurrency(4096), float64(p.KVCacheTokens())/4096; got != want {
		t.Errorf("MaxConcurrency(4096) = %v, want %v", got, want)
	}
	if got, want := p.MaxConcurrency(17), float64(p.NumGPUBlocks())/2; got != want {
		t.Errorf("MaxConcurrency(17) = %v, want %v (2 blocks each)", got, want)
	}
	if p.KVCacheTokens() != p.NumGPUBlocks()*p.BlockSize() || p.KVBlocksFor(33) != 3 {
		t.Errorf("blocks: %d tokens, %d blocks, KVBlocksFor(33)=%d", p.KVCacheTokens(), p.NumGPUBlocks(), p.KVBlocksFor(33))
	}
}

// TestWriteProfiles: the listing names every profile and shows both a fit
// and a refusal.
func TestWriteProfiles(t *testing.T) {
	var b bytes.Buffer
	if err := WriteProfiles(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, g := range GPUs() {
		if !strings.Contains(out, g.Name) {
			t.Errorf("listing lacks GPU %s", g.Name)
		}
	}
	for _, m := range Models() {
		if !strings.Contains(out, m.Name) || !strings.Contains(out, m.ServedName) {
			t.Errorf("listing lacks model %s", m.Name)
		}
	}
	for _, w := range []string{"77,744", "no (needs"} {
		if !strings.Contains(out, w) {
			t.Errorf("listing lacks %q:\n%s", w, out)
		}
	}
	golden := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run WriteProfiles -update to create it)", err)
	}
	if out != string(want) {
		t.Errorf("listing differs from %s (rerun with -update if intended):\n%s", golden, out)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 4096: "4,096", 77744: "77,744", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Commas(n); got != want {
			t.Errorf("Commas(%d) = %q, want %q", n, got, want)
		}
	}
}
