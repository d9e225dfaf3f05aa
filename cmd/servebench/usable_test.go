package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

const workloadFixtures = "../../testdata/workload/"

// TestStructuredRunEndToEnd: a structured workload on the bundled engine,
// streaming and not, JSON schema and forced tool call: every answer is
// usable with its last token, within a few milliseconds of its E2E (the
// JSON closes with the answer; only the end-of-turn step and the closing
// chunks follow), and
// report.md says, with the numbers, that streaming gains a program nothing.
func TestStructuredRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled engine")
	}
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 20 })
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"json-schema", []string{"--response-format", "json-schema:" + workloadFixtures + "forecast.schema.json"}},
		{"tools", []string{"--tools", workloadFixtures + "tools.json", "--tool-choice", "get_forecast"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "--base-url", e.BaseURL(), "--requests", "4", "--max-tokens", "256",
				"--out", dir, "--quiet", "--api-key-env", "SERVEBENCH_TEST_NO_KEY"}, tc.args...)
			code, out, errOut := runMain(args...)
			if code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
			}
			res, recs := loadSaved(t, dir)
			gaps := map[string][]float64{}
			for _, r := range recs {
				if r.UsableS <= 0 || r.UsableError != "" {
					t.Fatalf("%s #%d: usable %v (%q)", r.Run, r.Index, r.UsableS, r.UsableError)
				}
				gap := r.E2ES - r.UsableS
				if gap < 0 {
					t.Errorf("%s #%d: usable %.4f s after E2E %.4f s", r.Run, r.Index, r.UsableS, r.E2ES)
				}
				gaps[r.Run] = append(gaps[r.Run], gap)
				// Per answer, on the stream's own order, which load does not
				// move: no token arrives after the answer became usable.
				late := 0.0
				for _, ev := range r.Events {
					if ev[0] > r.UsableS {
						late += ev[1]
					}
				}
				if late > 0 {
					t.Errorf("%s #%d: %v tokens arrived after usable %.4f s (E2E %.4f s)", r.Run, r.Index, late, r.UsableS, r.E2ES)
				}
				if r.Stream && !(r.FirstVisibleS < r.UsableS) {
					t.Errorf("%s #%d: first visible %.4f s not before usable %.4f s", r.Run, r.Index, r.FirstVisibleS, r.UsableS)
				}
			}
			// In wall time, the end-of-turn step (~0.7 ms at speedup 20) is
			// all that follows; one answer's gap also takes in any stall of
			// this loaded host (one over 5 ms failed), so the run's median
			// answer is held to 5 ms.
			for run, g := range gaps {
				slices.Sort(g)
				if m := (g[(len(g)-1)/2] + g[len(g)/2]) / 2; m > 0.005 {
					t.Errorf("%s: usable %.4f s before E2E (median of %d), want within 5 ms", run, m, len(g))
				}
			}
			for _, run := range res.Runs {
				c := run.Client
				if c.UsableS == nil || c.UsableS.N != 4 || run.Workload.ExactLength {
					t.Fatalf("%s: usable summary %+v, exact length %v", run.Name, c.UsableS, run.Workload.ExactLength)
				}
				if run.Stream && !(c.FirstVisibleS.Median*2 < c.UsableS.Median) {
					t.Errorf("%s: first visible %.4f s not well before usable %.4f s (medians)", run.Name, c.FirstVisibleS.Median, c.UsableS.Median)
				}
			}
			md, err := os.ReadFile(filepath.Join(dir, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(md), "Usable output (client, median)") ||
				!strings.Contains(string(md), "**Streaming:** streaming gains a program nothing here") {
				t.Errorf("report.md lacks the usable column or verdict:\n%s", md)
			}
		})
	}
}

// TestStructuredFlagsBadInput: a structured flag's bad file is a usage
// error (exit 2) naming the file and line, before anything starts.
func TestStructuredFlagsBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(bad, []byte("{\n\"type\": \"object\",,\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runMain("run", "--base-url", "http://127.0.0.1:1", "--response-format", "json-schema:"+bad, "--quiet")
	if code != 2 || !strings.Contains(stderr, "schema.json:2:") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	code, _, stderr = runMain("run", "--base-url", "http://127.0.0.1:1", "--tools", workloadFixtures+"tools.json", "--tool-choice", "nope", "--quiet")
	if code != 2 || !strings.Contains(stderr, `--tool-choice "nope"`) {
		t.Errorf("exit %d, %s", code, stderr)
	}
}
