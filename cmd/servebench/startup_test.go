package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/engine/launch/launchtest"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestStartupServerCmdRepeatJSON: --server-cmd with --base-url, two cold
// starts, JSON list plus summary on stdout and in results.json.
func TestStartupServerCmdRepeatJSON(t *testing.T) {
	bin := launchtest.Servebench(t)
	port := freePort(t)
	dir := t.TempDir()
	code, out, errOut := runMain("startup", "--server-cmd", fmt.Sprintf("%s engine --port %d --speedup 50", bin, port),
		"--base-url", fmt.Sprintf("http://127.0.0.1:%d", port), "--repeat", "2", "--format", "json",
		"--poll-interval", "50ms", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var got struct {
		Runs    []result.Startup          `json:"runs"`
		Summary map[string]*stats.Summary `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not the JSON list: %v\n%s", err, out)
	}
	if len(got.Runs) != 2 || got.Summary["health_ok_s"] == nil || got.Summary["health_ok_s"].N != 2 {
		t.Fatalf("runs %d, summary %+v", len(got.Runs), got.Summary)
	}
	for i, r := range got.Runs {
		if r.HealthOKS == nil || r.FirstTokenS == nil || *r.FirstTokenS < *r.HealthOKS || r.KVCacheTokens == nil ||
			r.PollIntervalS == nil || *r.PollIntervalS != 0.05 {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	// Progress went to stderr, one line per phase per run.
	if n := strings.Count(errOut, "health OK"); n != 2 {
		t.Errorf("stderr has %d 'health OK' progress lines, want 2:\n%s", n, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, result.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		result.Results
		StartupRepeats *struct {
			Runs []result.Startup `json:"runs"`
		} `json:"startup_repeats"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	st := res.Server.Startup
	if res.Schema != result.Schema || st == nil || st.HealthOKS == nil || res.StartupRepeats == nil || len(res.StartupRepeats.Runs) != 2 {
		t.Fatalf("results.json: %s", b)
	}
	if med := got.Summary["health_ok_s"].Median; *st.HealthOKS != med {
		t.Errorf("server.startup.health_ok_s = %v, want the median %v", *st.HealthOKS, med)
	}
	for _, name := range []string{"server.log", "server-2.log"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestStartupBundledDefault runs the binary itself: the default server is
// the bundled engine, started from os.Executable.
func TestStartupBundledDefault(t *testing.T) {
	bin := launchtest.Servebench(t)
	cmd := exec.Command(bin, "startup", "--speedup", "50")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"spawned", "weights loaded", "port open", "health OK", "model listed", "first token",
		"weights load (log)", "KV cache", "tokens", "max concurrency", "4,096", "resolution of 0.100 s"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestStartupServerFails(t *testing.T) {
	bin := launchtest.Servebench(t)
	cases := []struct {
		name  string
		args  []string
		wants []string
	}{
		{"exits at once", []string{"--server-cmd", "sh -c 'echo boom >&2; exit 5'"},
			[]string{"server exited", "exit status 5", "boom"}},
		{"never ready", []string{"--server-cmd", bin + " engine --port 0 --fault never-ready", "--ready-timeout", "1500ms"},
			[]string{"server not ready", "ready timeout", "last probe"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runMain(append([]string{"startup", "--quiet"}, c.args...)...)
			if code != exitInvalidRun {
				t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, w := range c.wants {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestStartupUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--repeat", "0"}, "--repeat 0"},
		{[]string{"--format", "xml"}, `--format "xml"`},
		{[]string{"--server", "bogus"}, `"bogus"`},
		{[]string{"--server-cmd", "vllm 'serve"}, "unterminated"},
		{[]string{"--server", "vllm", "--speedup", "10"}, "only for the bundled engine"},
		{[]string{"--server-cmd", "x", "--server", "vllm"}, "one of them"},
		{[]string{"--server-cmd", "x", "--base-url", "localhost:8000"}, `"localhost:8000"`},
		{[]string{"--poll-interval", "0s"}, "--poll-interval"},
		{[]string{"--base-url", "http://127.0.0.1:8000"}, "bundled engine picks a free port"},
		{[]string{"--from-log", "/nonexistent/server.log"}, "/nonexistent/server.log"},
		{[]string{"--ready-timeout", "soon"}, "soon"},
	}
	for _, c := range cases {
		code, out, errOut := runMain(append([]string{"startup"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("startup %q: exit %d, stderr %q (stdout %q); want exit 2 naming %q", c.args, code, errOut, out, c.want)
		}
	}
}

func TestStartupFromLog(t *testing.T) {
	log := filepath.Join("..", "..", "testdata", "logs", "vllm_startup_log_v0.11.0rc2_rocm.md")
	code, out, errOut := runMain("startup", "--from-log", log)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"29.38 s", "51.79 GiB", "205,696 tokens", "50.05 x", "4,096 tokens", "102.52 s", "48.19 s", "vllm format"} {
		if !strings.Contains(out, want) {
			t.Errorf("--from-log output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runMain("startup", "--from-log", log, "--format", "json")
	var st result.Startup
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if st.KVCacheTokens == nil || *st.KVCacheTokens != 205696 || st.InitEngineS == nil || *st.InitEngineS != 102.52 || st.HealthOKS != nil {
		t.Errorf("json = %s", out)
	}
}

// pidAlive reports whether pid is a live process (not a zombie left for a
// PID 1 that never reaps).
func pidAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// enginePID waits for the engine's first log line in dir/server.log and
// returns the pid it names ("(APIServer pid=N)").
func enginePID(t *testing.T, dir string) int {
	t.Helper()
	re := regexp.MustCompile(`\(APIServer pid=(\d+)\)`)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, result.ServerLog))
		if m := re.FindSubmatch(b); m != nil {
			pid, _ := strconv.Atoi(string(m[1]))
			return pid
		}
	}
	t.Fatal("the engine named no pid in server.log within 20 s")
	return 0
}

// TestStartupInterruptedLeavesNoChild: SIGINT to servebench during start-up
// stops the engine and exits 4; SIGKILL to servebench (which can run no
// handler) still takes the engine down, by the parent-death signal.
func TestStartupInterruptedLeavesNoChild(t *testing.T) {
	bin := launchtest.Servebench(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			// Speedup 1: the engine is still loading when the signal comes.
			cmd := exec.Command(bin, "startup", "--quiet", "--out", dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// If the test fails before its signal, the child would start
			// up for ~90 s: kill it (its engine follows, by the
			// parent-death signal). Both calls are no-ops once it exited.
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			pid := enginePID(t, dir)
			if !pidAlive(pid) {
				t.Fatalf("engine pid %d not running before the signal", pid)
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if sig == syscall.SIGINT {
				if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(stderr.String(), "interrupted") {
					t.Errorf("exit %d (%v), stderr %q: want 4 and 'interrupted'", code, err, stderr.String())
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for pidAlive(pid) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if pidAlive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("engine pid %d outlived servebench (%v)", pid, sig)
			}
		})
	}
}

// TestStartupPD: startup --server pd measures the deployment's cold start
// as run starts it (bench's spec): the router answers health only once
// every instance has loaded, so health OK follows the logged weights load,
// and the log holds both instances' start-up.
func TestStartupPD(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runMain("startup", "--server", "pd", "--prefill", "1", "--decode", "1", "--speedup", "50",
		"--engine-arg=--startup-speedup=1000", "--poll-interval", "20ms", "--format", "json", "--quiet", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var st result.Startup
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stdout: %v\n%s", err, out)
	}
	if st.HealthOKS == nil || st.FirstTokenS == nil || st.WeightsLoadedAtS == nil || st.KVCacheTokens == nil ||
		*st.HealthOKS < *st.WeightsLoadedAtS || *st.FirstTokenS < *st.HealthOKS {
		t.Errorf("startup %s: want weights loaded <= health OK <= first token, with the KV cache size", out)
	}
	res, _ := loadSaved(t, dir)
	if res.Server.Preset != "bundled" || !strings.Contains(res.Server.Command, "--pd-prefill 1 --pd-decode 1") {
		t.Errorf("server: preset %q, command %q; want the bundled engine with --pd-prefill 1 --pd-decode 1", res.Server.Preset, res.Server.Command)
	}
	log, err := os.ReadFile(filepath.Join(dir, result.ServerLog))
	if err != nil {
		t.Fatal(err)
	}
	if router := "Starting vLLM API server 0 on " + res.Server.BaseURL + " (servebench P/D router"; !strings.Contains(string(log), router) {
		t.Errorf("server.base_url %s is not the router's", res.Server.BaseURL)
	}
	for _, inst := range []string{"[prefill-0]", "[decode-0]"} {
		if !strings.Contains(string(log), inst+" ") {
			t.Errorf("server.log has no %s lines", inst)
		}
	}
}
