package workload

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

const fixtures = "../../testdata/workload/"

// TestShareGPT reads the fixture as vLLM does (first human turn, the gpt
// reply's token count as output length) and as sessions; the three bad
// entries are skipped and named.
func TestShareGPT(t *testing.T) {
	d, err := LoadDataset("sharegpt:"+fixtures+"sharegpt.json", "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 3 || d.Skipped != 3 {
		t.Fatalf("%d conversations, %d skipped; want 3 and 3", d.Len(), d.Skipped)
	}
	c := d.Conversation(0)
	if len(c.Turns) != 1 || c.Session != "" || c.Turns[0].Text != "What is a lighthouse keeper's daily routine?" {
		t.Errorf("first entry: %+v", c)
	}
	// The reply "A keeper trimmed the wick, ... every few hours." is 30 tokens in cl100k.
	if n := c.Turns[0].OutputTokens; n < 25 || n > 35 {
		t.Errorf("output tokens %d, want the reply's token count (about 30)", n)
	}
	if c := d.Conversation(1); c.System != "You answer in one sentence." {
		t.Errorf("system turn not kept: %+v", c)
	}
	ws := strings.Join(d.Warnings(), " ")
	for _, want := range []string{"3 malformed or empty entries skipped", "sharegpt.json:17: entry 2: no \"conversations\"",
		"sharegpt.json:18: entry 3: conversations[0]: the first human turn is empty or has no gpt reply",
		"sharegpt.json:19: entry 4: \"conversations\" is a string: expected an array"} {
		if !strings.Contains(ws, want) {
			t.Errorf("warnings %q lack %q", ws, want)
		}
	}
	var w result.Workload
	d.Describe(&w)
	if w.Source != "sharegpt" || len(w.SourceSHA256) != 64 || w.SkippedEntries != 3 || w.Turns != "" {
		t.Errorf("workload block %+v", w)
	}
	// The requests ask the replies' lengths, and the dataset holds 3.
	lo, hi := c.Turns[0].OutputTokens, c.Turns[0].OutputTokens
	for i := range d.Len() {
		n := d.Conversation(i).Turns[0].OutputTokens
		lo, hi = min(lo, n), max(hi, n)
	}
	if w.SourceEntries != 3 || w.OutputTokensFrom != "dataset" || !slices.Equal(w.OutputTokensRange, []int{lo, hi}) {
		t.Errorf("lengths and entries: %d, %q, %v; want 3, dataset, [%d %d]", w.SourceEntries, w.OutputTokensFrom, w.OutputTokensRange, lo, hi)
	}

	all, err := LoadDataset("sharegpt:"+fixtures+"sharegpt.json", "all")
	if err != nil {
		t.Fatal(err)
	}
	if c := all.Conversation(0); len(c.Turns) != 3 || c.Session != "conv-a" || c.Turns[2].Text != "Which was the most remote?" {
		t.Errorf("session of conv-a: %+v", c)
	}
	if c := all.Conversation(2); c.Session != "7" || len(c.Turns) != 1 {
		t.Errorf("numeric id: %+v", c)
	}
	two, _ := LoadDataset("sharegpt:"+fixtures+"sharegpt.json", "2")
	if c := two.Conversation(0); len(c.Turns) != 2 {
		t.Errorf("--turns 2: %d turns", len(c.Turns))
	}
	all.Describe(&w)
	if w.Turns != "all" {
		t.Errorf("turns recorded %q", w.Turns)
	}
}

// TestJSONLDataset: prompt-file lines plus output_tokens, sessions ordered
// by turn, bad lines skipped and counted.
func TestJSONLDataset(t *testing.T) {
	d, err := LoadDataset("jsonl:"+fixtures+"chat.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 4 || d.Skipped != 3 {
		t.Fatalf("%d conversations, %d skipped; want 4 and 3 (%v)", d.Len(), d.Skipped, d.Warnings())
	}
	if c := d.Conversation(0); c.Turns[0].OutputTokens != 48 || c.Session != "" {
		t.Errorf("line 1: %+v", c)
	}
	if c := d.Conversation(1); len(c.Turns[0].Messages) != 2 || c.Turns[0].OutputTokens != 16 {
		t.Errorf("messages line: %+v", c)
	}
	s1 := d.Conversation(2)
	if s1.Session != "s1" || len(s1.Turns) != 2 || s1.Turns[0].Text != "Write a two-line poem about the sea." || s1.Turns[1].OutputTokens != 24 {
		t.Errorf("session s1 (turns given out of order): %+v", s1)
	}
	if s2 := d.Conversation(3); s2.Session != "2" || len(s2.Turns) != 3 || s2.Turns[2].Text != "Why?" {
		t.Errorf("session 2 (file order): %+v", s2)
	}
	ws := strings.Join(d.Warnings(), " ")
	for _, want := range []string{"chat.jsonl:8: \"output_tokens\" 0", "chat.jsonl:9:", "chat.jsonl:10: expected"} {
		if !strings.Contains(ws, want) {
			t.Errorf("warnings %q lack %q", ws, want)
		}
	}
	if one, _ := LoadDataset("jsonl:"+fixtures+"chat.jsonl", "1"); len(one.Conversation(3).Turns) != 1 {
		t.Error("--turns 1 kept more than one turn")
	}
}

// TestDatasetRefused: a missing, malformed or empty dataset is an error
// naming the file and line.
func TestDatasetRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	for _, tc := range []struct{ spec, want string }{
		{"sharegpt", `Dataset "sharegpt": expected sharegpt:FILE or jsonl:FILE`},
		{"csv:" + write("a.csv", "x"), "expected sharegpt:FILE or jsonl:FILE"},
		{"sharegpt:" + filepath.Join(dir, "missing.json"), "missing.json"},
		{"sharegpt:" + write("obj.json", "\n{\"id\": 1}"), "obj.json:2: expected a ShareGPT JSON array"},
		{"sharegpt:" + write("cut.json", "[\n{\"id\": 1, \"conversations\": []},\n{\"id\": 2, \"conv"), "cut.json:3: entry 1"},
		{"sharegpt:" + write("none.json", "[{\"conversations\": []}]"), "none.json: no usable entries (1 skipped; first: " + dir},
		{"jsonl:" + write("bad.jsonl", "{\"text\": 1}\n"), "bad.jsonl: no usable entries (1 skipped; first: " + filepath.Join(dir, "bad.jsonl") + ":1:"},
	} {
		if _, err := LoadDataset(tc.spec, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadDataset(%q) error %v, want %q", tc.spec, err, tc.want)
		}
	}
	if _, err := LoadDataset("jsonl:"+fixtures+"chat.jsonl", "0"); err == nil || !strings.Contains(err.Error(), `Turns "0"`) {
		t.Errorf("--turns 0: %v", err)
	}
}

// TestToolSessionDataset: recorded tool-calling sessions read as sessions
// whose later turns carry the tool's result (a JSON value as its text) and
// their pause; bad tool fields are errors naming file, line and field.
func TestToolSessionDataset(t *testing.T) {
	d, err := LoadDataset("jsonl:"+fixtures+"toolsessions.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	if !d.ToolSessions() || d.Len() != 2 || d.Skipped != 0 {
		t.Fatalf("tool sessions %v, %d conversations, %d skipped", d.ToolSessions(), d.Len(), d.Skipped)
	}
	c := d.Conversation(0)
	if c.Session != "paris" || len(c.Turns) != 3 || c.Turns[0].ToolResult != "" || c.Turns[0].Text == "" {
		t.Fatalf("session %q turns %+v", c.Session, c.Turns)
	}
	if r := c.Turns[1].ToolResult; !strings.HasPrefix(r, `{"city": "Paris"`) || c.Turns[1].Think.Seconds() != 0.05 || !c.Turns[1].ThinkSet {
		t.Errorf("turn 2: result %q, think %v", r, c.Turns[1].Think)
	}
	if r := c.Turns[2].ToolResult; r != `{"city": "Paris", "time": "09:14"}` {
		t.Errorf("turn 3: a string result is sent as its contents, got %q", r)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		// a session cannot open with a tool result: no call to answer
		{`{"session": "a", "tool_result": "x"}` + "\n" + `{"session": "a", "prompt": "hi"}`, `bad.jsonl:1: session "a": its first turn has "tool_result"`},
		{`{"session": "a", "prompt": "hi", "think_s": -1}`, `bad.jsonl:1: "think_s" -1`},
		{`{"session": "a", "prompt": "hi"}` + "\n" + `{"session": "a", "tool_result": "x", "prompt": "y"}`, `bad.jsonl:2: "tool_result" with "prompt"`},
		{`{"session": "a", "prompt": "hi"}` + "\n" + `{"session": "a", "tool_result": ""}`, `bad.jsonl:2: "tool_result": expected a non-empty string`},
		{"\n" + `{"tool_result": "x", "think_s": 1}`, `bad.jsonl:2: "tool_result" and "think_s" belong to a session's turn`},
	} {
		p := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := LoadDataset("jsonl:"+p, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.body, err, tc.want)
		}
	}
}
