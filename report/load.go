package report

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/bench/result"
)

// LoadDir reads a results directory as a run left it: results.json, and
// the records of requests.jsonl as the run that wrote it had them for its
// report. A run that kept its records in memory had them all (result.Load).
// A bounded run (--interval: its runs have windows) or one rebuilt after a
// crash (incomplete) kept none: they come from ChartRecords, none past
// MaxChartBytes (a warning says so), so that memory stays bounded however
// long the run and report.md is what the run wrote. `servebench report`
// writes report.md and the charts back into it, so it must be a directory.
// Errors wrap result.ErrInput and name the file and, for malformed JSON,
// the line; warnings name what was skipped (a truncated last line).
func LoadDir(dir string) (*result.Results, []result.Record, []string, error) {
	return loadDir(dir, MaxChartBytes)
}

func loadDir(dir string, maxBytes int64) (*result.Results, []result.Record, []string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, nil, &result.InputError{Path: dir, Err: fmt.Errorf("results directory: %w", err)}
	}
	if !st.IsDir() {
		return nil, nil, nil, &result.InputError{Path: dir, Err: fmt.Errorf("not a directory: expected a results directory holding %s and %s", result.ResultsFile, result.RequestsFile)}
	}
	res, _, err := result.LoadResults(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if !KeptNoRecords(res) {
		return result.Load(dir)
	}
	recs, warns, err := ChartRecords(dir, maxBytes)
	if err != nil {
		return nil, nil, nil, err
	}
	return res, recs, warns, nil
}

// KeptNoRecords reports whether res comes from runs that kept no record in
// memory (--interval, whose runs have windows) or from a rebuild after a
// crash: their reports read requests.jsonl back through ChartRecords.
func KeptNoRecords(res *result.Results) bool {
	if res.Incomplete {
		return true
	}
	for i := range res.Runs {
		if len(res.Runs[i].Windows) > 0 {
			return true
		}
	}
	return false
}

// MaxChartBytes bounds the requests.jsonl that ChartRecords reads back
// after a bounded-memory run: about 7,000 requests of 128 streamed tokens
// (2.4 KB a line), so reading them back costs tens of MB at most.
const MaxChartBytes = 16 << 20

// ChartRecords reads dir's requests.jsonl back for the per-request charts
// and report.md's sections drawn from records (slowest requests, turns)
// after a run that kept no records in memory (--interval, a merge, a
// rebuild after a crash), when the file is at most maxBytes; a larger file
// is not read (nil, with a note saying so), so memory stays bounded however
// long the run. Warnings name a skipped truncated last line.
func ChartRecords(dir string, maxBytes int64) (recs []result.Record, notes []string, err error) {
	path := filepath.Join(dir, result.RequestsFile)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, &result.InputError{Path: path, Err: err}
	}
	if fi.Size() > maxBytes {
		return nil, []string{fmt.Sprintf("%s is %d MiB: per-request charts (timeline, tokens, cdf) and the slowest requests left out to keep memory bounded; results.json and report.md count every request", path, fi.Size()>>20)}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, &result.InputError{Path: path, Err: err}
	}
	defer f.Close()
	return result.ReadRecords(path, f)
}
