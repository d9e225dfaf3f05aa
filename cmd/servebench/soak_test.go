package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/launch/launchtest"
)

// assertNoSampleFiles fails when dir names a per-request sample file.
func assertNoSampleFiles(t *testing.T, dir, when string) {
	t.Helper()
	if files, _ := filepath.Glob(filepath.Join(dir, ".servebench-samples-*")); len(files) != 0 {
		t.Errorf("%s: sample files in the results directory: %v", when, files)
	}
}

// openSampleFiles counts the sample files process pid holds open in dir
// with no name there (Linux's /proc; 0 elsewhere): opened without a name
// (O_TMPFILE, which /proc shows as "dir/#inode (deleted)") or unlinked
// after creating.
func openSampleFiles(pid int, dir string) int {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil || !strings.HasSuffix(target, " (deleted)") || filepath.Dir(target) != dir {
			continue
		}
		if base := filepath.Base(target); strings.HasPrefix(base, ".servebench-samples-") || strings.HasPrefix(base, "#") {
			n++
		}
	}
	return n
}

// TestKillThenReport: servebench killed with SIGKILL mid-run leaves
// checkpoint.json and requests.jsonl; `report DIR` rebuilds results.json
// (marked incomplete) whose counts are the complete lines of
// requests.jsonl, a truncated last line skipped with a warning; compare
// refuses the directory unless --allow-incomplete. The per-request sample
// files are unlinked as soon as created: open in the process (Linux) but
// named nowhere in the directory, before the kill or after it.
func TestKillThenReport(t *testing.T) {
	dir := t.TempDir()
	killWhen(t, dir, func(cp *result.Results) bool { return len(lastRun(cp).Windows) >= 2 }, func(pid int) {
		if n := openSampleFiles(pid, dir); runtime.GOOS == "linux" && n < 16 {
			t.Errorf("%d unlinked sample files open in the running process, want the run's and the open window's (16 or more)", n)
		}
		assertNoSampleFiles(t, dir, "mid-run")
	}, "run", "--speedup", "1000", "--duration", "120s", "--interval", "500ms",
		"--concurrency", "4", "--max-tokens", "32", "--stream", "on", "--out", dir, "--quiet")
	assertNoSampleFiles(t, dir, "after kill -9")
	// What a writer killed mid-line leaves.
	reqs := filepath.Join(dir, result.RequestsFile)
	f, err := os.OpenFile(reqs, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"run":"streaming","index":99999,"stream":tr`)
	f.Close()
	want := completeOutcomes(t, reqs)

	code, _, errOut := runMain("report", dir)
	if code != 0 {
		t.Fatalf("report exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "truncated last line") || !strings.Contains(errOut, "rebuilding") {
		t.Errorf("report's warnings = %q, want the truncated line and the rebuild named", errOut)
	}
	res, recs := loadSaved(t, dir)
	if !res.Incomplete || len(res.Runs) != 1 || !res.Runs[0].Incomplete {
		t.Fatalf("results not marked incomplete: incomplete=%v runs=%d", res.Incomplete, len(res.Runs))
	}
	run := res.Runs[0]
	if run.Requests != want || want == 0 || len(recs) < want {
		t.Errorf("rebuilt run counts %d requests, requests.jsonl has %d complete outcome lines", run.Requests, want)
	}
	sum := 0
	for _, w := range run.Windows {
		sum += w.Requests
	}
	if sum != run.Requests || len(run.Windows) < 2 {
		t.Errorf("%d windows count %d requests, the run %d", len(run.Windows), sum, run.Requests)
	}
	if run.Client.E2ES == nil || run.Client.E2ES.N != run.OK || run.Engine.TTFTS == nil {
		t.Errorf("rebuilt figures: client e2e %+v, engine ttft %+v", run.Client.E2ES, run.Engine.TTFTS)
	}
	md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
	if !bytes.Contains(md, []byte("Incomplete run")) || !bytes.Contains(md, []byte("## Over time")) {
		t.Errorf("report.md lacks the incomplete note or the windows section")
	}
	for _, png := range []string{"timeseries.png", "cdf.png"} {
		if _, err := os.Stat(filepath.Join(dir, png)); err != nil {
			t.Error(err)
		}
	}

	code, _, errOut = runMain("compare", dir, dir)
	if code != 2 || !strings.Contains(errOut, dir) || !strings.Contains(errOut, "incomplete") {
		t.Errorf("compare of an incomplete side: exit %d, %q; want 2 naming it", code, errOut)
	}
	if code, _, errOut = runMain("compare", "--allow-incomplete", dir, dir); code == 2 {
		t.Errorf("compare --allow-incomplete: exit 2: %s", errOut)
	}
}

// killWhen runs servebench with args (its results in dir), reads dir's
// checkpoint.json every 10 ms until done returns true for it (within 60
// s), calls midRun (if not nil) with the running process' id, then kills
// it with SIGKILL: no chance to write results.json.
func killWhen(t testing.TB, dir string, done func(cp *result.Results) bool, midRun func(pid int), args ...string) {
	t.Helper()
	killWithin(t, time.Minute, dir, done, midRun, args...)
}

// killWithin is killWhen waiting at most within.
func killWithin(t testing.TB, within time.Duration, dir string, done func(cp *result.Results) bool, midRun func(pid int), args ...string) {
	t.Helper()
	cmd := exec.Command(launchtest.Servebench(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	cp := filepath.Join(dir, result.CheckpointFile)
	deadline := time.Now().Add(within)
	for {
		if res := readCheckpoint(t, cp); res != nil && done(res) {
			break
		}
		select {
		case <-exited: // e.g. the run was over before the awaited boundary
			t.Fatalf("servebench exited before its checkpoint was as awaited; stderr:\n%s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("checkpoint not as awaited after %s; stderr:\n%s", within, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if midRun != nil {
		midRun(cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if _, err := os.Stat(filepath.Join(dir, result.ResultsFile)); err == nil {
		t.Fatal("results.json written by a killed run")
	}
}

// readCheckpoint reads checkpoint.json; nil while there is none (an
// atomic rename: never half a file).
func readCheckpoint(t testing.TB, path string) *result.Results {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var res result.Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("checkpoint.json unreadable (not written atomically?): %v", err)
	}
	return &res
}

// lastRun is the run in progress in a checkpoint (an empty one if none).
func lastRun(cp *result.Results) *result.Run {
	if len(cp.Runs) == 0 {
		return &result.Run{}
	}
	return &cp.Runs[len(cp.Runs)-1]
}

// completeOutcomes counts the complete lines of requests.jsonl that are a
// request's outcome (not warm-up, not a retried attempt).
func completeOutcomes(t *testing.T, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data[:bytes.LastIndexByte(data, '\n')+1]))
	sc.Buffer(nil, result.MaxLine)
	for sc.Scan() {
		var r result.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Outcome() {
			n++
		}
	}
	return n
}

// writeWindowed saves a results directory with one streaming run of three
// windows of n requests each; the last window's latencies are slow times
// the first's (1: no drift).
func writeWindowed(t *testing.T, n int, slow float64) string {
	t.Helper()
	dir := t.TempDir()
	run := result.Run{Name: "streaming", Stream: true, Errors: map[string]int{}, DurationS: 30,
		Workload: result.Workload{Mode: "concurrent", Concurrency: 4, DurationS: 30, Stream: true, Endpoint: "chat", Model: "m", MaxTokens: 32, PromptKind: "fixed"}}
	var lines bytes.Buffer
	for w := 1; w <= 3; w++ {
		scale := 1.0
		if w == 3 {
			scale = slow
		}
		win := result.Window{Index: w, StartS: float64(w-1) * 10, EndS: float64(w) * 10, Requests: n, OK: n, Errors: map[string]int{}}
		for i := range n {
			f := scale * (1 + 0.01*float64(i))
			rec := result.Record{Run: "streaming", Index: (w-1)*n + i, Stream: true, OutputTokens: 32, Window: w,
				TTFBS: 0.01 * f, FirstTokenS: 0.02 * f, FirstVisibleS: 0.02 * f, E2ES: 0.5 * f}
			b, _ := json.Marshal(rec)
			lines.Write(append(b, '\n'))
		}
		run.Windows = append(run.Windows, win)
		run.Requests += n
		run.OK += n
	}
	res := result.Results{Schema: result.Schema, Runs: []result.Run{run},
		Manifest: result.Manifest{Version: "test", CommandLine: []string{"servebench", "run"}}, Server: result.Server{Model: "m"}}
	b, _ := json.Marshal(res)
	for name, data := range map[string][]byte{result.ResultsFile: b, result.RequestsFile: lines.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCompareDrift: --drift compares a run's last window with its first:
// a slowdown injected into the last window is a regression (exit 1), the
// same figures are not (exit 0); a run without windows is bad input.
func TestCompareDrift(t *testing.T) {
	code, out, errOut := runMain("compare", "--drift", writeWindowed(t, 30, 1.5))
	if code != exitRegression || !strings.Contains(out, "e2e") || !strings.Contains(out, "last window") {
		t.Errorf("drift with a slower last window: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = runMain("compare", "--drift", writeWindowed(t, 30, 1)); code != 0 {
		t.Errorf("no drift: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut = runMain("compare", "--drift", writeSide(t, 20, 0, 1, 32)); code != 2 || !strings.Contains(errOut, "--interval") {
		t.Errorf("drift of a run without windows: exit %d, %q", code, errOut)
	}
	if code, _, _ = runMain("compare", "--drift", "a", "b"); code != 2 {
		t.Errorf("--drift with two directories: exit %d, want 2", code)
	}
}
