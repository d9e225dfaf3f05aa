package sim_test

import (
	"io"
	"math"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestCalibrationEndToEnd runs the seed lesson's measurement through the
// whole engine (HTTP, scheduler, prefix cache, timers, metrics) on the
// default profile, as `servebench table` sends it: sequential requests of
// its default prompt (perf.CalibrationPrompt, 46 tokens under Qwen2.5's chat
// template) and 256 output tokens, streaming then not, prefix caching on.
// It compares the engine's own /metrics means (scaled back by the speedup)
// with what the performance model predicts: the streaming run's first
// request prefills the whole prompt, every later one only what its cached
// blocks leave. engine/perf's TestCalibration holds that model to the
// seed's real RTX 3060 figures (TTFT 0.0284 / 0.0281 s, E2E 3.85 s).
//
//	go test ./engine/sim -run CalibrationEndToEnd -v
func TestCalibrationEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("several seconds of paced generation")
	}
	const speedup, n = 50, 3
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.Speedup = speedup })
	g, m, err := perf.Lookup("rtx3060-12gb", "qwen2.5-7b-instruct-awq")
	if err != nil {
		t.Fatal(err)
	}
	p, err := perf.New(g, m, perf.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	content := perf.CalibrationPrompt
	prompt := sim.ChatTokens(content)
	cached := (prompt - 1) / p.BlockSize() * p.BlockSize() // whole blocks, never the last token
	alone := func(cached int) (ttft, e2e time.Duration) {
		ttft = p.RequestOverhead() + p.StepTime(perf.Step{PrefillTokens: prompt - cached, PrefillSeqs: 1, ContextTokens: cached})
		e2e = ttft
		for i := 1; i < 256; i++ {
			e2e += p.StepTime(perf.Step{DecodeSeqs: 1, ContextTokens: prompt + i})
		}
		return ttft, e2e
	}
	fullTTFT, fullE2E := alone(0)
	hitTTFT, hitE2E := alone(cached)
	t.Logf("%d prompt tokens, %d cached on repeats: model TTFT %.4f s full, %.4f s cached", prompt, cached, fullTTFT.Seconds(), hitTTFT.Seconds())
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
		// Only the first run's first request misses the cache.
		wantTTFT, wantE2E := hitTTFT, hitE2E
		if stream {
			wantTTFT, wantE2E = (fullTTFT+(n-1)*hitTTFT)/n, (fullE2E+(n-1)*hitE2E)/n
		}
		rows := []struct {
			name       string
			got, model float64
		}{
			{"engine TTFT", mean("vllm:time_to_first_token_seconds"), wantTTFT.Seconds()},
			{"engine E2E", mean("vllm:e2e_request_latency_seconds"), wantE2E.Seconds()},
		}
		for _, r := range rows {
			t.Logf("stream=%v %-11s %.4f s (model %.4f s: %+.1f%%)", stream, r.name, r.got, r.model, 100*(r.got/r.model-1))
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
