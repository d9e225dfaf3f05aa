package result

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
)

// ErrInput marks unusable saved results: a missing file, bad JSON, a
// schema that is not Schema. Commands map it to exit code 2.
var ErrInput = errors.New("unusable input")

// InputError says which file (and line, when known) could not be used.
// errors.Is finds both ErrInput and the cause.
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

// MaxLine bounds one requests.jsonl line so a corrupt file cannot exhaust
// memory: a record keeps at most client.MaxEvents events of ~30 bytes
// each, so 16 MiB is ample.
const MaxLine = 16 << 20

// Load reads a saved result set from a results directory or from the path
// of its results.json; requests.jsonl is read from the same directory. A
// set without runs (`servebench startup --out DIR`) needs no
// requests.jsonl. warnings name what was skipped, e.g. a truncated last
// line. Errors are *InputError (wrapping ErrInput) naming the file and,
// for bad JSON, the line.
func Load(pathOrDir string) (res *Results, recs []Record, warnings []string, err error) {
	res, resPath, err := LoadResults(pathOrDir)
	if err != nil {
		return nil, nil, nil, err
	}
	reqPath := filepath.Join(filepath.Dir(resPath), RequestsFile)
	f, err := os.Open(reqPath)
	if errors.Is(err, fs.ErrNotExist) && len(res.Runs) == 0 {
		return res, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, &InputError{Path: reqPath, Err: readErr(err)}
	}
	defer f.Close()
	if recs, warnings, err = ReadRecords(reqPath, f); err != nil {
		return nil, nil, nil, err
	}
	return res, recs, warnings, nil
}

// LoadResults reads results.json alone, from a results directory or its
// path, by Load's rules, and returns it with the path it read: what a
// reader needs that leaves the records on disk (a soak's requests.jsonl may
// be far larger than memory).
func LoadResults(pathOrDir string) (res *Results, resPath string, err error) {
	fi, err := os.Stat(pathOrDir)
	if err != nil {
		return nil, "", &InputError{Path: pathOrDir, Err: errors.New("no such results directory or results.json")}
	}
	resPath = pathOrDir
	if fi.IsDir() {
		resPath = filepath.Join(pathOrDir, ResultsFile)
	}
	data, err := os.ReadFile(resPath)
	if err != nil {
		return nil, "", &InputError{Path: resPath, Err: readErr(err)}
	}
	if res, err = ParseResults(resPath, data); err != nil {
		return nil, "", err
	}
	return res, resPath, nil
}

func readErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("missing (a results directory holds results.json and requests.jsonl)")
	}
	return err
}

// ParseResults decodes results.json (name is used in errors) and checks
// its schema.
func ParseResults(name string, data []byte) (*Results, error) {
	var res Results
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, &InputError{Path: name, Line: jsonErrLine(data, err), Err: fmt.Errorf("bad JSON: %w", err)}
	}
	if res.Schema != Schema {
		return nil, &InputError{Path: name, Err: fmt.Errorf("schema %q: expected %q (not a servebench results file, or from an incompatible version)", res.Schema, Schema)}
	}
	return &res, nil
}

// jsonErrLine finds the line of a JSON syntax or type error in data; 0
// when the error carries no offset.
func jsonErrLine(data []byte, err error) int {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return 0
	}
	off = min(off, int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// ReadRecords reads requests.jsonl from r (name is used in errors and
// warnings) with a RecordReader: one Record per line, blank lines skipped
// but counted. A final line without a newline that does not parse is what a
// killed writer leaves: it is skipped with a warning so nothing already
// measured is lost. Any other bad line, a record without "run", or a line
// over MaxLine is an *InputError naming the line; no records come back with
// an error.
func ReadRecords(name string, r io.Reader) ([]Record, []string, error) {
	var recs []Record
	warns, err := ScanRecords(name, r, func(rec *Record) error {
		recs = append(recs, *rec)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return recs, warns, nil
}

// ScanRecords calls fn with each record of r by ReadRecords' rules, one at a
// time (rec is fresh each call), so a reader of a file of any size holds one
// record: it stops at the first error, fn's or an *InputError naming the
// line, and returns the warnings (a truncated last line skipped).
func ScanRecords(name string, r io.Reader, fn func(rec *Record) error) ([]string, error) {
	rr := NewRecordReader(name, r)
	for {
		var rec Record
		if _, err := rr.Next(&rec); err == io.EOF {
			return rr.Warnings, nil
		} else if err != nil {
			return nil, err
		}
		if err := fn(&rec); err != nil {
			return nil, err
		}
	}
}

// RecordReader reads requests.jsonl one record at a time, by ReadRecords'
// rules, so a reader of a large file holds one line at a time.
type RecordReader struct {
	name     string
	br       *bufio.Reader
	line     int
	eof      bool
	Warnings []string // skipped truncated last line
	// SkipEvents leaves Record.Events nil without decoding them: they are
	// most of a line and of its decoding. A reader that needs some
	// records' events decodes their lines (Next returns them) again.
	SkipEvents bool
}

// recordSkipEvents decodes a Record but its events (RecordReader.SkipEvents):
// its own Events, shallower, takes the key from the embedded Record's.
type recordSkipEvents struct {
	*Record
	Events skipJSON `json:"events,omitempty"`
}

// skipJSON takes any JSON value and keeps nothing of it.
type skipJSON struct{}

func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// NewRecordReader reads records from r; name is used in errors and warnings.
func NewRecordReader(name string, r io.Reader) *RecordReader {
	return &RecordReader{name: name, br: bufio.NewReaderSize(r, 64<<10)}
}

// Next decodes the next record into rec (which should be zero) and returns
// its line as read, newline included (a fresh slice the caller may keep);
// io.EOF after the last record, or an *InputError naming the line.
func (rr *RecordReader) Next(rec *Record) ([]byte, error) {
	for !rr.eof {
		rr.line++
		b, err := readLine(rr.br)
		if err != nil && err != io.EOF {
			return nil, &InputError{Path: rr.name, Line: rr.line, Err: err}
		}
		rr.eof = err == io.EOF
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		t := bytes.TrimSpace(b)
		if len(t) == 0 {
			continue
		}
		var into any = rec
		if rr.SkipEvents {
			into = &recordSkipEvents{Record: rec}
		}
		if jerr := json.Unmarshal(t, into); jerr != nil {
			if rr.eof && !complete {
				rr.Warnings = append(rr.Warnings, fmt.Sprintf("%s:%d: truncated last line skipped (writer stopped mid-line?)", rr.name, rr.line))
				break
			}
			return nil, &InputError{Path: rr.name, Line: rr.line, Err: fmt.Errorf("bad JSON: %w", jerr)}
		}
		if rec.Run == "" {
			return nil, &InputError{Path: rr.name, Line: rr.line,
				Err: errors.New(`record has no "run": expected the name of the run it belongs to`)}
		}
		return b, nil
	}
	return nil, io.EOF
}

// Line is the line number of the record Next returned last.
func (rr *RecordReader) Line() int { return rr.line }

// readLine returns one line including its newline, refusing lines over
// MaxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, err
	}
}
