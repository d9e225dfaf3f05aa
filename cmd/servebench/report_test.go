package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
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
	if err := report.WriteAll(ref, res, recs); err != nil { // what the run wrote
		t.Fatal(err)
	}
	code, stdout, stderr := runMain("report", dir, "--format", "markdown")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, "| Streaming | 0.026 s |") {
		t.Errorf("stdout lacks the Markdown table:\n%s", stdout)
	}
	for _, f := range []string{"report.md", "table.png", "timeline.png", "tokens.png", "cdf.png", "startup.png"} {
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
