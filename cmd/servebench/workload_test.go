package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/sim/simtest"
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
		"--warmup", "0", "--stream", "on", "--seed", "3", "--out", dir, "--quiet")
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

// TestDatasetAndTraceRuns: a JSONL dataset with sessions and bad lines, and
// an Azure trace replayed 20 times faster, each end to end against the
// bundled engine: every good entry sent (sessions whole, in turn order),
// the skipped lines named once in the warnings, the trace open loop with
// its schedule recorded.
func TestDatasetAndTraceRuns(t *testing.T) {
	e := simtest.Start(t, nil)
	fixtures := filepath.Join("..", "..", "testdata", "workload")

	dir := t.TempDir()
	code, _, stderr := runMain("run", "--base-url", e.BaseURL(), "--dataset", "jsonl:"+filepath.Join(fixtures, "chat.jsonl"),
		"--requests", "4", "--concurrency", "2", "--stream", "on", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("dataset run: exit %d\n%s", code, stderr)
	}
	res, recs := loadSaved(t, dir)
	if len(recs) != 7 { // 2 single requests, a session of 2 turns, one of 3
		t.Errorf("%d records, want 7", len(recs))
	}
	for _, r := range recs {
		if r.Error != "" || r.MaxTokens == 0 || r.OutputTokens != r.MaxTokens {
			t.Errorf("record %+v: want the line's output_tokens, exactly", r)
		}
	}
	skipped := 0
	for _, w := range res.Warnings {
		if strings.Contains(w, "3 malformed or empty entries skipped") && strings.Contains(w, "chat.jsonl:8:") {
			skipped++
		}
	}
	if skipped != 1 {
		t.Errorf("warnings %q: want the skipped lines named once", res.Warnings)
	}
	if w := res.Runs[0].Workload; w.Source != "jsonl" || w.SkippedEntries != 3 || len(w.SourceSHA256) != 64 || w.Turns != "all" {
		t.Errorf("workload block %+v", w)
	}

	dir = t.TempDir()
	code, _, stderr = runMain("run", "--base-url", e.BaseURL(), "--trace", filepath.Join(fixtures, "azure.csv"),
		"--trace-speed", "20", "--stream", "off", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("trace run: exit %d\n%s", code, stderr)
	}
	res, recs = loadSaved(t, dir)
	run := res.Runs[0]
	if run.Workload.Mode != "trace" || run.Requests != 5 || run.Rate == nil || run.Client.E2EFromIntendedS == nil ||
		run.Workload.Trace == nil || run.Workload.Trace.Speed != 20 {
		t.Errorf("trace run: mode %s, %d requests, rate %+v, trace %+v", run.Workload.Mode, run.Requests, run.Rate, run.Workload.Trace)
	}
	// 8.32 s of trace at 20x: the last send no earlier than 0.416 s in.
	if run.DurationS < 0.416 {
		t.Errorf("trace replayed in %.3f s, want at least the 0.416 s it spans", run.DurationS)
	}
	if len(recs) != 5 || recs[0].PromptTokens < 91 {
		t.Errorf("records %d, first prompt %d tokens", len(recs), recs[0].PromptTokens)
	}
}

// TestWarmupDefault: run and sweep warm up with one request by default
// where the prompts are fixed or generated (the first request's model
// load, cold cache and new connection stay out of a c=1 tail); --warmup 0
// keeps none; a dataset, a trace, a prompt file or a shard measure every
// entry; table keeps the seed's 20 requests as they were, none first.
func TestWarmupDefault(t *testing.T) {
	ds := filepath.Join("..", "..", "testdata", "workload", "sharegpt.json")
	trace := filepath.Join("..", "..", "testdata", "workload", "mooncake.jsonl")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"run"}, 1},
		{[]string{"run", "--warmup", "0"}, 0},
		{[]string{"run", "--warmup", "3"}, 3},
		{[]string{"run", "--concurrency", "4", "--input-tokens", "128"}, 1},
		{[]string{"run", "--dataset", "sharegpt:" + ds}, 0},
		{[]string{"run", "--trace", trace}, 0},
		{[]string{"run", "--shard", "0/2", "--concurrency", "2"}, 0},
		{[]string{"sweep", "--concurrency", "1,2"}, 1},
		{[]string{"table"}, 0},
	} {
		var got *bench.Config
		saved := execute
		execute = func(_ context.Context, cfg bench.Config) (*result.Results, []result.Record, error) {
			got = &cfg
			return nil, nil, errors.New("not run")
		}
		args := append(slices.Clone(tc.args), "--base-url", "http://127.0.0.1:9", "--out", t.TempDir(), "--quiet")
		if tc.args[0] == "run" {
			args = append(args, "--stream", "on")
		}
		_, _, stderr := runMain(args...)
		execute = saved
		if got == nil || len(got.Runs) == 0 {
			t.Fatalf("%q: the session was not started: %s", tc.args, stderr)
		}
		if w := got.Runs[0].Workload.Warmup; w != tc.want {
			t.Errorf("%q: warm-up %d, want %d", tc.args, w, tc.want)
		}
	}
}
