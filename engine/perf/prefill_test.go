package perf

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// v0PrefillBudget is vLLM 0.6.0's prefill step budget with chunked prefill
// off (its default below a 32k context): max(max-model-len, 2048) tokens.
func v0PrefillBudget(maxModelLen int) int { return max(maxModelLen, 2048) }

// prefillTolerance is how far the model's TTFT may be from a public
// one-step prefill figure.
const prefillTolerance = 0.15

// TestPublicPrefill checks the model against the cited public vLLM figures
// of prompts prefilled together in one step (LambdaLabsML/vllm-benchmark's
// single-GPU prompt_10 rows: vLLM 0.6.0, chunked prefill off, ten prompts
// sent at once) and prints each beside the model's value:
//
//	go test ./engine/perf -run PublicPrefill -v
func TestPublicPrefill(t *testing.T) {
	gpus := map[string]bool{}
	for _, f := range fidelityFigures(t) {
		name, args, err := splitFields(f.Method)
		if err != nil || name != "prefill-ttft" || f.Cfg.TensorParallelSize > 1 || !strings.Contains(f.Source, "LambdaLabsML") {
			continue
		}
		p, err := f.perf()
		if err != nil {
			t.Fatal(err)
		}
		var prompts []int
		total := 0
		for _, s := range strings.Split(args["prompts"], ",") {
			n, _ := strconv.Atoi(s)
			prompts = append(prompts, n)
			total += n
		}
		if total > v0PrefillBudget(f.Cfg.MaxModelLen) {
			t.Fatalf("%s: %d prompt tokens do not fit one prefill step", f.Pos, total)
		}
		got := p.PrefillTTFT(prompts...)
		dev := ms(got)/f.Real - 1
		b := p.Breakdown(Step{PrefillTokens: total, PrefillSeqs: len(prompts)})
		t.Logf("%-10s %d prompts, %d tokens: model %6.1f ms, public %6.1f ms (%s) %+5.1f%%  [compute %.1f ms, overheads %.1f ms]\n    %s",
			f.GPU, len(prompts), total, ms(got), f.Real, f.Config, 100*dev, ms(b.Compute), ms(b.Overhead+p.RequestOverhead()), f.Source)
		if math.Abs(dev) > prefillTolerance {
			t.Errorf("%s on %s: model TTFT %.1f ms, public %.1f ms: off by %+.1f%%, over %.0f%%",
				f.Measured, f.GPU, ms(got), f.Real, 100*dev, 100*prefillTolerance)
		}
		gpus[f.GPU] = true
	}
	if len(gpus) < 2 {
		t.Errorf("public prefill figures cover %d GPU profiles, want at least 2", len(gpus))
	}
}

// TestLongPromptTTFT prints what the model predicts for one long prompt alone
// on each GPU it fits (chunked by the GPU's default step budget, each
// chunk's queries against the chunks before it, as the scheduler does:
// requestTTFT), and checks that prefill is compute-bound from 1,024
// tokens on: what the second half of the prompt adds runs within the GPU's
// MFU-limited ceiling and above 70% of it (attention and per-chunk
// overheads take the rest). The per-request fixed cost (~14 ms, the
// 3060's short-prompt TTFT less its weight reads) is paid once whatever the
// length, so the marginal rate, not n/TTFT, says whether FLOPs bound it
// (below 1,024 tokens a half may still be bound by the weight reads).
func TestLongPromptTTFT(t *testing.T) {
	for _, g := range []string{"l4-24gb", "a100-80gb", "h100-80gb"} {
		p := mustNew(t, g, "llama-3.1-8b-instruct", Config{MaxModelLen: 16384, GPUMemoryUtilization: 0.9})
		ceiling := p.GPU().TFLOPs * 1e12 * p.Efficiency().MFU / (2 * p.Model().LinearParams())
		for _, n := range []int{512, 1024, 2048, 4096, 8192} {
			ttft := requestTTFT(p, n, 0)
			marginal := float64(n-n/2) / (ttft - requestTTFT(p, n/2, 0)).Seconds()
			t.Logf("%-10s llama-3.1-8b bf16, %4d-token prompt alone: TTFT %7.1f ms, %6.0f prompt tokens/s overall, %6.0f over its second half (ceiling %6.0f)",
				g, n, ms(ttft), float64(n)/ttft.Seconds(), marginal, ceiling)
			if n >= 1024 && (marginal > ceiling || marginal < 0.7*ceiling) {
				t.Errorf("%s at %d tokens: second half at %.0f tokens/s, want 70-100%% of the ceiling %.0f", g, n, marginal, ceiling)
			}
		}
	}
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
