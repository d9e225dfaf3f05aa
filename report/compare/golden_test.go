package compare

import (
	"bytes"
	"flag"
	"path/filepath"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenReports are the scenarios rendered by TestGolden: a 2x slowdown
// (regressions, server-side differences) and a clean comparison with a
// few failed requests and a forced workload difference.
func goldenReports(t *testing.T) map[string]*Report {
	t.Helper()
	out := map[string]*Report{}
	base := synthSide(t, "baseline/", 1, 100, twoRuns(1)...)
	nw := synthSide(t, "new/", 2, 50, twoRuns(2)...)
	rep, err := Compare(base, nw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out["slower"] = rep

	base = synthSide(t, "baseline/", 3, 100, synthRun{name: "c=4", n: 30, scale: 1, stream: true,
		workload: func(w *result.Workload) { w.Mode, w.Concurrency = "concurrent", 4 }})
	nw = synthSide(t, "new/", 4, 100, synthRun{name: "c=4", n: 30, scale: 1, stream: true, failed: 2,
		workload: func(w *result.Workload) { w.Mode, w.Concurrency, w.PromptTokens = "concurrent", 4, 100 }})
	nw.Warnings = []string{"new/requests.jsonl:61: truncated last line skipped (writer stopped mid-line?)"}
	rep, err = Compare(base, nw, Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	out["clean"] = rep
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
