package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
)

// Anthropic's Messages API as vLLM serves it (vllm/entrypoints/anthropic:
// protocol.py's AnthropicMessagesRequest, serving.py's conversion to and
// from chat, api_router.py's error translation):
//
//   - the body becomes a chat request: system (a string or text blocks) and
//     system messages first, joined; text blocks of a message joined; a
//     user's tool_result a "tool" message; thinking blocks dropped from
//     the prompt (vLLM passes them as the assistant's reasoning, which the
//     chat template does not render for earlier turns);
//     max_tokens is max_completion_tokens, stop_sequences stop;
//   - a streaming answer is message_start (with the first token, as vLLM
//     derives it from chat's role chunk), a thinking block for reasoning
//     (closed with a signature_delta), a text block for the answer,
//     content_block_stop, message_delta (stop_reason, usage), message_stop;
//     every event with its "event:" line; no [DONE];
//   - stop reasons: stop -> end_turn, length -> max_tokens, tool_calls ->
//     tool_use;
//   - errors the chat path finds are {"type":"error","error":{"type",
//     "message"}} with their status; a body that fails validation (no
//     model, no max_tokens) gets FastAPI's answer, as chat's does.
//
// With --api-key, guard takes an x-api-key header as the key too: Anthropic's
// clients send it so (whether vLLM's check reads it is not checked here).

// messagesRequest is the part of AnthropicMessagesRequest the engine reads.
// ignore_eos and min_tokens are not Anthropic's: vLLM drops them; the
// engine honours them so a benchmark gets exact lengths (docs/engine.md).
type messagesRequest struct {
	Model         *string         `json:"model"`
	Messages      []anthMessage   `json:"messages"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	Temperature   *float64        `json:"temperature"`
	IgnoreEOS     bool            `json:"ignore_eos"`
	MinTokens     int             `json:"min_tokens"`
	reasoningParams
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthBlock is a content block of a message or of system.
type anthBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"` // tool_result's: a string or text blocks
}

// anthText reads content: a string, or blocks whose text it joins; a
// user's tool_result blocks come back apart, as "tool" messages.
func anthText(raw json.RawMessage) (text string, tools []string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		err = json.Unmarshal(raw, &text)
		return text, nil, err
	}
	var blocks []anthBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, errors.New("Input should be a valid string or a list of content blocks")
	}
	var b []byte
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			b = append(b, bl.Text...)
		case "tool_result":
			t, _, err := anthText(bl.Content)
			if err != nil {
				return "", nil, err
			}
			tools = append(tools, t)
		}
	}
	return string(b), tools, nil
}

// chat translates the body into the chat request vLLM builds from it, or
// says what fails validation.
func (mr *messagesRequest) chat() (*genRequest, *reqError) {
	switch {
	case mr.Model == nil:
		return nil, invalidRequest("model", "Field required")
	case *mr.Model == "":
		return nil, invalidRequest("model", "Value error, Model is required")
	case mr.MaxTokens == nil:
		return nil, invalidRequest("max_tokens", "Field required")
	case *mr.MaxTokens <= 0:
		return nil, invalidRequest("max_tokens", "Value error, max_tokens must be positive")
	case mr.Messages == nil:
		return nil, invalidRequest("messages", "Field required")
	}
	system, _, err := anthText(mr.System)
	if err != nil {
		return nil, invalidRequest("system", "%v", err)
	}
	var msgs []chatMessage
	for i, m := range mr.Messages {
		t, tools, err := anthText(m.Content)
		if err != nil {
			return nil, invalidRequest("messages", "messages.%d.content: %v", i, err)
		}
		switch m.Role {
		case "system":
			system += t
			continue
		case "user", "ctx", "msg": // vLLM maps Claude Code's extra roles to user
			for _, tr := range tools {
				msgs = append(msgs, textMessage("tool", tr))
			}
			if t != "" || len(tools) == 0 {
				msgs = append(msgs, textMessage("user", t))
			}
		case "assistant":
			msgs = append(msgs, textMessage("assistant", t))
		default:
			return nil, invalidRequest("messages", "messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
	}
	if system != "" {
		msgs = append([]chatMessage{textMessage("system", system)}, msgs...)
	}
	req := &genRequest{Model: *mr.Model, Messages: msgs, MaxCompletionTokens: mr.MaxTokens, Stream: mr.Stream,
		MinTokens: mr.MinTokens, IgnoreEOS: mr.IgnoreEOS, Temperature: mr.Temperature, reasoningParams: mr.reasoningParams}
	if len(mr.StopSequences) > 0 {
		req.Stop, _ = json.Marshal(mr.StopSequences)
	}
	return req, nil
}

// textMessage is a chat message whose content is text.
func textMessage(role, text string) chatMessage {
	c, _ := json.Marshal(text)
	return chatMessage{Role: role, Content: c}
}

// writeAnthropicError is api_router.py's translate_error_response.
func writeAnthropicError(w http.ResponseWriter, rerr *reqError) {
	writeJSON(w, rerr.status, map[string]any{"type": "error",
		"error": map[string]string{"type": cmp.Or(rerr.typ, errorType(rerr.status)), "message": rerr.msg}})
}

// handleMessages serves POST /v1/messages.
func (e *Engine) handleMessages(w http.ResponseWriter, hr *http.Request) {
	if !e.requestFaults(w) {
		return
	}
	mr := new(messagesRequest)
	rerr := decodeJSON(w, hr, mr)
	var req *genRequest
	if rerr == nil {
		req, rerr = mr.chat()
	}
	if rerr != nil {
		rerr.write(w) // FastAPI's validation answer, before vLLM's handler runs
		return
	}
	g, rerr := e.generation(hr, req, true)
	if rerr != nil {
		writeAnthropicError(w, rerr)
		return
	}
	if !e.admit(hr, g) {
		return
	}
	r := g.rs[0]
	if req.Stream {
		e.apiStream(w, hr, r, &messagesFramer{id: g.id, model: e.served, prompt: r.usagePrompt, sig: signature(r)})
		return
	}
	if !e.awaitDone(hr, g.rs) {
		return
	}
	writeJSON(w, http.StatusOK, messagesAnswer(g.id, e.served, r))
	e.logRequestEnd(r, false)
	e.requestFinished(hr)
}

// signature is a thinking block's signature: vLLM's is a random uuid hex;
// this one is r's, so answers repeat.
func signature(r *request) string { return hex32(r.key^0x5167, splitmix64(r.key)) }

// anthropicStop is vLLM's stop_reason_map.
func anthropicStop(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls":
		return "tool_use"
	}
	return "end_turn"
}

// messagesResponse is AnthropicMessagesResponse as vLLM dumps it
// (exclude_none: no stop_sequence).
type messagesResponse struct {
	ID         string        `json:"id"`
	Type       string        `json:"type"`
	Role       string        `json:"role"`
	Content    []anthOutput  `json:"content"`
	Model      string        `json:"model"`
	StopReason string        `json:"stop_reason"`
	Usage      messagesUsage `json:"usage"`
}

type anthOutput struct {
	Type      string          `json:"type"`
	Text      json.RawMessage `json:"text,omitempty"`
	Thinking  json.RawMessage `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
}

type messagesUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// quoted is escaped (appendSplit's) as a JSON string value.
func quoted(escaped []byte) json.RawMessage {
	return append(append([]byte{'"'}, escaped...), '"')
}

// messagesAnswer is r's whole answer (messages_full_converter): the
// thinking block, then the text block, each only when not empty.
func messagesAnswer(id, model string, r *request) *messagesResponse {
	reason, answer := apiTexts(r)
	m := &messagesResponse{ID: id, Type: "message", Role: "assistant", Content: []anthOutput{}, Model: model,
		StopReason: anthropicStop(r.finishReason()), Usage: messagesUsage{r.usagePrompt, r.target}}
	if len(reason) > 0 {
		m.Content = append(m.Content, anthOutput{Type: "thinking", Thinking: quoted(reason), Signature: signature(r)})
	}
	if len(answer) > 0 {
		m.Content = append(m.Content, anthOutput{Type: "text", Text: quoted(answer)})
	}
	return m
}

// messagesFramer writes one Messages stream's events, in vLLM's field
// order (pydantic's exclude_unset dump of AnthropicStreamEvent).
type messagesFramer struct {
	id, model, sig string
	prompt         int
	block          string // the open block's type; "" none
	index          int    // the next block's index
}

func (f *messagesFramer) start(b []byte) []byte { return b }

func (f *messagesFramer) first(b []byte) []byte {
	b = sseEvent(b, "message_start")
	b = append(b, `{"type":"message_start","message":{"id":`...)
	b = appendQuoted(b, f.id)
	b = append(b, `,"type":"message","role":"assistant","content":[],"model":`...)
	b = appendQuoted(b, f.model)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = appendInt(b, f.prompt)
	return endEvent(append(b, `,"output_tokens":0}}}`...))
}

func (f *messagesFramer) reasoning(b, text []byte) []byte {
	return f.delta(f.open(b, "thinking"), "thinking_delta", "thinking", text)
}

func (f *messagesFramer) text(b, text []byte) []byte {
	return f.delta(f.open(b, "text"), "text_delta", "text", text)
}

// open closes the open block unless it is typ's and starts one of typ.
func (f *messagesFramer) open(b []byte, typ string) []byte {
	if f.block == typ {
		return b
	}
	b = f.stop(b)
	f.block = typ
	b = sseEvent(b, "content_block_start")
	b = append(b, `{"type":"content_block_start","content_block":{"type":"`+typ+`","`+typ+`":""},"index":`...)
	return endEvent(append(appendInt(b, f.index), '}'))
}

// delta appends a content_block_delta of the open block.
func (f *messagesFramer) delta(b []byte, typ, field string, text []byte) []byte {
	b = sseEvent(b, "content_block_delta")
	b = append(b, `{"type":"content_block_delta","delta":{"type":"`+typ+`","`+field+`":"`...)
	b = append(b, text...)
	b = append(b, `"},"index":`...)
	return endEvent(append(appendInt(b, f.index), '}'))
}

// stop closes the open block: a thinking block gets its signature first.
func (f *messagesFramer) stop(b []byte) []byte {
	if f.block == "" {
		return b
	}
	if f.block == "thinking" {
		b = sseEvent(b, "content_block_delta")
		b = append(b, `{"type":"content_block_delta","delta":{"type":"signature_delta","signature":`...)
		b = appendQuoted(b, f.sig)
		b = append(b, `},"index":`...)
		b = endEvent(append(appendInt(b, f.index), '}'))
	}
	b = sseEvent(b, "content_block_stop")
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = endEvent(append(appendInt(b, f.index), '}'))
	f.block = ""
	f.index++
	return b
}

func (f *messagesFramer) closing(b []byte, r *request) []byte {
	b = f.stop(b)
	b = sseEvent(b, "message_delta")
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":"`+anthropicStop(r.finishReason())+`"},"usage":{"input_tokens":`...)
	b = appendInt(b, r.usagePrompt)
	b = append(b, `,"output_tokens":`...)
	b = endEvent(append(appendInt(b, r.target), "}}"...))
	b = sseEvent(b, "message_stop")
	return endEvent(append(b, `{"type":"message_stop"}`...))
}

// countTokensRequest is AnthropicCountTokensRequest's part the engine reads.
type countTokensRequest struct {
	Model    *string         `json:"model"`
	Messages []anthMessage   `json:"messages"`
	System   json.RawMessage `json:"system"`
}

// handleCountTokens serves POST /v1/messages/count_tokens: the prompt's
// tokens as the messages request would have them.
func (e *Engine) handleCountTokens(w http.ResponseWriter, hr *http.Request) {
	cr := new(countTokensRequest)
	rerr := decodeJSON(w, hr, cr)
	var req *genRequest
	if rerr == nil {
		one := 1
		req, rerr = (&messagesRequest{Model: cr.Model, Messages: cr.Messages, System: cr.System, MaxTokens: &one}).chat()
	}
	if rerr != nil {
		rerr.write(w)
		return
	}
	var ids []uint32
	if rerr = e.checkModel(req.Model); rerr == nil {
		ids, _, rerr = e.chatIDs(req.Messages, req.chatOptions)
	}
	if rerr != nil {
		writeAnthropicError(w, rerr)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(ids),
		"context_management": map[string]int{"original_input_tokens": len(ids)}})
}
