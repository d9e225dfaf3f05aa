package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

func TestExport(t *testing.T) {
	dir := t.TempDir()
	res, recs := reporttest.Seed()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := runMain("export", dir, "--to", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 1+40 {
		t.Fatalf("csv on stdout: %d rows, %v; want header + 40 requests", len(rows), err)
	}

	file := filepath.Join(t.TempDir(), "no", "such", "folder", "vllm.json")
	if code, out, stderr := runMain("export", dir, "--to", "vllm-bench", "--run", "non-streaming", "--out", file, "--metric-percentiles", "50,90,99"); code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var run map[string]any
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatalf("--run: want one JSON object: %v", err)
	}
	if _, ok := run["p90_e2el_ms"]; !ok {
		t.Error("--metric-percentiles 50,90,99: p90_e2el_ms missing")
	}
	if x := run["servebench"].(map[string]any); x["run"] != "non-streaming" {
		t.Errorf("--run non-streaming exported run %v", x["run"])
	}
	csvFile := filepath.Join(t.TempDir(), "new", "requests.csv")
	if code, _, stderr := runMain("export", dir, "--to", "csv", "--out", csvFile); code != 0 {
		t.Fatalf("csv --out in a new folder: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(csvFile); err != nil || !strings.HasPrefix(string(b), "run,index,") || strings.Count(string(b), "\n") < 2 {
		t.Errorf("csv --out in a new folder: want a header and rows in %s: %v\n%s", csvFile, err, b)
	}
}

// TestExportBadInput: each unusable input exits 2 naming what is wrong.
func TestExportBadInput(t *testing.T) {
	noRecs := t.TempDir()
	res, recs := reporttest.Seed()
	if err := reporttest.Save(noRecs, res, recs); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(noRecs, result.RequestsFile))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", noRecs, "--to", "csv"}, result.RequestsFile},            // names the missing file
		{[]string{"export", t.TempDir(), "--to", "vllm-bench"}, result.ResultsFile}, // an empty directory
		{[]string{"export", noRecs, "--to", "parquet"}, "--to \"parquet\""},         // an unknown format
		{[]string{"export", noRecs}, "--to \"\""},                                   // no format
		{[]string{"export", noRecs, "--to", "vllm-bench", "--metric-percentiles", "x"}, "--metric-percentiles"},
		{[]string{"export", noRecs, "--to", "csv", "--append", "x.jsonl"}, "--append: only for --to vllm-bench"},
		{[]string{"export", noRecs, "--to", "vllm-bench", "--append", "x.jsonl", "--out", "y.json"}, "--out and --append"},
	} {
		code, _, stderr := runMain(tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", tc.args, code, stderr, tc.want)
		}
	}
}

// TestCompareVLLM: compare takes a directory holding a vLLM result JSON
// as either side: the round trip through export gives no regression, and
// a result saved without --save-detailed is refused naming the flag.
func TestCompareVLLM(t *testing.T) {
	dir := t.TempDir()
	res, recs := reporttest.Seed()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	vdir := t.TempDir()
	if code, _, stderr := runMain("export", dir, "--to", "vllm-bench", "--out", vdir); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	code, out, stderr := runMain("compare", vdir, dir)
	if code != exitOK || !strings.Contains(out, "verdict: no regression") || !strings.Contains(out, "workload not checked") {
		t.Errorf("round trip: exit %d, want 0 with the unchecked workload named\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	summary := filepath.Join("..", "..", "testdata", "vllm-bench", "summary-only")
	code, _, stderr = runMain("compare", summary, dir)
	if code != exitUsage || !strings.Contains(stderr, "--save-detailed") {
		t.Errorf("summary-only vLLM result: exit %d, stderr %q; want 2 naming --save-detailed", code, stderr)
	}
}
