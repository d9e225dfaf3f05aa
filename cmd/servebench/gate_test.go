package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
