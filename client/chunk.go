package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Chunk holds the fields the client reads from one streaming chunk, or from
// a whole non-streaming response body. A field that is absent or JSON null
// is nil (slices) or zero (counts).
//
// Which field wins when several are present, in order:
//   - Content: choices[0].delta.content, choices[0].message.content,
//     choices[0].text (the first that is present and not null, even if "")
//   - Reasoning: delta.reasoning_content, delta.reasoning,
//     message.reasoning_content, message.reasoning
//
// The slices point into the decoded input or into the ChunkDecoder's own
// buffer: they are valid until the next Decode and until the input changes.
type Chunk struct {
	Content          []byte
	Reasoning        []byte
	FinishReason     []byte
	HasChoices       bool // "choices" held at least one element
	HasUsage         bool // "usage" was an object
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int    // usage.prompt_tokens_details.cached_tokens
	HasError         bool   // "error" was present and not null
	ErrorMessage     []byte // the error if it was a string, else error.message
	// OtherReasoning names a key of choices[0].delta (else .message) that
	// looks like reasoning ("reason" or "think" in it) but is none of the
	// known names, the first in byte order: a server streaming its
	// thinking under a name servebench does not count (see Trace).
	OtherReasoning []byte
	// ToolCall is set when choices[0].delta.tool_calls (else
	// .message.tool_calls) held an element; ToolIndex, ToolName and
	// ToolArgs are its index, function.name and function.arguments (the
	// first element's: servers stream one call per chunk). A tool_calls
	// value of another shape is ignored, as an unknown field is.
	ToolCall  bool
	ToolIndex int
	ToolName  []byte
	ToolArgs  []byte
}

// ChunkDecoder decodes chunks on the hot path. A hand-rolled scanner handles
// the common shape with no allocations; anything it is not sure about (key
// case variants, duplicate keys, escaped keys, invalid UTF-8, lone
// surrogates, non-integer token counts, deep nesting, invalid JSON) is
// decoded again with encoding/json, whose result is the reference. Fuzzing
// (FuzzChunkDecode) checks the scanner against it. Not safe for concurrent
// use; reuse one per stream.
type ChunkDecoder struct {
	scratch []byte // unescaped strings; sized to the input so it never moves mid-decode
	chunk   Chunk
}

// trim drops a scratch buffer grown by one huge body, so a pooled decoder
// does not hold it.
func (d *ChunkDecoder) trim() {
	if cap(d.scratch) > 1<<20 {
		d.scratch = nil
	}
	d.chunk = Chunk{}
}

// errDecline is the scanner saying "not sure: ask encoding/json".
var errDecline = errors.New("chunk: decline")

// Decode decodes data (one SSE event's data or a response body). The
// returned Chunk is owned by d and valid until the next Decode. The error
// is encoding/json's, wrapped, when data is not valid JSON or a field has
// the wrong type.
func (d *ChunkDecoder) Decode(data []byte) (*Chunk, error) {
	if err := d.decodeFast(data); err == nil {
		return &d.chunk, nil
	}
	if err := d.decodeSlow(data); err != nil {
		return nil, fmt.Errorf("decoding chunk: %w", err)
	}
	return &d.chunk, nil
}

// decodeFast runs the allocation-free scanner.
func (d *ChunkDecoder) decodeFast(data []byte) error {
	if cap(d.scratch) < len(data) {
		d.scratch = make([]byte, 0, len(data)+len(data)/2)
	}
	d.chunk = Chunk{}
	s := scanner{b: data, out: d.scratch[:0]}
	var p chunkParts
	if err := s.top(&p); err != nil {
		d.chunk = Chunk{}
		return err
	}
	p.fill(&d.chunk)
	return nil
}

// chunkParts keeps every candidate field apart, so the precedence rules
// apply identically to the scanner and to encoding/json.
type chunkParts struct {
	hasChoices         bool
	delta, message     msgParts
	text, finish       []byte
	hasText            bool
	hasUsage           bool
	prompt, completion int
	cached             int
	hasError           bool
	errMsg             []byte
}

type msgParts struct {
	content, reasoningContent, reasoning          []byte
	hasContent, hasReasoningContent, hasReasoning bool
	other                                         []byte // see Chunk.OtherReasoning
	tool                                          toolParts
}

// toolParts is the first element of a message's tool_calls.
type toolParts struct {
	has        bool
	index      int
	name, args []byte
}

// noteOther keeps key as the message's other reasoning-like key when it
// is one and sorts before any kept.
func (m *msgParts) noteOther(key []byte) {
	if !otherReasoningKey(key) {
		return
	}
	if m.other == nil || bytes.Compare(key, m.other) < 0 {
		m.other = key
	}
}

// ReasoningKeys are the message fields the client counts as reasoning
// (msgKeys past content), in the order it prefers them; a copy, for the
// warning that names them beside a field it did not count.
func ReasoningKeys() []string { return slices.Clone(msgKeys[1:]) }

// otherReasoningKey reports whether key looks like a reasoning field
// ("reason" or "think", any case) without being one the client reads
// (msgKeys, any case, as encoding/json matches them).
func otherReasoningKey(key []byte) bool {
	if !containsFold(key, "reason") && !containsFold(key, "think") {
		return false
	}
	for _, k := range msgKeys {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return true
}

func (p *chunkParts) fill(c *Chunk) {
	switch {
	case p.delta.hasContent:
		c.Content = p.delta.content
	case p.message.hasContent:
		c.Content = p.message.content
	case p.hasText:
		c.Content = p.text
	}
	switch {
	case p.delta.hasReasoningContent:
		c.Reasoning = p.delta.reasoningContent
	case p.delta.hasReasoning:
		c.Reasoning = p.delta.reasoning
	case p.message.hasReasoningContent:
		c.Reasoning = p.message.reasoningContent
	case p.message.hasReasoning:
		c.Reasoning = p.message.reasoning
	}
	c.OtherReasoning = p.delta.other
	if c.OtherReasoning == nil {
		c.OtherReasoning = p.message.other
	}
	tool := p.delta.tool
	if !tool.has {
		tool = p.message.tool
	}
	c.ToolCall, c.ToolIndex, c.ToolName, c.ToolArgs = tool.has, tool.index, tool.name, tool.args
	c.FinishReason = p.finish
	c.HasChoices = p.hasChoices
	c.HasUsage = p.hasUsage
	c.PromptTokens, c.CompletionTokens, c.CachedTokens = p.prompt, p.completion, p.cached
	c.HasError, c.ErrorMessage = p.hasError, p.errMsg
}

// Reference shapes for encoding/json. Pointers tell null/absent from "".
type jsonChunk struct {
	Choices []jsonChoice    `json:"choices"`
	Usage   *jsonUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type jsonChoice struct {
	Delta        *jsonMsg `json:"delta"`
	Message      *jsonMsg `json:"message"`
	Text         *string  `json:"text"`
	FinishReason *string  `json:"finish_reason"`
}

type jsonMsg struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
	// ToolCalls is read apart (toolPart): a value of another shape is
	// ignored, not a malformed chunk.
	ToolCalls json.RawMessage `json:"tool_calls"`
}

type jsonToolCall struct {
	Index    int `json:"index"`
	Function *struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// toolPart reads tool_calls' first element; anything but an array of
// tool-call objects (or nulls) is no tool call.
func toolPart(raw json.RawMessage) toolParts {
	var calls []*jsonToolCall
	if len(raw) == 0 || json.Unmarshal(raw, &calls) != nil || len(calls) == 0 {
		return toolParts{}
	}
	p := toolParts{has: true}
	if c := calls[0]; c != nil {
		p.index = c.Index
		if f := c.Function; f != nil {
			p.name, _ = strPart(f.Name)
			p.args, _ = strPart(f.Arguments)
		}
	}
	return p
}

type jsonUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// PromptTokensDetails is read apart: a server's odd value there must not
	// fail the chunk (it only loses the cached count).
	PromptTokensDetails json.RawMessage `json:"prompt_tokens_details"`
}

// decodeSlow decodes with encoding/json and maps the result onto d.chunk.
func (d *ChunkDecoder) decodeSlow(data []byte) error {
	d.chunk = Chunk{}
	var j jsonChunk
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	var p chunkParts
	if len(j.Choices) > 0 {
		p.hasChoices = true
		ch := j.Choices[0]
		if ch.Delta != nil {
			p.delta = ch.Delta.parts()
		}
		if ch.Message != nil {
			p.message = ch.Message.parts()
		}
		p.text, p.hasText = strPart(ch.Text)
		p.finish, _ = strPart(ch.FinishReason)
	}
	if j.Usage != nil {
		p.hasUsage = true
		p.prompt, p.completion = j.Usage.PromptTokens, j.Usage.CompletionTokens
		var d struct {
			CachedTokens int `json:"cached_tokens"`
		}
		if json.Unmarshal(j.Usage.PromptTokensDetails, &d) == nil {
			p.cached = d.CachedTokens
		}
	}
	if len(j.Error) > 0 && string(j.Error) != "null" {
		p.hasError = true
		p.errMsg = errorMessage(j.Error)
	}
	if p.hasChoices && mayHaveOtherReasoning(data) {
		p.delta.other, p.message.other = otherKeys(data)
	}
	p.fill(&d.chunk)
	return nil
}

// otherKeys are choices[0].delta's and .message's other reasoning-like
// keys (msgParts.noteOther), read with encoding/json.
func otherKeys(data []byte) (delta, message []byte) {
	var j struct {
		Choices []struct {
			Delta   map[string]json.RawMessage `json:"delta"`
			Message map[string]json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	json.Unmarshal(data, &j) // a field of another shape has failed the chunk already
	if len(j.Choices) == 0 {
		return nil, nil
	}
	var d, m msgParts
	for k := range j.Choices[0].Delta {
		d.noteOther([]byte(k))
	}
	for k := range j.Choices[0].Message {
		m.noteOther([]byte(k))
	}
	return d.other, m.other
}

// mayHaveOtherReasoning is a cheap necessary test for otherKeys finding
// anything, so decodeSlow runs that second decode only when it might: the
// chunk holds "think", or "reason" outside the "finish_reason" key every
// chunk has, or a \u escape (a key may spell its letters so).
// Without it the slow path decoded every chunk twice (~2.4x its time).
func mayHaveOtherReasoning(data []byte) bool {
	if bytes.Contains(data, []byte(`\u`)) || containsFold(data, "think") {
		return true
	}
	for i := 0; ; {
		j := indexFold(data[i:], "reason")
		if j < 0 {
			return false
		}
		j += i
		if !(j >= 8 && string(data[j-8:j]) == `"finish_` && j+6 < len(data) && data[j+6] == '"') {
			return true
		}
		i = j + 1
	}
}

// containsFold reports whether b contains the lower-case ASCII word w in
// any ASCII case, without allocating (the hot path meets every key).
func containsFold(b []byte, w string) bool { return indexFold(b, w) >= 0 }

// indexFold is the index of the first w (lower-case ASCII) in b in any
// ASCII case, or -1.
func indexFold(b []byte, w string) int {
	for i := 0; i+len(w) <= len(b); i++ {
		// b[i]|0x20 is a letter in lower case: the cheap first-byte test
		// spares EqualFold at most positions.
		if b[i]|0x20 == w[0] && bytes.EqualFold(b[i:i+len(w)], []byte(w)) {
			return i
		}
	}
	return -1
}

func (m *jsonMsg) parts() msgParts {
	var p msgParts
	p.content, p.hasContent = strPart(m.Content)
	p.reasoningContent, p.hasReasoningContent = strPart(m.ReasoningContent)
	p.reasoning, p.hasReasoning = strPart(m.Reasoning)
	p.tool = toolPart(m.ToolCalls)
	return p
}

func strPart(s *string) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	return []byte(*s), true
}

// errorMessage reads an "error" value: a string is the message, an object's
// "message" string is; anything else has no message.
func errorMessage(raw json.RawMessage) []byte {
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
	case '{':
		var o struct {
			Message *string `json:"message"`
		}
		if json.Unmarshal(raw, &o) == nil && o.Message != nil {
			return []byte(*o.Message)
		}
	}
	return nil
}
