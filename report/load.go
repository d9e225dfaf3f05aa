package report

import (
	"fmt"
	"os"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// LoadDir reads a results directory as a run left it: results.json, and
// the records of requests.jsonl as the run that wrote it had them for its
// report. A run that kept its records in memory had them all (result.Load;
// the Sample is nil). A bounded run (--interval: its runs have windows) or
// one rebuilt after a crash (incomplete), and a merge, kept none: they come from
// ChartRecords, a Sample past MaxChartBytes, so that memory stays bounded
// however long the run and report.md is what the run wrote. `servebench
// report` writes report.md and the charts back into it, so it must be a
// directory. Errors wrap result.ErrInput and name the file and, for
// malformed JSON, the line; warnings name what was skipped (a truncated
// last line).
func LoadDir(dir string) (*result.Results, []result.Record, *Sample, []string, error) {
	return loadDir(dir, MaxChartBytes)
}

func loadDir(dir string, maxBytes int64) (*result.Results, []result.Record, *Sample, []string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, nil, nil, &result.InputError{Path: dir, Err: fmt.Errorf("results directory: %w", err)}
	}
	if !st.IsDir() {
		return nil, nil, nil, nil, &result.InputError{Path: dir, Err: fmt.Errorf("not a directory: expected a results directory holding %s and %s", result.ResultsFile, result.RequestsFile)}
	}
	res, _, err := result.LoadResults(dir)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if !KeptNoRecords(res) {
		res, recs, warns, err := result.Load(dir)
		return res, recs, nil, warns, err
	}
	recs, s, warns, err := ChartRecords(dir, res, maxBytes)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return res, recs, s, warns, nil
}

// KeptNoRecords reports whether res comes from runs that kept no record in
// memory (--interval, whose runs have windows), from a rebuild after a
// crash, or from `servebench merge` (which streams the shards' records and
// says so only in its command line): their reports read requests.jsonl
// back through ChartRecords.
func KeptNoRecords(res *result.Results) bool {
	if res.Incomplete || isMerge(res.Manifest.CommandLine) {
		return true
	}
	for i := range res.Runs {
		if len(res.Runs[i].Windows) > 0 {
			return true
		}
	}
	return false
}

// isMerge reports whether a command line ran `servebench merge`: its first
// argument that is not a flag is merge.
func isMerge(commandLine []string) bool {
	for _, a := range commandLine[min(1, len(commandLine)):] {
		if !strings.HasPrefix(a, "-") {
			return a == "merge"
		}
	}
	return false
}

// MaxChartBytes bounds the records ChartRecords keeps after a
// bounded-memory run: about 7,000 requests of 128 streamed tokens (2.4 KB
// a line, about as much in memory), so reading them back costs tens of MB
// at most.
const MaxChartBytes = 16 << 20

// ChartRecords reads dir's requests.jsonl (of res's runs) back for the
// per-request charts and report.md's sections drawn from records (slowest
// requests, turns) after a run that kept no records in memory (--interval,
// a merge, a rebuild after a crash). A file of at most maxBytes comes whole
// (s nil). A larger one is streamed once, one record at a time, keeping
// about maxBytes of it (s says what; WriteSampled draws from it): per run a
// seeded uniform sample of the measured records, the same each time, and
// exactly the slowest requests, the request nearest each run's median E2E
// and the count of each kind of line; notes say so. Warnings name a
// skipped truncated last line.
func ChartRecords(dir string, res *result.Results, maxBytes int64) (recs []result.Record, s *Sample, notes []string, err error) {
	f, fi, path, err := openRecords(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	if fi.Size() <= maxBytes {
		recs, notes, err := result.ReadRecords(path, f)
		return recs, nil, notes, err
	}
	recs, s, notes, err = sampleRecords(path, f, fi.Size(), maxBytes, res)
	if err != nil {
		return nil, nil, nil, err
	}
	msg := fmt.Sprintf("%s is %d MiB: per-request charts (tokens, cdf, turns) drawn from a uniform sample of its requests to keep memory bounded; "+
		"the slowest requests and each run's median request are exact, and results.json and report.md count every request", path, fi.Size()>>20)
	return recs, s, append(notes, msg), nil
}
