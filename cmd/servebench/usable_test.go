package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

const workloadFixtures = "../../testdata/workload/"

// TestStructuredRunEndToEnd: a structured workload on the bundled engine,
// streaming and not, JSON schema and forced tool call: every answer is
// usable within a few milliseconds of its E2E (the JSON closes with the
// answer; only the end-of-turn step and the closing chunks follow), and
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
			for _, r := range recs {
				if r.UsableS <= 0 || r.UsableError != "" {
					t.Fatalf("%s #%d: usable %v (%q)", r.Run, r.Index, r.UsableS, r.UsableError)
				}
				if gap := r.E2ES - r.UsableS; gap < 0 || gap > 0.005 {
					t.Errorf("%s #%d: usable %.4f s, E2E %.4f s: %.4f s apart, want within 5 ms", r.Run, r.Index, r.UsableS, r.E2ES, gap)
				}
				if r.Stream && !(r.FirstVisibleS < r.UsableS) {
					t.Errorf("%s #%d: first visible %.4f s not before usable %.4f s", r.Run, r.Index, r.FirstVisibleS, r.UsableS)
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
