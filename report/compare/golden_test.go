package compare

import (
	"bytes"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenReports are the scenarios rendered by TestGolden: under the
// per-request test, a 2x slowdown (regressions, server-side differences)
// and a clean comparison with a few failed requests and a forced workload
// difference; under the run-level default, 5+5 runs of a 25% slowdown and
// the 2x slowdown with one run a side (limits only).
func goldenReports(t *testing.T) map[string]*Report {
	t.Helper()
	out := map[string]*Report{}
	base := synthSide(t, "baseline/", 1, 100, twoRuns(1)...)
	nw := synthSide(t, "new/", 2, 50, twoRuns(2)...)
	rep, err := Compare(base, nw, Options{Test: TestRequests})
	if err != nil {
		t.Fatal(err)
	}
	out["slower"] = rep

	base = synthSide(t, "baseline/", 3, 100, synthRun{name: "c=4", n: 30, scale: 1, stream: true,
		workload: func(w *result.Workload) { w.Mode, w.Concurrency = "concurrent", 4 }})
	nw = synthSide(t, "new/", 4, 100, synthRun{name: "c=4", n: 30, scale: 1, stream: true, failed: 2,
		workload: func(w *result.Workload) { w.Mode, w.Concurrency, w.PromptTokens = "concurrent", 4, 100 }})
	nw.Warnings = []string{"new/requests.jsonl:61: truncated last line skipped (writer stopped mid-line?)"}
	rep, err = Compare(base, nw, Options{Force: true, Test: TestRequests})
	if err != nil {
		t.Fatal(err)
	}
	out["clean"] = rep

	// Run-level: five runs a side of one build (issue 30), and one run a
	// side judged by the limits alone.
	if out["repeats"], err = Compare(repeatedSide(t, "baseline/", 1, 1, baseShifts), repeatedSide(t, "new/", 50, 1.25, newShifts), Options{}); err != nil {
		t.Fatal(err)
	}
	if out["limits"], err = Compare(synthSide(t, "baseline/", 1, 100, twoRuns(1)...), synthSide(t, "new/", 2, 50, twoRuns(2)...), Options{}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGolden(t *testing.T) {
	reports := goldenReports(t)
	ext := map[string]string{"text": "txt", "markdown": "md", "json": "json", "junit": "xml", "html": "html"}
	for name, rep := range reports {
		for _, format := range Formats {
			t.Run(name+"/"+format, func(t *testing.T) {
				var buf bytes.Buffer
				if err := Write(&buf, rep, format); err != nil {
					t.Fatal(err)
				}
				reporttest.CheckGolden(t, filepath.Join("testdata", name+"."+ext[format]+".golden"), buf.Bytes(), *update)
			})
		}
	}
}

// TestHeaderWidth: the text header keeps to 100 columns with command lines
// of about 150 characters on each side (issue 20: ~270 wide side by side);
// each command line is given whole, base and new.
func TestHeaderWidth(t *testing.T) {
	rep := goldenReports(t)["slower"]
	long := func(out string) []string {
		return strings.Fields("servebench run --speedup 20 --dataset sharegpt:data/ShareGPT_V3_unfiltered_cleaned_split.json " +
			"--rate 4 --requests 103 --stream on --out " + out + " --quiet")
	}
	rep.Base.Manifest.CommandLine = long("/results/base-run-with-a-long-name")
	rep.New.Manifest.CommandLine = long("/results/new-run-with-a-long-name")
	var buf bytes.Buffer
	if err := WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(buf.String(), "\nserver-side differences")
	for i, line := range strings.Split(header, "\n") {
		if n := utf8.RuneCountInString(line); n > headerWidth {
			t.Errorf("header line %d is %d columns: %q", i+1, n, line)
		}
	}
	flat := strings.Join(strings.Fields(header), " ")
	for label, cl := range map[string][]string{"base": rep.Base.Manifest.CommandLine, "new": rep.New.Manifest.CommandLine} {
		if want := label + " " + strings.Join(cl, " "); !strings.Contains(flat, want) {
			t.Errorf("header lacks the %s command line whole:\n%s", label, header)
		}
	}
}
