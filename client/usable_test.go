package client

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// wantKeys is a Validator asking for an object holding key.
type wantKeys string

func (k wantKeys) Validate(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("not an object")
	}
	if _, ok := m[string(k)]; !ok {
		return errors.New("no " + string(k))
	}
	return nil
}

// TestJSONWatch feeds answers piece by piece and checks at which piece the
// value first became usable (-1: never) and how many parses it took.
func TestJSONWatch(t *testing.T) {
	tests := []struct {
		name   string
		pieces []string
		schema Validator
		at     int // piece index where usable; -1 never
		checks int // parses run on the way
	}{
		// An object streamed token by token: one parse, at the closing brace.
		{"object", []string{`{"a"`, `: [1, `, `{"b": 2}`, `]`, `}`, ``}, nil, 4, 1},
		// Braces and quotes inside strings do not move the depth.
		{"strings", []string{`{"s": "}`, `]\"{"`, `, "t": "\\`, `\\"}`}, nil, 3, 1},
		// Prose or a code fence before the value is skipped.
		{"fenced", []string{"Sure:\n```json\n", `{"x": 1}`, "\n```"}, nil, 1, 1},
		// A value that closes but fails the schema is dropped; the next one counts.
		{"schema", []string{`{"a": 1} `, `{"b": 2}`}, wantKeys("b"), 1, 2},
		// Never closes (cut at max_tokens): never usable, never parsed.
		{"cut", []string{`{"a": [1, 2`, `, 3`}, nil, -1, 0},
		// Closes but is not JSON.
		{"broken", []string{`{"a" 1}`}, nil, -1, 1},
		// An array at the top level.
		{"array", []string{`[`, `1, "]"`, `]`}, nil, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &jsonWatch{schema: tt.schema}
			at := -1
			for i, p := range tt.pieces {
				if w.feed([]byte(p)) {
					if at >= 0 {
						t.Fatalf("usable twice: at %d and %d", at, i)
					}
					at = i
				}
			}
			if at != tt.at || w.checks != tt.checks {
				t.Errorf("usable at piece %d after %d parses, want %d after %d (err %v)", at, w.checks, tt.at, tt.checks, w.err)
			}
			if w.finish() != (tt.at >= 0) {
				t.Errorf("finish %v, want %v: %v", !(tt.at >= 0), tt.at >= 0, w.err)
			}
		})
	}
	// A bare scalar has no closing byte: the end decides.
	w := &jsonWatch{}
	if w.feed([]byte(" 42 ")) || !w.finish() {
		t.Errorf("scalar: not usable at the end: %v", w.err)
	}
}

// TestJSONWatchLinear: a long answer fed a byte at a time is parsed once,
// not once per piece (the O(n^2) an incremental check must not cost).
func TestJSONWatchLinear(t *testing.T) {
	text := longJSON(20000)
	w := &jsonWatch{}
	n := 0
	for i := range len(text) {
		if w.feed([]byte(text[i : i+1])) {
			n++
		}
	}
	if n != 1 || w.checks != 1 {
		t.Errorf("usable %d times after %d parses, want once after 1", n, w.checks)
	}
}

// longJSON is an object of n nested-array members.
func longJSON(n int) string {
	var b strings.Builder
	b.WriteString(`{"items": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"k": [1, "x}"]}`)
	}
	b.WriteString("]}")
	return b.String()
}

func BenchmarkJSONWatch(b *testing.B) {
	text := []byte(longJSON(20000))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		w := &jsonWatch{}
		for i := 0; i < len(text); i += 4 {
			w.feed(text[i:min(i+4, len(text))])
		}
		if !w.done {
			b.Fatal("not usable")
		}
	}
}

func toolChunk(first bool, args string) string {
	head := `{"index":0,"function":{`
	if first {
		head = `{"id":"call-1","type":"function","index":0,"function":{"name":"get_weather",`
	}
	return `{"choices":[{"index":0,"delta":{"tool_calls":[` + head + `"arguments":` + jsonQuote(args) + `}}]},"finish_reason":null}]}`
}

func jsonQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestDoUsableToolCall streams a tool call whose arguments close 100 ms
// before the stream ends: Usable is the closing chunk's time, first visible
// the first argument's, and the arguments count as tokens.
func TestDoUsableToolCall(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, r, roleChunk, toolChunk(true, `{"ci`), "sleep:50ms", toolChunk(false, `ty": "Oslo"`),
			toolChunk(false, `}`), "sleep:100ms", finishChunk, usageChunk(7, 3), "[DONE]")
	}, nil)
	req := chatReq(true)
	req.Tools = []byte(`[{"type":"function","function":{"name":"get_weather"}}]`)
	req.ToolChoice = []byte(`"required"`)
	req.Usable = &Usable{ToolSchemas: map[string]Validator{"get_weather": wantKeys("city")}}
	tr := c.Do(t.Context(), req)
	if !tr.OK() || tr.UsableError != "" {
		t.Fatalf("%s %s; usable error %q", tr.Error, tr.ErrorText, tr.UsableError)
	}
	if tr.Events.Len() != 3 || tr.FirstVisible != tr.Events.Event(0).At || tr.Usable != tr.Events.Event(2).At {
		t.Fatalf("events %+v, first visible %v, usable %v", tr.Events, tr.FirstVisible, tr.Usable)
	}
	if gap := tr.Done - tr.Usable; gap < 90*time.Millisecond {
		t.Errorf("usable %v only %v before the end %v", tr.Usable, gap, tr.Done)
	}

	// The same call failing its schema is never usable, and says why.
	req.Usable = &Usable{ToolSchemas: map[string]Validator{"get_weather": wantKeys("town")}}
	tr = c.Do(t.Context(), req)
	if !tr.OK() || tr.Usable != 0 || !strings.Contains(tr.UsableError, "no town") {
		t.Errorf("invalid arguments: usable %v, %q", tr.Usable, tr.UsableError)
	}
}

// TestDoUsableNonStreaming: without streaming the answer is usable when the
// whole body is parsed, which is E2E.
func TestDoUsableNonStreaming(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"content":"{\"a\": 1}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5}}`))
	}, nil)
	req := chatReq(false)
	req.ResponseFormat = []byte(`{"type":"json_object"}`)
	req.Usable = &Usable{}
	tr := c.Do(t.Context(), req)
	if !tr.OK() || tr.Usable == 0 || tr.Usable != tr.Done {
		t.Errorf("usable %v, done %v, %q %s", tr.Usable, tr.Done, tr.UsableError, tr.ErrorText)
	}
}

// TestStructuredFieldsChecked: a field that is not JSON, or one the
// endpoint does not take, is refused before anything is sent.
func TestStructuredFieldsChecked(t *testing.T) {
	for _, req := range []*Request{
		{Endpoint: "chat", Messages: []Message{{Role: "user", Content: "x"}}, ResponseFormat: []byte(`{"type":`)},
		{Endpoint: "completions", Tools: []byte(`[]`)},
	} {
		if _, err := req.body(); err == nil {
			t.Errorf("%s with %s: no error", req.Endpoint, req.ResponseFormat)
		}
	}
}
