package sim_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// thinkingEngine starts an engine with a reasoning parser.
func thinkingEngine(t *testing.T, parser, tokens, field string) *sim.Engine {
	t.Helper()
	return simtest.Start(t, func(o *sim.Options) {
		quick(o)
		o.Speedup = 1000
		o.DebugRequests = true
		o.ReasoningParser, o.ReasoningTokens, o.ReasoningField = parser, tokens, field
	})
}

// streamed is what a stream's chunks carried, counted per chunk.
type streamed struct {
	reasoningChunks, answerChunks int
	reasoning, answer             strings.Builder
	fields                        map[string]bool // delta keys seen
	answerBeforeThinkingEnd       bool
	finish                        string
	completion, details           int // usage; details -1 when absent
}

// readStream decodes a chat stream, reasoning taken from field.
func readStream(t *testing.T, body io.Reader, field string) *streamed {
	t.Helper()
	s := &streamed{fields: map[string]bool{}, details: -1}
	for _, ev := range events(t, body) {
		if ev == "[DONE]" {
			break
		}
		var c struct {
			Choices []struct {
				Delta        map[string]*string `json:"delta"`
				FinishReason *string            `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				Completion int `json:"completion_tokens"`
				Details    *struct {
					Reasoning int `json:"reasoning_tokens"`
				} `json:"completion_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("chunk %s: %v", ev, err)
		}
		if c.Usage != nil {
			s.completion = c.Usage.Completion
			if c.Usage.Details != nil {
				s.details = c.Usage.Details.Reasoning
			}
		}
		for _, ch := range c.Choices {
			for k := range ch.Delta {
				s.fields[k] = true
			}
			if r := ch.Delta[field]; r != nil && *r != "" {
				if s.answerChunks > 0 {
					s.answerBeforeThinkingEnd = true
				}
				s.reasoningChunks++
				s.reasoning.WriteString(*r)
			}
			if a := ch.Delta["content"]; a != nil && *a != "" {
				s.answerChunks++
				s.answer.WriteString(*a)
			}
			if ch.FinishReason != nil {
				s.finish = *ch.FinishReason
			}
		}
	}
	return s
}

// message is a non-streaming chat answer's message and usage.
type message struct {
	Choices []struct {
		Message      map[string]any `json:"message"`
		FinishReason string         `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		Completion int `json:"completion_tokens"`
		Details    *struct {
			Reasoning int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

func readMessage(t *testing.T, body io.Reader) message {
	t.Helper()
	var m message
	if err := json.NewDecoder(body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReasoningParsers: each parser streams its thinking, one chunk a
// token, in the field of the emulated vLLM version, then the answer; the
// non-streaming answer has the same two texts; usage counts thinking,
// markers and answer, and the engine's own record and generation counter
// agree.
func TestReasoningParsers(t *testing.T) {
	markers := map[string][2]int{"deepseek_r1": {0, 1}, "qwen3": {1, 1}, "openai": {3, 6}}
	for _, parser := range sim.ReasoningParsers {
		for _, field := range []string{"", sim.FieldReasoning} {
			t.Run(parser+"/"+field, func(t *testing.T) {
				e := thinkingEngine(t, parser, "uniform:10-30", field)
				want := field
				if want == "" {
					want = sim.FieldReasoningContent // vLLM 0.11, emulated
				}
				const maxTokens = 60
				id := []string{sim.RequestIDHeader, "think-1"}
				resp := post(t, e, "/v1/chat/completions", chat("Why is the sky blue?", maxTokens, true), id...)
				s := readStream(t, resp.Body, want)
				resp.Body.Close()
				other := map[string]string{sim.FieldReasoning: sim.FieldReasoningContent, sim.FieldReasoningContent: sim.FieldReasoning}[want]
				m := markers[parser]
				r := s.reasoningChunks
				switch {
				case s.fields[other]:
					t.Errorf("stream used %s too; want only %s", other, want)
				case r < 10 || r > 30:
					t.Errorf("%d reasoning chunks, want 10-30 (--reasoning-tokens uniform:10-30)", r)
				case s.answerBeforeThinkingEnd:
					t.Error("reasoning streamed after the answer began")
				case s.answerChunks != maxTokens-m[0]-m[1]-r:
					t.Errorf("%d answer chunks, want %d - %d markers - %d reasoning", s.answerChunks, maxTokens, m[0]+m[1], r)
				case s.completion != maxTokens || s.finish != "length":
					t.Errorf("usage.completion_tokens %d finish %q, want %d (thinking, markers and answer) length", s.completion, s.finish, maxTokens)
				case (field == sim.FieldReasoning) != (s.details == r):
					t.Errorf("completion_tokens_details.reasoning_tokens %d (-1: absent) with --reasoning-field %q, want %d only with reasoning", s.details, field, r)
				}

				resp = post(t, e, "/v1/chat/completions", chat("Why is the sky blue?", maxTokens, false), id...)
				msg := readMessage(t, resp.Body)
				resp.Body.Close()
				got := msg.Choices[0].Message
				if got[want] != s.reasoning.String() || got["content"] != s.answer.String() {
					t.Errorf("non-streaming message %v, want %s %q and content %q as streamed", got, want, s.reasoning.String(), s.answer.String())
				}
				if got[other] != nil {
					t.Errorf("non-streaming message has %s = %q too", other, got[other])
				}
				if d := msg.Usage.Details; (field == sim.FieldReasoning) != (d != nil && d.Reasoning == r) {
					t.Errorf("non-streaming completion_tokens_details %+v, want reasoning_tokens %d only with reasoning", d, r)
				}
				recs := e.Requests()
				gen := value(scrape(t, e), "vllm:generation_tokens_total")
				if len(recs) != 2 || recs[0].ReasoningTokens != r || recs[1].ReasoningTokens != r || gen != 2*maxTokens {
					t.Errorf("engine records %+v, generation tokens %g: want 2 records of %d reasoning tokens, %d generated", recs, gen, r, 2*maxTokens)
				}
			})
		}
	}
}

// TestReasoningOff: Qwen3's enable_thinking=false answers at once (no
// reasoning field, every token content); deepseek_r1's template has no such
// switch and thinks anyway; a max_tokens inside the thinking leaves no
// answer (content null, finish length); the completions endpoint has no
// parser.
func TestReasoningOff(t *testing.T) {
	off := func(stream bool) map[string]any {
		b := chat("Why is the sky blue?", 40, stream)
		b["chat_template_kwargs"] = map[string]any{"enable_thinking": false}
		return b
	}
	q := thinkingEngine(t, "qwen3", "100", "")
	resp := post(t, q, "/v1/chat/completions", off(true))
	s := readStream(t, resp.Body, sim.FieldReasoningContent)
	resp.Body.Close()
	if s.reasoningChunks != 0 || s.fields[sim.FieldReasoningContent] || s.answerChunks != 40 || s.completion != 40 {
		t.Errorf("qwen3 enable_thinking=false streamed %d reasoning, %d answer chunks (fields %v), %d tokens; want 0, 40, 40", s.reasoningChunks, s.answerChunks, s.fields, s.completion)
	}
	resp = post(t, q, "/v1/chat/completions", off(false))
	msg := readMessage(t, resp.Body)
	resp.Body.Close()
	if c := msg.Choices[0].Message; c["reasoning_content"] != nil || c["content"] == nil || c["content"] == "" {
		t.Errorf("qwen3 enable_thinking=false message %v, want content and reasoning_content null", c)
	}

	// 100 thinking tokens and max_tokens 40: cut off while thinking.
	resp = post(t, q, "/v1/chat/completions", chat("Why is the sky blue?", 40, false))
	msg = readMessage(t, resp.Body)
	resp.Body.Close()
	if c := msg.Choices[0]; c.Message["content"] != nil || c.Message["reasoning_content"] == nil || c.FinishReason != "length" || msg.Usage.Completion != 40 {
		t.Errorf("thinking past max_tokens: message %v finish %q completion %d; want content null, reasoning, length, 40", c.Message, c.FinishReason, msg.Usage.Completion)
	}
	resp = post(t, q, "/v1/chat/completions", chat("Why is the sky blue?", 40, true))
	s = readStream(t, resp.Body, sim.FieldReasoningContent)
	resp.Body.Close()
	if s.answerChunks != 0 || s.reasoningChunks != 39 || s.finish != "length" {
		t.Errorf("thinking past max_tokens streamed %d reasoning (want 40 - <think>), %d answer chunks, finish %q", s.reasoningChunks, s.answerChunks, s.finish)
	}

	d := thinkingEngine(t, "deepseek_r1", "20", "")
	resp = post(t, d, "/v1/chat/completions", off(true))
	s = readStream(t, resp.Body, sim.FieldReasoningContent)
	resp.Body.Close()
	if s.reasoningChunks != 20 {
		t.Errorf("deepseek_r1 with enable_thinking=false streamed %d reasoning chunks; want 20 (its template has no switch)", s.reasoningChunks)
	}
	resp = post(t, d, "/v1/completions", map[string]any{"prompt": "Why", "max_tokens": 10, "ignore_eos": true})
	var cm struct {
		Choices []struct{ Text string } `json:"choices"`
	}
	json.NewDecoder(resp.Body).Decode(&cm)
	resp.Body.Close()
	if len(cm.Choices) != 1 || cm.Choices[0].Text == "" {
		t.Errorf("completions with a reasoning parser: %+v, want the text as before", cm)
	}
}

// TestReasoningBadFlags: an unknown parser is refused naming the known
// ones; a --reasoning-tokens that does not parse names the flag.
func TestReasoningBadFlags(t *testing.T) {
	for _, tc := range []struct {
		parser, tokens, want, field string
	}{
		{"granite", "", "known: deepseek_r1, qwen3, openai", "ReasoningParser"},
		{"qwen3", "uniform:9-1", "ReasoningTokens", "ReasoningTokens"},
		{"", "100", "need ReasoningParser", "ReasoningParser"},
	} {
		o := sim.DefaultOptions()
		o.Port = 0
		o.ReasoningParser, o.ReasoningTokens = tc.parser, tc.tokens
		if _, err := sim.New(o); !isFieldError(err, tc.field) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--reasoning-parser %q --reasoning-tokens %q: error %v, want a %s error naming %q", tc.parser, tc.tokens, err, tc.field, tc.want)
		}
	}
	o := sim.DefaultOptions()
	o.Port, o.ReasoningParser = 0, "openai_gptoss" // vLLM's own name for gpt-oss's
	if _, err := sim.New(o); err != nil {
		t.Errorf("openai_gptoss: %v", err)
	}
}

// TestReasoningSpeculative: with speculative decoding a step's chunk may
// hold the end of the thinking and the start of the answer, in one delta
// with both fields; the texts streamed are still the non-streaming ones,
// and a chunk of markers alone is not sent.
func TestReasoningSpeculative(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) {
		quick(o)
		o.Speedup, o.SpeculativeTokens, o.AcceptanceRate = 1000, 4, 0.9
		o.ReasoningParser, o.ReasoningTokens = "qwen3", "uniform:20-40" // one marker between thinking and answer
	})
	mixed := 0
	for i := range 6 {
		id := []string{sim.RequestIDHeader, "spec-" + string(rune('a'+i))}
		resp := post(t, e, "/v1/chat/completions", chat("Why is the sky blue?", 80, true), id...)
		var reasoning, answer strings.Builder
		for _, ev := range events(t, resp.Body) {
			if ev == "[DONE]" {
				break
			}
			var c struct {
				Choices []struct {
					Delta        map[string]*string `json:"delta"`
					FinishReason *string            `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(ev), &c); err != nil {
				t.Fatal(err)
			}
			for _, ch := range c.Choices {
				r, a := ch.Delta["reasoning_content"], ch.Delta["content"]
				if r == nil && a == nil && ch.Delta["role"] == nil && ch.FinishReason == nil {
					t.Errorf("a chunk with nothing in it: %s", ev)
				}
				if r != nil && a != nil {
					mixed++
				}
				if r != nil {
					reasoning.WriteString(*r)
				}
				if a != nil {
					answer.WriteString(*a)
				}
			}
		}
		resp.Body.Close()
		resp = post(t, e, "/v1/chat/completions", chat("Why is the sky blue?", 80, false), id...)
		msg := readMessage(t, resp.Body)
		resp.Body.Close()
		got := msg.Choices[0].Message
		if got["reasoning_content"] != reasoning.String() || got["content"] != answer.String() {
			t.Errorf("request %d: streamed reasoning %q answer %q; non-streaming %v", i, reasoning.String(), answer.String(), got)
		}
	}
	if mixed == 0 {
		t.Error("no chunk carried both the end of the thinking and the start of the answer in 6 requests of 5-token steps")
	}
}
