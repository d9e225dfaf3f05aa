package sim_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim/simtest"
)

// nAnswer is a non-streaming answer's choices and usage.
type nAnswer struct {
	Choices []struct {
		Index   int `json:"index"`
		Message *struct {
			Content string `json:"content"`
		} `json:"message"`
		Text         *string `json:"text"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

func (a nAnswer) text(i int) string {
	if c := a.Choices[i]; c.Message != nil {
		return c.Message.Content
	} else if c.Text != nil {
		return *c.Text
	}
	return ""
}

// TestNChoices: n = 3 answers three different samples of one prompt, in
// parallel; the prompt is counted once in usage, and the later choices
// find its blocks cached by the first (admitted in the same step), as in
// vLLM. The engine's records and /metrics count three requests.
func TestNChoices(t *testing.T) {
	e := simtest.Start(t, cacheOpts)
	before := scrape(t, e)
	body := chat(strings.Repeat("Tell me about caches. ", 30), 12, false)
	body["n"] = 3
	resp := post(t, e, "/v1/chat/completions", body)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a nAnswer
	if err := json.Unmarshal(raw, &a); err != nil || resp.StatusCode != 200 || len(a.Choices) != 3 {
		t.Fatalf("%s: %v: %s", resp.Status, err, raw)
	}
	for i, c := range a.Choices {
		if c.Index != i || c.FinishReason != "length" || a.text(i) == "" {
			t.Errorf("choice %d: index %d finish %q text %q", i, c.Index, c.FinishReason, a.text(i))
		}
	}
	if a.text(0) == a.text(1) || a.text(1) == a.text(2) {
		t.Errorf("choices are not different samples: %q, %q, %q", a.text(0), a.text(1), a.text(2))
	}
	p := a.Usage.Prompt
	if a.Usage.Completion != 3*12 {
		t.Errorf("usage: completion_tokens %d, want 36 (every choice's tokens); prompt %d", a.Usage.Completion, p)
	}
	recs := e.Requests()
	if len(recs) != 3 {
		t.Fatalf("%d engine records, want 3 (one per choice)", len(recs))
	}
	hit := (p - 1) / 16 * 16
	cached := map[int]int{}
	for _, r := range recs {
		cached[r.Index] = r.CachedTokens
		if r.PromptTokens != p || r.OutputTokens != 12 {
			t.Errorf("record %+v: want %d prompt and 12 output tokens", r, p)
		}
	}
	if cached[0] != 0 || cached[1] != hit || cached[2] != hit {
		t.Errorf("cached tokens by choice %v, want 0 for the first, %d for the others (its blocks, the last token recomputed)", cached, hit)
	}
	after := scrape(t, e)
	delta := func(name string) float64 { return value(after, name) - value(before, name) }
	if d := delta("vllm:request_success_total"); d != 3 {
		t.Errorf("request_success_total grew %v, want 3", d)
	}
	if d := delta("vllm:prefix_cache_hits_total"); d != float64(2*hit) {
		t.Errorf("prefix_cache_hits_total grew %v, want %d", d, 2*hit)
	}
}

// TestNChoicesStream: streamed, each choice's chunks carry its index (a
// role chunk each first, for chat), they spell the same texts as the
// non-streaming answer to the same body, each ends with its own finish
// chunk, and the usage chunk counts every choice's tokens.
func TestNChoicesStream(t *testing.T) {
	e := simtest.Start(t, quick)
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		body := map[string]any{"max_tokens": 40, "n": 2} // no ignore_eos: each choice draws its own length
		if strings.Contains(path, "chat") {
			body["messages"] = []map[string]string{{"role": "user", "content": "stream two answers"}}
		} else {
			body["prompt"] = "stream two answers"
		}
		resp := post(t, e, path, body)
		var want nAnswer
		err := json.NewDecoder(resp.Body).Decode(&want)
		resp.Body.Close()
		if err != nil || len(want.Choices) != 2 {
			t.Fatalf("%s: non-streaming: %v %+v", path, err, want)
		}
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
		resp = post(t, e, path, body)
		evs := events(t, resp.Body)
		resp.Body.Close()
		var texts [2]strings.Builder
		var roles, finishes [2]int
		var reasons [2]string
		completion := -1
		for _, ev := range evs {
			if ev == "[DONE]" {
				break
			}
			c := decodeChunk(t, ev)
			if c.Usage != nil {
				completion = c.Usage.Completion
			}
			if len(c.Choices) > 1 {
				t.Errorf("%s: a chunk with %d choices; vLLM sends one per chunk", path, len(c.Choices))
			}
			for _, ch := range c.Choices {
				i := ch.Index
				if ch.Delta.Role != nil {
					roles[i]++
					if texts[0].Len()+texts[1].Len() > 0 {
						t.Errorf("%s: role chunk for choice %d after content", path, i)
					}
				}
				if ch.Delta.Content != nil {
					texts[i].WriteString(*ch.Delta.Content)
				}
				if ch.Text != nil {
					texts[i].WriteString(*ch.Text)
				}
				if ch.FinishReason != nil {
					finishes[i]++
					reasons[i] = *ch.FinishReason
				}
			}
		}
		for i := range 2 {
			if texts[i].String() != want.text(i) || finishes[i] != 1 || reasons[i] != want.Choices[i].FinishReason {
				t.Errorf("%s choice %d: streamed %q (finish %q x%d), non-streaming %q (%q)", path, i, texts[i].String(), reasons[i], finishes[i], want.text(i), want.Choices[i].FinishReason)
			}
			if chat := strings.Contains(path, "chat"); chat && roles[i] != 1 || !chat && roles[i] != 0 {
				t.Errorf("%s choice %d: %d role chunks", path, i, roles[i])
			}
		}
		if completion != want.Usage.Completion || want.Usage.Prompt <= 0 {
			t.Errorf("%s: streamed usage completion_tokens %d, non-streaming %d", path, completion, want.Usage.Completion)
		}
	}
}
