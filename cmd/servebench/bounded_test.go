package main

import (
	"context"
	"errors"
	"testing"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
)

// TestRunBoundedWithoutInterval: every run keeps its memory bounded (no
// record in memory, samples spilled), with or without --interval; only the
// hidden --records-in-memory keeps the records, for the benchmark that
// compares the two.
func TestRunBoundedWithoutInterval(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		bounded bool
	}{
		{nil, true},
		{[]string{"--interval", "10s"}, true},
		{[]string{"--records-in-memory"}, false},
	} {
		var got *bench.Config
		saved := execute
		execute = func(_ context.Context, cfg bench.Config) (*result.Results, []result.Record, error) {
			got = &cfg
			return nil, nil, errors.New("not run")
		}
		args := append([]string{"run", "--base-url", "http://127.0.0.1:9", "--requests", "10", "--stream", "on",
			"--out", t.TempDir(), "--quiet"}, tc.args...)
		runMain(args...)
		execute = saved
		if got == nil {
			t.Fatalf("%q: the session was not started", tc.args)
		}
		if got.Bounded != tc.bounded {
			t.Errorf("%q: Bounded %v, want %v", tc.args, got.Bounded, tc.bounded)
		}
	}
}
