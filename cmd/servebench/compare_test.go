package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench/result"
)

// writeSide saves a results directory with one streaming run of n requests
// whose latencies grow evenly with the request index, times scale; the
// first failed requests fail.
func writeSide(t *testing.T, n, failed int, scale float64, maxTokens int) string {
	t.Helper()
	dir := t.TempDir()
	run := result.Run{Name: "streaming", Stream: true, Requests: n, OK: n - failed, Errors: map[string]int{},
		Workload: result.Workload{Mode: "sequential", Requests: n, Stream: true, Endpoint: "chat", Model: "m", MaxTokens: maxTokens, PromptKind: "fixed"}}
	var lines bytes.Buffer
	total := 0.0
	for i := range n {
		rec := result.Record{Run: "streaming", Index: i, Stream: true, OutputTokens: maxTokens}
		if i < failed {
			rec.Error, rec.OutputTokens = "http_status", 0
			run.Errors["http_status"]++
		} else {
			f := scale * (1 + 0.01*float64(i))
			rec.TTFBS, rec.FirstTokenS, rec.FirstVisibleS, rec.E2ES = 0.01*f, 0.02*f, 0.02*f, 0.5*f
			total += rec.E2ES
		}
		b, _ := json.Marshal(rec)
		lines.Write(append(b, '\n'))
	}
	if total > 0 {
		run.Throughput.OutputTokensPerS = float64(maxTokens*(n-failed)) / total
	}
	res := result.Results{Schema: result.Schema, Runs: []result.Run{run},
		Manifest: result.Manifest{Version: "test", CommandLine: []string{"servebench", "run"}},
		Server:   result.Server{Model: "m", Bundled: &result.Bundled{GPU: "g", Model: "m", Speedup: 100 / scale}}}
	b, _ := json.Marshal(res)
	for name, data := range map[string][]byte{result.ResultsFile: b, result.RequestsFile: lines.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCompareExitCodes runs the whole command for each exit status.
func TestCompareExitCodes(t *testing.T) {
	base := writeSide(t, 20, 0, 1, 32)
	same := writeSide(t, 20, 0, 1, 32)
	slow := writeSide(t, 20, 0, 2, 32)
	other := writeSide(t, 20, 0, 1, 64)
	failed := writeSide(t, 20, 20, 1, 32)
	few := writeSide(t, 5, 0, 1, 32)
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, result.ResultsFile), []byte("{\n  \"schema\": \"servebench/v1\",\n  \"runs\": [}\n"), 0o644)
	// A limits file as calibrate writes it: first visible's limit loose
	// (200%), so the 2x slower side regresses on client.e2e.
	limits := filepath.Join(t.TempDir(), "limits.txt")
	os.WriteFile(limits, []byte("# servebench calibrate\nclient.e2e.median=5%\nclient.first_visible.median=200%  # loose\nclient.tpot.median=off\nthroughput.output_tokens_per_s=off\n"), 0o644)
	badLimits := filepath.Join(t.TempDir(), "limits-bad.txt")
	os.WriteFile(badLimits, []byte("client.e2e.median=5%\nclient.e2e.median=fast\n"), 0o644)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a phrase stdout must hold
		stderr string // a phrase stderr must hold
	}{
		{"same", []string{"compare", base, same}, 0, "verdict: no regression", ""},
		{"results.json paths", []string{"compare", filepath.Join(base, "results.json"), filepath.Join(same, "results.json")}, 0, "no regression", ""},
		{"slower", []string{"compare", base, slow}, 1, "REGRESSION", "streaming: client.e2e.median +100.0%"},
		// With one run a side the verdict rests on the limits alone; the
		// per-request test (--test requests) still calls the change worse.
		{"slower, limit off", []string{"compare", "--max-regression", "client.e2e.median=off", "--max-regression", "client.first_visible.median=off",
			"--max-regression", "throughput.output_tokens_per_s=off", "--max-regression", "client.tpot.median=off", base, slow}, 0, "no test", ""},
		{"slower, limit off, per-request test", []string{"compare", "--test", "requests", "--max-regression", "client.e2e.median=off", "--max-regression", "client.first_visible.median=off",
			"--max-regression", "throughput.output_tokens_per_s=off", "--max-regression", "client.tpot.median=off", base, slow}, 0, "worse", ""},
		{"several runs a side", []string{"compare", base, same, "--", slow, slow}, 1, "n=2+2 runs", "n=2+2 Welch"},
		{"several runs a side, same build", []string{"compare", base, same, "--", same, base}, 0, "no regression", ""},
		{"limits from a file", []string{"compare", "--limits-from", limits, base, slow}, 1, "200%", "client.e2e.median"},
		{"limits file, bad line", []string{"compare", "--limits-from", badLimits, base, slow}, 2, "", "limits-bad.txt:2:"},
		{"bad test", []string{"compare", "--test", "t", base, same}, 2, "", `--test "t": want one of auto, requests`},
		{"nothing after --", []string{"compare", base, "--"}, 2, "", "at least one result set each side of --"},
		{"slower junit", []string{"compare", "--format", "junit", base, slow}, 1, `<failure message="regression: streaming client.e2e.median`, ""},
		{"workload differs", []string{"compare", base, other}, 2, "", "max_tokens: 32 -> 64"},
		{"workload differs, forced", []string{"compare", "--force", base, other}, 0, "workload differs (--force): max_tokens: 32 -> 64", ""},
		{"all failed", []string{"compare", base, failed}, 3, "", "every one of the 20 measured requests failed"},
		{"too few", []string{"compare", few, base}, 3, "", "at least 8 per side"},
		{"missing dir", []string{"compare", base, filepath.Join(base, "nope")}, 2, "", "nope"},
		{"bad JSON", []string{"compare", base, broken}, 2, "", "results.json:3: bad JSON"},
		{"bad threshold", []string{"compare", "--max-regression", "client.e2e.median=fast", base, same}, 2, "", `"client.e2e.median=fast"`},
		{"bad alpha", []string{"compare", "--alpha", "5", base, same}, 2, "", "--alpha 5"},
		{"bad format", []string{"compare", "--format", "pdf", base, same}, 2, "", `--format "pdf": want one of text, markdown, json, junit, html`},
		{"one argument", []string{"compare", base}, 2, "", "two arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runMain(tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Errorf("exit %d (want %d)\nstdout (want %q):\n%s\nstderr (want %q):\n%s", code, tc.code, tc.stdout, out, tc.stderr, errs)
			}
		})
	}
}

// TestCompareHTML: --html FILE writes the comparison as a web page beside
// the text on stdout, the regressed figure's verdict classed "bad", and the
// exit status is the gate's.
func TestCompareHTML(t *testing.T) {
	base, slow := writeSide(t, 20, 0, 1, 32), writeSide(t, 20, 0, 2, 32)
	page := filepath.Join(t.TempDir(), "compare.html")
	code, out, errs := runMain("compare", "--html", page, base, slow)
	if code != exitRegression || !strings.Contains(out, "REGRESSION") {
		t.Fatalf("exit %d (want %d)\n%s\n%s", code, exitRegression, out, errs)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"<!DOCTYPE html>", "<title>servebench compare: REGRESSION", `<td class="bad"><strong>REGRESSION</strong>`, "<code>client.e2e.median</code>"} {
		if !strings.Contains(html, want) {
			t.Errorf("compare.html lacks %q", want)
		}
	}
	if code, _, errs := runMain("compare", "--html", filepath.Join(t.TempDir(), "no", "such", "dir.html"), base, base); code == 0 || !strings.Contains(errs, "--html") {
		t.Errorf("an unwritable --html: exit %d, stderr %q: expected a failure naming --html", code, errs)
	}
}

// TestCompareFlags captures the parsed options.
func TestCompareFlags(t *testing.T) {
	var got *compareOptions
	cmd := newCompareCmdWith(func(_ *cobra.Command, o *compareOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--alpha", "0.01", "--max-regression", "client.e2e.p90=15%", "--max-regression", "engine.ttft.mean=+5ms,20%", "--force", "--format", "markdown", "a", "b"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.base != "a" || got.new != "b" || got.alpha != 0.01 || !got.force || got.format != "markdown" || len(got.maxRegression) != 2 {
		t.Fatalf("options %+v", got)
	}
	opts, err := got.compareOpts()
	if err != nil || len(opts.Thresholds) != 2 || opts.Thresholds[1].Abs != 0.005 || opts.Thresholds[1].Rel != 0.2 {
		t.Errorf("compare options %+v, %v", opts, err)
	}
}
