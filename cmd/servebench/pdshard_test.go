package main

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/pd"
	"github.com/servebench/servebench/engine/pd/pdtest"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// startPDRouter runs one P/D deployment (engine/pd: one prefill and one
// decode bundled engine behind the router) on loopback for t and returns
// the router's base URL and the instances' /metrics URLs.
func startPDRouter(t *testing.T) (string, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts bundled engines")
	}
	o := sim.DefaultOptions()
	o.Speedup, o.StartupSpeedup, o.Log = simtest.DefaultSpeedup, 1000, io.Discard
	base, inst := pdtest.Start(t, pd.Options{Engine: o, Prefill: 1, Decode: 1})
	var urls []string
	for _, in := range inst {
		urls = append(urls, in.URL+"/metrics")
	}
	return base, urls
}

// checkPDEngine checks that a run of sent requests against a 1+1 P/D
// deployment reconciled as one: the engines' count is twice what was sent
// (a prefill and a decode instance finish each request), no foreign
// traffic, the engine figures kept, each instance a replica with every
// request, and results.json saying so (server.engine_passes).
func checkPDEngine(t *testing.T, what string, res *result.Results, sent int) {
	t.Helper()
	run := res.Runs[0]
	rc := run.Engine.Reconciliation
	if rc == nil || rc.EngineCount != float64(2*sent) || rc.Foreign || rc.EngineAbsent || !strings.Contains(rc.Note, "P/D deployment") {
		t.Errorf("%s: reconciliation %+v: want the engines' %d finished requests as 2 passes of %d, no foreign traffic", what, rc, 2*sent, sent)
	}
	if slices.ContainsFunc(run.Warnings, func(w string) bool {
		return strings.Contains(w, "foreign") || strings.Contains(w, "engine figures absent")
	}) {
		t.Errorf("%s: warnings %q: want none about foreign traffic or absent engine figures", what, run.Warnings)
	}
	if run.Engine.TTFTS == nil || run.Engine.TTFTS.Count != float64(2*sent) {
		t.Errorf("%s: engine TTFT %+v: want the figures over both pools' %d requests", what, run.Engine.TTFTS, 2*sent)
	}
	if reps := run.Engine.Replicas; len(reps) != 2 || reps[0].Requests == nil || *reps[0].Requests != float64(sent) ||
		reps[1].Requests == nil || *reps[1].Requests != float64(sent) {
		t.Errorf("%s: replicas %+v: want the prefill and the decode instance, %d requests each", what, reps, sent)
	}
	if res.Server.EnginePasses != 2 {
		t.Errorf("%s: server.engine_passes %d, want 2", what, res.Server.EnginePasses)
	}
}

// TestShardsPD: shards of one run against one P/D deployment, merged,
// reconcile as a run against it does. Each request passes a prefill and a
// decode instance, so the engines count it twice: a single run expects
// that (--server pd), and so must merge, which has only the shards' files;
// it read the count as foreign traffic. The shards reach the deployment by
// --base-url, the instances given as --metrics-url; a single run by
// --base-url alone finds them (the router's /metrics is a 404).
func TestShardsPD(t *testing.T) {
	base, inst := startPDRouter(t)
	const n, requests = 2, 8
	startAt := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	dirs, _ := runShards(t, n, func(k int, dir string) []string {
		return []string{"run", "--base-url", base, "--metrics-url", inst[0], "--metrics-url", inst[1],
			"--requests", fmt.Sprint(requests), "--concurrency", "2", "--stream", "on", "--max-tokens", "4", "--quiet",
			"--shard", fmt.Sprintf("%d/%d", k, n), "--start-at", startAt.UTC().Format(time.RFC3339), "--out", dir}
	})
	if t.Failed() {
		return
	}
	for k, dir := range dirs {
		res, _ := loadSaved(t, dir)
		if rc := res.Runs[0].Engine.Reconciliation; rc == nil || rc.Foreign || rc.EngineAbsent || res.Runs[0].Engine.TTFTS == nil {
			t.Errorf("shard %d: reconciliation %+v: want the engine figures, no foreign traffic", k, rc)
		}
	}
	out := mergeShards(t, dirs)
	res, _ := loadSaved(t, out)
	if res.Runs[0].OK != requests {
		t.Fatalf("merged run: %d ok, want %d", res.Runs[0].OK, requests)
	}
	checkPDEngine(t, "merged", res, requests)

	single := filepath.Join(t.TempDir(), "single")
	code, stdout, stderr := runMain("run", "--base-url", base, "--requests", "4", "--concurrency", "2", "--stream", "on",
		"--max-tokens", "4", "--quiet", "--out", single)
	if code != 0 {
		t.Fatalf("single run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	res, _ = loadSaved(t, single)
	checkPDEngine(t, "single run by --base-url", res, 4)
}

// TestShardsOwnServers: shards that each started their own server (here
// each its own `--server pd`, on one fixed port so merge takes them for one
// server, as pods of a job would be) merge without engine figures, saying
// why: a delta from one server's snapshot to another's describes neither.
// Before, the one deployment's before-snapshot and the other's after made a
// count that matched what was sent, with no warning (and with
// server.engine_passes half of it: a "counter reset").
func TestShardsOwnServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts bundled engines")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	const n, requests = 2, 8
	var dirs []string
	for k := range n { // one after the other: the port is one
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d", k))
		code, stdout, stderr := runMain("run", "--server", "pd", "--prefill", "1", "--decode", "1", "--speedup", "100",
			fmt.Sprintf("--engine-arg=--port=%d", port), "--engine-arg=--startup-speedup=1000",
			"--requests", fmt.Sprint(requests), "--concurrency", "2", "--stream", "on", "--max-tokens", "4", "--quiet",
			"--shard", fmt.Sprintf("%d/%d", k, n), "--out", dir)
		if code != 0 {
			t.Fatalf("shard %d: exit %d\n%s\n%s", k, code, stdout, stderr)
		}
		dirs = append(dirs, dir)
	}
	out := mergeShards(t, dirs)
	res, _ := loadSaved(t, out)
	run := res.Runs[0]
	rc := run.Engine.Reconciliation
	if run.OK != requests || rc == nil || !rc.EngineAbsent || !strings.Contains(rc.Note, "each shard started its own server") || run.Engine.TTFTS != nil {
		t.Errorf("merged: %d ok, reconciliation %+v, engine TTFT %+v: want %d ok and the engine figures left out, saying why",
			run.OK, rc, run.Engine.TTFTS, requests)
	}
	if slices.ContainsFunc(run.Warnings, func(w string) bool { return strings.Contains(w, "reset") || strings.Contains(w, "foreign") }) {
		t.Errorf("merged: warnings %q: want the reason, not a counter reset or foreign traffic", run.Warnings)
	}
}
