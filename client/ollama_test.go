package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ollamaLines are /api/chat's stream as Ollama 0.17.4 writes it (shape from
// its api.ChatResponse): a line per token, then a done line with timings.
func ollamaLines(n int) []string {
	var lines []string
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf(`{"model":"tiny:latest","created_at":"2026-12-01T20:00:00Z","message":{"role":"assistant","content":" w%d"},"done":false}`, i))
	}
	return append(lines, `{"model":"tiny:latest","created_at":"2026-12-01T20:00:01Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","total_duration":123456789,"load_duration":2000000,"prompt_eval_count":17,"prompt_eval_duration":3000000,"eval_count":`+fmt.Sprint(n)+`,"eval_duration":100000000}`)
}

// TestOllamaDecode: the scanner and encoding/json read the same, on the
// lines Ollama sends and on odd ones that make the scanner decline.
func TestOllamaDecode(t *testing.T) {
	cases := append(ollamaLines(2),
		`{"error":"model 'x' not found"}`,
		`{"message":{"content":"caf\u00e9","thinking":"hm"},"done":false}`,
		`{"Message":{"content":"case"},"done":null}`,
		`{"message":null,"done":true,"eval_count":null,"extra":[1,{"a":2}]}`,
	)
	for _, c := range cases {
		var fast, slow OllamaDecoder
		got, err := fast.Decode([]byte(c))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		g := *got
		if err := slow.decodeSlow([]byte(c)); err != nil {
			t.Fatalf("%s: reference: %v", c, err)
		}
		if !reflect.DeepEqual(norm(g), norm(slow.chunk)) {
			t.Errorf("%s:\nscanner %+v\nreference %+v", c, g, slow.chunk)
		}
	}
	var d OllamaDecoder
	last := []byte(ollamaLines(1)[1])
	c, _ := d.Decode(last)
	want := EngineTimes{Total: 123456789, Load: 2 * time.Millisecond, PromptEval: 3 * time.Millisecond, Eval: 100 * time.Millisecond, PromptEvalCount: 17, EvalCount: 1}
	if !c.Done || c.Times != want || string(c.DoneReason) != "length" {
		t.Errorf("done line: %+v", c)
	}
	line := []byte(ollamaLines(1)[0])
	if a := testing.AllocsPerRun(100, func() { d.Decode(line) }); a != 0 {
		t.Errorf("Decode of a token line: %v allocations, want 0", a)
	}
	if _, err := d.Decode([]byte(`{"done":tru}`)); err == nil {
		t.Error("invalid JSON: no error")
	}
}

// norm makes empty and nil slices equal for the comparison.
func norm(c OllamaChunk) OllamaChunk {
	for _, p := range []*[]byte{&c.Content, &c.Thinking, &c.DoneReason, &c.ErrorMessage} {
		if len(*p) == 0 {
			*p = nil
		}
	}
	return c
}

// TestDoOllamaChat: streaming and not, against a server speaking /api/chat;
// the body carries num_predict, seed and keep_alive; the trace has the
// engine's timings and counts.
func TestDoOllamaChat(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		b := make([]byte, r.ContentLength)
		r.Body.Read(b)
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "application/x-ndjson")
		lines := ollamaLines(5)
		if !strings.Contains(string(b), `"stream":true`) {
			lines = []string{strings.Replace(lines[len(lines)-1], `"content":""`, `"content":" w0 w1 w2 w3 w4"`, 1)}
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
	}))
	defer srv.Close()
	c := New(Options{BaseURL: srv.URL})
	defer c.Close()
	for _, stream := range []bool{true, false} {
		req := &Request{Endpoint: EndpointOllamaChat, Model: "tiny", Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: 5,
			Stream: stream, Seed: 7, SeedSet: true, KeepAlive: "5m"}
		tr := c.Do(context.Background(), req)
		if !tr.OK() {
			t.Fatalf("stream %v: %s: %s", stream, tr.Error, tr.ErrorText)
		}
		if !tr.HasEngine || tr.Engine.Total != 123456789 || tr.OutputTokens != 5 || tr.PromptTokens != 17 || tr.FinishReason != "length" {
			t.Errorf("stream %v: trace %+v", stream, tr)
		}
		if stream && (tr.Events.Len() != 5 || tr.FirstVisible >= tr.Done) {
			t.Errorf("streaming: %d events, first visible %v, done %v", tr.Events.Len(), tr.FirstVisible, tr.Done)
		}
		if !stream && tr.FirstVisible != tr.Done {
			t.Errorf("non-streaming: first visible %v != done %v", tr.FirstVisible, tr.Done)
		}
	}
	for _, want := range []string{`"num_predict":5`, `"seed":7`, `"keep_alive":"5m"`} {
		if !strings.Contains(bodies[0], want) {
			t.Errorf("body %s lacks %s", bodies[0], want)
		}
	}
}

// TestOllamaLineEnds: NDJSON lines are read by the SSE reader's line reader:
// "\r\n" ends and blank lines are fine, a stream cut before done is
// truncated, and a line over MaxEventSize is malformed.
func TestOllamaLineEnds(t *testing.T) {
	lines := ollamaLines(3)
	cases := []struct {
		name, body string
		want       ErrorClass
		tokens     int
	}{
		{"crlf and blanks", strings.Join(lines, " \r\n\r\n") + "\r\n", "", 3},
		{"no end after done", strings.Join(lines, "\n"), "", 3},
		{"cut before done", strings.Join(lines[:2], "\n") + "\n", ErrTruncated, 0},
		{"line too long", lines[0] + "\n" + strings.Repeat(" ", MaxEventSize+1) + "x\n", ErrMalformed, 0},
	}
	for _, tc := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprint(w, tc.body)
		}))
		c := New(Options{BaseURL: srv.URL})
		tr := c.Do(context.Background(), &Request{Endpoint: EndpointOllamaChat, Model: "tiny", Messages: []Message{{Role: "user", Content: "hi"}}, Stream: true})
		c.Close()
		srv.Close()
		if tr.Error != tc.want {
			t.Errorf("%s: error %q (%s), want %q", tc.name, tr.Error, tr.ErrorText, tc.want)
		}
		if tc.want == "" && (tr.OutputTokens != tc.tokens || tr.Events.Len() != tc.tokens) {
			t.Errorf("%s: %d tokens in %d events, want %d", tc.name, tr.OutputTokens, tr.Events.Len(), tc.tokens)
		}
	}
}
