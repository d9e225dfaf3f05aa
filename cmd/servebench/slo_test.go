package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestRunSLO: --slo adds goodput to the printed table, results.json
// (runs[].goodput with exactly the keys), report.md and the
// comparison with a baseline.
func TestRunSLO(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 50 })
	dir := t.TempDir()
	// e2e=1h holds for every request, ttft=1ns for none: attainment 0 with
	// ttft's threshold, 100% without it.
	code, out, errOut := runMain("run", "--base-url", e.BaseURL(), "--requests", "8", "--max-tokens", "8", "--stream", "on",
		"--slo", "e2e=1h,tpot=1h", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"Goodput", "SLO attainment", "100.0 %", "tpot=1h,e2e=1h"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Goodput map[string]json.RawMessage `json:"goodput"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("results.json: %v, %d runs", err, len(doc.Runs))
	}
	for _, k := range []string{"slo", "attained", "requests", "attainment", "rate_per_s"} {
		if _, ok := doc.Runs[0].Goodput[k]; !ok {
			t.Errorf("runs[0].goodput lacks %q: %v", k, doc.Runs[0].Goodput)
		}
	}
	res, _ := loadSaved(t, dir)
	g := res.Runs[0].Goodput
	if g == nil || g.Requests != 8 || g.Attained != 8 || g.Attainment != 100 || !(g.RatePerS > 0) {
		t.Fatalf("goodput = %+v, want 8 of 8", g)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "## Goodput") || !strings.Contains(string(md), "| 8 of 8 | 100.0% |") {
		t.Errorf("report.md lacks the goodput section (%v):\n%s", err, md)
	}

	// A slower server against a baseline from a faster one, both judged on
	// e2e=20ms (the baseline's records are judged again, as it ran with
	// another SLO): ~1.5 ms against ~75 ms per request, so attainment drops
	// from 100% to 0%, a regression of goodput.attainment.
	fast := simtest.Start(t, func(o *sim.Options) { o.Speedup = 100 })
	base := t.TempDir()
	if code, out, errOut := runMain("run", "--base-url", fast.BaseURL(), "--requests", "8", "--max-tokens", "8", "--stream", "on",
		"--slo", "e2e=1h", "--out", base, "--quiet"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s\n%s", code, out, errOut)
	}
	slow := simtest.Start(t, func(o *sim.Options) { o.Speedup, o.StartupSpeedup = 2, 1000 })
	code, out, errOut = runMain("run", "--base-url", slow.BaseURL(), "--requests", "8", "--max-tokens", "8", "--stream", "on",
		"--slo", "e2e=20ms", "--out", t.TempDir(), "--quiet", "--baseline", base,
		"--max-regression", "goodput.attainment=+0.1")
	if code != exitRegression || !strings.Contains(out, "goodput.attainment") || !strings.Contains(out, "100.0%") {
		t.Errorf("exit %d, want 1 with a goodput.attainment regression from 100%%\n%s\n%s", code, out, errOut)
	}
}

// TestSweepFindMaxRate: the search runs a bounded number of normal runs,
// printing each step as it goes, and writes its answer to results.json and
// report.md, and an attainment panel into sweep.png.
func TestSweepFindMaxRate(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 100 })
	dir := t.TempDir()
	code, out, errOut := runMain("sweep", "--base-url", e.BaseURL(), "--slo", "e2e=1h", "--find-max-rate", "90%",
		"--rate", "20", "--max-steps", "3", "--requests", "6", "--max-tokens", "4", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if n := strings.Count(errOut, "find-max-rate: step "); n != 3 {
		t.Errorf("stderr has %d step lines, want 3:\n%s", n, errOut)
	}
	res, _ := loadSaved(t, dir)
	var names []string
	for _, r := range res.Runs {
		names = append(names, r.Name)
	}
	// every step holds e2e=1h: the rate doubles from 20
	if !slices.Equal(names, []string{"rate=20", "rate=40", "rate=80"}) {
		t.Errorf("runs %v, want rate=20, 40, 80", names)
	}
	mr := res.MaxRate
	if mr == nil || mr.RatePerS != 80 || mr.Steps != 3 || mr.Target != 90 || mr.SLO != "e2e=1h" || !strings.Contains(mr.Note, "lower bound") {
		t.Fatalf("max_rate = %+v", mr)
	}
	if !strings.Contains(out, "highest rate with SLO e2e=1h attainment >= 90%: 80 req/s") {
		t.Errorf("stdout lacks the answer:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "sweep.png")); err != nil {
		t.Errorf("sweep.png: %v", err)
	}
}
