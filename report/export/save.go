package export

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/servebench/servebench/bench/result"
)

// ErrUsage marks Save's and OnlyRun's errors that are bad usage or input
// (a destination it cannot write, several runs for one file, an unknown
// run); the others are failures while writing.
var ErrUsage = errors.New("bad export usage")

// usageError tags an error with ErrUsage and leaves its message as it is.
type usageError struct{ error }

func (e usageError) Unwrap() error      { return e.error }
func (usageError) Is(target error) bool { return target == ErrUsage }

func usage(err error) error { return usageError{err} }

// Dest says where Save writes, as `servebench export`'s flags do: at most
// one of Out and Append; Stdout when neither is given.
type Dest struct {
	// Out is a file, or (vllm-bench) a folder that gets one <run>.json per
	// run (see outIsDir); folders are created.
	Out string
	// Append is a file that (vllm-bench) gets one object per run, one per
	// line, as vLLM's --append-result adds them.
	Append string
	Stdout io.Writer
	// From is the results directory, named in errors.
	From string
}

// Save writes res in format to dest. Errors wrap ErrUsage where the input
// or destination is wrong; they name the option (result.FieldError: Out,
// Append).
func Save(format string, res *result.Results, recs []result.Record, opts Options, dest Dest) error {
	if format == "vllm-bench" && (dest.Out != "" || dest.Append != "") {
		return saveVLLM(res, recs, opts, dest)
	}
	var b bytes.Buffer
	if err := Write(&b, format, res, recs, opts); err != nil {
		return usage(err)
	}
	if dest.Out == "" {
		_, err := dest.Stdout.Write(b.Bytes())
		return err
	}
	return writeFile("Out", dest.Out, b.Bytes())
}

// OnlyRun is res with just the run named name.
func OnlyRun(res *result.Results, name string) (*result.Results, error) {
	var names []string
	for _, r := range res.Runs {
		if r.Name == name {
			one := *res
			one.Runs = []result.Run{r}
			return &one, nil
		}
		names = append(names, r.Name)
	}
	return nil, usage(result.OptionErrorf("Run", name, "no such run (the results hold %s)", strings.Join(names, ", ")))
}

// saveVLLM writes one vLLM result object per run to dest.Out or
// dest.Append (stdout goes through Write, one object per line): vLLM's
// files and its readers (e.g. .buildkite/performance-benchmarks/scripts/
// convert-results-json-to-markdown.py, which json.loads each file and
// updates it as a dict) hold one object per file, or one per line when
// appended.
func saveVLLM(res *result.Results, recs []result.Record, opts Options, dest Dest) error {
	runs, err := VLLMRuns(res, recs, opts)
	if err != nil {
		return usage(err)
	}
	switch {
	case dest.Append != "":
		return appendVLLM(dest.Append, runs)
	case outIsDir(dest.Out):
		return saveVLLMDir(dest.Out, runs)
	case len(runs) > 1:
		names := make([]string, len(runs))
		for i, r := range runs {
			names[i] = r.Name
		}
		return usage(result.OptionErrorf("Out", nil, "{Out} %s: %s holds %d runs (%s) and a vLLM result file holds one: give {Out} DIR for one <run>.json each, {Run} NAME for one of them, or {Append} FILE for one object per line",
			dest.Out, dest.From, len(runs), strings.Join(names, ", ")))
	default:
		// As vLLM's --save-result: the object, no newline after it.
		return writeFile("Out", dest.Out, runs[0].JSON)
	}
}

// saveVLLMDir writes each run to dir/<run>.json, refusing two runs whose
// names map to one file.
func saveVLLMDir(dir string, runs []VLLMRun) error {
	seen := map[string]string{}
	for _, r := range runs {
		name := fileSafe(r.Name) + ".json"
		if prev, ok := seen[name]; ok {
			return usage(result.OptionErrorf("Out", nil, "{Out} %s: runs %q and %q would both be written to %s: export them one at a time with {Run} NAME {Out} FILE", dir, prev, r.Name, name))
		}
		seen[name] = r.Name
		if err := writeFile("Out", filepath.Join(dir, name), r.JSON); err != nil {
			return err
		}
	}
	return nil
}

// outIsDir reports whether --out names a directory: an existing one, a
// path ending in a separator, or one without a .json/.jsonl extension
// that is not an existing file.
func outIsDir(p string) bool {
	if fi, err := os.Stat(p); err == nil {
		return fi.IsDir()
	}
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator)) {
		return true
	}
	ext := strings.ToLower(filepath.Ext(p))
	return ext != ".json" && ext != ".jsonl"
}

// fileSafe keeps a run name's letters, digits and . _ = + -, and turns
// anything else (a / of a path, a space) into _.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._=+-", r)) {
			return r
		}
		return '_'
	}, name)
}

// writeFile writes a file, creating its folder; errors name the option
// (field) that gave the path.
func writeFile(field, path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return usage(&result.FieldError{Field: field, Err: err})
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return usage(&result.FieldError{Field: field, Err: err})
	}
	return nil
}

// appendVLLM appends runs to path as vLLM's --append-result does,
// creating the file and its folder.
func appendVLLM(path string, runs []VLLMRun) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return usage(&result.FieldError{Field: "Append", Err: err})
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return usage(&result.FieldError{Field: "Append", Err: err})
	}
	var tail []byte
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		tail = make([]byte, 1)
		if _, err := f.ReadAt(tail, fi.Size()-1); err != nil {
			f.Close()
			return &result.FieldError{Field: "Append", Reason: "{Append} %s", Args: []any{path}, Err: err}
		}
	}
	if _, err := f.Write(Appended(tail, runs)); err != nil {
		f.Close()
		return &result.FieldError{Field: "Append", Reason: "{Append} %s", Args: []any{path}, Err: err}
	}
	return f.Close()
}
