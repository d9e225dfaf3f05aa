package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestEndToEnd runs the client against the bundled engine (in-process, on
// 127.0.0.1, sped up): chat and completions, streaming and not, with exact
// output length, so token counts must match to the token.
func TestEndToEnd(t *testing.T) {
	const key = "sk-e2e-key"
	e := simtest.Start(t, func(o *sim.Options) { o.APIKey = key; o.Speedup = 50 })
	c := client.New(client.Options{BaseURL: e.BaseURL(), APIKey: key, MaxConns: 4, RequestTimeout: 30 * time.Second})
	defer c.Close()
	ctx := context.Background()

	models, err := c.Models(ctx)
	if err != nil || len(models) == 0 {
		t.Fatalf("Models: %v, %v", models, err)
	}
	model := models[0].ID
	if models[0].MaxModelLen != 4096 {
		t.Errorf("max_model_len %d, want the default profile's 4096", models[0].MaxModelLen)
	}

	const n = 128
	traces := map[string]client.Trace{}
	for _, endpoint := range []string{"chat", "completions"} {
		for _, stream := range []bool{true, false} {
			req := &client.Request{Endpoint: endpoint, Model: model, MaxTokens: n, ExactLength: true, Stream: stream,
				Messages: []client.Message{{Role: "user", Content: "Write a story about a fox."}},
				Prompt:   "Once upon a time"}
			tr := c.Do(ctx, req)
			name := endpoint + map[bool]string{true: "/stream", false: "/nonstream"}[stream]
			traces[name] = tr
			if !tr.OK() {
				t.Errorf("%s: %s %s", name, tr.Error, tr.ErrorText)
				continue
			}
			if tr.OutputTokens != n || tr.TokensFrom != client.TokensFromUsage || tr.PromptTokens <= 0 ||
				tr.FinishReason != "length" || tr.Status != 200 {
				t.Errorf("%s: tokens %d from %q, prompt %d, finish %q, status %d", name, tr.OutputTokens,
					tr.TokensFrom, tr.PromptTokens, tr.FinishReason, tr.Status)
			}
			if !(tr.Written > 0 && tr.Written <= tr.FirstByte && tr.FirstByte <= tr.FirstToken &&
				tr.FirstToken <= tr.FirstVisible && tr.FirstVisible <= tr.Done) {
				t.Errorf("%s: phases out of order: %+v", name, tr)
			}
			if !stream {
				continue
			}
			sum := 0
			for _, ev := range tr.Events.All() {
				sum += ev.Tokens
			}
			if sum != n || tr.Events.Event(0).At != tr.FirstVisible {
				t.Errorf("%s: events carry %d tokens in %d events, want %d", name, sum, tr.Events.Len(), n)
			}
		}
	}
	// The seed's lesson in miniature: streaming shows the first token long
	// before a non-streaming answer shows anything.
	s, ns := traces["chat/stream"], traces["chat/nonstream"]
	if s.OK() && ns.OK() && !(s.FirstVisible*2 < ns.FirstVisible) {
		t.Errorf("streaming first visible %v vs non-streaming %v", s.FirstVisible, ns.FirstVisible)
	}

	// A wrong key is an HTTP 401 with the server's message.
	bad := client.New(client.Options{BaseURL: e.BaseURL(), APIKey: "wrong"})
	tr := bad.Do(ctx, &client.Request{Endpoint: "chat", Model: model, Messages: []client.Message{{Role: "user", Content: "x"}}, MaxTokens: 1})
	if tr.Error != client.ErrHTTPStatus || tr.Status != 401 {
		t.Errorf("wrong key: %s %d %q", tr.Error, tr.Status, tr.ErrorText)
	}
}

// TestEndToEndSpeculative: against the engine's speculative decoding, events
// carry 1 to K+1 tokens, and the trace counts every token of each, from the
// per-chunk usage with ContinuousUsage, else from the chunks' text.
func TestEndToEndSpeculative(t *testing.T) {
	const k, n = 3, 128
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 200; o.SpeculativeTokens, o.AcceptanceRate = k, 0.7 })
	c := client.New(client.Options{BaseURL: e.BaseURL(), RequestTimeout: 30 * time.Second})
	defer c.Close()
	for _, continuous := range []bool{true, false} {
		tr := c.Do(context.Background(), &client.Request{Endpoint: "chat", Model: e.ServedModelName(), MaxTokens: n, ExactLength: true,
			Stream: true, ContinuousUsage: continuous, Messages: []client.Message{{Role: "user", Content: "speculate"}}})
		if !tr.OK() || tr.OutputTokens != n {
			t.Fatalf("continuous=%v: %s %s, %d tokens", continuous, tr.Error, tr.ErrorText, tr.OutputTokens)
		}
		sum, most := 0, 0
		for _, ev := range tr.Events.All() {
			sum += ev.Tokens
			most = max(most, ev.Tokens)
		}
		t.Logf("continuous=%v: %d tokens in %d events, at most %d in one", continuous, sum, tr.Events.Len(), most)
		if sum != n || most < 2 || most > k+1 || tr.Events.Len() >= n {
			t.Errorf("continuous=%v: events carry %d tokens (want %d) in %d events, at most %d in one (want 2..%d)", continuous, sum, n, tr.Events.Len(), most, k+1)
		}
	}
}

// TestEndToEndFaults: the engine's injected faults land in the right error
// class, with the events before the fault kept.
func TestEndToEndFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts one engine per fault")
	}
	tests := []struct {
		fault    string
		stall    time.Duration
		stream   bool
		want     client.ErrorClass
		wantText string
		events   int
	}{
		// vLLM's way: an error event, then [DONE], with HTTP 200.
		{"mid-stream-error-after=5", 0, true, client.ErrStreamError, "injected error after 5 tokens", 5},
		// The connection drops mid-body.
		{"drop-connection-after=5", 0, true, client.ErrTruncated, "stream cut after 5", 5},
		// A cut-off JSON event.
		{"malformed-event-after=5", 0, true, client.ErrMalformed, "malformed event", 5},
		// Events stop for longer than the stall timeout.
		{"stall-after=5:60s", 300 * time.Millisecond, true, client.ErrTimeout, "stall timeout", 5},
		// Every request refused.
		{"http-error=1:503", 0, false, client.ErrHTTPStatus, "HTTP 503", 0},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			e := simtest.Start(t, func(o *sim.Options) { o.Faults = []string{tt.fault}; o.Speedup = 200 })
			c := client.New(client.Options{BaseURL: e.BaseURL(), StallTimeout: tt.stall, RequestTimeout: 30 * time.Second})
			defer c.Close()
			models, err := c.Models(context.Background())
			if err != nil || len(models) == 0 {
				t.Fatalf("Models: %v, %v", models, err)
			}
			tr := c.Do(context.Background(), &client.Request{Endpoint: "chat", Model: models[0].ID, MaxTokens: 32, ExactLength: true,
				Stream: tt.stream, Messages: []client.Message{{Role: "user", Content: "hi"}}})
			if tr.Error != tt.want || !strings.Contains(tr.ErrorText, tt.wantText) {
				t.Errorf("got %s %q, want %s containing %q", tr.Error, tr.ErrorText, tt.want, tt.wantText)
			}
			if tr.Events.Len() != tt.events || tr.OutputTokens != tt.events {
				t.Errorf("partial trace: %d events, %d tokens; want %d", tr.Events.Len(), tr.OutputTokens, tt.events)
			}
		})
	}
}

// TestDoBodyTooLarge: an oversized request comes back as the server's 413
// and its message, not as a broken connection (the server may answer and
// close before it has read the whole body).
func TestDoBodyTooLarge(t *testing.T) {
	e := simtest.Start(t, nil)
	c := client.New(client.Options{BaseURL: e.BaseURL()})
	defer c.Close()
	tr := c.Do(context.Background(), &client.Request{Endpoint: "completions", Model: e.ServedModelName(),
		Prompt: strings.Repeat("a", sim.MaxBodyBytes+1), MaxTokens: 1})
	if tr.Status != 413 || tr.Error != client.ErrHTTPStatus || !strings.Contains(tr.ErrorText, "over") {
		t.Errorf("oversized request: status %d, error %q (%s); want 413 with the server's message", tr.Status, tr.Error, tr.ErrorText)
	}
}

// TestEndToEndUsable: against the engine's structured output and forced
// tool calls, the answer becomes usable to a program only as it ends,
// streaming or not: Usable is within a few milliseconds of Done (the
// engine's end-of-turn step after the JSON closes).
func TestEndToEndUsable(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 20 })
	c := client.New(client.Options{BaseURL: e.BaseURL(), RequestTimeout: 30 * time.Second})
	defer c.Close()
	// A long string, so the answer streams over many steps: ~400 tokens,
	// ~0.3 s at speedup 20, long against the tens of milliseconds a loaded
	// host may starve the reader (which then reads a short stream in one
	// bunch, first visible at usable: 59 tokens in 45 ms failed so).
	const schemaText = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7},` +
		`"summary":{"type":"string","minLength":2000}},"required":["city","days","summary"]}`
	comp := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schemaText))
	if err != nil {
		t.Fatal(err)
	}
	if err := comp.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := comp.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	format := []byte(`{"type":"json_schema","json_schema":{"name":"forecast","schema":` + schemaText + `}}`)
	tools := []byte(`[{"type":"function","function":{"name":"forecast","parameters":` + schemaText + `}}]`)
	cases := []struct {
		name string
		set  func(*client.Request)
	}{
		{"json_schema", func(r *client.Request) { r.ResponseFormat, r.Usable = format, &client.Usable{Schema: schema} }},
		{"tool", func(r *client.Request) {
			r.Tools, r.ToolChoice = tools, []byte(`{"type":"function","function":{"name":"forecast"}}`)
			r.Usable = &client.Usable{ToolSchemas: map[string]client.Validator{"forecast": schema}}
		}},
	}
	for _, cs := range cases {
		for _, stream := range []bool{true, false} {
			req := &client.Request{Endpoint: "chat", Model: e.ServedModelName(), MaxTokens: 1024, Stream: stream,
				Messages: []client.Message{{Role: "user", Content: "The weather in Oslo, please."}}}
			cs.set(req)
			tr := c.Do(context.Background(), req)
			if !tr.OK() || tr.Usable == 0 {
				t.Fatalf("%s stream=%v: %s %s; usable %v %q", cs.name, stream, tr.Error, tr.ErrorText, tr.Usable, tr.UsableError)
			}
			t.Logf("%s stream=%v: first visible %v, usable %v, e2e %v, %d tokens", cs.name, stream, tr.FirstVisible, tr.Usable, tr.Done, tr.OutputTokens)
			if gap := tr.Done - tr.Usable; gap < 0 || gap > 5*time.Millisecond {
				t.Errorf("%s stream=%v: usable %v is %v before E2E %v, want within 5ms", cs.name, stream, tr.Usable, gap, tr.Done)
			}
			if stream && !(tr.FirstVisible*2 < tr.Usable) {
				t.Errorf("%s: first visible %v not well before usable %v", cs.name, tr.FirstVisible, tr.Usable)
			}
		}
	}
}
