package sim_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// streamTokens runs one streaming chat request and returns its content
// tokens and finish reason.
func streamTokens(t testing.TB, e *sim.Engine, content string, maxTokens int) (toks []string, finish string) {
	t.Helper()
	resp := post(t, e, "/v1/chat/completions", chat(content, maxTokens, true))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("status %s: %s", resp.Status, b)
		return nil, ""
	}
	for _, ev := range events(t, resp.Body) {
		if ev == "[DONE]" {
			break
		}
		c := decodeChunk(t, ev)
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				toks = append(toks, *ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	return toks, finish
}

// parallel runs f(i) for i in [0,n) concurrently and waits.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); f(i) }()
	}
	wg.Wait()
}

var requestHistograms = []string{
	"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
	"vllm:request_decode_time_seconds", "vllm:request_inference_time_seconds",
	"vllm:request_time_per_output_token_seconds", "vllm:request_prompt_tokens", "vllm:request_generation_tokens",
}

func TestMetricsDeltasMatchRequests(t *testing.T) {
	e := simtest.Start(t, quick)
	before := scrape(t, e)
	for _, name := range append(requestHistograms, "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total", "vllm:num_preemptions_total",
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:cache_config_info") {
		f := before[name]
		if f == nil {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		for _, l := range f.Metric[0].Label {
			if l.GetName() == "engine" && l.GetValue() != "0" {
				t.Errorf("%s: engine=%q", name, l.GetValue())
			}
		}
	}
	if got := value(before, "vllm:cache_config_info", "num_gpu_blocks", fmt.Sprint(e.KVCacheTokens()/16), "block_size", "16"); got != 1 {
		t.Errorf("cache_config_info lacks num_gpu_blocks=%d block_size=16", e.KVCacheTokens()/16)
	}
	lens := []int{3, 10, 40, 7, 25, 1}
	prompts := []string{"a", "hello there", strings.Repeat("word ", 50), "x", "y", "zz"}
	parallel(len(lens), func(i int) {
		if i%2 == 0 {
			streamTokens(t, e, prompts[i], lens[i])
		} else {
			resp := post(t, e, "/v1/chat/completions", chat(prompts[i], lens[i], false))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	after := scrape(t, e)
	d := func(name string, lv ...string) float64 { return value(after, name, lv...) - value(before, name, lv...) }
	n := float64(len(lens))
	wantGen, wantPrompt, wantITL := 0.0, 0.0, 0.0
	for i, l := range lens {
		wantGen += float64(l)
		wantITL += float64(l - 1)
		wantPrompt += float64(sim.ChatTokens(prompts[i]))
	}
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"request_success_total{length}", d("vllm:request_success_total", "finished_reason", "length"), n},
		{"request_success_total", d("vllm:request_success_total"), n},
		{"time_to_first_token count", d("vllm:time_to_first_token_seconds"), n},
		{"inter_token_latency count", d("vllm:inter_token_latency_seconds"), wantITL},
		{"generation_tokens_total", d("vllm:generation_tokens_total"), wantGen},
		{"prompt_tokens_total", d("vllm:prompt_tokens_total"), wantPrompt},
		{"num_requests_running", value(after, "vllm:num_requests_running"), 0},
		{"num_requests_waiting", value(after, "vllm:num_requests_waiting"), 0},
		{"kv_cache_usage_perc", value(after, "vllm:kv_cache_usage_perc"), 0},
	}
	for _, h := range requestHistograms {
		checks = append(checks, struct {
			name      string
			got, want float64
		}{h + " count", d(h), n})
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if s := histSum(after, "vllm:time_to_first_token_seconds"); !(s > 0) {
		t.Errorf("TTFT sum %v, want > 0", s)
	}
}

// TestQueueingBeyondMaxNumSeqs: with 2 slots and 6 concurrent requests,
// never more than 2 run, others wait, and queue time shows up in the
// metrics (and so in TTFT).
func TestQueueingBeyondMaxNumSeqs(t *testing.T) {
	const speedup, tokens = 10, 400
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.MaxNumSeqs = 2; o.Speedup = speedup })
	before := scrape(t, e)
	var maxRunning, maxWaiting float64
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			m := scrape(t, e)
			maxRunning = max(maxRunning, value(m, "vllm:num_requests_running"))
			maxWaiting = max(maxWaiting, value(m, "vllm:num_requests_waiting"))
		}
	}()
	parallel(6, func(int) { streamTokens(t, e, "queue me", tokens) })
	close(stop)
	<-polled
	after := scrape(t, e)
	if maxRunning != 2 || maxWaiting < 2 {
		t.Errorf("max running %v waiting %v, want 2 and >= 2", maxRunning, maxWaiting)
	}
	queue := histSum(after, "vllm:request_queue_time_seconds") - histSum(before, "vllm:request_queue_time_seconds")
	ttft := histSum(after, "vllm:time_to_first_token_seconds") - histSum(before, "vllm:time_to_first_token_seconds")
	// One request lasts ~400 x 15 ms = 6 s of model time (0.6 s here);
	// requests 3-6 wait for one or two of them: ~4 x 0.6 s in all if they
	// arrive together, at least one request's length however a loaded host
	// staggers the clients. TTFT counts from arrival, so it holds the queue
	// wait (counted from scheduling it would be a few prefills, far less).
	if one := tokens * 0.015 / speedup; queue < one || ttft < queue {
		t.Errorf("total queue time %.3fs, TTFT %.3fs; want queue >= %.3fs and TTFT >= queue", queue, ttft, one)
	}
	t.Logf("max running %v, max waiting %v, total queue time %.3fs", maxRunning, maxWaiting, queue)
}

// TestPreemptionWhenKVRunsOut: 32 blocks of 16 tokens cannot hold eight
// requests growing to ~190 tokens each, so the scheduler preempts; every
// request still gets exactly its tokens, in order.
func TestPreemptionWhenKVRunsOut(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) {
		quick(o)
		// Requests of ~2 s of model time, 0.4 s here: three of the eight
		// overlap even when a loaded host staggers their starts by 0.3 s.
		o.Speedup = 5
		o.MaxModelLen = 512
		o.NumGPUBlocksOverride = 32
	})
	before := scrape(t, e)
	prompt := strings.Repeat("abcd", 60) // 60 + 7 tokens
	want, _ := streamTokens(t, e, prompt, 120)
	var mu sync.Mutex
	var bad []string
	parallel(8, func(int) {
		got, finish := streamTokens(t, e, prompt, 120)
		if strings.Join(got, "") != strings.Join(want, "") || finish != "length" {
			mu.Lock()
			bad = append(bad, fmt.Sprintf("%d tokens, finish %q", len(got), finish))
			mu.Unlock()
		}
	})
	if len(bad) > 0 {
		t.Errorf("requests with wrong output after preemption: %v", bad)
	}
	after := scrape(t, e)
	if p := value(after, "vllm:num_preemptions_total") - value(before, "vllm:num_preemptions_total"); p < 1 {
		t.Errorf("no preemptions with 32 KV blocks and 8 x ~190 tokens")
	} else {
		t.Logf("%v preemptions", p)
	}
	if u := value(after, "vllm:kv_cache_usage_perc"); u != 0 {
		t.Errorf("KV usage %v after all requests finished, want 0", u)
	}
}

// abortRun opens a long stream, reads a few events, disconnects, and
// returns the metrics once the engine has settled.
func abortRun(t *testing.T, ignore bool) (gen, aborts, lengths, running float64) {
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.Speedup = 20; o.IgnoreDisconnect = ignore })
	before := scrape(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	body := strings.NewReader(`{"messages":[{"role":"user","content":"long"}],"max_tokens":2000,"ignore_eos":true,"stream":true}`)
	req, _ := http.NewRequestWithContext(ctx, "POST", e.BaseURL()+"/v1/chat/completions", body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	for n := 0; n < 2000; {
		k, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	cancel()
	resp.Body.Close()
	// 2000 tokens take 2000 x 15 ms / 20 = 1.5 s (long enough for a loaded
	// host to deliver the disconnect well before the end); settle for up to 5 s.
	deadline := time.Now().Add(5 * time.Second)
	var m = scrape(t, e)
	for time.Now().Before(deadline) {
		m = scrape(t, e)
		done := value(m, "vllm:request_success_total") - value(before, "vllm:request_success_total")
		if done == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // tokens must not grow after the end
	m2 := scrape(t, e)
	if g1, g2 := value(m, "vllm:generation_tokens_total"), value(m2, "vllm:generation_tokens_total"); g1 != g2 {
		t.Errorf("generation tokens still growing after the request ended: %v -> %v", g1, g2)
	}
	return value(m2, "vllm:generation_tokens_total"), value(m2, "vllm:request_success_total", "finished_reason", "abort"),
		value(m2, "vllm:request_success_total", "finished_reason", "length"), value(m2, "vllm:num_requests_running")
}

func TestAbortOnDisconnect(t *testing.T) {
	gen, aborts, lengths, running := abortRun(t, false)
	if aborts != 1 || lengths != 0 || running != 0 || gen >= 2000 || gen < 5 {
		t.Errorf("after disconnect: %v tokens generated, abort %v, length %v, running %v; want <2000, 1, 0, 0", gen, aborts, lengths, running)
	}
	t.Logf("stopped after %v of 2000 tokens", gen)
}

func TestIgnoreDisconnectKeepsGenerating(t *testing.T) {
	gen, aborts, lengths, running := abortRun(t, true)
	if aborts != 0 || lengths != 1 || running != 0 || gen != 2000 {
		t.Errorf("after disconnect with --ignore-disconnect: %v tokens, abort %v, length %v, running %v; want 2000, 0, 1, 0", gen, aborts, lengths, running)
	}
}

// TestLoadGrowsTTFTAndITL: 64 concurrent streams on the default profile see a
// longer TTFT (prefills share steps and wait for each other's chunks), a
// queue wait (the per-step token budget admits ~4 prompts of 500 tokens per
// step, the rest wait) and a longer inter-token latency (prefill chunks make
// the decode steps long, and each step reads more KV) than one alone.
func TestLoadGrowsTTFTAndITL(t *testing.T) {
	if testing.Short() {
		t.Skip("load run")
	}
	const speedup = 50
	// Prefix caching off: the 64 prompts are the same text, and the point
	// is what 64 prefills cost.
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.Speedup = speedup; o.NoPrefixCaching = true })
	mean := func(f func()) (ttft, queue, itl float64) {
		b := scrape(t, e)
		f()
		a := scrape(t, e)
		n := func(h string) float64 {
			return (histSum(a, h) - histSum(b, h)) / (value(a, h) - value(b, h)) * speedup
		}
		return n("vllm:time_to_first_token_seconds"), n("vllm:request_queue_time_seconds"), n("vllm:inter_token_latency_seconds")
	}
	prompt := strings.Repeat("load ", 400) // ~500 tokens
	t1, q1, i1 := mean(func() { streamTokens(t, e, prompt, 64) })
	t64, q64, i64 := mean(func() { parallel(64, func(int) { streamTokens(t, e, prompt, 64) }) })
	t.Logf("model time: alone TTFT %.1f ms queue %.1f ms ITL %.1f ms; 64 concurrent TTFT %.1f ms queue %.1f ms ITL %.1f ms",
		t1*1e3, q1*1e3, i1*1e3, t64*1e3, q64*1e3, i64*1e3)
	// Alone, a request is scheduled the moment it joins the queue: exactly 0.
	if t64 < 3*t1 || i64 < 1.5*i1 || q1 != 0 || q64 < t1 {
		t.Errorf("under load TTFT %.4f (alone %.4f), queue %.4f (alone %.4f), ITL %.4f (alone %.4f): want TTFT >= 3x, queue 0 alone and >= one prefill under load, ITL >= 1.5x",
			t64, t1, q64, q1, i64, i1)
	}
}
