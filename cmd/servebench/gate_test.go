package main

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
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
	code, out, errOut := run(slow, t.TempDir(), "--baseline", base)
	if code != exitRegression || !strings.Contains(errOut, "regression against the baseline "+base) ||
		!strings.Contains(out, "verdict: REGRESSION") {
		t.Errorf("exit %d, want %d naming the baseline, the comparison on stdout\nstdout:\n%s\nstderr:\n%s", code, exitRegression, out, errOut)
	}
}
