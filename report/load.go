package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/bench/result"
)

// LoadError is a malformed results file; Line is 1-based (0 when the error is
// about the file as a whole).
type LoadError struct {
	File string
	Line int
	Err  error
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// LoadDir reads a results directory as a run left it: results.json and
// requests.jsonl. Errors name the file and, for malformed JSON, the line.
func LoadDir(dir string) (*result.Results, []result.Record, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("results directory: %w", err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("results directory %s: not a directory", dir)
	}
	resPath := filepath.Join(dir, result.ResultsFile)
	data, err := os.ReadFile(resPath)
	if err != nil {
		return nil, nil, fmt.Errorf("reading results: %w", err)
	}
	res, err := parseResults(data)
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.File = resPath
		}
		return nil, nil, err
	}
	recPath := filepath.Join(dir, result.RequestsFile)
	f, err := os.Open(recPath)
	if errors.Is(err, fs.ErrNotExist) && len(res.Runs) == 0 {
		return res, nil, nil // `servebench startup --out DIR`: no requests were sent
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading records: %w", err)
	}
	defer f.Close()
	recs, err := ParseRecords(f)
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.File = recPath
		}
		return nil, nil, err
	}
	return res, recs, nil
}

// parseResults decodes results.json and checks its schema.
func parseResults(data []byte) (*result.Results, error) {
	var res result.Results
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, &LoadError{File: result.ResultsFile, Line: jsonErrLine(data, err), Err: err}
	}
	if res.Schema != result.Schema {
		return nil, &LoadError{File: result.ResultsFile,
			Err: fmt.Errorf("schema %q: expected %q", res.Schema, result.Schema)}
	}
	return &res, nil
}

// jsonErrLine finds the line of a JSON syntax or type error in data.
func jsonErrLine(data []byte, err error) int {
	var off int64
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		return 0
	}
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// ParseRecords reads requests.jsonl: one result.Record per line; blank
// lines are skipped. A malformed line is an error naming its line number.
func ParseRecords(r io.Reader) ([]result.Record, error) {
	br := bufio.NewReader(r)
	var recs []result.Record
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var rec result.Record
			if jerr := json.Unmarshal(b, &rec); jerr != nil {
				return nil, &LoadError{File: result.RequestsFile, Line: line, Err: jerr}
			}
			if rec.Run == "" {
				return nil, &LoadError{File: result.RequestsFile, Line: line,
					Err: errors.New(`record has no "run": expected the name of the run it belongs to`)}
			}
			recs = append(recs, rec)
		}
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, &LoadError{File: result.RequestsFile, Line: line, Err: err}
		}
	}
}
