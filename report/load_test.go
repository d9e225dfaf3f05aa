package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

// TestLoadDir: what LoadDir adds to result.Load (DIR must be a directory;
// the parsing cases and the round trip are bench/result's tests, and
// TestWriteAllDeterministic regenerates from LoadDir): its errors are
// result.ErrInput naming the file, and a truncated last line is a warning.
func TestLoadDir(t *testing.T) {
	res, recs := reporttest.Seed()
	bad, cut := t.TempDir(), t.TempDir()
	for _, d := range []string{bad, cut} {
		if err := reporttest.Save(d, res, recs); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(bad, result.RequestsFile), []byte("{\"run\":\"streaming\"}\n{\"index\":4}\n"), 0o644)
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	for _, c := range []struct{ path, want string }{
		{bad, result.RequestsFile + `:2: record has no "run"`},
		{filepath.Join(t.TempDir(), "missing"), "missing"},
		{f, "not a directory"},
	} {
		_, _, _, _, err := LoadDir(c.path)
		if !errors.Is(err, result.ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadDir(%s): err = %v, want ErrInput containing %q", c.path, err, c.want)
		}
	}
	fh, _ := os.OpenFile(filepath.Join(cut, result.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"run":"stre`)
	fh.Close()
	_, lrecs, _, warns, err := LoadDir(cut)
	if err != nil || len(lrecs) != len(recs) || len(warns) != 1 || !strings.Contains(warns[0], "truncated last line") {
		t.Errorf("truncated: err %v, %d records (want %d), warnings %v", err, len(lrecs), len(recs), warns)
	}
}

// TestLoadDirBoundedReadsAsTheRun: the records of a directory whose runs
// kept none in memory (--interval windows, or a rebuild after a crash) come
// as the run's report got them (ChartRecords): from a file over the cap, a
// Sample (TestChartRecordsSample checks what it holds) and a warning naming
// the file; from a file under the cap, all. Bad lines are errors naming
// their line either way: the file is read once, whole. A run that kept its
// records gets them all, whatever the cap.
func TestLoadDirBoundedReadsAsTheRun(t *testing.T) {
	res, recs := reporttest.Seed()
	windowed := *res
	windowed.Runs = append([]result.Run(nil), res.Runs...)
	windowed.Runs[0].Windows = []result.Window{{Index: 1, EndS: windowed.Runs[0].DurationS, Requests: windowed.Runs[0].Requests}}
	incomplete := *res
	incomplete.Incomplete = true
	merged := *res
	merged.Manifest.CommandLine = []string{"servebench", "merge", "shard-0", "shard-1", "--out", "m"}
	notMerged := *res
	notMerged.Manifest.CommandLine = []string{"servebench", "run", "--out", "merge"}
	for _, c := range []struct {
		name    string
		res     *result.Results
		kept    bool // the run kept its records in memory
		maxByte int64
	}{
		{"windows, over the cap", &windowed, false, 1 << 10},
		{"incomplete, over the cap", &incomplete, false, 1 << 10},
		{"windows, under the cap", &windowed, false, 1 << 30},
		{"no windows, over the cap", res, true, 1 << 10},
		{"merged, over the cap", &merged, false, 1 << 10},
		{"run with a merge argument, over the cap", &notMerged, true, 1 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := reporttest.Save(dir, c.res, recs); err != nil {
				t.Fatal(err)
			}
			_, lrecs, s, warns, err := loadDir(dir, c.maxByte)
			over := !c.kept && c.maxByte < 1<<20
			switch {
			case err != nil:
				t.Fatal(err)
			case over && (s == nil || len(warns) != 1 || !strings.Contains(warns[0], "uniform sample") || !strings.Contains(warns[0], result.RequestsFile)):
				t.Errorf("over the cap: sample %v, warnings %q; want a sample, and a warning naming the file", s, warns)
			case !over && (s != nil || len(warns) != 0):
				t.Errorf("under the cap or kept: sample %v, warnings %q; want none", s, warns)
			case len(lrecs) != len(recs): // 20 a run: under the smallest sample, so all of them either way
				t.Errorf("%d records, want all %d", len(lrecs), len(recs))
			}
			// A bad line in the middle: an error naming it wherever the file is read.
			path := filepath.Join(dir, result.RequestsFile)
			data, _ := os.ReadFile(path)
			first := strings.IndexByte(string(data), '\n') + 1
			os.WriteFile(path, append(append(data[:first:first], "{bad\n"...), data[first:]...), 0o644)
			_, _, _, _, err = loadDir(dir, c.maxByte)
			if !errors.Is(err, result.ErrInput) || !strings.Contains(err.Error(), result.RequestsFile+":2: bad JSON") {
				t.Errorf("a bad line 2: err = %v, want ErrInput naming %s:2", err, result.RequestsFile)
			}
		})
	}
}
