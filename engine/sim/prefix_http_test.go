package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// cacheOpts: prefix caching on (the default), cached_tokens reported,
// per-request records kept.
func cacheOpts(o *sim.Options) {
	quick(o)
	o.PromptTokensDetails = true
	o.DebugRequests = true
}

// usage is a non-streaming response's usage.
type usage struct {
	Prompt     int `json:"prompt_tokens"`
	Completion int `json:"completion_tokens"`
	Details    *struct {
		Cached int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u usage) cached() int {
	if u.Details == nil {
		return 0
	}
	return u.Details.Cached
}

// complete sends a non-streaming request and returns its usage.
func complete(t *testing.T, e *sim.Engine, path string, body any) usage {
	t.Helper()
	resp := post(t, e, path, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s: %s", path, resp.Status, raw)
	}
	var r struct {
		Usage usage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v: %s", path, err, raw)
	}
	return r.Usage
}

// ids is n token ids starting at from.
func ids(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func idPrompt(ids []int, maxTokens int) map[string]any {
	return map[string]any{"prompt": ids, "max_tokens": maxTokens, "ignore_eos": true}
}

// expectHit is vLLM's rule, computed here independently of the engine:
// the whole blocks of the common prefix, at most the prompt less its last
// token, at most what the earlier request had cached (its full blocks).
func expectHit(common, prompt, cachedBefore int) int {
	return min(common, prompt-1, cachedBefore) / 16 * 16
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestPrefixCacheHits(t *testing.T) {
	e := simtest.Start(t, cacheOpts)
	base := ids(1000, 200)
	with := func(prefix []int, tail ...int) []int { return append(append([]int{}, prefix...), tail...) }
	diverge := func(at int) []int {
		p := append([]int{}, base...)
		p[at] = 7 // not among base's ids
		return p
	}
	cases := []struct {
		name   string
		prompt []int
	}{
		{"first request: cold cache", base},
		{"same prompt again: all but the last block", base},
		{"shared 120-token prefix, new tail", with(base[:120], ids(5000, 50)...)},
		{"prefix exactly 160 = 10 blocks, prompt 161", with(base[:160], 9)},
		{"prompt of exactly 10 blocks: the last token is recomputed", base[:160]},
		{"first block differs", diverge(0)},
		{"token 15 differs: block 0 misses", diverge(15)},
		{"token 16 differs: block 0 hits", diverge(16)},
		{"token 199 differs: 12 blocks hit", diverge(199)},
		{"shorter than a block", base[:15]},
	}
	var seen [][]int // prompts served so far, with the tokens each had cached
	var cachedLen []int
	before := scrape(t, e)
	wantHits, wantQueries := 0, 0
	for _, c := range cases {
		want := 0
		for i, p := range seen {
			want = max(want, expectHit(commonPrefix(c.prompt, p), len(c.prompt), cachedLen[i]))
		}
		u := complete(t, e, "/v1/completions", idPrompt(c.prompt, 1))
		if u.Prompt != len(c.prompt) || u.cached() != want {
			t.Errorf("%s: prompt_tokens %d cached_tokens %d; want %d, %d", c.name, u.Prompt, u.cached(), len(c.prompt), want)
		}
		seen = append(seen, c.prompt)
		cachedLen = append(cachedLen, len(c.prompt)) // max_tokens 1: the prompt's full blocks are cached
		wantHits += want
		wantQueries += len(c.prompt)
	}
	after := scrape(t, e)
	if d := value(after, "vllm:prefix_cache_hits_total") - value(before, "vllm:prefix_cache_hits_total"); d != float64(wantHits) {
		t.Errorf("prefix_cache_hits_total grew %v, want %d", d, wantHits)
	}
	if d := value(after, "vllm:prefix_cache_queries_total") - value(before, "vllm:prefix_cache_queries_total"); d != float64(wantQueries) {
		t.Errorf("prefix_cache_queries_total grew %v, want %d", d, wantQueries)
	}
	if v := value(after, "vllm:cache_config_info", "enable_prefix_caching", "True"); v != 1 {
		t.Errorf("cache_config_info lacks enable_prefix_caching=\"True\"")
	}
}

// tokenize asks the engine's POST /tokenize for body's token ids.
func tokenize(t *testing.T, e *sim.Engine, body map[string]any) []int {
	t.Helper()
	resp := post(t, e, "/tokenize", body)
	defer resp.Body.Close()
	var r struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/tokenize: %s %v", resp.Status, err)
	}
	return r.Tokens
}

// TestPrefixCacheMultiTurn: each turn resends the conversation so far (the
// engine's own reply included) plus a new user message, as a chat client
// does. The test computes each turn's hit itself, with vLLM's rule, from
// the token ids /tokenize gives: the previous turn cached its prompt and
// its reply as generated (all but the last token's KV), the resent reply
// tokenizes to the same ids, so the hit runs past the previous prompt
// into the reply.
func TestPrefixCacheMultiTurn(t *testing.T) {
	e := simtest.Start(t, cacheOpts)
	const replyTokens = 20
	msgs := []map[string]string{{"role": "system", "content": strings.Repeat("You are a careful assistant. ", 20)}}
	var cachedSeq []int // the previous turn's prompt and reply ids
	for turn := range 4 {
		msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("Question %d: %s", turn, strings.Repeat("why? ", 10*(turn+1)))})
		resp := post(t, e, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": replyTokens, "ignore_eos": true})
		var r struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
			Usage usage `json:"usage"`
		}
		err := json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || len(r.Choices) != 1 {
			t.Fatalf("turn %d: %v %+v", turn, err, r)
		}
		prompt := tokenize(t, e, map[string]any{"messages": msgs})
		want := 0
		if turn > 0 {
			want = expectHit(commonPrefix(prompt, cachedSeq), len(prompt), len(cachedSeq)-1)
		}
		if got := r.Usage.cached(); got != want || r.Usage.Prompt != len(prompt) {
			t.Errorf("turn %d: %d prompt tokens, %d cached; want %d, %d", turn, r.Usage.Prompt, got, len(prompt), want)
		}
		if turn > 0 && want <= len(cachedSeq)-replyTokens {
			t.Errorf("turn %d: hit %d does not reach into the previous reply (previous prompt %d tokens)", turn, want, len(cachedSeq)-replyTokens)
		}
		reply := r.Choices[0].Message.Content
		cachedSeq = append(prompt, tokenize(t, e, map[string]any{"prompt": reply, "add_special_tokens": false})...)
		if len(cachedSeq) != len(prompt)+replyTokens {
			t.Fatalf("turn %d: the reply re-tokenizes to %d tokens, want %d", turn, len(cachedSeq)-len(prompt), replyTokens)
		}
		msgs = append(msgs, map[string]string{"role": "assistant", "content": reply})
	}
}

// TestPrefixCacheEviction: with a KV cache of 16 blocks, a prompt's cached
// blocks survive while nothing else needs them, and are evicted (LRU) once
// other prompts have used the whole pool.
func TestPrefixCacheEviction(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) {
		cacheOpts(o)
		o.MaxModelLen, o.NumGPUBlocksOverride = 256, 16 // 256 tokens of KV
	})
	a := ids(1000, 100)
	complete(t, e, "/v1/completions", idPrompt(a, 1))
	if u := complete(t, e, "/v1/completions", idPrompt(a, 1)); u.cached() != 96 {
		t.Errorf("repeat with the pool idle: %d cached, want 96", u.cached())
	}
	// One 200-token prompt takes 13 blocks: the 9 never cached or least
	// recently freed go first, then a's last blocks (a frees its tail
	// first). a keeps a shorter prefix.
	complete(t, e, "/v1/completions", idPrompt(ids(2000, 200), 1))
	u := complete(t, e, "/v1/completions", idPrompt(a, 1))
	if c := u.cached(); c >= 96 || c%16 != 0 {
		t.Errorf("after one other prompt: %d cached, want a shorter whole-block prefix than 96", c)
	}
	for i := range 3 {
		complete(t, e, "/v1/completions", idPrompt(ids(3000+1000*i, 240), 1))
	}
	if u := complete(t, e, "/v1/completions", idPrompt(a, 1)); u.cached() != 0 {
		t.Errorf("after 720 tokens of other prompts through a 256-token cache: %d cached, want 0 (evicted)", u.cached())
	}
}

func TestPrefixCachingOff(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { cacheOpts(o); o.NoPrefixCaching = true })
	before := scrape(t, e)
	for range 2 {
		if u := complete(t, e, "/v1/completions", idPrompt(ids(1, 100), 1)); u.Details != nil {
			t.Errorf("caching off: prompt_tokens_details %+v, want null", *u.Details)
		}
	}
	after := scrape(t, e)
	if v := value(after, "vllm:prefix_cache_queries_total") - value(before, "vllm:prefix_cache_queries_total"); v != 0 {
		t.Errorf("caching off: queries grew %v", v)
	}
	if v := value(after, "vllm:cache_config_info", "enable_prefix_caching", "False"); v != 1 {
		t.Errorf("cache_config_info lacks enable_prefix_caching=\"False\"")
	}
}

// TestCachedPrefixSkipsPrefill: a long prompt whose prefix is cached
// reaches its first token sooner, as only the uncached tokens are
// prefilled (the engine's own records).
func TestCachedPrefixSkipsPrefill(t *testing.T) {
	e := simtest.Start(t, cacheOpts)
	p := ids(1000, 2000)
	complete(t, e, "/v1/completions", idPrompt(p, 1))
	complete(t, e, "/v1/completions", idPrompt(p, 1))
	recs := e.Requests()
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	prefill := func(r sim.RequestRecord) float64 { return *r.FirstToken - *r.Scheduled }
	cold, warm := prefill(recs[0]), prefill(recs[1])
	t.Logf("2000-token prompt: prefill %.2f ms cold, %.2f ms with %d tokens cached (wall, speedup %d)", cold*1e3, warm*1e3, recs[1].CachedTokens, simtest.DefaultSpeedup)
	if recs[1].CachedTokens != 1984 || warm > cold/4 {
		t.Errorf("cached %d (want 1984), prefill %.4f s vs %.4f s cold: want under a quarter", recs[1].CachedTokens, warm, cold)
	}
}

// TestMetricsMatchRequestRecords: concurrent traffic with shared prefixes,
// streaming and not; the /metrics deltas equal the sums over the engine's
// per-request records, and GET /debug/requests serves those records.
func TestMetricsMatchRequestRecords(t *testing.T) {
	e := simtest.Start(t, cacheOpts)
	before := scrape(t, e)
	system := strings.Repeat("Shared system prompt. ", 30)
	parallel(24, func(i int) {
		switch i % 3 {
		case 0:
			complete(t, e, "/v1/completions", idPrompt(append(ids(100, 300), ids(10000*i, 40)...), 8+i))
		case 1:
			body := chat(system+fmt.Sprint(i), 10+i, true)
			body["messages"] = []map[string]string{{"role": "system", "content": system}, {"role": "user", "content": fmt.Sprint("question ", i)}}
			resp := post(t, e, "/v1/chat/completions", body)
			events(t, resp.Body)
			resp.Body.Close()
		default:
			complete(t, e, "/v1/chat/completions", chat(system, 5, false))
		}
	})
	after := scrape(t, e)
	recs := e.Requests()
	if len(recs) != 24 {
		t.Fatalf("%d records, want 24", len(recs))
	}
	var prompt, cached, output, ttft float64
	for _, r := range recs {
		prompt += float64(r.PromptTokens)
		cached += float64(r.CachedTokens)
		output += float64(r.OutputTokens)
		ttft += *r.FirstToken - r.Arrival
		if r.Preemptions != 0 || r.FinishReason != "length" || *r.Scheduled < r.Queued || *r.FirstToken < *r.Scheduled || r.Finished < *r.FirstToken {
			t.Errorf("record out of order or preempted: %+v", r)
		}
	}
	if cached == 0 {
		t.Error("no prompt tokens cached: the shared prefixes never hit")
	}
	delta := func(name string) float64 { return value(after, name) - value(before, name) }
	for _, c := range []struct {
		name string
		want float64
	}{
		{"vllm:prefix_cache_hits_total", cached},
		{"vllm:prefix_cache_queries_total", prompt},
		{"vllm:prompt_tokens_total", prompt},
		{"vllm:generation_tokens_total", output},
		{"vllm:request_success_total", float64(len(recs))},
	} {
		if got := delta(c.name); got != c.want {
			t.Errorf("%s grew %v; the records sum to %v", c.name, got, c.want)
		}
	}
	// Sums of float seconds: equal to rounding.
	if got := histSum(after, "vllm:time_to_first_token_seconds") - histSum(before, "vllm:time_to_first_token_seconds"); got-ttft > 1e-6 || ttft-got > 1e-6 {
		t.Errorf("TTFT sum grew %.9f s; the records sum to %.9f s", got, ttft)
	}
	resp, err := http.Get(e.BaseURL() + "/debug/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []sim.RequestRecord `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) != 24 || list.Data[0].ID != recs[0].ID {
		t.Errorf("/debug/requests: %v, %d records", err, len(list.Data))
	}
}

func TestDebugRequestsOffByDefault(t *testing.T) {
	e := simtest.Start(t, quick)
	resp, err := http.Get(e.BaseURL() + "/debug/requests")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || e.Requests() != nil {
		t.Errorf("without DebugRequests: /debug/requests %s, Requests() non-nil %v", resp.Status, e.Requests() != nil)
	}
}
