package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestTableCommand runs `servebench table` against an in-process engine.
func TestTableCommand(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 50 })
	dir := t.TempDir()
	code, out, errOut := runMain("table", "--base-url", e.BaseURL(), "--requests", "4", "--max-tokens", "64",
		"--out", dir, "--api-key-env", "SERVEBENCH_TEST_NO_KEY")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"Streaming", "Non-streaming", "median", "mean"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "results: "+dir) {
		t.Errorf("stderr does not name the results directory:\n%s", errOut)
	}
	if strings.Contains(errOut, "p50") || strings.Contains(errOut, "health OK") {
		t.Errorf("progress written to a stderr that is not a terminal:\n%s", errOut)
	}
	res, _ := loadSaved(t, dir)
	if len(res.Runs) != 2 || res.Runs[0].Name != "streaming" || res.Runs[1].Name != "non-streaming" {
		t.Fatalf("runs = %+v", res.Runs)
	}
	if res.Runs[0].Requests != 4 || res.Runs[1].Workload.MaxTokens != 64 || !res.Runs[1].Workload.ExactLength {
		t.Errorf("workload = %+v", res.Runs[1].Workload)
	}
	if res.Manifest.Version != version || res.Manifest.Host.CPUs == 0 || len(res.Manifest.CommandLine) == 0 {
		t.Errorf("manifest = %+v", res.Manifest)
	}
}

// TestRunCommand covers run's flags: modes, --stream, --format json,
// --endpoint completions, synthetic prompts.
func TestRunCommand(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 50 })
	for _, tc := range []struct {
		name  string
		args  []string
		runs  []string
		mode  result.Mode
		check func(t *testing.T, r result.Run)
	}{
		{"concurrent non-streaming json", []string{"--concurrency", "3", "--requests", "6", "--stream", "off", "--format", "json"},
			[]string{"non-streaming"}, workload.ModeConcurrent, nil},
		{"rate both completions", []string{"--rate", "30", "--requests", "6", "--arrival", "constant", "--endpoint", "completions"},
			[]string{"streaming", "non-streaming"}, workload.ModeRate, func(t *testing.T, r result.Run) {
				if r.Rate == nil || r.Rate.TargetPerS != 30 {
					t.Errorf("rate stats = %+v", r.Rate)
				}
			}},
		{"sequential synthetic warm-up", []string{"--requests", "3", "--warmup", "1", "--prompt-tokens", "100", "--stream", "on"},
			[]string{"streaming"}, workload.ModeSequential, func(t *testing.T, r result.Run) {
				if r.Workload.PromptKind != workload.PromptSynthetic || r.Workload.Warmup != 1 || r.Requests != 3 {
					t.Errorf("workload = %+v, requests %d", r.Workload, r.Requests)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "--base-url", e.BaseURL(), "--max-tokens", "16", "--out", dir, "--quiet"}, tc.args...)
			code, out, errOut := runMain(args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			res, _ := loadSaved(t, dir)
			if len(res.Runs) != len(tc.runs) {
				t.Fatalf("%d runs, want %v", len(res.Runs), tc.runs)
			}
			for i, r := range res.Runs {
				if r.Name != tc.runs[i] || r.Workload.Mode != tc.mode || r.OK != r.Requests {
					t.Errorf("run %d = %s mode %s ok %d/%d", i, r.Name, r.Workload.Mode, r.OK, r.Requests)
				}
				if tc.check != nil {
					tc.check(t, r)
				}
			}
			if strings.Contains(strings.Join(tc.args, " "), "json") && !json.Valid([]byte(out)) {
				t.Errorf("--format json printed invalid JSON:\n%s", out)
			}
		})
	}
}

// TestSweepCommand runs a two-level sweep and checks the run names report
// plots by.
func TestSweepCommand(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 50 })
	dir := t.TempDir()
	code, out, errOut := runMain("sweep", "--base-url", e.BaseURL(), "--concurrency", "1,4", "--requests", "4",
		"--max-tokens", "16", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	res, _ := loadSaved(t, dir)
	if len(res.Runs) != 2 || res.Runs[0].Name != "c=1" || res.Runs[1].Name != "c=4" || res.Runs[1].Workload.Concurrency != 4 {
		t.Fatalf("sweep runs = %+v", res.Runs)
	}
}

// TestUsageErrors: bad flags and input exit 2 with a message naming the value.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--base-url", "http://127.0.0.1:1", "--rate", "-3"}, "--rate -3"},
		{[]string{"run", "--base-url", "http://127.0.0.1:1", "--stream", "maybe"}, `--stream "maybe"`},
		{[]string{"run", "--base-url", "http://127.0.0.1:1", "--arrival", "gamma", "--rate", "2", "--burstiness", "0"}, "--burstiness 0"},
		{[]string{"run", "--base-url", "http://127.0.0.1:1", "--prompt-file", "/nonexistent/p.jsonl"}, "/nonexistent/p.jsonl"},
		{[]string{"run", "--base-url", "http://127.0.0.1:1", "--concurrency", "2", "--rate", "3"}, "--rate and --concurrency"},
		{[]string{"table", "--base-url", "http://127.0.0.1:1", "--format", "xml"}, `--format "xml"`},
		{[]string{"table", "--base-url", "http://127.0.0.1:1", "--speedup", "10"}, "--speedup"},
		{[]string{"table", "--base-url", "ftp://x", "--out", "/tmp/x"}, "ftp://x"},
		{[]string{"table", "--requests", "0"}, "--requests 0"},
		{[]string{"table", "--base-url", "http://127.0.0.1:1", "--fail-on-error-rate", "150"}, "--fail-on-error-rate 150"},
		{[]string{"sweep", "--base-url", "http://127.0.0.1:1", "--concurrency", "0,2"}, "--concurrency 0"},
		{[]string{"run", "--duration", "soon"}, "soon"},
	} {
		code, _, errOut := runMain(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestServerUnreachable: a --base-url with nothing behind it is an invalid
// run (exit 3), not a usage error.
func TestServerUnreachable(t *testing.T) {
	code, _, errOut := runMain("table", "--base-url", "http://127.0.0.1:1", "--out", t.TempDir(), "--quiet")
	if code != exitInvalidRun || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want 3 naming the server", code, errOut)
	}
}

func TestMapBenchErr(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, exitOK},
		{fmt.Errorf("x: %w", bench.ErrInterrupted), exitInterrupted},
		{fmt.Errorf("x: %w", bench.ErrServerExited), exitInvalidRun},
		{fmt.Errorf("x: %w", bench.ErrInvalidRun), exitInvalidRun},
		{fmt.Errorf("%w: bad", bench.ErrUsage), exitUsage},
		{errors.New("connection refused"), exitInvalidRun},
	} {
		if got := exitCode(mapBenchErr(tc.err, false)); got != tc.code {
			t.Errorf("mapBenchErr(%v) exit %d, want %d", tc.err, got, tc.code)
		}
	}
}

// TestFailOnErrorRate: failures within the limit exit 0, past it exit 3;
// without the flag only an all-failed run is invalid.
func TestFailOnErrorRate(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 200; o.Faults = []string{"http-error=0.3:500"}; o.Seed = 2 })
	base := []string{"run", "--base-url", e.BaseURL(), "--requests", "20", "--max-tokens", "4", "--stream", "off", "--quiet"}
	if code, _, errOut := runMain(append(base, "--out", t.TempDir())...); code != exitOK {
		t.Errorf("no limit: exit %d\n%s", code, errOut)
	}
	dir := t.TempDir()
	code, _, errOut := runMain(append(base, "--out", dir, "--fail-on-error-rate", "5")...)
	if code != exitInvalidRun || !strings.Contains(errOut, "--fail-on-error-rate 5%") {
		t.Errorf("5%% limit: exit %d, stderr %q; want 3 naming the limit", code, errOut)
	}
	if n := strings.Count(errOut, dir); n != 1 {
		t.Errorf("stderr names the results directory %d times, want once:\n%s", n, errOut)
	}
}
