package compare

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/servebench/servebench/bench/result"
)

// workloadExcluded are the fields of result.Workload (by JSON key) that
// two runs may differ in, each with why. Every other field is compared,
// in the struct's order: a field added to result.Workload is compared
// unless it is added here, and TestWorkloadComparedList names it until it
// is listed there or here.
var workloadExcluded = map[string]string{
	"accept_encoding": "a harness setting, shown once for the whole results as client.accept_encoding (serverDiffs)",
	"requests":        "sizes may differ: the test copes with unequal sizes",
	"duration_s":      "sizes may differ: the test copes with unequal sizes",
	"warmup":          "sizes may differ: the test copes with unequal sizes",
	"source_file":     "a path differs from machine to machine; the file is told apart by source_sha256",
	"skipped_entries": "follows from the dataset file, told apart by source_sha256",
	"source_entries":  "follows from the dataset file, told apart by source_sha256",
	// Lengths per request come from the dataset or trace, both compared.
	"output_tokens_from":  "follows from source and trace",
	"output_tokens_range": "follows from source, trace and max_tokens",
	"arrivals":            "what each record keeps (--arrivals), not the traffic sent",
	// --direct-url pairs: where the same requests went, not what they were.
	"path":        "where the requests went (--direct-url), told apart by run name",
	"paired_with": "names the other side's run (--direct-url)",
	"direct_url":  "an address, which differs from machine to machine",
}

// workloadShown are the compared fields not compared as fmt.Sprint prints
// the Workload's field: the value each run shows for it instead.
var workloadShown = map[string]func(*result.Run) string{
	// The run's own flag (results older than workload.stream have it).
	"stream": func(r *result.Run) string { return fmt.Sprint(r.Stream) },
	// By base name, so a baseline made on another machine still matches.
	"prompt_file": func(r *result.Run) string { return baseName(r.Workload.PromptFile) },
	"tools_file":  func(r *result.Run) string { return baseName(r.Workload.ToolsFile) },
	"trace":       func(r *result.Run) string { return traceString(r.Workload.Trace) },
}

// workloadIfBoth are compared fields compared only when both runs have a
// value: results from before issue 11 have no source_sha256.
var workloadIfBoth = map[string]bool{"source_sha256": true}

// workloadField is one compared field of result.Workload.
type workloadField struct {
	key   string // JSON key, the Diff's Field
	index int    // in result.Workload
}

// workloadFields are the compared fields, in the struct's order.
var workloadFields = sync.OnceValue(func() []workloadField {
	var fs []workloadField
	t := reflect.TypeFor[result.Workload]()
	for i := range t.NumField() {
		if k := jsonKey(t.Field(i)); workloadExcluded[k] == "" {
			fs = append(fs, workloadField{key: k, index: i})
		}
	}
	return fs
})

// jsonKey is f's name in JSON.
func jsonKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if k == "" {
		return f.Name
	}
	return k
}

// show is r's value of f as compared.
func (f workloadField) show(r *result.Run) string {
	if s := workloadShown[f.key]; s != nil {
		return s(r)
	}
	return fmt.Sprint(reflect.ValueOf(&r.Workload).Elem().Field(f.index).Interface())
}

// workloadDiffs lists what differs between two runs' workloads: every
// field of result.Workload but those workloadExcluded names.
func workloadDiffs(b, n *result.Run) []Diff {
	var d []Diff
	for _, f := range workloadFields() {
		x, y := f.show(b), f.show(n)
		if x != y && (!workloadIfBoth[f.key] || x != "" && y != "") {
			d = append(d, Diff{Field: f.key, Base: x, New: y})
		}
	}
	return d
}

// traceString is how a trace was replayed, for the workload check (its
// file is told apart by source_sha256).
func traceString(t *result.TraceWorkload) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%s speed %g window %g+%g s", t.Format, t.Speed, t.WindowStartS, t.WindowDurationS)
}

func baseName(p string) string {
	if p == "" {
		return ""
	}
	return filepath.Base(p)
}
