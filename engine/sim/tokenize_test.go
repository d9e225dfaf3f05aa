package sim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
	"github.com/servebench/servebench/engine/tok"
)

// tokenized is vLLM's TokenizeResponse.
type tokenized struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []uint32 `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// postJSON posts body to path, wants status, and decodes the answer into
// out; it returns the raw body.
func postJSON(t *testing.T, e *sim.Engine, path string, body any, status int, out any) string {
	t.Helper()
	resp := post(t, e, path, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("POST %s %v: status %d, want %d: %s", path, body, resp.StatusCode, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, raw)
		}
	}
	return string(raw)
}

// usagePrompt is usage.prompt_tokens of a one-token generation of body.
func usagePrompt(t *testing.T, e *sim.Engine, path string, body map[string]any) int {
	t.Helper()
	body["max_tokens"] = 1
	var out struct {
		Usage struct {
			Prompt int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	postJSON(t, e, path, body, http.StatusOK, &out)
	return out.Usage.Prompt
}

// TestTokenizeMatchesUsage: /tokenize counts what a completion of the
// same prompt reports as usage.prompt_tokens, for both model families, and
// /detokenize gives back the text (the chat template's, for messages).
func TestTokenizeMatchesUsage(t *testing.T) {
	story := "Write a short story about a lighthouse keeper who finds a message in a bottle."
	for _, c := range []struct {
		model, gpu string
		bos        string // what the tokens of a completion prompt start with
		chat       string // the template's rendering of the chat below
	}{
		{"qwen2.5-7b-instruct-awq", "rtx3060-12gb", "",
			"<|im_start|>system\n" + tok.QwenDefaultSystem + "<|im_end|>\n<|im_start|>user\n" + story + "<|im_end|>\n<|im_start|>assistant\n"},
		{"llama-3.1-8b-instruct", "a100-80gb", "<|begin_of_text|>",
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\n" + story + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
	} {
		t.Run(c.model, func(t *testing.T) {
			e := simtest.Start(t, func(o *sim.Options) { quick(o); o.Model, o.GPU, o.Speedup = c.model, c.gpu, 100 })
			msgs := []map[string]string{{"role": "user", "content": story}}
			var tc tokenized
			postJSON(t, e, "/tokenize", map[string]any{"messages": msgs}, http.StatusOK, &tc)
			if want := usagePrompt(t, e, "/v1/chat/completions", map[string]any{"messages": msgs}); tc.Count != want || len(tc.Tokens) != want {
				t.Errorf("chat: /tokenize count %d (%d ids), usage.prompt_tokens %d", tc.Count, len(tc.Tokens), want)
			}
			var dc struct{ Prompt string }
			postJSON(t, e, "/detokenize", map[string]any{"tokens": tc.Tokens}, http.StatusOK, &dc)
			if dc.Prompt != c.chat {
				t.Errorf("chat template: %q, want %q", dc.Prompt, c.chat)
			}
			var tp tokenized
			postJSON(t, e, "/tokenize", map[string]any{"prompt": story, "model": e.ServedModelName()}, http.StatusOK, &tp)
			if want := usagePrompt(t, e, "/v1/completions", map[string]any{"prompt": story}); tp.Count != want {
				t.Errorf("completion: /tokenize count %d, usage.prompt_tokens %d", tp.Count, want)
			}
			if tp.MaxModelLen != 4096 && c.gpu == "rtx3060-12gb" {
				t.Errorf("max_model_len %d", tp.MaxModelLen)
			}
			postJSON(t, e, "/detokenize", map[string]any{"tokens": tp.Tokens}, http.StatusOK, &dc)
			if dc.Prompt != c.bos+story {
				t.Errorf("detokenize: %q", dc.Prompt)
			}
			t.Logf("%s: chat %d tokens, completion %d (%s)", c.model, tc.Count, tp.Count, story)
		})
	}
}

// TestTokenizeOptions: add_special_tokens, add_generation_prompt,
// continue_final_message and return_token_strs change what vLLM's do.
func TestTokenizeOptions(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.Model, o.GPU = "llama-3.1-8b-instruct", "a100-80gb" })
	var with, without tokenized
	postJSON(t, e, "/tokenize", map[string]any{"prompt": "Hello world"}, http.StatusOK, &with)
	raw := postJSON(t, e, "/tokenize", map[string]any{"prompt": "Hello world", "add_special_tokens": false}, http.StatusOK, &without)
	// Llama-3 ids (llama.cpp's ggml-vocab-llama-bpe test case "Hello world").
	if !slices.Equal(with.Tokens, []uint32{128000, 9906, 1917}) || !slices.Equal(without.Tokens, []uint32{9906, 1917}) {
		t.Errorf("add_special_tokens: %v and %v", with.Tokens, without.Tokens)
	}
	if !strings.Contains(raw, `"token_strs":null`) {
		t.Errorf("token_strs not null by default: %s", raw)
	}
	var strs tokenized
	postJSON(t, e, "/tokenize", map[string]any{"prompt": " Hello\n", "add_special_tokens": false, "return_token_strs": true}, http.StatusOK, &strs)
	if !slices.Equal(strs.TokenStrs, []string{"ĠHello", "Ċ"}) {
		t.Errorf("token_strs %q", strs.TokenStrs)
	}

	msgs := []map[string]string{{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Once upon"}}
	var gen, noGen, cont tokenized
	postJSON(t, e, "/tokenize", map[string]any{"messages": msgs}, http.StatusOK, &gen)
	postJSON(t, e, "/tokenize", map[string]any{"messages": msgs, "add_generation_prompt": false}, http.StatusOK, &noGen)
	postJSON(t, e, "/tokenize", map[string]any{"messages": msgs, "add_generation_prompt": false, "continue_final_message": true}, http.StatusOK, &cont)
	// <|start_header_id|>assistant<|end_header_id|>\n\n is 4 tokens; an open
	// final message lacks its <|eot_id|>.
	if gen.Count != noGen.Count+4 || cont.Count != noGen.Count-1 {
		t.Errorf("counts: generation prompt %d, none %d, continued %d", gen.Count, noGen.Count, cont.Count)
	}
	var dc struct{ Prompt string }
	postJSON(t, e, "/detokenize", map[string]any{"tokens": cont.Tokens}, http.StatusOK, &dc)
	if !strings.HasSuffix(dc.Prompt, "<|start_header_id|>assistant<|end_header_id|>\n\nOnce upon") {
		t.Errorf("continue_final_message: %q", dc.Prompt)
	}
}

// TestTokenizeErrors: bad bodies get vLLM's 400 (404 for another model)
// as OpenAI-style JSON errors.
func TestTokenizeErrors(t *testing.T) {
	e := simtest.Start(t, quick)
	for _, c := range []struct {
		name, path string
		body       any
		status     int
		msg        string
	}{
		{"malformed JSON", "/tokenize", `{"prompt":`, 400, "malformed JSON"},
		{"neither prompt nor messages", "/tokenize", map[string]any{"model": e.ServedModelName()}, 400, "prompt .* or messages"},
		{"prompt not a string", "/tokenize", map[string]any{"prompt": 42}, 400, "prompt must be a string"},
		{"empty messages", "/tokenize", map[string]any{"messages": []any{}}, 400, "at least one message"},
		{"bad content", "/tokenize", map[string]any{"messages": []map[string]any{{"role": "user", "content": 3}}}, 400, `messages\.0\.content`},
		{"continue and generate", "/tokenize", map[string]any{"messages": []map[string]string{{"role": "user", "content": "x"}}, "continue_final_message": true}, 400, "Cannot set both"},
		{"other model", "/tokenize", map[string]any{"prompt": "x", "model": "gpt-4"}, 404, "does not exist"},
		{"no tokens", "/detokenize", map[string]any{}, 400, "tokens"},
		{"tokens not ids", "/detokenize", map[string]any{"tokens": []string{"a"}}, 400, "tokens: Input should be a valid integer"},
		{"id out of vocabulary", "/detokenize", map[string]any{"tokens": []int{9707, 151700}}, 400, "151700 at index 1"},
	} {
		var out struct {
			Error struct {
				Message, Type string
				Code          int
			}
		}
		postJSON(t, e, c.path, c.body, c.status, &out)
		if out.Error.Code != c.status || out.Error.Type == "" || !matches(out.Error.Message, c.msg) {
			t.Errorf("%s: error %+v, want code %d and message matching %q", c.name, out.Error, c.status, c.msg)
		}
	}
}

func matches(s, pattern string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// TestOutputRetokenizes: the generated text tokenizes back to
// completion_tokens, so a client counting tokens from text agrees with
// the engine.
func TestOutputRetokenizes(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.Speedup = 100 })
	var out struct {
		Choices []struct{ Text string }
		Usage   struct {
			Completion int `json:"completion_tokens"`
		}
	}
	postJSON(t, e, "/v1/completions", map[string]any{"prompt": "Tell me", "max_tokens": 60, "ignore_eos": true}, http.StatusOK, &out)
	var tk tokenized
	postJSON(t, e, "/tokenize", map[string]any{"prompt": out.Choices[0].Text}, http.StatusOK, &tk)
	if out.Usage.Completion != 60 || tk.Count != 60 {
		t.Errorf("completion_tokens %d, text re-tokenizes to %d", out.Usage.Completion, tk.Count)
	}
}
