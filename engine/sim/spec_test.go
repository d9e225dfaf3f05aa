package sim_test

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// specRun is what a streaming request carried: the tokens in each content
// chunk (the role-only chunk left out), the finish reason and the usage's
// completion tokens.
type specRun struct {
	sizes      []int
	finish     string
	completion int
}

// streamSpec streams one chat request with vLLM's continuous usage stats
// and splits it into chunks: a chunk holds as many tokens as its usage grew
// by. That is checked against its text: the engine's generated words each
// start with one space, plus the text-less EOS of a "stop".
func streamSpec(t *testing.T, e *sim.Engine, content string, maxTokens int, ignoreEOS bool) specRun {
	t.Helper()
	body := chat(content, maxTokens, true)
	body["ignore_eos"] = ignoreEOS
	body["stream_options"] = map[string]any{"include_usage": true, "continuous_usage_stats": true}
	resp := post(t, e, "/v1/chat/completions", body)
	defer resp.Body.Close()
	var run specRun
	for _, ev := range events(t, resp.Body) {
		if ev == "[DONE]" {
			break
		}
		c := decodeChunk(t, ev)
		if c.Usage == nil {
			t.Fatalf("chunk without continuous usage: %s", ev)
		}
		if len(c.Choices) == 0 { // the final usage chunk
			run.completion = c.Usage.Completion
			continue
		}
		ch := c.Choices[0]
		sent := 0
		for _, n := range run.sizes {
			sent += n
		}
		n := c.Usage.Completion - sent
		if ch.Delta.Role != nil {
			if n != 0 {
				t.Fatalf("role chunk's usage says %d tokens: %s", c.Usage.Completion, ev)
			}
			continue
		}
		words := strings.Count(*ch.Delta.Content, " ")
		if ch.FinishReason != nil {
			run.finish = *ch.FinishReason
			if run.finish == "stop" {
				words++
			}
		}
		if words != n || c.Usage.Total != c.Usage.Prompt+c.Usage.Completion {
			t.Fatalf("chunk %d: usage grew by %d tokens, text has %d (usage %+v): %s", len(run.sizes), n, words, *c.Usage, ev)
		}
		run.sizes = append(run.sizes, n)
	}
	return run
}

// TestSpecDecodeChunks: with --speculative-tokens K each step streams 1 to
// K+1 tokens in one chunk (the first, from the prefill, exactly 1), the
// sizes follow the acceptance rate (a full step emits j tokens with
// probability A^(j-1)(1-A), K+1 with A^K), max_tokens is met exactly, and
// vLLM's spec-decoding counters equal what the streams carried.
func TestSpecDecodeChunks(t *testing.T) {
	const k, maxTokens, requests = 3, 150, 6
	for _, rate := range []float64{0, 0.6, 1} {
		t.Run(fmt.Sprint("acceptance ", rate), func(t *testing.T) {
			e := simtest.Start(t, func(o *sim.Options) {
				quick(o)
				o.Speedup = 1000
				o.SpeculativeTokens, o.AcceptanceRate = k, rate
			})
			before := scrape(t, e)
			var full []int // sizes of chunks from steps that could draft all K
			var drafts, draftTokens, chunks, tokens int
			perPos := make([]int, k)
			for i := range requests {
				run := streamSpec(t, e, fmt.Sprintf("request %d of the speculative decoding test", i), maxTokens, true)
				sent := 0
				for j, n := range run.sizes {
					if n < 1 || n > k+1 || j == 0 && n != 1 {
						t.Fatalf("request %d chunk %d carries %d tokens, want 1..%d (1 for the first): %v", i, j, n, k+1, run.sizes)
					}
					if d := min(k, maxTokens-sent-1); j > 0 && d > 0 {
						drafts++
						draftTokens += d
						if n > d+1 {
							t.Fatalf("request %d chunk %d: %d tokens from %d drafts", i, j, n, d)
						}
						for p := range n - 1 {
							perPos[p]++
						}
						if d == k {
							full = append(full, n)
						}
					}
					sent += n
				}
				if sent != maxTokens || run.completion != maxTokens || run.finish != "length" {
					t.Fatalf("request %d: %d tokens streamed, usage %d, finish %q; want exactly %d, length", i, sent, run.completion, run.finish, maxTokens)
				}
				chunks += len(run.sizes)
				tokens += sent
			}
			after := scrape(t, e)
			delta := func(name string, labels ...string) int {
				return int(value(after, name, labels...) - value(before, name, labels...))
			}
			counters := []struct {
				name    string
				labels  []string
				want    int
				meaning string
			}{
				{"vllm:spec_decode_num_drafts_total", nil, drafts, "steps that carried drafts"},
				{"vllm:spec_decode_num_draft_tokens_total", nil, draftTokens, "draft tokens those steps carried"},
				{"vllm:spec_decode_num_accepted_tokens_total", nil, tokens - chunks, "tokens streamed minus chunks"},
				{"vllm:generation_tokens_total", nil, tokens, "tokens streamed"},
				{"vllm:inter_token_latency_seconds", nil, chunks - requests, "chunks after the first"},
			}
			for p := range k {
				counters = append(counters, struct {
					name    string
					labels  []string
					want    int
					meaning string
				}{"vllm:spec_decode_num_accepted_tokens_per_pos_total", []string{"position", strconv.Itoa(p)}, perPos[p], "chunks accepting past this position"})
			}
			for _, c := range counters {
				if got := delta(c.name, c.labels...); got != c.want {
					t.Errorf("%s%v = %d, want %d (%s)", c.name, c.labels, got, c.want, c.meaning)
				}
			}
			// The size distribution of full steps against the acceptance rate.
			counts := make([]int, k+2)
			mean := 0.0
			for _, n := range full {
				counts[n]++
				mean += float64(n) / float64(len(full))
			}
			want, p := 0.0, 1.0
			for j := 1; j <= k+1; j++ {
				pj := p * (1 - rate) // j tokens: j-1 accepted, then a rejection
				if j == k+1 {
					pj = p // all K accepted
				}
				want += float64(j) * pj
				got := float64(counts[j]) / float64(len(full))
				t.Logf("acceptance %.1f, %d full steps: %d tokens in %5.1f%% of chunks (expected %5.1f%%)", rate, len(full), j, 100*got, 100*pj)
				if math.Abs(got-pj) > 0.07 {
					t.Errorf("%d-token chunks: %.3f of full steps, expected %.3f", j, got, pj)
				}
				p *= rate
			}
			t.Logf("mean tokens per full step %.3f, expected (1-A^(K+1))/(1-A) = %.3f", mean, want)
			if math.Abs(mean/want-1) > 0.08 {
				t.Errorf("mean chunk %.3f tokens, expected %.3f", mean, want)
			}
		})
	}
}

// TestSpecDecodeLimits: drafts never carry a stream past max_tokens, natural
// stops (EOS) end inside chunks with usage counting every token, a
// non-streaming answer holds the same tokens, and with speculation off no
// spec-decoding series is exposed (vLLM registers them only when on).
func TestSpecDecodeLimits(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) {
		quick(o)
		o.Speedup = 1000
		o.SpeculativeTokens, o.AcceptanceRate = 5, 0.9
	})
	for _, maxTokens := range []int{1, 2, 7, 13} {
		run := streamSpec(t, e, "short answers", maxTokens, true)
		sum := 0
		for _, n := range run.sizes {
			sum += n
		}
		if sum != maxTokens || run.completion != maxTokens || run.finish != "length" {
			t.Errorf("max_tokens %d: chunks %v (%d tokens), usage %d, finish %q", maxTokens, run.sizes, sum, run.completion, run.finish)
		}
	}
	stops := 0
	for i := range 12 {
		run := streamSpec(t, e, fmt.Sprintf("natural length %d", i), 200, false)
		sum := 0
		for _, n := range run.sizes {
			sum += n
		}
		if sum != run.completion || sum > 200 || run.finish == "" {
			t.Errorf("request %d: chunks %v (%d tokens), usage %d, finish %q", i, run.sizes, sum, run.completion, run.finish)
		}
		if run.finish == "stop" {
			stops++
		}
	}
	if stops == 0 {
		t.Errorf("no request stopped by itself in 12 (mean natural length 256, max_tokens 200)")
	}
	resp := post(t, e, "/v1/chat/completions", chat("non-streaming", 40, false))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"completion_tokens":40`) {
		t.Errorf("non-streaming answer with speculation: %s", b)
	}

	off := simtest.Start(t, func(o *sim.Options) { quick(o); o.Speedup = 1000 })
	fams := scrape(t, off)
	for name := range fams {
		if strings.HasPrefix(name, "vllm:spec_decode") {
			t.Errorf("%s exposed with speculative decoding off", name)
		}
	}
}

// TestSpecDecodeTiming: the engine's own E2E (/metrics) follows the step
// costs engine/perf gives speculative decoding: with most drafts accepted a
// request finishes in well under the plain time, with none accepted it
// pays for drafting and verifying for nothing.
func TestSpecDecodeTiming(t *testing.T) {
	const speedup = 1000
	meanE2E := func(k int, rate float64) float64 {
		e := simtest.Start(t, func(o *sim.Options) {
			quick(o)
			o.Speedup = speedup
			o.SpeculativeTokens, o.AcceptanceRate = k, rate
		})
		for i := range 3 {
			resp := post(t, e, "/v1/chat/completions", chat(fmt.Sprint("timing ", i), 128, true))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		f := scrape(t, e)
		return histSum(f, "vllm:e2e_request_latency_seconds") / value(f, "vllm:e2e_request_latency_seconds") * speedup
	}
	plain, good, bad := meanE2E(0, 0), meanE2E(3, 0.8), meanE2E(3, 0)
	t.Logf("128 tokens alone on the 3060: plain %.3f s, K=3 at acceptance 0.8 %.3f s, at 0 %.3f s", plain, good, bad)
	if good > 0.75*plain || bad < 1.1*plain {
		t.Errorf("E2E plain %.3f s, speculative (0.8) %.3f s, speculative (0) %.3f s: want under 0.75x and over 1.1x plain", plain, good, bad)
	}
}
