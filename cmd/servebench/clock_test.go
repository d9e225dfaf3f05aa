package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// fastStart makes the bundled engine's start-up take milliseconds whatever
// --speedup the test runs it at.
const fastStart = "--engine-arg=--startup-speedup=1000"

// TestRunModelledClock (issue 31, item 4): at --speedup 20 a run's --rate,
// --slo and printed figures are the emulated hardware's: the engine gets 20x
// the rate, the table prints E2E 20x the wall clock's and says so, and
// results.json keeps both.
func TestRunModelledClock(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runMain("run", "--speedup", "20", fastStart, "--rate", "1", "--requests", "8", "--max-tokens", "16",
		"--stream", "on", "--slo", "e2e=1h", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	res, _ := loadSaved(t, dir)
	run := res.Runs[0]
	if c := res.Clock; c == nil || c.Name != result.ClockModelled || c.Speedup != 20 {
		t.Fatalf("results.json clock = %+v, want modelled at 20x", c)
	}
	if run.Workload.Rate != 20 || run.Modelled == nil || run.Modelled.RatePerS != 1 {
		t.Errorf("workload rate %g req/s wall (want 20), modelled block %+v (want 1)", run.Workload.Rate, run.Modelled)
	}
	wall, mod := run.Client.E2ES.Median, run.Modelled.Client.E2ES.Median
	if d := mod/wall - 20; d > 1e-9 || d < -1e-9 {
		t.Errorf("E2E median %g s wall, %g s modelled: want 20x", wall, mod)
	}
	// 16 tokens of the RTX 3060's ~15 ms: ~0.25 s on the hardware, ~12 ms here.
	if !(mod > 0.1) {
		t.Errorf("modelled E2E median %g s: want the hardware's ~0.25 s", mod)
	}
	for _, want := range []string{fmt.Sprintf("%.3f s", mod), "Clock: modelled", "SLO e2e=1h"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
	if !strings.Contains(string(md), "Clock: modelled") || strings.Contains(string(md), "multiply") {
		t.Errorf("report.md does not state the modelled clock, or asks to multiply:\n%s", md)
	}
	// compare states the clock it compares in.
	if code, out, errOut := runMain("compare", dir, dir); code != 0 || !strings.Contains(out, "Clock: modelled") {
		t.Errorf("compare: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestSweepModelledClock: sweep's --rate levels are modelled req/s, named
// so; --clock wall keeps them as typed, and the table says which.
func TestSweepModelledClock(t *testing.T) {
	for _, tc := range []struct {
		clock string
		wall  []float64 // the workloads' rates
		says  string
	}{
		{"", []float64{10, 20}, "Clock: modelled"},
		{"wall", []float64{1, 2}, "Clock: wall"},
	} {
		dir := t.TempDir()
		args := []string{"sweep", "--speedup", "10", fastStart, "--rate", "1,2", "--requests", "4", "--max-tokens", "8", "--out", dir, "--quiet"}
		if tc.clock != "" {
			args = append(args, "--clock", tc.clock)
		}
		code, out, errOut := runMain(args...)
		if code != 0 {
			t.Fatalf("--clock %q: exit %d\n%s\n%s", tc.clock, code, out, errOut)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, result.ResultsFile))
		var doc struct {
			Runs []struct {
				Name     string `json:"name"`
				Workload struct {
					Rate float64 `json:"rate"`
				} `json:"workload"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Runs) != 2 {
			t.Fatalf("--clock %q: %v, %d runs", tc.clock, err, len(doc.Runs))
		}
		for i, r := range doc.Runs {
			if want := fmt.Sprintf("rate=%d", i+1); r.Name != want || r.Workload.Rate != tc.wall[i] {
				t.Errorf("--clock %q: run %s at %g req/s wall, want %s at %g", tc.clock, r.Name, r.Workload.Rate, want, tc.wall[i])
			}
		}
		if !strings.Contains(out, tc.says) {
			t.Errorf("--clock %q: table does not say %q:\n%s", tc.clock, tc.says, out)
		}
	}
}

// TestClockFlagRefused: --clock modelled needs the bundled engine, and
// --clock takes one of its names.
func TestClockFlagRefused(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--base-url", "http://127.0.0.1:1", "--clock", "modelled"},
		{"run", "--speedup", "4", "--clock", "engine"},
		{"compare", "--clock", "engine", "a", "b"},
	} {
		if code, _, errOut := runMain(args...); code != exitUsage || !strings.Contains(errOut, "--clock") {
			t.Errorf("%v: exit %d, want 2 naming --clock:\n%s", args, code, errOut)
		}
	}
}

// TestSweepSaturation (issue 31, item 3): a level sent twice what the
// engine serves (one sequence at a time, ~0.5 s each, at 4 req/s) stops
// sending once its queue wait grows without bound, says so in
// results.json, the table and report.md, and the sweep goes no higher;
// every level states its steady-state window.
func TestSweepSaturation(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runMain("sweep", "--speedup", "10", fastStart, "--engine-arg=--max-num-seqs=1", "--rate", "4,8",
		"--duration", "60s", "--max-tokens", "32", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	res, _ := loadSaved(t, dir)
	if len(res.Runs) != 1 {
		t.Fatalf("%d levels ran, want the sweep to stop after the saturated rate=4", len(res.Runs))
	}
	run := res.Runs[0]
	sat, st := run.Saturation, run.Steady
	if sat == nil || !sat.Saturated || !(sat.StoppedAtS > 0 && sat.StoppedAtS < 5) || !(sat.WaitLastS > 2*sat.WaitFirstS) {
		t.Fatalf("saturation %+v: want saturated, sending stopped well before the 6 s (wall) planned", sat)
	}
	if st == nil || !(st.EndS > st.StartS) || st.Requests == 0 || run.Modelled == nil || run.Modelled.Steady == nil {
		t.Fatalf("steady state %+v, modelled %+v: want a window with requests, in both clocks", st, run.Modelled)
	}
	if !strings.Contains(out, "rate=4 (saturated)") || !strings.Contains(out, "Saturated:") {
		t.Errorf("table does not mark the saturated level:\n%s", out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
	if !strings.Contains(string(md), "## Steady state") || !strings.Contains(string(md), "**saturated**") {
		t.Errorf("report.md lacks the steady-state section or the verdict:\n%s", md)
	}
}

// TestBundledEnergy (issue 31, item 5): the bundled engine exports
// dcgm-exporter's power and energy series from its step physics, and a run
// reads joules per output token from their before/after delta. Kept busy
// (four requests in flight on the RTX 3060 profile, 170 W board, 15 W
// idle), the GPU's mean draw over the run is near its board power.
func TestBundledEnergy(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runMain("run", "--speedup", "20", fastStart, "--concurrency", "4", "--requests", "12", "--max-tokens", "64",
		"--stream", "on", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	res, _ := loadSaved(t, dir)
	run := res.Runs[0]
	e, per := run.Engine.GPUEnergyJ, run.Engine.JoulesPerOutputToken
	if e == nil || per == nil {
		t.Fatalf("engine figures lack the energy: %+v", run.Engine)
	}
	modelledS := 20 * run.DurationS
	if w := *e / modelledS; !(w > 0.5*170 && w < 1.1*170) {
		t.Errorf("%.1f J over %.2f s modelled: a mean %.1f W, want near the 170 W board power of a busy GPU", *e, modelledS, w)
	}
	if tokens := float64(12 * 64); math.Abs(*per*tokens-*e) > 1e-6**e {
		t.Errorf("%g J per token x %g tokens != %g J", *per, tokens, *e)
	}
	md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
	if !strings.Contains(string(md), "## Energy") || !strings.Contains(string(md), "J per output token") {
		t.Errorf("report.md lacks the energy section:\n%s", md)
	}
}
