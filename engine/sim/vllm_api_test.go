package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// The vLLM request parameters beyond length, each answer (whole or every
// stream chunk) held to OpenAI's spec by conform.

// choiceOut is one choice of an answer, whole or put together from chunks.
type choiceOut struct {
	Text       string
	Finish     string
	StopReason any
	ToolCalls  []toolCallOut
	NullText   bool // chat content null
}

type toolCallOut struct {
	ID, Type, Name, Arguments string
}

// reply is an answer put together: its choices by index and usage.
type reply struct {
	choices    map[int]*choiceOut
	prompt     int
	completion int
	raw        []string
}

// call posts body, wants 200, checks each payload against OpenAI's spec
// and puts the answer together.
func call(t *testing.T, e *sim.Engine, chat bool, body map[string]any) reply {
	t.Helper()
	path, whole, part := "/v1/completions", specCompletion, specCompletionC
	if chat {
		path, whole, part = "/v1/chat/completions", specChat, specChatChunk
	}
	resp := post(t, e, path, body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s %v: %s %s", path, body, resp.Status, b)
	}
	var payloads []string
	kind := whole
	if body["stream"] == true {
		ev := events(t, resp.Body)
		if len(ev) == 0 || ev[len(ev)-1] != "[DONE]" {
			t.Fatalf("stream does not end with [DONE]: %q", ev)
		}
		payloads, kind = ev[:len(ev)-1], part
	} else {
		b, _ := io.ReadAll(resp.Body)
		payloads = []string{string(b)}
	}
	r := reply{choices: map[int]*choiceOut{}, raw: payloads}
	for i, p := range payloads {
		conform(t, fmt.Sprintf("payload %d", i), p, kind)
		r.add(t, p)
	}
	return r
}

func (r *reply) add(t *testing.T, raw string) {
	t.Helper()
	var v struct {
		Choices []struct {
			Index        int
			Text         *string
			FinishReason *string `json:"finish_reason"`
			StopReason   any     `json:"stop_reason"`
			Message      *delta
			Delta        *delta
		}
		Usage *struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if v.Usage != nil {
		r.prompt, r.completion = v.Usage.Prompt, v.Usage.Completion
	}
	for _, c := range v.Choices {
		out := r.choices[c.Index]
		if out == nil {
			out = &choiceOut{}
			r.choices[c.Index] = out
		}
		if c.Text != nil {
			out.Text += *c.Text
		}
		if c.FinishReason != nil {
			out.Finish, out.StopReason = *c.FinishReason, c.StopReason
		}
		d := c.Message
		if d == nil {
			d = c.Delta
		}
		if d == nil {
			continue
		}
		if d.Content != nil {
			out.Text += *d.Content
		} else if c.Message != nil {
			out.NullText = true
		}
		for _, tc := range d.ToolCalls {
			for len(out.ToolCalls) <= tc.Index {
				out.ToolCalls = append(out.ToolCalls, toolCallOut{})
			}
			o := &out.ToolCalls[tc.Index]
			o.ID += tc.ID
			o.Type += tc.Type
			o.Name += tc.Function.Name
			o.Arguments += tc.Function.Arguments
		}
	}
}

type delta struct {
	Content   *string
	ToolCalls []struct {
		Index    int
		ID       string
		Type     string
		Function struct{ Name, Arguments string }
	} `json:"tool_calls"`
}

// refused posts body and wants a 400 whose error (held to OpenAI's spec)
// names param and says msg; it returns the error's type.
func refused(t *testing.T, e *sim.Engine, chat bool, body map[string]any, param, msg string) string {
	t.Helper()
	path := "/v1/completions"
	if chat {
		path = "/v1/chat/completions"
	}
	resp := post(t, e, path, body)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("%v: %s %s, want 400", body, resp.Status, b)
		return ""
	}
	conform(t, "error", string(b), specError)
	var v struct {
		Error struct{ Message, Param, Type string }
	}
	json.Unmarshal(b, &v)
	if v.Error.Param != param || !strings.Contains(v.Error.Message, msg) {
		t.Errorf("%v: error %s, want param %q and a message with %q", body, b, param, msg)
	}
	if strings.Contains(v.Error.Message, "Go ") || strings.Contains(v.Error.Message, "sim.") {
		t.Errorf("error message names Go types: %s", b)
	}
	return v.Error.Type
}

// TestStop: stop strings and stop token ids end the answer as vLLM's do:
// at the first stop string's start (or after it, with
// include_stop_str_in_output), finish_reason "stop" and stop_reason the
// string or id, streamed and not; completion_tokens counts the token that
// completed the stop.
func TestStop(t *testing.T) {
	e := simtest.Start(t, fast)
	for _, chat := range []bool{true, false} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("chat=%v/stream=%v", chat, stream), func(t *testing.T) {
				plain := call(t, e, chat, body(chat, "Tell me about caches.", 40, stream, "ignore_eos", true)).choices[0].Text
				words := strings.Fields(plain)
				stop := words[12] // a word the answer reaches; its first occurrence may be earlier
				at := strings.Index(plain, stop)
				n := len(strings.Fields(plain[:at+len(stop)])) // tokens up to the one completing the stop
				got := call(t, e, chat, body(chat, "Tell me about caches.", 40, stream, "ignore_eos", true, "stop", []string{"zzz", stop}))
				c := got.choices[0]
				if c.Text != plain[:at] || c.Finish != "stop" || c.StopReason != stop || got.completion != n {
					t.Errorf("stop %q: text %q finish %q stop_reason %v, %d tokens; want %q stop %q, %d tokens", stop, c.Text, c.Finish, c.StopReason, got.completion, plain[:at], stop, n)
				}
				incl := call(t, e, chat, body(chat, "Tell me about caches.", 40, stream, "ignore_eos", true, "stop", stop, "include_stop_str_in_output", true))
				if c := incl.choices[0]; c.Text != plain[:at+len(stop)] {
					t.Errorf("include_stop_str_in_output: %q, want %q", c.Text, plain[:at+len(stop)])
				}
				// The token id of the fifth word: the answer ends before it.
				id := tokenID(t, e, " "+words[4])
				at = strings.Index(plain, " "+words[4])
				n = len(strings.Fields(plain[:at])) + 1
				got = call(t, e, chat, body(chat, "Tell me about caches.", 40, stream, "ignore_eos", true, "stop_token_ids", []int{id}))
				c = got.choices[0]
				if c.Text != plain[:at] || c.Finish != "stop" || c.StopReason != float64(id) || got.completion != n {
					t.Errorf("stop_token_ids [%d]: text %q finish %q stop_reason %v, %d tokens; want %q, %d tokens", id, c.Text, c.Finish, c.StopReason, got.completion, plain[:at], n)
				}
				// min_tokens holds stops back.
				got = call(t, e, chat, body(chat, "Tell me about caches.", 40, stream, "ignore_eos", true, "stop", stop, "min_tokens", 40))
				if got.completion != 40 || got.choices[0].Text != plain {
					t.Errorf("min_tokens 40 with a stop: %d tokens %q, want the whole answer", got.completion, got.choices[0].Text)
				}
			})
		}
	}
}

// tokenID is the single token id of word for the served model.
func tokenID(t *testing.T, e *sim.Engine, word string) int {
	t.Helper()
	resp := post(t, e, "/tokenize", map[string]any{"prompt": word, "add_special_tokens": false})
	defer resp.Body.Close()
	var v struct{ Tokens []int }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Tokens) != 1 {
		t.Fatalf("tokenize %q: %v %v", word, v.Tokens, err)
	}
	return v.Tokens[0]
}

// TestSeed: a seed makes the answer the same each time and another seed
// another answer.
func TestSeed(t *testing.T) {
	e := simtest.Start(t, fast)
	ask := func(seed int) string {
		return call(t, e, true, body(true, "Pick a colour.", 20, false, "ignore_eos", true, "seed", seed)).choices[0].Text
	}
	a, b, c := ask(1), ask(1), ask(2)
	if a != b {
		t.Errorf("seed 1 twice: %q and %q", a, b)
	}
	if a == c {
		t.Errorf("seeds 1 and 2 give the same text %q", a)
	}
}

// TestListPromptsAndEcho: a list of prompts on /v1/completions gets one
// choice per prompt in order, each the answer that prompt gets alone,
// usage summed; echo puts the prompt before the answer.
func TestListPromptsAndEcho(t *testing.T) {
	e := simtest.Start(t, fast)
	prompts := []string{"One fish", "two fish", "red fish blue fish"}
	for _, stream := range []bool{false, true} {
		got := call(t, e, false, body(false, "", 5, stream, "prompt", prompts, "ignore_eos", true))
		if len(got.choices) != len(prompts) {
			t.Fatalf("stream=%v: %d choices for %d prompts", stream, len(got.choices), len(prompts))
		}
		prompt := 0
		for i, p := range prompts {
			alone := call(t, e, false, body(false, p, 5, false, "ignore_eos", true))
			prompt += alone.prompt
			if got.choices[i].Text != alone.choices[0].Text {
				t.Errorf("stream=%v: choice %d %q, but prompt %q alone gets %q", stream, i, got.choices[i].Text, p, alone.choices[0].Text)
			}
		}
		if got.prompt != prompt || got.completion != 5*len(prompts) {
			t.Errorf("stream=%v: usage %d prompt / %d completion tokens, want %d / %d", stream, got.prompt, got.completion, prompt, 5*len(prompts))
		}
		msgs := []map[string]string{{"role": "user", "content": "Go on."}, {"role": "assistant", "content": "Once upon"}}
		chatEcho := call(t, e, true, body(true, "", 5, stream, "messages", msgs, "echo", true, "continue_final_message", true, "add_generation_prompt", false, "ignore_eos", true))
		chatAlone := call(t, e, true, body(true, "", 5, stream, "messages", msgs, "continue_final_message", true, "add_generation_prompt", false, "ignore_eos", true))
		if chatEcho.choices[0].Text != "Once upon"+chatAlone.choices[0].Text {
			t.Errorf("stream=%v: chat echo gives %q, want the assistant's message then %q", stream, chatEcho.choices[0].Text, chatAlone.choices[0].Text)
		}
		echo := call(t, e, false, body(false, "Echo me", 5, stream, "echo", true, "ignore_eos", true))
		alone := call(t, e, false, body(false, "Echo me", 5, stream, "ignore_eos", true))
		if echo.choices[0].Text != "Echo me"+alone.choices[0].Text || echo.completion != 5 {
			t.Errorf("stream=%v: echo gives %q (%d tokens), want the prompt then %q", stream, echo.choices[0].Text, echo.completion, alone.choices[0].Text)
		}
	}
}

// weatherTool is a function tool with a parameters schema.
var weatherTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "get_weather", "description": "The weather in a city",
	"parameters": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city": map[string]any{"type": "string", "minLength": 2},
			"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			"days": map[string]any{"type": "integer", "minimum": 1, "maximum": 7},
		},
		"required":             []string{"city", "unit"},
		"additionalProperties": false,
	},
}}

var timeTool = map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}

// validJSON fails t unless text parses as JSON valid for schema.
func validJSON(t *testing.T, what, text string, schema any) {
	t.Helper()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", deepCopy(schema)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Errorf("%s %q does not parse: %v", what, text, err)
		return
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s %q breaks its schema: %v", what, text, err)
	}
}

// TestTools: without --enable-auto-tool-choice "auto" is refused with
// vLLM's message, while a named function and "required" are served with a
// tool call whose arguments are valid for the function's parameters;
// tool_choice without tools is refused.
func TestTools(t *testing.T) {
	e := simtest.Start(t, fast)
	tools := []any{weatherTool, timeTool}
	// The serving layer's refusal (BadRequestError), then pydantic's (Bad Request).
	if typ := refused(t, e, true, body(true, "Weather?", 30, false, "tools", tools), "tool_choice", `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`); typ != "BadRequestError" {
		t.Errorf("auto refused with type %q, want vLLM's BadRequestError", typ)
	}
	refused(t, e, true, body(true, "Weather?", 30, false, "tool_choice", "required"), "tool_choice", "When using `tool_choice`, `tools` must be set.")
	refused(t, e, true, body(true, "Weather?", 30, false, "tools", tools, "tool_choice", map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}), "tool_choice", "does not match any of the specified `tools`")
	refused(t, e, true, body(true, "Weather?", 30, false, "tools", tools, "tool_choice", "sometimes"), "tool_choice", "Invalid value for `tool_choice`")
	params := weatherTool["function"].(map[string]any)["parameters"]
	for _, stream := range []bool{false, true} {
		named := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
		for _, choice := range []any{named, "required"} {
			for i := range 3 { // seeded per prompt: several calls
				got := call(t, e, true, body(true, fmt.Sprintf("Weather %d?", i), 200, stream, "tools", tools, "tool_choice", choice))
				c := got.choices[0]
				if len(c.ToolCalls) != 1 || c.Finish != "stop" || c.Text != "" {
					t.Fatalf("stream=%v tool_choice %v: %+v, want one call, content \"\", finish stop", stream, choice, c)
				}
				tc := c.ToolCalls[0]
				if !strings.HasPrefix(tc.ID, "chatcmpl-tool-") || tc.Type != "function" {
					t.Errorf("call %+v: id and type not vLLM's", tc)
				}
				switch tc.Name {
				case "get_weather":
					validJSON(t, "arguments", tc.Arguments, params)
				case "get_time":
					validJSON(t, "arguments", tc.Arguments, map[string]any{"type": "object"})
				default:
					t.Errorf("called %q", tc.Name)
				}
				if choice != "required" && tc.Name != "get_weather" {
					t.Errorf("named get_weather, called %q", tc.Name)
				}
			}
		}
	}
}

// TestAutoToolChoice: with --enable-auto-tool-choice, "auto" calls a tool
// in --auto-tool-call-rate of the answers (finish_reason "tool_calls",
// content null) and answers in text otherwise.
func TestAutoToolChoice(t *testing.T) {
	for _, rate := range []float64{0, 1, 0.5} {
		e := simtest.Start(t, func(o *sim.Options) {
			fast(o)
			o.EnableAutoToolChoice, o.ToolCallParser, o.AutoToolCallRate = true, "hermes", rate
		})
		calls := 0
		const n = 24
		for i := range n {
			stream := i%2 == 1
			got := call(t, e, true, body(true, fmt.Sprintf("Question %d", i), 100, stream, "tools", []any{weatherTool}))
			c := got.choices[0]
			if len(c.ToolCalls) == 0 {
				if c.Finish == "tool_calls" {
					t.Errorf("rate %g: finish tool_calls without a call", rate)
				}
				continue
			}
			calls++
			if c.Finish != "tool_calls" || (!stream && !c.NullText) {
				t.Errorf("rate %g: auto call %+v, want finish tool_calls and content null", rate, c)
			}
			validJSON(t, "arguments", c.ToolCalls[0].Arguments, weatherTool["function"].(map[string]any)["parameters"])
		}
		switch {
		case rate == 0 && calls != 0, rate == 1 && calls != n, rate == 0.5 && (calls < n/4 || calls > 3*n/4):
			t.Errorf("rate %g: %d calls of %d", rate, calls, n)
		}
	}
}

// TestResponseFormat: json_object and json_schema answers parse (and keep
// the schema), streamed and not, with exact lengths where ignore_eos asks;
// a schema no value satisfies is refused naming the part.
func TestResponseFormat(t *testing.T) {
	e := simtest.Start(t, fast)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":   map[string]any{"type": "string", "maxLength": 20},
			"age":    map[string]any{"type": "integer", "minimum": 18, "maximum": 99},
			"tags":   map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/tag"}, "minItems": 2, "maxItems": 4},
			"status": map[string]any{"anyOf": []any{map[string]any{"type": "null"}, map[string]any{"enum": []string{"a", "b"}}}},
		},
		"required": []string{"name", "age", "tags"},
		"$defs":    map[string]any{"tag": map[string]any{"type": "string", "enum": []string{"x", "y", "z"}}},
	}
	jsonSchema := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "schema": schema}}
	for _, chat := range []bool{true, false} {
		for _, stream := range []bool{false, true} {
			for i := range 3 {
				p := fmt.Sprintf("Describe someone, %d.", i)
				obj := call(t, e, chat, body(chat, p, 200, stream, "response_format", map[string]any{"type": "json_object"}))
				validJSON(t, "json_object", obj.choices[0].Text, map[string]any{"type": "object"})
				got := call(t, e, chat, body(chat, p, 200, stream, "response_format", jsonSchema))
				validJSON(t, "json_schema", got.choices[0].Text, schema)
				if got.choices[0].Finish != "stop" {
					t.Errorf("json_schema answer finished %q", got.choices[0].Finish)
				}
			}
			lp := []any{"logprobs", 2}
			if chat {
				lp = []any{"logprobs", true}
			}
			if got := call(t, e, chat, body(chat, "x", 8, stream, append(lp, "response_format", jsonSchema)...)); strings.Contains(strings.Join(got.raw, ""), `"logprobs":{`) {
				t.Errorf("a structured answer carries made-up logprobs: %s", got.raw)
			}
			exact := call(t, e, chat, body(chat, "x", 64, stream, "response_format", jsonSchema, "ignore_eos", true))
			if exact.completion != 64 {
				t.Errorf("ignore_eos max_tokens 64: %d tokens", exact.completion)
			}
			validJSON(t, "json_schema with ignore_eos", exact.choices[0].Text, schema)
		}
	}
	for _, c := range []struct {
		schema map[string]any
		part   string
	}{
		{map[string]any{"type": "object", "properties": map[string]any{"age": map[string]any{"type": "integer", "minimum": 10, "maximum": 5}}, "required": []string{"age"}}, "properties.age.minimum"},
		{map[string]any{"type": "object", "properties": map[string]any{"kind": map[string]any{"enum": []string{}}}, "required": []string{"kind"}}, "properties.kind.enum"},
		{map[string]any{"type": "array", "minItems": 5, "maxItems": 2}, "minItems"},
	} {
		rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "bad", "schema": c.schema}}
		refused(t, e, true, body(true, "x", 20, false, "response_format", rf), "response_format", c.part)
	}
}

// TestRequestValidation: vLLM's request validators, each a 400 naming the
// field in pydantic's words, not Go's.
func TestRequestValidation(t *testing.T) {
	e := simtest.Start(t, fast)
	so := map[string]any{"include_usage": true}
	if typ := refused(t, e, true, body(true, "x", 5, false, "stream_options", so), "stream_options", "Stream options can only be defined when `stream=True`."); typ != "Bad Request" {
		t.Errorf("a pydantic validation error has type %q, want vLLM's validation handler's Bad Request", typ)
	}
	refused(t, e, false, body(false, "x", 5, false, "stream_options", so), "stream_options", "Stream options can only be defined when `stream=True`.")
	refused(t, e, true, map[string]any{"messages": "hello", "max_tokens": 5}, "messages", "messages: Input should be a valid list")
	refused(t, e, true, map[string]any{"messages": []any{map[string]any{"role": 3}}, "max_tokens": 5}, "messages.role", "Input should be a valid string")
	refused(t, e, true, body(true, "x", 5, false, "max_tokens", "many"), "max_tokens", "Input should be a valid integer")
	refused(t, e, true, body(true, "x", 5, false, "stop", 7), "stop", "stop: Input should be")
	// An empty stream_options is falsy for vLLM's check: served.
	call(t, e, true, body(true, "x", 5, false, "stream_options", map[string]any{}))
}

// TestStreamUsageHasNoNulls: the streamed usage chunk leaves
// prompt_tokens_details out (vLLM drops unset fields in chunks; OpenAI's
// schema has no null there), while --enable-prompt-tokens-details fills it.
func TestStreamUsageHasNoNulls(t *testing.T) {
	for _, details := range []bool{false, true} {
		e := simtest.Start(t, func(o *sim.Options) { fast(o); o.PromptTokensDetails = details })
		for _, chat := range []bool{true, false} {
			var last map[string]any
			for range 2 { // the second finds the prompt cached
				got := call(t, e, chat, body(chat, strings.Repeat("cache me ", 20), 4, true, "ignore_eos", true))
				json.Unmarshal([]byte(got.raw[len(got.raw)-1]), &last)
			}
			u := last["usage"].(map[string]any)
			d, ok := u["prompt_tokens_details"]
			if ok == !details || (ok && reflect.ValueOf(d).Kind() != reflect.Map) {
				t.Errorf("details=%v chat=%v: usage %v", details, chat, u)
			}
		}
	}
}

// TestGuidedDecodingCost: a structured answer's decode steps each cost the
// assumed mask-filling time more than a plain answer's of the same length
// (engine clock, from the engine's own records), and nothing else changes.
func TestGuidedDecodingCost(t *testing.T) {
	const speedup, tokens = 10, 64
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.Speedup = speedup; o.DebugRequests = true })
	jsonSchema := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "n", "schema": map[string]any{"type": "object"}}}
	decode := func(extra ...any) float64 {
		call(t, e, true, body(true, "Same prompt.", tokens, false, append(extra, "ignore_eos", true)...))
		recs := e.Requests()
		r := recs[len(recs)-1]
		if r.OutputTokens != tokens {
			t.Fatalf("%d output tokens, want %d", r.OutputTokens, tokens)
		}
		return (r.Finished - *r.FirstToken) * speedup // modelled seconds
	}
	plain := decode()
	guided := decode("response_format", jsonSchema)
	want := float64(tokens-1) * sim.GuidedMaskCost.Seconds() // per step after the first token
	t.Logf("decode of %d tokens: plain %.4f s, guided %.4f s, difference %.2f ms (assumed %.2f ms)", tokens, plain, guided, (guided-plain)*1e3, want*1e3)
	if d := guided - plain; d < want*0.9 || d > want*1.1 {
		t.Errorf("guided decoding costs %.3f ms more over %d steps, want %.3f ms", d*1e3, tokens-1, want*1e3)
	}
}

// TestVLLMDefaults: completions without max_tokens stop at 16 tokens
// (CompletionRequest's default; chat's is the room left), and
// stream_options without include_usage still gets the usage chunk
// (StreamOptions' default).
func TestVLLMDefaults(t *testing.T) {
	e := simtest.Start(t, fast)
	b := body(false, "Count on.", 0, false, "ignore_eos", true)
	delete(b, "max_tokens")
	if got := call(t, e, false, b); got.completion != 16 || got.choices[0].Finish != "length" {
		t.Errorf("completions without max_tokens: %d tokens, finish %q; want 16, length", got.completion, got.choices[0].Finish)
	}
	b = body(true, "Count on.", 0, false, "ignore_eos", true)
	delete(b, "max_tokens")
	if got := call(t, e, true, b); got.completion+got.prompt != 4096 {
		t.Errorf("chat without max_tokens: %d + %d tokens, want the 4096-token context filled", got.prompt, got.completion)
	}
	got := call(t, e, true, body(true, "x", 3, true, "stream_options", map[string]any{"continuous_usage_stats": false}))
	if got.completion != 3 {
		t.Errorf("stream_options without include_usage: usage %d tokens, want the usage chunk (3)", got.completion)
	}
}
