package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestTableAgentAPIs: `servebench table --endpoint messages` and
// `--endpoint responses` on the bundled engine (a child process, sped up)
// teach the seed's lesson with their own events: streaming's first visible
// output (first text delta) well below E2E, non-streaming's equal to it,
// engine TTFT the same in both modes, exact lengths, and the engine's
// request count equal to the requests sent.
func TestTableAgentAPIs(t *testing.T) {
	for _, ep := range []string{"messages", "responses"} {
		t.Run(ep, func(t *testing.T) {
			dir := t.TempDir()
			code, out, errOut := runMain("table", "--speedup", "20", "--engine-arg=--startup-speedup=1000",
				"--endpoint", ep, "--requests", "4", "--out", dir)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if !strings.Contains(out, "Streaming") || !strings.Contains(out, "Non-streaming") {
				t.Errorf("no table:\n%s", out)
			}
			res, _ := loadSaved(t, dir)
			if len(res.Runs) != 2 {
				t.Fatalf("%d runs", len(res.Runs))
			}
			st, ns := res.Runs[0], res.Runs[1]
			for _, r := range res.Runs {
				rc := r.Engine.Reconciliation
				if r.Workload.Endpoint != ep || r.OK != 4 || rc == nil || rc.Sent != 4 || rc.EngineCount != 4 {
					t.Errorf("%s: endpoint %q, ok %d, reconciliation %+v", r.Name, r.Workload.Endpoint, r.OK, rc)
				}
				if r.Client.OutputTokens.Min != 256 || r.Client.OutputTokens.Max != 256 || r.Engine.TTFTS == nil {
					t.Fatalf("%s: output tokens %+v, engine TTFT %v", r.Name, r.Client.OutputTokens, r.Engine.TTFTS)
				}
			}
			if fv, e2e := st.Client.FirstVisibleS.Median, st.Client.E2ES.Median; fv > e2e/5 {
				t.Errorf("streaming first visible %.4f s, E2E %.4f s: want well below", fv, e2e)
			}
			if fv, e2e := ns.Client.FirstVisibleS.Median, ns.Client.E2ES.Median; math.Abs(fv-e2e) > 0.02*e2e {
				t.Errorf("non-streaming first visible %.4f s, E2E %.4f s: want equal", fv, e2e)
			}
			if a, b := st.Engine.TTFTS.Mean, ns.Engine.TTFTS.Mean; math.Abs(a-b) > 0.5*math.Max(a, b) && math.Abs(a-b) > 0.002 {
				t.Errorf("engine TTFT streaming %.5f s, non-streaming %.5f s: want unchanged", a, b)
			}
			t.Logf("%s: streaming fv %.4f e2e %.4f ttft %.5f | non-streaming fv %.4f e2e %.4f ttft %.5f", ep,
				st.Client.FirstVisibleS.Median, st.Client.E2ES.Median, st.Engine.TTFTS.Mean,
				ns.Client.FirstVisibleS.Median, ns.Client.E2ES.Median, ns.Engine.TTFTS.Mean)
		})
	}
}

// TestLoRAMixRun: a run with --lora on the bundled engine serving those
// adapters reports per-adapter figures in results.json and report.md, and
// shows what too few adapter slots cost: with --max-loras 1 the four
// adapters take turns (the engine's queue wait, on its modelled clock,
// grows), with --max-loras 4 they share batches.
func TestLoRAMixRun(t *testing.T) {
	queue := map[string]float64{}
	for _, slots := range []string{"1", "4"} {
		dir := t.TempDir()
		code, out, errOut := runMain("run", "--speedup", "20", "--engine-arg=--startup-speedup=1000",
			"--engine-arg=--lora-modules=a,b,c,d", "--engine-arg=--max-loras="+slots,
			"--lora", "a,b,c,d", "--concurrency", "8", "--requests", "24", "--max-tokens", "32", "--stream", "on",
			"--out", dir, "--quiet")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		res, recs := loadSaved(t, dir)
		r := res.Runs[0]
		if len(r.Adapters) != 4 || r.Workload.LoRA == "" || r.Engine.LoRA == nil || r.Engine.LoRA.MaxLoRA != int(slots[0]-'0') ||
			r.Engine.QueueS == nil {
			t.Fatalf("max-loras %s: adapters %+v, workload lora %q, engine %+v", slots, r.Adapters, r.Workload.LoRA, r.Engine)
		}
		n := 0
		for _, a := range r.Adapters {
			n += a.OK
			if a.Name == "" || a.Client.E2ES == nil {
				t.Errorf("adapter %+v", a)
			}
		}
		if n != 24 || r.Engine.Reconciliation == nil || r.Engine.Reconciliation.EngineCount != 24 {
			t.Errorf("max-loras %s: %d ok over adapters, reconciliation %+v", slots, n, r.Engine.Reconciliation)
		}
		for _, rec := range recs {
			if rec.LoRA == "" {
				t.Fatalf("record without its adapter: %+v", rec)
			}
		}
		md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
		if !strings.Contains(string(md), "Per LoRA adapter") {
			t.Errorf("report.md has no per-adapter table")
		}
		queue[slots] = r.Engine.QueueS.Mean
	}
	t.Logf("engine queue wait mean: %.4f s with --max-loras 1, %.4f s with 4", queue["1"], queue["4"])
	if queue["1"] < 0.005 || queue["1"] < 5*queue["4"] {
		t.Errorf("engine queue wait mean %.4f s with one adapter slot, %.4f s with four: want the turns to show", queue["1"], queue["4"])
	}
}

// TestToolRounds: --tool-rounds 2 with --tools on the bundled engine: each
// session is three turns, the first two answered by a tool call whose
// arguments complete (usable) at or after first visible output and before
// E2E, the client's tool results sent back after the think time, the last
// turn a text answer; every turn a record, the turns in report.md.
func TestToolRounds(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 20 })
	dir := t.TempDir()
	code, out, errOut := runMain("run", "--base-url", e.BaseURL(), "--tools", workloadFixtures+"tools.json",
		"--tool-choice", "get_forecast", "--tool-rounds", "2", "--think-time", "0.05", "--concurrency", "2",
		"--requests", "3", "--max-tokens", "64", "--stream", "on", "--out", dir, "--quiet", "--api-key-env", "SERVEBENCH_TEST_NO_KEY")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	res, recs := loadSaved(t, dir)
	r := res.Runs[0]
	if r.Workload.ToolRounds != 2 || r.OK != 9 {
		t.Fatalf("tool rounds %d, ok %d of %d: %v", r.Workload.ToolRounds, r.OK, r.Requests, r.Warnings)
	}
	if s := r.Sessions; s == nil || s.Sessions != 3 || s.Whole != 3 || s.Turns == nil || s.Turns.Median != 3 ||
		s.LengthS == nil || s.LengthS.Min < 2*0.05 {
		t.Errorf("sessions %+v: want 3 whole sessions of 3 turns, each at least two think times long", s)
	}
	turns := map[int]int{}
	for _, rec := range recs {
		if rec.Warmup {
			continue
		}
		turns[rec.Turn]++
		switch {
		case rec.Session == "" || rec.Error != "":
			t.Errorf("record %+v", rec)
		case rec.Turn < 3 && (rec.UsableS <= 0 || rec.UsableS < rec.FirstVisibleS || rec.UsableS > rec.E2ES+1e-9):
			t.Errorf("turn %d: usable %.4f, first visible %.4f, E2E %.4f", rec.Turn, rec.UsableS, rec.FirstVisibleS, rec.E2ES)
		case rec.Turn == 3 && rec.FinishReason == "tool_calls":
			t.Errorf("last turn called a tool: %+v", rec)
		}
	}
	if turns[1] != 3 || turns[2] != 3 || turns[3] != 3 {
		t.Errorf("records per turn %v, want 3 each", turns)
	}
	md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
	if !strings.Contains(string(md), "Usable output by turn") || !strings.Contains(string(md), "Sessions: 3 whole") {
		t.Errorf("report.md lacks the usable and session lines under its turn table")
	}
}

// TestRecordedToolSessions: --dataset jsonl of two recorded tool-calling
// sessions of two rounds on the bundled engine: each turn a record, the two
// tool-call turns usable (arguments complete) between first visible output
// and E2E, the recorded results sent back after the recorded think times
// (each session at least their sum long), the last turn a text answer.
func TestRecordedToolSessions(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 20 })
	dir := t.TempDir()
	code, out, errOut := runMain("run", "--base-url", e.BaseURL(), "--tools", workloadFixtures+"tools.json",
		"--tool-choice", "get_forecast", "--dataset", "jsonl:"+workloadFixtures+"toolsessions.jsonl", "--turns", "all",
		"--concurrency", "2", "--requests", "2", "--max-tokens", "64", "--stream", "on", "--out", dir, "--quiet",
		"--api-key-env", "SERVEBENCH_TEST_NO_KEY")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	res, recs := loadSaved(t, dir)
	r := res.Runs[0]
	if r.OK != 6 {
		t.Fatalf("ok %d of %d: %v", r.OK, r.Requests, r.Warnings)
	}
	if s := r.Sessions; s == nil || s.Sessions != 2 || s.Whole != 2 || s.Turns == nil || s.Turns.Median != 3 ||
		s.LengthS == nil || s.LengthS.Min < 0.04 {
		t.Errorf("sessions %+v: want 2 whole sessions of 3 turns, each at least its think times long", s)
	}
	turns := map[string]int{}
	for _, rec := range recs {
		if rec.Warmup {
			continue
		}
		turns[fmt.Sprintf("%s/%d", rec.Session, rec.Turn)]++
		switch {
		case rec.Error != "":
			t.Errorf("record %+v", rec)
		case rec.Turn < 3 && (rec.UsableS <= 0 || rec.UsableS < rec.FirstVisibleS || rec.UsableS > rec.E2ES+1e-9):
			t.Errorf("%s turn %d: usable %.4f, first visible %.4f, E2E %.4f", rec.Session, rec.Turn, rec.UsableS, rec.FirstVisibleS, rec.E2ES)
		case rec.Turn == 3 && rec.FinishReason == "tool_calls":
			t.Errorf("last turn called a tool: %+v", rec)
		}
	}
	for _, k := range []string{"paris/1", "paris/2", "paris/3", "oslo/1", "oslo/2", "oslo/3"} {
		if turns[k] != 1 {
			t.Errorf("records per session/turn %v, want one each of paris and oslo 1-3", turns)
			break
		}
	}
	// Refused: recorded tool sessions without --tools.
	code, _, errOut = runMain("run", "--base-url", e.BaseURL(), "--dataset", "jsonl:"+workloadFixtures+"toolsessions.jsonl",
		"--requests", "1", "--out", t.TempDir(), "--quiet", "--api-key-env", "SERVEBENCH_TEST_NO_KEY")
	if code == 0 || !strings.Contains(errOut, `"tool_result"`) {
		t.Errorf("without --tools: exit %d, stderr %q; want a refusal naming \"tool_result\"", code, errOut)
	}
}

// TestAgentFlagErrors: --tool-rounds without --tools, --lora-dist without
// --lora and a bad --lora exit 2 naming the flag.
func TestAgentFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tool-rounds", "2"}, "--tool-rounds 2"},
		{[]string{"--tools", workloadFixtures + "tools.json", "--tool-rounds", "2", "--endpoint", "messages"}, "--tool-rounds 2"},
		{[]string{"--lora-dist", "zipf"}, "--lora-dist"},
		{[]string{"--lora", "a:0"}, "--lora"},
		{[]string{"--endpoint", "anthropic"}, `--endpoint "anthropic"`},
	} {
		args := append([]string{"run", "--base-url", "http://127.0.0.1:1"}, tc.args...)
		code, _, errOut := runMain(args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errOut, tc.want)
		}
	}
}
