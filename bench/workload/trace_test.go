package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// TestMooncakeTrace: send times from the timestamps, lengths from the
// trace, and prompts that share exactly the blocks their hash ids share.
func TestMooncakeTrace(t *testing.T) {
	tr, err := LoadTrace(fixtures+"mooncake.jsonl", "", 2, "", 5)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 6 || tr.Format != SourceMooncake {
		t.Fatalf("%d entries, format %s", tr.Len(), tr.Format)
	}
	wantAt := []time.Duration{0, 75, 75, 210, 500, 1250} // ms / speed 2
	texts := make([][]string, tr.Len())
	for i, w := range wantAt {
		c := tr.Conversation(i)
		if c.At != w*time.Millisecond {
			t.Errorf("entry %d at %v, want %v", i, c.At, w*time.Millisecond)
		}
		text, _ := c.Turns[0].UserText(c.TextSeed, 0, nil, 0)
		texts[i] = strings.Fields(text)
	}
	if len(texts[0]) != 1200 || tr.Conversation(0).Turns[0].OutputTokens != 12 {
		t.Errorf("entry 0: %d prompt words, %d output tokens; want 1200 and 12", len(texts[0]), tr.Conversation(0).Turns[0].OutputTokens)
	}
	same := func(a, b []string, from, to int) bool {
		return strings.Join(a[from:to], " ") == strings.Join(b[from:to], " ")
	}
	// Entries 0, 2 and 4 share blocks 0 and 1; 0 and 4 also block 2 (whole).
	if !same(texts[0], texts[2], 0, 1024) || !same(texts[0], texts[4], 0, 1200) {
		t.Error("entries sharing hash ids 0, 1 (and 2) do not share those prompt blocks")
	}
	if same(texts[2], texts[0], 1024, 1100) {
		t.Error("hash ids 2 and 4 gave the same block")
	}
	// Entry 1: block 0 shared, then 188 tokens of block 3: a prefix of it, not of block 1.
	if !same(texts[0], texts[1], 0, 512) || same(texts[0], texts[1], 512, 700) || len(texts[1]) != 700 {
		t.Error("entry 1 (hash ids 0, 3; 700 tokens): want block 0 shared, a block 3 of its own")
	}
	var w result.Workload
	tr.Describe(&w)
	if w.Source != "mooncake" || w.Trace.Speed != 2 || w.Trace.Entries != 6 || w.Trace.SpanS != 1.25 || len(w.SourceSHA256) != 64 {
		t.Errorf("workload block %+v %+v", w, w.Trace)
	}

	win, err := LoadTrace(fixtures+"mooncake.jsonl", SourceMooncake, 1, "0.15,1", 5)
	if err != nil {
		t.Fatal(err)
	}
	// Entries at 150, 150, 420 and 1000 ms fall in [150 ms, 1150 ms).
	if win.Len() != 4 || win.Conversation(0).At != 0 || win.Conversation(3).At != 850*time.Millisecond {
		t.Errorf("--trace-window 0.15,1: %d entries, first at %v, last at %v", win.Len(), win.Conversation(0).At, win.Conversation(3).At)
	}
}

func TestAzureTrace(t *testing.T) {
	tr, err := LoadTrace(fixtures+"azure.csv", "", 1, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 5 || tr.Format != SourceAzure {
		t.Fatalf("%d entries, format %s", tr.Len(), tr.Format)
	}
	c := tr.Conversation(1)
	if c.At != 4314579*time.Microsecond || c.Turns[0].Tokens != 396 || c.Turns[0].OutputTokens != 109 {
		t.Errorf("row 2: at %v, %d in, %d out", c.At, c.Turns[0].Tokens, c.Turns[0].OutputTokens)
	}
	if a, b := tr.Conversation(0), tr.Conversation(2); a.Turns[0].Seed == b.Turns[0].Seed {
		t.Error("two rows got the same prompt text")
	}
}

// TestTraceRefused: bad traces exit 2 naming file, line and field.
func TestTraceRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	for _, tc := range []struct {
		file, format, window string
		speed                float64
		want                 string
	}{
		{write("back.jsonl", "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 5, \"input_length\": 5, \"output_length\": 1}\n"),
			"", "", 1, "back.jsonl:2: \"timestamp\" 5 before the previous line's 10: expected times in order"},
		{write("noin.jsonl", "{\"timestamp\": 1, \"output_length\": 1}\n"), "", "", 1, "noin.jsonl:1: \"input_length\": expected a token count >= 1"},
		{write("junk.jsonl", "\n\n{\"timestamp\": \"x\"}\n"), "", "", 1, "junk.jsonl:3: json: cannot unmarshal string"},
		{write("back.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,5,1\n2023-11-16 18:15:45.00,5,1\n"),
			"", "", 1, "back.csv:3: TIMESTAMP 2023-11-16 18:15:45.00 before the previous row's"},
		{write("date.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,5,1\n"), "", "", 1, "date.csv:2: TIMESTAMP \"yesterday\""},
		{write("ctx.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,0,1\n"), "", "", 1, "ctx.csv:2: ContextTokens \"0\""},
		{write("head.csv", "time,in,out\n"), "", "", 1, "head.csv:1: header has no TIMESTAMP column"},
		{write("t.txt", "x"), "", "", 1, "expected TraceFormat mooncake or azure"},
		{fixtures + "azure.csv", "alibaba", "", 1, `TraceFormat "alibaba"`},
		{fixtures + "azure.csv", "", "", -1, "TraceSpeed -1"},
		{fixtures + "azure.csv", "", "10", 1, `TraceWindow "10": expected START,DURATION`},
		{fixtures + "azure.csv", "", "1h,1m", 1, "no requests in TraceWindow"},
		{filepath.Join(dir, "missing.csv"), "", "", 1, "missing.csv"},
	} {
		if _, err := LoadTrace(tc.file, tc.format, tc.speed, tc.window, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadTrace(%s) error %v, want %q", filepath.Base(tc.file), err, tc.want)
		}
	}
}
