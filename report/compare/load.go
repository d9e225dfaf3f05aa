package compare

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/bench/result"
)

// Sentinels for the conditions callers map to exit codes.
var (
	// ErrInput marks unusable input: a missing file, bad JSON, a schema
	// that is not result.Schema, no run in common (exit 2).
	ErrInput = errors.New("unusable input")
	// ErrMismatch marks runs whose workloads differ, refused without
	// Options.Force (exit 2).
	ErrMismatch = errors.New("workloads differ")
	// ErrInvalidRun marks a side that cannot be judged: the server failed
	// (no runs), every request failed, or too few samples (exit 3).
	ErrInvalidRun = errors.New("invalid run")
)

// InputError says which file (and line, when known) could not be used.
type InputError struct {
	Path string
	Line int // 1-based; 0 when not about one line
	Err  error
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

// Unwrap lets errors.Is find both ErrInput and the cause.
func (e *InputError) Unwrap() []error { return []error{ErrInput, e.Err} }

// Side is one result set to compare: results.json and the lines of
// requests.jsonl. Compare only reads it.
type Side struct {
	Path     string // as given to Load, or a label chosen by the caller; shown in reports
	Results  *result.Results
	Records  []result.Record
	Warnings []string // e.g. a truncated last line of requests.jsonl that was skipped
}

// maxLine bounds one requests.jsonl line: a record keeps at most
// client.MaxEvents events of ~30 bytes each, so 16 MiB is ample.
const maxLine = 16 << 20

// Load reads a result set from a results directory or from the path of its
// results.json (requests.jsonl is read from the same directory). Errors
// wrap ErrInput and name the file and, for bad JSON, the line.
func Load(pathOrDir string) (*Side, error) {
	resPath := pathOrDir
	fi, err := os.Stat(pathOrDir)
	if err != nil {
		return nil, &InputError{Path: pathOrDir, Err: errors.New("no such results directory or results.json")}
	}
	if fi.IsDir() {
		resPath = filepath.Join(pathOrDir, result.ResultsFile)
	}
	res, err := loadResults(resPath)
	if err != nil {
		return nil, err
	}
	side := &Side{Path: pathOrDir, Results: res}
	reqPath := filepath.Join(filepath.Dir(resPath), result.RequestsFile)
	side.Records, side.Warnings, err = loadRecords(reqPath)
	if err != nil {
		return nil, err
	}
	return side, nil
}

func loadResults(path string) (*result.Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{Path: path, Err: readErr(err)}
	}
	var res result.Results
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, jsonErr(path, data, err)
	}
	if res.Schema != result.Schema {
		return nil, &InputError{Path: path, Err: fmt.Errorf("schema %q, want %q (not a servebench results file, or from an incompatible version)", res.Schema, result.Schema)}
	}
	return &res, nil
}

func readErr(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return errors.New("missing (a results directory holds results.json and requests.jsonl)")
	}
	return err
}

// jsonErr turns a decoding error into an InputError with the line number
// of its byte offset.
func jsonErr(path string, data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return &InputError{Path: path, Err: fmt.Errorf("bad JSON: %w", err)}
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return &InputError{Path: path, Line: line, Err: fmt.Errorf("bad JSON: %w", err)}
}

// loadRecords reads requests.jsonl. A final line without a newline that
// does not parse is what a killed writer leaves: it is skipped with a
// warning so nothing already measured is lost; any other bad line is an
// error naming it.
func loadRecords(path string) ([]result.Record, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, &InputError{Path: path, Err: readErr(err)}
	}
	defer f.Close()
	return readRecords(path, f)
}

func readRecords(path string, r io.Reader) ([]result.Record, []string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var recs []result.Record
	var warns []string
	for line := 1; ; line++ {
		b, err := readLine(br)
		if err != nil && err != io.EOF {
			return nil, nil, &InputError{Path: path, Line: line, Err: err}
		}
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		if t := bytes.TrimSpace(b); len(t) > 0 {
			var rec result.Record
			if jerr := json.Unmarshal(t, &rec); jerr != nil {
				if err == io.EOF && !complete {
					warns = append(warns, fmt.Sprintf("%s:%d: truncated last line skipped (writer stopped mid-line?)", path, line))
					break
				}
				return nil, nil, &InputError{Path: path, Line: line, Err: fmt.Errorf("bad JSON: %w", jerr)}
			}
			recs = append(recs, rec)
		}
		if err == io.EOF {
			break
		}
	}
	return recs, warns, nil
}

// readLine returns one line including its newline, refusing lines over
// maxLine so a corrupt file cannot exhaust memory.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, err
	}
}
