package compare

import (
	"errors"

	"github.com/servebench/servebench/bench/result"
)

// Sentinels for the conditions callers map to exit codes.
var (
	// ErrInput marks unusable input: a missing file, bad JSON, a schema
	// that is not result.Schema, no run in common (exit 2). It is
	// result.ErrInput, so a loading error matches it too.
	ErrInput = result.ErrInput
	// ErrMismatch marks runs whose workloads differ, refused without
	// Options.Force (exit 2).
	ErrMismatch = errors.New("workloads differ")
	// ErrInvalidRun marks a side that cannot be judged: the server failed
	// (no runs), every request failed, or too few samples (exit 3).
	ErrInvalidRun = errors.New("invalid run")
)

// InputError says which file (and line, when known) could not be used;
// it wraps ErrInput.
type InputError = result.InputError

// Side is one result set to compare: results.json and the lines of
// requests.jsonl. Compare only reads it.
type Side struct {
	Path     string // as given to Load, or a label chosen by the caller; shown in reports
	Results  *result.Results
	Records  []result.Record
	Warnings []string // e.g. a truncated last line of requests.jsonl that was skipped
	// Foreign names the tool that wrote the side when it is not servebench
	// (ForeignVLLM): its workload is checked only where both record it.
	Foreign string
}

// Load reads a result set from a results directory or from the path of its
// results.json with result.Load, or `vllm bench serve --save-result
// --save-detailed` results: a *.json file other than results.json, or a
// directory holding such files and no results.json. Errors wrap ErrInput
// and name the file and, for bad JSON, the line; a vLLM result without
// its per-request arrays also wraps export.ErrNotDetailed.
func Load(pathOrDir string) (*Side, error) {
	if files, ok := vllmFiles(pathOrDir); ok {
		return loadVLLM(pathOrDir, files)
	}
	res, recs, warns, err := result.Load(pathOrDir)
	if err != nil {
		return nil, err
	}
	return &Side{Path: pathOrDir, Results: res, Records: recs, Warnings: warns}, nil
}
