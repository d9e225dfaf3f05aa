package sim_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// kvRun is what one traffic run shows under one --kv-allocation.
type kvRun struct {
	maxRunning   float64 // vllm:num_requests_running, most seen
	kvAtMax      float64 // vllm:kv_cache_usage_perc when it was seen
	meanQueue    float64 // vllm:request_queue_time_seconds mean, modelled s (before --speedup)
	meanE2E      float64 // vllm:e2e_request_latency_seconds mean, modelled s (before --speedup)
	meanOutput   float64 // generation tokens per request
	totalBlocks  float64
	requests     int
	samples      int
	allocation   string
	maxModelLen  int
	promptTokens float64
}

// kvSpeedup is the engine's --speedup in the KV allocation runs.
const kvSpeedup = 20

// runKVTraffic sends the seed's traffic to a fresh engine: clients
// closed-loop requests of a short prompt with max_tokens 8192 that end
// near 600 tokens (min_tokens 600, then the engine's natural stop), and
// samples the running count and KV usage from /metrics meanwhile.
func runKVTraffic(t *testing.T, allocation string, clients, perClient int) kvRun {
	t.Helper()
	e := simtest.Start(t, func(o *sim.Options) {
		o.GPU, o.Model, o.MaxModelLen, o.KVAllocation = "a100-40gb", "llama-3.1-8b-instruct", 16384, allocation
		o.StartupSpeedup, o.Speedup = 1000, kvSpeedup
	})
	run := kvRun{allocation: allocation, maxModelLen: 16384, requests: clients * perClient}
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			fams := scrape(t, e)
			run.samples++
			if r := value(fams, "vllm:num_requests_running"); r > run.maxRunning {
				run.maxRunning, run.kvAtMax = r, value(fams, "vllm:kv_cache_usage_perc")
			}
		}
	}()
	body := map[string]any{"prompt": strings.Repeat("Summarise the meeting notes. ", 20), "max_tokens": 8192, "min_tokens": 600}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < perClient; i++ {
				b := map[string]any{"prompt": fmt.Sprintf("client %d request %d. %s", c, i, body["prompt"]), "max_tokens": 8192, "min_tokens": 600}
				resp := post(t, e, "/v1/completions", b)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	fams := scrape(t, e)
	n := value(fams, "vllm:request_queue_time_seconds")
	// /metrics times are wall times under --speedup: scale them back.
	run.meanQueue = histSum(fams, "vllm:request_queue_time_seconds") / n * kvSpeedup
	run.meanE2E = histSum(fams, "vllm:e2e_request_latency_seconds") / n * kvSpeedup
	run.meanOutput = value(fams, "vllm:generation_tokens_total") / n
	run.promptTokens = value(fams, "vllm:prompt_tokens_total") / n
	run.totalBlocks = float64(e.KVCacheTokens()) / 16
	return run
}

// TestKVAllocationSeed reproduces the seed's "out of KV at ~20 concurrent
// while compute sits at 30%": Llama-3.1-8B on an A100-40GB (158,336 KV
// tokens), max_tokens 8192, answers near 600 tokens, 48 clients. Reserving
// prompt + 8192 tokens at admission (contiguous) fits 18 requests, fills
// the KV cache with reservations and queues the rest; paged allocation on
// the same traffic runs all 48 in a fraction of the cache. Printed: running
// sequences, KV usage, queue wait, and the share of a decode step the
// tensor cores are busy at that batch.
func TestKVAllocationSeed(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 192 requests of ~600 tokens (~4 s at --speedup 20)")
	}
	const clients, perClient = 48, 2
	cont := runKVTraffic(t, sim.KVContiguous, clients, perClient)
	paged := runKVTraffic(t, sim.KVPaged, clients, perClient)
	g, m, _ := perf.Lookup("a100-40gb", "llama-3.1-8b-instruct")
	p, err := perf.New(g, m, perf.Config{MaxModelLen: 16384, GPUMemoryUtilization: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	region := int((cont.promptTokens + 8192 + 15) / 16) // blocks a reservation takes
	fits := int(cont.totalBlocks) / region
	for _, r := range []kvRun{cont, paged} {
		b := int(r.maxRunning)
		bd := p.Breakdown(perf.Step{DecodeSeqs: b, ContextTokens: b * int(r.promptTokens+r.meanOutput/2)})
		t.Logf("%-10s running max %2.0f  KV usage then %5.1f%%  queue wait mean %6.2f s  E2E mean %6.2f s  output %.0f tokens/request  decode step at that batch %.1f ms, tensor cores busy %.0f%% (%d /metrics samples)",
			r.allocation, r.maxRunning, 100*r.kvAtMax, r.meanQueue, r.meanE2E, r.meanOutput,
			bd.Total.Seconds()*1000, 100*bd.Compute.Seconds()/bd.Total.Seconds(), r.samples)
	}
	t.Logf("arithmetic: %0.f blocks / %d-block regions (%.0f prompt + 8192 tokens) = %d requests at once", cont.totalBlocks, region, cont.promptTokens, fits)
	if cont.maxRunning > float64(fits) || cont.maxRunning < float64(fits)-2 {
		t.Errorf("contiguous: %.0f running at most, the reservation arithmetic allows %d", cont.maxRunning, fits)
	}
	if cont.kvAtMax < 0.9 {
		t.Errorf("contiguous: KV usage %.2f with %.0f running, want the cache nearly all reserved", cont.kvAtMax, cont.maxRunning)
	}
	if paged.maxRunning < 2*cont.maxRunning {
		t.Errorf("paged: %.0f running at most, want over twice contiguous's %.0f", paged.maxRunning, cont.maxRunning)
	}
	if paged.kvAtMax >= cont.kvAtMax/2 {
		t.Errorf("paged: KV usage %.2f at %.0f running, want well under contiguous's %.2f", paged.kvAtMax, paged.maxRunning, cont.kvAtMax)
	}
	if cont.meanQueue <= 2*paged.meanQueue || cont.meanQueue <= 1 {
		t.Errorf("queue wait: contiguous %.2f s, paged %.2f s; want contiguous's far longer", cont.meanQueue, paged.meanQueue)
	}
}
