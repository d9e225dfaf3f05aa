package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// writeEvents writes each item as one SSE event and flushes it; an item
// "sleep:DURATION" waits instead (bounded by the request's context).
func writeEvents(w http.ResponseWriter, r *http.Request, items ...string) {
	io.Copy(io.Discard, r.Body) // the server notices a gone client only once the body is read
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	for _, it := range items {
		if d, ok := strings.CutPrefix(it, "sleep:"); ok {
			dur, _ := time.ParseDuration(d)
			select {
			case <-time.After(dur):
			case <-r.Context().Done():
				return
			}
			continue
		}
		fmt.Fprintf(w, "data: %s\n\n", it)
		f.Flush()
	}
}

const (
	roleChunk   = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	finishChunk = `{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]}`
)

func usageChunk(prompt, completion int) string {
	return fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		prompt, completion, prompt+completion)
}

func chatReq(stream bool) *Request {
	return &Request{Endpoint: "chat", Model: "m", Messages: []Message{{Role: "user", Content: "hi"}},
		MaxTokens: 3, Stream: stream}
}

func newTestClient(t *testing.T, h http.HandlerFunc, mutate func(*Options)) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	opts := Options{BaseURL: srv.URL, MaxConns: 4}
	if mutate != nil {
		mutate(&opts)
	}
	c := New(opts)
	t.Cleanup(c.Close)
	return c
}

// TestDoStreamChat follows one vLLM-shaped stream: a role-only chunk that
// is not visible output, three content chunks, a finish chunk, a usage
// chunk and [DONE]; and checks what was sent.
func TestDoStreamChat(t *testing.T) {
	var sent map[string]any
	var header http.Header
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Clone()
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "wrong path "+r.URL.Path, 404)
			return
		}
		json.NewDecoder(r.Body).Decode(&sent)
		writeEvents(w, r, roleChunk, "sleep:200ms", vllmChunk("a"), vllmChunk("b"), vllmChunk("c"),
			finishChunk, usageChunk(7, 3), "[DONE]")
	}, func(o *Options) { o.APIKey = "sk-test" })
	req := chatReq(true)
	req.ExactLength = true
	tr := c.Do(context.Background(), req)
	if !tr.OK() {
		t.Fatalf("failed: %s %s", tr.Error, tr.ErrorText)
	}
	if tr.Status != 200 || tr.PromptTokens != 7 || tr.OutputTokens != 3 || tr.TokensFrom != TokensFromUsage ||
		tr.FinishReason != "length" || tr.Events.Len() != 3 || !tr.Stream {
		t.Errorf("trace: %+v", tr)
	}
	// Phases in order, from one start; the role chunk came 200 ms before
	// the first content and must not count as first visible (the check
	// allows 100 ms of scheduling noise on a loaded machine).
	if !(0 < tr.Written && tr.Written <= tr.FirstByte && tr.FirstByte < tr.FirstToken &&
		tr.FirstToken == tr.FirstVisible && tr.FirstVisible <= tr.Done) {
		t.Errorf("phases out of order: %+v", tr)
	}
	if tr.FirstVisible-tr.FirstByte < 100*time.Millisecond {
		t.Errorf("first visible %v only %v after first byte: the role chunk was counted", tr.FirstVisible, tr.FirstVisible-tr.FirstByte)
	}
	if tr.Events.Event(0).At != tr.FirstVisible || tr.Events.Event(0).Tokens != 1 || tr.Events.Event(2).At > tr.Done {
		t.Errorf("events: %+v", tr.Events)
	}
	// The request: exact length, usage in the stream, the key as Bearer.
	want := map[string]any{"model": "m", "max_tokens": 3.0, "min_tokens": 3.0, "ignore_eos": true, "stream": true,
		"stream_options": map[string]any{"include_usage": true}}
	for k, v := range want {
		if fmt.Sprint(sent[k]) != fmt.Sprint(v) {
			t.Errorf("request %s = %v, want %v", k, sent[k], v)
		}
	}
	if got := header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	// As the OpenAI SDKs ask: gzip.
	if got := header.Get("Accept-Encoding"); got != EncodingGzip {
		t.Errorf("Accept-Encoding = %q, want gzip", got)
	}
}

// TestDoStreamTokens covers where token counts come from.
func TestDoStreamTokens(t *testing.T) {
	tests := []struct {
		name       string
		events     []string
		wantTokens int
		wantFrom   string
		wantEvents []int // tokens per recorded event
		wantReason []bool
	}{
		// No usage chunk (server without include_usage): counted, one per event.
		{"counted", []string{roleChunk, vllmChunk("a"), vllmChunk("b"), "[DONE]"}, 2, TokensFromEvents, []int{1, 1}, []bool{false, false}},
		// Continuous usage stats: the growth of completion_tokens per event.
		{"continuous usage", []string{
			`{"choices":[{"delta":{"content":"ab"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
			`{"choices":[{"delta":{"content":"cde"}}],"usage":{"prompt_tokens":5,"completion_tokens":5}}`,
			`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5}}`, "[DONE]"},
			5, TokensFromUsage, []int{2, 3}, []bool{false, false}},
		// Reasoning first: token events, not visible.
		{"reasoning", []string{`{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, vllmChunk("x"), "[DONE]"},
			2, TokensFromEvents, []int{1, 1}, []bool{true, false}},
		// Completions-style text.
		{"text", []string{`{"choices":[{"text":"x"}]}`, `{"choices":[{"text":"y","finish_reason":"stop"}]}`, "[DONE]"},
			2, TokensFromEvents, []int{1, 1}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) { writeEvents(w, r, tt.events...) }, nil)
			tr := c.Do(context.Background(), chatReq(true))
			if !tr.OK() || tr.OutputTokens != tt.wantTokens || tr.TokensFrom != tt.wantFrom || tr.Events.Len() != len(tt.wantEvents) {
				t.Fatalf("trace: %+v", tr)
			}
			for i, e := range tr.Events.All() {
				if e.Tokens != tt.wantEvents[i] || e.Reasoning != tt.wantReason[i] {
					t.Errorf("event %d: %+v", i, e)
				}
			}
			if tt.wantReason[0] && !(tr.FirstToken < tr.FirstVisible) {
				t.Errorf("reasoning first: first token %v should precede first visible %v", tr.FirstToken, tr.FirstVisible)
			}
		})
	}
}

// TestDoStreamEventCap: events past MaxEvents are counted, not stored.
func TestDoStreamEventCap(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		ev := "data: " + vllmChunk("t") + "\n\n"
		io.WriteString(w, strings.Repeat(ev, MaxEvents+5)+"data: [DONE]\n\n")
	}, nil)
	tr := c.Do(context.Background(), chatReq(true))
	if !tr.OK() || tr.Events.Len() != MaxEvents || tr.EventsDropped != 5 || tr.OutputTokens != MaxEvents+5 {
		t.Errorf("events %d, dropped %d, tokens %d, err %s", tr.Events.Len(), tr.EventsDropped, tr.OutputTokens, tr.ErrorText)
	}
}

// TestDoNonStreaming: first visible is the whole body parsed.
func TestDoNonStreaming(t *testing.T) {
	var sent map[string]any
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&sent)
		time.Sleep(30 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"text_completion","choices":[{"index":0,"text":"hello world","finish_reason":"length"}],`+
			`"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`)
	}, nil)
	tr := c.Do(context.Background(), &Request{Endpoint: "completions", Model: "m", Prompt: "p", MaxTokens: 2})
	if !tr.OK() || tr.Stream || tr.OutputTokens != 2 || tr.PromptTokens != 4 || tr.TokensFrom != TokensFromUsage || tr.FinishReason != "length" {
		t.Fatalf("trace: %+v", tr)
	}
	if !(tr.FirstByte >= 30*time.Millisecond && tr.FirstByte <= tr.FirstVisible && tr.FirstVisible == tr.Done && tr.FirstToken == tr.Done) {
		t.Errorf("phases: %+v", tr)
	}
	if sent["prompt"] != "p" || sent["stream"] != false || sent["stream_options"] != nil || sent["messages"] != nil {
		t.Errorf("request: %v", sent)
	}
}

// TestDoKeepAlive: consecutive requests reuse one connection.
func TestDoKeepAlive(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, r, vllmChunk("a"), "[DONE]")
	}, nil)
	first := c.Do(context.Background(), chatReq(true))
	second := c.Do(context.Background(), chatReq(true))
	if !first.OK() || !second.OK() || first.ConnReused || !second.ConnReused {
		t.Errorf("reuse: first %v (%s), second %v (%s)", first.ConnReused, first.Error, second.ConnReused, second.Error)
	}
}

func TestModels(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"bad key k"}}`)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"a","object":"model","max_model_len":4096},{"id":"b"}]}`)
	}, func(o *Options) { o.APIKey = "k"; o.BaseURL += "/v1/" })
	got, err := c.Models(context.Background())
	if err != nil || len(got) != 2 || got[0] != (ModelInfo{"a", 4096}) || got[1] != (ModelInfo{"b", 0}) {
		t.Errorf("Models = %+v, %v", got, err)
	}
	bad := New(Options{BaseURL: c.base, APIKey: "wrong-key-123"})
	_, err = bad.Models(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("Models with a bad key: %v", err)
	}
}

func TestAPIKeyFromEnv(t *testing.T) {
	t.Setenv(DefaultAPIKeyEnv, " sk-default\n")
	t.Setenv("MY_KEY", "sk-mine")
	if got := APIKeyFromEnv(""); got != "sk-default" {
		t.Errorf("default env: %q", got)
	}
	if got := APIKeyFromEnv("MY_KEY"); got != "sk-mine" {
		t.Errorf("named env: %q", got)
	}
	if got := APIKeyFromEnv("SERVEBENCH_UNSET_KEY_VAR"); got != "" {
		t.Errorf("unset env: %q", got)
	}
}

// TestDoMaxConns: the pool holds MaxConns connections; a request beyond
// that waits for one, gets it only once the request holding it is done,
// and Trace.Conn shows the wait.
func TestDoMaxConns(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, r, "sleep:200ms", vllmChunk("a"), "[DONE]")
	}, func(o *Options) { o.MaxConns = 1 })
	traces := make(chan Trace, 2)
	for i := 0; i < 2; i++ {
		go func() { traces <- c.Do(context.Background(), chatReq(true)) }()
	}
	a, b := <-traces, <-traces
	if !a.OK() || !b.OK() {
		t.Fatalf("failed: %s %s / %s %s", a.Error, a.ErrorText, b.Error, b.ErrorText)
	}
	if a.ConnReused == b.ConnReused {
		t.Fatalf("reused %v/%v; want the first request on a new connection and the second on the same one", a.ConnReused, b.ConnReused)
	}
	first, waiter := a, b
	if a.ConnReused {
		first, waiter = b, a
	}
	if got, done := waiter.Start.Add(waiter.Conn), first.Start.Add(first.Done); got.Before(done) {
		t.Errorf("second request got its connection %v before the first was done; want it to wait for the first", done.Sub(got))
	}
}

// TestDoKeepText: with KeepText the answer's content comes back as received
// (streamed deltas joined; a body's message), with the cached prompt tokens
// of usage.prompt_tokens_details; without it no text is kept.
func TestDoKeepText(t *testing.T) {
	const usage = `{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":32}}}`
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		if req["stream"] == true {
			writeEvents(w, r, roleChunk, vllmChunk("Hello"), vllmChunk(", "), vllmChunk("you"), finishChunk, usage, "[DONE]")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":40,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":16}}}`)
	}, nil)
	for _, tc := range []struct {
		stream, keep bool
		text         string
		cached       int
	}{
		{true, true, "Hello, you", 32},
		{true, false, "", 32},
		{false, true, "Hi there", 16},
	} {
		req := chatReq(tc.stream)
		req.KeepText = tc.keep
		tr := c.Do(context.Background(), req)
		if !tr.OK() || tr.Text != tc.text || tr.CachedTokens != tc.cached {
			t.Errorf("stream %v keep %v: text %q cached %d (%s %s), want %q %d", tc.stream, tc.keep, tr.Text,
				tr.CachedTokens, tr.Error, tr.ErrorText, tc.text, tc.cached)
		}
	}
}
