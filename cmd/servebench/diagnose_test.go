package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestDiagnosisQueueShareEndToEnd: 8 concurrent requests on the bundled
// engine's 2 slots wait in its queue; report.md's "where is the time going"
// gives queue wait with its share of engine TTFT as results.json measured
// it, and says "little queue wait" only when the share is under a tenth.
func TestDiagnosisQueueShareEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled engine")
	}
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 20; o.MaxNumSeqs = 2 })
	dir := t.TempDir()
	code, out, errOut := runMain("run", "--base-url", e.BaseURL(), "--concurrency", "8", "--requests", "24",
		"--max-tokens", "32", "--stream", "on", "--out", dir, "--quiet", "--api-key-env", "SERVEBENCH_TEST_NO_KEY")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	res, _ := loadSaved(t, dir)
	eng := res.Runs[0].Engine
	if eng.QueueS == nil || eng.TTFTS == nil || eng.TTFTS.Mean <= 0 {
		t.Fatalf("engine figures missing: %+v", eng)
	}
	share := eng.QueueS.Mean / eng.TTFTS.Mean
	if share < 0.1 {
		t.Fatalf("queue wait %.4f s is only %.0f%% of TTFT %.4f s on 2 slots for 8 requests: the test needs a queue",
			eng.QueueS.Mean, 100*share, eng.TTFTS.Mean)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	i := strings.Index(text, "## Where is the time going")
	if i < 0 {
		t.Fatalf("report.md has no diagnosis:\n%s", text)
	}
	diag := text[i:]
	diag = diag[:strings.Index(diag, "> Two clocks")]
	want := strconv.FormatFloat(100*share, 'f', 0, 64) + "% of"
	if !strings.Contains(diag, want) || strings.Contains(diag, "waited little") {
		t.Errorf("queue wait %.4f s of TTFT %.4f s: want %q and no \"waited little\" in\n%s",
			eng.QueueS.Mean, eng.TTFTS.Mean, want, diag)
	}
	if strings.Contains(text, "does not export engine queue wait") {
		t.Errorf("report.md says the server does not export queue wait:\n%s", text)
	}
}
