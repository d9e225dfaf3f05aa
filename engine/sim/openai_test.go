package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// The engine's answers checked against the OpenAI API's response shapes, as
// the official SDKs declare them (openai-python's types, generated from
// OpenAI's OpenAPI spec: chat/chat_completion.py, chat_completion_chunk.py,
// chat_completion_token_logprob.py, completion.py, completion_choice.py,
// completion_usage.py), limited to the fields vLLM fills
// (vllm/entrypoints/openai/protocol.py).

// schema is the part of JSON Schema those types need: the JSON types a value
// may have, the required keys of an object, the items of an array, the
// values of an object used as a map, and the allowed strings.
type schema struct {
	types  []string // "string", "integer", "number", "boolean", "array", "object", "null"
	req    map[string]*schema
	items  *schema
	values *schema
	enum   []string
}

func typ(ts ...string) *schema              { return &schema{types: ts} }
func object(req map[string]*schema) *schema { return &schema{types: []string{"object"}, req: req} }
func array(items *schema) *schema           { return &schema{types: []string{"array"}, items: items} }
func mapOf(values *schema) *schema          { return &schema{types: []string{"object"}, values: values} }
func enum(vals ...string) *schema           { return &schema{types: []string{"string"}, enum: vals} }
func (s *schema) orNull() *schema {
	c := *s
	c.types = append(slices.Clone(s.types), "null")
	return &c
}
func (s *schema) with(k string, v *schema) *schema { // s plus one required key
	c := *s
	c.req = map[string]*schema{k: v}
	for key, val := range s.req {
		c.req[key] = val
	}
	return &c
}

// kind is v's JSON type as decoded by encoding/json with UseNumber off.
func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// validate returns every way v breaks s, each naming its path.
func validate(path string, v any, s *schema) []string {
	k := kind(v)
	ok := slices.Contains(s.types, k) || (k == "integer" && slices.Contains(s.types, "number"))
	if !ok {
		return []string{fmt.Sprintf("%s: %s, want %s", path, k, strings.Join(s.types, "|"))}
	}
	var errs []string
	switch x := v.(type) {
	case string:
		if s.enum != nil && !slices.Contains(s.enum, x) {
			errs = append(errs, fmt.Sprintf("%s: %q not one of %q", path, x, s.enum))
		}
	case []any:
		for i, it := range x {
			errs = append(errs, validate(fmt.Sprintf("%s[%d]", path, i), it, s.items)...)
		}
	case map[string]any:
		for key, sub := range s.req {
			val, present := x[key]
			if !present {
				errs = append(errs, fmt.Sprintf("%s: required key %q missing", path, key))
				continue
			}
			errs = append(errs, validate(path+"."+key, val, sub)...)
		}
		if s.values != nil {
			for key, val := range x {
				errs = append(errs, validate(path+"["+key+"]", val, s.values)...)
			}
		}
	}
	return errs
}

var (
	usageSchema = object(map[string]*schema{
		"prompt_tokens": typ("integer"), "completion_tokens": typ("integer"), "total_tokens": typ("integer")})
	// ChatCompletionTokenLogprob and its TopLogprob.
	topLogprobSchema = object(map[string]*schema{
		"token": typ("string"), "logprob": typ("number"), "bytes": array(typ("integer")).orNull()})
	tokenLogprobSchema = topLogprobSchema.with("top_logprobs", array(topLogprobSchema))
	chatLogprobsSchema = object(map[string]*schema{"content": array(tokenLogprobSchema).orNull()})
	// completion_choice.py's Logprobs.
	completionLogprobsSchema = object(map[string]*schema{
		"text_offset": array(typ("integer")), "token_logprobs": array(typ("number")),
		"tokens": array(typ("string")), "top_logprobs": array(mapOf(typ("number")))})

	chatCompletionSchema = object(map[string]*schema{
		"id": typ("string"), "object": enum("chat.completion"), "created": typ("integer"), "model": typ("string"),
		"usage": usageSchema,
		"choices": array(object(map[string]*schema{
			"index":         typ("integer"),
			"finish_reason": enum("stop", "length", "tool_calls", "content_filter", "function_call"),
			"logprobs":      chatLogprobsSchema.orNull(),
			"message": object(map[string]*schema{
				"role": enum("assistant"), "content": typ("string").orNull(), "refusal": typ("string").orNull()}),
		})),
	})
	chatChunkSchema = object(map[string]*schema{
		"id": typ("string"), "object": enum("chat.completion.chunk"), "created": typ("integer"), "model": typ("string"),
		"choices": array(object(map[string]*schema{
			"index":         typ("integer"),
			"finish_reason": enum("stop", "length", "tool_calls", "content_filter", "function_call").orNull(),
			"logprobs":      chatLogprobsSchema.orNull(),
			"delta":         object(map[string]*schema{}),
		})),
	})
	completionSchema = object(map[string]*schema{
		"id": typ("string"), "object": enum("text_completion"), "created": typ("integer"), "model": typ("string"),
		"usage": usageSchema,
		"choices": array(object(map[string]*schema{
			"index":         typ("integer"),
			"finish_reason": enum("stop", "length", "content_filter"),
			"logprobs":      completionLogprobsSchema.orNull(),
			"text":          typ("string"),
		})),
	})
	completionChunkSchema = object(map[string]*schema{
		"id": typ("string"), "object": enum("text_completion"), "created": typ("integer"), "model": typ("string"),
		"choices": array(object(map[string]*schema{
			"index":         typ("integer"),
			"finish_reason": enum("stop", "length", "content_filter").orNull(),
			"logprobs":      completionLogprobsSchema.orNull(),
			"text":          typ("string"),
		})),
	})
	errorSchema = object(map[string]*schema{"error": object(map[string]*schema{
		"message": typ("string"), "type": typ("string"), "param": typ("string").orNull(), "code": typ("integer")})})
)

// mustValidate decodes raw and fails t for each way it breaks s.
func mustValidate(t *testing.T, what, raw string, s *schema) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, raw)
	}
	for _, e := range validate(what, v, s) {
		t.Error(e)
	}
	return v
}

// lpEntry is one output token's logprobs: the sampled token and its
// alternatives, most likely first.
type lpEntry struct {
	token   string
	logprob float64
	bytes   []int // chat only
	top     []lpAlt
}

type lpAlt struct {
	token   string
	logprob float64
}

// answer is one response, streamed or not, reduced to what the checks use.
type answer struct {
	text       string
	finish     string
	completion int       // usage.completion_tokens
	logprobs   bool      // some choice carried logprobs
	toks       []lpEntry // streamed: every chunk's, in order
	offsets    []int     // completions' text_offset
}

// ask posts body to the chat or completions endpoint, checks the status is
// 200 and every payload (the body, or each stream chunk) against the
// OpenAI schema, and reduces the answer.
func ask(t *testing.T, e *sim.Engine, chat bool, body map[string]any) answer {
	t.Helper()
	path, whole, part := "/v1/completions", completionSchema, completionChunkSchema
	specWhole, specPart := specCompletion, specCompletionC
	if chat {
		path, whole, part = "/v1/chat/completions", chatCompletionSchema, chatChunkSchema
		specWhole, specPart = specChat, specChatChunk
	}
	resp := post(t, e, path, body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s %v: %s %s", path, body, resp.Status, b)
	}
	var a answer
	if body["stream"] != true {
		b, _ := io.ReadAll(resp.Body)
		conform(t, "response", string(b), specWhole)
		a.add(t, chat, mustValidate(t, "response", string(b), whole), string(b))
		return a
	}
	ev := events(t, resp.Body)
	if len(ev) == 0 || ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", ev)
	}
	for i, e := range ev[:len(ev)-1] {
		conform(t, fmt.Sprintf("chunk %d", i), e, specPart)
		a.add(t, chat, mustValidate(t, fmt.Sprintf("chunk %d", i), e, part), e)
	}
	return a
}

// add folds one payload (validated: the type assertions hold) into a.
func (a *answer) add(t *testing.T, chat bool, v map[string]any, raw string) {
	t.Helper()
	if u, ok := v["usage"].(map[string]any); ok { // required in a whole answer, optional in chunks
		for _, e := range validate("usage", u, usageSchema) {
			t.Fatal(e)
		}
		a.completion = int(u["completion_tokens"].(float64))
	}
	var lps struct { // the logprobs objects as sent: a map would lose their keys' order
		Choices []struct{ Logprobs json.RawMessage }
	}
	if err := json.Unmarshal([]byte(raw), &lps); err != nil {
		t.Fatal(err)
	}
	for i, c := range v["choices"].([]any) {
		ch := c.(map[string]any)
		if f, ok := ch["finish_reason"].(string); ok {
			a.finish = f
		}
		switch {
		case !chat:
			a.text += ch["text"].(string)
		case ch["message"] != nil:
			m := ch["message"].(map[string]any)
			if r, ok := m["refusal"]; !ok || r != nil {
				t.Errorf("message.refusal = %v (present %v), want null as vLLM sends: %s", r, ok, raw)
			}
			a.text += m["content"].(string)
		default:
			if s, ok := ch["delta"].(map[string]any)["content"].(string); ok {
				a.text += s
			}
		}
		if ch["logprobs"] == nil {
			continue
		}
		a.logprobs = true
		b := lps.Choices[i].Logprobs
		if chat {
			a.addChat(t, b)
		} else {
			a.addCompletion(t, b)
		}
	}
}

func (a *answer) addChat(t *testing.T, b []byte) {
	type alt struct {
		Token   string
		Logprob float64
		Bytes   []int
	}
	var lp struct {
		Content []struct {
			alt
			TopLogprobs []alt `json:"top_logprobs"`
		}
	}
	if err := json.Unmarshal(b, &lp); err != nil {
		t.Fatal(err)
	}
	for _, c := range lp.Content {
		e := lpEntry{token: c.Token, logprob: c.Logprob, bytes: c.Bytes}
		for _, x := range c.TopLogprobs {
			e.top = append(e.top, lpAlt{x.Token, x.Logprob})
			if !slices.Equal(x.Bytes, utf8Bytes(x.Token)) {
				t.Errorf("top_logprobs entry %q: bytes %v", x.Token, x.Bytes)
			}
		}
		a.toks = append(a.toks, e)
	}
}

func (a *answer) addCompletion(t *testing.T, b []byte) {
	var lp struct {
		TextOffset    []int             `json:"text_offset"`
		TokenLogprobs []float64         `json:"token_logprobs"`
		Tokens        []string          `json:"tokens"`
		TopLogprobs   []json.RawMessage `json:"top_logprobs"`
	}
	if err := json.Unmarshal(b, &lp); err != nil {
		t.Fatal(err)
	}
	n := len(lp.Tokens)
	if len(lp.TextOffset) != n || len(lp.TokenLogprobs) != n || len(lp.TopLogprobs) != n {
		t.Fatalf("completions logprobs lists differ in length: %s", b)
	}
	for i, tok := range lp.Tokens {
		e := lpEntry{token: tok, logprob: lp.TokenLogprobs[i]}
		// The object's order is vLLM's: by rank.
		dec := json.NewDecoder(strings.NewReader(string(lp.TopLogprobs[i])))
		dec.Token() // {
		for dec.More() {
			k, _ := dec.Token()
			var v float64
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			e.top = append(e.top, lpAlt{k.(string), v})
		}
		a.toks = append(a.toks, e)
	}
	a.offsets = append(a.offsets, lp.TextOffset...)
}

func utf8Bytes(s string) []int {
	out := []int{}
	for _, c := range []byte(s) {
		out = append(out, int(c))
	}
	return out
}

// fast makes start-up and tokens quick: these tests look at shapes only.
func fast(o *sim.Options) { quick(o); o.Speedup = 1000 }

// body is a request to the chat (a one-message chat) or completions
// endpoint with extra fields.
func body(chat bool, prompt string, maxTokens int, stream bool, extra ...any) map[string]any {
	b := map[string]any{"model": "Qwen/Qwen2.5-7B-Instruct-AWQ", "max_tokens": maxTokens, "stream": stream}
	if chat {
		b["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	} else {
		b["prompt"] = prompt
	}
	if stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// TestOpenAISchema: every answer, chat and completions, streamed and not,
// with and without logprobs, has the keys, types and object names of the
// OpenAI schema (ask checks each payload; non-streaming chat messages carry
// "refusal": null).
func TestOpenAISchema(t *testing.T) {
	e := simtest.Start(t, fast)
	for _, chat := range []bool{true, false} {
		for _, stream := range []bool{false, true} {
			for _, lp := range []bool{false, true} {
				t.Run(fmt.Sprintf("chat=%v/stream=%v/logprobs=%v", chat, stream, lp), func(t *testing.T) {
					var extra []any
					switch {
					case lp && chat:
						extra = []any{"logprobs", true, "top_logprobs", 2}
					case lp:
						extra = []any{"logprobs", 2}
					}
					a := ask(t, e, chat, body(chat, "Describe the sea.", 6, stream, append(extra, "ignore_eos", true)...))
					if a.completion != 6 || a.finish != "length" || len(strings.Fields(a.text)) != 6 {
						t.Errorf("answer %q: %d tokens, finish %q", a.text, a.completion, a.finish)
					}
					if a.logprobs != lp {
						t.Errorf("logprobs present = %v, want %v", a.logprobs, lp)
					}
				})
			}
		}
	}
}

// checkLogprobs checks one answer's logprobs against its text: one entry
// per output token, tokens that spell the text (the end-of-turn token,
// last of a "stop", adds none), top lists of the asked length, most likely
// first, probabilities summing to at most 1, bytes that are the token's,
// text offsets that count the characters before each token.
func checkLogprobs(t *testing.T, a answer, chat bool, top int) {
	t.Helper()
	if len(a.toks) != a.completion {
		t.Fatalf("%d logprobs entries for %d output tokens", len(a.toks), a.completion)
	}
	want := top // chat: top_logprobs; completions: the sampled token and the top N, at least 1
	if !chat {
		want = max(top, 1)
	}
	var text strings.Builder
	for i, e := range a.toks {
		if !chat && a.offsets[i] != text.Len() {
			t.Errorf("token %d: text_offset %d, want %d", i, a.offsets[i], text.Len())
		}
		if a.finish == "stop" && i == len(a.toks)-1 {
			if e.token != "<|im_end|>" {
				t.Errorf("last token of a stop is %q, want Qwen2.5's <|im_end|>", e.token)
			}
		} else {
			text.WriteString(e.token)
		}
		if chat && !slices.Equal(e.bytes, utf8Bytes(e.token)) {
			t.Errorf("token %d %q: bytes %v", i, e.token, e.bytes)
		}
		if len(e.top) != want {
			t.Fatalf("token %d: %d top entries, want %d", i, len(e.top), want)
		}
		sum, prev := 0.0, 0.0
		for j, alt := range e.top {
			if alt.logprob >= 0 || (j > 0 && alt.logprob > prev) {
				t.Fatalf("token %d: top logprobs not negative and falling: %v", i, e.top)
			}
			prev = alt.logprob
			sum += math.Exp(alt.logprob)
		}
		if sum > 1 || e.logprob >= 0 {
			t.Errorf("token %d: probabilities sum to %g, sampled logprob %g", i, sum, e.logprob)
		}
		if want > 0 && (e.top[0].token != e.token || e.top[0].logprob != e.logprob) {
			t.Errorf("token %d: the sampled token %q is not the most likely %v", i, e.token, e.top)
		}
	}
	if text.String() != a.text {
		t.Errorf("tokens spell %q, text is %q", text.String(), a.text)
	}
}

// TestLogprobs: logprobs in vLLM's shapes for every asked size (0, 3 and
// OpenAI's maximum 20), checked by checkLogprobs, and seeded: the streamed
// answer's entries are the non-streamed answer's, figure for figure.
func TestLogprobs(t *testing.T) {
	e := simtest.Start(t, fast)
	for _, chat := range []bool{true, false} {
		for _, top := range []int{0, 3, 20} {
			t.Run(fmt.Sprintf("chat=%v/top=%d", chat, top), func(t *testing.T) {
				extra := []any{"logprobs", top, "ignore_eos", true}
				if chat {
					extra = []any{"logprobs", true, "top_logprobs", top, "ignore_eos", true}
				}
				whole := ask(t, e, chat, body(chat, "Name three rivers.", 12, false, extra...))
				streamed := ask(t, e, chat, body(chat, "Name three rivers.", 12, true, extra...))
				checkLogprobs(t, whole, chat, top)
				checkLogprobs(t, streamed, chat, top)
				if !reflect.DeepEqual(whole.toks, streamed.toks) || !slices.Equal(whole.offsets, streamed.offsets) {
					t.Errorf("streamed logprobs differ from non-streamed:\n%v\n%v", streamed.toks, whole.toks)
				}
			})
		}
	}
}

// TestLogprobsStopToken: a request that stops by itself ends with the
// end-of-turn token, which has an entry but no text.
func TestLogprobsStopToken(t *testing.T) {
	e := simtest.Start(t, fast)
	for _, stream := range []bool{false, true} {
		found := false
		for i := 0; i < 16 && !found; i++ { // seeded: P(stop before 200 tokens) = 54% each
			a := ask(t, e, true, body(true, fmt.Sprintf("prompt %d", i), 200, stream, "logprobs", true, "top_logprobs", 1))
			if a.finish == "stop" {
				found = true
				checkLogprobs(t, a, true, 1)
			}
		}
		if !found {
			t.Errorf("stream=%v: no request of 16 stopped by itself", stream)
		}
	}
}

// TestLogprobsRefused: the request checks vLLM (and OpenAI) make, each a
// 400 naming the parameter.
func TestLogprobsRefused(t *testing.T) {
	e := simtest.Start(t, fast)
	cases := []struct {
		chat  bool
		extra []any
		param string
		msg   string
	}{
		{true, []any{"top_logprobs", 2}, "top_logprobs", "`logprobs` must be set to true"},                    // top without logprobs
		{true, []any{"logprobs", false, "top_logprobs", 1}, "top_logprobs", "`logprobs` must be set to true"}, // logprobs off
		{true, []any{"logprobs", true, "top_logprobs", 21}, "top_logprobs", "greater than max allowed: 20"},   // over OpenAI's range
		{true, []any{"logprobs", true, "top_logprobs", -1}, "top_logprobs", "must be a positive value"},
		{true, []any{"logprobs", 3}, "logprobs", "must be a boolean"}, // completions' form on chat
		{false, []any{"logprobs", 21}, "logprobs", "greater than max allowed: 20"},
		{false, []any{"logprobs", -1}, "logprobs", "must be a positive value"},
		{false, []any{"logprobs", true}, "logprobs", "must be an integer"}, // chat's form on completions
	}
	for i, c := range cases {
		path := "/v1/completions"
		if c.chat {
			path = "/v1/chat/completions"
		}
		resp := post(t, e, path, body(c.chat, "hi", 4, false, c.extra...))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("case %d %v: %s %s, want 400", i, c.extra, resp.Status, b)
			continue
		}
		conform(t, fmt.Sprintf("case %d error", i), string(b), specError)
		v := mustValidate(t, fmt.Sprintf("case %d error", i), string(b), errorSchema)
		er := v["error"].(map[string]any)
		if er["param"] != c.param || !strings.Contains(er["message"].(string), c.msg) {
			t.Errorf("case %d %v: error %v, want param %q and %q", i, c.extra, er, c.param, c.msg)
		}
	}
}
