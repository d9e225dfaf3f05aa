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
		_, _, _, err := LoadDir(c.path)
		if !errors.Is(err, result.ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadDir(%s): err = %v, want ErrInput containing %q", c.path, err, c.want)
		}
	}
	fh, _ := os.OpenFile(filepath.Join(cut, result.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"run":"stre`)
	fh.Close()
	_, lrecs, warns, err := LoadDir(cut)
	if err != nil || len(lrecs) != len(recs) || len(warns) != 1 || !strings.Contains(warns[0], "truncated last line") {
		t.Errorf("truncated: err %v, %d records (want %d), warnings %v", err, len(lrecs), len(recs), warns)
	}
}
