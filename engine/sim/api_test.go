package sim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

func TestStreamShapeChat(t *testing.T) {
	e := simtest.Start(t, quick)
	resp := post(t, e, "/v1/chat/completions", chat("Hello there, how are you?", 17, true))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %s, content type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	ev := events(t, resp.Body)
	// role chunk + 17 token chunks + usage + [DONE]
	if len(ev) != 1+17+1+1 {
		t.Fatalf("got %d events, want 20:\n%s", len(ev), strings.Join(ev, "\n"))
	}
	first := decodeChunk(t, ev[0])
	if first.Object != "chat.completion.chunk" || len(first.Choices) != 1 || first.Choices[0].Delta.Role == nil ||
		*first.Choices[0].Delta.Role != "assistant" || *first.Choices[0].Delta.Content != "" {
		t.Errorf("first chunk is not role-only: %s", ev[0])
	}
	id := first.ID
	for i, s := range ev[1:18] {
		c := decodeChunk(t, s)
		if c.ID != id || c.Model != "Qwen/Qwen2.5-7B-Instruct-AWQ" {
			t.Errorf("chunk %d: id %q model %q", i, c.ID, c.Model)
		}
		ch := c.Choices[0]
		if ch.Delta.Content == nil || *ch.Delta.Content == "" || ch.Delta.Role != nil {
			t.Errorf("chunk %d is not one content token: %s", i, s)
		}
		last := i == 16
		if (ch.FinishReason != nil) != last || (last && *ch.FinishReason != "length") {
			t.Errorf("chunk %d finish_reason: %s", i, s)
		}
	}
	u := decodeChunk(t, ev[18])
	if u.Usage == nil || len(u.Choices) != 0 || !strings.Contains(ev[18], `"choices":[]`) {
		t.Fatalf("usage chunk: %s", ev[18])
	}
	wantPrompt := sim.ChatTokens("Hello there, how are you?")
	if u.Usage.Completion != 17 || u.Usage.Prompt != wantPrompt || u.Usage.Total != 17+wantPrompt {
		t.Errorf("usage %+v, want completion 17 prompt %d", *u.Usage, wantPrompt)
	}
	if ev[19] != "[DONE]" {
		t.Errorf("last event %q, want [DONE]", ev[19])
	}
}

func TestStreamCompletionsNoUsage(t *testing.T) {
	e := simtest.Start(t, quick)
	resp := post(t, e, "/v1/completions", map[string]any{"prompt": strings.Repeat("abcd", 100),
		"max_tokens": 5, "ignore_eos": true, "stream": true})
	defer resp.Body.Close()
	ev := events(t, resp.Body)
	if len(ev) != 5+1 || ev[5] != "[DONE]" {
		t.Fatalf("events: %q", ev)
	}
	for i, s := range ev[:5] {
		c := decodeChunk(t, s)
		if c.Object != "text_completion" || c.Choices[0].Text == nil || *c.Choices[0].Text == "" {
			t.Errorf("event %d: %s", i, s)
		}
	}
}

func TestNonStreamingExactTokens(t *testing.T) {
	e := simtest.Start(t, quick)
	for _, n := range []int{1, 64, 300} {
		resp := post(t, e, "/v1/chat/completions", chat("Count to ten.", n, false))
		var out struct {
			Object  string
			Choices []struct {
				Message      struct{ Role, Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if out.Object != "chat.completion" || out.Usage.Completion != n || out.Choices[0].FinishReason != "length" ||
			out.Choices[0].Message.Role != "assistant" || len(strings.Fields(out.Choices[0].Message.Content)) != n {
			t.Errorf("max_tokens %d: %+v", n, out)
		}
	}
}

// Without ignore_eos the length is drawn (seeded) and stays within
// [min_tokens, max_tokens]; the same request and seed give the same answer.
func TestNaturalLengthDeterministic(t *testing.T) {
	e := simtest.Start(t, quick)
	get := func(prompt string, minT int) (string, string, int) {
		body := map[string]any{"prompt": prompt, "max_tokens": 300, "min_tokens": minT}
		resp := post(t, e, "/v1/completions", body)
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Text         string
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				Completion int `json:"completion_tokens"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.Choices[0].Text, out.Choices[0].FinishReason, out.Usage.Completion
	}
	stops := 0
	for i := 0; i < 12; i++ {
		p := strings.Repeat("x", i+1)
		text, reason, n := get(p, 5)
		text2, _, n2 := get(p, 5)
		if text != text2 || n != n2 {
			t.Errorf("prompt %q: answers differ for the same seed", p)
		}
		if n < 5 || n > 300 || (reason == "length") != (n == 300) {
			t.Errorf("prompt %q: %d tokens, finish %q", p, n, reason)
		}
		if reason == "stop" {
			stops++
			if got := len(strings.Fields(text)); got != n-1 { // the EOS token has no text
				t.Errorf("stop after %d tokens but %d words", n, got)
			}
		}
	}
	if stops == 0 {
		t.Errorf("no request stopped by itself in 12 draws (mean natural length is 256 of 300)")
	}
}

func TestModelsVersionHealth(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.ServedModelName = "my-model" })
	resp, err := http.Get(e.BaseURL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var ml struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&ml)
	resp.Body.Close()
	if len(ml.Data) != 1 || ml.Data[0].ID != "my-model" || ml.Data[0].MaxModelLen != 4096 {
		t.Errorf("/v1/models: %+v", ml)
	}
	for _, p := range []string{"/health", "/version"} {
		resp, err := http.Get(e.BaseURL() + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %s %s", p, resp.Status, b)
		}
	}
}

// TestPromptForms: completions take a string, a one-string list or token
// IDs; chat content may be a list of text parts. Each is counted as the
// documented approximation says.
func TestPromptForms(t *testing.T) {
	e := simtest.Start(t, quick)
	cases := []struct {
		path string
		body map[string]any
		want int
	}{
		// "abcdefgh" is one cl100k token, "abcdefghi" two ("abcdefgh", "i").
		{"/v1/completions", map[string]any{"prompt": "abcdefgh", "max_tokens": 1}, 1},
		{"/v1/completions", map[string]any{"prompt": []string{"abcdefghi"}, "max_tokens": 1}, 2},
		{"/v1/completions", map[string]any{"prompt": []int{1, 2, 3, 4, 5}, "max_tokens": 1}, 5},
		{"/v1/chat/completions", map[string]any{"max_tokens": 1, "messages": []map[string]any{
			{"role": "system", "content": "abcd"},
			{"role": "user", "content": []map[string]string{{"type": "text", "text": "abcd"}, {"type": "text", "text": "efgh"}}},
		}}, 15}, // ChatML: (3 + 1 + 2) per message + 3 for the generation prompt, no default system turn
	}
	for i, c := range cases {
		resp := post(t, e, c.path, c.body)
		var out struct {
			Usage struct {
				Prompt int `json:"prompt_tokens"`
			}
		}
		err := json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || out.Usage.Prompt != c.want {
			t.Errorf("case %d: status %s, prompt tokens %d, want %d (%v)", i, resp.Status, out.Usage.Prompt, c.want, err)
		}
	}
}

// TestVersionNamesProfiles: /version names the profiles the engine runs,
// by profile name even when --model was a served name, so a harness can
// record them from the engine (issue 20: results named the defaults).
func TestVersionNamesProfiles(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) {
		quick(o)
		o.GPU, o.Model, o.Seed = "A100-80GB", "Qwen/Qwen2.5-7B-Instruct", 7
	})
	resp, err := http.Get(e.BaseURL() + "/version")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Version    string
		Servebench sim.BundledVersion
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	want := sim.BundledVersion{GPU: "a100-80gb", Model: "qwen2.5-7b-instruct", Speedup: simtest.DefaultSpeedup, StartupSpeedup: 1000, Seed: 7}
	if v.Version == "" || v.Servebench != want {
		t.Errorf("/version = %+v, want version and %+v", v, want)
	}
}

// TestVersionParallel: /version records the parallel sizes, the KV role
// and the emulated vLLM release (--vllm-version) an engine runs with, so
// results.json says what ran, and leaves them out on one GPU without a
// role or release (the object of TestVersionNamesProfiles).
func TestVersionParallel(t *testing.T) {
	one := simtest.Start(t, quick)
	if raw := getBody(t, one.BaseURL()+"/version"); strings.Contains(raw, "parallel") || strings.Contains(raw, "kv_role") || strings.Contains(raw, "vllm_version") {
		t.Errorf("one-GPU /version = %s, want no parallel sizes, KV role or vLLM release", raw)
	}
	e := simtest.Start(t, func(o *sim.Options) {
		quick(o)
		o.GPU, o.Model = "a100-80gb", "qwen2.5-7b-instruct"
		o.TensorParallelSize, o.PipelineParallelSize, o.KVRole = 2, 2, sim.KVRoleProducer
		o.VLLMVersion = "0.20.1"
	})
	var v struct{ Servebench map[string]any }
	if err := json.Unmarshal([]byte(getBody(t, e.BaseURL()+"/version")), &v); err != nil {
		t.Fatal(err)
	}
	s := v.Servebench
	if s["tensor_parallel_size"] != 2.0 || s["pipeline_parallel_size"] != 2.0 || s["kv_role"] != "producer" || s["vllm_version"] != "0.20.1" {
		t.Errorf("/version servebench = %v, want tensor_parallel_size 2, pipeline_parallel_size 2, kv_role producer, vllm_version 0.20.1", s)
	}
}

// getBody returns the body of GET url, failing the test unless it is 200.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}
