package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
	"github.com/servebench/servebench/report/compare"
)

// TestBaselineGate: --baseline compares the run with a saved one after the
// table; a server twenty times slower is a regression (exit 1).
func TestBaselineGate(t *testing.T) {
	fast := simtest.Start(t, func(o *sim.Options) { o.Speedup = 200 })
	slow := simtest.Start(t, func(o *sim.Options) { o.Speedup = 10 })
	run := func(e *sim.Engine, dir string, extra ...string) (int, string, string) {
		return runMain(append([]string{"run", "--base-url", e.BaseURL(), "--requests", "10", "--max-tokens", "8",
			"--stream", "on", "--out", dir, "--quiet"}, extra...)...)
	}
	base := t.TempDir()
	if code, _, errOut := run(fast, base); code != exitOK {
		t.Fatalf("baseline run: exit %d\n%s", code, errOut)
	}
	dir := t.TempDir()
	code, out, errOut := run(slow, dir, "--baseline", base)
	if code != exitRegression || !strings.Contains(errOut, "regression against the baseline "+base) ||
		!strings.Contains(out, "verdict: REGRESSION") {
		t.Errorf("exit %d, want %d naming the baseline, the comparison on stdout\nstdout:\n%s\nstderr:\n%s", code, exitRegression, out, errOut)
	}
	// The comparison also lands beside the run's report as a web page.
	page, err := os.ReadFile(filepath.Join(dir, compare.FileHTML))
	if err != nil || !strings.Contains(string(page), `<td class="bad"><strong>REGRESSION</strong>`) {
		t.Errorf("%s: %v: expected the comparison with its regression coloured", compare.FileHTML, err)
	}
}

// TestRepeatsGate: --repeats N keeps each run in DIR/repeat-K with a
// run-level summary, and --baseline of a repeated baseline tests across
// runs: 3+3 runs of a twenty times slower server regress (n=3+3), and one
// new run is judged by the baseline runs' prediction interval. Three runs
// a side and a large change: with two and a few degrees of freedom, on a
// loaded host, a change must be far outside the runs' spread to pass the
// Holm adjustment over the gated figures.
func TestRepeatsGate(t *testing.T) {
	fast := simtest.Start(t, func(o *sim.Options) { o.Speedup = 200 })
	slow := simtest.Start(t, func(o *sim.Options) { o.Speedup = 10 })
	run := func(e *sim.Engine, dir string, extra ...string) (int, string, string) {
		return runMain(append([]string{"run", "--base-url", e.BaseURL(), "--requests", "10", "--max-tokens", "8",
			"--stream", "on", "--out", dir, "--quiet"}, extra...)...)
	}
	base := t.TempDir()
	code, out, errOut := run(fast, base, "--repeats", "3")
	if code != exitOK || !strings.Contains(out, "across 3 runs") {
		t.Fatalf("baseline runs: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, f := range []string{filepath.Join("repeat-1", "results.json"), filepath.Join("repeat-3", "requests.jsonl"), "repeats.json"} {
		if _, err := os.Stat(filepath.Join(base, f)); err != nil {
			t.Errorf("--repeats 3: %v", err)
		}
	}
	code, out, errOut = run(slow, t.TempDir(), "--repeats", "3", "--baseline", base)
	if code != exitRegression || !strings.Contains(out, "n=3+3 runs") || !strings.Contains(errOut, "regression against the baseline") {
		t.Errorf("3+3 runs, slower: exit %d, want %d with a test across runs\nstdout:\n%s\nstderr:\n%s", code, exitRegression, out, errOut)
	}
	code, out, _ = run(slow, t.TempDir(), "--baseline", base)
	if code != exitRegression || !strings.Contains(out, "prediction interval") {
		t.Errorf("one run against 3, slower: exit %d, want %d judged by the prediction interval\n%s", code, exitRegression, out)
	}
	if code, _, errOut := run(fast, t.TempDir(), "--repeats", "0"); code != exitUsage || !strings.Contains(errOut, "--repeats 0") {
		t.Errorf("--repeats 0: exit %d %s", code, errOut)
	}
}

// TestCalibrate: calibrate runs the workload K times, prints the spread
// and writes limits that compare --limits-from reads; bad flags exit 2.
func TestCalibrate(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 200 })
	dir := t.TempDir()
	code, out, errOut := runMain("calibrate", "--base-url", e.BaseURL(), "--requests", "10", "--max-tokens", "8",
		"--stream", "on", "--repeats", "3", "--out", dir, "--quiet")
	if code != exitOK || !strings.Contains(out, "run-to-run spread over 3 runs") || !strings.Contains(errOut, compare.LimitsFile) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	limits := filepath.Join(dir, compare.LimitsFile)
	th, err := compare.ReadLimits(limits)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, x := range th {
		keys[x.Key()] = x.Rel > 0
	}
	if !keys["client.e2e.median"] || !keys["throughput.output_tokens_per_s"] {
		t.Errorf("limits %v: want relative limits for client.e2e.median and throughput", th)
	}
	code, out, errOut = runMain("compare", "--limits-from", limits, filepath.Join(dir, "repeat-1"), filepath.Join(dir, "repeat-2"))
	if code != exitOK && code != exitRegression || !strings.Contains(out, "verdict:") {
		t.Errorf("compare --limits-from: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, bad := range [][]string{{"--false-alarm", "2"}, {"--repeats", "1"}, {"--per-side", "0"}} {
		args := append([]string{"calibrate", "--base-url", e.BaseURL(), "--out", t.TempDir()}, bad...)
		if code, _, errOut := runMain(args...); code != exitUsage || !strings.Contains(errOut, bad[0]) {
			t.Errorf("%v: exit %d, want %d naming the flag: %s", bad, code, exitUsage, errOut)
		}
	}
}

// TestSweepRepeats: sweep --repeats 2 runs every level in each repeat
// (DIR/repeat-K holds the whole sweep), repeats.json has each level's
// run-level figures with their 95% interval across the 2 runs, and compare
// of two such sweeps pairs the levels and tests across runs (n=2+2).
func TestSweepRepeats(t *testing.T) {
	sweep := func(dir string) {
		t.Helper()
		code, out, errOut := runMain("sweep", "--speedup", "200", fastStart, "--concurrency", "1,2", "--requests", "4",
			"--max-tokens", "8", "--repeats", "2", "--out", dir, "--quiet")
		if code != exitOK || !strings.Contains(out, "across 2 runs") {
			t.Fatalf("sweep --repeats 2: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	levels := []string{"c=1", "c=2"}
	a, b := t.TempDir(), t.TempDir()
	sweep(a)
	sweep(b)
	for k := 1; k <= 2; k++ {
		res, _ := loadSaved(t, result.RepeatDir(a, k))
		var names []string
		for _, r := range res.Runs {
			names = append(names, r.Name)
		}
		if !slices.Equal(names, levels) {
			t.Errorf("repeat %d: runs %v, want the levels %v", k, names, levels)
		}
	}
	raw, err := os.ReadFile(filepath.Join(a, result.RepeatsFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum compare.RepeatSummary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatalf("%s: %v", result.RepeatsFile, err)
	}
	if sum.Repeats != 2 || len(sum.Runs) != len(levels) {
		t.Fatalf("%s: %d repeats, %d runs, clock %q, want 2 repeats of %d levels, modelled", result.RepeatsFile, sum.Repeats, len(sum.Runs), sum.Clock, len(levels))
	}
	for i, run := range sum.Runs {
		if run.Name != levels[i] || len(run.Rows) == 0 {
			t.Errorf("%s run %d: %q with %d rows, want %q with figures", result.RepeatsFile, i, run.Name, len(run.Rows), levels[i])
		}
		for _, r := range run.Rows {
			if r.N != 2 || len(r.Values) != 2 || r.Lo == nil || r.Hi == nil || !(*r.Lo <= r.Mean && r.Mean <= *r.Hi) {
				t.Errorf("%s %s %s: n %d, values %v, mean %g in [%v, %v]: want 2 runs and an interval around the mean",
					result.RepeatsFile, run.Name, r.Key, r.N, r.Values, r.Mean, r.Lo, r.Hi)
			}
		}
	}
	// The figures are the modelled clock's, as the runs' tables: each
	// repeat's median E2E lies within its requests' E2E times 200 (the
	// speed-up), and compare's run-level mean is that of repeats.json.
	e2e := map[string]float64{}
	for _, run := range sum.Runs {
		for _, r := range run.Rows {
			if r.Key != "client.e2e.median" {
				continue
			}
			e2e[run.Name] = r.Mean
			for k, v := range r.Values {
				_, recs := loadSaved(t, result.RepeatDir(a, k+1))
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, rec := range recs {
					if rec.Run == run.Name && !rec.Warmup && rec.Error == "" {
						lo, hi = min(lo, rec.E2ES*200), max(hi, rec.E2ES*200)
					}
				}
				if !(v >= lo*0.999 && v <= hi*1.001) {
					t.Errorf("%s %s repeat %d: client.e2e.median %g s, want within its requests' modelled E2E [%g, %g] s", result.RepeatsFile, run.Name, k+1, v, lo, hi)
				}
			}
		}
	}
	sa, errA := compare.Load(a)
	sb, errB := compare.Load(b)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	rep, err := compare.Compare(sa, sb, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range rep.Runs {
		for _, r := range run.Rows {
			if r.Quantity == "client.e2e" && r.Stat == "median" && math.Abs(r.Base-e2e[run.Name]) > 1e-9*e2e[run.Name] {
				t.Errorf("compare %s client.e2e.median: base %g s, want the mean across runs %g s of %s", run.Name, r.Base, e2e[run.Name], result.RepeatsFile)
			}
		}
	}
	code, out, errOut := runMain("compare", a, b)
	if code != exitOK && code != exitRegression || !strings.Contains(out, "n=2+2 runs") {
		t.Errorf("compare of two sweeps of 2 repeats: exit %d, want a test across runs (n=2+2)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, l := range levels {
		if !strings.Contains(out, l) {
			t.Errorf("compare: level %s missing:\n%s", l, out)
		}
	}
}
