package compare

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/report/export"
	"github.com/servebench/servebench/report/reporttest"
)

// vllmFixture is a hand-written `vllm bench serve --save-detailed` result
// (see testdata/vllm-bench/SOURCES.md).
var vllmFixture = filepath.Join("..", "..", "testdata", "vllm-bench")

// TestVLLMRoundTrip: export --to vllm-bench, then compare that JSON with the
// results it came from, either way round: same runs, same samples, no
// regression, and the comparison says what vLLM's format could not check.
func TestVLLMRoundTrip(t *testing.T) {
	res, recs := reporttest.Seed()
	orig := t.TempDir()
	if err := reporttest.Save(orig, res, recs); err != nil {
		t.Fatal(err)
	}
	vdir := t.TempDir()
	f, err := os.Create(filepath.Join(vdir, "vllm.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := export.VLLM(f, res, recs, export.Options{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, pair := range [][2]string{{vdir, orig}, {orig, vdir}} {
		base, err := Load(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		cur, err := Load(pair[1])
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Compare(base, cur, Options{Test: TestRequests})
		if err != nil {
			t.Fatalf("%s vs %s: %v", pair[0], pair[1], err)
		}
		if regs := rep.Regressions(); len(regs) > 0 {
			t.Errorf("round trip regressed: %v", regs)
		}
		if len(rep.Runs) != 2 || len(rep.OnlyInBase)+len(rep.OnlyInNew) > 0 {
			t.Fatalf("runs %d, unmatched %v %v: want streaming and non-streaming matched by name", len(rep.Runs), rep.OnlyInBase, rep.OnlyInNew)
		}
		for _, run := range rep.Runs {
			if len(run.Unchecked) == 0 || !strings.Contains(strings.Join(run.Unchecked, ";"), "max_tokens") {
				t.Errorf("run %s: unchecked %v, want max_tokens among what vLLM does not record", run.Name, run.Unchecked)
			}
			for _, row := range run.Rows {
				switch row.Key() {
				case "client.first_token.median", "client.e2e.median":
					// The same samples: no change, and the TTFT gate (first
					// visible's limit, moved to first token) is on.
					if row.P == nil || *row.P < 0.99 || row.Change == nil || *row.Change != 0 || row.Threshold == "" {
						t.Errorf("run %s %s: p %v change %v limit %q: want p 1, change 0, a limit", run.Name, row.Key(), row.P, row.Change, row.Threshold)
					}
				case "client.first_visible.median":
					if row.Verdict != VerdictNotJudged {
						t.Errorf("run %s: first_visible %s, want not judged (vLLM records no first visible output)", run.Name, row.Verdict)
					}
				}
			}
		}
	}
}

// TestVLLMFixture: a vLLM result (with the role-chunk gap and a failed
// request) against a servebench run of the same workload: the workload
// check passes on what both record, the failed request counts as one.
func TestVLLMFixture(t *testing.T) {
	v, err := Load(filepath.Join(vllmFixture, "detailed"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Foreign != ForeignVLLM || len(v.Results.Runs) != 1 || v.Results.Runs[0].OK != 11 || v.Results.Runs[0].Errors[export.ErrorClass] != 1 {
		t.Fatalf("vLLM side: %+v", v.Results.Runs)
	}
	res, recs := reporttest.Build("vllm", reporttest.RunSpec{Name: "streaming", Stream: true, N: 12, Tokens: 16,
		FirstVisible: 0.03, PerToken: 0.015, EngineTTFT: 0.028})
	sb := &Side{Path: "servebench", Results: res, Records: recs}
	rep, err := Compare(v, sb, Options{Test: TestRequests})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Base.Failed != 1 || rep.Runs[0].New.OK != 12 {
		t.Fatalf("runs %+v: want the file's one run paired with the only streaming run", rep.Runs)
	}
	// A different model is refused, naming the field.
	res.Runs[0].Workload.Model = "other"
	if _, err := Compare(v, sb, Options{Test: TestRequests}); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "model") {
		t.Errorf("other model: err = %v, want a mismatch naming model", err)
	}
}

// TestVLLMSummaryOnlyRefused: without --save-detailed there are no
// per-request samples: refused as unusable input, naming the flag.
func TestVLLMSummaryOnlyRefused(t *testing.T) {
	_, err := Load(filepath.Join(vllmFixture, "summary-only"))
	if !errors.Is(err, ErrInput) || !errors.Is(err, export.ErrNotDetailed) || !strings.Contains(err.Error(), "--save-detailed") ||
		!strings.Contains(err.Error(), "summary-only.json") {
		t.Errorf("err = %v: want ErrInput naming the file and --save-detailed", err)
	}
	// A directory with results.json is servebench's, whatever else it holds.
	dir := t.TempDir()
	res, recs := reporttest.Seed()
	reporttest.Save(dir, res, recs)
	os.WriteFile(filepath.Join(dir, "notes.json"), []byte(`{}`), 0o644)
	if s, err := Load(dir); err != nil || s.Foreign != "" {
		t.Errorf("results dir with another .json: %v, foreign %q", err, s.Foreign)
	}
}
