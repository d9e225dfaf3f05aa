package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
)

func TestPromptFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"prompt": "hello"}

{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
`), 0o644)
	p, err := workload.LoadPromptFile(good)
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
		if _, err := workload.LoadPromptFile(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadPromptFile(%q) error = %v, want %q", tc.body, err, tc.want)
		}
	}
	// #8: a UTF-8 byte order mark (Windows editors) before the first line.
	bom := filepath.Join(dir, "bom.jsonl")
	os.WriteFile(bom, []byte("\uFEFF{\"prompt\": \"hello\"}\n{\"messages\": [{\"role\": \"assistant\", \"content\": null}, {\"role\": \"user\", \"content\": \"x\"}]}\n"), 0o644)
	if p, err := workload.LoadPromptFile(bom); err != nil || p.Len() != 2 {
		t.Errorf("prompt file with a BOM: %v", err)
	} else if fill(p, &chat, 0); chat.Messages[0].Content != "hello" {
		t.Errorf("BOM kept in the prompt: %q", chat.Messages[0].Content)
	}
	if _, err := workload.LoadPromptFile(filepath.Join(dir, "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file error = %v, want the path named", err)
	}
}

func TestSyntheticPrompt(t *testing.T) {
	p, err := workload.SyntheticPrompts(300, 1)
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
	if _, err := workload.SyntheticPrompts(0, 1); err == nil || !strings.Contains(err.Error(), "PromptTokens 0") {
		t.Errorf("SyntheticPrompts(0) error = %v", err)
	}
	if _, err := workload.FixedPrompt("  "); err == nil {
		t.Error("FixedPrompt(blank) accepted")
	}
}

// fill sets req's prompt as the runner builds request i's first turn from src.
func fill(src workload.Source, req *client.Request, i int) {
	st := &runState{spec: &RunSpec{Request: RequestSpec{Endpoint: req.Endpoint, MaxTokens: 1}, Source: src}}
	c := src.Conversation(i)
	*req = st.request(&c, 0, nil)
}
