package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/tune"
	"github.com/servebench/servebench/engine/launch/launchtest"
	"github.com/servebench/servebench/report"
)

// tuneArgs is a small tune on the bundled engine: two treatments, two
// repeats, one level, a few seconds in all.
func tuneArgs(dir string, extra ...string) []string {
	return append([]string{"tune", "--speedup", "50", "--engine-arg=--startup-speedup=1000", "--engine-grid", "max-num-seqs=2,8",
		"--concurrency", "8", "--requests", "16", "--warmup", "2", "--max-tokens", "16", "--repeats", "2", "--out", dir, "--quiet",
		"--slo", "ttft.p99=30s,tpot=1s"}, extra...)
}

// readTune reads dir's tune.json as --resume does; nil while there is none.
func readTune(t *testing.T, dir string) *result.Tune {
	t.Helper()
	tu, err := tune.ReadTune(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("%v (written by atomic rename: never half a file)", err)
	}
	return tu
}

// TestTuneResumeAfterKill: a tune killed with SIGKILL in its second unit
// is finished by --resume: the finished unit is not run again (its
// results.json untouched), the interrupted one is run from scratch, and
// the answer, report.md, report.html and pareto.png are written.
func TestTuneResumeAfterKill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tune")
	cmd := exec.Command(launchtest.Servebench(t), tuneArgs(dir)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var first result.TuneUnit
	for deadline := time.Now().Add(time.Minute); ; {
		if tu := readTune(t, dir); tu != nil && tu.Units[0].Done {
			first = tu.Units[0]
			// Kill once the second unit's server is up: mid-unit.
			if _, err := os.Stat(filepath.Join(dir, tu.Units[1].Dir, result.ServerLog)); err == nil {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("tune exited before the kill; stderr:\n%s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no unit done after a minute; stderr:\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	firstResults := filepath.Join(dir, first.Dir, result.ResultsFile)
	before, err := os.Stat(firstResults)
	if err != nil {
		t.Fatal(err)
	}
	killed := readTune(t, dir)
	if !killed.Incomplete || killed.Answer != nil {
		t.Fatalf("killed tune: incomplete=%v answer=%v", killed.Incomplete, killed.Answer)
	}

	args := tuneArgs(dir)
	for i, a := range args { // --resume DIR replaces --out DIR
		if a == "--out" {
			args[i] = "--resume"
		}
	}
	code, out, errOut := runMain(args...)
	if code != 0 {
		t.Fatalf("--resume: exit %d\n%s\n%s", code, out, errOut)
	}
	after, err := os.Stat(firstResults)
	if err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the unit finished before the kill was run again (results.json %v -> %v, %v)", before.ModTime(), after.ModTime(), err)
	}
	tu := readTune(t, dir)
	if tu.Incomplete || tu.Answer == nil || len(tu.Treatments) != 2 {
		t.Fatalf("resumed tune: incomplete=%v answer=%+v", tu.Incomplete, tu.Answer)
	}
	for _, u := range tu.Units {
		if !u.Done || u.Error != "" {
			t.Errorf("unit %+v not finished cleanly", u)
		}
		if _, err := os.Stat(filepath.Join(dir, u.Dir, result.ResultsFile)); err != nil {
			t.Error(err)
		}
	}
	for _, tr := range tu.Treatments {
		if tr.Repeats != 2 || len(tr.Levels) != 1 || len(tr.Levels[0].Figures) == 0 || len(tr.Startup) == 0 {
			t.Errorf("treatment %s: repeats %d, levels %+v, startup %+v", tr.Name, tr.Repeats, tr.Levels, tr.Startup)
		}
	}
	// The percentile key reaches every run's goodput (judged on the run).
	res, _ := loadSaved(t, filepath.Join(dir, tu.Units[0].Dir))
	if g := res.Runs[0].Goodput; g == nil || len(g.Percentiles) != 1 || g.Percentiles[0].Key != "ttft.p99" || !strings.HasPrefix(tu.SLO, "ttft.p99=") {
		t.Errorf("goodput %+v, tune SLO %q: want ttft.p99 judged on the run", g, tu.SLO)
	}
	if !strings.Contains(out, "recommended: max-num-seqs=") || !strings.Contains(out, "Clock: modelled") {
		t.Errorf("stdout lacks the recommendation or the clock:\n%s", out)
	}
	for _, f := range []string{report.FilePareto, result.ReportFile, report.FileHTML} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, report.FileHTML))
	if !bytes.Contains(html, []byte("Which configuration")) || !bytes.Contains(html, []byte("data:image/png")) {
		t.Error("report.html lacks the tune section or the inlined frontier")
	}
	if code, _, errOut := runMain(tuneArgs(dir)...); code != 2 || !strings.Contains(errOut, "--resume") {
		t.Errorf("a second tune into the same --out: exit %d, %q; want 2 pointing at --resume", code, errOut)
	}
}

// TestOllamaTune: tune on a real engine, the grid in the server's
// environment: each treatment's Ollama logs the OLLAMA_NUM_PARALLEL it was
// given (the tiny model on 2 loaded cores is too fast and too noisy for its
// TPOT to tell 1 slot from 4 reliably in 8 requests: logged, not judged).
func TestOllamaTune(t *testing.T) {
	model := ollamaModel(t)
	dir := filepath.Join(t.TempDir(), "tune")
	code, out, errOut := runMain("tune", "--server", "ollama", "--gguf", model, "--env-grid", "OLLAMA_NUM_PARALLEL=1,4",
		"--concurrency", "4", "--requests", "8", "--warmup", "1", "--max-tokens", "32", "--repeats", "2", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("tune on Ollama:\n%s", out)
	tu := readTune(t, dir)
	if tu == nil || tu.Incomplete || len(tu.Treatments) != 2 || tu.Answer == nil {
		t.Fatalf("tune.json: %+v", tu)
	}
	for _, u := range tu.Units {
		if !u.Done || u.Error != "" {
			t.Errorf("unit %+v", u)
		}
		log, _ := os.ReadFile(filepath.Join(dir, u.Dir, result.ServerLog))
		want := "OLLAMA_NUM_PARALLEL:" + tu.Treatments[u.Treatment].Settings[0].Value
		if !strings.Contains(string(log), want) {
			t.Errorf("%s: server.log lacks %q: the environment did not reach the server", u.Dir, want)
		}
	}
	tpot := func(i int) float64 {
		iv := tu.Treatments[i].Levels[0].Figure(result.FigTPOTMedian)
		if iv == nil || iv.N != 2 {
			t.Fatalf("treatment %s: TPOT median %+v", tu.Treatments[i].Name, iv)
		}
		return iv.Mean
	}
	t.Logf("TPOT median with one slot %.6f s, with four %.6f s", tpot(0), tpot(1))
}

// TestTuneFlagsRefused: the grid's checks run before anything starts
// (exit 2), with the server the flags name.
func TestTuneFlagsRefused(t *testing.T) {
	ok := []string{"tune", "--server-cmd", "vllm serve m --max-num-seqs {seqs} --port 8000", "--grid", "seqs=64,256", "--concurrency", "8"}
	if code, errOut := validateCommand(ok); code != 0 {
		t.Fatalf("a filled placeholder: exit %d: %s", code, errOut)
	}
	// The server a --server-cmd starts states its speed-up (or is refused) once started.
	if code, errOut := validateCommand(append(ok, "--clock", "modelled")); code != 0 {
		t.Fatalf("--server-cmd --clock modelled: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--server-cmd", "vllm serve m --port 8000", "--grid", "seqs=64,256", "--concurrency", "8"}, "no {seqs} placeholder"},
		{[]string{"tune", "--server-cmd", "vllm serve m --max-num-seqs {seqs}", "--concurrency", "8"}, "no settings to compare"},
		{[]string{"tune", "--server-cmd", "vllm serve m {seqs}", "--engine-grid", "max-num-seqs=1,2", "--grid", "seqs=1", "--concurrency", "8"}, "only for the bundled engine"},
		{[]string{"tune", "--engine-grid", "max-num-seqs=1,2"}, "expected the load"},
		{[]string{"tune", "--server", "vllm", "--env-grid", "VLLM_X=1,2", "--concurrency", "8", "--clock", "modelled"}, "--clock modelled: only for the bundled engine"},
		{[]string{"tune", "--server-cmd", "vllm serve m --seed {seed}", "--grid", "seed=1", "--concurrency", "8"}, "--grid seed: {seed} is reserved"},
		{[]string{"tune", "--engine-grid", "max-num-seqs", "--concurrency", "8"}, "--engine-grid"},
		{[]string{"tune", "--engine-grid", "max-num-seqs=1,2", "--concurrency", "8", "--repeats", "0"}, "--repeats 0"},
		{[]string{"tune", "--engine-grid", "max-num-seqs=1,2", "--slo", "ttft.p0=1s", "--find-max-rate", "90%"}, "a percentile in (0, 100]"},
	} {
		if code, errOut := validateCommand(tc.args); code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, %q; want %d naming %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}

// tuneServerCmd runs a tune whose --server-cmd starts the bundled engine
// (sped up by its own flags; tail is the rest of its command) on the port
// --base-url names, over --grid mns=1,4, two repeats, tiny runs; it returns
// the command as given, the tune's directory and tune.json, stdout and stderr.
func tuneServerCmd(t *testing.T, tail string, extra ...string) (serverCmd, dir string, tu *result.Tune, out, errOut string) {
	t.Helper()
	bin := launchtest.Servebench(t)
	port := freePort(t)
	dir = filepath.Join(t.TempDir(), "tune")
	serverCmd = fmt.Sprintf("%s engine --port %d --speedup 50 --startup-speedup 1000 --max-num-seqs {mns}%s", bin, port, tail)
	args := append([]string{"tune", "--server-cmd", serverCmd, "--base-url", fmt.Sprintf("http://127.0.0.1:%d", port),
		"--grid", "mns=1,4", "--concurrency", "4", "--requests", "8", "--warmup", "1", "--max-tokens", "8",
		"--repeats", "2", "--out", dir, "--quiet"}, extra...)
	code, out, errOut := runMain(args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	tu = readTune(t, dir)
	if tu == nil || tu.Incomplete || tu.Answer == nil || len(tu.Treatments) != 2 || len(tu.Units) != 4 {
		t.Fatalf("tune.json: %+v", tu)
	}
	for _, u := range tu.Units {
		if !u.Done || u.Error != "" {
			t.Fatalf("unit %+v not finished cleanly", u)
		}
	}
	return serverCmd, dir, tu, out, errOut
}

// TestTuneServerCmdGrid: a --grid fills --server-cmd's {mns} placeholder,
// run end to end. The command starts the bundled engine itself on the port
// --base-url names (a --server-cmd server listens where its command says;
// servebench only probes --base-url), so each unit's results.json records
// the filled command, each treatment has its own start-up phases and KV
// capacity, and the report names both treatments. The command has no
// {seed}: every repeat's engine draws from the same seed, which tune says
// once on stderr (also under --quiet) and in tune.json.
func TestTuneServerCmdGrid(t *testing.T) {
	serverCmd, dir, tu, out, errOut := tuneServerCmd(t, "")
	seeds := map[int64]bool{}
	for _, u := range tu.Units {
		tr := tu.Treatments[u.Treatment]
		res, _ := loadSaved(t, filepath.Join(dir, u.Dir))
		want := strings.ReplaceAll(serverCmd, "{mns}", tr.Settings[0].Value)
		if res.Server.Command != want {
			t.Errorf("%s (%s): server.command %q, want %q", u.Dir, tr.Name, res.Server.Command, want)
		}
		if st := res.Server.Startup; st == nil || st.HealthOKS == nil || st.KVCacheTokens == nil {
			t.Errorf("%s: server.startup %+v: want the start-up phases and KV capacity", u.Dir, st)
		}
		// The inputs were wall-clock (no --speedup), but the clock keeps the
		// speed-up the engine states, for the caption and --clock modelled.
		if c := res.Clock; c == nil || c.Name != result.ClockWall || c.Speedup != 50 {
			t.Errorf("%s: clock %+v: want wall with the engine's speed-up 50", u.Dir, c)
		}
		if bd := res.Server.Bundled; bd != nil {
			seeds[bd.Seed] = true
		}
	}
	if len(seeds) != 1 {
		t.Errorf("engine seeds %v: want the one the command gives, on every repeat", seeds)
	}
	const same = "starts the bundled engine without {seed}: every repeat runs the same engine seed"
	if n := strings.Count(errOut, same); n != 1 || !slices.ContainsFunc(tu.Warnings, func(w string) bool { return strings.Contains(w, same) }) {
		t.Errorf("stderr says %d times %q (want once), tune.json warnings %q:\n%s", n, same, tu.Warnings, errOut)
	}
	for i, want := range []string{"mns=1", "mns=4"} {
		tr := tu.Treatments[i]
		if tr.Name != want || tr.Repeats != 2 || len(tr.Levels) != 1 || len(tr.Levels[0].Figures) == 0 {
			t.Errorf("treatment %d: %s, repeats %d, levels %+v; want %s twice at one level", i, tr.Name, tr.Repeats, tr.Levels, want)
		}
		keys := map[string]int{}
		for _, f := range tr.Startup {
			keys[f.Key] = f.N
		}
		if keys["health_ok_s"] != 2 || keys["kv_cache_tokens"] != 2 {
			t.Errorf("treatment %s: startup %+v: want health_ok_s and kv_cache_tokens from both repeats", tr.Name, tr.Startup)
		}
		if !strings.Contains(out, want+" ") {
			t.Errorf("stdout lacks treatment %s:\n%s", want, out)
		}
		md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks treatment %s", want)
		}
	}
	if !strings.Contains(out, "recommended: mns=") || !strings.Contains(out, "Clock: wall, this machine's (the bundled engine ran 50x faster)") {
		t.Errorf("stdout lacks the recommendation or the clock:\n%s", out)
	}
}

// TestTuneServerCmdSeed: with {seed} in --server-cmd each unit's engine
// is started with its repeat's seed (--seed 3: 3001 and 3002), recorded in
// server.command and taken by the engine (its /version, server.bundled.seed),
// and tune does not warn. Under --clock modelled every figure is in the
// emulated hardware's time, from the speed-ups the engine states (50, and
// 1000 for its start-up): each repeat's E2E median in tune.json is its
// results' wall-clock one x 50, its health_ok_s x 1000, and the table, the
// report and pareto.png say which clock.
func TestTuneServerCmdSeed(t *testing.T) {
	serverCmd, dir, tu, out, errOut := tuneServerCmd(t, " --seed {seed}", "--seed", "3", "--clock", "modelled")
	if tu.Clock != result.ClockModelled || tu.Speedup != 50 {
		t.Errorf("tune.json clock %q x%g, want modelled x50", tu.Clock, tu.Speedup)
	}
	wallE2E, wallHealth := make([][]float64, 2), make([][]float64, 2) // treatment -> repeat -> wall seconds
	for _, u := range tu.Units {
		tr := tu.Treatments[u.Treatment]
		res, _ := loadSaved(t, filepath.Join(dir, u.Dir))
		seed := int64(3000 + u.Repeat)
		want := strings.NewReplacer("{mns}", tr.Settings[0].Value, "{seed}", fmt.Sprint(seed)).Replace(serverCmd)
		if res.Server.Command != want {
			t.Errorf("%s: server.command %q, want %q", u.Dir, res.Server.Command, want)
		}
		if bd := res.Server.Bundled; bd == nil || bd.Seed != seed {
			t.Errorf("%s: server.bundled %+v: want the engine's seed %d", u.Dir, bd, seed)
		}
		if c := res.Clock; c == nil || c.Name != result.ClockModelled || c.Speedup != 50 || c.StartupSpeedup != 1000 {
			t.Errorf("%s: clock %+v: want modelled at the engine's speed-ups 50 and 1000", u.Dir, c)
		}
		if len(res.Runs) != 1 || res.Runs[0].Client.E2ES == nil || res.Server.Startup == nil || res.Server.Startup.HealthOKS == nil {
			t.Fatalf("%s: want one run with E2E and the start-up's health_ok_s", u.Dir)
		}
		for len(wallE2E[u.Treatment]) < u.Repeat {
			wallE2E[u.Treatment], wallHealth[u.Treatment] = append(wallE2E[u.Treatment], 0), append(wallHealth[u.Treatment], 0)
		}
		wallE2E[u.Treatment][u.Repeat-1] = res.Runs[0].Client.E2ES.Median
		wallHealth[u.Treatment][u.Repeat-1] = *res.Server.Startup.HealthOKS
	}
	near := func(got []float64, wall []float64, k float64) bool {
		if len(got) != len(wall) {
			return false
		}
		for i := range got {
			if math.Abs(got[i]-wall[i]*k) > 1e-9*wall[i]*k {
				return false
			}
		}
		return true
	}
	for i, tr := range tu.Treatments {
		e2e := tr.Levels[0].Figure(result.FigE2EMedian)
		if e2e == nil || !near(e2e.Values, wallE2E[i], 50) {
			t.Errorf("%s: E2E median %+v, want the repeats' wall-clock %v x 50", tr.Name, e2e, wallE2E[i])
		}
		var health *result.Interval
		for j := range tr.Startup {
			if tr.Startup[j].Key == "health_ok_s" {
				health = &tr.Startup[j].Interval
			}
		}
		if health == nil || !near(health.Values, wallHealth[i], 1000) {
			t.Errorf("%s: health_ok_s %+v, want the repeats' wall-clock %v x 1000", tr.Name, health, wallHealth[i])
		}
	}
	if strings.Contains(errOut, "{seed}") || len(tu.Warnings) != 0 {
		t.Errorf("a warning with {seed} given: %q\n%s", tu.Warnings, errOut)
	}
	const caption = "Clock: modelled, the emulated hardware's time (the bundled engine ran 50x faster)"
	md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
	if !strings.Contains(out, caption) || !bytes.Contains(md, []byte(caption)) {
		t.Errorf("stdout or report.md lacks %q:\n%s", caption, out)
	}
	if st, err := os.Stat(filepath.Join(dir, "pareto.png")); err != nil || st.Size() == 0 {
		t.Errorf("pareto.png: %v", err)
	}
}
