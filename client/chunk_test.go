package client

import (
	"bytes"
	"fmt"
	"testing"
)

// chunkSummary is a comparable copy of the fields of a Chunk.
type chunkSummary struct {
	Content, Reasoning, Finish string
	HasChoices, HasUsage       bool
	Prompt, Completion, Cached int
	HasError                   bool
	ErrMsg                     string
	OtherReasoning             string
	ToolCall                   bool
	ToolIndex                  int
	ToolName, ToolArgs         string
}

func summarize(c *Chunk) chunkSummary {
	return chunkSummary{string(c.Content), string(c.Reasoning), string(c.FinishReason),
		c.HasChoices, c.HasUsage, c.PromptTokens, c.CompletionTokens, c.CachedTokens, c.HasError, string(c.ErrorMessage),
		string(c.OtherReasoning), c.ToolCall, c.ToolIndex, string(c.ToolName), string(c.ToolArgs)}
}

// fastAndSlow decodes in with both paths. fastOK is false when the scanner
// declined.
func fastAndSlow(in []byte) (fast chunkSummary, fastOK bool, slow chunkSummary, slowErr error) {
	var d ChunkDecoder
	if d.decodeFast(in) == nil {
		fast, fastOK = summarize(&d.chunk), true
	}
	slowErr = d.decodeSlow(in)
	slow = summarize(&d.chunk)
	return
}

func TestChunkDecode(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     chunkSummary
		wantFast bool // the scanner handles it without encoding/json
	}{
		// vLLM's first chat chunk: role only, empty content... not visible.
		{"role only", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			chunkSummary{HasChoices: true}, true},
		// Reasoning under a name the client does not read: named, not counted;
		// the first such key in byte order; a known name in another case is
		// encoding/json's match, not another name.
		{"other reasoning", `{"choices":[{"delta":{"thinking":"hm","reasoning_text":"x","content":"a"}}]}`,
			chunkSummary{Content: "a", HasChoices: true, OtherReasoning: "reasoning_text"}, true},
		{"other reasoning, message", `{"choices":[{"message":{"Thinking":"hm","content":"a"}}]}`,
			chunkSummary{Content: "a", HasChoices: true, OtherReasoning: "Thinking"}, true},
		{"known name, other case", `{"choices":[{"delta":{"Reasoning":"hm"}}]}`,
			chunkSummary{Reasoning: "hm", HasChoices: true}, false},
		// A content chunk as vLLM sends it.
		{"content", vllmChunk("Hello"), chunkSummary{Content: "Hello", HasChoices: true}, true},
		// Escapes: newline, quote, backslash, slash, tab, \u00e9, and a
		// surrogate pair (U+1F98A).
		{"escapes", `{"choices":[{"delta":{"content":"a\nb\"c\\d\/e\tf\u00e9\ud83e\udd8a"}}]}`,
			chunkSummary{Content: "a\nb\"c\\d/e\tfé🦊", HasChoices: true}, true},
		// Raw UTF-8 passes through.
		{"utf8", `{"choices":[{"delta":{"content":"über 🦊"}}]}`, chunkSummary{Content: "über 🦊", HasChoices: true}, true},
		// Completions endpoint: choices[0].text.
		{"text", `{"choices":[{"text":" world","index":0,"logprobs":null,"finish_reason":null}]}`,
			chunkSummary{Content: " world", HasChoices: true}, true},
		// Reasoning models: reasoning_content (vLLM, DeepSeek) ...
		{"reasoning_content", `{"choices":[{"delta":{"reasoning_content":"think"}}]}`,
			chunkSummary{Reasoning: "think", HasChoices: true}, true},
		// ... and reasoning (newer vLLM, OpenRouter).
		{"reasoning", `{"choices":[{"delta":{"reasoning":"hmm","content":null}}]}`,
			chunkSummary{Reasoning: "hmm", HasChoices: true}, true},
		// Finish chunk.
		{"finish", `{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"length","stop_reason":null}]}`,
			chunkSummary{Finish: "length", HasChoices: true}, true},
		// Final usage chunk (include_usage): empty choices.
		{"usage", `{"id":"x","choices":[],"usage":{"prompt_tokens":25,"total_tokens":281,"completion_tokens":256,"prompt_tokens_details":null}}`,
			chunkSummary{HasUsage: true, Prompt: 25, Completion: 256}, true},
		// vLLM with prefix caching stats: cached prompt tokens.
		{"cached tokens", `{"choices":[],"usage":{"prompt_tokens":600,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":512,"audio_tokens":0}}}`,
			chunkSummary{HasUsage: true, Prompt: 600, Completion: 8, Cached: 512}, true},
		// A prompt_tokens_details that is not an object loses only the cached count.
		{"odd details", `{"choices":[],"usage":{"prompt_tokens":6,"completion_tokens":1,"prompt_tokens_details":[1]}}`,
			chunkSummary{HasUsage: true, Prompt: 6, Completion: 1}, true},
		// Non-streaming chat body: message.content.
		{"message", `{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi!","tool_calls":[]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
			chunkSummary{Content: "Hi!", Finish: "stop", HasChoices: true, HasUsage: true, Prompt: 3, Completion: 2}, true},
		// vLLM's mid-stream error event.
		{"error object", `{"error":{"object":"error","message":"boom \"x\"","type":"BadRequestError","param":null,"code":400}}`,
			chunkSummary{HasError: true, ErrMsg: `boom "x"`}, true},
		// TGI's error event: a string.
		{"error string", `{"error":"Request failed during generation","error_type":"generation"}`,
			chunkSummary{HasError: true, ErrMsg: "Request failed during generation"}, true},
		// "error": null is no error.
		{"error null", `{"error":null,"choices":null,"usage":null}`, chunkSummary{}, true},
		// Only choices[0] counts; the second is still validated.
		{"two choices", `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`,
			chunkSummary{Content: "a", HasChoices: true}, true},
		// Whitespace everywhere.
		{"whitespace", " {\n \"choices\" : [ { \"text\" : \"x\" } ] } \n", chunkSummary{Content: "x", HasChoices: true}, true},
		// Deeply nested uninteresting fields are skipped.
		{"nested", `{"x":[[{"a":[1,2.5e-3,true,false,null,"s"]}]],"choices":[{"text":"t"}]}`,
			chunkSummary{Content: "t", HasChoices: true}, true},
		// A case variant of a key: encoding/json matches it, so the scanner declines.
		{"case fold", `{"Choices":[{"Text":"x"}]}`, chunkSummary{Content: "x", HasChoices: true}, false},
		// An escaped key: same.
		{"escaped key", `{"\u0063hoices":[{"text":"x"}]}`, chunkSummary{Content: "x", HasChoices: true}, false},
		// Duplicate keys: encoding/json takes the last one.
		{"duplicate", `{"usage":{"completion_tokens":1},"usage":{"completion_tokens":2}}`,
			chunkSummary{HasUsage: true, Completion: 2}, false},
		// A lone surrogate becomes U+FFFD, as encoding/json does it.
		{"lone surrogate", `{"choices":[{"text":"a\ud800b"}]}`, chunkSummary{Content: "a\uFFFDb", HasChoices: true}, false},
		// Invalid UTF-8 becomes U+FFFD, as encoding/json does it.
		{"invalid utf8", "{\"choices\":[{\"text\":\"a\xffb\"}]}", chunkSummary{Content: "a\uFFFDb", HasChoices: true}, false},
		// A streamed tool call as vLLM sends it: id and name first, then
		// the arguments as they come.
		{"tool call first", `{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"get_weather","arguments":"{\"ci"}}]},"logprobs":null,"finish_reason":null}]}`,
			chunkSummary{HasChoices: true, ToolCall: true, ToolName: "get_weather", ToolArgs: `{"ci`}, true},
		{"tool call args", `{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"ty\": \"Oslo\"}"}}]}}]}`,
			chunkSummary{HasChoices: true, ToolCall: true, ToolIndex: 1, ToolArgs: `ty": "Oslo"}`}, true},
		// Non-streaming: message.tool_calls; a later call is checked, not kept.
		{"tool call message", `{"choices":[{"message":{"content":"","tool_calls":[{"function":{"name":"f","arguments":"{}"}},{"index":1,"function":null}]}}]}`,
			chunkSummary{HasChoices: true, ToolCall: true, ToolName: "f", ToolArgs: "{}"}, true},
		// tool_calls of another shape is ignored, not a malformed chunk.
		{"tool call odd shape", `{"choices":[{"delta":{"content":"a","tool_calls":{"index":0}}}]}`,
			chunkSummary{Content: "a", HasChoices: true}, false},
		{"tool call odd index", `{"choices":[{"delta":{"tool_calls":[{"index":0.5,"function":{"name":"f"}}]}}]}`,
			chunkSummary{HasChoices: true}, false},
		{"tool call odd later", `{"choices":[{"delta":{"tool_calls":[{"index":0},7]}}]}`,
			chunkSummary{HasChoices: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, fastOK, slow, err := fastAndSlow([]byte(tt.in))
			if err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			if slow != tt.want {
				t.Errorf("encoding/json path: got %+v, want %+v", slow, tt.want)
			}
			if fastOK != tt.wantFast {
				t.Errorf("scanner handled it: %v, want %v", fastOK, tt.wantFast)
			}
			if fastOK && fast != tt.want {
				t.Errorf("scanner: got %+v, want %+v", fast, tt.want)
			}
			var d ChunkDecoder
			c, err := d.Decode([]byte(tt.in))
			if err != nil || summarize(c) != tt.want {
				t.Errorf("Decode: got %+v, %v", summarize(c), err)
			}
		})
	}
}

// TestChunkDecodeInvalid: invalid JSON and wrong types are errors, never a
// silently empty chunk.
func TestChunkDecodeInvalid(t *testing.T) {
	for _, in := range []string{
		``,                                       // empty event
		`{"choices":[{"delta":{"content":"x}}]}`, // unterminated string
		`{"choices":[{"text":5}]}`,               // content of the wrong type
		`{"usage":{"completion_tokens":1.5}}`,    // a fractional count
		`{"usage":{"completion_tokens":"7"}}`,    // a count as a string
		`{"choices":[5]}`,                        // a choice that is not an object
		`{"choices":[]} x`,                       // trailing garbage
		`{"a":01}`,                               // a leading zero
		"{\"choices\":[{\"text\":\"a\tb\"}]}",    // a raw control character
		`{"choices":[{"text":"\x"}]}`,            // an invalid escape
	} {
		var d ChunkDecoder
		if c, err := d.Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) = %+v, want an error", in, summarize(c))
		}
	}
}

// TestChunkDecodeZeroAllocs: a content chunk, with and without escapes,
// decodes without allocating once the decoder is warm.
func TestChunkDecodeZeroAllocs(t *testing.T) {
	for _, in := range []string{vllmChunk("plain"), vllmChunk("a\n\"b\" über")} {
		var d ChunkDecoder
		data := []byte(in)
		if _, err := d.Decode(data); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := d.Decode(data); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("Decode(%s) allocates %.1f times, want 0", in, allocs)
		}
	}
}

// TestChunkDecodeSliceStability: strings unescaped into the decoder's
// buffer are not moved by later strings in the same chunk.
func TestChunkDecodeSliceStability(t *testing.T) {
	var d ChunkDecoder
	in := fmt.Sprintf(`{"choices":[{"delta":{"content":"%s\n","reasoning":"%s\n"},"finish_reason":"st\u006fp"}]}`,
		bytes.Repeat([]byte("c"), 300), bytes.Repeat([]byte("r"), 300))
	c, err := d.Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Content) != string(bytes.Repeat([]byte("c"), 300))+"\n" ||
		string(c.Reasoning) != string(bytes.Repeat([]byte("r"), 300))+"\n" || string(c.FinishReason) != "stop" {
		t.Errorf("got %+v", summarize(c))
	}
}

// FuzzChunkDecode checks the allocation-free scanner against encoding/json
// on every field it extracts: when the scanner answers, encoding/json must
// accept the input and agree; Decode fails exactly when encoding/json does.
func FuzzChunkDecode(f *testing.F) {
	for _, s := range []string{
		vllmChunk("hello"),
		vllmChunk("a\n\"b\" über 🦊"),
		`{"choices":[{"delta":{"reasoning_content":"x\ud83e\udd8a"},"finish_reason":"stop"}]}`,
		`{"choices":[{"delta":{"thinking":"x","Reasoning":"y","THINK":null}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":25,"completion_tokens":256}}`,
		`{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8}}}`,
		`{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":-0,"completion_tokens":null}}`,
		`{"error":{"message":"boom","code":400}}`,
		`{"error":"boom"}`,
		`{"Choices":[{"TEXT":"x"}],"usage":1}`,
		`{"choices":[{"text":"a\ud800b"},null,{}]}`,
		"{\"choices\":[{\"text\":\"\xff\"}]}",
		`[1,2,{"a":[-1.5e+3,true,false,null]}]`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"x","index":0,"function":{"name":"f","arguments":"{\"a\": 1"}},null]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"Index":2,"function":{"Arguments":"x"}}]}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, fastOK, slow, slowErr := fastAndSlow(in)
		if fastOK {
			if slowErr != nil {
				t.Fatalf("scanner accepted what encoding/json rejects (%v): %+v", slowErr, fast)
			}
			if fast != slow {
				t.Fatalf("scanner %+v\nencoding/json %+v", fast, slow)
			}
		}
		var d ChunkDecoder
		c, err := d.Decode(bytes.Clone(in))
		if (err != nil) != (slowErr != nil) {
			t.Fatalf("Decode error %v, encoding/json error %v", err, slowErr)
		}
		if err == nil && summarize(c) != slow {
			t.Fatalf("Decode %+v\nencoding/json %+v", summarize(c), slow)
		}
	})
}

// TestMayHaveOtherReasoning: the guard that spares decodeSlow its second
// decode passes every chunk with another reasoning-like key (escaped
// letters, a key that starts like finish_reason, any case) and stops only
// chunks with no such word.
func TestMayHaveOtherReasoning(t *testing.T) {
	cases := []struct {
		chunk string
		want  bool
	}{
		{vllmChunk("hi"), false},
		{vllmChunk("a\n\"b\""), false},
		{`{"choices":[{"delta":{"th\u0069nking":"x"}}]}`, true},
		{`{"choices":[{"delta":{"finish_reasoning":"x"}}]}`, true},
		{`{"choices":[{"delta":{"REASONS":"x"}}]}`, true},
		{`{"choices":[{"delta":{"ThInK":"x"}}]}`, true},
	}
	for _, c := range cases {
		if got := mayHaveOtherReasoning([]byte(c.chunk)); got != c.want {
			t.Errorf("mayHaveOtherReasoning(%s) = %v, want %v", c.chunk, got, c.want)
		}
		var d ChunkDecoder
		if err := d.decodeSlow([]byte(c.chunk)); err != nil {
			t.Fatal(err)
		}
		if got := len(d.chunk.OtherReasoning) > 0; got != c.want {
			t.Errorf("decodeSlow(%s): OtherReasoning %q, want one: %v", c.chunk, d.chunk.OtherReasoning, c.want)
		}
	}
}
