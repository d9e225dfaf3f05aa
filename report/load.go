package report

import (
	"fmt"
	"os"

	"github.com/servebench/servebench/bench/result"
)

// LoadDir reads a results directory as a run left it (results.json and
// requests.jsonl) with result.Load; `servebench report` writes report.md
// and the charts back into it, so it must be a directory. Errors wrap
// result.ErrInput and name the file and, for malformed JSON, the line;
// warnings name what was skipped (a truncated last line).
func LoadDir(dir string) (*result.Results, []result.Record, []string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, nil, &result.InputError{Path: dir, Err: fmt.Errorf("results directory: %w", err)}
	}
	if !st.IsDir() {
		return nil, nil, nil, &result.InputError{Path: dir, Err: fmt.Errorf("not a directory: expected a results directory holding %s and %s", result.ResultsFile, result.RequestsFile)}
	}
	return result.Load(dir)
}
