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
	// Repeats are the side's runs of one workload when it has several
	// (DIR/repeat-K of --repeats, or several directories a side: Group):
	// the run-level test compares them. Results and Records are then the
	// first repeat's, for the header and the workload check.
	Repeats []*Side
}

// repeats is the side as a list of repeats: itself when it has none.
func (s *Side) repeats() []*Side {
	if len(s.Repeats) > 0 {
		return s.Repeats
	}
	return []*Side{s}
}

// Group makes one side of several result sets of the same build (e.g.
// compare A1 A2 A3 -- B1 B2 B3): each set, or each repeat of a set made by
// --repeats, is one run-level observation. label names the side in reports.
func Group(label string, sides []*Side) *Side {
	if len(sides) == 1 {
		return sides[0]
	}
	var reps []*Side
	for _, s := range sides {
		reps = append(reps, s.repeats()...)
	}
	g := *reps[0]
	g.Path, g.Repeats = label, reps
	return &g
}

// Load reads a result set from a results directory or from the path of its
// results.json with result.Load, or `vllm bench serve --save-result
// --save-detailed` results: a *.json file other than results.json, or a
// directory holding such files and no results.json. Errors wrap ErrInput
// and name the file and, for bad JSON, the line; a vLLM result without
// its per-request arrays also wraps export.ErrNotDetailed.
func Load(pathOrDir string) (*Side, error) {
	if dirs := result.RepeatDirs(pathOrDir); len(dirs) > 0 {
		return loadRepeats(pathOrDir, dirs)
	}
	if files, ok := vllmFiles(pathOrDir); ok {
		return loadVLLM(pathOrDir, files)
	}
	res, recs, warns, err := result.Load(pathOrDir)
	if err != nil {
		return nil, err
	}
	return &Side{Path: pathOrDir, Results: res, Records: recs, Warnings: warns}, nil
}

// loadRepeats loads the repeat directories of --repeats as one side.
func loadRepeats(dir string, dirs []string) (*Side, error) {
	reps := make([]*Side, len(dirs))
	for i, d := range dirs {
		s, err := Load(d)
		if err != nil {
			return nil, err
		}
		reps[i] = s
	}
	g := *reps[0]
	g.Path, g.Repeats = dir, reps
	return &g, nil
}
