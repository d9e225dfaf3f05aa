package client

import (
	"bytes"
	"strconv"
	"testing"
)

// Events as vLLM writes them (anthropic/serving.py, responses'
// streaming_events.py; fields in its pydantic order).
const (
	anthMessageStart = `{"type":"message_start","message":{"id":"chatcmpl-1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":0}}}`
	anthTextStart    = `{"type":"content_block_start","content_block":{"type":"text","text":""},"index":1}`
	anthThinkStart   = `{"type":"content_block_start","content_block":{"type":"thinking","thinking":""},"index":0}`
	anthBlockStop    = `{"type":"content_block_stop","index":0}`
	anthMessageStop  = `{"type":"message_stop"}`
	respCreated      = `{"response":{"id":"resp_1","created_at":1,"model":"m","object":"response","output":[],"status":"in_progress","usage":null},"sequence_number":0,"type":"response.created"}`
)

func anthText(s string) string {
	return `{"type":"content_block_delta","delta":{"type":"text_delta","text":` + quoteJSON(s) + `},"index":1}`
}

func anthThinking(s string) string {
	return `{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":` + quoteJSON(s) + `},"index":0}`
}

func anthMessageDelta(stop string, in, out int) string {
	return `{"type":"message_delta","delta":{"stop_reason":"` + stop + `"},"usage":{"input_tokens":` + strconv.Itoa(in) + `,"output_tokens":` + strconv.Itoa(out) + `}}`
}

func respText(s string) string {
	return `{"content_index":0,"delta":` + quoteJSON(s) + `,"item_id":"msg_1","logprobs":[],"output_index":1,"sequence_number":3,"type":"response.output_text.delta"}`
}

func respReasoning(s string) string {
	return `{"content_index":0,"delta":` + quoteJSON(s) + `,"item_id":"rs_1","output_index":0,"sequence_number":2,"type":"response.reasoning_text.delta"}`
}

func respCompleted(status, reason string, in, out, reasoning int) string {
	details := "null"
	if reason != "" {
		details = `{"reason":"` + reason + `"}`
	}
	return `{"response":{"id":"resp_1","created_at":1,"incomplete_details":` + details + `,"model":"m","object":"response","output":[{"type":"message","content":[{"type":"output_text","text":"a b"}]}],` +
		`"status":"` + status + `","usage":{"input_tokens":` + strconv.Itoa(in) + `,"input_tokens_details":{"cached_tokens":0},"output_tokens":` + strconv.Itoa(out) +
		`,"output_tokens_details":{"reasoning_tokens":` + strconv.Itoa(reasoning) + `},"total_tokens":` + strconv.Itoa(in+out) + `}},"sequence_number":9,"type":"response.completed"}`
}

// apiSummary is an APIEvent as comparable values.
type apiSummary struct {
	Type, Text, Reasoning, ToolArgs, StopReason, Status string
	HasUsage                                            bool
	In, Out, Cached, Reasoned                           int
	HasError                                            bool
	ErrorMessage                                        string
}

func summarizeAPI(e *APIEvent) apiSummary {
	return apiSummary{string(e.Type), string(e.Text), string(e.Reasoning), string(e.ToolArgs), string(e.StopReason), string(e.Status),
		e.HasUsage, e.InputTokens, e.OutputTokens, e.CachedTokens, e.ReasoningTokens, e.HasError, string(e.ErrorMessage)}
}

// apiFastAndSlow decodes in with the scanner and with encoding/json.
func apiFastAndSlow(in []byte) (fast apiSummary, fastOK bool, slow apiSummary, slowErr error) {
	var p apiParts
	s := scanner{b: in, out: make([]byte, 0, len(in))}
	if s.apiTop(&p) == nil {
		var ev APIEvent
		p.fill(&ev)
		fast, fastOK = summarizeAPI(&ev), true
	}
	var q apiParts
	if slowErr = q.decodeSlow(in); slowErr == nil {
		var ev APIEvent
		q.fill(&ev)
		slow = summarizeAPI(&ev)
	}
	return fast, fastOK, slow, slowErr
}

// TestAPIEventDecode: each event kind of both APIs gives its fields, by
// the scanner and by encoding/json alike.
func TestAPIEventDecode(t *testing.T) {
	cases := []struct {
		name, in string
		want     apiSummary
	}{
		{"message_start carries the input count", anthMessageStart,
			apiSummary{Type: "message_start", HasUsage: true, In: 7}},
		{"text delta is visible", anthText("héllo\n"), apiSummary{Type: "content_block_delta", Text: "héllo\n"}},
		{"thinking delta is reasoning", anthThinking("hm"), apiSummary{Type: "content_block_delta", Reasoning: "hm"}},
		{"tool input is neither", `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"a\""},"index":2}`,
			apiSummary{Type: "content_block_delta", ToolArgs: `{"a"`}},
		{"message_delta: stop reason and usage", anthMessageDelta("max_tokens", 7, 3),
			apiSummary{Type: "message_delta", StopReason: "max_tokens", HasUsage: true, In: 7, Out: 3}},
		{"Anthropic error event", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			apiSummary{Type: "error", HasError: true, ErrorMessage: "Overloaded"}},
		{"output_text delta", respText("a"), apiSummary{Type: "response.output_text.delta", Text: "a"}},
		{"reasoning_text delta", respReasoning("r"), apiSummary{Type: "response.reasoning_text.delta", Reasoning: "r"}},
		{"created: no usage yet", respCreated, apiSummary{Type: "response.created", Status: "in_progress"}},
		{"incomplete response", respCompleted("incomplete", "max_output_tokens", 7, 3, 1),
			apiSummary{Type: "response.completed", StopReason: "max_output_tokens", Status: "incomplete", HasUsage: true, In: 7, Out: 3, Reasoned: 1}},
		{"OpenAI error event", `{"type":"error","code":"server_error","message":"boom","param":null,"sequence_number":4}`,
			apiSummary{Type: "error", HasError: true, ErrorMessage: "boom"}},
		{"vLLM mid-stream error", `{"error":{"message":"injected","type":"InternalServerError","code":500}}`,
			apiSummary{HasError: true, ErrorMessage: "injected"}},
	}
	for _, c := range cases {
		fast, ok, slow, err := apiFastAndSlow([]byte(c.in))
		if err != nil || !ok {
			t.Errorf("%s: scanner ok %v, encoding/json error %v", c.name, ok, err)
			continue
		}
		if fast != c.want || slow != c.want {
			t.Errorf("%s:\n scanner %+v\n json    %+v\n want    %+v", c.name, fast, slow, c.want)
		}
	}
}

// TestAPIEventDecodeZeroAllocs: the common events decode without
// allocating, escapes included.
func TestAPIEventDecodeZeroAllocs(t *testing.T) {
	var d APIEventDecoder
	for _, in := range []string{anthText("a \"b\" über"), anthThinking("x"), respText(" the"), respReasoning("y"),
		anthMessageDelta("end_turn", 1, 2), respCompleted("completed", "", 5, 6, 0)} {
		data := []byte(in)
		d.Decode(data) // sizes the scratch buffer
		if a := testing.AllocsPerRun(1000, func() {
			if _, err := d.Decode(data); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: %.1f allocs per decode, want 0", in, a)
		}
	}
}

// FuzzAPIEventDecode checks the scanner against encoding/json on every
// field it extracts, as FuzzChunkDecode does for chat chunks.
func FuzzAPIEventDecode(f *testing.F) {
	for _, s := range []string{
		anthMessageStart, anthText("hello"), anthThinking("a\n\"b\" über 🦊"), anthMessageDelta("end_turn", 3, 4),
		respText("x"), respReasoning("🦊"), respCompleted("incomplete", "max_output_tokens", 1, 2, 3), respCreated,
		`{"type":"error","message":"m"}`, `{"type":"response.failed","response":{"error":{"message":"x"}}}`,
		`{"TYPE":"x","Delta":1}`, `{"delta":[1],"message":null,"usage":"u","response":7}`,
		`{"usage":{"input_tokens_details":[],"output_tokens_details":{"reasoning_tokens":null}}}`,
		"{\"delta\":\"\xff\"}", `{"delta":"a\ud800b"}`, `null`, `[1,{"a":-1.5e+3}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, fastOK, slow, slowErr := apiFastAndSlow(in)
		if fastOK {
			if slowErr != nil {
				t.Fatalf("scanner accepted what encoding/json rejects (%v): %+v", slowErr, fast)
			}
			if fast != slow {
				t.Fatalf("scanner %+v\nencoding/json %+v", fast, slow)
			}
		}
		var d APIEventDecoder
		ev, err := d.Decode(bytes.Clone(in))
		if (err != nil) != (slowErr != nil) {
			t.Fatalf("Decode error %v, encoding/json error %v", err, slowErr)
		}
		if err == nil && summarizeAPI(ev) != slow {
			t.Fatalf("Decode %+v\nencoding/json %+v", summarizeAPI(ev), slow)
		}
	})
}

// BenchmarkAPIStreamEvent is the client's per-event parsing work on each
// API's text deltas (SSE framing with event lines, plus decoding), as
// BenchmarkStreamEvent is on chat's. One op is one event; target 0
// allocs/op.
func BenchmarkAPIStreamEvent(b *testing.B) {
	for _, api := range []struct {
		name string
		ev   func(string) string
		typ  string
	}{{"messages", anthText, "content_block_delta"}, {"responses", respText, "response.output_text.delta"}} {
		b.Run(api.name, func(b *testing.B) {
			var stream bytes.Buffer
			for _, w := range []string{" the", " quick", "\n", " \"jumps\"", " über", " 🦊"} {
				stream.WriteString("event: " + api.typ + "\ndata: " + api.ev(w) + "\n\n")
			}
			var d APIEventDecoder
			benchEvents(b, stream.Bytes(), func(data []byte) error {
				_, err := d.Decode(data)
				return err
			})
		})
	}
}
