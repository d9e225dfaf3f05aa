package sim

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/engine/option"
)

// Tool calling as vLLM's chat endpoint serves it (protocol.py
// ChatCompletionRequest.check_tool_usage, serving_chat.py):
//
//   - tool_choice "none" (the default without tools) ignores the tools;
//   - a named function, or "required", works on any server: vLLM guides
//     decoding with the function's parameters schema (for "required", an
//     array of {"name", "parameters"} objects) and answers with
//     message.tool_calls, content "", finish_reason from the engine
//     ("stop");
//   - "auto" (the default with tools) needs --enable-auto-tool-choice and
//     --tool-call-parser; the model then calls a tool or answers in text,
//     and the parser finds the call (finish_reason "tool_calls", content
//     null). The engine calls one in AutoToolCallRate of such requests,
//     chosen per request by its text key.
//
// The answer's tokens are the call as the model writes it: the parser's
// wrapper (hermes' <tool_call> tags, the "name" key...) and the arguments.
// Only the arguments carry text; a streamed call sends the id and name in
// its first chunk and the arguments as they come, as vLLM's named-tool
// stream does.

// ToolCallParsers are vLLM's --tool-call-parser names
// (vllm/entrypoints/openai/tool_parsers/__init__.py).
var ToolCallParsers = []string{
	"deepseek_v3", "deepseek_v31", "deepseek_v32", "ernie45", "glm45", "granite-20b-fc", "granite",
	"hermes", "hunyuan_a13b", "internlm", "jamba", "kimi_k2", "llama3_json", "llama4_json",
	"llama4_pythonic", "longcat", "minimax_m2", "minimax", "mistral", "olmo3", "openai",
	"phi4_mini_json", "pythonic", "qwen3_coder", "qwen3_xml", "seed_oss", "step3", "xlam",
}

// DefaultAutoToolCallRate is --auto-tool-call-rate's default: an
// assumption (a chat model offered tools for a task calls one about as
// often as not); set it per workload.
const DefaultAutoToolCallRate = 0.5

// validateTools checks the tool-calling flags as vLLM's argument checks do.
func (o *Options) validateTools() error {
	if o.ToolCallParser != "" && !slices.Contains(ToolCallParsers, o.ToolCallParser) {
		return option.Errorf("ToolCallParser", o.ToolCallParser, "invalid tool call parser (choose from %s)", strings.Join(ToolCallParsers, ", "))
	}
	if o.EnableAutoToolChoice && o.ToolCallParser == "" {
		return option.Errorf("EnableAutoToolChoice", nil, "{EnableAutoToolChoice} requires {ToolCallParser} (one of %s)", strings.Join(ToolCallParsers, ", "))
	}
	if !(o.AutoToolCallRate >= 0 && o.AutoToolCallRate <= 1) {
		return option.Errorf("AutoToolCallRate", o.AutoToolCallRate, "want a share in [0, 1]")
	}
	return nil
}

// toolParam is one entry of tools.
type toolParam struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// toolChoice is tool_choice resolved: mode "none", "auto", "required" or
// "named" (with name).
type toolChoice struct {
	mode, name string
}

const toolUsage = "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`"

// parseToolChoice applies vLLM's check_tool_usage.
func (req *genRequest) parseToolChoice() (toolChoice, *reqError) {
	raw := bytes.TrimSpace(req.ToolChoice)
	if len(raw) == 0 || string(raw) == "null" {
		if len(req.Tools) > 0 {
			return toolChoice{mode: "auto"}, nil
		}
		return toolChoice{mode: "none"}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "none" {
			return toolChoice{mode: "none"}, nil
		}
		if req.Tools == nil {
			return toolChoice{}, invalidRequest("tool_choice", "When using `tool_choice`, `tools` must be set.")
		}
		switch s {
		case "auto":
			return toolChoice{mode: "auto"}, nil
		case "required":
			if len(req.Tools) == 0 {
				return toolChoice{mode: "none"}, nil // as OpenAI does
			}
			return toolChoice{mode: "required"}, nil
		}
		return toolChoice{}, invalidRequest("tool_choice", "Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.", s)
	}
	if req.Tools == nil {
		return toolChoice{}, invalidRequest("tool_choice", "When using `tool_choice`, `tools` must be set.")
	}
	var named struct {
		Function json.RawMessage `json:"function"`
	}
	if json.Unmarshal(raw, &named) != nil {
		return toolChoice{}, invalidRequest("tool_choice", "Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.", raw)
	}
	var fn map[string]any
	if json.Unmarshal(named.Function, &fn) != nil || fn == nil {
		return toolChoice{}, invalidRequest("tool_choice", "Invalid value for `function`: `%s` in `tool_choice`! %s", named.Function, toolUsage)
	}
	nameV, ok := fn["name"]
	if !ok {
		return toolChoice{}, invalidRequest("tool_choice", "Expected field `name` in `function` in `tool_choice`! %s", toolUsage)
	}
	name, _ := nameV.(string)
	if name == "" {
		return toolChoice{}, invalidRequest("tool_choice", "Invalid `name` in `function`: `%v` in `tool_choice`! %s", nameV, toolUsage)
	}
	if !slices.ContainsFunc(req.Tools, func(t toolParam) bool { return t.Function != nil && t.Function.Name == name }) {
		return toolChoice{}, invalidRequest("tool_choice", "The tool specified in `tool_choice` does not match any of the specified `tools`")
	}
	return toolChoice{mode: "named", name: name}, nil
}

// checkTools applies the request validators on tools and tool_choice.
func (req *genRequest) checkTools() *reqError {
	for i, t := range req.Tools {
		if t.Type != "" && t.Type != "function" {
			return invalidRequest("tools", "tools.%d.type: Input should be 'function'", i)
		}
		if t.Function == nil {
			return invalidRequest("tools", "tools.%d.function: Field required", i)
		}
		if t.Function.Name == "" {
			return invalidRequest("tools", "tools.%d.function.name: Field required", i)
		}
	}
	_, rerr := req.parseToolChoice()
	return rerr
}

// checkToolServing refuses "auto" on a server started without automatic
// tool choice, with vLLM's message.
func (e *Engine) checkToolServing(req *genRequest, chat bool) *reqError {
	if !chat {
		return nil // completions: tools are not among its fields
	}
	tc, rerr := req.parseToolChoice()
	if rerr == nil && tc.mode == "auto" && !e.opts.EnableAutoToolChoice {
		return badRequest("tool_choice", "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set")
	}
	return rerr
}

// toolCall is the call a request's answer makes.
type toolCall struct {
	id, name string
	auto     bool // found by the parser in free text (finish_reason "tool_calls")
}

// toolCallJSON is vLLM's ToolCall.
type toolCallJSON struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wrapper is the text a tool call's arguments sit in as the model writes
// them, before and after: parser's format for "auto", vLLM's guided array
// for "required", nothing for a named function.
func wrapper(mode, parser, name string) (string, string) {
	quoted, _ := json.Marshal(name)
	switch {
	case mode == "named":
		return "", ""
	case mode == "required":
		return `[{"name": ` + string(quoted) + `, "parameters": `, `}]`
	case parser == "hermes" || strings.HasPrefix(parser, "qwen"):
		return "<tool_call>\n{\"name\": " + string(quoted) + ", \"arguments\": ", "}\n</tool_call>"
	case parser == "mistral":
		return `[TOOL_CALLS][{"name": ` + string(quoted) + `, "arguments": `, `}]`
	case strings.HasPrefix(parser, "llama"):
		return `{"name": ` + string(quoted) + `, "parameters": `, `}`
	}
	return `{"name": ` + string(quoted) + `, "arguments": `, `}`
}

// appendToolChunk appends the chunk of a tool call's tokens [from, to):
// the first carries the call's id, type and name; later ones their part of
// the arguments. Tokens of the wrapper alone send nothing (false), as
// vLLM's parsers hold them back; the last chunk carries finish_reason.
func (c *chunker) appendToolChunk(b []byte, r *request, from, to int, finish string) ([]byte, bool) {
	hasArgs := false // checked before writing, so the arguments go straight into b
	for i := from; i < to && !hasArgs; i++ {
		hasArgs = r.piece(i) != ""
	}
	if !hasArgs && from > 0 && finish == "" {
		return b, false
	}
	b = append(b, c.head...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(r.index), 10)
	b = append(b, `,"delta":{`...)
	if from == 0 || hasArgs {
		b = append(b, `"tool_calls":[{`...)
		if from == 0 {
			b = append(b, `"id":"`...)
			b = appendJSONString(b, r.out.tool.id)
			b = append(b, `","type":"function",`...)
		}
		b = append(b, `"index":0,"function":{`...)
		if from == 0 {
			b = append(b, `"name":"`...)
			b = appendJSONString(b, r.out.tool.name)
			b = append(b, `",`...)
		}
		b = append(b, `"arguments":"`...)
		for i := from; i < to; i++ {
			b = appendJSONString(b, r.piece(i))
		}
		b = append(b, `"}}]`...)
	}
	b = append(b, `},"logprobs":null`...)
	return c.appendTail(b, r, finish), true
}
