package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/client"
)

func TestWorkloadValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Workload
		want string // substring of the error; "" = valid
	}{
		{"sequential default mode", Workload{Requests: 3}, ""},
		{"unknown mode names it", Workload{Mode: "burst", Requests: 1}, `"burst"`},
		{"no count and no duration", Workload{Mode: ModeSequential}, "--requests 0"},
		{"negative requests", Workload{Requests: -1}, "--requests -1"},
		{"concurrency zero", Workload{Mode: ModeConcurrent, Requests: 1}, "--concurrency 0"},
		{"rate zero", Workload{Mode: ModeRate, Requests: 1}, "--rate 0"},
		{"rate infinite", Workload{Mode: ModeRate, Rate: math.Inf(1), Requests: 1}, "--rate +Inf"},
		{"gamma needs burstiness", Workload{Mode: ModeRate, Rate: 5, Arrival: ArrivalGamma, Requests: 1}, "--burstiness 0"},
		{"unknown arrival", Workload{Mode: ModeRate, Rate: 5, Arrival: "uniform", Requests: 1}, `--arrival "uniform"`},
		{"duration only", Workload{Mode: ModeConcurrent, Concurrency: 2, Duration: time.Second}, ""},
		{"negative warmup", Workload{Requests: 1, Warmup: -2}, "--warmup -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.w.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestPacerMeanAndSpread checks each arrival process keeps the mean gap at
// 1/rate and has the spread its shape implies (coefficient of variation
// 0 for constant, 1 for Poisson, 1/sqrt(k) for gamma with shape k).
func TestPacerMeanAndSpread(t *testing.T) {
	for _, tc := range []struct {
		arrival string
		shape   float64
		wantCV  float64
	}{
		{ArrivalConstant, 0, 0},
		{ArrivalPoisson, 0, 1},
		{ArrivalGamma, 0.25, 2}, // bursty
		{ArrivalGamma, 4, 0.5},  // smoother than Poisson
	} {
		w := Workload{Mode: ModeRate, Rate: 200, Arrival: tc.arrival, Burstiness: tc.shape, Requests: 1, Seed: 7}
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		p := NewPacer(w)
		const n = 20000
		gaps := make([]float64, n)
		for i := range gaps {
			gaps[i] = p.Next().Seconds()
		}
		s := stats.Summarize(gaps)
		if math.Abs(s.Mean-1.0/200)/(1.0/200) > 0.05 {
			t.Errorf("%s k=%v: mean gap %.5f s, want %.5f s ±5%%", tc.arrival, tc.shape, s.Mean, 1.0/200)
		}
		var ss float64
		for _, g := range gaps {
			ss += (g - s.Mean) * (g - s.Mean)
		}
		cv := math.Sqrt(ss/n) / s.Mean
		if math.Abs(cv-tc.wantCV) > 0.1*math.Max(tc.wantCV, 0.1) {
			t.Errorf("%s k=%v: coefficient of variation %.3f, want %.3f", tc.arrival, tc.shape, cv, tc.wantCV)
		}
	}
}

func TestPacerSeeded(t *testing.T) {
	w := Workload{Mode: ModeRate, Rate: 10, Arrival: ArrivalPoisson, Requests: 1, Seed: 3}
	_ = w.Validate()
	a, b := NewPacer(w), NewPacer(w)
	for i := 0; i < 100; i++ {
		if x, y := a.Next(), b.Next(); x != y {
			t.Fatalf("gap %d differs for the same seed: %v vs %v", i, x, y)
		}
	}
}

func TestPromptFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"prompt": "hello"}

{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
`), 0o644)
	p, err := LoadPromptFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (blank line skipped)", p.Len())
	}
	chat := client.Request{Endpoint: EndpointChat}
	fill(p, &chat, 0)
	if len(chat.Messages) != 1 || chat.Messages[0].Role != "user" || chat.Messages[0].Content != "hello" {
		t.Errorf("chat from prompt line: %+v", chat.Messages)
	}
	fill(p, &chat, 3) // cycles to line 2
	if len(chat.Messages) != 2 || chat.Messages[0].Content != "be brief" {
		t.Errorf("chat from messages line: %+v", chat.Messages)
	}
	comp := client.Request{Endpoint: EndpointCompletions}
	fill(p, &comp, 1)
	if comp.Prompt != "be brief\nhi" {
		t.Errorf("completions from messages: %q %+v", comp.Prompt, comp.Messages)
	}

	for _, tc := range []struct{ body, want string }{
		{"{\"prompt\": \"a\"}\n{not json}\n", "bad.jsonl:2:"},
		{"{\"text\": \"a\"}\n", "bad.jsonl:1: expected"},
		{"\n\n", "no prompts"},
		{"{\"prompt\": \"a\", \"messages\": [{\"role\":\"user\",\"content\":\"b\"}]}\n", "bad.jsonl:1: both"},
		{"{\"messages\": [{\"content\":\"b\"}]}\n", "bad.jsonl:1: messages[0] has no \"role\""},
		// #9: OpenAI multi-part content, common in exported data sets.
		{"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]}\n",
			"bad.jsonl:1: messages[0].content is an array: expected a string (multi-part content is not supported)"},
		// #10: a line that is not an object says what it is, not a Go type.
		{"[\"a\"]\n", "bad.jsonl:1: expected a JSON object {\"prompt\": \"...\"} or {\"messages\": [...]}, got an array"},
		// #11: a role the API refuses, found before the run.
		{"{\"messages\":[{\"role\":\"wizard\",\"content\":\"b\"}]}\n", "bad.jsonl:1: messages[0] role \"wizard\": expected one of system, user"},
	} {
		bad := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(bad, []byte(tc.body), 0o644)
		if _, err := LoadPromptFile(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadPromptFile(%q) error = %v, want %q", tc.body, err, tc.want)
		}
	}
	// #8: a UTF-8 byte order mark (Windows editors) before the first line.
	bom := filepath.Join(dir, "bom.jsonl")
	os.WriteFile(bom, []byte("\uFEFF{\"prompt\": \"hello\"}\n{\"messages\": [{\"role\": \"assistant\", \"content\": null}, {\"role\": \"user\", \"content\": \"x\"}]}\n"), 0o644)
	if p, err := LoadPromptFile(bom); err != nil || p.Len() != 2 {
		t.Errorf("prompt file with a BOM: %v", err)
	} else if fill(p, &chat, 0); chat.Messages[0].Content != "hello" {
		t.Errorf("BOM kept in the prompt: %q", chat.Messages[0].Content)
	}
	if _, err := LoadPromptFile(filepath.Join(dir, "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file error = %v, want the path named", err)
	}
}

func TestSyntheticPrompt(t *testing.T) {
	p, err := SyntheticPrompts(300, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, b := client.Request{Endpoint: EndpointCompletions}, client.Request{Endpoint: EndpointCompletions}
	fill(p, &a, 0)
	fill(p, &b, 1)
	if n := len(strings.Fields(a.Prompt)); n != 300 {
		t.Errorf("synthetic prompt has %d words, want 300 (one token each)", n)
	}
	if a.Prompt == b.Prompt {
		t.Error("requests 0 and 1 got the same synthetic prompt: a prefix cache would serve one from the other")
	}
	again := client.Request{Endpoint: EndpointCompletions}
	fill(p, &again, 0)
	if again.Prompt != a.Prompt {
		t.Error("synthetic prompt is not deterministic for a seed and index")
	}
	if _, err := SyntheticPrompts(0, 1); err == nil || !strings.Contains(err.Error(), "--prompt-tokens 0") {
		t.Errorf("SyntheticPrompts(0) error = %v", err)
	}
	if _, err := FixedPrompt("  "); err == nil {
		t.Error("FixedPrompt(blank) accepted")
	}
}

// fill sets req's prompt as the runner builds request i's first turn from src.
func fill(src Source, req *client.Request, i int) {
	st := &runState{spec: &RunSpec{Request: RequestSpec{Endpoint: req.Endpoint, MaxTokens: 1}, Source: src}}
	c := src.Conversation(i)
	*req = st.request(&c, 0, nil)
}
