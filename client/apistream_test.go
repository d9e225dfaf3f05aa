package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// writeTyped writes each item as an SSE event with its "event:" line, as
// both APIs do; "sleep:D" items wait, as in writeEvents.
func writeTyped(w http.ResponseWriter, r *http.Request, items ...string) {
	typed := make([]string, len(items))
	for i, it := range items {
		var ev struct{ Type string }
		if json.Unmarshal([]byte(it), &ev) == nil && ev.Type != "" {
			typed[i] = "event: " + ev.Type + "\ndata: " + it
			continue
		}
		typed[i] = "data: " + it
		if _, ok := cutSleep(it); ok {
			typed[i] = it
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	for _, it := range typed {
		if d, ok := cutSleep(it); ok {
			time.Sleep(d)
			continue
		}
		fmt.Fprintf(w, "%s\n\n", it)
		f.Flush()
	}
}

func cutSleep(it string) (time.Duration, bool) {
	if len(it) > 6 && it[:6] == "sleep:" {
		d, _ := time.ParseDuration(it[6:])
		return d, true
	}
	return 0, false
}

func apiReq(endpoint string, stream bool) *Request {
	return &Request{Endpoint: endpoint, Model: "m", MaxTokens: 3, ExactLength: true, Stream: stream, KeepText: true,
		Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}}
}

// TestDoStreamMessages follows an Anthropic stream with a thinking block:
// the thinking delta is the first token, not visible output; the first
// text delta is; usage from message_start and message_delta; and checks
// the body and headers sent.
func TestDoStreamMessages(t *testing.T) {
	var sent map[string]any
	var header http.Header
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Clone()
		if r.URL.Path != "/v1/messages" {
			http.Error(w, "wrong path "+r.URL.Path, 404)
			return
		}
		json.NewDecoder(r.Body).Decode(&sent)
		writeTyped(w, r, anthMessageStart, anthThinkStart, anthThinking("hm"), "sleep:150ms", anthBlockStop,
			anthTextStart, anthText("a"), anthText(" b"), anthBlockStop, anthMessageDelta("max_tokens", 7, 4), anthMessageStop)
	}, func(o *Options) { o.APIKey = "k" })
	tr := c.Do(t.Context(), apiReq(EndpointMessages, true))
	if !tr.OK() {
		t.Fatalf("%s: %s", tr.Error, tr.ErrorText)
	}
	if tr.FirstToken == 0 || tr.FirstVisible-tr.FirstToken < 100*time.Millisecond {
		t.Errorf("first token %v, first visible %v: the thinking is not visible output", tr.FirstToken, tr.FirstVisible)
	}
	if tr.Done < tr.FirstVisible || tr.PromptTokens != 7 || tr.OutputTokens != 4 || tr.TokensFrom != TokensFromUsage ||
		tr.FinishReason != "length" || tr.ReasoningTokens != 1 || tr.Text != "a b" || tr.Events.Len() != 3 || !tr.Events.Event(0).Reasoning {
		t.Errorf("trace %+v", tr)
	}
	if sum := tr.Events.Event(0).Tokens + tr.Events.Event(1).Tokens + tr.Events.Event(2).Tokens; sum != 4 {
		t.Errorf("event tokens sum to %d, want usage's 4", sum)
	}
	if sent["system"] != "be brief" || sent["max_tokens"] != 3.0 || sent["ignore_eos"] != true || sent["stream"] != true ||
		len(sent["messages"].([]any)) != 1 {
		t.Errorf("sent %v", sent)
	}
	if header.Get("X-Api-Key") != "k" || header.Get("Anthropic-Version") != AnthropicVersion || header.Get("Authorization") != "Bearer k" {
		t.Errorf("headers %v", header)
	}
}

// TestDoStreamResponses follows a Responses stream: created, a reasoning
// item, output text, completed with usage; no [DONE].
func TestDoStreamResponses(t *testing.T) {
	var sent map[string]any
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/responses" {
			http.Error(w, "wrong path "+r.URL.Path, 404)
			return
		}
		json.NewDecoder(r.Body).Decode(&sent)
		writeTyped(w, r, respCreated, respReasoning("r"), "sleep:150ms", respText("a"), respText(" b"),
			respCompleted("completed", "", 9, 3, 1))
	}, nil)
	tr := c.Do(t.Context(), apiReq(EndpointResponses, true))
	if !tr.OK() {
		t.Fatalf("%s: %s", tr.Error, tr.ErrorText)
	}
	if tr.FirstVisible-tr.FirstToken < 100*time.Millisecond || tr.PromptTokens != 9 || tr.OutputTokens != 3 ||
		tr.ReasoningTokens != 1 || tr.FinishReason != "stop" || tr.Text != "a b" {
		t.Errorf("trace %+v", tr)
	}
	if sent["max_output_tokens"] != 3.0 || sent["store"] != false || len(sent["input"].([]any)) != 2 {
		t.Errorf("sent %v", sent)
	}
}

// TestDoAPINonStreaming: each API's whole answer: every moment is the
// body's, the thinking apart from the text, usage read.
func TestDoAPINonStreaming(t *testing.T) {
	bodies := map[string]string{
		"/v1/messages": `{"id":"chatcmpl-1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},` +
			`{"type":"text","text":"a b"}],"model":"m","stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":4}}`,
		"/v1/responses": `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"hm"}],"summary":[]},` +
			`{"type":"message","content":[{"type":"output_text","text":"a b","annotations":[]}]}],` +
			`"usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":11}}`,
	}
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, bodies[r.URL.Path])
	}, nil)
	for _, ep := range []string{EndpointMessages, EndpointResponses} {
		tr := c.Do(t.Context(), apiReq(ep, false))
		if !tr.OK() {
			t.Fatalf("%s: %s: %s", ep, tr.Error, tr.ErrorText)
		}
		if tr.FirstVisible != tr.Done || tr.FirstToken != tr.Done || tr.Done < 50*time.Millisecond || tr.PromptTokens != 7 ||
			tr.OutputTokens != 4 || tr.ReasoningTokens != 1 || tr.FinishReason != "stop" || tr.Text != "a b" {
			t.Errorf("%s: trace %+v", ep, tr)
		}
	}
}

// TestDoAPIErrors: an error event mid-stream, a stream cut before its
// final event, an error body: each its class.
func TestDoAPIErrors(t *testing.T) {
	cases := []struct {
		name, endpoint string
		h              http.HandlerFunc
		want           ErrorClass
	}{
		{"Anthropic error event", EndpointMessages, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, r, anthMessageStart, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		}, ErrStreamError},
		{"no message_stop", EndpointMessages, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, r, anthMessageStart, anthTextStart, anthText("a"))
		}, ErrTruncated},
		{"no response.completed", EndpointResponses, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, r, respCreated, respText("a"))
		}, ErrTruncated},
		{"Anthropic error body", EndpointMessages, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"type":"error","error":{"type":"BadRequestError","message":"max_tokens too large"}}`)
		}, ErrHTTPStatus},
		{"garbage event", EndpointResponses, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, r, respCreated, `{"type":`)
		}, ErrMalformed},
	}
	for _, c := range cases {
		cl := newTestClient(t, c.h, nil)
		tr := cl.Do(t.Context(), apiReq(c.endpoint, true))
		if tr.Error != c.want {
			t.Errorf("%s: class %q (%s), want %q", c.name, tr.Error, tr.ErrorText, c.want)
		}
	}
}

// TestAPIBodyNeedsMaxTokens: Anthropic requires max_tokens; nothing is
// sent without it.
func TestAPIBodyNeedsMaxTokens(t *testing.T) {
	r := apiReq(EndpointMessages, false)
	r.MaxTokens, r.ExactLength = 0, false
	if _, err := r.body(); err == nil {
		t.Error("a messages request without max tokens was built")
	}
}
