package compare

import (
	"reflect"
	"slices"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestWorkloadFieldsCompared: every field of result.Workload is either
// compared (changing it alone is reported, under its JSON key) or named
// in workloadExcluded (changing it is not); a field added to the type is
// compared unless excluded, and fails here, named, when its kind cannot be
// compared as printed. Two equal workloads held in distinct memory differ
// in nothing (no pointer is compared by address).
func TestWorkloadFieldsCompared(t *testing.T) {
	typ := reflect.TypeFor[result.Workload]()
	keys := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		k := jsonKey(f)
		keys[k] = true
		base, nw := filledRun(t, 1), filledRun(t, 1)
		if !fill(reflect.ValueOf(&nw.Workload).Elem().Field(i), 2) {
			t.Errorf("result.Workload.%s (%s): a %s is not compared as printed: show it in workloadShown or exclude it in workloadExcluded", f.Name, k, f.Type)
			continue
		}
		nw.Stream = nw.Workload.Stream
		d := workloadDiffs(base, nw)
		if why := workloadExcluded[k]; why != "" {
			if len(d) != 0 {
				t.Errorf("result.Workload.%s (%s) is excluded (%s) but changing it gives %v", f.Name, k, why, d)
			}
			continue
		}
		if len(d) != 1 || d[0].Field != k {
			t.Errorf("result.Workload.%s: changing it alone gives %v, want one difference named %s (or exclude it in workloadExcluded, saying why)", f.Name, d, k)
		}
	}
	for _, m := range []map[string]bool{setOf(workloadExcluded), setOf(workloadShown), workloadIfBoth} {
		for k := range m {
			if !keys[k] {
				t.Errorf("%s names no field of result.Workload", k)
			}
		}
	}
	if d := workloadDiffs(filledRun(t, 1), filledRun(t, 1)); len(d) != 0 {
		t.Errorf("equal workloads differ: %v", d)
	}
}

// wantCompared are the workload fields compare holds against each other,
// in the order it lists differences: a field added to result.Workload is
// compared unless excluded, and TestWorkloadComparedList makes that a
// decision (a baseline from before the field has it empty, so a run that
// sets it would be refused).
var wantCompared = []string{"mode", "concurrency", "rate", "arrival", "burstiness", "stream", "endpoint", "model",
	"max_tokens", "exact_length", "prompt_kind", "prompt_tokens", "prompt_file", "source", "source_sha256",
	"input_tokens", "output_tokens", "turns", "think_time_s", "shared_prefix_tokens", "prefix_groups",
	"prefix_pick", "trace", "seed", "response_format", "tools_file", "tool_choice", "lora", "tool_rounds"}

// TestWorkloadComparedList: the fields compared are wantCompared; one
// that is new or gone is named.
func TestWorkloadComparedList(t *testing.T) {
	var got []string
	for _, f := range workloadFields() {
		got = append(got, f.key)
	}
	for _, k := range got {
		if !slices.Contains(wantCompared, k) {
			t.Errorf("workload field %s is compared now: add it to wantCompared, or to workloadExcluded saying why", k)
		}
	}
	for _, k := range wantCompared {
		if !slices.Contains(got, k) {
			t.Errorf("workload field %s is no longer compared (excluded or gone)", k)
		}
	}
	if !t.Failed() && !slices.Equal(got, wantCompared) {
		t.Errorf("compared in the order %q, want %q", got, wantCompared)
	}
}

// TestWorkloadIfBoth: source_sha256 is compared only when both runs
// recorded one.
func TestWorkloadIfBoth(t *testing.T) {
	base, nw := filledRun(t, 1), filledRun(t, 1)
	base.Workload.SourceSHA256 = ""
	if d := workloadDiffs(base, nw); len(d) != 0 {
		t.Errorf("a base without source_sha256: %v, want no difference", d)
	}
}

func setOf[V any](m map[string]V) map[string]bool {
	s := map[string]bool{}
	for k := range m {
		s[k] = true
	}
	return s
}

// filledRun is a run whose workload has every field set from variant v
// (fill), the run's stream flag as its workload's.
func filledRun(t *testing.T, v int) *result.Run {
	t.Helper()
	r := &result.Run{}
	w := reflect.ValueOf(&r.Workload).Elem()
	for i := range w.NumField() {
		fill(w.Field(i), v)
	}
	r.Stream = r.Workload.Stream
	return r
}

// fill sets v to a value that depends on variant (1 or 2), allocating
// what it points to; false for kinds it cannot fill.
func fill(v reflect.Value, variant int) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString(string(rune('a' + variant)))
	case reflect.Bool:
		v.SetBool(variant == 2)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(variant))
	case reflect.Float64:
		v.SetFloat(float64(variant) + 0.5)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		return fill(v.Index(0), variant)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return fill(v.Elem(), variant)
	case reflect.Struct:
		for i := range v.NumField() {
			if !fill(v.Field(i), variant) {
				return false
			}
		}
	default:
		return false
	}
	return true
}
