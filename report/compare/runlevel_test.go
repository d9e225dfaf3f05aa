package compare

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

// Whole-run factors: each repeat of one build lands this much off, as runs
// of the bundled engine do (their requests share one batch schedule).
var (
	baseShifts = []float64{1.00, 1.12, 0.95, 1.05, 0.92}
	newShifts  = []float64{1.12, 0.97, 1.03, 0.93, 1.06}
)

// repeatedSide is a side of len(shifts) repeats of one streaming run of
// 60 requests, repeat k at scale*shifts[k].
func repeatedSide(t testing.TB, path string, seed uint64, scale float64, shifts []float64) *Side {
	t.Helper()
	var reps []*Side
	for k, f := range shifts {
		reps = append(reps, synthSide(t, fmt.Sprintf("%s/repeat-%d", path, k+1), seed+uint64(k)*101, 100,
			synthRun{name: "streaming", n: 60, scale: scale * f, stream: true}))
	}
	return Group(path, reps)
}

func rowOf(t *testing.T, rep *Report, key string) Row {
	t.Helper()
	for _, row := range rep.Runs[0].Rows {
		if row.Key() == key {
			return row
		}
	}
	t.Fatalf("no row %s", key)
	return Row{}
}

// TestRunLevelNoCryWolf: two builds alike but for whole-run noise. One run
// a side under the per-request test (the repeats' first runs, 12% apart)
// is a "significant" regression; across five runs a side it is not.
func TestRunLevelNoCryWolf(t *testing.T) {
	base := repeatedSide(t, "base", 1, 1, baseShifts)
	nw := repeatedSide(t, "new", 50, 1, newShifts)
	old, err := Compare(base.Repeats[0], nw.Repeats[0], Options{Test: TestRequests})
	if err != nil {
		t.Fatal(err)
	}
	if !old.Regressed() {
		t.Fatalf("per-request test on one run a side: no regression; the scenario does not show the false alarm:\n%v", old.Regressions())
	}
	rep, err := Compare(base, nw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != ModeRuns || rep.RunsBase != 5 || rep.RunsNew != 5 {
		t.Errorf("mode %q runs %d+%d, want runs 5+5", rep.Mode, rep.RunsBase, rep.RunsNew)
	}
	if rep.Regressed() {
		t.Errorf("run-level test: %v, want no regression", rep.Regressions())
	}
	row := rowOf(t, rep, "client.e2e.median")
	if row.Runs == nil || len(row.Runs.Base) != 5 || row.P == nil || *row.P < 0.05 || row.RequestP == nil {
		t.Fatalf("client.e2e.median row %+v: want 5 run values a side, p >= 0.05, the per-request p kept", row)
	}
	if *row.Runs.ChangeLo > 0 || *row.Runs.ChangeHi < 0 {
		t.Errorf("95%% interval [%g, %g] excludes 0 between builds alike", *row.Runs.ChangeLo, *row.Runs.ChangeHi)
	}
}

// TestRunLevelCatches: a 25% slower build is caught across runs, with
// n=5+5 and an interval excluding 0 in the regression's evidence.
func TestRunLevelCatches(t *testing.T) {
	rep, err := Compare(repeatedSide(t, "base", 1, 1, baseShifts), repeatedSide(t, "new", 50, 1.25, newShifts), Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := rowOf(t, rep, "client.e2e.median")
	if !row.Regression || *row.Runs.ChangeLo <= 0 {
		t.Fatalf("25%% slower: %+v, want a regression with its interval above 0", row)
	}
	if regs := strings.Join(rep.Regressions(), "\n"); !strings.Contains(regs, "n=5+5 Welch") {
		t.Errorf("regressions do not name the run-level test:\n%s", regs)
	}
	// Engine figures get a test of their own across runs.
	if eng := rowOf(t, rep, "engine.e2e.mean"); eng.P == nil || !eng.Regression {
		t.Errorf("engine.e2e.mean %+v: want a run-level p and a regression", eng)
	}
}

// TestHistoryMode: one new run against five base runs is judged by the
// base runs' prediction interval.
func TestHistoryMode(t *testing.T) {
	base := repeatedSide(t, "base", 1, 1, baseShifts)
	for _, tc := range []struct {
		scale float64
		want  bool
	}{{1.02, false}, {1.5, true}} {
		nw := synthSide(t, "new", 9, 100, synthRun{name: "streaming", n: 60, scale: tc.scale, stream: true})
		rep, err := Compare(base, nw, Options{})
		if err != nil {
			t.Fatal(err)
		}
		row := rowOf(t, rep, "client.e2e.median")
		if rep.Mode != ModeHistory || row.Regression != tc.want || row.Runs == nil || row.Runs.Test != "n=5+1 prediction" {
			t.Errorf("new run x%g: mode %q row %+v, want history, regression %v", tc.scale, rep.Mode, row, tc.want)
		}
	}
}

// TestLimitsMode: one run a side has no run-level test: a 6% shift that
// the per-request test calls significant is "within limit", a 2x one a
// regression past its limit; the method suggests --repeats.
func TestLimitsMode(t *testing.T) {
	base := synthSide(t, "base", 1, 100, synthRun{name: "streaming", n: 60, scale: 1, stream: true})
	for _, tc := range []struct {
		scale float64
		want  string
	}{{1.06, VerdictWithinLimit}, {2, VerdictRegression}} {
		nw := synthSide(t, "new", 2, 100, synthRun{name: "streaming", n: 60, scale: tc.scale, stream: true})
		rep, err := Compare(base, nw, Options{})
		if err != nil {
			t.Fatal(err)
		}
		row := rowOf(t, rep, "client.e2e.median")
		if rep.Mode != ModeLimits || row.Verdict != tc.want || row.P != nil || row.RequestP == nil || *row.RequestP >= 0.05 {
			t.Errorf("x%g: mode %q row %+v, want limits, %q, no p, a significant per-request p beside", tc.scale, rep.Mode, row, tc.want)
		}
		if !strings.Contains(rep.Test, "--repeats") {
			t.Errorf("method %q does not suggest --repeats", rep.Test)
		}
	}
	if _, err := Compare(base, base, Options{Test: "bogus"}); err == nil || !strings.Contains(err.Error(), `Test "bogus"`) {
		t.Errorf("--test bogus: %v", err)
	}
}

// TestLoadRepeats: a directory of repeat-K results directories loads as
// one side of several runs; two such directories group into one side.
func TestLoadRepeats(t *testing.T) {
	dir := t.TempDir()
	src := repeatedSide(t, "x", 1, 1, baseShifts[:3])
	for k, r := range src.Repeats {
		d := result.RepeatDir(dir, k+1)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := reporttest.Save(d, r.Results, r.Records); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Repeats) != 3 || s.Path != dir || s.Repeats[2].Path != filepath.Join(dir, "repeat-3") {
		t.Fatalf("loaded %d repeats, path %q", len(s.Repeats), s.Path)
	}
	if g := Group("base", []*Side{s, s.Repeats[0]}); len(g.Repeats) != 4 || g.Path != "base" {
		t.Errorf("grouped %d repeats as %q, want 4 as base", len(g.Repeats), g.Path)
	}
}

// TestCalibrateLimits: the limits file round-trips through ReadLimits, each
// limit rounded up, never to 0; one run is refused; a bad line is named.
func TestCalibrateLimits(t *testing.T) {
	side := repeatedSide(t, "cal", 1, 1, baseShifts)
	if _, err := Calibrate(side.Repeats[0], 0.05, 1); err == nil {
		t.Error("one run calibrated")
	}
	c, err := Calibrate(side, 0.05, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), LimitsFile)
	if err := WriteLimitsFile(path, c); err != nil {
		t.Fatal(err)
	}
	th, err := ReadLimits(path)
	if err != nil || len(th) != len(c.Limits) {
		t.Fatalf("read %d limits of %d: %v", len(th), len(c.Limits), err)
	}
	for i, l := range c.Limits {
		if th[i].Key() != l.Key || th[i].Rel < l.Limit || th[i].Rel > l.Limit+0.001 {
			t.Errorf("%s: limit %g read back as %s", l.Key, l.Limit, th[i])
		}
		// The whole-run shifts (SD 7.8%) dominate the latency medians: the
		// limit is t(0.95, 4) * CV * sqrt(2), about 2.132 * 0.078 * 1.414.
		if l.Key == "client.e2e.median" && (l.Limit < 0.15 || l.Limit > 0.3) {
			t.Errorf("client.e2e.median limit %.3f, want about 0.235", l.Limit)
		}
	}
	if got := FormatLimit("client.tpot.median", 0); got != "client.tpot.median=0.1%" {
		t.Errorf("FormatLimit of 0 = %q", got)
	}
	bad := filepath.Join(t.TempDir(), "limits.txt")
	os.WriteFile(bad, []byte("# ok\nclient.e2e.median=5%\nclient.e2e.median=soon\n"), 0o644)
	if _, err := ReadLimits(bad); err == nil || !strings.Contains(err.Error(), "limits.txt:3:") {
		t.Errorf("bad line: %v, want the file and line 3", err)
	}
}

// TestRepeatsDiffer: a side whose runs are of different workloads is
// refused (their spread would not be noise) unless Force.
func TestRepeatsDiffer(t *testing.T) {
	base := repeatedSide(t, "base", 1, 1, baseShifts[:3])
	odd := synthSide(t, "odd", 7, 100, synthRun{name: "streaming", n: 60, scale: 1, stream: true,
		workload: func(w *result.Workload) { w.MaxTokens = 64 }})
	nw := Group("new", []*Side{repeatedSide(t, "new", 50, 1, newShifts[:2]), odd})
	_, err := Compare(base, nw, Options{})
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "new side: odd") || !strings.Contains(err.Error(), "max_tokens: 32 -> 64") {
		t.Errorf("mixed workloads on one side: %v", err)
	}
	if _, err := Compare(base, nw, Options{Force: true}); err != nil {
		t.Errorf("--force: %v", err)
	}
}
