package sim_test

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestCalibrationEndToEnd runs the seed lesson's measurement through the
// whole engine (HTTP, scheduler, timers, metrics) on the default profile:
// sequential requests of a 27-token chat prompt and 256 output tokens,
// streaming and not, and compares the engine's own /metrics means (scaled
// back by the speedup) with what the performance model predicts for a
// request alone. engine/perf's TestCalibration holds that model to the
// seed's real RTX 3060 figures (TTFT 0.028 s, E2E 3.85 s).
//
//	go test ./engine/sim -run CalibrationEndToEnd -v
func TestCalibrationEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("several seconds of paced generation")
	}
	const speedup, n = 50, 3
	// Prefix caching off: the model's figure is for the whole prompt
	// prefilled, and these requests repeat one prompt (with caching, the
	// later ones would find its first block cached).
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.Speedup = speedup; o.NoPrefixCaching = true })
	g, m, err := perf.Lookup("rtx3060-12gb", "qwen2.5-7b-instruct-awq")
	if err != nil {
		t.Fatal(err)
	}
	p, err := perf.New(g, m, perf.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// The seed's "short chat prompt": 20 + 7 template tokens, as engine/perf
	// calibrates (bench.DefaultPrompt is 78 bytes, also 27 tokens).
	content := strings.Repeat("abcd", 20)
	prompt := sim.ChatTokens(content)
	wantTTFT := p.RequestOverhead() + p.StepTime(perf.Step{PrefillTokens: prompt, PrefillSeqs: 1})
	wantE2E := wantTTFT
	for i := 1; i < 256; i++ {
		wantE2E += p.StepTime(perf.Step{DecodeSeqs: 1, ContextTokens: prompt + i})
	}
	for _, stream := range []bool{true, false} {
		before := scrape(t, e)
		for i := 0; i < n; i++ {
			resp := post(t, e, "/v1/chat/completions", chat(content, 256, stream))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		after := scrape(t, e)
		mean := func(h string) float64 {
			return (histSum(after, h) - histSum(before, h)) / (value(after, h) - value(before, h)) * speedup
		}
		rows := []struct {
			name       string
			got, model float64
		}{
			{"engine TTFT", mean("vllm:time_to_first_token_seconds"), wantTTFT.Seconds()},
			{"engine E2E", mean("vllm:e2e_request_latency_seconds"), wantE2E.Seconds()},
		}
		for _, r := range rows {
			t.Logf("stream=%v %-11s %.4f s (model alone %.4f s: %+.1f%%)", stream, r.name, r.got, r.model, 100*(r.got/r.model-1))
			if math.Abs(r.got/r.model-1) > 0.05 {
				t.Errorf("stream=%v %s: engine %.4f s vs model %.4f s: over 5%% apart", stream, r.name, r.got, r.model)
			}
		}
		// Alone, a request is scheduled the moment it joins the queue, as
		// the seed's queue time of 0 says.
		if q := mean("vllm:request_queue_time_seconds"); q != 0 {
			t.Errorf("stream=%v queue time %.6f s alone, want 0", stream, q)
		}
	}
}
