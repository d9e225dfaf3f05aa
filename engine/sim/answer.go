package sim

import (
	"encoding/json"
	"strings"
	"time"
)

// answerPlan is what a request's answers must be beyond plain text, fixed
// once per request: structured output, or a tool call.
type answerPlan struct {
	format string     // "json_object", "json_schema" or "" (text)
	schema any        // json_schema's schema, decoded
	tools  toolChoice // mode "none" without tools
	params []any      // each tool's parameters schema (nil: {}), by tools' order
	names  []string
}

// planAnswer resolves response_format and the tools, and refuses a schema
// no value satisfies, naming the part (vLLM refuses a schema its grammar
// backend cannot compile with a 400).
func (e *Engine) planAnswer(req *genRequest, chat bool) (*answerPlan, *reqError) {
	p := &answerPlan{tools: toolChoice{mode: "none"}}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "text" {
		p.format = rf.Type
		if rf.Type == "json_schema" {
			if len(rf.JSONSchema.Schema) == 0 {
				p.schema = true
			} else if err := json.Unmarshal(rf.JSONSchema.Schema, &p.schema); err != nil {
				return nil, badRequest("response_format", "response_format.json_schema.schema: %v", err)
			}
			if _, err := jsonForSchema(p.schema, 0); err != nil {
				return nil, badRequest("response_format", "response_format.json_schema.schema: %v", err)
			}
		}
	}
	if !chat {
		return p, nil
	}
	p.tools, _ = req.parseToolChoice() // checked by checkParams
	if p.tools.mode == "none" {
		return p, nil
	}
	for i, t := range req.Tools {
		var schema any = map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.Function.Parameters) > 0 && string(t.Function.Parameters) != "null" {
			if err := json.Unmarshal(t.Function.Parameters, &schema); err != nil {
				return nil, badRequest("tools", "tools.%d.function.parameters: %v", i, err)
			}
		}
		if _, err := jsonForSchema(schema, 0); err != nil && (p.tools.mode != "named" || p.tools.name == t.Function.Name) {
			return nil, badRequest("tools", "tools.%d.function.parameters: %v", i, err)
		}
		p.params = append(p.params, schema)
		p.names = append(p.names, t.Function.Name)
	}
	return p, nil
}

// shape fixes r's answer beyond its length: a tool call, structured
// output, stop strings and tokens, echo.
func (e *Engine) shape(r *request, req *genRequest, p *answerPlan, in promptIn) {
	switch {
	case r.thinking.reasons():
		// A thinking request's layout (reasoning.go) is its own: stop,
		// structured output and tools do not apply to it yet.
	case p.tools.mode != "none" && e.callsTool(r, p):
		e.toolAnswer(r, req, p)
	case p.format == "json_object":
		e.jsonAnswer(r, req, jsonObjectText(r.key, r.target))
	case p.format == "json_schema":
		text, _ := jsonForSchema(p.schema, r.key) // satisfiable: planAnswer checked
		e.jsonAnswer(r, req, text)
	default:
		e.applyStops(r, req.sampling(), req.MinTokens)
	}
	if echo := e.echoPrefix(req, in); echo != "" {
		if r.out == nil {
			r.out = &answerText{}
		}
		r.out.prefix = echo
	}
}

// echoPrefix is what echo puts before the answer: the prompt
// (completions), or the last message's content when it is the
// assistant's (chat, as vLLM does: the answer continues it).
func (e *Engine) echoPrefix(req *genRequest, in promptIn) string {
	if !req.Echo {
		return ""
	}
	if len(req.Messages) == 0 {
		return e.echoText(in)
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "assistant" {
		return ""
	}
	s, _ := last.text() // checked by chatIDs
	return s
}

// callsTool reports whether r's answer is a tool call: always when the
// request forces one, in AutoToolCallRate of "auto" requests.
func (e *Engine) callsTool(r *request, p *answerPlan) bool {
	if p.tools.mode != "auto" {
		return true
	}
	return unit(splitmix64(r.key^0x746f6f6c)) < e.opts.AutoToolCallRate
}

// toolAnswer makes r's answer a call of the named tool, or of one drawn
// by r's key.
func (e *Engine) toolAnswer(r *request, req *genRequest, p *answerPlan) {
	i := int(splitmix64(r.key^0x6e616d65) % uint64(len(p.names)))
	for k, n := range p.names {
		if p.tools.mode == "named" && n == p.tools.name {
			i = k
		}
	}
	args, _ := jsonForSchema(p.params[i], r.key)
	before, after := wrapper(p.tools.mode, e.opts.ToolCallParser, p.names[i])
	pieces := make([]string, len(e.tok.Encode(before)), len(before)+len(args)+len(after))
	pieces = e.appendPieces(pieces, args)
	for range e.tok.Encode(after) {
		pieces = append(pieces, "")
	}
	e.fit(r, req, pieces)
	id := hashString(r.key, r.id) // unique per request, as vLLM's random ids are
	r.out.tool = &toolCall{id: "chatcmpl-tool-" + hex32(id, splitmix64(id)), name: p.names[i],
		auto: p.tools.mode == "auto"}
	r.out.guided = p.tools.mode != "auto" // "auto" samples freely; the parser reads the text
}

// jsonAnswer makes text r's answer, guided.
func (e *Engine) jsonAnswer(r *request, req *genRequest, text string) {
	e.fit(r, req, e.appendPieces(nil, text))
	r.out.guided = true
}

// appendPieces appends text's tokens' texts, as the served model's
// tokenizer cuts it.
func (e *Engine) appendPieces(pieces []string, text string) []string {
	for _, id := range e.tok.Encode(text) {
		s, _ := e.tok.Decode([]uint32{id})
		pieces = append(pieces, s)
	}
	return pieces
}

// fit makes pieces (and the end-of-turn token) r's answer, cut at
// max_tokens ("length") or, where ignore_eos or min_tokens ask for more,
// followed by end-of-turn tokens, which have no text (the grammar allows
// nothing else once the value is complete), so that the length is exact.
func (e *Engine) fit(r *request, req *genRequest, pieces []string) {
	n := len(pieces) + 1 // the end-of-turn token
	natural := "stop"
	switch {
	case n > r.maxTokens:
		n, natural = r.maxTokens, "length"
	case req.IgnoreEOS:
		n, natural = r.maxTokens, "length"
	case req.MinTokens > n:
		n = req.MinTokens
	}
	out := &answerText{pieces: make([]string, n)}
	copy(out.pieces, pieces)
	r.out = out
	r.target, r.natural = n, natural
	if r.emitAt != nil {
		r.emitAt = make([]int64, n)
	}
}

// finishReason is r's finish_reason: "tool_calls" for a call the parser
// found, else how it ended.
func (r *request) finishReason() string {
	if r.out != nil && r.out.tool != nil && r.out.tool.auto {
		return "tool_calls"
	}
	return r.natural
}

// answerChoice is choice i of a non-streaming answer: r's text (or tool
// call), finish and stop reasons, and logprobs.
func (e *Engine) answerChoice(i int, r *request, lp *logprober, chat bool) completionChoice {
	var text strings.Builder
	if r.out != nil {
		text.WriteString(r.out.prefix)
	}
	for j := 0; j < r.target; j++ {
		text.WriteString(r.piece(j))
	}
	choice := completionChoice{Index: i, FinishReason: r.finishReason(), StopReason: r.stopReasonJSON()}
	tool := r.out != nil && r.out.tool != nil
	if lp != nil && !tool {
		choice.Logprobs, _ = lp.appendLP(nil, r, 0, r.target, 0)
	}
	s := text.String()
	if !chat {
		choice.Text = &s
		return choice
	}
	m := &completionMessage{Role: "assistant", Content: &s, ToolCalls: []toolCallJSON{}}
	if tool {
		tc := toolCallJSON{ID: r.out.tool.id, Type: "function"}
		tc.Function.Name, tc.Function.Arguments = r.out.tool.name, s
		m.ToolCalls = []toolCallJSON{tc}
		empty := ""
		m.Content = &empty // a forced call: vLLM's content ""
		if r.out.tool.auto {
			m.Content = nil // the parser found no text around the call
		}
	}
	e.splitMessage(m, r)
	choice.Message = m
	return choice
}

// guidedCost is the step time the batch's structured requests add (see
// guidedMaskCost).
func (s *scheduler) guidedCost() time.Duration {
	var d time.Duration
	for _, it := range s.batch {
		if it.r.out != nil && it.r.out.guided {
			d += guidedMaskCost
		}
	}
	return d
}
