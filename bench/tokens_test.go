package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/sim"
)

// withoutTokenize fronts the server at base with a proxy that answers
// /tokenize 404, as a server without the endpoint does (TGI, llama.cpp's
// OpenAI API, hosted APIs): calibration must fall back to usage probes.
func withoutTokenize(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // stream SSE events as they come
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tokenize" {
			http.NotFound(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestTokenExactPrompts: generated prompts of N tokens are N tokens as the
// bundled engine counts them (usage.prompt_tokens, its tokenizer after the
// model's chat template), whether the calibration used its /tokenize or
// only usage probes, in chat (with and without a shared system prefix) and
// completions form.
func TestTokenExactPrompts(t *testing.T) {
	e := startEngine(t, nil)
	synth := func(t *testing.T, opts workload.SourceOptions) workload.Source {
		src, _, err := workload.NewSource(opts)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	for _, tc := range []struct {
		name     string
		base     string
		from     string
		endpoint string
		opts     workload.SourceOptions
	}{
		{"tokenize chat lognormal", e.BaseURL(), result.CalibratedByTokenize, EndpointChat, workload.SourceOptions{InputTokens: "lognormal:300,100", Seed: 3}},
		{"tokenize chat shared prefix", e.BaseURL(), result.CalibratedByTokenize, EndpointChat, workload.SourceOptions{InputTokens: "200", SharedPrefixTokens: 64, PrefixGroups: 2, Seed: 4}},
		{"tokenize completions", e.BaseURL(), result.CalibratedByTokenize, EndpointCompletions, workload.SourceOptions{PromptTokens: 512, Seed: 5}},
		{"usage chat", withoutTokenize(t, e.BaseURL()), result.CalibratedByUsage, EndpointChat, workload.SourceOptions{InputTokens: "uniform:50-400", Seed: 6}},
		{"usage chat shared prefix", withoutTokenize(t, e.BaseURL()), result.CalibratedByUsage, EndpointChat, workload.SourceOptions{InputTokens: "100", SharedPrefixTokens: 32, PrefixGroups: 3, Seed: 7}},
		{"usage completions", withoutTokenize(t, e.BaseURL()), result.CalibratedByUsage, EndpointCompletions, workload.SourceOptions{PromptTokens: 128, Seed: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := RunSpec{Name: "exact", Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: 4, Requests: 12},
				Request: RequestSpec{Endpoint: tc.endpoint, MaxTokens: 2, Stream: true}, Source: synth(t, tc.opts)}
			res, recs := executeAt(t, tc.base, []RunSpec{run})
			cal := res.Server.PromptTokens
			if cal == nil || cal.Source != tc.from || cal.Endpoint != tc.endpoint || !cal.Exact() {
				t.Fatalf("calibration = %+v, want from %s, one token per word; warnings %v", cal, tc.from, res.Warnings)
			}
			n := 0
			for _, r := range recs {
				if r.Warmup {
					continue
				}
				if r.Error != "" {
					t.Errorf("request %d failed: %s", r.Index, r.Error)
					continue
				}
				n++
				if r.PromptTokensRequested <= 0 || r.PromptTokens != r.PromptTokensRequested {
					t.Errorf("request %d: requested %d prompt tokens, the engine counted %d", r.Index, r.PromptTokensRequested, r.PromptTokens)
				}
			}
			ps := res.Runs[0].PromptTokens
			if n != 12 || ps == nil || ps.N != 12 || ps.Exact != 12 || ps.RequestedMean != ps.CountedMean {
				t.Errorf("%d ok records, prompt tokens %+v; want 12 exact", n, ps)
			}
			for _, w := range res.Warnings {
				if strings.Contains(w, "prompt token") {
					t.Errorf("unexpected warning: %s", w)
				}
			}
			t.Logf("%s: overhead %d, system overhead %d; requested mean %.1f = counted %.1f", tc.name, cal.Overhead, cal.SystemOverhead, ps.RequestedMean, ps.CountedMean)
		})
	}
}

// executeAt is execute against any base URL.
func executeAt(t *testing.T, base string, runs []RunSpec) (*result.Results, []result.Record) {
	t.Helper()
	res, recs, err := Execute(t.Context(), Config{
		Server: ServerOptions{BaseURL: base}, Runs: runs, Dir: t.TempDir(),
		Args: []string{"servebench", "test"}, Version: "test", FailOnErrorRate: -1,
	})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	return res, recs
}

// bytesServer is an OpenAI-compatible server without /tokenize whose
// tokenizer is not BPE: a prompt costs ceil(bytes/4) tokens plus 5 for
// the chat template. Generated words are then ~1.2 tokens each, so token
// exactness holds for the mean only, through the per-word calibration.
func bytesServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		case "/v1/chat/completions":
			var req struct {
				Messages []struct{ Content string } `json:"messages"`
			}
			json.NewDecoder(r.Body).Decode(&req)
			n := 0
			for _, m := range req.Messages {
				n += (len(m.Content)+3)/4 + 5
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`, n, n+1)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestTokenExactOtherTokenizer: on a server whose tokenizer counts bytes,
// the usage calibration finds the cost per word and the template overhead,
// and the run's mean prompt length lands within 1% of the request (no
// warning); without calibration it would be ~20% over.
func TestTokenExactOtherTokenizer(t *testing.T) {
	src, _, err := workload.NewSource(workload.SourceOptions{InputTokens: "400", Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	run := RunSpec{Name: "bytes", Workload: workload.Workload{Mode: workload.ModeSequential, Requests: 30},
		Request: RequestSpec{Endpoint: EndpointChat, MaxTokens: 1}, Source: src}
	res, _ := executeAt(t, bytesServer(t), []RunSpec{run})
	cal := res.Server.PromptTokens
	if cal == nil || cal.Source != result.CalibratedByUsage || cal.Exact() || !(cal.PerWord > 1.05 && cal.PerWord < 1.5) {
		t.Fatalf("calibration = %+v; want usage, more than one token per word", cal)
	}
	ps := res.Runs[0].PromptTokens
	if ps == nil || ps.RequestedMean != 400 || ps.CountedMean < 396 || ps.CountedMean > 404 {
		t.Errorf("prompt tokens %+v: want a counted mean within 1%% of 400", ps)
	}
	t.Logf("bytes/4 server: %.3f tokens per word, overhead %d; requested 400, counted mean %.1f (%d of %d exact)",
		cal.PerWord, cal.Overhead, ps.CountedMean, ps.Exact, ps.N)
}

// TestSpeculativeChunksITL: the bundled engine with speculative decoding
// streams 1 to K+1 tokens per chunk. The client counts each chunk's tokens
// (its text, scaled to the final usage), so the events sum to the output
// length; ITL is per token, so its mean is the token pace (TPOT's), while
// the event gaps, kept apart, are longer by the mean chunk size.
func TestSpeculativeChunksITL(t *testing.T) {
	e := startEngine(t, func(o *sim.Options) {
		// 1.5 ms a token: well above the scheduling noise of a loaded machine
		o.Speedup, o.StartupSpeedup = 5, 1000
		o.SpeculativeTokens, o.AcceptanceRate, o.Seed = 3, 0.8, 11
	})
	run := RunSpec{Name: "spec", Workload: workload.Workload{Mode: workload.ModeSequential, Requests: 6},
		Request: RequestSpec{MaxTokens: 64, ExactLength: true, Stream: true}}
	res, recs := executeAt(t, e.BaseURL(), []RunSpec{run})
	multi, events := 0, 0
	for _, r := range recs {
		sum := 0
		for _, ev := range r.Events {
			sum += int(ev[1])
			if ev[1] > 1 {
				multi++
			}
		}
		events += len(r.Events)
		if r.Error != "" || r.OutputTokens != 64 || sum != 64 {
			t.Errorf("request %d: %d output tokens, events carry %d (%s)", r.Index, r.OutputTokens, sum, r.Error)
		}
	}
	if multi == 0 {
		t.Fatalf("no event carried more than one token in %d events: speculative decoding off?", events)
	}
	cs := res.Runs[0].Client
	chunk := float64(6*63) / float64(events-6) // tokens per event after each request's first
	if cs.ITLS == nil || cs.ITLEventS == nil || cs.TPOTS == nil {
		t.Fatalf("client stats lack itl/itl_event/tpot: %+v", cs)
	}
	if !near(cs.ITLS.Mean, cs.TPOTS.Mean, 0.05) {
		t.Errorf("per-token ITL mean %.6f s should match TPOT mean %.6f s", cs.ITLS.Mean, cs.TPOTS.Mean)
	}
	if !near(cs.ITLEventS.Mean, cs.ITLS.Mean*chunk, 0.1) {
		t.Errorf("event gap mean %.6f s, want per-token ITL %.6f s x %.2f tokens per event", cs.ITLEventS.Mean, cs.ITLS.Mean, chunk)
	}
	t.Logf("K=3, acceptance 0.8: %.2f tokens per event; ITL per token mean %.3f ms, TPOT %.3f ms, event gap %.3f ms",
		chunk, 1e3*cs.ITLS.Mean, 1e3*cs.TPOTS.Mean, 1e3*cs.ITLEventS.Mean)
}
