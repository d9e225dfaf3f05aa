package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// sessionConfig is the Config the command line args makes, as execute
// is given it (nothing runs).
func sessionConfig(t *testing.T, args ...string) *bench.Config {
	t.Helper()
	var got *bench.Config
	saved := execute
	defer func() { execute = saved }()
	execute = func(_ context.Context, cfg bench.Config) (*result.Results, []result.Record, error) {
		got = &cfg
		return nil, nil, errors.New("not run")
	}
	_, _, stderr := runMain(append(args, "--out", t.TempDir(), "--quiet")...)
	if got == nil {
		t.Fatalf("%q: the session was not started: %s", args, stderr)
	}
	return got
}

// TestSessionClockOnce: the clock the Config records is the one --clock
// and --speedup make, and every time the flags gave (a run's rate and
// duration, a sweep's levels and its p99 bound, the search's base, the
// interval) is put in that same clock: load derives it once and config
// applies it, so a run cannot record one clock and be paced by another.
func TestSessionClockOnce(t *testing.T) {
	const speedup = 20
	for _, tc := range []struct {
		args  []string
		clock string    // what the flags say: modelled at 20x or wall
		rates []float64 // the levels given, in the flags' time
	}{
		{[]string{"run", "--rate", "2", "--stream", "on"}, result.ClockModelled, []float64{2}},
		{[]string{"run", "--rate", "2", "--stream", "on", "--clock", "wall"}, result.ClockWall, []float64{2}},
		{[]string{"sweep", "--rate", "1,4", "--max-p99-e2e", "1s"}, result.ClockModelled, []float64{1, 4}},
		{[]string{"sweep", "--rate", "1,4", "--max-p99-e2e", "1s", "--clock", "wall"}, result.ClockWall, []float64{1, 4}},
		{[]string{"sweep", "--find-max-rate", "90%", "--slo", "ttft=1s", "--rate", "3"}, result.ClockModelled, nil},
	} {
		got := sessionConfig(t, append(slices.Clone(tc.args), "--speedup", "20", "--duration", "10s", "--interval", "4s")...)
		c := got.Clock
		if c.Name != tc.clock || c.Speedup != speedup {
			t.Errorf("%q: the Config's clock %s at %gx, want %s at %dx", tc.args, c.Name, c.Speedup, tc.clock, speedup)
		}
		factor := 1.0
		if tc.clock == result.ClockModelled {
			factor = speedup
		}
		wallDur := time.Duration(float64(10*time.Second) / factor)
		if want := time.Duration(float64(4*time.Second) / factor); got.Interval != want {
			t.Errorf("%q: interval %v, want %v", tc.args, got.Interval, want)
		}
		if s := got.Search; s != nil {
			if s.Clock != c || s.Base.Workload.Duration != wallDur || s.Start != 3 {
				t.Errorf("%q: search clock %+v, base duration %v, start %g; want the Config's clock, %v, 3 (in the flags' time)",
					tc.args, s.Clock, s.Base.Workload.Duration, s.Start, wallDur)
			}
			continue
		}
		if len(got.Runs) != len(tc.rates) {
			t.Fatalf("%q: %d runs, want %d", tc.args, len(got.Runs), len(tc.rates))
		}
		for i, r := range got.Runs {
			if w := r.Workload; w.Rate != tc.rates[i]*factor || w.Duration != wallDur {
				t.Errorf("%q: run %s at %g req/s for %v, want %g for %v", tc.args, r.Name, w.Rate, w.Duration, tc.rates[i]*factor, wallDur)
			}
		}
		if tc.args[0] != "sweep" {
			continue
		}
		// A level whose wall-clock p99 E2E is 0.1 s is 2 s modelled: past the
		// 1 s bound in the modelled clock, within it in the wall clock's.
		stop := got.StopAfter(&result.Run{Client: result.ClientStats{E2ES: &stats.Summary{P99: 0.1}}})
		if (stop != "") != (tc.clock == result.ClockModelled) {
			t.Errorf("%q: the early stop on a 0.1 s wall p99 says %q", tc.args, stop)
		}
	}
}

// TestSessionExactLength: --exact-length as the runs and the search take
// it, derived once by load: on by default, off by default for structured
// output (its answer is as long as its JSON), on again when given.
func TestSessionExactLength(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"run", "--stream", "on"}, true},
		{[]string{"run", "--stream", "on", "--exact-length=false"}, false},
		{[]string{"run", "--stream", "on", "--response-format", "json"}, false},
		{[]string{"run", "--stream", "on", "--response-format", "json", "--exact-length"}, true},
		{[]string{"table", "--response-format", "json"}, false},
		{[]string{"sweep", "--find-max-rate", "90%", "--slo", "ttft=1s", "--response-format", "json", "--exact-length"}, true},
	} {
		got := sessionConfig(t, append(slices.Clone(tc.args), "--base-url", "http://127.0.0.1:9")...)
		reqs := []bench.RequestSpec{}
		for _, r := range got.Runs {
			reqs = append(reqs, r.Request)
		}
		if got.Search != nil {
			reqs = append(reqs, got.Search.Base.Request)
		}
		for _, r := range reqs {
			if r.ExactLength != tc.want || (r.Structured != nil) != slices.Contains(tc.args, "--response-format") {
				t.Errorf("%q: exact length %v, structured %v; want %v", tc.args, r.ExactLength, r.Structured != nil, tc.want)
			}
		}
		if len(reqs) == 0 {
			t.Errorf("%q: no runs", tc.args)
		}
	}
}

// TestSweepPlanSetsNothing: planning a sweep, its levels or its
// --find-max-rate search, checks the flags and hands back the plan: the
// options stay as the flags set them.
func TestSweepPlanSetsNothing(t *testing.T) {
	for _, args := range [][]string{
		{"--rate", "1,2", "--speedup", "20"},
		{"--find-max-rate", "90%", "--slo", "ttft=1s", "--rate", "2", "--speedup", "20"},
	} {
		cmd, o := sweepCommand()
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		before := *o
		p, err := o.plan(cmd.Flags(), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if !reflect.DeepEqual(*o, before) {
			t.Errorf("%q: plan changed the options:\n got %+v\nwant %+v", args, *o, before)
		}
		if (p.search != nil) == (p.sweep != nil) {
			t.Errorf("%q: plan has search %v and levels %v: want one of them", args, p.search, p.sweep)
		}
	}
}

// TestSessionCheckServerFiles: check judges the server flags alone; the
// directory, binary and GGUF file they name are looked at by load, which
// refuses each one missing.
func TestSessionCheckServerFiles(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server-dir", missing}, "working directory"},
		{[]string{"--server", "ollama", "--server-bin", missing, "--gguf", missing}, "not found"},
		{[]string{"--server", "ollama", "--server-bin", "/bin/true", "--gguf", missing}, missing},
	} {
		o := &sessionOptions{}
		cmd := runCmdFor(o)
		if err := cmd.Flags().Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := o.check(cmd.Flags()); err != nil {
			t.Errorf("%q: check looked at a file: %v", tc.args, err)
		}
		if err := o.load(cmd.Flags()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: load: %v, want %q", tc.args, err, tc.want)
		}
	}
}
