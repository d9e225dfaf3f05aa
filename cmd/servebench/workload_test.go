package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMultiTurnReport runs synthetic sessions end to end on the bundled
// engine (a child process, sped up, prefix caching on as in vLLM V1, cached
// tokens reported): every turn is recorded with its session and turn, later
// turns send the history and find it in the prefix cache, and report.md
// shows first output by turn with turns.png beside it.
func TestMultiTurnReport(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runMain("run", "--speedup", "50", "--engine-arg=--enable-prompt-tokens-details",
		"--turns", "3", "--input-tokens", "uniform:200-300", "--output-tokens", "24", "--think-time", "0.01",
		"--shared-prefix-tokens", "64", "--prefix-groups", "2", "--concurrency", "2", "--requests", "4",
		"--stream", "on", "--seed", "3", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res, recs := loadSaved(t, dir)
	w := res.Runs[0].Workload
	if w.Source != "synthetic" || w.Turns != "3" || w.InputTokens != "uniform:200-300" || w.ThinkTimeS != "0.01" ||
		w.PrefixGroups != 2 || w.Seed != 3 {
		t.Errorf("workload block %+v", w)
	}
	if len(recs) != 12 {
		t.Fatalf("%d records, want 4 sessions x 3 turns", len(recs))
	}
	prompt := map[string][4]int{} // session -> prompt tokens by turn
	for _, r := range recs {
		if r.Error != "" || r.Session == "" || r.Turn < 1 || r.Turn > 3 || r.PrefixGroup < 1 || r.OutputTokens != 24 {
			t.Fatalf("record %+v", r)
		}
		p := prompt[r.Session]
		p[r.Turn] = r.PromptTokens
		prompt[r.Session] = p
		if r.Turn > 1 && r.CachedTokens < 200 {
			t.Errorf("session %s turn %d: %d cached tokens, want the earlier turns found in the prefix cache", r.Session, r.Turn, r.CachedTokens)
		}
	}
	for s, p := range prompt {
		// Each turn adds 200-300 new tokens and the 24-token answer to the history.
		if !(p[2] >= p[1]+224 && p[3] >= p[2]+224) {
			t.Errorf("session %s prompt tokens by turn %v: want the whole history each turn", s, p[1:])
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Sessions: by turn", "| turn | requests | first visible (client, p50) | first token (client, p50)",
		"| 1 | 4 |", "| 2 | 4 |", "| 3 | 4 |", "![First output and prompt tokens by session turn](turns.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "turns.png")); err != nil || fi.Size() < 10_000 {
		t.Errorf("turns.png: %v", err)
	}
}
