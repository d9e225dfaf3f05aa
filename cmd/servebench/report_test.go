package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/reporttest"
)

// TestReportCommand regenerates a saved directory and checks the files are
// byte-for-byte what the run wrote, and the table is on stdout.
func TestReportCommand(t *testing.T) {
	res, recs := reporttest.Seed()
	dir, ref := t.TempDir(), t.TempDir()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteSampled(ref, res, recs, nil); err != nil { // what the run wrote
		t.Fatal(err)
	}
	code, stdout, stderr := runMain("report", filepath.Join(dir, result.ResultsFile), "--format", "markdown")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, "| Streaming | 0.026 s |") {
		t.Errorf("stdout lacks the Markdown table:\n%s", stdout)
	}
	for _, f := range []string{"report.md", "report.html", "table.png", "timeline.png", "tokens.png", "cdf.png", "startup.png"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(filepath.Join(ref, f))
		if !bytes.Equal(got, want) {
			t.Errorf("%s regenerated differs from the run's", f)
		}
	}
}

// TestReportTruncatedLastLine: a run killed mid-line still reports (exit
// 0), and stderr says which line was skipped.
func TestReportTruncatedLastLine(t *testing.T) {
	res, recs := reporttest.Seed()
	dir := t.TempDir()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, result.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"run":"streaming","index":3`)
	f.Close()
	code, stdout, stderr := runMain("report", dir)
	want := fmt.Sprintf("warning: %s:%d: truncated last line skipped", filepath.Join(dir, result.RequestsFile), len(recs)+1)
	if code != 0 || !strings.Contains(stderr, want) || !strings.Contains(stdout, "Streaming") {
		t.Errorf("exit %d, stderr %q (want %q), stdout:\n%s", code, stderr, want, stdout)
	}
}

// TestReportCommandErrors: bad usage and bad input exit 2 with a message
// naming what was wrong.
func TestReportCommandErrors(t *testing.T) {
	good := t.TempDir()
	res, recs := reporttest.Seed()
	if err := reporttest.Save(good, res, recs); err != nil {
		t.Fatal(err)
	}
	badJSON := t.TempDir()
	if err := reporttest.Save(badJSON, res, recs); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(badJSON, result.ResultsFile), []byte("{\n  \"schema\": \"servebench/v1\",\n  \"runs\": [,]\n}\n"), 0o644)
	badLine := t.TempDir()
	if err := reporttest.Save(badLine, res, recs); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(badLine, result.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"run\": \"streaming\", \"index\": \"x\"}\n")
	f.Close()
	cases := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no dir", []string{"report"}, "one results directory"},
		{"missing dir", []string{"report", filepath.Join(good, "nope")}, "nope"},
		{"bad format", []string{"report", good, "--format", "xml"}, `"xml"`},
		{"a file, not results.json", []string{"report", filepath.Join(good, result.RequestsFile)}, "not a directory"},
		{"bad results.json", []string{"report", badJSON}, "results.json:3"},
		{"bad requests.jsonl", []string{"report", badLine}, "requests.jsonl:41"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runMain(c.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (stderr %s)", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q lacks %q", stderr, c.want)
			}
		})
	}
}

// TestReportRegeneratesRealRun: `servebench table` against the bundled
// engine (in-process, real HTTP) writes report.md and the charts; `servebench
// report` on that directory rewrites every one of them byte for byte.
func TestReportRegeneratesRealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled engine")
	}
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 100 })
	dir := t.TempDir()
	code, out, errOut := runMain("table", "--base-url", e.BaseURL(), "--requests", "5", "--max-tokens", "64",
		"--out", dir, "--quiet", "--api-key-env", "SERVEBENCH_TEST_NO_KEY")
	if code != 0 {
		t.Fatalf("table: exit %d\n%s\n%s", code, out, errOut)
	}
	files := []string{"report.md", "report.html", "table.png", "timeline.png", "tokens.png", "cdf.png"}
	written := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("the run did not write %s: %v", f, err)
		}
		written[f] = b
		os.Remove(filepath.Join(dir, f))
	}
	code, stdout, stderr := runMain("report", dir, "--format", "json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, `"engine_ttft_s"`) {
		t.Errorf("stdout is not the JSON table:\n%s", stdout)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("report did not rewrite %s: %v", f, err)
		}
		if !bytes.Equal(b, written[f]) {
			t.Errorf("%s regenerated from the saved files differs from the run's", f)
		}
	}
}

// TestReportStartupOnly: the directory `servebench startup --out DIR` writes
// (results.json without runs, no requests.jsonl) gives report.md with the
// start-up section and startup.png, and no table chart.
func TestReportStartupOnly(t *testing.T) {
	res, _ := reporttest.Seed()
	res.Runs = []result.Run{}
	dir := t.TempDir()
	if err := reporttest.Save(dir, res, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, result.RequestsFile))
	code, stdout, stderr := runMain("report", dir)
	if code != exitOK || !strings.Contains(stdout, "start-up only") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(dir, result.ReportFile))
	if err != nil || !strings.Contains(string(md), "## Start-up") || !strings.Contains(string(md), "start-up measurement only") {
		t.Errorf("report.md (%v):\n%s", err, md)
	}
	if _, err := os.Stat(filepath.Join(dir, report.FileStartup)); err != nil {
		t.Errorf("startup.png: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, report.FileTable)); err == nil {
		t.Error("table.png written for a directory without runs")
	}
}
