package main

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestArrivalsEndToEnd: with --arrivals each record of a run on the bundled
// engine keeps its response's reads, whose tokens add up to the request's
// output tokens, and export --to csv writes them. (How many reads a stream
// takes depends on the host's load: TestArrivals holds a clumped stream to
// its reads.)
func TestArrivalsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled engine")
	}
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 20 })
	dir := t.TempDir()
	code, out, errOut := runMain("run", "--base-url", e.BaseURL(), "--requests", "3", "--warmup", "0", "--max-tokens", "16", "--arrivals",
		"--out", dir, "--quiet", "--api-key-env", "SERVEBENCH_TEST_NO_KEY")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	res, recs := loadSaved(t, dir)
	if !res.Runs[0].Workload.Arrivals || len(recs) != 6 {
		t.Fatalf("workload.arrivals %v, %d records", res.Runs[0].Workload.Arrivals, len(recs))
	}
	for _, r := range recs {
		tokens, bytes := 0.0, 0.0
		for _, a := range r.Arrivals {
			bytes += a[1]
			tokens += a[2]
		}
		if len(r.Arrivals) == 0 || int(tokens) != r.OutputTokens || bytes <= 0 || r.Arrivals[0][0] > r.FirstVisibleS {
			t.Errorf("%s #%d: %d arrivals of %v tokens, %v bytes; output %d tokens", r.Run, r.Index, len(r.Arrivals), tokens, bytes, r.OutputTokens)
		}
	}
	code, csv, errOut := runMain("export", dir, "--to", "csv")
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if code != 0 || len(lines) != 7 || !strings.HasSuffix(lines[0], ",usable_s,arrivals") {
		t.Fatalf("export: exit %d, %d lines: %s %s", code, len(lines), lines[0], errOut)
	}
	last := lines[1][strings.LastIndexByte(lines[1], ',')+1:]
	if n := len(strings.Fields(last)); n != len(recs[0].Arrivals) && !strings.Contains(last, ":") {
		t.Errorf("csv arrivals cell %q", last)
	}
}
