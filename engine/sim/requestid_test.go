package sim_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestRequestIDHeader: the engine takes X-Request-Id as its request id, as
// vLLM's OpenAI server does ("chatcmpl-" or "cmpl-" + the header), and with
// --enable-log-requests its log names the request on receipt and finish.
func TestRequestIDHeader(t *testing.T) {
	var log syncBuffer
	e := simtest.Start(t, func(o *sim.Options) { o.Log = &log; o.Speedup = 100; o.LogRequests = true })

	resp := post(t, e, "/v1/chat/completions", chat("hi", 4, false), sim.RequestIDHeader, "sb-t-0-0123abcd")
	var body struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if body.ID != "chatcmpl-sb-t-0-0123abcd" {
		t.Errorf("response id %q, want chatcmpl- + the header", body.ID)
	}
	resp = post(t, e, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 4, "stream": true}, sim.RequestIDHeader, "sb-t-1-0123abcd")
	sse, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(sse), `"id":"cmpl-sb-t-1-0123abcd"`) {
		t.Errorf("stream chunks lack id cmpl-sb-t-1-0123abcd:\n%s", sse)
	}
	// Without the header the id is the engine's own.
	resp = post(t, e, "/v1/chat/completions", chat("hi", 2, false))
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if !strings.HasPrefix(body.ID, "chatcmpl-") || strings.Contains(body.ID, "sb-") {
		t.Errorf("no header: id %q, want the engine's own chatcmpl- id", body.ID)
	}

	deadline := time.Now().Add(5 * time.Second) // the finish line follows the response
	for !strings.Contains(log.String(), "Finished request cmpl-sb-t-1-0123abcd.") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := log.String()
	for _, want := range []string{
		"Received request chatcmpl-sb-t-0-0123abcd: prompt_tokens: ",
		"Finished request chatcmpl-sb-t-0-0123abcd.",
		"Received request cmpl-sb-t-1-0123abcd: ",
		"Finished request cmpl-sb-t-1-0123abcd.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestRequestLogOffByDefault: like vLLM 0.11, no per-request lines without
// --enable-log-requests.
func TestRequestLogOffByDefault(t *testing.T) {
	var log syncBuffer
	e := simtest.Start(t, func(o *sim.Options) { o.Log = &log; o.Speedup = 100 })
	resp := post(t, e, "/v1/chat/completions", chat("hi", 2, false), sim.RequestIDHeader, "sb-t-0-0123abcd")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if strings.Contains(log.String(), "sb-t-0-0123abcd") {
		t.Errorf("request logged without LogRequests:\n%s", log.String())
	}
}

// TestRequestIDAbortLogged: a client that leaves mid-stream aborts its
// request, and the log names it by the client's id.
func TestRequestIDAbortLogged(t *testing.T) {
	var log syncBuffer
	e := simtest.Start(t, func(o *sim.Options) { o.Log = &log; o.Speedup = 100; o.LogRequests = true })
	// 4,000 tokens at 15 ms / 100: about 0.6 s, far longer than reading one chunk.
	resp := post(t, e, "/v1/chat/completions", chat("hi", 4000, true), sim.RequestIDHeader, "sb-t-7-0123abcd")
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil { // the stream has begun
		t.Fatal(err)
	}
	resp.Body.Close() // and the client leaves
	const want = "Aborted request chatcmpl-sb-t-7-0123abcd."
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q:\n%s", want, log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(log.String(), "Finished request chatcmpl-sb-t-7-0123abcd.") {
		t.Error("an aborted request was also logged as finished")
	}
}
