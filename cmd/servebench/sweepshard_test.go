package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
)

// TestSweepShards: three shard processes (in-process here) of one
// open-loop sweep (two rate levels) against two engines behind a proxy run
// every level together: level 0 at --start-at, level 1 at level 0's planned
// span (the seeded schedule's last send) + --level-gap, each shard sending
// request i of each level when i mod 3 = K. The merge is checked level by
// level against the union of the records and the engines' counts, has the
// keys of a one-machine sweep of the same workload, and refuses a missing
// shard.
func TestSweepShards(t *testing.T) {
	f := startFleet(t, 2, 2)
	const n, requests, gap = 3, 12, 3 * time.Second
	rates := []float64{20, 40}
	sweepArgs := []string{"--base-url", f.proxy, "--rate", "20,40", "--arrival", "poisson", "--seed", "7",
		"--requests", fmt.Sprint(requests), "--stream", "on", "--max-tokens", "4", "--quiet",
		"--metrics-url", f.engines[0] + "/metrics", "--metrics-url", f.engines[1] + "/metrics"}
	before := f.engineCount(t)
	startAt := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	dirs, stderrs := runShards(t, n, func(k int, dir string) []string {
		return append([]string{"sweep", "--shard", fmt.Sprintf("%d/%d", k, n), "--start-at", startAt.UTC().Format(time.RFC3339),
			"--level-gap", gap.String(), "--out", dir}, sweepArgs...)
	})
	if t.Failed() {
		return
	}
	for k, stderr := range stderrs {
		if !strings.Contains(stderr, "--max-error-rate, default 10%) is off") {
			t.Errorf("shard %d: stderr %q: want the early stop turned off with a warning", k, stderr)
		}
	}
	// The levels' planned starts, from the whole schedule as one process
	// draws it: level 1 after level 0's last send and the gap.
	planned := []time.Time{startAt}
	offsets := make([][]time.Duration, len(rates))
	for L, rate := range rates {
		wl := workload.Workload{Mode: workload.ModeRate, Rate: rate, Arrival: workload.ArrivalPoisson, Requests: requests, Seed: 7}
		if err := wl.Validate(); err != nil {
			t.Fatal(err)
		}
		pacer := workload.NewPacer(wl)
		offsets[L] = make([]time.Duration, requests)
		for i := 1; i < requests; i++ {
			offsets[L][i] = offsets[L][i-1] + pacer.Next()
		}
		planned = append(planned, planned[L].Add(offsets[L][requests-1]+gap))
	}
	for k, dir := range dirs {
		res, recs := loadSaved(t, dir)
		if len(res.Runs) != len(rates) {
			t.Fatalf("shard %d ran %d levels, want %d", k, len(res.Runs), len(rates))
		}
		seen := map[string]map[int]int{}
		for L, run := range res.Runs {
			sh := run.Shard
			if sh == nil || sh.Index != k || sh.Count != n || sh.StartAt == nil || !sh.StartAt.Equal(planned[L]) ||
				sh.StartSkewS < 0 || sh.StartSkewS > 1 {
				t.Errorf("shard %d level %s: shard block %+v: want %d/%d starting at %v with a skew under 1 s", k, run.Name, sh, k, n, planned[L])
			}
			seen[run.Name] = map[int]int{}
			for _, r := range recs {
				if r.Run != run.Name || !r.Outcome() {
					continue
				}
				seen[run.Name][r.Index]++
				// The level's schedule runs from this shard's actual start.
				intended := r.Start.Add(-time.Duration(r.IntendedLagS * float64(time.Second)))
				start := planned[L].Add(time.Duration(sh.StartSkewS * float64(time.Second)))
				if r.Index%n != k || r.Error != "" {
					t.Errorf("shard %d level %s sent request %d (error %q): want only i mod %d = %d", k, run.Name, r.Index, r.Error, n, k)
				} else if d := intended.Sub(start) - offsets[L][r.Index]; d < -2*time.Millisecond || d > 2*time.Millisecond {
					t.Errorf("shard %d level %s: request %d intended at +%v, the schedule says +%v", k, run.Name, r.Index, intended.Sub(start), offsets[L][r.Index])
				}
			}
		}
		for _, run := range res.Runs {
			for i := k; i < requests; i += n {
				if seen[run.Name][i] != 1 {
					t.Errorf("shard %d level %s sent request %d %d times, want once", k, run.Name, i, seen[run.Name][i])
				}
			}
		}
	}
	if got := f.engineCount(t) - before; got != float64(len(rates)*requests) {
		t.Errorf("engines counted %g requests, want %d", got, len(rates)*requests)
	}

	out := filepath.Join(t.TempDir(), "merged")
	code, stdout, stderr := runMain(append(append([]string{"merge"}, dirs...), "--out", out)...)
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	res, recs := loadSaved(t, out)
	if len(res.Runs) != len(rates) || len(recs) != len(rates)*requests {
		t.Fatalf("merged %d levels, %d records: want %d levels of %d", len(res.Runs), len(recs), len(rates), requests)
	}
	for L, run := range res.Runs {
		var union []result.Record
		for _, d := range dirs {
			_, rs := loadSaved(t, d)
			union = append(union, slices.DeleteFunc(rs, func(r result.Record) bool { return r.Run != run.Name })...)
		}
		want := store.ClientSummary(union)
		if g, w := run.Client.E2ES, want.E2ES; run.Shard != nil || run.Requests != requests || run.OK != requests || g == nil ||
			g.N != w.N || g.Median != w.Median || g.P99 != w.P99 {
			t.Errorf("merged level %s: %d requests %d ok, shard %+v, E2E %+v: want the union's %+v, no shard block", run.Name, run.Requests, run.OK, run.Shard, g, w)
		}
		if rc := run.Engine.Reconciliation; rc == nil || rc.EngineCount != requests || rc.Sent != requests || rc.Foreign {
			t.Errorf("merged level %s reconciliation %+v: want the engines' %d over the level's merged window", run.Name, rc, requests)
		}
		if rs := run.Rate; rs == nil || rs.TargetPerS != rates[L] {
			t.Errorf("merged level %s rate %+v: want the level's whole %g req/s", run.Name, rs, rates[L])
		}
		if !strings.Contains(stderr, "start skew "+run.Name) {
			t.Errorf("merge's stderr %q: want level %s's start skew per shard", stderr, run.Name)
		}
	}

	// A one-machine sweep of the same workload has exactly the same keys.
	single := filepath.Join(t.TempDir(), "single")
	if code, stdout, stderr := runMain(append([]string{"sweep", "--out", single}, sweepArgs...)...); code != 0 {
		t.Fatalf("single sweep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if a, b := jsonKeys(t, filepath.Join(out, "results.json")), jsonKeys(t, filepath.Join(single, "results.json")); !slices.Equal(a, b) {
		t.Errorf("merged results.json keys differ from a one-machine sweep's:\nmerged: %q\nsingle: %q", a, b)
	}
	code, _, stderr = runMain(append(append([]string{"merge"}, dirs[0], dirs[2]), "--out", filepath.Join(t.TempDir(), "m"))...)
	if code != 2 || !strings.Contains(stderr, "shard 1/3 missing") {
		t.Errorf("merge without shard 1: exit %d, %q; want 2 naming shard 1/3", code, stderr)
	}
}

// TestSweepShardRefused: what a sharded sweep cannot plan or would decide
// from one shard's slice is refused before anything starts (exit 2, naming
// the flags).
func TestSweepShardRefused(t *testing.T) {
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "2,4", "--requests", "8", "--shard", "0/2", "--start-at", soon}, "needs --duration"},
		{[]string{"--concurrency", "2,4", "--shard", "0/2", "--start-at", soon}, "needs --duration"},
		{[]string{"--rate", "5", "--slo", "ttft=1s", "--find-max-rate", "90%", "--shard", "0/2", "--start-at", soon}, "--find-max-rate with --shard"},
		{[]string{"--rate", "5,10", "--max-error-rate", "5", "--shard", "0/2", "--start-at", soon}, "--max-error-rate"},
		{[]string{"--rate", "5,10", "--max-p99-e2e", "2s", "--shard", "0/2", "--start-at", soon}, "--max-p99-e2e"},
		{[]string{"--rate", "5,10", "--shard", "0/2"}, "expected --start-at"},
		{[]string{"--rate", "5,10", "--level-gap", "5s"}, "--level-gap without --shard"},
		{[]string{"--rate", "5,10", "--level-gap", "0s", "--shard", "0/2", "--start-at", soon}, "--level-gap 0s"},
		{[]string{"--concurrency", "1,4", "--duration", "5s", "--shard", "0/2", "--start-at", soon}, "at least 2"},
	} {
		code, _, stderr := runMain(append([]string{"sweep", "--base-url", "http://127.0.0.1:1", "--stream", "on"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}
