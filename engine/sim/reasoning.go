package sim

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/servebench/servebench/engine/dist"
	"github.com/servebench/servebench/engine/option"
)

// Reasoning models (--reasoning-parser P --reasoning-tokens DIST), as vLLM
// serves them with its reasoning parsers: a chat request's output begins
// with the model's thinking, which the parser streams in a field of its own
// (delta.reasoning_content in vLLM 0.11, the version emulated; newer vLLM
// renamed it delta.reasoning, vllm-project/vllm#27752), then the answer in
// delta.content. Thinking tokens are output tokens like any other: each
// costs its decode step, counts in usage.completion_tokens and in
// vllm:generation_tokens_total, and max_tokens bounds thinking and answer
// together, so a small max_tokens ends a request while it is still
// thinking (finish_reason "length", content null). Around the thinking the
// model generates marker tokens that the parser swallows: they cost steps
// but stream no chunk (vLLM skips a token whose DeltaMessage is None).
// The completions endpoint has no reasoning parser in vLLM and is left as is.

// Reasoning parser names, vLLM's (vllm/reasoning/__init__.py).
const (
	ParserDeepSeekR1 = "deepseek_r1"
	ParserQwen3      = "qwen3"
	ParserOpenAI     = "openai" // gpt-oss's harmony channels; vLLM registers it as openai_gptoss, taken too
)

// ReasoningParsers lists the --reasoning-parser values, for help and errors.
var ReasoningParsers = []string{ParserDeepSeekR1, ParserQwen3, ParserOpenAI}

// Reasoning fields: what the thinking streams in.
const (
	FieldReasoningContent = "reasoning_content" // vLLM <= 0.11 (and SGLang)
	FieldReasoning        = "reasoning"         // vLLM after #27752
)

// DefaultReasoningTokens is --reasoning-tokens' default: a round figure,
// not a fitted one; give the distribution your model shows.
const DefaultReasoningTokens = "512"

// parserMarkers are the tokens a model generates before and after its
// thinking that its parser streams nowhere:
//   - deepseek_r1: the chat template already ends the prompt with
//     "<think>\n" (DeepSeek-R1-0528 and the distills), so the model opens
//     nothing and closes with "</think>" (deepseek_r1_reasoning_parser.py).
//   - qwen3: the model writes "<think>" and "</think>" itself
//     (qwen3_reasoning_parser.py; each alone in a delta gives None).
//   - openai: harmony's "<|channel|>analysis<|message|>" (3 tokens) before,
//     "<|end|><|start|>assistant<|channel|>final<|message|>" (6) after
//     (OpenAI's harmony format; vLLM's harmony_utils.py streams the
//     analysis channel as reasoning, the final channel as content).
var parserMarkers = map[string][2]int{
	ParserDeepSeekR1: {0, 1},
	ParserQwen3:      {1, 1},
	ParserOpenAI:     {3, 6},
}

// reasoner is the engine's reasoning set-up; nil without --reasoning-parser.
type reasoner struct {
	parser        string
	open, close   int // marker tokens before and after the thinking
	tokens        dist.Dist
	field         string
	details       bool // usage.completion_tokens_details.reasoning_tokens (newer vLLM, #45802)
	seed          uint64
	canTurnOff    bool   // chat_template_kwargs.enable_thinking=false is honoured (Qwen3's template)
	fieldKey      []byte // `"reasoning_content":"`
	mixedFieldKey []byte // `","content":"`: the answer after thinking in one chunk
}

// newReasoner checks the reasoning options; nil, nil when they are off.
func newReasoner(o *Options) (*reasoner, error) {
	parser := o.ReasoningParser
	if parser == "openai_gptoss" {
		parser = ParserOpenAI
	}
	if parser == "" {
		if o.ReasoningTokens != "" || o.ReasoningField != "" {
			return nil, option.Errorf("ReasoningParser", nil, "{ReasoningTokens} and {ReasoningField} need {ReasoningParser} (%s)", strings.Join(ReasoningParsers, ", "))
		}
		return nil, nil
	}
	m, ok := parserMarkers[parser]
	if !ok {
		return nil, option.Errorf("ReasoningParser", o.ReasoningParser, "unknown parser; known: %s", strings.Join(ReasoningParsers, ", "))
	}
	d, err := dist.Parse(cmp.Or(o.ReasoningTokens, DefaultReasoningTokens))
	if err != nil {
		return nil, option.Errorf("ReasoningTokens", nil, "{ReasoningTokens} %v", err)
	}
	field := cmp.Or(o.ReasoningField, FieldReasoningContent)
	if field != FieldReasoningContent && field != FieldReasoning {
		return nil, option.Errorf("ReasoningField", field, "want %s (vLLM 0.11, emulated) or %s (newer vLLM)", FieldReasoningContent, FieldReasoning)
	}
	return &reasoner{parser: parser, open: m[0], close: m[1], tokens: d, field: field,
		details: field == FieldReasoning, seed: uint64(o.Seed), canTurnOff: parser == ParserQwen3,
		fieldKey: []byte(`"` + field + `":"`), mixedFieldKey: []byte(`","content":"`)}, nil
}

// thinking is a request's output layout: tokens [think0, think1) are
// reasoning, the answer starts at answer0; all zero, no reasoning (every
// token is answer).
type thinking struct {
	think0, think1, answer0 int
}

// reasons reports whether r thinks.
func (t *thinking) reasons() bool { return t.answer0 > 0 }

// reasoningTokens is how many of r's first n output tokens were reasoning.
func (t *thinking) reasoningTokens(n int) int {
	return min(max(n-t.think0, 0), t.think1-t.think0)
}

// reasoningParams are the request fields that turn thinking off.
type reasoningParams struct {
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
}

// thinks reports whether a chat request with these parameters thinks.
func (rs *reasoner) thinks(p reasoningParams) bool {
	if !rs.canTurnOff {
		return true
	}
	on, ok := p.ChatTemplateKwargs["enable_thinking"].(bool)
	return !ok || on
}

// think lays out the thinking of a chat request's choices and sets their
// lengths again: thinking, then an answer of the length the request would
// have had, all bounded by max_tokens. Each choice draws its thinking
// length from --reasoning-tokens, seeded by --seed and its id, so the same
// requests think the same in every run.
func (e *Engine) think(rs []*request, req *genRequest, chat bool) {
	rz := e.reasoner
	if rz == nil || !chat || !rz.thinks(req.reasoningParams) {
		return
	}
	for _, r := range rs {
		var pcg rand.PCG
		pcg.Seed(rz.seed^0x7e1a, hashString(rz.seed, r.id))
		n := rz.tokens.Int(rand.New(&pcg), 0, e.opts.MaxModelLen) //nolint:gosec // a workload, not a secret
		r.thinking = thinking{think0: rz.open, think1: rz.open + n, answer0: rz.open + n + rz.close}
		e.setLength(r, req.MinTokens, req.IgnoreEOS)
	}
}

// appendSplitOpen appends a chunk of tokens [from, to) of a thinking
// request up to its logprobs value: the reasoning text in the reasoning
// field, the answer's in content, both when the chunk spans the end of the
// thinking (speculative decoding). false, and b unchanged, when the tokens
// are all markers: vLLM sends no chunk for them.
func (rz *reasoner) appendSplitOpen(b []byte, c *chunker, r *request, from, to int, finish bool) ([]byte, bool) {
	t := &r.thinking
	r0, r1 := max(from, t.think0), min(to, t.think1)
	a0 := max(from, t.answer0)
	if r0 >= r1 && a0 >= to && !finish {
		return b, false
	}
	b = append(b, c.head...)
	if r0 >= r1 {
		b = append(b, c.open...) // the answer alone (or an empty finish chunk)
		return append(c.appendText(b, r.key, a0, to), c.mid...), true
	}
	b = append(b, bytes.TrimSuffix(c.open, []byte(`"content":"`))...)
	b = append(b, rz.fieldKey...)
	b = c.appendText(b, r.key, r0, r1)
	if a0 < to {
		b = append(b, rz.mixedFieldKey...)
		b = c.appendText(b, r.key, a0, to)
	}
	return append(b, c.mid...), true
}

// appendText appends the text of tokens [from, to) of the request keyed key.
func (c *chunker) appendText(b []byte, key uint64, from, to int) []byte {
	for i := from; i < to; i++ {
		b = appendJSONString(b, tokenText(key, i))
	}
	return b
}

// splitText is the reasoning and answer texts of r's first n tokens with
// text (non-streaming); answer is nil while r never got past its thinking.
func splitText(r *request, n int) (reasoning, answer *string) {
	t := &r.thinking
	var b []byte
	for i := t.think0; i < min(n, t.think1); i++ {
		b = append(b, tokenText(r.key, i)...)
	}
	s := string(b)
	reasoning = &s
	if n > t.answer0 { // vLLM: an empty answer is null
		b = b[:0]
		for i := t.answer0; i < n; i++ {
			b = append(b, tokenText(r.key, i)...)
		}
		a := string(b)
		answer = &a
	}
	return reasoning, answer
}

// reasoningDetails is usage.completion_tokens_details, as newer vLLM
// reports it (#45802); nil where vLLM 0.11 has no such field.
type reasoningDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// completionDetails is usage.completion_tokens_details for requests rs,
// or nil where the emulated vLLM reports none.
func (e *Engine) completionDetails(rs []*request) *reasoningDetails {
	if e.reasoner == nil || !e.reasoner.details {
		return nil
	}
	d := &reasoningDetails{}
	for _, r := range rs {
		d.ReasoningTokens += r.thinking.reasoningTokens(r.target)
	}
	return d
}

// splitMessage puts a thinking request's text in its message as vLLM's
// parser does: the thinking in the reasoning field, the rest in content.
func (e *Engine) splitMessage(m *completionMessage, r *request) {
	if !r.thinking.reasons() {
		return
	}
	n := r.target
	if r.natural == "stop" {
		n-- // the EOS token has no text
	}
	reasoning, answer := splitText(r, n)
	m.Content = answer
	if e.reasoner.field == FieldReasoning {
		m.Reasoning = reasoning
	} else {
		m.ReasoningContent = reasoning
	}
}

// appendCompletionDetails adds usage.completion_tokens_details to the usage
// chunk b ends with (`...}}` + "\n\n"); nil d leaves it as it is.
func appendCompletionDetails(b []byte, d *reasoningDetails) []byte {
	if d == nil {
		return b
	}
	b = append(b[:len(b)-len("}}\n\n")], `,"completion_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(d.ReasoningTokens), 10)
	return append(b, "}}}\n\n"...)
}
